"""The HTTP and JSON-RPC edge of the server: reading requests, checking envelopes and
versions, and writing results and errors in the shape of each A2A revision.

Internal to :mod:`a2a_sync.server`; :class:`~a2a_sync.server.app.A2AApplication` is the
only user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import parse_qs

from .._net.jsonrpc import Request, encode
from .._net.unicode import describe_surrogate, find_surrogate, may_hold_surrogate
from ..a2a.card_codec import dump_card
from ..a2a.codec import Codec
from ..a2a.error_codes import error_details
from ..a2a.methods import Operation
from ..a2a.types import (
    GetTaskParams,
    ListPushConfigsParams,
    ListTasksParams,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageParams,
    TaskIdParams,
)
from ..errors import (
    InvalidParams,
    InvalidRequest,
    ProtocolError,
    RPCError,
    VersionNotSupported,
)
from ._json import loads_strict, loads_strict_noting_names
from .context import RequestHeaders

__all__ = [
    "JSON_HEADERS",
    "JSON_TYPES",
    "LOOPBACK_HOSTS",
    "PARAMS",
    "RETRY_AFTER_SECONDS",
    "StartResponse",
    "check_version",
    "decode",
    "decode_call",
    "dump_result",
    "error_object",
    "error_payload",
    "extensions_of",
    "headers_of",
    "json_ok",
    "host_allowed",
    "load_params",
    "loads_strict",
    "plain",
    "proto_names_to_json",
    "read_body",
    "refuse_notification",
    "retry_after_header",
    "unauthorized",
]

StartResponse = Callable[..., Any]

#: ``Retry-After`` sent with 503 when the stream cap is reached or the app is closing.
RETRY_AFTER_SECONDS: Final = 5
#: Host names a loopback-bound server answers to (DNS-rebinding protection).
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
JSON_TYPES: Final = ("application/json", "application/a2a+json")
JSON_HEADERS: Final = [("Content-Type", "application/json")]
#: The parameter model of each operation (``None``: no params).
PARAMS: Final[dict[Operation, type | None]] = {
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


def decode(body: bytes) -> Request:
    """Parse and check one JSON-RPC request strictly (see :func:`decode_call`)."""
    return decode_call(body)[0]


def decode_call(body: bytes) -> tuple[Request, bool]:
    """Parse and check one JSON-RPC request strictly; also tell whether any member name
    holds an underscore (else the params need no proto name pass: see :func:`load_params`).

    Stricter than ``json.loads``: ``NaN``/``Infinity`` and duplicate member names are
    parse errors (RFC 8259 interoperability), as are invalid UTF-8 and nesting deep
    enough to exhaust the parser. Strings that are not Unicode text (lone surrogates,
    which ``json.loads`` lets through from ``"\\ud800"``) are refused here, before any
    agent or store sees them: no part of such a request is run or stored.

    Raises:
        RPCError: -32700 for bad JSON; -32600 for a batch, a non-object, a notification
            (A2A has none) or a malformed envelope (``request_id`` set when readable);
            -32602 naming the field for a lone surrogate in ``params``.
    """
    obj, snake_names = loads_strict_noting_names(body)
    if isinstance(obj, list):
        raise InvalidRequest("Batch requests are not supported")
    if not isinstance(obj, dict):
        raise InvalidRequest("Request must be a JSON object")
    request_id = obj.get("id")
    if isinstance(request_id, (dict, list, float, bool)):
        raise InvalidRequest("Request id must be a string, integer or null")
    if may_hold_surrogate(body):
        _refuse_surrogates(obj, request_id)
    if obj.get("jsonrpc") != "2.0":
        raise _with_id(InvalidRequest('"jsonrpc" must be "2.0"'), request_id)
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise _with_id(InvalidRequest('"method" must be a non-empty string'), request_id)
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        raise _with_id(InvalidRequest('"params" must be an object'), request_id)
    # Without an id it is a notification, which A2A has none of: the app checks the
    # method and params as for any request, then refuses it (see refuse_notification).
    return Request(method, params, request_id, "id" not in obj), snake_names


def refuse_notification(request: Request) -> None:
    """Refuse a request without an ``id`` once its method and params were checked.

    Raises:
        InvalidRequest: Always (answered with ``id: null``).
    """
    if request.is_notification:
        raise InvalidRequest("A2A requests need an id (notifications are not supported)")


def _refuse_surrogates(obj: dict[str, Any], request_id: Any) -> None:
    """Raise for the first string in the request that is not Unicode text."""
    if find_surrogate(request_id) is not None:
        raise InvalidRequest("Request id is not valid Unicode text (lone surrogate)")
    path = find_surrogate(obj.get("params"))
    if path is not None:
        raise _with_id(
            InvalidParams(
                f"Invalid params: {path} is not valid Unicode text (a lone surrogate such as"
                " \\ud800); send UTF-8 text",
                data={"errors": [describe_surrogate(path)]},
            ),
            request_id,
        )
    path = find_surrogate({k: v for k, v in obj.items() if k != "params"})
    if path is not None:
        raise _with_id(
            InvalidRequest(f"{path} is not valid Unicode text (lone surrogate)"), request_id
        )


def _with_id(exc: RPCError, request_id: Any) -> RPCError:
    exc.request_id = request_id
    return exc


def read_body(environ: Mapping[str, Any], limit: int) -> bytes | None:
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


def check_version(environ: Mapping[str, Any], revision: str) -> None:
    """Enforce ``A2A-Version``: required (1.x) for 1.0 methods; absent or 0.x for 0.3 ones."""
    version = environ.get("HTTP_A2A_VERSION")
    if version is None:
        query = environ.get("QUERY_STRING")
        if query:
            version = (parse_qs(query).get("A2A-Version") or [None])[0]
    version = (version or "").strip()
    # Major.Minor decides; a patch number takes no part (A2A 1.0 §3.6). Only 1.0 and 0.3
    # are served: a newer minor (1.1) is refused like any unsupported version (§3.6.2), so
    # its client can fall back (§3.6.3) instead of being served other semantics.
    major, _, rest = version.partition(".")
    minor = rest.partition(".")[0] or "0"
    if revision == "1.0":
        if (major, minor) != ("1", "0"):
            raise VersionNotSupported(
                f"A2A version {version or '0.3 (no A2A-Version header)'!r} is not supported by "
                "this method; send A2A-Version: 1.0"
            )
    elif version and (major, minor) != ("0", "3"):
        raise VersionNotSupported(f"A2A version {version!r} does not match this 0.3 method")


def load_params(codec: Codec, operation: Operation, raw: Any, *, snake_names: bool = True) -> Any:
    """The params of ``operation`` as its model (``snake_names=False``: the caller knows no
    member name in them holds an underscore, so the 1.0 proto name pass is skipped).

    Raises:
        InvalidParams: The params do not fit the model.
    """
    model = PARAMS[operation]
    if model is None:
        return None
    if codec.revision == "1.0":
        if snake_names:
            raw = proto_names_to_json(raw)
    elif model is SendMessageParams:
        _require_part_kinds(raw)
    try:
        return codec.load({} if raw is None else raw, model)
    except ProtocolError as exc:
        raise InvalidParams(data={"errors": exc.details}) from exc


#: Members whose values are free-form JSON (``Struct``/``Value``), not proto messages:
#: their keys are the application's and are never renamed.
_FREE_FORM: Final = frozenset({"metadata", "data", "params"})


def proto_names_to_json(value: Any) -> Any:
    """``value`` with proto field names (``history_length``) read as their ProtoJSON
    lowerCamelCase names (``historyLength``), as ProtoJSON parsers accept both (A2A 1.0
    §5.5 / the ProtoJSON mapping). Free-form members (metadata, data) are kept as sent;
    a camelCase member wins over its snake_case spelling. One pass over the params'
    members (the message parts' text is not walked into)."""
    if isinstance(value, list):
        return [proto_names_to_json(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _lower_camel(key) if "_" in key else key
        if name != key and name in value:
            continue  # both spellings: the JSON name is the one kept
        walk = isinstance(item, (dict, list))  # (scalars: no call)
        out[name] = proto_names_to_json(item) if walk and name not in _FREE_FORM else item
    return out


def _lower_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _require_part_kinds(raw: Any) -> None:
    """A2A 0.3 parts are told apart by ``kind`` (a required member of TextPart, FilePart
    and DataPart): refuse an untagged part instead of guessing its kind.

    Raises:
        InvalidParams: A message part lacks ``kind``.
    """
    message = raw.get("message") if isinstance(raw, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return
    for index, part in enumerate(parts):
        if isinstance(part, dict) and "kind" not in part:
            raise InvalidParams(
                f"message.parts[{index}] lacks its kind (A2A 0.3 parts need "
                '"kind": "text", "file" or "data")',
                data={"errors": [f"required field missing @ $.message.parts[{index}].kind"]},
            )


def dump_result(codec: Codec, operation: Operation, result: Any) -> Any:
    if operation is Operation.SEND_MESSAGE:
        return codec.dump_send_result(result)
    if operation is Operation.DELETE_PUSH_CONFIG:
        return None
    if operation is Operation.GET_EXTENDED_CARD:
        return dump_card(result, codec.revision)
    return codec.dump(result)


_NO_EXTENSIONS: Final[frozenset[str]] = frozenset()


def extensions_of(environ: Mapping[str, Any], revision: str) -> frozenset[str]:
    raw = environ.get("HTTP_A2A_EXTENSIONS") or environ.get("HTTP_X_A2A_EXTENSIONS")
    if not raw:
        return _NO_EXTENSIONS
    return frozenset(uri.strip() for uri in raw.split(",") if uri.strip())


def headers_of(environ: Mapping[str, Any]) -> RequestHeaders:
    """The request's headers (lower-case names), collected when first read."""
    return RequestHeaders(environ)


def error_object(exc: RPCError, revision: str) -> dict[str, Any]:
    """The JSON-RPC ``error`` member for ``exc`` in a revision's shape.

    A2A 1.0 puts typed details in ``data`` (§5.4, what a2a-sdk sends): a
    ``google.rpc.ErrorInfo`` with the reason (``TASK_NOT_FOUND`` ...), plus a
    ``google.rpc.BadRequest`` listing field violations for invalid params. 0.3 passes
    ``data`` through.
    """
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    details = error_details(exc) if revision == "1.0" else None
    if details is None:
        if exc.data is not None:
            error["data"] = exc.data
        return error
    error["data"] = details
    return error


def error_payload(exc: RPCError, request_id: Any, revision: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error_object(exc, revision)})


def json_ok(start_response: StartResponse, body: bytes) -> list[bytes]:
    """A 200 answer with a JSON ``body``."""
    start_response("200 OK", [*JSON_HEADERS, ("Content-Length", str(len(body)))])
    return [body]


def plain(
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


def unauthorized(start_response: StartResponse, challenge: str = "Bearer") -> list[bytes]:
    return plain(
        start_response,
        "401 Unauthorized",
        "authentication required",
        [("WWW-Authenticate", challenge)],
    )


def retry_after_header() -> list[tuple[str, str]]:
    return [("Retry-After", str(RETRY_AFTER_SECONDS))]
