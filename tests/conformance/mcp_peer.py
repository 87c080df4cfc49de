"""Helpers for the conformance modules that drive :mod:`.mcp_stdio_peer` (a scripted MCP
stdio server that records what it reads)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PEER = str(Path(__file__).with_name("mcp_stdio_peer.py"))


def peer(record: Path, plan: dict[str, Any]) -> list[str]:
    """The argv that starts the scripted peer with ``plan`` (see its module docstring)."""
    return [sys.executable, PEER, str(record), json.dumps(plan)]


def received(record: Path) -> list[dict[str, Any]]:
    """What the peer read (and its ``{"event": ...}`` notes), in order."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_bytes().splitlines() if line.strip()]


def methods(messages: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in messages if "method" in m]


def requests_named(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") == method and "id" in m]


def answers_to(messages: list[dict[str, Any]], request_id: Any) -> list[dict[str, Any]]:
    """The client's responses to the peer's request ``request_id``."""
    return [m for m in messages if "method" not in m and m.get("id") == request_id]
