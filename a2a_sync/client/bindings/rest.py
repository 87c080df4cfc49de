"""HTTP+JSON (REST) to one A2A endpoint: the second binding under :class:`A2AClient`.

A2A 1.0 under the interface URL, A2A 0.3 under ``/v1`` with the 0.3 proto JSON
(translated by :mod:`a2a_sync.a2a.rest_v03`).

:class:`RESTTransport` looks an operation up in the route table
(:mod:`a2a_sync.a2a.rest_routes`), fills the path from the params the codec built, sends
the rest as a JSON body (POST) or as query parameters (GET, DELETE; ProtoJSON spelling:
``true``/``false``, integers in decimal, repeated fields repeated), and returns the
decoded body, which for A2A 1.0 is exactly what the JSON-RPC binding returns as
``result``. Errors arrive as ``google.rpc.Status`` JSON (or RFC 7807 problem details)
with an HTTP status; they are raised as the same :mod:`a2a_sync.errors` types as over
JSON-RPC (:func:`~a2a_sync.a2a.error_codes.error_from_status`). Streams are SSE whose
events are bare ``StreamResponse`` objects; an ``event: error`` carries a Status.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from typing import Any, Final
from urllib.parse import quote

import attrs

from ..._net.http import HTTPResult, HTTPTransport
from ..._net.jsonrpc import decode_json, encode
from ..._net.sse import SSEStream, StreamRequest
from ...a2a.error_codes import error_from_status
from ...a2a.methods import IDEMPOTENT, Operation, Revision
from ...a2a.rest_routes import Route, build, route_for
from ...a2a.rest_v03 import event_from_wire, result_from_wire, to_wire
from ...a2a.types import AgentCard
from ...errors import (
    ConfigurationError,
    HTTPStatusError,
    InvalidParams,
    ProtocolError,
    UnsupportedOperation,
    excerpt,
)
from ...policies import ReconnectPolicy, RetryPolicy, Timeout, parse_retry_after
from ..auth import AuthRetry, OriginBoundCredentials
from .jsonrpc import TimeoutArg

__all__ = ["RESTTransport", "query_string"]

_JSON_TYPES: Final = ("application/json", "application/a2a+json", "application/problem+json")
#: Revisions with a REST binding (1.0: its JSON is the codec's; 0.3: translated, rest_v03).
_SUPPORTED: Final = ("1.0", "0.3")


def _strip_slash(url: str) -> str:
    return url.rstrip("/")


@attrs.frozen(kw_only=True, eq=False)
class RESTTransport:
    """Calls of one A2A client to its HTTP+JSON endpoint (A2A 1.0 or 0.3).

    Same arguments and thread-safety as
    :class:`~a2a_sync.client.bindings.jsonrpc.JSONRPCTransport`; ``url`` is the
    interface's base URL (routes are appended to it) and ``tenant`` becomes the first
    path segment.

    Raises:
        ConfigurationError: ``revision`` is not one this binding speaks.
    """

    url: str = attrs.field(converter=_strip_slash)
    revision: Revision
    http: HTTPTransport
    timeout: Timeout
    retry: RetryPolicy | None
    headers: Mapping[str, str] = attrs.field(repr=False)
    credentials: OriginBoundCredentials | None = attrs.field(repr=False)
    tenant: str | None
    stream_idle_timeout: float | None
    threaded_streams: bool
    ids: Any = attrs.field(factory=lambda: itertools.count(1).__next__, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.revision not in _SUPPORTED:
            raise ConfigurationError(
                f"the HTTP+JSON binding of a2a_sync speaks A2A {', '.join(_SUPPORTED)}, not "
                f"{self.revision}; use the agent's JSON-RPC interface for {self.revision}"
            )

    def with_defaults(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> RESTTransport:
        """A copy with other per-call defaults (``None`` keeps this one's)."""
        return attrs.evolve(
            self,
            timeout=self.timeout if timeout is None else Timeout.coerce(timeout),
            retry=self.retry if retry is None else retry,
        )

    def call(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg,
        idempotent: bool = False,
        card: AgentCard | None = None,
    ) -> Any:
        """Send one unary call and return the decoded answer.

        A 401/403 is answered by an OAuth credential (log in, refresh, step up; bounded)
        or once by refreshing other credentials, and the request is sent again.

        Raises:
            UnsupportedOperation: ``operation`` has no route in the revision.
            RPCError: The agent answered with an A2A error (typed by its reason).
            HTTPStatusError: Any other non-2xx answer.
            TransportError, ProtocolError: See :mod:`a2a_sync.errors`.
        """
        route = self._route(operation)
        method, url, body = self._request(route, params)
        # Without credentials a refusal is final: no AuthRetry to ask.
        auth = AuthRetry(self.credentials, self.url) if self.credentials is not None else None
        while True:
            headers = self._headers(card, body is not None)
            result = self.http.request(
                method,
                url,
                body=body,
                headers=headers,
                idempotent=idempotent or operation in IDEMPOTENT,
                timeout=self.timeout if timeout is None else timeout,
                retry=self.retry,
            )
            if auth is not None and auth.again(result.status, result.headers, headers):
                continue
            answer = self._parse(result, method, operation)
            return answer if self.revision == "1.0" else result_from_wire(operation, answer)

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
        card: AgentCard | None = None,
    ) -> tuple[SSEStream, int | str]:
        """Open a streaming call; returns the event stream and a local request number.

        Raises:
            UnsupportedOperation: ``operation`` has no route in the revision.
            RPCError: The agent refused with an A2A error instead of a stream.
            HTTPStatusError: Any other non-2xx answer.
        """
        route = self._route(operation)
        method, url, body = self._request(route, params)
        return AuthRetry(self.credentials, self.url).open(
            lambda headers: self._open_stream(
                StreamRequest(method, url, body=body, headers=headers), timeout, reconnect
            ),
            lambda: self._headers(card, True),
        )

    def _open_stream(
        self, request: StreamRequest, timeout: TimeoutArg, reconnect: Any
    ) -> tuple[SSEStream, int | str]:
        try:
            sse = SSEStream(
                self.http,
                request,
                timeout=timeout if timeout is not None else self.timeout,
                idle_timeout=self.stream_idle_timeout,
                # A dropped stream is resumed by resubscribing (the resilient client).
                reconnect=reconnect,
                reconnect_policy=None if reconnect is not None else ReconnectPolicy.none(),
                json_fallback=True,
                threaded=self.threaded_streams,
                retry=self.retry,
            )
        except HTTPStatusError as exc:
            typed = _typed_error(exc.body, exc.content_type, exc.status_code)
            if typed is not None:
                raise typed from exc
            raise
        return sse, self.ids()

    def unwrap_event(self, payload: Any, request_ids: Collection[int | str]) -> Any:
        """A stream event is a bare ``StreamResponse``; a Status object is an error."""
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            typed = error_from_status(payload, _status_of(payload))
            if typed is not None:
                raise typed
            raise ProtocolError("the agent sent an error event", excerpt=excerpt(repr(payload)))
        return payload if self.revision == "1.0" else event_from_wire(payload)

    # -- request building -------------------------------------------------------------------

    def _route(self, operation: Operation) -> Route:
        route = route_for(operation, self.revision)
        if route is None:
            raise UnsupportedOperation(
                f"{operation.value} has no HTTP+JSON route in A2A {self.revision}"
            )
        return route

    def _request(self, route: Route, params: dict[str, Any]) -> tuple[str, str, bytes | None]:
        if self.revision == "0.3":
            params = to_wire(route.operation, params)
        try:
            path = build(route, params, tenant=self.tenant)
        except ValueError as exc:
            raise InvalidParams(f"{route.operation.value}: {exc}") from exc
        rest = {
            key: value
            for key, value in params.items()
            if key != "tenant" and key not in route.params.values()
        }
        url = self.url + path
        if route.body:
            return route.method, url, encode(rest)
        query = query_string(rest)
        return route.method, url + ("?" + query if query else ""), None

    def _headers(self, card: AgentCard | None, has_body: bool) -> Mapping[str, str]:
        headers = dict(self.headers)
        if not has_body:
            headers.pop("Content-Type", None)
        if self.credentials is not None:
            headers.update(self.credentials.headers_for(self.url, card))
        return headers

    # -- answers ----------------------------------------------------------------------------

    def _parse(self, result: HTTPResult, method: str, operation: Operation) -> Any:
        content_type = result.content_type
        if result.ok:
            if not result.content.strip():
                return None if operation is Operation.DELETE_PUSH_CONFIG else {}
            body = decode_json(result.content, content_type=content_type)
            if operation is Operation.DELETE_PUSH_CONFIG:
                return None  # google.protobuf.Empty
            return body
        typed = _typed_error(result.content, content_type, result.status)
        if typed is not None:
            raise typed
        raise HTTPStatusError(
            f"{method} {result.url} answered HTTP {result.status}"
            + (f": {excerpt(result.content)}" if result.content else ""),
            status_code=result.status,
            body=result.content,
            url=result.url,
            retry_after=parse_retry_after(result.headers.get("Retry-After")),
            content_type=content_type,
        )


def _typed_error(body: bytes, content_type: str | None, status: int) -> Exception | None:
    if not body or (content_type or "").split(";")[0].strip() not in _JSON_TYPES:
        return None
    try:
        payload = decode_json(body, content_type=content_type)
    except ProtocolError:
        return None
    return error_from_status(payload, status)


def _status_of(payload: dict[str, Any]) -> int:
    code = payload["error"].get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else 500


def query_string(params: Mapping[str, Any]) -> str:
    """``params`` as a query string in ProtoJSON spelling (camelCase names as given,
    ``true``/``false``, repeated fields repeated; objects are not representable and
    refused)."""
    pairs: list[str] = []
    for key, value in params.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            if isinstance(item, bool):
                text = "true" if item else "false"
            elif isinstance(item, (int, float, str)):
                text = str(item)
            else:
                raise InvalidParams(f"{key} can not be sent as a query parameter")
            pairs.append(f"{quote(key, safe='')}={quote(text, safe='')}")
    return "&".join(pairs)
