"""Agent card models (re-exported by :mod:`a2a_sync.types`; import them from there).

The card is the one A2A document whose layout differs most between 0.3 and 1.0; the
model follows 1.0 (``supported_interfaces``, ``capabilities.extended_agent_card``,
``security_requirements``) and :func:`a2a_sync.a2a.codec.load_card` maps 0.3 cards onto it.
"""

from __future__ import annotations

import html
import re
from typing import Any, TypeAlias

import attrs

__all__ = [
    "DEFAULT_PROTOCOL_BINDING",
    "DEFAULT_PROTOCOL_VERSION",
    "AgentInterface",
    "AgentProvider",
    "AgentExtension",
    "AgentCapabilities",
    "AgentSkill",
    "AgentCardSignature",
    "OAuthFlow",
    "OAuthFlows",
    "APIKeySecurityScheme",
    "HTTPAuthSecurityScheme",
    "OAuth2SecurityScheme",
    "OpenIdConnectSecurityScheme",
    "MutualTLSSecurityScheme",
    "SecurityScheme",
    "AgentCard",
]

#: Binding assumed for an interface that names none (0.3's ``preferredTransport`` default).
DEFAULT_PROTOCOL_BINDING = "JSONRPC"
#: Version assumed for an interface that names none (what a2a-sdk's client assumes too).
DEFAULT_PROTOCOL_VERSION = "1.0"
#: Longest agent-provided text a ``_repr_markdown_`` shows before truncating.
MARKDOWN_TEXT_LIMIT = 500


#: Characters with a meaning in (CommonMark) Markdown, backslash-escaped in agent text so
#: that ``![](http://tracker/x.png)`` or ``[click](http://phish)`` renders as plain text
#: instead of loading a remote image or showing a live link.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>:])")


def markdown_text(text: str) -> str:
    """Agent-provided text made safe and short for a notebook's Markdown renderer:
    HTML escaped, Markdown syntax neutralised, cut when long."""
    if len(text) > MARKDOWN_TEXT_LIMIT:
        text = text[:MARKDOWN_TEXT_LIMIT] + " …"
    return _MARKDOWN_SPECIALS.sub(r"\\\1", html.escape(text, quote=False))


# --- agent card -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AgentInterface:
    """One endpoint of an agent: URL + binding + protocol version, in preference order.

    Attributes:
        url: Endpoint URL.
        protocol_binding: ``"JSONRPC"``, ``"HTTP+JSON"``, ``"GRPC"`` or a custom URI.
        protocol_version: A2A version spoken there, e.g. ``"1.0"`` or ``"0.3.0"``.
        tenant: 1.0 multi-tenancy selector to send with every request.
    """

    url: str
    protocol_binding: str = DEFAULT_PROTOCOL_BINDING
    protocol_version: str = DEFAULT_PROTOCOL_VERSION
    tenant: str | None = None

    @property
    def protocol_revision(self) -> str:
        """``protocol_version`` as ``"major.minor"`` (``"0.3.0"`` -> ``"0.3"``)."""
        major, _, rest = self.protocol_version.strip().partition(".")
        minor = rest.partition(".")[0]
        return f"{major}.{minor or '0'}"


@attrs.frozen(kw_only=True)
class AgentProvider:
    """The organization running the agent."""

    organization: str
    url: str = ""


@attrs.frozen(kw_only=True)
class AgentExtension:
    """An A2A extension the agent supports (``required``: clients must use it)."""

    uri: str
    description: str | None = None
    required: bool = False
    params: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class AgentCapabilities:
    """Optional protocol features. ``None`` means "not declared" (treated as unsupported).

    Attributes:
        streaming: Streaming (SSE) methods are available.
        push_notifications: Webhook push notifications are available.
        extended_agent_card: An authenticated extended card can be fetched
            (0.3: top-level ``supportsAuthenticatedExtendedCard``).
        state_transition_history: 0.3 only; dropped from 1.0 cards.
        extensions: Extensions supported.
    """

    streaming: bool | None = None
    push_notifications: bool | None = None
    extended_agent_card: bool | None = None
    state_transition_history: bool | None = None
    extensions: list[AgentExtension] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class AgentSkill:
    """Something the agent can do.

    Attributes:
        id: Unique skill id.
        name: Human-readable name.
        description: What it does.
        tags: Keywords.
        examples: Example prompts.
        input_modes: MIME types accepted, overriding the card's defaults.
        output_modes: MIME types produced, overriding the card's defaults.
        security_requirements: Alternatives (OR) of scheme-name -> scopes maps (AND).
    """

    id: str
    name: str
    description: str = ""
    tags: list[str] = attrs.field(factory=list)
    examples: list[str] = attrs.field(factory=list)
    input_modes: list[str] = attrs.field(factory=list)
    output_modes: list[str] = attrs.field(factory=list)
    security_requirements: list[dict[str, list[str]]] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class AgentCardSignature:
    """A detached JWS over the card (see :mod:`a2a_sync.signing`).

    Attributes:
        protected: base64url of the protected header JSON.
        signature: base64url of the signature.
        header: Unprotected header values.
    """

    protected: str
    signature: str
    header: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class OAuthFlow:
    """One OAuth 2.0 flow; which URLs are set depends on the flow type."""

    scopes: dict[str, str] = attrs.field(factory=dict)
    authorization_url: str | None = None
    token_url: str | None = None
    device_authorization_url: str | None = None
    refresh_url: str | None = None
    pkce_required: bool = False


@attrs.frozen(kw_only=True)
class OAuthFlows:
    """The OAuth 2.0 flows an agent supports.

    0.3 cards may list several flows; a 1.0 card carries one (written in this order:
    authorization code, client credentials, device code, implicit, password).
    ``implicit`` and ``password`` are deprecated in 1.0.
    """

    authorization_code: OAuthFlow | None = None
    client_credentials: OAuthFlow | None = None
    device_code: OAuthFlow | None = None
    implicit: OAuthFlow | None = None
    password: OAuthFlow | None = None


@attrs.frozen(kw_only=True)
class APIKeySecurityScheme:
    """An API key sent in a header, query parameter or cookie called ``name``."""

    name: str
    location: str = "header"
    description: str | None = None


@attrs.frozen(kw_only=True)
class HTTPAuthSecurityScheme:
    """HTTP authentication (RFC 9110), e.g. ``scheme="Bearer"``."""

    scheme: str
    bearer_format: str | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class OAuth2SecurityScheme:
    """OAuth 2.0, with the supported flows and optional RFC 8414 metadata URL."""

    flows: OAuthFlows
    oauth2_metadata_url: str | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class OpenIdConnectSecurityScheme:
    """OpenID Connect discovery."""

    open_id_connect_url: str
    description: str | None = None


@attrs.frozen(kw_only=True)
class MutualTLSSecurityScheme:
    """Mutual TLS client certificates."""

    description: str | None = None


#: One way of authenticating to the agent.
SecurityScheme: TypeAlias = (
    APIKeySecurityScheme
    | HTTPAuthSecurityScheme
    | OAuth2SecurityScheme
    | OpenIdConnectSecurityScheme
    | MutualTLSSecurityScheme
)


@attrs.frozen(kw_only=True)
class AgentCard:
    """An agent's self-description, served at ``/.well-known/agent-card.json``.

    One model for 0.3, 1.0 and the merged dual-version cards a2a-sdk serves; a 0.3 card's
    ``url``/``preferredTransport``/``additionalInterfaces`` become
    :attr:`supported_interfaces` with the card's ``protocolVersion``.

    Attributes:
        name: Agent name.
        description: What the agent does.
        version: The agent's own version (not the protocol's).
        supported_interfaces: Endpoints in preference order.
        provider: Who runs it.
        capabilities: Optional features.
        skills: What it can do.
        default_input_modes: MIME types accepted unless a skill says otherwise.
        default_output_modes: MIME types produced unless a skill says otherwise.
        security_schemes: Named ways to authenticate.
        security_requirements: Alternatives (OR) of scheme-name -> scopes maps (AND).
        signatures: JWS signatures over the card.
        documentation_url: Human documentation.
        icon_url: Icon.
    """

    name: str
    description: str = ""
    version: str = ""
    supported_interfaces: list[AgentInterface] = attrs.field(factory=list)
    provider: AgentProvider | None = None
    capabilities: AgentCapabilities = attrs.field(factory=AgentCapabilities)
    skills: list[AgentSkill] = attrs.field(factory=list)
    default_input_modes: list[str] = attrs.field(factory=list)
    default_output_modes: list[str] = attrs.field(factory=list)
    security_schemes: dict[str, SecurityScheme] = attrs.field(factory=dict)
    security_requirements: list[dict[str, list[str]]] = attrs.field(factory=list)
    signatures: list[AgentCardSignature] = attrs.field(factory=list)
    documentation_url: str | None = None
    icon_url: str | None = None

    def _repr_markdown_(self) -> str:
        lines = [f"### {markdown_text(self.name)} {markdown_text(self.version)}".rstrip()]
        if self.description:
            lines += ["", markdown_text(self.description)]
        lines.append("")
        for iface in self.supported_interfaces:
            lines.append(
                f"- {markdown_text(iface.protocol_binding)} "
                f"{markdown_text(iface.protocol_version)} — {markdown_text(iface.url)}"
            )
        if self.skills:
            names = ", ".join(markdown_text(s.name) for s in self.skills)
            lines.append(f"- skills: {names}")
        features = [
            name
            for name, flag in (
                ("streaming", self.capabilities.streaming),
                ("push notifications", self.capabilities.push_notifications),
                ("extended card", self.capabilities.extended_agent_card),
            )
            if flag
        ]
        if features:
            lines.append(f"- capabilities: {', '.join(features)}")
        if self.security_schemes:
            lines.append(f"- security: {', '.join(map(markdown_text, self.security_schemes))}")
        return "\n".join(lines)
