"""JSON-RPC over HTTP to one A2A endpoint: the plumbing under :class:`A2AClient`.

:class:`JSONRPCTransport` turns an :class:`~a2a_sync.a2a.methods.Operation` and its params
into a request envelope for the endpoint's revision (wire method name, ``tenant``,
headers with credentials), sends it over a shared :class:`~a2a_sync._net.http.HTTPTransport`
and returns the JSON-RPC result — or raises the typed error the agent answered with, or
:class:`~a2a_sync.errors.HTTPStatusError` for an HTTP failure. Streaming operations get
an :class:`~a2a_sync._net.sse.SSEStream`; the client wraps it into a
:class:`~a2a_sync.client.TaskStream`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import attrs

from ..._net.http import HTTPResult, HTTPTransport
from ..._net.jsonrpc import A2A_ERRORS, IdCounter, decode_json, encode_request, result_from_response
from ..._net.sse import SSEStream, StreamRequest
from ..._net.unicode import find_surrogate
from ...a2a.methods import IDEMPOTENT, Operation, Revision, wire_name
from ...a2a.types import AgentCard
from ...errors import (
    ConfigurationError,
    HTTPStatusError,
    ProtocolError,
    RPCError,
    UnsupportedOperation,
    excerpt,
)
from ...policies import ReconnectPolicy, RetryPolicy, Timeout, parse_retry_after
from ..auth import AuthRetry, OriginBoundCredentials

__all__ = ["JSONRPCTransport", "TimeoutArg", "static_headers"]

_JSON_TYPES: Final = ("application/json", "application/a2a+json")

TimeoutArg = Timeout | float | tuple[float | None, float | None] | None


def static_headers(
    revision: Revision, extensions: Sequence[str], headers: Mapping[str, str] | None
) -> dict[str, str]:
    """The headers every request to an endpoint of ``revision`` carries."""
    static = {"Content-Type": "application/json"}
    if revision == "1.0":
        static["A2A-Version"] = "1.0"
    if extensions:
        name = "A2A-Extensions" if revision == "1.0" else "X-A2A-Extensions"
        static[name] = ",".join(extensions)
    static.update(headers or {})
    return static


@attrs.frozen(kw_only=True, eq=False)
class JSONRPCTransport:
    """Calls of one A2A client to its JSON-RPC endpoint.

    **Threads:** immutable and safe to share; the request-id counter is thread-safe and
    the HTTP transport's pool is shared. :meth:`with_defaults` copies share both.

    Args:
        url: The JSON-RPC endpoint.
        revision: ``"1.0"`` or ``"0.3"``: decides wire method names and headers.
        http: The connection pool requests go through (not closed here).
        timeout: Default limits per call.
        retry: Retry policy per call (``None``: the HTTP transport's own).
        headers: Headers for every request (see :func:`static_headers`).
        credentials: Credentials bound to their trusted origins.
        tenant: Sent as ``tenant`` in every 1.0 call's params.
        stream_idle_timeout: Longest silence on a stream before it counts as dead.
        threaded_streams: Read streams on a background thread.
    """

    url: str
    revision: Revision
    http: HTTPTransport
    timeout: Timeout
    retry: RetryPolicy | None
    headers: Mapping[str, str] = attrs.field(repr=False)
    credentials: OriginBoundCredentials | None = attrs.field(repr=False)
    tenant: str | None
    stream_idle_timeout: float | None
    threaded_streams: bool
    ids: IdCounter = attrs.field(factory=IdCounter, repr=False)

    def with_defaults(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> JSONRPCTransport:
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
        """Send one unary call and return its JSON-RPC ``result``.

        A 401 is answered once by refreshing the credentials and sending again.

        Raises:
            UnsupportedOperation: ``operation`` is not part of the revision.
            RPCError: The agent answered with a JSON-RPC error (typed by code).
            HTTPStatusError: Any other non-2xx answer.
            TransportError, ProtocolError: See :mod:`a2a_sync.errors`.
        """
        method = self._method(operation)
        request_id = self.ids()
        body = _request_body(method, self._params(params), request_id)
        # Without credentials a refusal is final: no AuthRetry to ask.
        auth = AuthRetry(self.credentials, self.url) if self.credentials is not None else None
        while True:
            headers = self._headers(card)
            result = self.http.request(
                "POST",
                self.url,
                body=body,
                headers=headers,
                idempotent=idempotent or operation in IDEMPOTENT,
                timeout=self.timeout if timeout is None else timeout,
                retry=self.retry,
            )
            if auth is not None and auth.again(result.status, result.headers, headers):
                continue
            return self._parse(result, request_id, operation)

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
        card: AgentCard | None = None,
    ) -> tuple[SSEStream, int]:
        """Open a streaming call; returns the event stream and the request's id.

        Raises:
            UnsupportedOperation: ``operation`` is not part of the revision.
            RPCError: The agent refused with a JSON-RPC error instead of a stream.
            HTTPStatusError: Any other non-2xx answer.
        """
        method = self._method(operation)
        request_id = self.ids()
        body = _request_body(method, self._params(params), request_id)
        # Not marked idempotent even for SubscribeToTask: re-establishing a stream is the
        # resilient client's job (L2, with its own budget and waits), not the transport's.
        return AuthRetry(self.credentials, self.url).open(
            lambda headers: self._open_stream(body, headers, request_id, timeout, reconnect),
            lambda: self._headers(card),
        )

    def _open_stream(
        self,
        body: bytes,
        headers: Mapping[str, str],
        request_id: int,
        timeout: TimeoutArg,
        reconnect: Any,
    ) -> tuple[SSEStream, int]:
        request = StreamRequest("POST", self.url, body=body, headers=headers)
        try:
            sse = SSEStream(
                self.http,
                request,
                timeout=timeout if timeout is not None else self.timeout,
                idle_timeout=self.stream_idle_timeout,
                # A dropped A2A stream is resumed by resubscribing (ResilientA2AClient),
                # never by repeating the request at the SSE level.
                reconnect=reconnect,
                reconnect_policy=None if reconnect is not None else ReconnectPolicy.none(),
                json_fallback=True,
                threaded=self.threaded_streams,
                retry=self.retry,
            )
        except HTTPStatusError as exc:
            _raise_rpc_error_in(exc, request_id)
            raise
        return sse, request_id

    def unwrap_event(self, payload: Any, request_ids: Collection[int | str]) -> Any:
        """The ``result`` of one stream event: a JSON-RPC response answering one of
        ``request_ids`` (a stream resumed by resubscribing answers several)."""
        request_id = payload.get("id") if isinstance(payload, dict) else None
        if request_id not in request_ids:
            request_id = next(iter(request_ids))
        return result_from_response(payload, expected_id=request_id, table=A2A_ERRORS)

    # -- request building -------------------------------------------------------------------

    def _headers(self, card: AgentCard | None) -> Mapping[str, str]:
        if self.credentials is None:
            return self.headers
        return {**self.headers, **self.credentials.headers_for(self.url, card)}

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.tenant and self.revision == "1.0" and isinstance(params, dict):
            params.setdefault("tenant", self.tenant)
        return params

    def _method(self, operation: Operation) -> str:
        method = wire_name(operation, self.revision)
        if method is None:
            raise UnsupportedOperation(f"{operation.value} is not part of A2A {self.revision}")
        return method

    # -- answers ----------------------------------------------------------------------------

    def _parse(self, result: HTTPResult, request_id: int, operation: Operation) -> Any:
        content_type = result.content_type
        if result.ok:
            envelope = decode_json(result.content, content_type=content_type)
            return result_from_response(
                envelope,
                expected_id=request_id,
                table=A2A_ERRORS,
                # a2a-sdk's 0.3 layer answers a push-config delete without "result".
                allow_missing_result=self.revision == "0.3"
                and operation is Operation.DELETE_PUSH_CONFIG,
            )
        if content_type in _JSON_TYPES and result.content:
            try:
                envelope = decode_json(result.content, content_type=content_type)
                result_from_response(envelope, expected_id=request_id, table=A2A_ERRORS)
            except RPCError:
                raise
            except ProtocolError:
                pass
        raise HTTPStatusError(
            f"POST {result.url} answered HTTP {result.status}"
            + (f": {excerpt(result.content)}" if result.content else ""),
            status_code=result.status,
            body=result.content,
            url=result.url,
            retry_after=parse_retry_after(result.headers.get("Retry-After")),
            content_type=content_type,
        )


def _request_body(method: str, params: dict[str, Any], request_id: int) -> bytes:
    """The request envelope, encoded strictly as UTF-8 once.

    Raises:
        ConfigurationError: A string in ``params`` is not Unicode text (a lone surrogate
            such as ``"\\ud800"``); nothing was sent. An argument error, not an
            :class:`RPCError`: no agent answered, and no other agent would accept it.
    """
    try:
        return encode_request(method, params, request_id)
    except UnicodeEncodeError as exc:
        path = find_surrogate(params) or "$"
        raise ConfigurationError(
            f"{method}: {path} of the request is not valid Unicode text (a lone surrogate"
            " such as \\ud800); pass text that encodes as UTF-8. Nothing was sent"
        ) from exc


def _raise_rpc_error_in(exc: HTTPStatusError, request_id: int) -> None:
    if exc.content_type in _JSON_TYPES and exc.body:
        try:
            envelope = decode_json(exc.body)
            result_from_response(envelope, expected_id=request_id, table=A2A_ERRORS)
        except RPCError as rpc_error:
            raise rpc_error from exc
        except ProtocolError:
            return
