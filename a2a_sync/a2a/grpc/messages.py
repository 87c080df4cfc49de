"""The ``lf.a2a.v1`` message classes and the A2AService method table.

The classes are built at import from the compiled descriptor (:mod:`._descriptor`) in a
**private** descriptor pool. protobuf's default pool accepts each symbol once per
process, and a2a-sdk registers its own copy of ``lf.a2a.v1`` there; a private pool lets
both live in one process (an application using both SDKs, or a test talking to
a2a-sdk in-process). The wire format does not depend on the pool.

The services are not generated: :data:`METHODS` lists each rpc with its request and
response classes, read from the service descriptor, and the bindings wire them on
grpcio's generic API (``channel.unary_unary``, ``grpc.method_handlers_generic_handler``).
"""

from __future__ import annotations

from typing import Any, Final

import attrs
from google.api import annotations_pb2, client_pb2, field_behavior_pb2
from google.protobuf import descriptor_pool, empty_pb2, message_factory, struct_pb2, timestamp_pb2
from google.protobuf.descriptor import FileDescriptor

from ..methods import STREAMING, Operation, lookup
from ._descriptor import SERIALIZED

__all__ = [
    "METHODS",
    "POOL",
    "SERVICE",
    "Method",
    "message_class",
    "method_for",
    "private_pool",
]

#: The full name of the service; rpc paths are ``/lf.a2a.v1.A2AService/<Rpc>``.
SERVICE: Final = "lf.a2a.v1.A2AService"


def private_pool(serialized: bytes) -> descriptor_pool.DescriptorPool:
    """A descriptor pool of its own holding the compiled ``serialized`` proto file and the
    google imports it needs (not protobuf's default pool: see the module docstring)."""
    pool = descriptor_pool.DescriptorPool()
    seen: set[str] = set()

    def add(file: FileDescriptor) -> None:
        if file.name in seen:
            return
        for dependency in file.dependencies:
            add(dependency)
        pool.AddSerializedFile(file.serialized_pb)
        seen.add(file.name)

    for module in (annotations_pb2, client_pb2, field_behavior_pb2, empty_pb2, struct_pb2):
        add(module.DESCRIPTOR)
    add(timestamp_pb2.DESCRIPTOR)
    pool.AddSerializedFile(serialized)
    return pool


#: The pool holding ``lf.a2a.v1`` and its imports (not protobuf's default pool).
POOL: Final = private_pool(SERIALIZED)


def message_class(name: str) -> Any:
    """The class of message ``name`` (``"Task"`` or a full name ``"lf.a2a.v1.Task"``)."""
    full = name if "." in name else f"lf.a2a.v1.{name}"
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full))


@attrs.frozen
class Method:
    """One rpc of A2AService (1.0's, or 0.3's: :mod:`a2a_sync.a2a.grpc_v03.messages`)."""

    operation: Operation
    name: str
    request: Any
    response: Any
    streaming: bool
    #: The service's full name (0.3's is ``a2a.v1.A2AService``).
    service: str = SERVICE

    @property
    def path(self) -> str:
        """The gRPC method path (``/lf.a2a.v1.A2AService/SendMessage``)."""
        return f"/{self.service}/{self.name}"


def _methods() -> dict[Operation, Method]:
    out: dict[Operation, Method] = {}
    for method in POOL.FindServiceByName(SERVICE).methods:
        found = lookup(method.name)  # the 1.0 JSON-RPC names are the rpc names
        if found is None or found[1] != "1.0":
            continue
        operation = found[0]
        out[operation] = Method(
            operation,
            method.name,
            message_factory.GetMessageClass(method.input_type),
            message_factory.GetMessageClass(method.output_type),
            operation in STREAMING,
        )
    return out


#: Every rpc of the service, by operation.
METHODS: Final = _methods()


def method_for(operation: Operation) -> Method:
    """The rpc of ``operation`` (every 1.0 operation has one)."""
    return METHODS[operation]
