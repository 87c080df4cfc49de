"""What the server knows about one JSON-RPC call, handed to handlers and executors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..a2a.methods import Operation
from .auth import ANONYMOUS, Principal

__all__ = ["CallContext"]


@attrs.frozen(kw_only=True)
class CallContext:
    """One incoming call, as the request handler sees it.

    Immutable; safe to pass between threads.

    Attributes:
        principal: Who is calling (the anonymous principal without credentials).
        revision: The A2A revision of the call: ``"1.0"`` or ``"0.3"``.
        method: The JSON-RPC method name as sent (``"SendMessage"``, ``"message/send"``).
        operation: The operation it names.
        request_id: The JSON-RPC request id.
        extensions: Extension URIs the client asked for (``A2A-Extensions``; 0.3:
            ``X-A2A-Extensions``).
        headers: Request headers, lower-case names. Not shown in reprs (they may carry
            credentials).
        environ: The WSGI environ (for advanced handlers). Not shown in reprs.
    """

    principal: Principal = ANONYMOUS
    revision: str = "1.0"
    method: str = ""
    operation: Operation | None = None
    request_id: Any = None
    extensions: frozenset[str] = frozenset()
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    environ: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)
