"""The ``a2a-sync`` command line: talk to A2A agents and MCP servers from a shell.

Exit codes (also in ``a2a-sync --help``):

====  ==========================================================================
0     success (a task completed or was canceled on request, a call returned)
1     the task settled without completing (failed, canceled, rejected)
2     usage error (bad arguments)
3     the agent or server could not be reached, timed out, or (MCP) exited
4     the peer answered with an error, or broke the protocol
5     the task needs input or authentication (``--json`` output carries the task)
130   interrupted (Ctrl-C); streams were closed and subprocesses reaped
====  ==========================================================================

``--json`` prints one JSON document per result; streams (``send --stream``, ``task watch``)
print one A2A 1.0 ``StreamResponse`` object per line. Errors are printed as one line on
stderr; ``--debug`` prints the traceback instead.
``serve`` runs until stopped: SIGTERM exits 0, Ctrl-C 130, both after a graceful stop.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, Final

from .._version import __version__
from ..a2a.card_codec import dump_card
from ..a2a.codec import V1_0
from ..a2a.types import (
    AgentCard,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from ..client import A2AClient, APIKey, BearerToken
from ..client.display import progress_bar
from ..errors import (
    A2ASyncError,
    AuthRequired,
    ConfigurationError,
    ConnectionClosed,
    HTTPStatusError,
    InputRequired,
    ProtocolError,
    RPCError,
    TaskError,
    TaskWaitTimeout,
    TransportError,
    UnsupportedOperation,
)
from ..mcp import MCPConnection
from ..mcp._codec import unstructure
from ..policies import PollPolicy
from .serve import add_arguments as serve_arguments
from .serve import run_serve

EXIT_OK: Final = 0
EXIT_TASK_NOT_COMPLETED: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREACHABLE: Final = 3
EXIT_PEER_ERROR: Final = 4
EXIT_NEEDS_INPUT: Final = 5
EXIT_INTERRUPTED: Final = 130

#: How long ``send --wait`` and ``task watch`` (when polling) wait for a task to settle.
DEFAULT_WAIT_TIMEOUT: Final = 600.0

_EPILOG: Final = """exit codes: 0 ok, 1 task not completed, 2 usage, 3 unreachable/timeout,
4 peer error, 5 input or auth required, 130 interrupted"""


class _Output:
    """Where and how results are printed (human text, or one JSON document per result)."""

    def __init__(self, as_json: bool, stream: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.stream = stream if stream is not None else sys.stdout

    def json(self, value: Any) -> None:
        self.stream.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
        self.stream.flush()

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


# --- A2A ---------------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> A2AClient:
    credentials: Any = None
    if args.token:
        credentials = BearerToken(args.token)
    elif args.api_key:
        credentials = APIKey(args.api_key)
    revisions: tuple[Any, ...] = (args.revision,) if args.revision else ("1.0", "0.3")
    bindings = (args.binding,) if args.binding else ("JSONRPC", "HTTP+JSON")
    return A2AClient.from_url(
        args.url,
        credentials=credentials,
        timeout=args.timeout,
        revisions=revisions,
        bindings=bindings,
    )


def _dump(value: Any) -> Any:

    if isinstance(value, AgentCard):
        return dump_card(value)
    if isinstance(value, (Task, Message)):
        return V1_0.dump(value)
    return V1_0.dump_stream_event(value)


def _cmd_card(args: argparse.Namespace, out: _Output) -> int:
    with _client(args) as client:
        card = client.card
        assert card is not None
        if out.as_json:
            out.json(_dump(card))
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


def _task_exit(task: Any) -> int:
    if not isinstance(task, Task):
        return EXIT_OK
    if task.state is TaskState.completed:
        return EXIT_OK
    if task.is_interrupted:
        return EXIT_NEEDS_INPUT
    if task.is_terminal:
        return EXIT_TASK_NOT_COMPLETED
    return EXIT_OK


def _print_result(result: Any, out: _Output) -> None:
    if out.as_json:
        out.json(_dump(result))
        return
    if isinstance(result, Message):
        out.line(result.text)
        return
    out.line(f"task {result.id}: {result.state.value}")
    text = result.text
    if text:
        out.line(text)


def _print_after_stream(result: Any, out: _Output) -> None:
    """The artifact text was printed as it streamed; end with the outcome only."""
    if out.as_json:
        return
    if isinstance(result, Message):
        out.line(result.text)
        return
    out.line()
    out.line(f"task {result.id}: {result.state.value}")
    if result.is_interrupted and result.status.message is not None:
        out.line(result.status.message.text)


def _stream(events: Iterator[Any], out: _Output) -> None:
    bar = None if out.as_json else progress_bar(None, "streaming")
    try:
        for event in events:
            if bar is not None:
                bar.update(1)
            if out.as_json:  # one A2A 1.0 StreamResponse per line: {"task": ...} ...
                out.line(json.dumps(V1_0.dump_stream_event(event), ensure_ascii=False))
            elif isinstance(event, TaskArtifactUpdateEvent):
                text = event.artifact.text
                if text:
                    out.stream.write(text)
                    out.stream.flush()
            elif isinstance(event, TaskStatusUpdateEvent) and bar is not None:
                bar.set_description(event.status.state.value)
    finally:
        if bar is not None:
            bar.close()


def _cmd_send(args: argparse.Namespace, out: _Output) -> int:
    with _client(args) as client:
        kwargs: dict[str, Any] = {"task_id": args.task_id, "context_id": args.context_id}
        if args.stream:
            with client.stream_message(args.text, **kwargs) as stream:
                _stream(iter(stream), out)
                result = stream.get_final_result()
            _print_after_stream(result, out)
            return _task_exit(result)
        result = client.send_message(args.text, return_immediately=args.wait, **kwargs)
        if args.wait:
            result = _wait(client, result, out, args.wait_timeout)
        _print_result(result, out)
        return _task_exit(result)


def _wait(client: Any, result: Any, out: _Output, limit: float) -> Any:
    """Poll until the task settles (at most ``limit`` seconds), with a progress display.

    Raises:
        TaskWaitTimeout: Still running after ``limit`` seconds (exit code 3).
    """
    if isinstance(result, Message) or result.is_terminal or result.is_interrupted:
        return result
    policy = PollPolicy()
    deadline = time.monotonic() + limit
    bar = None if out.as_json else progress_bar(None, "waiting")
    polls = 0
    try:
        while not (result.is_terminal or result.is_interrupted):
            polls += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TaskWaitTimeout(
                    f"task {result.id} is still {result.state.value} after {limit:g} s; "
                    f"watch it again with: a2a-sync task watch URL {result.id}",
                    task_id=result.id,
                    timeout=limit,
                    task=result,
                )
            time.sleep(min(policy.interval(polls), remaining))
            result = client.get_task(result.id)
            if bar is not None:
                bar.set_description(result.state.value)
                bar.update(0)
    finally:
        if bar is not None:
            bar.close()
    return result


def _cmd_task(args: argparse.Namespace, out: _Output) -> int:
    with _client(args) as client:
        if args.action == "get":
            task = client.get_task(args.task_id, history_length=args.history)
        elif args.action == "cancel":
            task = client.cancel_task(args.task_id)
            _print_result(task, out)
            return EXIT_OK if task.state is TaskState.canceled else _task_exit(task)
        else:  # watch: subscribe, and fall back to polling if the agent cannot stream
            try:
                with client.subscribe(args.task_id) as stream:
                    _stream(iter(stream), out)
                    task = stream.get_final_task()
                _print_after_stream(task, out)
                return _task_exit(task)
            except UnsupportedOperation:
                task = _wait(client, client.get_task(args.task_id), out, args.wait_timeout)
        _print_result(task, out)
        return _task_exit(task)


# --- MCP ----------------------------------------------------------------------------------------


def _mcp_connection(args: argparse.Namespace) -> Any:
    if args.stdio:
        return MCPConnection.stdio(args.stdio, timeout=args.timeout)  # bounds the connect too
    if args.url:
        http = getattr(MCPConnection, "http", None)
        if http is None:  # pragma: no cover - until the HTTP transport lands
            raise ConfigurationError("MCP over HTTP is not available in this version")
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        return http(args.url, headers=headers, timeout=args.timeout)
    raise ConfigurationError("give the server with --stdio CMD... or --url URL")


def _json_argument(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"{what} must be JSON: {exc}") from exc


def _mcp_dump(value: Any) -> Any:
    if isinstance(value, list):
        return [unstructure(item) for item in value]
    return unstructure(value)


def _cmd_mcp(args: argparse.Namespace, out: _Output) -> int:
    with _mcp_connection(args) as connection:
        client = connection.client()
        action = args.mcp_action
        result: Any
        if action == "tools":
            result = client.list_tools()
            lines = [f"{tool.name}: {tool.description or ''}".rstrip(": ") for tool in result]
        elif action == "call":
            result = client.call_tool(args.name, _json_argument(args.arguments, "arguments"))
            lines = [_tool_text(result)]
        elif action == "resources":
            result = client.list_resources()
            lines = [f"{r.uri}  {r.name}" for r in result]
        elif action == "read":
            result = client.read_resource(args.uri)
            lines = [
                getattr(c, "text", None) or f"<{len(getattr(c, 'blob', ''))} base64 chars>"
                for c in result
            ]
        elif action == "prompts":
            result = client.list_prompts()
            lines = [f"{p.name}: {p.description or ''}".rstrip(": ") for p in result]
        else:  # get-prompt
            arguments = _json_argument(args.arguments, "arguments") or {}
            result = client.get_prompt(args.name, arguments)
            lines = [f"{m.role}: {getattr(m.content, 'text', m.content)}" for m in result.messages]
        if out.as_json:
            out.json(_mcp_dump(result))
        else:
            for line in lines:
                out.line(line)
        if action == "call" and getattr(result, "is_error", False):
            return EXIT_PEER_ERROR
    return EXIT_OK


def _content_text(content: Any) -> str:
    text = getattr(content, "text", None)
    if text is not None:
        return str(text)
    return f"<{len(getattr(content, 'blob', ''))} base64 characters>"


def _tool_text(result: Any) -> str:
    texts = [block.text for block in result.content if getattr(block, "text", None)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return ""


# --- other --------------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace, out: _Output) -> int:
    return run_serve(args, out.stream, out.as_json)


def _cmd_demo(args: argparse.Namespace, out: _Output) -> int:
    from ..demo import run_demo  # noqa: PLC0415 - needs the server extra

    return run_demo(out.stream)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    common.add_argument("--debug", action="store_true", help="print tracebacks, log at DEBUG")
    common.add_argument("--timeout", type=float, help="per-call time limit, seconds")

    a2a = argparse.ArgumentParser(add_help=False, parents=[common])
    a2a.add_argument("--token", help="bearer token for the agent")
    a2a.add_argument("--api-key", help="API key for the agent")
    a2a.add_argument("--revision", choices=("1.0", "0.3"), help="A2A revision to use")
    a2a.add_argument(
        "--binding",
        choices=("JSONRPC", "HTTP+JSON", "GRPC"),
        type=str.upper,
        help="protocol binding to use (default: JSON-RPC, else HTTP+JSON, as the card offers;"
        " GRPC needs the grpc extra)",
    )
    a2a.add_argument(
        "--wait-timeout",
        type=float,
        default=DEFAULT_WAIT_TIMEOUT,
        help=f"longest wait for a task to settle when polling (default {DEFAULT_WAIT_TIMEOUT:g} s)",
    )

    parser = argparse.ArgumentParser(
        prog="a2a-sync",
        description="Talk to A2A agents and MCP servers.",
        epilog=_EPILOG,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"a2a-sync {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    card = commands.add_parser("card", parents=[a2a], help="show an agent's card")
    card.add_argument("url", help="agent base URL or card URL")
    card.set_defaults(handler=_cmd_card)

    send = commands.add_parser("send", parents=[a2a], help="send a message to an agent")
    send.add_argument("url")
    send.add_argument("text")
    mode = send.add_mutually_exclusive_group()
    mode.add_argument("--stream", action="store_true", help="stream the task's events")
    mode.add_argument("--wait", action="store_true", help="return at once, then poll the task")
    send.add_argument("--task-id", help="continue this task (answer its question)")
    send.add_argument("--context-id", help="continue this conversation")
    send.set_defaults(handler=_cmd_send)

    task = commands.add_parser("task", help="inspect or control a task")
    task_actions = task.add_subparsers(dest="action", required=True)
    for action, help_text in (
        ("get", "fetch a task"),
        ("cancel", "cancel a task"),
        ("watch", "follow a task until it settles"),
    ):
        sub = task_actions.add_parser(action, parents=[a2a], help=help_text)
        sub.add_argument("url")
        sub.add_argument("task_id")
        if action == "get":
            sub.add_argument("--history", type=int, help="history messages to include")
        sub.set_defaults(handler=_cmd_task, history=None)

    mcp = commands.add_parser("mcp", help="talk to an MCP server")
    mcp_actions = mcp.add_subparsers(dest="mcp_action", required=True)
    server = argparse.ArgumentParser(add_help=False, parents=[common])
    server.add_argument("--url", help="Streamable HTTP endpoint")
    server.add_argument("--token", help="bearer token (HTTP)")
    server.add_argument(
        "--stdio", nargs=argparse.REMAINDER, help="server command and its arguments (last option)"
    )
    for action, help_text, positional in (
        ("tools", "list tools", ()),
        ("call", "call a tool", ("name", "arguments?")),
        ("resources", "list resources", ()),
        ("read", "read a resource", ("uri",)),
        ("prompts", "list prompts", ()),
        ("get-prompt", "get a prompt", ("name", "arguments?")),
    ):
        sub = mcp_actions.add_parser(action, parents=[server], help=help_text)
        for name in positional:
            if name.endswith("?"):
                sub.add_argument(name[:-1], nargs="?", help="JSON object")
            else:
                sub.add_argument(name)
        sub.set_defaults(handler=_cmd_mcp)

    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="serve an agent (MODULE:ATTR or --demo) until Ctrl-C",
        description="Serve an A2AApplication, an AgentExecutor, an execute(context, updater) "
        "function or a factory of one, named MODULE:ATTR; or the demo agent (--demo).",
    )
    serve_arguments(serve)
    serve.set_defaults(handler=_cmd_serve)

    demo = commands.add_parser("demo", parents=[common], help="run the end-to-end demo")
    demo.set_defaults(handler=_cmd_demo)
    return parser


def _exit_code(error: BaseException) -> int:
    if isinstance(error, (InputRequired, AuthRequired)):
        return EXIT_NEEDS_INPUT
    if isinstance(error, TaskWaitTimeout):
        return EXIT_UNREACHABLE
    if isinstance(error, TaskError):
        return EXIT_TASK_NOT_COMPLETED
    if isinstance(error, ConfigurationError):
        return EXIT_USAGE
    if isinstance(error, (TransportError, ConnectionClosed)):
        return EXIT_UNREACHABLE
    if isinstance(error, (RPCError, ProtocolError, HTTPStatusError)):
        return EXIT_PEER_ERROR
    return EXIT_PEER_ERROR


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None) -> int:
    """Run the ``a2a-sync`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.debug:
        # urllib3 logs each retry as a warning; retries are expected here, failures are
        # reported as one line below.
        logging.getLogger("urllib3").setLevel(logging.ERROR)
    out = _Output(args.json, stdout)
    handler: Callable[[argparse.Namespace, _Output], int] = args.handler
    try:
        return handler(args, out)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except A2ASyncError as error:
        if args.debug:
            raise
        sys.stderr.write(f"a2a-sync: {type(error).__name__}: {_one_line(str(error))}\n")
        return _exit_code(error)


def _one_line(text: str) -> str:
    return " ".join(text.split())
