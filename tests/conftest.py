"""Suite-wide fixtures: a clean network environment for every test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import settings

# Property tests check behaviour, not speed: a loaded 2-core CI box must not fail them on
# hypothesis' default 200 ms per-example deadline.
settings.register_profile("a2a_sync", deadline=None, print_blob=True)
settings.load_profile("a2a_sync")

pytest_plugins = ["tests.support.fixtures", "tests.peers.fixtures", "tests.support.postgres"]

_PROXY_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy configured in the environment must never capture requests to 127.0.0.1."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


#: How long a module's a2a_sync threads get to finish after its fixtures are torn down.
_THREAD_GRACE = 5.0


@pytest.fixture(autouse=True, scope="module")
def _no_threads_left_behind() -> Iterator[None]:
    """Every thread a2a_sync (or a test) starts is named ``a2a-sync-...`` and must be gone
    once the module's fixtures closed what started it: "every thread can be stopped"."""
    yield
    deadline = time.monotonic() + _THREAD_GRACE
    for thread in threading.enumerate():
        if thread.name.startswith("a2a-sync") and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    left = sorted(t.name for t in threading.enumerate() if t.name.startswith("a2a-sync"))
    assert not left, f"threads left running after the module: {left}"
