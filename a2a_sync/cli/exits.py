"""The ``a2a-sync`` exit codes and the one-line error contract."""

from __future__ import annotations

from typing import Final

from ..errors import (
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
)

__all__ = [
    "EPILOG",
    "EXIT_INTERRUPTED",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_PEER_ERROR",
    "EXIT_TASK_NOT_COMPLETED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "FollowUp",
    "exit_code",
]

EXIT_OK: Final = 0
EXIT_TASK_NOT_COMPLETED: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREACHABLE: Final = 3
EXIT_PEER_ERROR: Final = 4
EXIT_NEEDS_INPUT: Final = 5
EXIT_INTERRUPTED: Final = 130

EPILOG: Final = """exit codes: 0 ok, 1 task not completed, 2 usage (bad arguments, a busy port),
3 unreachable/timeout, 4 peer error, 5 input or auth required, 130 interrupted.
Options such as --json, --timeout and --debug go before or after the command."""


class FollowUp(KeyboardInterrupt):
    """Ctrl-C while a task runs on the agent: the message says how to follow it up."""

    def __init__(self, hint: str) -> None:
        super().__init__(hint)
        self.hint = hint


def exit_code(error: BaseException) -> int:
    """The documented exit code for an a2a_sync error."""
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
