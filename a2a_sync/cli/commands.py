"""The ``a2a-sync`` command line: talk to A2A agents and MCP servers from a shell.

Exit codes (also in ``a2a-sync --help``):

====  ==========================================================================
0     success (a task completed or was canceled on request, a call returned)
1     the task settled without completing (failed, canceled, rejected)
2     usage error (bad arguments, a busy port)
3     the agent or server could not be reached, timed out, or (MCP) exited
4     the peer answered with an error, or broke the protocol
5     the task needs input or authentication (``--json`` output carries the task)
130   interrupted (Ctrl-C); streams were closed and subprocesses reaped
====  ==========================================================================

Options shared by every command (``--json``, ``--timeout``, ``--debug``) go before or
after the command. ``--json`` prints one JSON document per result; streams (``send
--stream``, ``task watch``) print one A2A 1.0 ``StreamResponse`` object per line. Errors
are printed as one line on stderr; ``--debug`` prints the traceback instead. Ctrl-C during
``send --stream``/``--wait`` or ``task watch`` names the task to follow up.

The parser is in :mod:`.parser`, the commands in :mod:`.a2a_commands`,
:mod:`.mcp_commands` and :mod:`.serve`, printing in :mod:`.output`.
``serve`` runs until stopped: SIGTERM exits 0, Ctrl-C 130, both after a graceful stop.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

from ..errors import A2ASyncError
from .a2a_commands import DEFAULT_WAIT_TIMEOUT
from .exits import (
    EXIT_INTERRUPTED,
    EXIT_NEEDS_INPUT,
    EXIT_OK,
    EXIT_PEER_ERROR,
    EXIT_TASK_NOT_COMPLETED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    FollowUp,
    exit_code,
)
from .output import Output
from .parser import build_parser

__all__ = [
    "DEFAULT_WAIT_TIMEOUT",
    "EXIT_INTERRUPTED",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_PEER_ERROR",
    "EXIT_TASK_NOT_COMPLETED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "main",
]


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None) -> int:
    """Run the ``a2a-sync`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.debug:
        # Retries are expected here; failures are reported as one line below.
        logging.getLogger("urllib3").setLevel(logging.ERROR)
    out = Output(args.json, stdout)
    handler: Callable[[Any, Output], int] = args.handler
    try:
        return handler(args, out)
    except FollowUp as interrupt:
        sys.stderr.write(f"\na2a-sync: interrupted; {interrupt.hint}\n")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except A2ASyncError as error:
        if args.debug:
            raise
        sys.stderr.write(f"a2a-sync: {type(error).__name__}: {_one_line(str(error))}\n")
        return exit_code(error)


def _one_line(text: str) -> str:
    return " ".join(text.split())
