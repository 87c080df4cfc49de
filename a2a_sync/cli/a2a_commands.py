"""``a2a-sync card``, ``send`` and ``task``: talk to an A2A agent."""

from __future__ import annotations

import argparse
import time
from typing import Any, Final

from ..a2a.types import Message, Task, TaskState
from ..client import A2AClient, APIKey, BearerToken
from ..client.display import progress_bar
from ..errors import TaskWaitTimeout, UnsupportedOperation
from ..policies import PollPolicy
from .exits import (
    EXIT_NEEDS_INPUT,
    EXIT_OK,
    EXIT_TASK_NOT_COMPLETED,
    FollowUp,
)
from .output import Output, StreamPrinter, dump, print_after_stream, print_result

__all__ = ["DEFAULT_WAIT_TIMEOUT", "cmd_card", "cmd_send", "cmd_task"]

#: How long ``send --wait`` and ``task watch`` (when polling) wait for a task to settle.
DEFAULT_WAIT_TIMEOUT: Final = 600.0


def client_for(args: argparse.Namespace) -> A2AClient:
    """The client the agent options (``--token``, ``--revision`` ...) describe."""
    credentials: Any = None
    if args.token:
        credentials = BearerToken(args.token)
    elif args.api_key:
        credentials = APIKey(args.api_key)
    revisions: tuple[Any, ...] = (args.revision,) if args.revision else ("1.0", "0.3")
    bindings = (args.binding,) if args.binding else None
    return A2AClient.from_url(
        args.url,
        credentials=credentials,
        timeout=args.timeout,
        revisions=revisions,
        bindings=bindings,
        allow_insecure_credentials=args.allow_insecure_credentials,
    )


def _follow_up(url: str, task_id: str | None) -> FollowUp:
    if task_id is None:
        return FollowUp("no task was started")
    return FollowUp(
        f"task {task_id} may still be running on the agent; follow it with: "
        f"a2a-sync task watch {url} {task_id}"
    )


def cmd_card(args: argparse.Namespace, out: Output) -> int:
    with client_for(args) as client:
        card = client.card
        assert card is not None
        if out.as_json:
            out.json(dump(card))
            return EXIT_OK
        out.line(f"{card.name} {card.version}".rstrip())
        if card.description:
            out.line(f"  {card.description}")
        out.line(f"  endpoint: {client.url} (A2A {client.revision}, {client.binding})")
        for interface in card.supported_interfaces:
            out.line(
                f"  interface: {interface.protocol_binding} {interface.protocol_version} "
                f"{interface.url}"
            )
        caps = card.capabilities
        flags = [
            name
            for name, on in (
                ("streaming", caps.streaming),
                ("push notifications", caps.push_notifications),
                ("extended card", caps.extended_agent_card),
            )
            if on
        ]
        out.line(f"  capabilities: {', '.join(flags) or 'none'}")
        for skill in card.skills:
            out.line(f"  skill {skill.id}: {skill.name} — {skill.description}")
    return EXIT_OK


def task_exit(task: Any) -> int:
    """The exit code for a command's outcome."""
    if not isinstance(task, Task):
        return EXIT_OK
    if task.state is TaskState.completed:
        return EXIT_OK
    if task.is_interrupted:
        return EXIT_NEEDS_INPUT
    if task.is_terminal:
        return EXIT_TASK_NOT_COMPLETED
    return EXIT_OK


def cmd_send(args: argparse.Namespace, out: Output) -> int:
    with client_for(args) as client:
        kwargs: dict[str, Any] = {"task_id": args.task_id, "context_id": args.context_id}
        if args.stream:
            printer = StreamPrinter(out)
            try:
                with client.stream_message(args.text, **kwargs) as stream:
                    printer.show(iter(stream))
                    result = stream.get_final_result()
            except KeyboardInterrupt:
                raise _follow_up(args.url, printer.task_id) from None
            print_after_stream(result, out)
            return task_exit(result)
        result = client.send_message(args.text, return_immediately=args.wait, **kwargs)
        if args.wait:
            result = wait_for(client, result, out, args.wait_timeout, args.url)
        print_result(result, out)
        return task_exit(result)


def wait_for(client: Any, result: Any, out: Output, limit: float, url: str) -> Any:
    """Poll until the task settles (at most ``limit`` seconds), showing its state and the
    time waited.

    Raises:
        TaskWaitTimeout: Still running after ``limit`` seconds (exit code 3).
        FollowUp: Ctrl-C; names the task to follow up.
    """
    if isinstance(result, Message) or result.is_terminal or result.is_interrupted:
        return result
    policy = PollPolicy()
    deadline = time.monotonic() + limit
    bar = None
    polls = 0
    try:
        if not out.as_json:
            bar = progress_bar(None, result.state.value, counter=False)
            if bar is None:  # a pipe or a log: one line instead of a display
                out.line(f"task {result.id}: {result.state.value}; waiting until it settles")
        while not (result.is_terminal or result.is_interrupted):
            polls += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TaskWaitTimeout(
                    f"task {result.id} is still {result.state.value} after {limit:g} s; "
                    f"watch it again with: a2a-sync task watch {url} {result.id}",
                    task_id=result.id,
                    timeout=limit,
                    task=result,
                )
            time.sleep(min(policy.interval(polls), remaining))
            result = client.get_task(result.id)
            if bar is not None:
                bar.set_description(result.state.value)
    except KeyboardInterrupt:
        raise _follow_up(url, result.id) from None
    finally:
        if bar is not None:
            bar.close()
    return result


def cmd_task(args: argparse.Namespace, out: Output) -> int:
    with client_for(args) as client:
        if args.action == "get":
            task = client.get_task(args.task_id, history_length=args.history)
        elif args.action == "cancel":
            task = client.cancel_task(args.task_id)
            print_result(task, out)
            return EXIT_OK if task.state is TaskState.canceled else task_exit(task)
        else:  # watch: subscribe, and fall back to polling if the agent cannot stream
            try:
                return _watch(client, args, out)
            except UnsupportedOperation:
                current = client.get_task(args.task_id)
                if current.is_terminal or current.is_interrupted:
                    task = current
                else:
                    task = wait_for(client, current, out, args.wait_timeout, args.url)
        print_result(task, out)
        return task_exit(task)


def _watch(client: A2AClient, args: argparse.Namespace, out: Output) -> int:
    """Replay what the task has (its first event is the task itself), then follow it."""
    printer = StreamPrinter(out, "watching")
    try:
        with client.subscribe(args.task_id) as stream:
            printer.show(iter(stream))
            task = stream.get_final_task()
    except KeyboardInterrupt:
        raise _follow_up(args.url, args.task_id) from None
    print_after_stream(task, out)
    return task_exit(task)
