"""``a2a-sync serve``: load an agent from ``MODULE:ATTR`` (or the demo agent) and serve it.

The target names an :class:`~a2a_sync.server.A2AApplication` (served as it is), an
:class:`~a2a_sync.server.AgentExecutor` instance or subclass, an ``execute(context,
updater)`` function, or a factory (a callable without arguments) returning one of these.
An executor needs a card: ``--card FILE.json``, else the module's ``card`` attribute
(an :class:`~a2a_sync.types.AgentCard` or a factory), else a minimal streaming card named
after the executor. Its tasks go to a SQLite file (``--database``), PostgreSQL (a
``postgresql://`` URL: several ``serve`` processes share it) or memory (``:memory:``).

The server runs on waitress in a background thread while the main thread waits, so
Ctrl-C (SIGINT) and SIGTERM both stop it gracefully: no new calls, open streams end,
running agents get ``--grace`` seconds, threads are joined, the demo agent's MCP tool
server is reaped. Ctrl-C exits 130 (like every command), SIGTERM 0.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
import signal
import sys
import tempfile
import threading
from types import FrameType
from typing import IO, Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..a2a.card_codec import load_card
from ..a2a.types import AgentCapabilities, AgentCard, AgentSkill
from ..errors import A2ASyncError, ConfigurationError
from ..server.app import DEFAULT_GRACE_PERIOD, A2AApplication
from ..server.executor import AgentExecutor
from ..server.serving import (
    DEFAULT_DATABASE,
    DEFAULT_PORT,
    grpc_server,
    open_task_store,
    serve_in_thread,
)

__all__ = ["DEFAULT_PORT", "add_arguments", "load_target", "run_serve"]

#: ``--database`` value that keeps tasks in memory.
MEMORY: Final = ":memory:"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's arguments."""
    parser.add_argument("target", nargs="?", help="MODULE:ATTR (an app, an executor or a factory)")
    parser.add_argument("--demo", action="store_true", help="serve the demo agent")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: free)"
    )
    parser.add_argument(
        "--database",
        help=f"SQLite task file (default {DEFAULT_DATABASE}; the demo: a temporary folder), "
        f"a postgresql:// URL (several workers), or {MEMORY}",
    )
    parser.add_argument("--card", help="agent card JSON file (for an executor)")
    parser.add_argument(
        "--rest-path",
        help="also serve the HTTP+JSON (REST) binding below this path, e.g. /rest "
        "(for an executor)",
    )
    parser.add_argument(
        "--grpc-port", type=int, help="also serve gRPC on this port (0: free; the grpc extra)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE_PERIOD,
        help=f"seconds running agents get on shutdown (default {DEFAULT_GRACE_PERIOD:g})",
    )


def _default_card(name: str) -> AgentCard:
    return AgentCard(
        name=name,
        description=f"{name}, served by a2a-sync",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="default", name=name, description=f"what {name} does")],
    )


def _required_parameters(function: Any) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return -1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in kinds and p.default is p.empty)


def _import(target: str) -> tuple[Any, Any]:
    """(module, object) for ``MODULE:ATTR`` (ATTR may be dotted; default ``app``)."""
    module_name, _, attribute = target.partition(":")
    if not module_name:
        raise ConfigurationError(f"serve takes MODULE:ATTR, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like gunicorn and uvicorn: modules beside you
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from exc
    value: Any = module
    for part in (attribute or "app").split("."):
        try:
            value = getattr(value, part)
        except AttributeError as exc:
            raise ConfigurationError(f"{module_name!r} has no attribute {attribute!r}") from exc
    return module, value


def load_target(target: str, *, card_file: str | None = None) -> tuple[Any, AgentCard | None]:
    """Resolve ``MODULE:ATTR`` to ``(app, None)`` or ``(executor, card)``.

    Raises:
        ConfigurationError: Nothing servable there, or the card is unreadable.
    """
    module, value = _import(target)
    for _ in range(2):  # a factory is called once
        if isinstance(value, A2AApplication):
            if card_file:
                raise ConfigurationError("--card is for executors; the app has its card")
            return value, None
        if isinstance(value, type) and issubclass(value, AgentExecutor):
            value = value()
        if isinstance(value, AgentExecutor) or (
            callable(value) and _required_parameters(value) == 2
        ):
            return value, _card(module, value, card_file)
        if not callable(value) or _required_parameters(value) != 0:
            break
        value = value()
    raise ConfigurationError(
        f"{target!r} is not an A2AApplication, an AgentExecutor, an execute(context, "
        "updater) function or a factory of one"
    )


def _card(module: Any, executor: Any, card_file: str | None) -> AgentCard:
    if card_file:
        try:
            with open(card_file, encoding="utf-8") as file:
                return load_card(json.load(file))
        except (OSError, ValueError, A2ASyncError) as exc:
            raise ConfigurationError(f"cannot read the card {card_file!r}: {exc}") from exc
    card = getattr(module, "card", None)
    if callable(card) and not isinstance(card, AgentCard):
        card = card()
    if isinstance(card, AgentCard):
        return card
    name = type(executor).__name__ if isinstance(executor, AgentExecutor) else executor.__name__
    return _default_card(name)


def _redacted(database: str) -> str:
    """``database`` fit to print: a URL loses its credentials."""
    parts = urlsplit(database)
    if not parts.scheme or "@" not in parts.netloc:
        return database
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _application(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[Any, str]:
    """The app to serve and a line saying what it is; closers go on ``stack``."""
    if args.demo:
        if args.target or args.card:
            raise ConfigurationError("serve takes MODULE:ATTR or --demo, not both")
        from ..demo import DemoAgent  # noqa: PLC0415 - starts an MCP subprocess

        database = args.database
        if database is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-sync-serve-"))
            database = os.path.join(folder, "tasks.sqlite3")
        agent = DemoAgent(database)
        stack.callback(agent.close)
        return agent.app, f"the demo agent (MCP tool server pid {agent.tools_pid}, {database})"
    if not args.target:
        raise ConfigurationError("serve needs MODULE:ATTR (or --demo)")
    app, card = load_target(args.target, card_file=args.card)
    if card is None:
        if args.database:
            raise ConfigurationError("--database is for executors; the app has its store")
        if args.rest_path:
            raise ConfigurationError("--rest-path is for executors; give the app rest_path=")
        return app, args.target
    database = args.database or DEFAULT_DATABASE
    store = None
    if database != MEMORY:
        store = open_task_store(database)  # SQLite, or PostgreSQL for a postgresql:// URL
        stack.callback(store.close)
    where = "in memory" if store is None else _redacted(database)
    app = A2AApplication(card, app, task_store=store, rest_path=args.rest_path)
    return app, f"{card.name} ({args.target}, {where})"


def run_serve(args: argparse.Namespace, out: IO[str], as_json: bool) -> int:
    """Serve until SIGTERM (returns 0) or Ctrl-C (``KeyboardInterrupt`` propagates after
    the graceful stop)."""
    stop = threading.Event()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with contextlib.ExitStack() as stack:
            app, what = _application(args, stack)
            if args.grpc_port is not None:  # stops after the HTTP server, which ends streams
                grpc = stack.enter_context(grpc_server(app, args.host, args.grpc_port))
                if not as_json:
                    out.write(f"serving gRPC at {grpc.address}\n")
            url = stack.enter_context(serve_in_thread(app, args.host, args.port, grace=args.grace))
            name = app.card.name if isinstance(app, A2AApplication) else what
            if as_json:
                out.write(json.dumps({"url": url, "name": name}) + "\n")
            else:
                out.write(f"serving {what} at {url}\n")
                if args.demo:
                    out.write(f'try: a2a-sync send {url} "factor 360 1001" --stream\n')
                out.write("Ctrl-C stops it\n")
            out.flush()
            stop.wait()  # Ctrl-C interrupts this wait with KeyboardInterrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
