"""The process side of the stdio transport: the environment a server starts with, and
signalling its process group (the server, and whatever a wrapper such as npx left behind).

POSIX: the server leads its own session, so its pid is its group id. Windows has no
process groups here: the child is terminated directly.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

__all__ = [
    "DEFAULT_INHERITED_ENV_VARS",
    "FORCE_KILL_TIMEOUT",
    "KILL_REAP_TIMEOUT",
    "PROCESS_TERMINATION_TIMEOUT",
    "escalate",
    "shutdown_waits",
    "GROUP_POLL_INTERVAL",
    "KILL_SIGNAL",
    "default_environment",
    "group_alive",
    "kill_stragglers",
    "signal_group",
]

logger = logging.getLogger("a2a_sync.mcp.transports.stdio")  # the stdio transport's

#: Environment variables a server inherits by default; everything else (API keys,
#: cloud credentials) must be passed explicitly with ``env=`` (same list as python-sdk).
DEFAULT_INHERITED_ENV_VARS: Final[tuple[str, ...]] = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)
#: SIGKILL where it exists (Windows has only TerminateProcess, spelled SIGTERM here).
KILL_SIGNAL: Final = getattr(signal, "SIGKILL", signal.SIGTERM)
#: Time for group members left behind by an exited server to die after SIGTERM.
_STRAGGLER_TIMEOUT: Final = 0.5
#: Grace period for the server to exit on its own after its stdin closes (MCP lifecycle).
PROCESS_TERMINATION_TIMEOUT: Final = 2.0
#: Time between SIGTERM and SIGKILL for a server that lingers.
FORCE_KILL_TIMEOUT: Final = 2.0
#: Time for the kernel to reap a SIGKILLed process; only an unkillable one runs this out.
KILL_REAP_TIMEOUT: Final = 2.0
#: Shortest wait between SIGTERM and SIGKILL, even when a connect's budget is spent.
_MIN_KILL_WAIT: Final = 0.2
#: Polling step while waiting for a process group to empty.
GROUP_POLL_INTERVAL: Final = 0.01


def default_environment(
    inherit: Iterable[str] = DEFAULT_INHERITED_ENV_VARS,
) -> dict[str, str]:
    """The allow-listed part of this process's environment (shell functions dropped)."""
    env: dict[str, str] = {}
    for key in inherit:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):
            env[key] = value
    return env


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the server's process group (POSIX) or the server (Windows)."""
    try:
        if os.name == "posix":
            # The child leads its own session, so its pid is the group id. Never
            # getpgid(): after the leader is reaped that could name another group.
            os.killpg(proc.pid, sig)
        elif sig == signal.SIGTERM:
            proc.terminate()
        else:
            proc.kill()
    except ProcessLookupError:
        pass  # already gone
    except PermissionError:
        proc.send_signal(sig)  # group member with another uid: signal the leader only


def kill_stragglers(pgid: int, send: Callable[[int], None]) -> None:
    """Stop whatever an exited server left running in group ``pgid`` (a wrapper's
    grandchild): ``send(SIGTERM)``, a bounded wait, then ``send(SIGKILL)``."""
    if not group_alive(pgid):
        return
    send(signal.SIGTERM)
    deadline = time.monotonic() + _STRAGGLER_TIMEOUT
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(GROUP_POLL_INTERVAL)
    if group_alive(pgid):
        send(KILL_SIGNAL)


def group_alive(pgid: int) -> bool:
    """True if any process (zombies excepted, on Linux) remains in group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not sys.platform.startswith("linux"):
        return True
    return _linux_group_has_live_member(pgid)


def _linux_group_has_live_member(pgid: int) -> bool:
    # Orphaned zombies stay group members until init reaps them; some container inits
    # never do. They are dead: do not wait for them.
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def shutdown_waits(grace: float, kill_wait: float, limit: float | None) -> tuple[float, float]:
    """The waits before SIGTERM and before SIGKILL, shrunk to about ``limit`` seconds in
    total when a failed connect's budget bounds the shutdown."""
    if limit is None:
        return grace, kill_wait
    return min(grace, limit / 2), min(kill_wait, max(limit / 2, _MIN_KILL_WAIT))


def escalate(
    exited: threading.Event,
    send: Callable[[int], None],
    waits: tuple[float, float],
    name: str,
    pid: int,
) -> None:
    """Wait for the process to exit (``exited``), then ``send(SIGTERM)``, wait, then
    ``send(SIGKILL)``: every wait bounded."""
    grace, kill_wait = waits
    if exited.wait(grace):
        return
    logger.info("%s did not exit after stdin closed; sending SIGTERM", name)
    send(signal.SIGTERM)
    if exited.wait(kill_wait):
        return
    logger.warning("%s ignored SIGTERM; sending SIGKILL", name)
    send(KILL_SIGNAL)
    if not exited.wait(KILL_REAP_TIMEOUT):
        logger.error("%s (pid %s) survived SIGKILL", name, pid)
