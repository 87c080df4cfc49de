"""Every Python block of README.md, docs/*.md and notebooks/README.md runs as printed
(issue 17 §9).

Conventions, written as an HTML comment on the line before a block (invisible when the
Markdown is rendered)::

    <!-- snippet: skip — why it cannot run here -->
    <!-- snippet: continues -->           runs with the names of the file's previous block
    <!-- snippet: agent URL [URL ...] --> each URL (a placeholder, marked so in the block)
                                          becomes the URL of a local test agent
    <!-- snippet: serves -->              ends with a blocking serve(...): runs in a
                                          subprocess (port=8000 becomes a free port) until
                                          it says it serves, then gets Ctrl-C

A block that defines ``test_*`` functions has them called. Blocks in other languages
(``sh``, ``bash``, ``nginx``, plain) are shell commands, configurations or output, never
run; an unknown language fails the test, so a new block is either run or marked.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from a2a_sync.testing import FakeAgent, agent_server

ROOT = Path(__file__).parents[1]
DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "notebooks" / "README.md", *(ROOT / "docs").glob("*.md")]
)
NOT_PYTHON = frozenset({"", "sh", "bash", "console", "text", "nginx", "ini", "toml", "json", "sql"})
WAIT = 30.0

_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*snippet:\s*(\S+)\s*(.*?)\s*-->\s*$")


@attrs.frozen
class Block:
    path: Path
    line: int
    language: str
    source: str
    directive: str = ""
    arguments: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        indent, language = fence.groups()
        end = index + 1
        while not lines[end].strip().startswith("```"):
            end += 1
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end])
        before = index - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        directive = _DIRECTIVE.match(lines[before]) if before >= 0 else None
        name, rest = directive.groups() if directive else ("", "")
        found.append(Block(path, index + 1, language, body + "\n", name, tuple(rest.split())))
        index = end + 1
    return found


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    agent = (
        FakeAgent("Docs agent")
        .on("report", chunks=["part 1, ", "part 2"])
        .on("Book a table for two", ask="For when?")
    )
    with agent_server(agent) as url:
        yield url


def _serve_in_subprocess(block: Block, cwd: Path) -> None:
    source = block.source.replace("port=8000", "port=0")
    process = subprocess.Popen(
        [sys.executable, "-c", source],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log: list[str] = []
    serving = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if line.startswith("a2a-sync: serving http://"):
                serving.set()
        serving.set()  # ended

    reader = threading.Thread(target=read, name="test-docs-serve-log", daemon=True)
    reader.start()
    try:
        assert serving.wait(WAIT), f"{block}: never said it serves"
        assert process.poll() is None, f"{block}: " + "".join(log)
        process.send_signal(signal.SIGINT)
        assert process.wait(WAIT) == 0, f"{block}: " + "".join(log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)
        reader.join(WAIT)
        assert process.stderr is not None
        process.stderr.close()
    assert log[-1].startswith("a2a-sync: stopped serving"), "".join(log)


def _definitions(source: str) -> str:
    """``source`` without its last statement (the blocking ``serve(...)``)."""
    tree = ast.parse(source)
    tree.body = tree.body[:-1]
    return ast.unparse(tree)


def _close(namespace: dict[str, Any]) -> None:
    """Close what a snippet left open (a script would exit here)."""
    for value in namespace.values():
        if type(value).__module__.startswith("a2a_sync") and hasattr(value, "close"):
            try:
                value.close(5.0)
            except TypeError:
                value.close()


def _run(block: Block, namespace: dict[str, Any], agent: str) -> None:
    source = block.source
    if block.directive == "agent":
        for placeholder in block.arguments:
            assert placeholder in source, f"{block}: no {placeholder} in the block"
            source = source.replace(placeholder, agent)
    before = set(namespace)
    exec(compile(source, str(block), "exec"), namespace)
    for name in sorted(set(namespace) - before):
        if name.startswith("test_") and callable(namespace[name]):
            namespace[name]()


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_runs(
    path: Path, agent_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # files a snippet creates (a2a-tasks.sqlite3) land here
    namespaces: list[dict[str, Any]] = []
    namespace: dict[str, Any] = {}
    try:
        for block in blocks(path):
            if block.language in NOT_PYTHON or block.directive == "skip":
                if block.directive == "skip":
                    assert block.arguments, f"{block}: say why it is skipped"
                continue
            assert block.language == "python", f"{block}: unknown language {block.language!r}"
            if "npx" in block.source and shutil.which("npx") is None:
                pytest.skip("npx is not installed")
            if block.directive != "continues":
                namespace = {"__name__": f"snippet_{block.line}"}
                namespaces.append(namespace)
            if block.directive == "serves":
                _serve_in_subprocess(block, tmp_path)
                _run(attrs.evolve(block, source=_definitions(block.source)), namespace, "")
                continue
            monkeypatch.chdir(ROOT if "npx" in block.source else tmp_path)
            _run(block, namespace, agent_url)
    finally:
        for each in namespaces:
            _close(each)


def test_every_document_is_checked() -> None:
    """The documents with Python blocks are in the list above (a new docs/ page is)."""
    assert ROOT / "README.md" in DOCUMENTS
    assert any(block.language == "python" for block in blocks(ROOT / "README.md"))
