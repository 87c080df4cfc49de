"""The HTTP+JSON (REST) binding of :class:`~a2a_sync.server.app.A2AApplication` (A2A 1.0).

Routes (below the app's ``rest_path``; each also under ``/{tenant}`` for a tenant the
card's interfaces declare): ``POST /message:send``, ``POST /message:stream``,
``GET /tasks/{id}``, ``GET /tasks``, ``POST /tasks/{id}:cancel``,
``GET|POST /tasks/{id}:subscribe``, ``POST|GET /tasks/{taskId}/pushNotificationConfigs``,
``GET|DELETE /tasks/{taskId}/pushNotificationConfigs/{id}``, ``GET /extendedAgentCard``
(the table in :mod:`a2a_sync.a2a.rest_routes`).

Bodies are the ProtoJSON request messages (path parameters win over body members); GET
and DELETE take their parameters from the query string (``historyLength`` and
``pageSize`` integers, ``includeArtifacts`` ``true``/``false``, the rest strings).
Answers are the ProtoJSON response messages; streams are SSE whose events are bare
``StreamResponse`` objects, an error ending the stream as ``event: error`` with a Status.

Errors are ``google.rpc.Status`` JSON (``{"error": {"code", "status", "message",
"details": [ErrorInfo ...]}}``) with the HTTP status of the A2A error table
(:mod:`a2a_sync.a2a.error_codes`). Route-level refusals are JSON too: an unknown path 404,
a known path with another method 405 with ``Allow``, a non-JSON body 415, a body over
``max_body_bytes`` 413, a foreign ``Origin`` 403, a failed authentication 401 (with the
authenticator's challenge), an operation the authenticator refuses the caller 403 with
``WWW-Authenticate`` (``A2AApplication._refusal``, as over JSON-RPC).

Everything else is the application's, reused rather than copied: the ``Host`` check, the
authenticator, the body limit, the stream cap and heartbeats (``A2AApplication._stream``
with an SSE body that writes bare events), the handler's ``dispatch``/``dispatch_stream``
and graceful shutdown (calls count as in flight; streams end on close).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl, quote

from ..._net.jsonrpc import encode
from ...a2a.card_codec import dump_card
from ...a2a.codec import Codec, codec_for
from ...a2a.error_codes import status_body
from ...a2a.methods import STREAMING, Operation, Revision, wire_name
from ...a2a.rest_routes import Route, RouteMatch, match
from ...a2a.rest_v03 import event_to_wire, from_wire, result_to_wire
from ...a2a.types import AgentCard, StreamEvent
from ...errors import InternalError, InvalidParams, InvalidRequest, RPCError
from .._streams import SSEBody
from .._wire import (
    JSON_TYPES,
    StartResponse,
    check_version,
    dump_result,
    extensions_of,
    headers_of,
    load_params,
    loads_strict,
    read_body,
    retry_after_header,
)
from ..auth import Principal
from ..context import CallContext

__all__ = ["RESTBinding", "RESTSSEBody"]

logger = logging.getLogger(__name__)

#: Query parameters read as integers / booleans (ProtoJSON of the request messages).
_INTEGERS: Final = frozenset({"historyLength", "pageSize"})
_BOOLEANS: Final = frozenset({"includeArtifacts"})
#: Revisions served over REST (0.3: ``/v1/...`` with the 0.3 proto JSON, see rest_v03).
_SERVED: Final[frozenset[Revision]] = frozenset({"1.0", "0.3"})


class RESTHost(Protocol):
    """What the binding uses of the application (see :class:`A2AApplication`)."""

    card: AgentCard
    handler: Any
    max_body_bytes: int

    def _origin_allowed(self, environ: Mapping[str, Any]) -> bool: ...

    def _principal(self, environ: Mapping[str, Any]) -> Principal | None: ...

    def _challenge(self, environ: Mapping[str, Any]) -> str: ...

    def _refusal(self, principal: Principal, operation: Operation, method: str) -> str | None: ...

    def _check_extended_card(self) -> None: ...

    def _admit(self) -> bool: ...

    def _release(self) -> None: ...

    def _stream(
        self,
        start_response: StartResponse,
        operation: Operation,
        params: Any,
        call: CallContext,
        codec: Codec,
        *,
        body_class: type[SSEBody] = ...,
    ) -> Iterable[bytes]: ...

    @property
    def _cards(self) -> Any: ...


class RESTSSEBody(SSEBody):
    """An SSE body whose events are bare ``StreamResponse`` objects (no envelope)."""

    def _frame(self, event: StreamEvent) -> bytes:
        dumped = self._codec.dump_stream_event(event)
        return encode(dumped if self._revision == "1.0" else event_to_wire(dumped))

    def _error_frame(self, exc: RPCError) -> bytes:
        return encode(status_body(exc, self._revision)[1])

    @staticmethod
    def busy(start_response: StartResponse) -> list[bytes]:
        return _refuse(start_response, 503, "UNAVAILABLE", "too many streams", retry_after_header())


class RESTBinding:
    """Answers the REST routes below ``path`` for ``app``. Thread-safe (no state of its own
    besides configuration)."""

    def __init__(self, app: RESTHost, path: str) -> None:
        self._app = app
        self.path = path.rstrip("/")
        self._tenants = frozenset(i.tenant for i in app.card.supported_interfaces if i.tenant)

    def owns(self, path: str) -> bool:
        """Whether ``path`` (``PATH_INFO``) is below this binding's mount path."""
        return not self.path or path == self.path or path.startswith(self.path + "/")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            found = match(method, _raw_path(environ, self.path))
        except ValueError:
            return _refuse(start_response, 400, "INVALID_ARGUMENT", "the path is not valid UTF-8")
        if found is None or (found.route is not None and found.route.revision not in _SERVED):
            return _refuse(start_response, 404, "NOT_FOUND", "no such A2A route")
        if found.route is None:
            allow = ", ".join(found.allowed)
            return _refuse(
                start_response,
                405,
                "UNIMPLEMENTED",
                f"use {allow}",
                [("Allow", allow)],
            )
        if found.tenant is not None and found.tenant not in self._tenants:
            return _refuse(start_response, 404, "NOT_FOUND", "unknown tenant")
        if not self._app._origin_allowed(environ):
            return _refuse(start_response, 403, "PERMISSION_DENIED", "origin not allowed")
        content_type = environ.get("CONTENT_TYPE", "")
        media = content_type.split(";", 1)[0].strip().lower()
        if content_type and media not in JSON_TYPES and (found.route.body or _has_body(environ)):
            return _refuse(
                start_response,
                415,
                "INVALID_ARGUMENT",
                "Content-Type must be application/json",
            )
        principal = self._app._principal(environ)
        if principal is None:
            return _unauthenticated(start_response, self._app._challenge(environ))
        body = read_body(environ, self._app.max_body_bytes) if found.route.body else b""
        if body is None:
            return _refuse(start_response, 413, "INVALID_ARGUMENT", "request body too large")
        if body and not content_type:
            return _refuse(start_response, 415, "INVALID_ARGUMENT", "missing Content-Type")
        if not self._app._admit():
            return _refuse(
                start_response, 503, "UNAVAILABLE", "shutting down", retry_after_header()
            )
        try:
            return self._answer(environ, start_response, found, body, principal)
        finally:
            self._app._release()

    def _answer(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        found: RouteMatch,
        body: bytes,
        principal: Principal,
    ) -> Iterable[bytes]:
        route = found.route
        assert route is not None
        operation, revision = route.operation, route.revision
        try:
            check_version(environ, revision)
            raw = _params(route, found, body, environ.get("QUERY_STRING", ""))
            if revision == "0.3":
                raw = from_wire(operation, raw)
            codec = codec_for(revision)
            params = load_params(codec, operation, raw)
            if operation is Operation.GET_EXTENDED_CARD:
                # Capability before caller (A2A 1.0 §3.1.11, §3.3.4), as over JSON-RPC
                # and gRPC: an agent without an extended card says so to everyone.
                self._app._check_extended_card()
                if principal.is_anonymous:
                    return _unauthenticated(start_response, self._app._challenge(environ))
            method = wire_name(operation, revision) or ""
            refused = self._app._refusal(principal, operation, method)
            if refused is not None:
                return _refuse(
                    start_response,
                    403,
                    "PERMISSION_DENIED",
                    "insufficient scope",
                    [("WWW-Authenticate", refused)],
                )
            call = CallContext(
                principal=principal,
                revision=revision,
                method=method,
                operation=operation,
                extensions=extensions_of(environ, revision),
                headers=headers_of(environ),
                environ=environ,
            )
            if operation in STREAMING:
                return self._app._stream(
                    start_response, operation, params, call, codec, body_class=RESTSSEBody
                )
            result = self._app.handler.dispatch(operation, params, call)
            if operation is Operation.GET_EXTENDED_CARD:
                result = self._app._cards.extended(result, environ)
            if operation is Operation.GET_EXTENDED_CARD:
                answer = dump_card(result, "1.0" if revision == "1.0" else None)
            else:
                answer = dump_result(codec, operation, result)
                if revision == "0.3":
                    answer = result_to_wire(operation, answer)
            payload = encode({} if answer is None else answer)
            status = 200
        except RPCError as exc:
            status, error = status_body(exc, revision)
            payload = encode(error)
        except Exception:  # the request's top level: log, answer without details
            logger.exception("internal error answering a REST call")
            status, error = status_body(InternalError(), revision)
            payload = encode(error)
        start_response(
            _STATUS_LINES.get(status, f"{status} Error"),
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]


def _raw_path(environ: Mapping[str, Any], mount: str) -> str:
    """The request path below ``mount``, still percent-encoded where the server kept it
    (``RAW_URI``/``REQUEST_URI``), so an encoded slash in an id stays visible."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    prefix = environ.get("SCRIPT_NAME", "").rstrip("/") + mount
    if isinstance(raw, str) and raw.startswith("/"):
        raw = raw.split("?", 1)[0]
        if raw.startswith(prefix):
            return raw[len(prefix) :] or "/"
    # PEP 3333: PATH_INFO is decoded bytes as latin-1; re-encode it for the matcher.
    path = environ.get("PATH_INFO", "")[len(mount) :]
    return quote(path.encode("latin-1"), safe="/:@!$&'()*+,;=-._~") or "/"


def _has_body(environ: Mapping[str, Any]) -> bool:
    length = environ.get("CONTENT_LENGTH") or ""
    return bool(length) and length != "0"


def _params(route: Route, found: RouteMatch, body: bytes, query: str) -> dict[str, Any]:
    """The operation's JSON params: the body (or query), then path values and tenant."""
    params: dict[str, Any]
    if route.body:
        loaded = loads_strict(body) if body.strip() else {}
        if not isinstance(loaded, dict):
            raise InvalidRequest("the request body must be a JSON object")
        params = loaded
    else:
        params = _query(query)
    params.update(found.values)
    if found.tenant is not None:
        params["tenant"] = found.tenant
    return params


def _query(query: str) -> dict[str, Any]:
    """Query parameters with ProtoJSON types (repeated names: the last wins)."""
    try:
        pairs = parse_qsl(query, keep_blank_values=False, strict_parsing=False, errors="strict")
    except UnicodeDecodeError as exc:
        raise InvalidParams("the query string is not valid UTF-8") from exc
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name == "A2A-Version":
            continue
        if name in _INTEGERS:
            try:
                out[name] = int(value)
            except ValueError:
                raise InvalidParams(f"{name} must be an integer, got {value[:40]!r}") from None
        elif name in _BOOLEANS:
            if value not in ("true", "false"):
                raise InvalidParams(f"{name} must be true or false, got {value[:40]!r}")
            out[name] = value == "true"
        else:
            out[name] = value
    return out


_STATUS_LINES: Final = {
    200: "200 OK",
    400: "400 Bad Request",
    401: "401 Unauthorized",
    403: "403 Forbidden",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    413: "413 Content Too Large",
    415: "415 Unsupported Media Type",
    500: "500 Internal Server Error",
    503: "503 Service Unavailable",
}


def _refuse(
    start_response: StartResponse,
    status: int,
    grpc: str,
    message: str,
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    payload = encode({"error": {"code": status, "status": grpc, "message": message}})
    start_response(
        _STATUS_LINES[status],
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(payload))),
            *(extra or []),
        ],
    )
    return [payload]


def _unauthenticated(start_response: StartResponse, challenge: str) -> list[bytes]:
    return _refuse(
        start_response,
        401,
        "UNAUTHENTICATED",
        "authentication required",
        [("WWW-Authenticate", challenge)],
    )
