"""pytest fixtures for the test-support servers and the fault proxy.

Each fixture is a factory: call it as often as the test needs; everything it started is closed
at teardown (in reverse order), and a failure to close (a thread left running, a handler that
raised) fails the test. Annotate parameters with the factory protocols for type hints::

    def test_stream_is_cut(wsgi_server: WsgiServerFactory, fault_proxy: FaultProxyFactory) -> None:
        proxy = fault_proxy(wsgi_server(app))
        proxy.cut_after_events(1)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import pytest

from tests.support.faultproxy import Address, FaultProxy, full_backlog_listener
from tests.support.servers import Handler, ScriptedServer, serve_wsgi

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication


class FaultProxyFactory(Protocol):
    def __call__(self, upstream: Address | str) -> FaultProxy:
        """Start a :class:`FaultProxy` in front of ``(host, port)`` or an ``http://`` URL."""


class ScriptedServerFactory(Protocol):
    def __call__(self, handler: Handler) -> ScriptedServer:
        """Start a :class:`ScriptedServer` that answers with ``handler``."""


class WsgiServerFactory(Protocol):
    def __call__(self, app: WSGIApplication, *, http10: bool = False) -> str:
        """Serve ``app`` (waitress, or HTTP/1.0 wsgiref if ``http10``); return its base URL."""


@pytest.fixture
def fault_proxy() -> Iterator[FaultProxyFactory]:
    """Factory for fault proxies, closed at teardown."""
    with contextlib.ExitStack() as stack:

        def start(upstream: Address | str) -> FaultProxy:
            return stack.enter_context(FaultProxy(upstream))

        yield start


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServerFactory]:
    """Factory for scripted raw-socket servers, closed at teardown."""
    with contextlib.ExitStack() as stack:

        def start(handler: Handler) -> ScriptedServer:
            return stack.enter_context(ScriptedServer(handler))

        yield start


@pytest.fixture
def wsgi_server() -> Iterator[WsgiServerFactory]:
    """Factory serving WSGI apps on 127.0.0.1; returns base URLs; servers stop at teardown."""
    with contextlib.ExitStack() as stack:

        def start(app: WSGIApplication, *, http10: bool = False) -> str:
            return stack.enter_context(serve_wsgi(app, http10=http10))

        yield start


@pytest.fixture
def full_backlog_address() -> Iterator[Address]:
    """``(host, port)`` of a loopback listener whose full accept queue makes connects time out."""
    with full_backlog_listener() as address:
        yield address
