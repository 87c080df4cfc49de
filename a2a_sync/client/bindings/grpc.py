"""gRPC to one A2A 1.0 endpoint (``lf.a2a.v1.A2AService``): the third binding under
:class:`A2AClient`, on grpcio's synchronous API. Needs the ``grpc`` extra.

:class:`GRPCTransport` builds each request message from the params the 1.0 codec made
(their ProtoJSON form, :mod:`a2a_sync.a2a.grpc.convert`) and returns the answer's
ProtoJSON dict, which is exactly what the JSON-RPC binding returns as ``result``; the
client decodes both the same way. Service parameters travel as metadata
(``a2a-version: 1.0``, ``a2a-extensions``, credentials as ``authorization``), keys
lower-cased. Every unary call has a deadline: the call's total timeout (else connect +
read). Streams have none; a stream silent for ``stream_idle_timeout`` is cancelled.

Errors are the same :mod:`a2a_sync.errors` types as over HTTP: an A2A error by the
ErrorInfo reason of the ``grpc-status-details-bin`` trailer (the one error table),
DEADLINE_EXCEEDED as :class:`DeadlineExceeded`, UNAVAILABLE as :class:`ConnectError`
when no connection was made, else as :class:`ConnectionLost` (the agent may have acted;
mid-stream: :class:`StreamInterrupted`, which the resilient client resumes by
resubscribing), UNAUTHENTICATED / PERMISSION_DENIED / RESOURCE_EXHAUSTED as
:class:`HTTPStatusError` 401 / 403 / 429 (what the same refusal is over HTTP), a call cut
by :meth:`close` as :class:`Cancelled`. Before a failure is raised, the retries that are
safe and the credential's answer to a refusal run (:mod:`.grpc_retry`).

**Threads:** one channel per client (HTTP/2, multiplexed), created on first use and
shared by :meth:`with_defaults` copies; :meth:`close` cancels calls in flight. A stream
is read by the consuming thread; a named daemon thread (``a2a-sync-grpc-stream-N``)
watches its idle timeout; :meth:`GRPCEventStream.close` works from any thread and joins
it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, Final

import attrs
import grpc

from ..._net.http import HTTPTransport
from ...a2a.grpc.convert import STATUS_DETAILS_KEY, error_from_grpc, from_message, to_message
from ...a2a.grpc.messages import Method, method_for
from ...a2a.methods import IDEMPOTENT, Operation, Revision
from ...a2a.types import AgentCard
from ...errors import (
    A2ASyncError,
    Cancelled,
    ConfigurationError,
    ConnectError,
    ConnectionLost,
    DeadlineExceeded,
    HTTPStatusError,
    MethodNotFound,
    ProtocolError,
    StreamInterrupted,
)
from ...policies import RetryPolicy, Timeout
from ..auth import AuthRetry, OriginBoundCredentials
from .grpc_retry import Attempts, StreamOpener, never_connected, status_name
from .grpc_stream import GRPCEventStream
from .grpc_target import GRPCTarget, parse_grpc_url
from .grpc_tls import channel_credentials
from .jsonrpc import TimeoutArg

__all__ = ["GRPCEventStream", "GRPCTransport"]

logger = logging.getLogger(__name__)

#: Largest answer accepted (a task with its history and artifacts).
MAX_RECEIVE_BYTES: Final = 64 * 1024 * 1024
_HTTP_OF: Final = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429}


class _Channel:
    """The client's one channel: opened on first use, closed once (cancelling calls and
    waits between retries)."""

    def __init__(
        self, target: GRPCTarget, tls: tuple[bool | str, str | tuple[str, str] | None]
    ) -> None:
        self._target = target
        self._tls = tls
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._closed = False
        self._closed_event = threading.Event()
        self._callables: dict[str, Any] = {}

    def wait(self, seconds: float) -> bool:
        """Wait ``seconds``; True (early) when the channel was closed meanwhile."""
        return self._closed_event.wait(seconds)

    def callable(self, method: Method) -> Any:
        with self._lock:
            if self._closed:
                raise Cancelled("the client was closed", url=self._target.target)
            found = self._callables.get(method.name)
            if found is not None:
                return found
            if self._channel is None:
                options = [
                    ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
                    ("grpc.enable_retries", 0),
                    # Streams are read on the thread that iterates them (a2a_sync's reader
                    # or the consumer), not on one more grpcio thread.
                    ("SingleThreadedUnaryStream", 1),
                    # After a dropped connection, calls fail fast (UNAVAILABLE) until the
                    # channel reconnects: keep that window short for resubscribes.
                    ("grpc.initial_reconnect_backoff_ms", 100),
                    ("grpc.min_reconnect_backoff_ms", 100),
                    ("grpc.max_reconnect_backoff_ms", 2000),
                ]
                if self._target.secure:
                    verify, cert = self._tls
                    credentials = channel_credentials(verify, cert, target=self._target.target)
                    self._channel = grpc.secure_channel(
                        self._target.target, credentials, options=options
                    )
                else:
                    self._channel = grpc.insecure_channel(self._target.target, options=options)
            make = self._channel.unary_stream if method.streaming else self._channel.unary_unary
            found = make(
                method.path,
                request_serializer=method.request.SerializeToString,
                response_deserializer=method.response.FromString,
            )
            self._callables[method.name] = found
            return found

    def close(self) -> None:
        with self._lock:
            channel, self._channel, self._closed = self._channel, None, True
            self._callables.clear()
        self._closed_event.set()
        if channel is not None:
            channel.close()


@attrs.frozen(kw_only=True, eq=False)
class GRPCTransport:
    """Calls of one A2A client to its gRPC endpoint (A2A 1.0).

    Same arguments as :class:`~a2a_sync.client.bindings.jsonrpc.JSONRPCTransport`;
    ``url`` is the interface's ``host:port`` (see
    :func:`~a2a_sync.client.bindings.grpc_target.parse_grpc_url` for TLS); of ``http``
    only its TLS settings (``verify``, ``cert``) and default ``retry`` are used;
    ``tenant`` fills every request's ``tenant`` field; ``sleep`` replaces the wait
    between retries (tests).

    Raises:
        ConfigurationError: ``revision`` is not 1.0, or the URL is no gRPC address.
    """

    url: str
    revision: Revision
    http: HTTPTransport | None = attrs.field(default=None, repr=False)
    timeout: Timeout
    retry: RetryPolicy | None
    headers: Mapping[str, str] = attrs.field(repr=False)
    credentials: OriginBoundCredentials | None = attrs.field(repr=False)
    tenant: str | None
    stream_idle_timeout: float | None
    threaded_streams: bool
    sleep: Callable[[float], object] | None = attrs.field(default=None, repr=False)
    target: GRPCTarget = attrs.field(init=False)
    channel: _Channel = attrs.field(init=False, repr=False)
    ids: Any = attrs.field(factory=lambda: itertools.count(1).__next__, repr=False)
    #: The revision this class speaks (0.3: :class:`.grpc_v03.GRPCV03Transport`).
    SPEAKS: ClassVar[str] = "1.0"

    def __attrs_post_init__(self) -> None:
        if self.revision != self.SPEAKS:
            raise ConfigurationError(
                f"this gRPC transport speaks A2A {self.SPEAKS}, not {self.revision}; "
                "construct it with grpc_v03.grpc_binding(), which picks the revision's"
            )
        target = parse_grpc_url(self.url)
        object.__setattr__(self, "target", target)
        tls = self.http.tls if self.http is not None else (True, None)
        object.__setattr__(self, "channel", _Channel(target, tls))

    def with_defaults(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> GRPCTransport:
        """A copy with other per-call defaults, sharing the channel."""
        copy = attrs.evolve(
            self,
            timeout=self.timeout if timeout is None else Timeout.coerce(timeout),
            retry=self.retry if retry is None else retry,
        )
        object.__setattr__(copy, "channel", self.channel)
        return copy

    def close(self) -> None:
        """Close the channel (cancelling calls in flight). Idempotent, any thread."""
        self.channel.close()

    def call(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg,
        idempotent: bool = False,
        card: AgentCard | None = None,
    ) -> Any:
        """Send one unary call and return the answer's ProtoJSON dict.

        Retries what is safe under the retry policy and answers UNAUTHENTICATED /
        PERMISSION_DENIED through the credential (:mod:`.grpc_retry`); the timeout bounds
        the whole call.

        Raises:
            RPCError: The agent answered with an A2A error (typed by its reason).
            HTTPStatusError, TransportError: See the module docstring.
        """
        method = self._method(operation)
        request = self._request(method, params)
        budget = _deadline(self.timeout if timeout is None else Timeout.coerce(timeout))
        start = time.monotonic()
        sent = self._metadata(card)
        try:
            answer = self.channel.callable(method)(request, timeout=budget, metadata=sent)
        except grpc.RpcError as exc:
            answer = self._recover(exc, sent, method, request, budget, start, card, idempotent)
        return self._result(operation, method, answer)

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
        card: AgentCard | None = None,
    ) -> tuple[Any, int | str]:
        """Start a server-streaming call; its events are read by the consuming thread.

        ``reconnect`` is not used: a dropped stream raises :class:`StreamInterrupted` and
        the resilient client resubscribes. Errors of the call (an A2A refusal too) are
        raised by the first read; a refusal for the credentials (before any event) is
        answered by the credential and the call opened again, as for unary calls.
        """
        del timeout, reconnect  # streams have no deadline; the idle timeout bounds silence
        method = self._method(operation)
        request = self._request(method, params)
        opener = StreamOpener(
            lambda metadata: self.channel.callable(method)(request, metadata=metadata),
            lambda: self._metadata(card),
            AuthRetry(self.credentials, self.target.origin),
        )
        stream = GRPCEventStream(
            opener.open(),
            reopen=opener.reopen,
            threaded=self.threaded_streams,
            idle_timeout=self.stream_idle_timeout,
            error=lambda exc: self._error(exc, method, None, streaming=True),
            url=self.target.target,
        )
        return stream, self.ids()

    def unwrap_event(self, payload: Any, request_ids: Collection[int | str]) -> Any:
        """A stream event is a ``StreamResponse`` dict already (errors end the call)."""
        return payload

    # -- the revision's method table and conversions (GRPCV03Transport overrides them) ------

    def _method(self, operation: Operation) -> Method:
        return method_for(operation)

    def _request(self, method: Method, params: dict[str, Any]) -> Any:
        return to_message(method.request, self._params(params), method.name)

    def _result(self, operation: Operation, method: Method, answer: Any) -> Any:
        if operation is Operation.DELETE_PUSH_CONFIG:
            return None  # google.protobuf.Empty
        return from_message(answer)

    # -- helpers ----------------------------------------------------------------------------

    def _recover(
        self,
        failure: grpc.RpcError,
        sent: tuple[tuple[str, str], ...],
        method: Method,
        request: Any,
        budget: float | None,
        start: float,
        card: AgentCard | None,
        idempotent: bool,
    ) -> Any:
        """The further attempts of a unary call whose first attempt failed (retries,
        authorization; :mod:`.grpc_retry`), or its translated error."""
        attempts = Attempts(
            policy=self._policy(),
            resend_safe=idempotent or method.operation in IDEMPOTENT,
            budget=budget,
            wait=self.sleep or self.channel.wait,
        )

        def send(metadata: tuple[tuple[str, str], ...], deadline: float | None) -> Any:
            return self.channel.callable(method)(request, timeout=deadline, metadata=metadata)

        auth = AuthRetry(self.credentials, self.target.origin)
        try:
            return attempts.recover(failure, sent, send, lambda: self._metadata(card), auth, start)
        except grpc.RpcError as exc:
            raise self._error(exc, method, budget) from exc

    def _policy(self) -> RetryPolicy:
        if self.retry is not None:
            return self.retry
        return self.http.retry if self.http is not None else RetryPolicy()

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.tenant and "tenant" not in params:
            return {**params, "tenant": self.tenant}
        return params

    def _metadata(self, card: AgentCard | None) -> tuple[tuple[str, str], ...]:
        pairs = {
            key.lower(): value
            for key, value in self.headers.items()
            if key.lower() not in ("content-type", "accept")
        }
        if self.credentials is not None:
            # Plaintext to a non-loopback host was refused (or opted into) when the
            # credentials were bound to this origin (OriginBoundCredentials).
            granted = self.credentials.headers_for(self.target.origin, card)
            pairs.update({key.lower(): value for key, value in granted.items()})
        return tuple(pairs.items())

    def _error(
        self,
        exc: grpc.RpcError,
        method: Method,
        deadline: float | None,
        *,
        streaming: bool = False,
    ) -> A2ASyncError:
        """The a2a_sync error a failed call stands for."""
        code = status_name(exc)
        details = _details(exc)
        details_text = getattr(exc, "details", None)
        message = details_text() if callable(details_text) else str(exc)
        where = f"{method.name} to {self.target.target}"
        typed = error_from_grpc(code, message or "", details)
        if typed is not None and (details or not streaming):
            return typed
        if code == "UNIMPLEMENTED":
            return MethodNotFound(f"{where}: the agent does not implement it ({message})")
        if code == "DEADLINE_EXCEEDED":
            return DeadlineExceeded(
                f"{where} did not finish within its {deadline} s deadline; raise the timeout",
                url=self.target.target,
                timeout=deadline,
            )
        if code == "CANCELLED":
            return Cancelled(f"{where} was cancelled", url=self.target.target)
        if code in _HTTP_OF:
            return HTTPStatusError(
                f"{where} answered {code}: {message}",
                status_code=_HTTP_OF[code],
                body=(message or "").encode(),
                url=self.target.target,
            )
        if streaming:
            return StreamInterrupted(f"{where}: the stream broke ({code}: {message})")
        if code == "UNAVAILABLE" and never_connected(exc):
            return ConnectError(f"{where}: unavailable ({message})", url=self.target.target)
        if code == "UNAVAILABLE":  # the request may have reached the agent
            return ConnectionLost(
                f"{where}: the connection broke during the call ({message}); the agent may "
                "have acted on it",
                url=self.target.target,
            )
        return ProtocolError(f"{where} failed with {code}: {message}")


def _details(exc: grpc.RpcError) -> bytes | None:
    trailing = getattr(exc, "trailing_metadata", None)
    if not callable(trailing):
        return None
    for key, value in trailing() or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return value
    return None


def _deadline(timeout: Timeout) -> float | None:
    if timeout.total is not None:
        return timeout.total
    if timeout.connect is not None and timeout.read is not None:
        return timeout.connect + timeout.read
    return None
