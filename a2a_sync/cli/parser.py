"""The ``a2a-sync`` argument parser.

Options shared by every command (``--json``, ``--debug``, ``--timeout``) are accepted
before or after the command: the subcommands declare them with ``argparse.SUPPRESS``
defaults, so an absent option does not overwrite what was given before the command.

Option groups are functions (:func:`add_agent_options`, :func:`add_wait_option` ...)
applied to each command that takes them: a new option for every agent command goes
into one of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .._version import __version__
from .a2a_commands import DEFAULT_WAIT_TIMEOUT, cmd_card, cmd_send, cmd_task
from .exits import EPILOG
from .mcp_commands import cmd_mcp
from .oauth import add_login_commands, oauth_arguments
from .serve import add_arguments as add_serve_arguments
from .serve import run_serve

__all__ = ["add_agent_options", "add_common_options", "add_wait_option", "build_parser"]

Handler = Callable[[argparse.Namespace, Any], int]


def seconds(text: str) -> float:
    """An argparse type: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--json``, ``--debug``, ``--timeout``: on the top parser with their defaults, on
    a command without (so an option given before the command stands)."""
    flag: dict[str, Any] = {"default": False} if top else {"default": argparse.SUPPRESS}
    value: dict[str, Any] = {"default": None} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--json", action="store_true", help="print JSON instead of text", **flag)
    parser.add_argument(
        "--debug", action="store_true", help="print tracebacks, log at DEBUG", **flag
    )
    parser.add_argument(
        "--timeout", type=seconds, help="per-call time limit, seconds (> 0)", **value
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """How to reach an agent: credentials, protocol revision and binding."""
    parser.add_argument("--token", help="bearer token for the agent")
    parser.add_argument("--api-key", help="API key for the agent")
    parser.add_argument(
        "--allow-insecure-credentials",
        action="store_true",
        help="send --token/--api-key over plain http:// to a host that is not loopback"
        " (only on a trusted network; logged as a warning)",
    )
    parser.add_argument("--revision", choices=("1.0", "0.3"), help="A2A revision to use")
    parser.add_argument(
        "--binding",
        choices=("JSONRPC", "HTTP+JSON", "GRPC"),
        type=str.upper,
        help="protocol binding to use (default: the card's first one this client speaks;"
        " GRPC needs the grpc extra)",
    )


def add_wait_option(parser: argparse.ArgumentParser) -> None:
    """``--wait-timeout``, for the commands that poll a task until it settles."""
    parser.add_argument(
        "--wait-timeout",
        type=seconds,
        default=DEFAULT_WAIT_TIMEOUT,
        help=f"longest wait for a task to settle when polling (default {DEFAULT_WAIT_TIMEOUT:g} s)",
    )


def _command(
    commands: Any, name: str, handler: Handler, help_text: str, **kwargs: Any
) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(
        name, help=help_text, description=kwargs.pop("description", help_text), **kwargs
    )
    add_common_options(sub)
    sub.set_defaults(handler=handler)
    return sub


def _agent_command(
    commands: Any, name: str, handler: Handler, help_text: str, *, wait: bool = False
) -> argparse.ArgumentParser:
    sub = _command(commands, name, handler, help_text)
    add_agent_options(sub)
    if wait:
        add_wait_option(sub)
    sub.add_argument("url", help="the agent's base URL (or its card's URL)")
    return sub


def _a2a_commands(commands: Any) -> None:
    _agent_command(commands, "card", cmd_card, "show an agent's card")

    send = _agent_command(commands, "send", cmd_send, "send a message to an agent", wait=True)
    send.add_argument("text", help="the message text")
    mode = send.add_mutually_exclusive_group()
    mode.add_argument("--stream", action="store_true", help="print the answer as it streams")
    mode.add_argument(
        "--wait", action="store_true", help="return at once, then poll until the task settles"
    )
    send.add_argument("--task-id", help="continue this task (answer its question)")
    send.add_argument("--context-id", help="continue this conversation")

    task = commands.add_parser(
        "task",
        help="get, cancel or watch a task",
        description="Inspect or control a task the agent runs: get, cancel, watch.",
    )
    actions = task.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, help_text in (
        ("get", "print a task's state and answer"),
        ("cancel", "cancel a task"),
        ("watch", "print what the task has so far, then follow it until it settles"),
    ):
        sub = _agent_command(actions, action, cmd_task, help_text, wait=action == "watch")
        sub.add_argument("task_id", help="the task's id (printed by send)")
        if action == "get":
            sub.add_argument("--history", type=int, help="history messages to include")
        sub.set_defaults(history=None, wait_timeout=DEFAULT_WAIT_TIMEOUT)


def _mcp_commands(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="list and call an MCP server's tools, resources and prompts",
        description="Talk to an MCP server started as a subprocess (--stdio CMD ...) or "
        "reached over Streamable HTTP (--url URL).",
    )
    actions = mcp.add_subparsers(dest="mcp_action", required=True, metavar="ACTION")
    for action, help_text, positional in (
        ("tools", "list the tools", ()),
        ("call", "call a tool", ("name", "arguments?")),
        ("resources", "list the resources", ()),
        ("read", "read a resource", ("uri",)),
        ("prompts", "list the prompts", ()),
        ("get-prompt", "get a prompt", ("name", "arguments?")),
    ):
        sub = _command(actions, action, cmd_mcp, help_text)
        sub.add_argument("--url", help="Streamable HTTP endpoint")
        sub.add_argument("--token", help="bearer token (HTTP)")
        sub.add_argument(
            "--allow-insecure-credentials",
            action="store_true",
            help="send --token/--api-key over plain http:// to a host that is not loopback"
            " (only on a trusted network; logged as a warning)",
        )
        oauth_arguments(sub)
        sub.add_argument(
            "--stdio",
            nargs=argparse.REMAINDER,
            help="server command and its arguments (the last option)",
        )
        for name in positional:
            if name.endswith("?"):
                sub.add_argument(name[:-1], nargs="?", help="a JSON object, e.g. '{\"a\": 1}'")
            elif name == "uri":
                sub.add_argument(name, help="the resource's URI")
            else:
                noun = "tool" if action == "call" else "prompt"
                sub.add_argument(name, help=f"the {noun}'s name")


def build_parser() -> argparse.ArgumentParser:
    """The whole ``a2a-sync`` parser."""
    parser = argparse.ArgumentParser(
        prog="a2a-sync",
        description="Talk to A2A agents and MCP servers.",
        epilog=EPILOG,
    )
    add_common_options(parser, top=True)
    parser.add_argument("--version", action="version", version=f"a2a-sync {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _a2a_commands(commands)
    _mcp_commands(commands)
    serve = _command(
        commands,
        "serve",
        _cmd_serve,
        "serve an agent (MODULE:ATTR or --demo) until Ctrl-C",
        description="Serve an A2AApplication, an AgentExecutor, an execute(context, updater) "
        "function or a factory of one, named MODULE:ATTR; or the demo agent (--demo).",
    )
    add_serve_arguments(serve)
    add_login_commands(lambda name, handler, text: _command(commands, name, handler, text))
    _command(commands, "demo", _cmd_demo, "run the end-to-end demo")
    return parser


def _cmd_serve(args: argparse.Namespace, out: Any) -> int:
    return run_serve(args, out.stream, out.as_json)


def _cmd_demo(args: argparse.Namespace, out: Any) -> int:
    from ..demo import run_demo  # noqa: PLC0415 - needs the server extra

    return run_demo(out.stream)
