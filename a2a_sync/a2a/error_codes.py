"""The one A2A error table: JSON-RPC code, HTTP status, gRPC status and ErrorInfo reason.

A2A 1.0 §5.4 names each error once and gives its spelling per binding. This table holds
that row for every error class of :mod:`a2a_sync.errors` and is read in both directions:

* a server turns an exception into a JSON-RPC ``error`` (``data`` = ErrorInfo ...) or an
  HTTP+JSON ``google.rpc.Status`` body with the matching HTTP status
  (:func:`status_body`);
* a client turns a JSON-RPC code, or a REST error body (``google.rpc.Status`` with an
  ErrorInfo reason, or the RFC 7807 ``application/problem+json`` form that §6.4 of the same
  spec shows), back into the same exception class (:func:`error_from_status`).

So ``TaskNotFound`` is ``TaskNotFound`` whichever binding carried it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from .. import errors as _e
from ..errors import RPCError

__all__ = [
    "BAD_REQUEST_TYPE",
    "DOMAIN",
    "ERROR_INFO_TYPE",
    "ErrorCode",
    "TABLE",
    "error_details",
    "error_from_status",
    "row_for",
    "status_body",
]

ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE: Final = "type.googleapis.com/google.rpc.BadRequest"
DOMAIN: Final = "a2a-protocol.org"


@attrs.frozen
class ErrorCode:
    """How one A2A error is spelled on each binding."""

    error: type[RPCError]
    jsonrpc: int
    http: int
    grpc: str
    #: ErrorInfo ``reason``: the error's name in UPPER_SNAKE without "Error".
    reason: str
    #: The spec's name of the error (``TaskNotFoundError``), as 0.3 REST bodies carry it.
    name: str


_NAMES: Final = {"PARSE_ERROR": "JSONParseError", "INTERNAL_ERROR": "InternalError"}


def _row(error: type[RPCError], http: int, grpc: str, reason: str) -> ErrorCode:
    assert error.code_value is not None
    name = _NAMES.get(reason) or "".join(w.capitalize() for w in reason.split("_")) + "Error"
    return ErrorCode(error, error.code_value, http, grpc, reason, name)


#: Every A2A error (A2A 1.0 §5.4 table; the standard JSON-RPC codes as a2a-sdk maps them).
TABLE: Final[tuple[ErrorCode, ...]] = (
    _row(_e.ParseError, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
    _row(_e.InvalidRequest, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    _row(_e.MethodNotFound, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
    _row(_e.InvalidParams, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
    _row(_e.InternalError, 500, "INTERNAL", "INTERNAL_ERROR"),
    _row(_e.TaskNotFound, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
    _row(_e.TaskNotCancelable, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    _row(
        _e.PushNotificationNotSupported,
        400,
        "FAILED_PRECONDITION",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    _row(_e.UnsupportedOperation, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
    _row(_e.ContentTypeNotSupported, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"),
    _row(_e.InvalidAgentResponse, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"),
    _row(
        _e.ExtendedAgentCardNotConfigured,
        400,
        "FAILED_PRECONDITION",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    ),
    _row(_e.ExtensionSupportRequired, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"),
    _row(_e.VersionNotSupported, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
)

_BY_CODE: Final = {row.jsonrpc: row for row in TABLE}
_BY_REASON: Final = {row.reason: row for row in TABLE}
#: 0.3 spelled this reason after its older error name.
_BY_REASON["AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED"] = _BY_CODE[-32007]
#: RFC 7807 ``type`` URIs end in the error name (A2A 1.0 §6.4 example); 0.3 REST bodies
#: (a2a-sdk) carry it as ``type`` too.
_BY_PROBLEM_NAME: Final = (
    {row.error.__name__.lower(): row for row in TABLE}
    | {row.reason.replace("_", "").lower(): row for row in TABLE}
    | {row.name.lower(): row for row in TABLE}
)
_INTERNAL: Final = _BY_CODE[-32603]
_HTTP_FALLBACK: Final = {
    400: _e.InvalidParams,
    404: _e.MethodNotFound,
    500: _e.InternalError,
}


def row_for(exc: RPCError) -> ErrorCode | None:
    """The table row of ``exc`` (by its code), or ``None`` for a code A2A does not define."""
    return _BY_CODE.get(exc.code)


def error_details(exc: RPCError) -> list[dict[str, Any]] | None:
    """The A2A 1.0 typed details of ``exc``: an ErrorInfo with its reason, plus a
    BadRequest listing field violations for invalid params (``None``: no A2A reason)."""
    row = row_for(exc)
    if row is None:
        return None
    data = exc.data if isinstance(exc.data, dict) else {}
    violations = data.get("errors") if isinstance(exc, _e.InvalidParams) else None
    metadata = {k: v for k, v in data.items() if isinstance(v, str)}
    details: list[dict[str, Any]] = [
        {"@type": ERROR_INFO_TYPE, "reason": row.reason, "domain": DOMAIN, "metadata": metadata}
    ]
    if isinstance(violations, list):
        details.append(
            {"@type": BAD_REQUEST_TYPE, "fieldViolations": [_violation(str(v)) for v in violations]}
        )
    return details


def _violation(text: str) -> dict[str, str]:
    description, _, path = text.rpartition(" @ ")
    if not description:
        return {"field": "", "description": text}
    return {"field": path.removeprefix("$.").removeprefix("$"), "description": description}


def status_body(exc: RPCError, revision: str = "1.0") -> tuple[int, dict[str, Any]]:
    """The HTTP status and ``google.rpc.Status`` JSON of ``exc`` (HTTP+JSON binding).

    For 0.3 the body also carries, at the top, ``type`` (the error's name) and ``message``
    (what a2a-sdk's 0.3 REST client reads) and ``code``, the JSON-RPC code (what
    @a2a-js/sdk's 0.3 REST client reads: its 0.3 servers answered ``{code, message, data}``).
    """
    row = row_for(exc) or _INTERNAL
    error: dict[str, Any] = {"code": row.http, "status": row.grpc, "message": exc.message}
    details = error_details(exc)
    if details:
        error["details"] = details
    body: dict[str, Any] = {"error": error}
    if revision == "0.3":
        body["type"] = row.name
        body["message"] = exc.message
        body["code"] = row.jsonrpc
    return row.http, body


def error_from_status(body: Any, http_status: int) -> RPCError | None:
    """The typed exception a REST error body stands for, or ``None`` when it is no A2A error.

    Accepts ``google.rpc.Status`` (``{"error": {"code", "status", "message", "details"}}``,
    typed by the ErrorInfo reason), RFC 7807 problem details (``{"type", "title",
    "status", "detail"}``, typed by the last segment of ``type``) and the 0.3 body of
    @a2a-js/sdk servers (``{"code", "message", "data"}``, typed by the JSON-RPC code,
    when it is an A2A one). Without a known reason
    the HTTP status decides between InvalidParams (400), MethodNotFound (404) and
    InternalError (500); other statuses give ``None`` (the caller raises HTTPStatusError).
    """
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        row = None
        reason_metadata: Any = None
        details = error.get("details")
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, Mapping) and detail.get("@type") == ERROR_INFO_TYPE:
                row = _BY_REASON.get(str(detail.get("reason")))
                reason_metadata = detail.get("metadata") or None
                break
        return _build(row, message, http_status, reason_metadata)
    code = body.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and code in _BY_CODE:  # 0.3 (JS)
        return _build(_BY_CODE[code], body.get("message"), http_status, body.get("data"))
    if "type" in body or "title" in body:  # RFC 7807
        name = str(body.get("type") or "").rstrip("/").rsplit("/", 1)[-1]
        row = _BY_PROBLEM_NAME.get(name.replace("-", "").replace("_", "").lower())
        message = body.get("detail") or body.get("title")
        return _build(row, message, http_status, None)
    return None


def _build(row: ErrorCode | None, message: Any, http_status: int, data: Any) -> RPCError | None:
    text = message if isinstance(message, str) else None
    if row is not None:
        return row.error(text, data=data)
    fallback = _HTTP_FALLBACK.get(http_status)
    return fallback(text, data=data) if fallback is not None else None
