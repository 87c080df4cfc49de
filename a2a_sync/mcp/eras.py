"""MCP protocol eras: the legacy handshake and the 2026-07-28 per-request envelope.

* **Legacy** (``2024-11-05`` .. ``2025-11-25``): ``initialize`` offering the newest
  handshake revision, the server answers with the revision it will speak (it may
  counter-offer an older one), then ``notifications/initialized``.
* **Modern** (``2026-07-28``): no handshake. Every request carries ``_meta`` with the
  protocol version, client capabilities and client info; ``server/discover`` tells the
  server's capabilities; results carry ``resultType`` and may ask for input (MRTR).

Detection for ``era="auto"`` follows ``basic/versioning.mdx``: send ``server/discover``
first; a discover result or a recognised modern error (``-32022`` naming modern versions)
means modern; any other error or a timeout means legacy, and the client falls back to
``initialize``. Over HTTP the probe is a modern POST (``MCP-Protocol-Version: 2026-07-28``,
``Mcp-Method``); a 4xx whose body is a modern JSON-RPC error is judged like any error
above, a 4xx without one means legacy (:func:`http_status_says_legacy`), and if the
``initialize`` POST then fails with 400/404/405 the transport falls back to the 2024-11-05
HTTP+SSE transport (GET, ``endpoint`` event). The verdict is cached per server for the
life of the process (:data:`ERA_CACHE`; HTTP: per endpoint URL), so a legacy server is not
probed again.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

from ..errors import (
    ConfigurationError,
    HTTPStatusError,
    ProtocolError,
    RPCError,
    UnsupportedProtocolVersion,
)
from . import _codec
from . import types as t
from .transports.era_cache import ERA_CACHE, Era, EraCache

__all__ = [
    "DISCOVER_TIMEOUT",
    "ERA_CACHE",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "LATEST_MODERN_VERSION",
    "MODERN_VERSIONS",
    "Era",
    "EraCache",
    "EraSetting",
    "mirror_headers",
]

#: ``"auto"``, ``"legacy"``, ``"modern"``, or an exact revision to pin.
EraSetting = str

HANDSHAKE_VERSIONS: Final[tuple[str, ...]] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
)
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[-1]
MODERN_VERSIONS: Final[tuple[str, ...]] = ("2026-07-28",)
LATEST_MODERN_VERSION: Final = MODERN_VERSIONS[-1]

#: How long ``era="auto"`` waits for the ``server/discover`` probe before deciding
#: "legacy" (the official SDKs use 10 s: a slow-starting server must not be misjudged).
DISCOVER_TIMEOUT: Final = 10.0

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

#: Methods whose ``params`` member is mirrored in the ``Mcp-Name`` header (2026-07-28).
NAME_BEARING_METHODS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}


def parse_setting(era: EraSetting) -> tuple[Literal["auto", "legacy", "modern"], str]:
    """Map an ``era=`` argument to (mode, version to offer or pin).

    Raises:
        ConfigurationError: Unknown era or revision.
    """
    if era == "auto":
        return "auto", LATEST_MODERN_VERSION
    if era == "legacy":
        return "legacy", LATEST_HANDSHAKE_VERSION
    if era == "modern":
        return "modern", LATEST_MODERN_VERSION
    if era in HANDSHAKE_VERSIONS:
        return "legacy", era
    if era in MODERN_VERSIONS:
        return "modern", era
    raise ConfigurationError(
        f"unknown MCP era {era!r}: use 'auto', 'legacy', 'modern' or one of "
        f"{', '.join(HANDSHAKE_VERSIONS + MODERN_VERSIONS)}"
    )


# --- legacy handshake -------------------------------------------------------------------------


def initialize_params(
    version: str, client_info: t.Implementation, capabilities: t.ClientCapabilities
) -> dict[str, Any]:
    """``initialize`` request params offering ``version``."""
    return {
        "protocolVersion": version,
        "capabilities": _codec.unstructure(capabilities),
        "clientInfo": _codec.unstructure(client_info),
    }


def server_info_from_initialize(result: Any) -> t.ServerInfo:
    """Read an ``initialize`` result.

    Raises:
        ProtocolError: The result is malformed.
        UnsupportedProtocolVersion: The server counter-offered a revision we do not speak.
    """
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise ProtocolError("initialize result lacks protocolVersion")
    version = result["protocolVersion"]
    if version not in HANDSHAKE_VERSIONS:
        raise UnsupportedProtocolVersion(
            f"server offered protocol version {version!r}; this client speaks "
            f"{', '.join(HANDSHAKE_VERSIONS)} over the initialize handshake",
            data={"supported": list(HANDSHAKE_VERSIONS), "requested": version},
        )
    return t.ServerInfo(
        protocol_version=version,
        era="legacy",
        capabilities=_codec.structure(
            result.get("capabilities") or {}, t.ServerCapabilities, what="server capabilities"
        ),
        implementation=_implementation(result.get("serverInfo")),
        instructions=_optional_str(result.get("instructions")),
    )


# --- modern envelope -----------------------------------------------------------------------------


def modern_meta(
    version: str,
    client_info: t.Implementation,
    capabilities: t.ClientCapabilities,
    log_level: str | None = None,
) -> dict[str, Any]:
    """The ``_meta`` members every 2026-07-28 request carries."""
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: _codec.unstructure(capabilities),
        META_CLIENT_INFO: _codec.unstructure(client_info),
    }
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def server_info_from_discover(result: Any) -> t.ServerInfo:
    """Read a ``server/discover`` result and pick the newest mutual modern revision.

    Raises:
        ProtocolError: The result is malformed or lists no modern revision we speak.
    """
    if not isinstance(result, dict) or not isinstance(result.get("supportedVersions"), list):
        raise ProtocolError("server/discover result lacks supportedVersions")
    supported = tuple(v for v in result["supportedVersions"] if isinstance(v, str))
    mutual = [v for v in MODERN_VERSIONS if v in supported]
    if not mutual:
        raise ProtocolError(
            f"server/discover lists no modern revision this client speaks: {list(supported)}"
        )
    meta = result.get("_meta")
    implementation = _implementation(meta.get(META_SERVER_INFO)) if isinstance(meta, dict) else None
    return t.ServerInfo(
        protocol_version=mutual[-1],
        era="modern",
        capabilities=_codec.structure(
            result.get("capabilities") or {}, t.ServerCapabilities, what="server capabilities"
        ),
        implementation=implementation,
        instructions=_optional_str(result.get("instructions")),
        supported_versions=supported,
    )


def probe_says_modern(error: RPCError) -> str | None:
    """Judge a ``server/discover`` error. Returns a modern version to re-probe at, or None.

    Only ``-32022`` whose ``data.supported`` names a modern revision we speak is modern
    evidence; every other error means "legacy" (the spec forbids keying on one code).
    """
    verdict, version = judge_unsupported_version(error, ())
    return version if verdict == "retry" else None


ProbeVerdict = Literal["retry", "legacy", "refused"]


def judge_unsupported_version(
    error: RPCError, tried: Collection[str]
) -> tuple[ProbeVerdict, str | None]:
    """Judge an error answer to a modern request (the ``server/discover`` probe).

    ``basic/versioning.mdx``: a recognised modern error (``-32022`` with
    ``data.supported``) identifies a modern server; the client retries with a mutually
    supported version instead of falling back, or surfaces an error if there is none.

    Returns:
        ``("retry", version)``: re-send at ``version`` (the newest modern revision both
        sides speak that was not tried yet); ``("legacy", None)``: not modern evidence,
        or the server also speaks a handshake revision we know (fall back to
        ``initialize``); ``("refused", None)``: a modern server with no revision in
        common (surface the error, never fall back).
    """
    supported = unsupported_version_list(error)
    if supported is None:
        return "legacy", None
    untried = [v for v in MODERN_VERSIONS if v in supported and v not in tried]
    if untried:
        return "retry", untried[-1]
    if any(v in HANDSHAKE_VERSIONS for v in supported) or not any(map(_is_modern, supported)):
        return "legacy", None
    return "refused", None


def _is_modern(version: str) -> bool:
    """A revision of the modern era, known or newer (revisions are ISO dates)."""
    return version in MODERN_VERSIONS or (
        re.fullmatch(r"\d{4}-\d{2}-\d{2}", version) is not None and version >= MODERN_VERSIONS[0]
    )


def unsupported_version_list(error: RPCError) -> list[str] | None:
    """``data.supported`` of a ``-32022`` error, or None for any other error."""
    if error.code != UnsupportedProtocolVersion.code_value or not isinstance(error.data, dict):
        return None
    supported = error.data.get("supported")
    if not isinstance(supported, list):
        return None
    return [v for v in supported if isinstance(v, str)]


def http_status_says_legacy(error: HTTPStatusError) -> bool:
    """Judge an HTTP error answer to the ``server/discover`` probe (no JSON-RPC error in
    the body): any 4xx means the server does not speak the modern era, so fall back to
    ``initialize`` (which surfaces a real 401/403). A 5xx is an outage, not an answer."""
    return 400 <= error.status_code < 500


def envelope_version(params: Any) -> str | None:
    """The modern revision named in a request's ``_meta`` envelope, if any."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, Mapping) else None
    return version if version in MODERN_VERSIONS else None


def handshake_refused_as_modern(error: RPCError) -> bool:
    """True if an ``initialize`` error shows the server locked the connection modern.

    python-sdk servers fix a stdio connection's era on its first message: after a
    ``server/discover`` they refuse ``initialize`` with ``-32022`` or ``-32600``. A client
    that decided "legacy" must then restart the server and handshake first.
    """
    return error.code in (UnsupportedProtocolVersion.code_value, -32600)


# --- HTTP header mirroring (2026-07-28) ----------------------------------------------------------

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")


def encode_header_value(value: str) -> str:
    """A header-safe rendering of ``value``: as-is, or the ``=?base64?...?=`` sentinel for
    values with non-ASCII/control characters, surrounding spaces, or that look like one."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def param_header_map(tool: t.Tool) -> dict[str, str] | None:
    """``{argument: header name}`` from ``x-mcp-header`` annotations of a tool's input schema.

    Returns ``None`` when an annotation is invalid (empty, not a token, duplicate
    case-insensitively, or on a non-primitive / ``number`` property); the spec requires
    HTTP clients to drop such tools.
    """
    props = tool.input_schema.get("properties")
    if not isinstance(props, dict):
        return {}
    found: dict[str, str] = {}
    seen: set[str] = set()
    for arg, schema in props.items():
        if not isinstance(schema, dict) or "x-mcp-header" not in schema:
            continue
        name = schema["x-mcp-header"]
        if not isinstance(name, str) or not _TOKEN.match(name) or name.lower() in seen:
            return None
        if schema.get("type") not in ("string", "integer", "boolean"):
            return None
        seen.add(name.lower())
        found[arg] = name
    return found


def mirror_headers(
    era: Era,
    version: str,
    method: str | None,
    params: Mapping[str, Any] | None,
    param_headers: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, str]:
    """The protocol headers an HTTP transport sends with one message.

    Legacy: ``MCP-Protocol-Version`` only. Modern: also ``Mcp-Method``, ``Mcp-Name`` (for
    ``tools/call``, ``prompts/get``, ``resources/read``) and ``Mcp-Param-<Name>`` for tool
    arguments annotated with ``x-mcp-header`` (``param_headers``: tool -> arg -> header).
    """
    headers = {"MCP-Protocol-Version": version}
    if era != "modern" or method is None:
        return headers
    headers["Mcp-Method"] = method
    key = NAME_BEARING_METHODS.get(method)
    if key is not None and params is not None and isinstance(params.get(key), str):
        headers["Mcp-Name"] = encode_header_value(params[key])
    if method == "tools/call" and params is not None and param_headers:
        mapping = param_headers.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments") or {}
        for arg, header in (mapping or {}).items():
            value = arguments.get(arg)
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, int):
                text = str(value)
            else:
                text = str(value)
            headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers


def _implementation(value: Any) -> t.Implementation | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    return _codec.structure(value, t.Implementation, what="server info")


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
