"""Issue 18 item 5, second pass: the per-call bookkeeping of the shared HTTP path made
cheaper without changing what it does.

* exceptions are translated in ``except`` blocks instead of a context manager per send
  and per read: the same typed errors, chained to the same root causes;
* a stream's call is registered once, weakly, from before its request is sent (so
  ``close()`` cancels an opening stream too), and forgotten when the opening fails;
* a deadline-free call's urllib3 timeout is shared per (connect, read) limits: urllib3
  clones it before use, so the shared one never carries a connect clock;
* the MCP deadline watchdog orders (deadline, sequence, entry) tuples: equal deadlines
  never compare entries, and the earliest deadline still fires first;
* an MCP endpoint without credentials hands out a fresh copy of its POST header template.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from a2a_sync._net.adapter import _hashable
from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.pool import DeadlineTimeout
from a2a_sync.errors import Cancelled, ConnectError, ConnectionLost, ResponseTooLarge
from a2a_sync.mcp.transports._deadlines import Deadlines
from a2a_sync.mcp.transports._httpbase import Endpoint
from a2a_sync.policies import RetryPolicy, Timeout
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond

WAIT = 10.0


@pytest.fixture
def transport() -> Iterator[HTTPTransport]:
    with HTTPTransport(
        timeout=Timeout(connect=WAIT, read=WAIT, total=None), retry=RetryPolicy(max_retries=0)
    ) as made:
        yield made


# -- translation in except blocks ----------------------------------------------------------------


def test_a_refused_connection_is_still_a_connect_error_chained_to_the_os_error(
    transport: HTTPTransport,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: connecting is refused
        with pytest.raises(ConnectError) as caught:
            transport.open_stream("POST", f"http://127.0.0.1:{port}/mcp", body=b"{}")
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert not transport._inflight
    assert len(transport._streams) == 0  # the failed opening is forgotten


def test_a_body_that_breaks_off_is_connection_lost_and_an_oversized_one_passes_through(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def short(sock: socket.socket, request: RecordedRequest) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        sock.close()

    def big(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, body=b"x" * 100)

    with (
        transport.open_stream("GET", f"{scripted_server(short).url}/s") as opened,
        pytest.raises(ConnectionLost) as caught,
    ):
        opened.read_body(1024)
    assert caught.value.__cause__ is not None  # chained to the root, as Translating did
    with (
        transport.open_stream("GET", f"{scripted_server(big).url}/s") as opened,
        pytest.raises(ResponseTooLarge),  # ours already: not re-translated
    ):
        opened.read_body(10)


def test_a_foreign_non_transport_error_passes_through_untranslated(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory, monkeypatch: Any
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, body=b"ok"))

    class Boom(Exception):
        pass

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise Boom

    monkeypatch.setattr(transport._sender, "send", explode)
    with pytest.raises(Boom):
        transport.open_stream("GET", f"{server.url}/s")
    assert len(transport._streams) == 0
    assert not transport._inflight


# -- a stream's call: tracked from before sending ---------------------------------------------


def test_closing_the_transport_cancels_a_stream_still_waiting_for_its_headers(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    received = threading.Event()

    def silent(sock: socket.socket, request: RecordedRequest) -> None:
        received.set()
        sock.settimeout(WAIT)
        try:
            sock.recv(1)  # until the client's socket is shut down
        except OSError:
            return

    server = scripted_server(silent)
    failure: list[BaseException] = []

    def opener() -> None:
        try:
            transport.open_stream("GET", f"{server.url}/s").close()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=opener, name="a2a-sync-test-opener")
    thread.start()
    assert received.wait(WAIT)
    assert len(transport._streams) == 1
    assert not transport._inflight
    transport.close()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert len(failure) == 1
    assert isinstance(failure[0], Cancelled)


# -- shared deadline-free timeouts ----------------------------------------------------------------


def test_deadline_free_timeouts_are_shared_and_never_carry_a_connect_clock(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    shared = DeadlineTimeout.of(WAIT, WAIT, None)
    assert DeadlineTimeout.of(WAIT, WAIT, None) is shared
    assert DeadlineTimeout.of(WAIT, 2 * WAIT, None) is not shared
    deadline = time.monotonic() + WAIT
    own = DeadlineTimeout.of(WAIT, WAIT, deadline)
    assert own is not DeadlineTimeout.of(WAIT, WAIT, deadline)  # a deadline: per call
    server = scripted_server(lambda sock, request: respond(sock, body=b"ok"))
    for _ in range(2):
        with transport.open_stream("GET", f"{server.url}/s") as opened:
            assert opened.read_body(10) == b"ok"
    assert shared._start_connect is None  # urllib3 started the clock on its clones
    assert (shared.connect_timeout, shared.read_timeout) == (WAIT, WAIT)


# -- the MCP deadline watchdog ---------------------------------------------------------------


class _Aborted:
    def __init__(self, name: str, log: list[str], done: threading.Event) -> None:
        self.name, self.log, self.done = name, log, done

    def abort(self) -> None:
        self.log.append(self.name)
        if len(self.log) == 2:
            self.done.set()


def test_the_earliest_deadline_fires_first_and_equal_deadlines_never_compare_entries() -> None:
    deadlines = Deadlines("a2a-sync-test-deadlines")
    log: list[str] = []
    done = threading.Event()
    try:
        now = time.monotonic()
        same = now + WAIT
        # equal deadlines: ordered by sequence (entries have no ordering of their own)
        deadlines.unwatch(deadlines.watch(_Aborted("a", log, done), same))  # type: ignore[arg-type]
        deadlines.watch(_Aborted("b", log, done), same)  # type: ignore[arg-type]
        late = deadlines.watch(_Aborted("late", log, done), now + 0.2)  # type: ignore[arg-type]
        deadlines.watch(_Aborted("early", log, done), now + 0.1)  # type: ignore[arg-type]
        deadlines.unwatch(late)
        deadlines.watch(_Aborted("next", log, done), now + 0.3)  # type: ignore[arg-type]
        assert done.wait(WAIT)
        assert log == ["early", "next"]  # the unwatched one never fires
    finally:
        deadlines.close()


# -- POST headers ---------------------------------------------------------------------------------


def test_post_headers_without_credentials_are_a_fresh_copy_of_the_template() -> None:
    endpoint = Endpoint("http://127.0.0.1:1/mcp", headers={"X-Tenant": "t"})
    first = endpoint.post_headers()
    first["Mcp-Session-Id"] = "s"
    assert endpoint.post_headers() == {
        "Accept": "application/json, text/event-stream",
        "Accept-Encoding": "identity",
        "X-Tenant": "t",
        "Content-Type": "application/json",
    }
    tokens = iter(["one", "two"])
    asked = Endpoint("http://127.0.0.1:1/mcp", auth=lambda: next(tokens))
    assert asked.post_headers()["Authorization"] == "Bearer one"  # asked per request
    assert asked.post_headers()["Authorization"] == "Bearer two"


# -- the adapter's plain-HTTP memo ---------------------------------------------------------------


def test_a_plain_http_pool_is_remembered_and_looked_up_again_once_closed(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, body=b"ok"))
    url = f"{server.url}/s"
    adapter = transport._adapter

    def call() -> None:
        with transport.open_stream("GET", url) as opened:
            assert opened.read_body(10) == b"ok"

    call()
    (pool, path), *_ = adapter._plain.values()
    assert path == "/s"
    call()
    assert next(iter(adapter._plain.values()))[0] is pool  # the same pool, remembered
    adapter.poolmanager.clear()  # forgets its pools ...
    pool.close()  # ... and the remembered one is closed (as the adapter's close does)
    call()  # a closed pool is not used: looked up again
    fresh = next(iter(adapter._plain.values()))[0]
    assert fresh is not pool
    assert fresh.pool is not None
    assert len(server.wait_for_requests(3)) == 3


def test_unhashable_cert_settings_are_not_memo_keys() -> None:
    assert _hashable(None)
    assert _hashable("client.pem")
    assert _hashable(("client.pem", "key.pem"))
    assert not _hashable(["client.pem", "key.pem"])
