"""A scriptable MCP stdio server for tests: canned tools, resources and prompts.

Point :meth:`~a2a_sync.mcp.MCPConnection.stdio` at :func:`mcp_server_command` and the
code under test talks to a real MCP server process, with no SDK and no network::

    from a2a_sync.mcp import MCPConnection
    from a2a_sync.testing import mcp_server_command

    argv = mcp_server_command(tools={"greet": "Hello, {name}!"})
    with MCPConnection.stdio(argv) as conn:
        assert conn.client().call_tool("greet", {"name": "Ada"}).text == "Hello, Ada!"

From a shell: ``python -m a2a_sync.testing.mcp_server --tool greet='Hello, {name}!'``
(``--error-tool``, ``--resource URI=TEXT``, ``--prompt NAME=TEXT``, ``--script FILE.json``,
``--record FILE``).

The script (a dict, or a JSON file) says what the server offers; every key is optional
and unknown keys are refused, so a typo fails the test at once::

    {
      "name": "scripted", "version": "1.0", "instructions": "...",
      "tools": {
        "greet": "Hello, {name}!",                 # reply text; {arg} is the argument
        "add":   {"description": "...", "input_schema": {...}, "output_schema": {...},
                  "reply": "...", "structured": {...},   # structuredContent
                  "is_error": false,                     # a failed tool call (a result)
                  "error": {"code": -32603, "message": "boom"},   # a JSON-RPC error
                  "delay": 0.5,                          # seconds before answering
                  "progress": 3}                         # progress notifications first
      },
      "resources": {"mem://notes": "text" | {"name": "...", "text": "...", "mime_type": "..."}},
      "prompts":   {"review": "Review {code}" | {"description": "...", "arguments": ["code"],
                                                 "text": "Review {code}"}},
      "pages": {"tools": {"": {"items": ["greet"], "next": "p2"},   # keyed by cursor; "" first
                          "p2": {"items": ["add"]}}}              # no "next": the last page
    }

``pages`` splits the ``tools``, ``resources`` or ``prompts`` listing into pages by cursor;
``next`` is sent as ``nextCursor`` verbatim (any JSON value, so a test can script a broken
server: a cycle, a number); an unknown cursor is answered with -32602.

In-process, :class:`ScriptedMCPServer` also takes Python ``handlers`` per tool (the demo's
tool server is built that way). It speaks the handshake era (``initialize``, revisions
2024-11-05 .. 2025-11-25) over newline-delimited JSON on stdin/stdout, one request at a
time; ``--record FILE`` appends every message it receives to ``FILE`` as one JSON line, so
a test can check what its code sent.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigurationError
from ._mcp_script import PROTOCOL_VERSIONS, ScriptedMCPServer, ToolHandler

__all__ = [
    "PROTOCOL_VERSIONS",
    "ScriptedMCPServer",
    "ToolHandler",
    "main",
    "mcp_server_command",
    "recorded_messages",
]

logger = logging.getLogger(__name__)

#: The module ``python -m`` runs.
MODULE: Final = "a2a_sync.testing.mcp_server"


# --- the command ---------------------------------------------------------------------------


def mcp_server_command(
    script: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    tools: Mapping[str, str] | None = None,
    error_tools: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
    prompts: Mapping[str, str] | None = None,
    record: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The argv of a scripted MCP stdio server, for :meth:`MCPConnection.stdio`.

    Example::

        argv = mcp_server_command(
            {"tools": {"add": {"structured": {"sum": 3}}}},
            resources={"mem://readme": "hello"},
        )
        with MCPConnection.stdio(argv) as conn:
            assert conn.client().call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}

    Args:
        script: A script dict (checked here, passed inline) or a JSON script file.
        tools: Tools answering with a text (``{arg}`` is replaced by the argument).
        error_tools: Tools whose call fails (``isError``) with a text.
        resources: Text resources by URI.
        prompts: Prompts by name (``{arg}`` placeholders become required arguments).
        record: A file the server appends every received message to (JSON lines).

    Returns:
        ``[sys.executable, "-m", "a2a_sync.testing.mcp_server", ...]``.

    Raises:
        ConfigurationError: The script dict is malformed.
    """
    argv = [sys.executable, "-m", MODULE]
    if isinstance(script, Mapping):
        ScriptedMCPServer(script)  # fail here, in the test, not in the server's stderr
        argv += ["--script-json", json.dumps(script, ensure_ascii=False)]
    elif script is not None:
        argv += ["--script", os.fspath(script)]
    for flag, entries in (
        ("--tool", tools),
        ("--error-tool", error_tools),
        ("--resource", resources),
        ("--prompt", prompts),
    ):
        for name, text in (entries or {}).items():
            argv += [flag, f"{name}={text}"]
    if record is not None:
        argv += ["--record", os.fspath(record)]
    return argv


def recorded_messages(record: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The messages a server started with ``record=`` received, in order."""
    path = Path(record)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _pair(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ConfigurationError(f"{flag} takes NAME=TEXT, got {text!r}")
    return name, value


def _script_from(args: argparse.Namespace) -> dict[str, Any]:
    script: dict[str, Any] = {}
    try:
        if args.script:
            script = json.loads(Path(args.script).read_text(encoding="utf-8"))
        elif args.script_json:
            script = json.loads(args.script_json)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the script: {exc}") from exc
    if not isinstance(script, dict):
        raise ConfigurationError("the script must be a JSON object")
    sections: Sequence[tuple[str, str, list[str], Callable[[str], Any]]] = (
        ("tools", "--tool", args.tool, lambda text: text),
        ("tools", "--error-tool", args.error_tool, lambda text: {"reply": text, "is_error": True}),
        ("resources", "--resource", args.resource, lambda text: text),
        ("prompts", "--prompt", args.prompt, lambda text: text),
    )
    for key, flag, values, spec in sections:
        for value in values:
            name, text = _pair(value, flag)
            script.setdefault(key, {})[name] = spec(text)
    return script


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scripted server on stdin/stdout; returns the exit status (2: bad script)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--script", help="JSON script file")
    source.add_argument("--script-json", help="JSON script text")
    parser.add_argument("--tool", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--error-tool", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--resource", action="append", default=[], metavar="URI=TEXT")
    parser.add_argument("--prompt", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--record", help="append every received message to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        server = ScriptedMCPServer(_script_from(args), record=args.record)
    except ConfigurationError as exc:
        sys.stderr.write(f"{parser.prog}: {exc}\n")
        return 2
    server.serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
