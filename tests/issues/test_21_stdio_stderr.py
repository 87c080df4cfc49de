"""Issue 21 items 7 and 8, issue 12 §4: what a stdio server writes besides JSON-RPC.

* 21.7: servers on the older SDK generation (mcp 1.x) answer the ``server/discover`` probe
  with ~94 stderr lines; they are collapsed into one summary (lines at DEBUG), and the
  legacy verdict is cached so the next connect does not probe again.
* 21.8: stderr lines longer than one pipe read arrive whole and undamaged (incremental
  decoding), in the log and in ``ServerProcessError``'s stderr tail, with a bound.
* 12 §4: non-JSON stdout is logged a few times, then counted periodically.

Real subprocess servers: ``scripted_mcp_server.py`` imitates the mcp 1.x burst; when an
``mcp`` 1.x virtualenv exists (``A2A_SYNC_MCP1_PYTHON`` or ``/tmp/mcp1venv``), a FastMCP
server on it is the real peer.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync.errors import ServerProcessError
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from a2a_sync.mcp.transports._stdio_text import (
    MAX_STDERR_LINE_BYTES,
    NOISE_FIRST_LINES,
    LineSplitter,
    NoiseLimiter,
)

SERVER = str(Path(__file__).with_name("scripted_mcp_server.py"))
STDERR_LOGGER = "a2a_sync.mcp.transports.stdio.stderr"
STDIO_LOGGER = "a2a_sync.mcp.transports.stdio"
MCP1_PYTHON = os.environ.get("A2A_SYNC_MCP1_PYTHON", "/tmp/mcp1venv/bin/python")
MCP1_SERVER = """
from mcp.server.fastmcp import FastMCP
app = FastMCP("old-sdk")
@app.tool()
def add(a: int, b: int) -> int:
    return a + b
app.run()
"""


def scripted(*flags: str) -> list[str]:
    return [sys.executable, SERVER, *flags]


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Iterator[None]:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def _stderr_records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == STDERR_LOGGER and r.levelno == level
    ]


# --- 21.7 the probe's stderr burst ---------------------------------------------------------------


def _connects_quietly(argv: list[str], caplog: pytest.LogCaptureFixture, burst: int) -> None:
    caplog.set_level(logging.DEBUG, logger=STDERR_LOGGER)
    with MCPConnection.stdio(argv, timeout=30) as conn:
        assert conn.era == "legacy"
    info = _stderr_records(caplog, logging.INFO)
    summaries = [m for m in info if "stderr lines about server/discover" in m]
    assert len(summaries) == 1, info
    assert not [m for m in info if "input_value='server/discover'" in m]
    debug = _stderr_records(caplog, logging.DEBUG)
    assert len(debug) >= burst  # the lines themselves, at DEBUG
    caplog.clear()
    with MCPConnection.stdio(argv, timeout=30) as conn:  # cached verdict: no probe
        assert conn.era == "legacy"
    assert not [m for m in _stderr_records(caplog, logging.DEBUG) if "server/discover" in m]


def test_the_probe_burst_of_an_older_server_is_collapsed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _connects_quietly(scripted("--probe-burst", "94"), caplog, 94)


@pytest.mark.skipif(not Path(MCP1_PYTHON).exists(), reason="no mcp 1.x virtualenv")
def test_a_real_mcp_1x_server_answers_the_probe_quietly(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    script = tmp_path / "old_sdk_server.py"
    script.write_text(MCP1_SERVER)
    _connects_quietly([MCP1_PYTHON, str(script)], caplog, 90)


def test_stderr_unrelated_to_the_probe_is_forwarded() -> None:
    sink = io.StringIO()
    argv = scripted("--stderr-line", "300", "--discover-supported", '["2025-11-25"]')
    with MCPConnection.stdio(argv, stderr=sink, timeout=30) as conn:
        assert conn.era == "legacy"
    assert sink.getvalue() == "─" * 100 + "\n"


# --- 21.8 long lines ---------------------------------------------------------------------------


def test_a_long_stderr_line_arrives_whole_and_undamaged() -> None:
    sink = io.StringIO()
    argv = scripted("--stderr-line", "90000", "--discover-supported", '["2025-11-25"]')
    with MCPConnection.stdio(argv, stderr=sink, timeout=30):
        pass
    assert sink.getvalue() == "─" * 30000 + "\n"  # one line, no U+FFFD


def test_the_stderr_tail_of_a_failed_server_keeps_line_boundaries() -> None:
    with pytest.raises(ServerProcessError) as info:
        MCPConnection.stdio(scripted("--stderr-line", "90000", "--exit-after-stderr"))
    tail = info.value.stderr_tail
    assert "\ufffd" not in tail
    assert len(tail.splitlines()) == 1
    assert tail.startswith("─" * 100)
    assert tail.endswith("more characters]")


def test_line_splitter_keeps_characters_split_across_reads_and_bounds_lines() -> None:
    splitter = LineSplitter(max_line_bytes=10)
    data = "é─x\n".encode()
    lines = [line for i in range(len(data)) for line in splitter.feed(data[i : i + 1])]
    assert lines == ["é─x"]
    long = "─" * 5 + "\n"  # 15 bytes: cut at a character boundary, marked
    assert list(splitter.feed(long.encode())) == ["───" + " … [6 more bytes]"]
    assert list(splitter.feed(b"no newline")) == []
    assert list(splitter.finish()) == ["no newline"]
    assert MAX_STDERR_LINE_BYTES >= 90000


# --- 12 §4 stdout noise ------------------------------------------------------------------------


def test_stdout_noise_is_logged_a_few_times_then_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=STDIO_LOGGER)
    argv = scripted("--stdout-noise", "200", "--discover-supported", '["2025-11-25"]')
    with MCPConnection.stdio(argv, timeout=30) as conn:
        assert conn.era == "legacy"
    warnings = [r.getMessage() for r in caplog.records if r.name == STDIO_LOGGER]
    assert NOISE_FIRST_LINES <= len(warnings) <= NOISE_FIRST_LINES + 1
    assert "must log to stderr" in warnings[0]


def test_noise_limiter_summarises_on_an_injected_clock(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    logger = logging.getLogger("tests.noise")
    limiter = NoiseLimiter(logger, "server", clock=lambda: now[0], interval=10.0)
    with caplog.at_level(logging.WARNING, logger="tests.noise"):
        for i in range(NOISE_FIRST_LINES + 50):
            limiter.noise("a stdout line that is not JSON", f"line {i}")
        assert len(caplog.records) == NOISE_FIRST_LINES
        now[0] = 10.0
        limiter.noise("a stdout line that is not JSON", "late")
    assert len(caplog.records) == NOISE_FIRST_LINES + 1
    assert "51 more stdout lines" in caplog.records[-1].getMessage()
    assert limiter.first == "line 0"
    assert limiter.count == NOISE_FIRST_LINES + 51
