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
* Below ``rest_path`` (when given) — the HTTP+JSON binding, A2A 1.0 and 0.3
  (:mod:`a2a_sync.server.bindings.rest`), over the same handler, checks and limits.

Envelope rules (checked in this order, before any work): a ``Host`` outside
``allowed_hosts`` is 421 (under any WSGI server), a foreign ``Origin`` 403, a missing
``Content-Type`` 400, a non-JSON one 415, a failed authentication 401, a body over
``max_body_bytes`` 413 (never more than ``max_body_bytes + 1`` bytes are read). Everything
after that is a JSON-RPC answer (HTTP 200): invalid JSON ``-32700``, a batch, a non-object
or a malformed envelope ``-32600``, an unknown method ``-32601``, bad params ``-32602``, a
wrong ``A2A-Version`` ``-32009``, and the A2A errors of the operations. Exceptions that
are not protocol errors are logged and answered ``-32603 Internal error``, never with
their text.

Under load: at most ``max_streams`` streams are open at once (more get 503 with
``Retry-After``), so a WSGI server with more threads than that always has threads left
for unary calls. :meth:`A2AApplication.close` ends streams, lets unary calls finish
within a grace period and stops the agent threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any, Final

from ..a2a.codec import Codec, codec_for
from ..a2a.methods import STREAMING, Operation, lookup
from ..a2a.types import AgentCard
from ..errors import (
    ConfigurationError,
    ExtendedAgentCardNotConfigured,
    InternalError,
    MethodNotFound,
    RPCError,
    UnsupportedOperation,
)
from ._admission import Admission
from ._gate import CallerGate
from ._hosts import HOST_REFUSED, allowed_hosts_for, host_permitted
from ._json import encode_result
from ._streams import SSE_HEADERS, Prefetched, SSEBody
from ._wire import (
    JSON_HEADERS,
    JSON_TYPES,
    LOOPBACK_HOSTS,
    StartResponse,
    check_version,
    decode_call,
    dump_result,
    error_object,
    error_payload,
    extensions_of,
    headers_of,
    host_allowed,
    json_ok,
    load_params,
    plain,
    read_body,
    refuse_notification,
    retry_after_header,
    unauthorized,
)
from .auth import Principal
from .bindings.rest import RESTBinding
from .card import CARD_PATH, CardPublisher
from .context import CallContext
from .executor import AgentExecutor, ExecuteFunction
from .handler import (
    RequestHandler,
    StreamingRequestHandler,
)
from .settings import (
    DEFAULT_CARD_MAX_AGE,
    DEFAULT_HEARTBEAT_INTERVAL,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    AppSettings,
    handler_for,
    resolve_settings,
)

__all__ = [
    "DEFAULT_CARD_MAX_AGE",
    "DEFAULT_GRACE_PERIOD",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_STREAMS",
    "LOOPBACK_HOSTS",
    "A2AApplication",
    "AppSettings",
    "error_object",
    "host_allowed",
]

logger = logging.getLogger(__name__)

#: How long :meth:`A2AApplication.close` waits for unary calls and agents to finish.
DEFAULT_GRACE_PERIOD: Final = 10.0


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
        settings: The application's settings (:class:`AppSettings`): where tasks live,
            authentication, allowed hosts and origins, paths, limits, the card's
            signing and headers, push. Default: all defaults.
        **overrides: Any :class:`AppSettings` attribute by name (``task_store=``,
            ``authenticate=``, ``max_streams=``, ``rest_path=``...), applied onto
            ``settings``.

    Raises:
        ConfigurationError: Neither or both of ``executor`` and ``handler``, or an
            unknown setting (the message names the closest one).
    """

    def __init__(
        self,
        card: AgentCard,
        executor: AgentExecutor | ExecuteFunction | None = None,
        *,
        handler: _Handler | Any = None,
        settings: AppSettings | None = None,
        **overrides: Any,
    ) -> None:
        if (executor is None) == (handler is None):
            raise ConfigurationError("give exactly one of executor and handler")
        opts = resolve_settings(settings, overrides)
        if not opts.rpc_path.startswith("/"):
            raise ConfigurationError("rpc_path must start with '/'")
        self.settings = opts
        self.card = card
        handler, self._owned_push = handler_for(card, executor, handler, opts)
        # A handler of one's own answers for its extended card itself.
        self._extended_configured = opts.extended_card is not None or executor is None
        self.handler: Any = handler
        self._authenticate = opts.authenticate
        gate = CallerGate(
            opts.authenticate,
            allow_anonymous=opts.allow_anonymous,
            allowed_origins=opts.allowed_origins,
        )
        # The bindings ask these (rest.py, grpc_service.py).
        self._principal = gate.principal
        self._challenge = gate.challenge
        self._refusal = gate.refusal
        self._origin_allowed = gate.origin_allowed
        self.allowed_hosts = allowed_hosts_for(card, opts.allowed_hosts)
        self.rpc_path = opts.rpc_path
        self.max_body_bytes = opts.max_body_bytes
        self.max_streams = opts.max_streams
        self.heartbeat_interval = opts.heartbeat_interval
        self._card_cache_control = f"public, max-age={opts.card_max_age}"
        self._cards = CardPublisher(
            card,
            rpc_path=opts.rpc_path,
            signer=opts.sign_card,
            public_url=opts.public_url,
            allowed_hosts=self.allowed_hosts,
            headers=opts.card_headers,
            chooser=opts.card_for_request,
            rest_path=opts.rest_path,
        )
        self._rest = RESTBinding(self, opts.rest_path) if opts.rest_path is not None else None
        self._admission = Admission(opts.max_streams)
        self._lock = self._admission.changed  # notified when a stream or unary call ends
        self._admit = self._admission.admit
        self._release = self._admission.release

    # -- WSGI entry --------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if not host_permitted(environ, self.allowed_hosts):
            return plain(start_response, "421 Misdirected Request", HOST_REFUSED)
        if path == CARD_PATH:
            if method not in ("GET", "HEAD"):
                return plain(
                    start_response, "405 Method Not Allowed", "use GET", [("Allow", "GET, HEAD")]
                )
            return self._serve_card(environ, start_response, head=method == "HEAD")
        if path == getattr(self._authenticate, "metadata_path", None) and method == "GET":
            return json_ok(start_response, self._authenticate.metadata())  # type: ignore[union-attr]
        if self._rest is not None and path != self.rpc_path and self._rest.owns(path):
            return self._rest(environ, start_response)
        if path != self.rpc_path:
            return plain(start_response, "404 Not Found", "not found")
        if method != "POST":
            return plain(start_response, "405 Method Not Allowed", "use POST", [("Allow", "POST")])
        if not self._origin_allowed(environ):
            return plain(start_response, "403 Forbidden", "origin not allowed")
        content_type = environ.get("CONTENT_TYPE", "")
        if not content_type:
            return plain(start_response, "400 Bad Request", "missing Content-Type")
        if content_type.split(";", 1)[0].strip().lower() not in JSON_TYPES:
            return plain(
                start_response,
                "415 Unsupported Media Type",
                "Content-Type must be application/json",
            )
        principal = self._principal(environ)
        if principal is None:
            return unauthorized(start_response, self._challenge(environ))
        body = read_body(environ, self.max_body_bytes)
        if body is None:
            return plain(start_response, "413 Content Too Large", "request body too large")
        if not self._admit():
            return plain(
                start_response, "503 Service Unavailable", "shutting down", retry_after_header()
            )
        try:
            return self._rpc(environ, start_response, body, principal)
        finally:
            self._release()

    # -- the card ----------------------------------------------------------------------------

    def _serve_card(
        self, environ: dict[str, Any], start_response: StartResponse, *, head: bool
    ) -> Iterable[bytes]:
        document = self._cards.document(environ)
        headers = [
            ("ETag", document.etag),
            ("Last-Modified", document.last_modified),
            ("Cache-Control", self._card_cache_control),
            ("Vary", "Host"),
            *self._cards.extra_headers(environ),
        ]
        if document.not_modified(environ):
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
            request, snake_names = decode_call(body)
            request_id = request.id
            found = lookup(request.method)
            if found is None:
                raise MethodNotFound()
            operation, revision = found
            check_version(environ, revision)
            codec = codec_for(revision)
            params = load_params(codec, operation, request.params, snake_names=snake_names)
            refuse_notification(request)
            if operation is Operation.GET_EXTENDED_CARD:
                # Capability before caller (A2A 1.0 §3.1.11): an agent without an extended
                # card says so to everyone, as a protocol error.
                self._check_extended_card()
                if principal.is_anonymous:
                    return unauthorized(start_response, self._challenge(environ))
            refused = self._refusal(principal, operation, request.method)
            if refused is not None:
                return plain(
                    start_response,
                    "403 Forbidden",
                    "insufficient scope",
                    [("WWW-Authenticate", refused)],
                )
            call = CallContext(
                principal=principal,
                revision=revision,
                method=request.method,
                operation=operation,
                request_id=request_id,
                extensions=extensions_of(environ, revision),
                headers=headers_of(environ),
                environ=environ,
            )
            if operation in STREAMING:
                return self._stream(start_response, operation, params, call, codec)
            result = self.handler.dispatch(operation, params, call)
            if operation is Operation.GET_EXTENDED_CARD:
                result = self._cards.extended(result, environ)
            payload = encode_result(request_id, dump_result(codec, operation, result))
        except RPCError as exc:
            payload = error_payload(
                exc, request_id if exc.request_id is None else exc.request_id, revision
            )
        except Exception:  # the request's top level: log, answer without details
            logger.exception("internal error answering a JSON-RPC call")
            payload = error_payload(InternalError(), request_id, revision)
        start_response("200 OK", [*JSON_HEADERS, ("Content-Length", str(len(payload)))])
        return [payload]

    def _stream(
        self,
        start_response: StartResponse,
        operation: Operation,
        params: Any,
        call: CallContext,
        codec: Codec,
        *,
        body_class: type[SSEBody] = SSEBody,
    ) -> Iterable[bytes]:
        admission = self._admission
        body = admission.open_stream(
            lambda: body_class(
                codec,
                call.request_id,
                call.revision,
                heartbeat_interval=self.heartbeat_interval,
                closing=lambda: admission.closing,
                on_close=admission.stream_closed,
            )
        )
        if body is None:
            return body_class.busy(start_response)
        try:
            events = self.handler.dispatch_stream(operation, params, call)
            if not hasattr(events, "poll"):  # plain iterators: surface upfront errors now
                events = Prefetched(iter(events))
        except BaseException:
            body.close()
            raise
        body.attach(events)
        start_response("200 OK", list(SSE_HEADERS))
        return body

    def _check_extended_card(self) -> None:
        if not self.card.capabilities.extended_agent_card:
            raise UnsupportedOperation("this agent has no extended card")
        if not self._extended_configured:
            raise ExtendedAgentCardNotConfigured()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def active_streams(self) -> int:
        """Streams open now."""
        return self._admission.active_streams

    def close(self, grace: float = DEFAULT_GRACE_PERIOD) -> bool:
        """Shut down: refuse new calls (503), end open streams, let unary calls finish.

        Args:
            grace: Longest wait for unary calls in flight and running agents.

        Returns:
            True when everything finished within ``grace``.
        """
        deadline = time.monotonic() + grace
        calm = self._admission.close(deadline)
        close = getattr(self.handler, "close", None)
        finished = bool(close(max(0.0, deadline - time.monotonic()))) if close else True
        if self._owned_push is not None:
            self._owned_push.close(max(0.0, deadline - time.monotonic()))
        return calm and finished

    def __repr__(self) -> str:
        return f"<A2AApplication {self.card.name!r} rpc={self.rpc_path!r}>"
