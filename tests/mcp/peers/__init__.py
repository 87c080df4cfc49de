"""Peer server scripts for the MCP tests (run as subprocesses)."""

from __future__ import annotations

import sys
from pathlib import Path

PEERS = Path(__file__).parent
ECHO_SERVER = str(PEERS / "echo_server.py")


def echo_argv(*flags: str) -> list[str]:
    """argv for the framework-free echo server with start-up ``flags``."""
    return [sys.executable, ECHO_SERVER, *flags]
