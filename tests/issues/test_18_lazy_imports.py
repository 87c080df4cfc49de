"""Issue 18 item 8: requests (~70 ms to import) is loaded only by what sends HTTP requests.

Each statement runs in a fresh interpreter, which then reports which of the heavy modules
it loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Modules a statement must not load (requests and what only requests loads).
HEAVY = ("requests", "urllib3", "charset_normalizer", "idna")


def loaded_after(statement: str) -> dict[str, bool]:
    probe = (
        f"{statement}\nimport json, sys\n"
        f"print(json.dumps({{name: name in sys.modules for name in {HEAVY!r}}}))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        check=True,
    )
    result: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "statement",
    [
        "import a2a_sync",
        "import a2a_sync.types",
        "from a2a_sync.types import Message, Task, AgentCard",
        "from a2a_sync import Message, TaskNotFound, Timeout",
        "from a2a_sync.server import A2AApplication",
        "from a2a_sync import A2AApplication, AgentExecutor, serve",
    ],
)
def test_models_errors_policies_and_the_server_do_not_import_requests(statement: str) -> None:
    assert loaded_after(statement) == dict.fromkeys(HEAVY, False)


def test_the_client_still_imports_requests_when_it_is_used() -> None:
    # The probe is live: it does see requests when a client is imported.
    assert loaded_after("from a2a_sync import A2AClient")["requests"] is True


def test_names_resolve_to_the_same_objects_as_their_home_modules() -> None:
    import a2a_sync
    import a2a_sync.client
    import a2a_sync.errors
    import a2a_sync.types

    assert a2a_sync.A2AClient is a2a_sync.client.A2AClient
    assert a2a_sync.Message is a2a_sync.types.Message
    assert a2a_sync.TaskNotFound is a2a_sync.errors.TaskNotFound
    with pytest.raises(AttributeError):
        _ = a2a_sync.NoSuchName
