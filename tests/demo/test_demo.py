"""The demo command, run as a user runs it: a subprocess without a terminal or stdin."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading

from a2a_sync.demo import run_demo
from tests.support.processes import alive, descendants

DEMO_TIMEOUT = 45.0  # the demo takes a few seconds; this bounds a broken one (pytest: 60 s)
POLL_INTERVAL = 0.05  # how often the process tree is sampled while the demo runs


def test_the_demo_command_shows_the_recovery_exits_0_and_leaves_nothing_running() -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "a2a_sync.cli", "demo"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    finished = threading.Event()

    def sample() -> None:  # every process the demo started, while it runs
        while not finished.wait(POLL_INTERVAL):
            seen.update(descendants(demo.pid))

    sampler = threading.Thread(target=sample, name="test-demo-sampler", daemon=True)
    sampler.start()
    try:
        out, err = demo.communicate(timeout=DEMO_TIMEOUT)
    finally:
        finished.set()
        sampler.join(DEMO_TIMEOUT)
        if demo.poll() is None:
            demo.kill()
            demo.wait(DEMO_TIMEOUT)
    assert demo.returncode == 0, out + err
    assert err == ""  # no warnings, no progress bar without a terminal
    lines = out.splitlines()

    def index(pattern: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pattern, line))

    # The story, in order: events, the cut, the resubscription, more events, the result.
    cut = index(r">>> relay: cut the connection after event 6$")
    assert index(r"event  6  ") < cut < index(r"resubscribed to task \w+ \(SubscribeToTask")
    assert index(r"resubscribed") < index(r"event  7  ") < index(r"Result: task \w+ completed")
    assert "600851475143 = 71 * 839 * 1471 * 6857" in [line.strip() for line in lines]
    assert any("received the message once (SendStreamingMessage)" in line for line in lines)
    assert any("re-attached with SubscribeToTask x1" in line for line in lines)
    assert any(line.endswith("a2a_sync threads still running: 0") for line in lines)
    tools_pid = int(re.findall(r"pid (\d+); tools: factorize", out)[0])
    assert tools_pid in seen  # the sampler saw the tool server: its check below means something
    assert not [pid for pid in seen if alive(pid)]


def test_the_demo_says_so_when_its_promise_does_not_hold() -> None:
    out = io.StringIO()
    # One number makes a stream of four events: the relay never gets to cut it.
    assert run_demo(out, message="factor 360") == 1
    assert "demo FAILED: the relay never cut the stream" in out.getvalue()
    assert not [t.name for t in threading.enumerate() if t.name.startswith("a2a-sync")]
