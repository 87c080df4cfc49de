"""The one edge between protobuf messages and a2a_sync's wire dicts, errors included.

The 1.0 codec (:mod:`a2a_sync.a2a.codec`) already reads and writes the ProtoJSON form of
the ``lf.a2a.v1`` messages: the JSON-RPC ``result``/``params`` and the HTTP+JSON bodies
are exactly those. So a protobuf message converts to the attrs models in two steps: its
ProtoJSON dict (:mod:`.protojson`, ``json_format``'s results at a fraction of its cost)
and the codec (dict <-> attrs). No protobuf type reaches the public API.

Errors: a gRPC error is a status code, a message and, for A2A errors, a serialized
``google.rpc.Status`` carrying an ErrorInfo (trailing metadata
``grpc-status-details-bin``; A2A 1.0 §10.6). Both directions read the one error table
(:mod:`a2a_sync.a2a.error_codes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2

from ... import errors as _e
from ..error_codes import ERROR_INFO_TYPE, error_details, error_from_status, row_for
from .protojson import ProtoJSONError, parse, to_dict

__all__ = [
    "STATUS_DETAILS_KEY",
    "error_from_grpc",
    "from_message",
    "grpc_status_of",
    "status_details",
    "to_message",
]

#: The trailing metadata key of the serialized ``google.rpc.Status``.
STATUS_DETAILS_KEY: Final = "grpc-status-details-bin"
# ErrorInfo/BadRequest are registered in protobuf's default pool by this import, which
# is what json_format resolves ``@type`` against.
_DETAIL_TYPES: Final = (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)
#: Without an ErrorInfo, a status code stands for the error of the same code in the
#: table's HTTP fallback (INVALID_ARGUMENT: bad params ...).
_HTTP_OF_CODE: Final = {"INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "INTERNAL": 500}


def to_message(cls: Any, params: Mapping[str, Any] | None, what: str) -> Message:
    """The message ``cls`` from its ProtoJSON dict (as the 1.0 codec dumps it).

    Raises:
        InvalidParams: ``params`` does not fit the message (names the operation ``what``).
    """
    message: Message = cls()
    if params:
        try:
            parse(dict(params), message)
        except ProtoJSONError as exc:
            raise _e.InvalidParams(
                f"{what}: the params do not fit {message.DESCRIPTOR.name}: {exc}",
                data={"errors": [str(exc)]},
            ) from exc
    return message


def from_message(message: Message) -> dict[str, Any]:
    """The ProtoJSON dict of ``message`` (lowerCamelCase names, enums by name, unset
    fields left out): what the 1.0 codec loads."""
    result: dict[str, Any] = to_dict(message)
    return result


def grpc_status_of(exc: _e.RPCError) -> str:
    """The gRPC status code name for ``exc`` (the table's; INTERNAL for others)."""
    row = row_for(exc)
    return row.grpc if row is not None else "INTERNAL"


def status_details(exc: _e.RPCError, code: str | None = None) -> bytes:
    """The serialized ``google.rpc.Status`` for ``exc``: its code and message and the
    ErrorInfo (plus BadRequest field violations for invalid params) of the table."""
    status = json_format.ParseDict(
        {
            "code": code_pb2.Code.Value(code or grpc_status_of(exc)),
            "message": exc.message,
            "details": error_details(exc) or [],
        },
        status_pb2.Status(),
    )
    return bytes(status.SerializeToString())


def error_from_grpc(code: str, message: str, details: bytes | None) -> _e.RPCError | None:
    """The typed A2A error a failed call stands for, or ``None`` when it carries none.

    With a ``grpc-status-details-bin`` whose ErrorInfo names an A2A reason, that error;
    otherwise INVALID_ARGUMENT, NOT_FOUND and INTERNAL give InvalidParams,
    MethodNotFound and InternalError (as the table's HTTP fallback does); any other code
    gives ``None`` (the caller maps it to a transport error).
    """
    body: dict[str, Any] = {"error": {"message": message}}
    if details:
        try:
            status = status_pb2.Status.FromString(details)
            infos = [
                json_format.MessageToDict(d)
                for d in status.details
                if d.type_url == ERROR_INFO_TYPE
            ]
        except (DecodeError, json_format.Error, TypeError):
            infos = []  # a peer's broken details: fall back to the code
        body["error"]["details"] = infos
    return error_from_status(body, _HTTP_OF_CODE.get(code, 0))
