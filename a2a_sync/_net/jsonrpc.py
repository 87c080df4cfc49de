"""JSON-RPC 2.0 envelopes and the one error-code table, shared by client and server.

Encoding produces compact UTF-8 bytes. Decoding validates the envelope strictly
(``jsonrpc == "2.0"``, id match, exactly one of ``result``/``error``) and raises typed
errors: :class:`~a2a_sync.errors.ProtocolError` when the peer broke JSON-RPC, an
:class:`~a2a_sync.errors.RPCError` subclass when it answered with an error object.

The code table works in both directions: a client turns a code into an exception class
(:func:`error_from_object`); a server turns an exception into an error object
(:meth:`~a2a_sync.errors.RPCError.to_error_object`). A2A and MCP reuse some codes with
different meanings (-32002 is "task not cancelable" in A2A, "resource not found" in MCP),
so each protocol has its own view of the table: :data:`A2A_ERRORS` and :data:`MCP_ERRORS`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping
from typing import Any, Final

from .. import errors as _e
from ..errors import ProtocolError, RPCError, excerpt

__all__ = [
    "A2A_ERRORS",
    "JSONRPC_VERSION",
    "MCP_ERRORS",
    "STANDARD_ERRORS",
    "IdCounter",
    "Request",
    "decode_json",
    "decode_request",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "error_from_object",
    "result_from_response",
]

JSONRPC_VERSION: Final = "2.0"

ErrorTable = Mapping[int, type[RPCError]]


def _table(*classes: type[RPCError]) -> dict[int, type[RPCError]]:
    table: dict[int, type[RPCError]] = {}
    for cls in classes:
        assert cls.code_value is not None
        table[cls.code_value] = cls
    return table


#: The JSON-RPC 2.0 codes every protocol shares (-32700 .. -32603).
STANDARD_ERRORS: Final[ErrorTable] = _table(
    _e.ParseError, _e.InvalidRequest, _e.MethodNotFound, _e.InvalidParams, _e.InternalError
)

#: Standard codes plus the A2A codes -32001 .. -32009 (A2A 1.0 §5.4; 0.3 uses the same).
A2A_ERRORS: Final[ErrorTable] = {
    **STANDARD_ERRORS,
    **_table(
        _e.TaskNotFound,
        _e.TaskNotCancelable,
        _e.PushNotificationNotSupported,
        _e.UnsupportedOperation,
        _e.ContentTypeNotSupported,
        _e.InvalidAgentResponse,
        _e.ExtendedAgentCardNotConfigured,
        _e.ExtensionSupportRequired,
        _e.VersionNotSupported,
    ),
}

#: Standard codes plus the MCP codes of 2025-11-25 and 2026-07-28.
MCP_ERRORS: Final[ErrorTable] = {
    **STANDARD_ERRORS,
    **_table(
        _e.ResourceNotFound,
        _e.HeaderMismatch,
        _e.MissingRequiredClientCapability,
        _e.UnsupportedProtocolVersion,
        _e.URLElicitationRequired,
    ),
}

_FALLBACK_BY_TABLE: dict[int, type[RPCError]] = {
    id(A2A_ERRORS): _e.A2AError,
    id(MCP_ERRORS): _e.MCPError,
}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encode(obj: Any) -> bytes:
    """Serialize a JSON value compactly as UTF-8 (non-ASCII kept, NaN refused)."""
    return _dumps(obj).encode("utf-8")


def encode_request(method: str, params: Any, request_id: int | str) -> bytes:
    """Encode a JSON-RPC request. ``params`` ``None`` omits the member."""
    envelope: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method}
    if params is not None:
        envelope["params"] = params
    return encode(envelope)


def encode_notification(method: str, params: Any = None) -> bytes:
    """Encode a JSON-RPC notification (no id)."""
    envelope: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "method": method}
    if params is not None:
        envelope["params"] = params
    return encode(envelope)


def encode_result(request_id: int | str | None, result: Any) -> bytes:
    """Encode a success response."""
    return encode({"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result})


def encode_error(request_id: int | str | None, error: RPCError) -> bytes:
    """Encode an error response from an :class:`RPCError` (the table's server direction)."""
    return encode({"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_error_object()})


def decode_json(
    body: bytes | str, *, what: str = "response", content_type: str | None = None
) -> Any:
    """Parse JSON from a peer, raising :class:`ProtocolError` with an excerpt on failure.

    HTML (a proxy's error page), empty and truncated bodies get a message saying so; every
    other failure names the parser's complaint and position, and the excerpt shows control
    characters escaped (see :func:`parse_failure`).
    """
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise parse_failure(body, exc, what=what, content_type=content_type) from exc


def parse_failure(
    body: bytes | str,
    exc: BaseException,
    *,
    what: str = "response",
    content_type: str | None = None,
) -> ProtocolError:
    """The :class:`ProtocolError` for JSON that did not parse (the one wording of a2a_sync).

    The message says what the text is (empty, HTML, truncated, too deep, invalid), where the
    parser stopped (line, column, character), and shows an excerpt — around that position
    when it is far in — with whitespace kept and control characters escaped, so a stray
    ``\x1e`` or NUL is visible. The caller chains it to ``exc``.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    stripped = text.lstrip()
    position = exc.pos if isinstance(exc, json.JSONDecodeError) else None
    if not stripped:
        reason = f"empty {what} body"
    elif stripped.startswith("<") or (content_type or "").startswith("text/html"):
        reason = f"expected JSON {what}, got HTML"
    elif isinstance(exc, RecursionError):
        reason = f"{what} JSON nested too deeply"
    elif position is not None and position >= len(text.rstrip()):
        reason = f"truncated JSON {what}"
    else:
        reason = f"invalid JSON {what}"
    if isinstance(exc, json.JSONDecodeError) and stripped:
        reason += f" ({exc.msg} at line {exc.lineno} column {exc.colno}, char {exc.pos})"
    if content_type and not content_type.startswith(("application/json", "text/html")):
        reason += f" (Content-Type {content_type})"
    return ProtocolError(reason, excerpt=escaped_excerpt(text, position))


def escaped_excerpt(text: str, position: int | None = None) -> str:
    """A printable excerpt of ``text`` (around ``position`` when it lies beyond the first
    :data:`~a2a_sync.errors.EXCERPT_LIMIT` characters), control characters escaped."""
    limit = _e.EXCERPT_LIMIT
    start = 0
    if position is not None and position > limit - 20:
        start = max(0, position - limit // 2)
    window = text[start : start + limit]
    shown = "".join(_escape(char) for char in window)
    if start:
        shown = f"[char {start}:] " + shown
    if start + limit < len(text):
        shown += f"... ({len(text)} chars)"
    return shown


def _escape(char: str) -> str:
    code = ord(char)
    if char in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char]
    if code < 0x20 or 0x7F <= code < 0xA0 or char in "\u2028\u2029\ufeff":
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def error_from_object(error: Any, table: ErrorTable = STANDARD_ERRORS) -> RPCError:
    """Build the typed exception for a JSON-RPC ``error`` member (the client direction)."""
    if not isinstance(error, Mapping):
        raise ProtocolError("JSON-RPC error member is not an object", excerpt=excerpt(repr(error)))
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, int):
        raise ProtocolError("JSON-RPC error code is not an integer", excerpt=excerpt(repr(error)))
    message = error.get("message")
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    cls = table.get(code) or _FALLBACK_BY_TABLE.get(id(table), RPCError)
    return cls(message, code=code, data=error.get("data"))


def result_from_response(
    response: Any,
    *,
    expected_id: int | str | None,
    table: ErrorTable = STANDARD_ERRORS,
    allow_missing_result: bool = False,
) -> Any:
    """Validate a decoded JSON-RPC response envelope and return its ``result``.

    Args:
        response: The decoded JSON value.
        expected_id: The id of the request this answers. An error response with a
            ``null`` id is accepted (the peer could not read our id).
        table: Code table to type errors with.
        allow_missing_result: Tolerate a success envelope without ``result`` (returns
            ``None``); a2a-sdk's 0.3 compatibility layer answers some calls that way.

    Raises:
        ProtocolError: The envelope is malformed or answers another request.
        RPCError: The peer answered with an error object (typed by ``table``).
    """
    if not isinstance(response, dict):
        raise ProtocolError(
            "JSON-RPC response is not an object", excerpt=excerpt(_short_json(response))
        )
    if response.get("jsonrpc") != JSONRPC_VERSION:
        raise ProtocolError(
            'JSON-RPC response lacks "jsonrpc": "2.0"', excerpt=excerpt(_short_json(response))
        )
    has_result = "result" in response
    has_error = "error" in response
    if has_result and has_error:
        raise ProtocolError(
            "JSON-RPC response has both result and error", excerpt=excerpt(_short_json(response))
        )
    response_id = response.get("id")
    if has_error:
        if response_id is not None and response_id != expected_id:
            raise ProtocolError(
                f"JSON-RPC error answers id {response_id!r}, expected {expected_id!r}"
            )
        raise error_from_object(response["error"], table)
    if response_id != expected_id:
        raise ProtocolError(f"JSON-RPC response id {response_id!r}, expected {expected_id!r}")
    if not has_result:
        if allow_missing_result:
            return None
        raise ProtocolError(
            "JSON-RPC response has neither result nor error",
            excerpt=excerpt(_short_json(response)),
        )
    return response["result"]


class Request:
    """A decoded incoming JSON-RPC request (server direction)."""

    __slots__ = ("id", "is_notification", "method", "params")

    def __init__(self, method: str, params: Any, request_id: Any, is_notification: bool) -> None:
        self.method = method
        self.params = params
        self.id = request_id
        self.is_notification = is_notification


def decode_request(body: bytes | str) -> Request:
    """Decode and validate one incoming JSON-RPC request.

    Raises:
        RPCError: :class:`~a2a_sync.errors.ParseError` for invalid JSON,
            :class:`~a2a_sync.errors.InvalidRequest` for a batch, a non-object or a
            malformed envelope. The exception's ``data`` is ``None``; the request id, when
            it could be read, is on the ``request_id`` attribute.
    """
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise _e.ParseError() from exc
    if isinstance(obj, list):
        raise _e.InvalidRequest("Batch requests are not supported")
    if not isinstance(obj, dict):
        raise _e.InvalidRequest("Request must be a JSON object")
    request_id = obj.get("id")
    if isinstance(request_id, (dict, list, float, bool)):
        raise _request_error(_e.InvalidRequest("Request id must be a string, integer or null"))
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise _request_error(_e.InvalidRequest('"jsonrpc" must be "2.0"'), request_id)
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise _request_error(_e.InvalidRequest('"method" must be a non-empty string'), request_id)
    params = obj.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise _request_error(_e.InvalidRequest('"params" must be an object or array'), request_id)
    return Request(method, params, request_id, "id" not in obj)


def _request_error(exc: RPCError, request_id: Any = None) -> RPCError:
    exc.request_id = request_id
    return exc


def _short_json(value: Any) -> str:
    try:
        return json.dumps(value)[: 2 * _e.EXCERPT_LIMIT]
    except (TypeError, ValueError):
        return repr(value)[: 2 * _e.EXCERPT_LIMIT]


class IdCounter:
    """Thread-safe source of increasing integer request ids."""

    __slots__ = ("_counter", "_lock")

    def __init__(self, start: int = 1) -> None:
        self._counter = itertools.count(start)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        # itertools.count is atomic under the GIL, but not under free-threaded builds.
        with self._lock:
            return next(self._counter)
