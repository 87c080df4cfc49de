"""Every notebook in ``notebooks/`` runs top to bottom in a fresh kernel, and cleans up.

Each notebook is executed with nbclient in a new IPython kernel whose interpreter is this
test's own (``sys.executable``): the kernelspec is written to a temporary ``JUPYTER_PATH``
and every other Jupyter/IPython directory points into the test's temporary directory, so
the user's Jupyter configuration is neither read nor touched. A missing nbclient or
ipykernel fails the run (the notebooks are part of what ``make test`` checks); they come
with the ``test`` extra, hence the ``peer`` marker that keeps the Python 3.10/3.13 unit
runs (``test-unit`` extra only) away from this module.

After a notebook's last cell, one more cell (not saved anywhere) reports from inside the
kernel which ``a2a-sync-*``/``waitress-*`` threads and which child processes are still
alive: a notebook must close everything it starts. While the notebook runs, this process
is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a process the kernel started
and did not stop is re-parented to the test rather than to init when the kernel exits:
once the kernel has shut down, no such process may be left (even after a failed cell).

The committed notebooks carry no outputs (checked without Jupyter, so that test runs
everywhere).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.support.polling import poll_until

NOTEBOOKS_DIR: Final = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS: Final = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))

#: The notebooks this module knows; a new notebook must be added here with its outputs.
EXPECTED_OUTPUTS: Final = {
    "01_a2a_quickstart.ipynb": [
        "Demo agent",  # the rendered card
        "HTTP+JSON http://127.0.0.1:",  # the binding chosen from the user's preference
        "echo: Hello over REST",
        "echo: Hello, agent!",
        "1 2 3 4 5",
        "For how many people?",
        "Booked a table for 4.",
        "TaskNotFound -32001",
        "ConnectError",
    ],
    "02_resilience.ipynb": [
        "trying the next agent",  # the fallback, in the log
        "echo: hello",
        "TaskWaitTimeout",
        "42",
        "the agent asks: Into which language?",
        "bonjour",
        "resubscribing",  # the stalled stream, in the log
        "'part 1, part 2'",
        "→ ConnectError\nhttp://",  # both agents of AllAgentsFailed
    ],
    "03_mcp_client.ipynb": [
        "notes-server 1.0 speaks MCP",
        '<div class="a2a-sync-tool"><code>greet</code>',  # the tools, rendered
        "Hello, Ada!",
        "is_error: True | cannot divide by zero",
        "InvalidParams -32602",
        "ServiceStatus(healthy=True, version='2.1.0', uptime_s=86400)",
        "progress 5 of 5",
        "Reindexed notes.",
        "- run it in CI",
        "[user] Please review:",
        "'Hello, Barbara!'",
        "started: ['notes'] | failed: {'broken': 'ServerProcessError'}",
        "sunny in Oslo",
        "closed: True",
    ],
    "04_serve_an_agent.ipynb": [
        "Word counter",  # the rendered card
        "the: 3\nand: 2",
        "{'words': 8, 'unique': 5}",
        "counts: 'be: 2\\n'",  # a streamed chunk
        "summary: {'words': 6, 'unique': 4}",
        "input_required → Send me some text to count.",
        "completed → {'words': 3, 'unique': 2}",
        "completed | the: 3  and: 2",  # read back after the restart
        "completed | hello: 2  world: 1",
        "3 tasks on the restarted server",
        "database removed: True",
    ],
    "05_oauth.ipynb": [
        "authorization server: http://127.0.0.1:",
        "completed - echo: hello",
        "scopes asked for: ['read', 'read write']",
        "<OAuth authorization_code for",
        "AuthorizationRequired -> http://127.0.0.1:",
    ],
    "06_mcp_streamable_http.ipynb": [
        "weather-desk speaks MCP",
        "forecast: The weather in a city for the next days.",
        "Oslo: sunny for 3 day(s)",
        "2 + 3 = 5",  # structured output
        "is_error: True | Unknown tool: no_such_tool",
        "started: ['notes', 'weather']",  # the HTTP server and the in-memory one
        "['notes.note', 'weather.add', 'weather.forecast']",
        "Lima: sunny for 1 day(s)",
        "noted: buy milk",
        "connection closed: True | server exit code:",
    ],
    "07_serve_both_bindings.ipynb": [
        "HTTP+JSON 1.0  http://127.0.0.1:",  # the card lists both bindings
        "JSONRPC   1.0  http://127.0.0.1:",
        "/rest      completed → HELLO FROM A NOTEBOOK",  # chosen: HTTP+JSON
        "/          completed → HELLO FROM A NOTEBOOK",  # chosen: JSON-RPC
        "JSONRPC   chunks ['ONE ', 'TWO ', 'THREE ', 'FOUR '] → completed",
        "HTTP+JSON chunks ['ONE ', 'TWO ', 'THREE ', 'FOUR '] → completed",
        "True completed SAME TASK",
        "JSONRPC   TaskNotFound -32001",
        "HTTP+JSON TaskNotFound -32001",
        "server stopped: ConnectError",
    ],
}

#: Longest a single cell may run (the slowest cells wait on purpose, for about 2 s).
CELL_TIMEOUT: Final = 30
#: Longest a kernel may take to start on a busy CI machine.
KERNEL_STARTUP_TIMEOUT: Final = 30
#: Per notebook: kernel start, every cell, kernel shutdown.
NOTEBOOK_TIMEOUT: Final = 90
KERNEL_NAME: Final = "a2a-sync-test-python"
CHECK_MARKER: Final = "A2A_SYNC_NOTEBOOK_CHECK "

#: Runs in the kernel after the notebook's last cell: what is still running in there?
CHECK_CELL: Final = f"""
import json as _json, os as _os, sys as _sys, threading as _threading

def _a2a_sync_children():
    pids = []
    for entry in _os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{{entry}}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == _os.getpid():
                pids.append(int(entry))
    return pids

print({CHECK_MARKER!r} + _json.dumps({{
    "executable": _sys.executable,
    "pid": _os.getpid(),
    "cwd": _os.getcwd(),
    "threads": sorted(
        t.name for t in _threading.enumerate() if t.name.startswith(("a2a-sync", "waitress"))
    ),
    "children": _a2a_sync_children(),
}}))
"""

#: Executing notebooks needs nbclient and ipykernel: the ``test`` extra, like the peers.
jupyter = pytest.mark.peer


@pytest.fixture(autouse=True)
def jupyter_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernelspec for this interpreter in a temporary JUPYTER_PATH; the kernel's temporary
    files, IPython profile and Jupyter runtime files all live under ``tmp_path``."""
    spec_dir = tmp_path / "jupyter-path" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    kernel_tmp = tmp_path / "kernel-tmp"
    kernel_tmp.mkdir()
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter-path"))
    for name, sub in (
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.delenv("JUPYTER_PREFER_ENV_PATH", raising=False)
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))


#: ``prctl`` option: orphaned descendants are re-parented to this process (Linux >= 3.4).
PR_SET_CHILD_SUBREAPER: Final = 36
#: How long a process the kernel started may take to exit after the kernel did (a stdio
#: server notices its closed stdin).
ORPHAN_GRACE: Final = 5.0


def _children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (zombies included), from ``/proc``."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            children.append(int(entry))
    return children


def _describe(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


@contextlib.contextmanager
def _adopting_orphans(grace: float) -> Iterator[Callable[[], list[str]]]:
    """Make this process a child subreaper; yields a function that waits up to ``grace``
    seconds for the processes adopted since to exit, reaps them, kills and reaps the rest,
    and returns the command lines of those it had to kill (the leftovers)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    before = set(_children_of(os.getpid()))

    def adopted_alive() -> list[int]:
        adopted = [pid for pid in _children_of(os.getpid()) if pid not in before]
        for pid in adopted:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap the ones that exited
        return [pid for pid in _children_of(os.getpid()) if pid not in before]

    def leftovers() -> list[str]:
        # exits of adopted processes have no event here: poll for the grace period (its
        # expiry is no failure: what is left is killed and reported)
        poll_until(lambda: not adopted_alive(), grace)
        alive = adopted_alive()
        found = [f"{pid}: {_describe(pid)}" for pid in alive]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        return found

    try:
        yield leftovers
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _texts(cell: Any) -> str:
    """Everything a code cell showed: streams, plain text, Markdown and HTML."""
    chunks = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            chunks.append(output.get("text", ""))
        for mime in ("text/plain", "text/markdown", "text/html"):
            value = output.get("data", {}).get(mime)
            if value:
                chunks.append(value if isinstance(value, str) else "".join(value))
    return "".join(chunks)


def _run(notebook: Any, orphan_grace: float = ORPHAN_GRACE) -> list[str]:
    """Execute ``notebook`` in place in a fresh kernel (working directory: ``notebooks/``);
    return the processes the kernel left running (killed by now)."""
    from nbclient import NotebookClient  # the test extra only

    client = NotebookClient(
        notebook,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT,
        startup_timeout=KERNEL_STARTUP_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    with _adopting_orphans(orphan_grace) as leftovers:
        try:
            client.execute()
        except BaseException as exc:
            left = leftovers()  # the kernel has shut down all the same
            if left:
                raise AssertionError(f"a cell failed, and processes were left: {left}") from exc
            raise
        return leftovers()


def _nbformat() -> Any:
    """nbformat (the test extra only), untyped as it is."""
    return importlib.import_module("nbformat")


def _notebook(*sources: str) -> Any:
    nbformat = _nbformat()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return notebook


def _execute(path: Path) -> tuple[Any, dict[str, Any]]:
    nbformat = _nbformat()
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(CHECK_CELL))
    left = _run(notebook)
    assert not left, f"{path.name} left processes running after the kernel shut down: {left}"
    report = _texts(notebook.cells[-1])
    assert report.startswith(CHECK_MARKER), report
    return notebook, json.loads(report[len(CHECK_MARKER) :])


def test_every_notebook_is_known_to_this_module() -> None:
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOKS_DIR}"
    assert sorted(p.name for p in NOTEBOOKS) == sorted(EXPECTED_OUTPUTS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_carries_no_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"cell {index} has outputs"
            assert cell.get("execution_count") is None, f"cell {index} has an execution count"


@jupyter
@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_fresh_kernel_and_leaves_nothing_running(path: Path) -> None:
    notebook, state = _execute(path)

    assert state["executable"] == sys.executable  # the kernel is this interpreter
    assert Path(state["cwd"]) == NOTEBOOKS_DIR
    assert state["threads"] == [], f"threads still running after the last cell: {state}"
    assert state["children"] == [], f"child processes still running after the last cell: {state}"
    assert not Path(f"/proc/{state['pid']}").exists(), "the kernel outlived its shutdown"

    shown = "".join(_texts(cell) for cell in notebook.cells if cell.cell_type == "code")
    for expected in EXPECTED_OUTPUTS[path.name]:
        assert expected in shown, f"{path.name}: {expected!r} not in the outputs"
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []


@jupyter
def test_the_check_cell_sees_what_a_notebook_left_running() -> None:
    notebook = _notebook(
        "import subprocess, sys, threading\n"
        "server = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "stop = threading.Event()\n"
        "threading.Thread(target=stop.wait, name='a2a-sync-forgotten', daemon=True).start()",
        CHECK_CELL,
        "server.kill(); server.wait(); stop.set()",
    )
    assert _run(notebook) == []
    report = _texts(notebook.cells[1])
    state = json.loads(report[len(CHECK_MARKER) :])
    assert state["threads"] == ["a2a-sync-forgotten"]
    assert len(state["children"]) == 1


@jupyter
def test_a_process_the_kernel_leaves_behind_is_found_after_shutdown() -> None:
    # Its own session, like an MCP stdio server: the kernel's exit does not take it along.
    notebook = _notebook(
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)"
    )
    left = _run(notebook, orphan_grace=0.5)
    assert len(left) == 1
    assert "time.sleep(60)" in left[0]
