"""Issue 18, "How to show it": the side-by-side benchmark runs (``--quick``: a smoke run
with tiny counts). Not a timed test: only that every section and variant ran."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_all(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_all", "--quick", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def rows(output: str) -> set[str]:
    return {line.split()[0] for line in output.splitlines() if line and line[0] not in "#v "}


@pytest.mark.slow
def test_the_benchmark_runs_every_section_and_floor() -> None:
    output = run_all("--no-official")
    for heading in ("## A2A client SendMessage", "## A2A server blocking", "## import"):
        assert heading in output
    assert {
        "urllib3",
        "http.client",
        "a2a_sync",
        "requests",
        "waitress-bare-msg",
        "a2a_sync-msg",
        "a2a_sync-workers-msg",
    } <= rows(output)


@pytest.mark.slow
@pytest.mark.peer
def test_the_benchmark_runs_the_official_sdk_variants() -> None:
    output = run_all("--only", "client", "--only", "server")
    assert {"a2a-sdk", "a2a-sdk-msg", "a2a-sdk-task"} <= rows(output)
