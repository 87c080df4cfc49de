"""The gRPC binding of :class:`~a2a_sync.server.app.A2AApplication` (A2A 1.0, ``lf.a2a.v1``;
A2A 0.3's ``a2a.v1`` on the same server: :mod:`.grpc_v03`).

:class:`GRPCServer` runs grpcio's synchronous server (a thread pool) for an application
and answers every rpc of ``A2AService`` with the application's own pieces, as its
HTTP bindings do: the authenticator (gRPC metadata is presented to it as a WSGI-style
environ, so ``authorization`` is ``HTTP_AUTHORIZATION``), the handler's ``dispatch`` and
``dispatch_stream``, the stream cap, admission and graceful shutdown. Service parameters
come from metadata: ``a2a-version`` (must be 1.0; missing means 0.3 and is refused with
VERSION_NOT_SUPPORTED, as over HTTP), ``a2a-extensions``.

Request bytes are parsed by the binding (a malformed message is INVALID_ARGUMENT with
an INVALID_REQUEST ErrorInfo, like any bad request) and become the codec's params
through their ProtoJSON form (:mod:`a2a_sync.a2a.grpc.convert`); answers go back the
same way. Errors are gRPC status
codes with a ``google.rpc.Status`` carrying the ErrorInfo of the one error table in the
``grpc-status-details-bin`` trailer. The largest request accepted is
``max_receive_bytes`` (default: the app's ``max_body_bytes``); larger ones fail with
RESOURCE_EXHAUSTED before any handler runs.

Needs the ``grpc`` extra; imported only when used.
"""

from __future__ import annotations

import logging
import threading
from concurrent import futures
from typing import Final

import grpc

from ...a2a.types import AgentInterface
from ...errors import ConfigurationError
from .grpc_service import A2AServiceHandlers, GRPCHost
from .grpc_v03 import A2AServiceV03Handlers

__all__ = ["GRPC", "GRPCHost", "GRPCServer"]

logger = logging.getLogger(__name__)

GRPC: Final = "GRPC"
#: Pool threads beyond the stream cap, for unary calls.
_UNARY_THREADS: Final = 8


class GRPCServer:
    """A gRPC server (grpcio, synchronous, thread pool) for one :class:`A2AApplication`.

    Use as a context manager or call :meth:`start` and :meth:`stop`. On start the
    application's card lists the ``GRPC`` interface at ``host:port`` (or
    ``public_address``) when the card's interfaces are derived per request.

    Args:
        app: The application (its handler, authenticator, limits and card).
        host: Address to bind (loopback by default).
        port: Port (0: a free one; read :attr:`port` after :meth:`start`).
        threads: Pool threads: every open stream holds one until it ends (default: the
            app's ``max_streams`` plus 8 for unary calls).
        max_receive_bytes: Largest request message (default: the app's
            ``max_body_bytes``).
        max_concurrent_rpcs: Calls in progress at once; beyond it RESOURCE_EXHAUSTED
            (default: ``threads``, so calls never queue behind stuck streams).
        credentials: ``grpc.ssl_server_credentials(...)`` for TLS (default: plaintext;
            A2A requires TLS in production, spec §10.1).
        public_address: The ``host:port`` clients should dial, for the card.

    **Threads:** pool threads are named ``a2a-sync-grpc_N`` (ThreadPoolExecutor's naming)
    and joined by :meth:`stop`.
    """

    def __init__(
        self,
        app: GRPCHost,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        threads: int | None = None,
        max_receive_bytes: int | None = None,
        max_concurrent_rpcs: int | None = None,
        credentials: grpc.ServerCredentials | None = None,
        public_address: str | None = None,
    ) -> None:
        self._app = app
        self._host = host
        self._requested_port = port
        self._threads = threads or app.max_streams + _UNARY_THREADS
        self._max_receive = max_receive_bytes or app.max_body_bytes
        self._max_rpcs = max_concurrent_rpcs or self._threads
        self._credentials = credentials
        self._public_address = public_address
        self._server: grpc.Server | None = None
        self._pool: futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.port = 0

    @property
    def address(self) -> str:
        """``host:port`` as clients dial it (the card's GRPC interface URL)."""
        if self._public_address is not None:
            return self._public_address
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self.port}"

    def start(self) -> GRPCServer:
        """Bind and start serving.

        Raises:
            ConfigurationError: The address can not be bound, or already started.
        """
        with self._lock:
            if self._server is not None:
                raise ConfigurationError("this gRPC server is already started")
            pool = futures.ThreadPoolExecutor(self._threads, thread_name_prefix="a2a-sync-grpc")
            server = grpc.server(
                pool,
                handlers=[
                    A2AServiceHandlers(self._app, lambda: self.address).handler(),
                    A2AServiceV03Handlers(self._app, lambda: self.address).handler(),
                ],
                options=[
                    ("grpc.max_receive_message_length", self._max_receive),
                    ("grpc.so_reuseport", 0),
                ],
                maximum_concurrent_rpcs=self._max_rpcs,
            )
            target = f"{self._host}:{self._requested_port}"
            try:
                if self._credentials is not None:
                    port = server.add_secure_port(target, self._credentials)
                else:
                    port = server.add_insecure_port(target)
            except RuntimeError as exc:
                pool.shutdown(wait=False)
                raise ConfigurationError(f"gRPC can not bind {target}: {exc}") from exc
            server.start()
            self._server, self._pool, self.port = server, pool, port
        advertise = getattr(self._app._cards, "advertise", None)
        if advertise is not None:
            for version in ("1.0", "0.3"):  # 0.3's a2a.v1 service is on the same port
                advertise(
                    AgentInterface(
                        url=self.address, protocol_binding=GRPC, protocol_version=version
                    )
                )
        logger.info("serving gRPC on %s", self.address)
        return self

    def stop(self, grace: float | None = 5.0) -> bool:
        """Refuse new calls, give calls in flight (streams included) ``grace`` seconds,
        then cancel the rest and join the pool threads. The application itself is not
        closed (``app.close()`` ends its streams and agents).

        Returns:
            True when every call finished within ``grace``.
        """
        with self._lock:
            server, pool = self._server, self._pool
            self._server = self._pool = None
        if server is None or pool is None:
            return True
        done = server.stop(grace)
        finished = done.wait((grace or 0.0) + 5.0)
        pool.shutdown(wait=True)
        return bool(finished)

    def __enter__(self) -> GRPCServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<GRPCServer {self.address}>"
