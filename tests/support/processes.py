"""Process-tree checks from /proc (Linux): "no process is left behind" assertions."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive", "descendants"]


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat from "state" on, or None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] != b"Z"


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
