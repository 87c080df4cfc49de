"""The A2A server as a WSGI application: card, JSON-RPC (1.0 and 0.3 on one URL), SSE.

::

    app = A2AApplication(card, Echo())          # any WSGI server can run it
    a2a_sync.serve(app, port=8000)              # or waitress via the ``server`` extra

Routes (relative to where the app is mounted):

* ``GET /.well-known/agent-card.json`` — the card, with ``ETag`` and ``Cache-Control``;
  ``If-None-Match`` answers 304.
* ``POST /`` (``rpc_path``) — JSON-RPC. A2A 1.0 methods (``SendMessage`` ...) need the
  ``A2A-Version: 1.0`` header (or ``?A2A-Version=1.0``); A2A 0.3 methods
  (``message/send`` ...) are taken without it. Streaming methods answer
  ``text/event-stream``: one ``data:`` line per event, each a full JSON-RPC response
  carrying the request id, flushed as produced, with ``: keep-alive`` comments while idle.

Envelope rules (checked in this order, before any work): a bad ``Host`` on a protected
app is 421, a foreign ``Origin`` 403, a missing ``Content-Type`` 400, a non-JSON one 415,
a failed authentication 401, a body over ``max_body_bytes`` 413 (never more than
``max_body_bytes + 1`` bytes are read). Everything after that is a JSON-RPC answer (HTTP
200): invalid JSON ``-32700``, a batch, a non-object or a malformed envelope ``-32600``, an
unknown method ``-32601``, bad params ``-32602``, a wrong ``A2A-Version`` ``-32009``, and the
A2A errors of the operations. Exceptions that are not protocol errors are logged and
answered ``-32603 Internal error``, never with their text.

Under load: at most ``max_streams`` streams are open at once (more get 503 with
``Retry-After``), so a WSGI server with more threads than that always has threads left
for unary calls. :meth:`A2AApplication.close` ends streams, lets unary calls finish
within a grace period and stops the agent threads.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from .._codec import Codec, codec_for, dump_card
from .._jsonrpc import Request, encode, encode_result
from .._methods import STREAMING, Operation, lookup
from ..errors import (
    ConfigurationError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    ProtocolError,
    RPCError,
    VersionNotSupported,
)
from ..types import (
    AgentCard,
    GetTaskParams,
    ListPushConfigsParams,
    ListTasksParams,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageParams,
    StreamEvent,
    TaskIdParams,
)
from .auth import ANONYMOUS, Authenticator, Principal
from .card import CARD_PATH, CardPublisher, CardSigner
from .context import CallContext
from .executor import AgentExecutor, ExecuteFunction
from .handler import (
    DEFAULT_BLOCKING_TIMEOUT,
    DefaultRequestHandler,
    ExtendedCard,
    PushNotifier,
    RequestHandler,
    StreamingRequestHandler,
)
from .pool import DEFAULT_WORKERS
from .stores.base import TaskStore

__all__ = [
    "DEFAULT_CARD_MAX_AGE",
    "DEFAULT_GRACE_PERIOD",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_STREAMS",
    "LOOPBACK_HOSTS",
    "A2AApplication",
]

logger = logging.getLogger(__name__)

#: Largest request body. A2A requests are small except messages carrying inline files;
#: 16 MiB fits those and keeps one request from taking much memory.
DEFAULT_MAX_BODY_BYTES: Final = 16 * 1024 * 1024
#: Streams open at once. Each pins one server thread: ``serve`` runs this many plus
#: DEFAULT_UNARY_THREADS, so unary calls always find a thread.
DEFAULT_MAX_STREAMS: Final = 32
#: Silence on a stream before a ``: keep-alive`` comment. WHATWG suggests ~15 s against
#: proxies that drop idle connections; it is also how a gone client is noticed (on write).
DEFAULT_HEARTBEAT_INTERVAL: Final = 15.0
#: How long clients may cache the card (``Cache-Control: max-age``).
DEFAULT_CARD_MAX_AGE: Final = 300
#: How long :meth:`A2AApplication.close` waits for unary calls and agents to finish.
DEFAULT_GRACE_PERIOD: Final = 10.0
#: ``Retry-After`` sent with 503 when the stream cap is reached or the app is closing.
RETRY_AFTER_SECONDS: Final = 5
#: Host names a loopback-bound server answers to (DNS-rebinding protection).
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "::1")

_JSON_TYPES: Final = ("application/json", "application/a2a+json")
_JSON_HEADERS: Final = [("Content-Type", "application/json")]
_SSE_HEADERS: Final = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),  # nginx: do not buffer the stream
]
_HEARTBEAT: Final = b": keep-alive\n\n"
_ERROR_INFO: Final = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST: Final = "type.googleapis.com/google.rpc.BadRequest"
_DOMAIN: Final = "a2a-protocol.org"
#: ErrorInfo reasons of A2A 1.0 (the error name in UPPER_SNAKE without "Error").
_REASONS: Final = {
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
    -32001: "TASK_NOT_FOUND",
    -32002: "TASK_NOT_CANCELABLE",
    -32003: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    -32004: "UNSUPPORTED_OPERATION",
    -32005: "CONTENT_TYPE_NOT_SUPPORTED",
    -32006: "INVALID_AGENT_RESPONSE",
    -32007: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    -32008: "EXTENSION_SUPPORT_REQUIRED",
    -32009: "VERSION_NOT_SUPPORTED",
}

#: The parameter model of each operation (``None``: no params).
_PARAMS: Final[dict[Operation, type | None]] = {
    Operation.SEND_MESSAGE: SendMessageParams,
    Operation.SEND_STREAMING_MESSAGE: SendMessageParams,
    Operation.GET_TASK: GetTaskParams,
    Operation.LIST_TASKS: ListTasksParams,
    Operation.CANCEL_TASK: TaskIdParams,
    Operation.SUBSCRIBE_TO_TASK: TaskIdParams,
    Operation.CREATE_PUSH_CONFIG: PushNotificationConfig,
    Operation.GET_PUSH_CONFIG: PushConfigParams,
    Operation.LIST_PUSH_CONFIGS: ListPushConfigsParams,
    Operation.DELETE_PUSH_CONFIG: PushConfigParams,
    Operation.GET_EXTENDED_CARD: None,
}

StartResponse = Callable[..., Any]


class _Handler(RequestHandler, StreamingRequestHandler):
    """A handler answering both kinds of operation (the type of ``handler=``)."""


class A2AApplication:
    """A WSGI application serving one A2A agent.

    Thread-safe: any number of server threads may call it. See the module docstring
    for routes and rules.

    Args:
        card: The agent card. Leave ``supported_interfaces`` empty to advertise this
            app's own JSON-RPC URL (for 1.0 and 0.3) as requests reach it.
        executor: The agent (an :class:`AgentExecutor` or ``execute(context, updater)``
            function). Give this or ``handler``.
        handler: A request handler of your own (``dispatch`` and ``dispatch_stream``)
            instead of an executor.
        task_store: Where tasks live (in memory by default).
        push_sender: Delivers push notifications (a
            :class:`~a2a_sync.server.push.PushSender` is made when the card declares
            push notifications).
        extended_card: The card for authenticated callers (or a function of the call).
        authenticate: ``authenticate(environ) -> Principal | None``.
        allow_anonymous: Accept callers the authenticator did not identify (default: only
            when there is no authenticator).
        allowed_hosts: Host names accepted in ``Host`` (``"*"``: any). ``None`` checks
            nothing; ``serve`` protects loopback binds with :data:`LOOPBACK_HOSTS`.
        allowed_origins: Origins accepted in ``Origin`` besides the request's own.
        rpc_path: Path of the JSON-RPC endpoint.
        max_body_bytes: Largest request body.
        max_streams: Streams open at once.
        heartbeat_interval: Silence on a stream before a keep-alive comment.
        card_max_age: ``Cache-Control: max-age`` of the card, in seconds.
        sign_card: Signs the card before it is served.
        workers: Most agent runs at once.
        blocking_timeout: Longest a blocking SendMessage waits.

    Raises:
        ConfigurationError: Neither or both of ``executor`` and ``handler``.
    """

    def __init__(
        self,
        card: AgentCard,
        executor: AgentExecutor | ExecuteFunction | None = None,
        *,
        handler: _Handler | Any = None,
        task_store: TaskStore | None = None,
        push_sender: PushNotifier | None = None,
        extended_card: ExtendedCard | None = None,
        authenticate: Authenticator | None = None,
        allow_anonymous: bool | None = None,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] = (),
        rpc_path: str = "/",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_streams: int = DEFAULT_MAX_STREAMS,
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
        card_max_age: int = DEFAULT_CARD_MAX_AGE,
        sign_card: CardSigner | None = None,
        workers: int = DEFAULT_WORKERS,
        blocking_timeout: float = DEFAULT_BLOCKING_TIMEOUT,
    ) -> None:
        if (executor is None) == (handler is None):
            raise ConfigurationError("give exactly one of executor and handler")
        if not rpc_path.startswith("/"):
            raise ConfigurationError("rpc_path must start with '/'")
        self.card = card
        if handler is None:
            assert executor is not None
            if push_sender is None and card.capabilities.push_notifications:
                from .push import PushSender  # noqa: PLC0415 - only apps that push need it

                push_sender = PushSender()
                self._owned_push: Any = push_sender
            else:
                self._owned_push = None
            handler = DefaultRequestHandler(
                card,
                executor,
                task_store=task_store,
                push_sender=push_sender,
                extended_card=extended_card,
                workers=workers,
                blocking_timeout=blocking_timeout,
            )
        else:
            self._owned_push = None
        self.handler: Any = handler
        self._authenticate = authenticate
        self._allow_anonymous = authenticate is None if allow_anonymous is None else allow_anonymous
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        )
        self._allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins)
        self.rpc_path = rpc_path
        self.max_body_bytes = max_body_bytes
        self.max_streams = max_streams
        self.heartbeat_interval = heartbeat_interval
        self._card_cache_control = f"public, max-age={card_max_age}"
        self._cards = CardPublisher(card, rpc_path=rpc_path, signer=sign_card)
        self._lock = threading.Condition()
        self._streams: set[_SSEBody] = set()
        self._in_flight = 0
        self._closing = False

    # -- WSGI entry --------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if self.allowed_hosts is not None and not host_allowed(
            environ.get("HTTP_HOST", ""), self.allowed_hosts
        ):
            return _plain(start_response, "421 Misdirected Request", "unknown host")
        if path == CARD_PATH:
            if method not in ("GET", "HEAD"):
                return _plain(
                    start_response, "405 Method Not Allowed", "use GET", [("Allow", "GET, HEAD")]
                )
            return self._serve_card(environ, start_response, head=method == "HEAD")
        if path != self.rpc_path:
            return _plain(start_response, "404 Not Found", "not found")
        if method != "POST":
            return _plain(start_response, "405 Method Not Allowed", "use POST", [("Allow", "POST")])
        if not self._origin_allowed(environ):
            return _plain(start_response, "403 Forbidden", "origin not allowed")
        content_type = environ.get("CONTENT_TYPE", "")
        if not content_type:
            return _plain(start_response, "400 Bad Request", "missing Content-Type")
        if content_type.split(";", 1)[0].strip().lower() not in _JSON_TYPES:
            return _plain(
                start_response,
                "415 Unsupported Media Type",
                "Content-Type must be application/json",
            )
        principal = self._principal(environ)
        if principal is None:
            return _unauthorized(start_response)
        body = _read_body(environ, self.max_body_bytes)
        if body is None:
            return _plain(start_response, "413 Content Too Large", "request body too large")
        with self._lock:
            if self._closing:
                return _plain(
                    start_response, "503 Service Unavailable", "shutting down", _retry_after()
                )
            self._in_flight += 1
        try:
            return self._rpc(environ, start_response, body, principal)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._lock.notify_all()

    # -- the card ----------------------------------------------------------------------------

    def _serve_card(
        self, environ: dict[str, Any], start_response: StartResponse, *, head: bool
    ) -> Iterable[bytes]:
        document = self._cards.document(environ)
        headers = [
            ("ETag", document.etag),
            ("Cache-Control", self._card_cache_control),
            ("Vary", "Host"),
        ]
        if document.matches(environ.get("HTTP_IF_NONE_MATCH")):
            start_response("304 Not Modified", headers)
            return []
        start_response(
            "200 OK",
            [
                *headers,
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(document.body))),
            ],
        )
        return [] if head else [document.body]

    # -- JSON-RPC ----------------------------------------------------------------------------

    def _rpc(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        body: bytes,
        principal: Principal,
    ) -> Iterable[bytes]:
        revision = "1.0"
        request_id: Any = None
        try:
            request = _decode(body)
            request_id = request.id
            found = lookup(request.method)
            if found is None:
                raise MethodNotFound()
            operation, revision = found
            _check_version(environ, revision)
            codec = codec_for(revision)
            params = _load_params(codec, operation, request.params)
            if operation is Operation.GET_EXTENDED_CARD and principal.is_anonymous:
                return _unauthorized(start_response)
            call = CallContext(
                principal=principal,
                revision=revision,
                method=request.method,
                operation=operation,
                request_id=request_id,
                extensions=_extensions(environ, revision),
                headers=_headers(environ),
                environ=environ,
            )
            if operation in STREAMING:
                return self._stream(start_response, operation, params, call, codec)
            result = self.handler.dispatch(operation, params, call)
            payload = encode_result(request_id, _dump_result(codec, operation, result))
        except RPCError as exc:
            payload = _error_payload(
                exc, request_id if exc.request_id is None else exc.request_id, revision
            )
        except Exception:  # the request's top level: log, answer without details
            logger.exception("internal error answering a JSON-RPC call")
            payload = _error_payload(InternalError(), request_id, revision)
        start_response("200 OK", [*_JSON_HEADERS, ("Content-Length", str(len(payload)))])
        return [payload]

    def _stream(
        self,
        start_response: StartResponse,
        operation: Operation,
        params: Any,
        call: CallContext,
        codec: Codec,
    ) -> Iterable[bytes]:
        with self._lock:
            if len(self._streams) >= self.max_streams or self._closing:
                logger.warning("stream refused: %d streams open", len(self._streams))
                return _plain(
                    start_response, "503 Service Unavailable", "too many streams", _retry_after()
                )
            body = _SSEBody(self, codec, call.request_id, call.revision)
            self._streams.add(body)
        try:
            events = self.handler.dispatch_stream(operation, params, call)
            if not hasattr(events, "poll"):  # plain iterators: surface upfront errors now
                events = _Prefetched(iter(events))
        except BaseException:
            body.close()
            raise
        body.attach(events)
        start_response("200 OK", list(_SSE_HEADERS))
        return body

    def _stream_closed(self, body: _SSEBody) -> None:
        with self._lock:
            self._streams.discard(body)
            self._lock.notify_all()

    # -- checks ------------------------------------------------------------------------------

    def _principal(self, environ: Mapping[str, Any]) -> Principal | None:
        if self._authenticate is None:
            return ANONYMOUS
        try:
            principal = self._authenticate(environ)
        except Exception:  # a failing hook must not become a 500 with a traceback
            logger.exception("the authentication hook raised")
            principal = None
        if principal is None:
            return ANONYMOUS if self._allow_anonymous else None
        return principal

    def _origin_allowed(self, environ: Mapping[str, Any]) -> bool:
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            return True  # not a browser: DNS rebinding and CSRF need one
        origin = origin.lower().rstrip("/")
        if origin in self._allowed_origins:
            return True
        parts = urlsplit(origin)
        return bool(parts.netloc) and parts.netloc == environ.get("HTTP_HOST", "").lower()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def active_streams(self) -> int:
        """Streams open now."""
        return len(self._streams)

    def close(self, grace: float = DEFAULT_GRACE_PERIOD) -> bool:
        """Shut down: refuse new calls (503), end open streams, let unary calls finish.

        Args:
            grace: Longest wait for unary calls in flight and running agents.

        Returns:
            True when everything finished within ``grace``.
        """
        deadline = time.monotonic() + grace
        with self._lock:
            self._closing = True
            streams = list(self._streams)
        for body in streams:
            body.interrupt()
        with self._lock:
            calm = self._lock.wait_for(
                lambda: self._in_flight == 0, timeout=max(0.0, deadline - time.monotonic())
            )
        close = getattr(self.handler, "close", None)
        finished = bool(close(max(0.0, deadline - time.monotonic()))) if close else True
        if self._owned_push is not None:
            self._owned_push.close(max(0.0, deadline - time.monotonic()))
        return calm and finished

    def __repr__(self) -> str:
        return f"<A2AApplication {self.card.name!r} rpc={self.rpc_path!r}>"


class _Prefetched(Iterator[StreamEvent]):
    """A plain iterator whose first item was fetched eagerly (upfront errors raise here)."""

    def __init__(self, events: Iterator[StreamEvent]) -> None:
        self._events = events
        try:
            self._first: list[StreamEvent] = [next(events)]
        except StopIteration:
            self._first = []

    def __next__(self) -> StreamEvent:
        if self._first:
            return self._first.pop()
        return next(self._events)

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()


class _SSEBody:
    """The WSGI response iterable of one stream: SSE bytes per event, heartbeats, cleanup.

    Iterated by one server thread; :meth:`interrupt` and :meth:`close` may come from others.
    """

    def __init__(self, app: A2AApplication, codec: Codec, request_id: Any, revision: str) -> None:
        self._app = app
        self._codec = codec
        self._id = request_id
        self._revision = revision
        self._events: Any = None
        self._done = False
        self._closed = False

    def attach(self, events: Any) -> None:
        self._events = events

    def __iter__(self) -> _SSEBody:
        return self

    def __next__(self) -> bytes:
        if self._done:
            self.close()
            raise StopIteration
        events = self._events
        try:
            poll = getattr(events, "poll", None)
            if poll is not None:
                event = poll(self._app.heartbeat_interval)
                if event is None:
                    if self._app._closing:
                        raise StopIteration
                    return _HEARTBEAT
            else:
                event = next(events)
            data = encode_result(self._id, self._codec.dump_stream_event(event))
        except StopIteration:
            self.close()
            raise
        except RPCError as exc:
            self._done = True
            return b"event: error\ndata: " + _error_payload(exc, self._id, self._revision) + b"\n\n"
        except Exception:  # the stream's top level: log, one error event, end
            logger.exception("internal error in an event stream")
            self._done = True
            return (
                b"event: error\ndata: "
                + _error_payload(InternalError(), self._id, self._revision)
                + b"\n\n"
            )
        return b"data: " + data + b"\n\n"

    def interrupt(self) -> None:
        """End the stream soon (server shutdown): its reader stops at the next poll."""
        self._done = True
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        """Called by the WSGI server when the response ends or the client went away."""
        if self._closed:
            return
        self._closed = True
        self._done = True
        close = getattr(self._events, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self._app._stream_closed(self)


# -- request helpers -----------------------------------------------------------------------------


def host_allowed(host_header: str, allowed: frozenset[str]) -> bool:
    """Whether the host name in a ``Host`` header is one of ``allowed`` (``"*"``: any)."""
    if "*" in allowed:
        return True
    host = host_header.strip().lower()
    if host.startswith("["):  # [v6]:port
        name = host[1 : host.find("]")] if "]" in host else host
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return bool(name) and name in allowed


def _decode(body: bytes) -> Request:
    """Parse and check one JSON-RPC request strictly.

    Stricter than ``json.loads``: ``NaN``/``Infinity`` and duplicate member names are
    parse errors (RFC 8259 interoperability), as are invalid UTF-8 and nesting deep
    enough to exhaust the parser.

    Raises:
        RPCError: -32700 for bad JSON; -32600 for a batch, a non-object, a notification
            (A2A has none) or a malformed envelope (``request_id`` set when readable).
    """
    try:
        obj = json.loads(body, parse_constant=_no_constant, object_pairs_hook=_unique_members)
    except (ValueError, RecursionError) as exc:
        raise ParseError() from exc
    if isinstance(obj, list):
        raise InvalidRequest("Batch requests are not supported")
    if not isinstance(obj, dict):
        raise InvalidRequest("Request must be a JSON object")
    request_id = obj.get("id")
    if isinstance(request_id, (dict, list, float, bool)):
        raise InvalidRequest("Request id must be a string, integer or null")
    if obj.get("jsonrpc") != "2.0":
        raise _with_id(InvalidRequest('"jsonrpc" must be "2.0"'), request_id)
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise _with_id(InvalidRequest('"method" must be a non-empty string'), request_id)
    if "id" not in obj:
        raise InvalidRequest("A2A requests need an id (notifications are not supported)")
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        raise _with_id(InvalidRequest('"params" must be an object'), request_id)
    return Request(method, params, request_id, False)


def _with_id(exc: RPCError, request_id: Any) -> RPCError:
    exc.request_id = request_id
    return exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate member name")
    return out


def _read_body(environ: Mapping[str, Any], limit: int) -> bytes | None:
    """The request body, or ``None`` when it exceeds ``limit`` (at most limit+1 read)."""
    stream = environ["wsgi.input"]
    length_text = environ.get("CONTENT_LENGTH") or ""
    try:
        length = int(length_text) if length_text else None
    except ValueError:
        length = None
    if length is not None:
        if length > limit:
            return None
        return stream.read(length) if length > 0 else b""
    if not environ.get("wsgi.input_terminated"):
        return b""  # PEP 3333: without a length there is no body to read
    chunks = []
    total = 0
    while total <= limit:
        chunk = stream.read(min(65536, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return None if total > limit else b"".join(chunks)


def _check_version(environ: Mapping[str, Any], revision: str) -> None:
    """Enforce ``A2A-Version``: required (1.x) for 1.0 methods; absent or 0.x for 0.3 ones."""
    version = environ.get("HTTP_A2A_VERSION")
    if version is None:
        query = environ.get("QUERY_STRING")
        if query:
            version = (parse_qs(query).get("A2A-Version") or [None])[0]
    version = (version or "").strip()
    major = version.split(".", 1)[0]
    if revision == "1.0":
        if major != "1":
            raise VersionNotSupported(
                f"A2A version {version or '0.3 (no A2A-Version header)'!r} is not supported by "
                "this method; send A2A-Version: 1.0"
            )
    elif version and major != "0":
        raise VersionNotSupported(f"A2A version {version!r} does not match this 0.3 method")


def _load_params(codec: Codec, operation: Operation, raw: Any) -> Any:
    model = _PARAMS[operation]
    if model is None:
        return None
    try:
        return codec.load({} if raw is None else raw, model)
    except ProtocolError as exc:
        raise InvalidParams(data={"errors": exc.details}) from exc


def _dump_result(codec: Codec, operation: Operation, result: Any) -> Any:
    if operation is Operation.SEND_MESSAGE:
        return codec.dump_send_result(result)
    if operation is Operation.DELETE_PUSH_CONFIG:
        return None
    if operation is Operation.GET_EXTENDED_CARD:
        return dump_card(result, codec.revision)
    return codec.dump(result)


def _extensions(environ: Mapping[str, Any], revision: str) -> frozenset[str]:
    raw = environ.get("HTTP_A2A_EXTENSIONS") or environ.get("HTTP_X_A2A_EXTENSIONS") or ""
    return frozenset(uri.strip() for uri in raw.split(",") if uri.strip())


def _headers(environ: Mapping[str, Any]) -> dict[str, str]:
    out = {
        key[5:].replace("_", "-").lower(): value
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        out["content-type"] = environ["CONTENT_TYPE"]
    return out


def error_object(exc: RPCError, revision: str) -> dict[str, Any]:
    """The JSON-RPC ``error`` member for ``exc`` in a revision's shape.

    A2A 1.0 puts typed details in ``data`` (§5.4, what a2a-sdk sends): a
    ``google.rpc.ErrorInfo`` with the reason (``TASK_NOT_FOUND`` ...), plus a
    ``google.rpc.BadRequest`` listing field violations for invalid params. 0.3 passes
    ``data`` through.
    """
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    reason = _REASONS.get(exc.code)
    if revision != "1.0" or reason is None:
        if exc.data is not None:
            error["data"] = exc.data
        return error
    data = exc.data if isinstance(exc.data, dict) else {}
    violations = data.get("errors") if isinstance(exc, InvalidParams) else None
    metadata = {k: v for k, v in data.items() if isinstance(v, str)}
    details: list[dict[str, Any]] = [
        {"@type": _ERROR_INFO, "reason": reason, "domain": _DOMAIN, "metadata": metadata}
    ]
    if isinstance(violations, list):
        details.append(
            {
                "@type": _BAD_REQUEST,
                "fieldViolations": [_violation(str(v)) for v in violations],
            }
        )
    error["data"] = details
    return error


def _violation(text: str) -> dict[str, str]:
    description, _, path = text.rpartition(" @ ")
    if not description:
        return {"field": "", "description": text}
    return {"field": path.removeprefix("$.").removeprefix("$"), "description": description}


def _error_payload(exc: RPCError, request_id: Any, revision: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error_object(exc, revision)})


def _plain(
    start_response: StartResponse,
    status: str,
    text: str,
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    body = text.encode() + b"\n"
    start_response(
        status,
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            *(extra or []),
        ],
    )
    return [body]


def _unauthorized(start_response: StartResponse) -> list[bytes]:
    return _plain(
        start_response,
        "401 Unauthorized",
        "authentication required",
        [("WWW-Authenticate", "Bearer")],
    )


def _retry_after() -> list[tuple[str, str]]:
    return [("Retry-After", str(RETRY_AFTER_SECONDS))]
