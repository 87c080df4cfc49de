"""``HTTPOptions``: how the MCP HTTP transports reach a server, as one frozen value.

Shared by :class:`~.http.StreamableHTTPTransport`, :class:`~.legacy_sse.LegacySSETransport`
and :meth:`MCPConnection.http <a2a_sync.mcp.connection.MCPConnection.http>` (through
:class:`~a2a_sync.mcp.options.MCPOptions`), so the settings are written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ... import _constants as C
from ..._net.sse_decoder import DEFAULT_MAX_EVENT_BYTES
from ._httpbase import CONNECT_TIMEOUT, AuthSource

__all__ = ["HTTP_OPTION_NAMES", "HTTPOptions"]


@attrs.frozen(kw_only=True)
class HTTPOptions:
    """Connection settings of an MCP HTTP transport. Immutable; derive variants with
    :meth:`evolve`.

    Attributes:
        headers: Extra headers for every request (not the ones MCP itself uses).
        auth: Bearer token, or a callable returning it (asked per request). Sent, with
            ``headers``, only to the endpoint's origin.
        allow_insecure_credentials: Send ``auth`` (or an ``Authorization``, ``Cookie``
            or ``X-API-Key`` header) over plain ``http://`` to a host that is not
            loopback; refused otherwise (docs/security.md). OAuth ignores it.
        connect_timeout: Seconds to connect.
        read_timeout: Longest silence on a response before it counts as dead. ``None``:
            the transport's default (Streamable HTTP: 300 s; the HTTP+SSE event stream,
            which is the session itself: no limit).
        verify: TLS verification, as in requests (``False``, or a CA bundle path).
        cert: Client certificate, as in requests.
        trust_env: Take proxies and a CA bundle from the environment.
        max_event_bytes: Cap on one server-sent event.
        max_response_bytes: Cap on one JSON response body.
    """

    headers: Mapping[str, str] | None = None
    auth: AuthSource | None = None
    allow_insecure_credentials: bool = False
    connect_timeout: float = CONNECT_TIMEOUT
    read_timeout: float | None = None
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None
    trust_env: bool = True
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    max_response_bytes: int = C.DEFAULT_MAX_RESPONSE_BYTES

    def evolve(self, **changes: Any) -> HTTPOptions:
        """A copy with ``changes`` (field names of this class)."""
        return attrs.evolve(self, **changes)


#: The field names of :class:`HTTPOptions`.
HTTP_OPTION_NAMES = frozenset(a.name for a in attrs.fields(HTTPOptions))
