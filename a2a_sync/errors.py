"""Every exception a2a_sync raises.

Longer than the ~400-line module guideline on purpose: it reads as one table (the tree
below, then one small class per node, in the same order); split, the hierarchy would
scatter over files.

One hierarchy, rooted at :class:`A2ASyncError`. Callers never need to import requests,
urllib3 or cattrs to catch what this package raises: foreign exceptions are translated
at one edge (``a2a_sync._net.translate`` for HTTP, the codecs for structuring) and chained with
``raise ... from exc`` so the original is still on ``__cause__``.

::

    A2ASyncError
    ├── TransportError                 no complete HTTP/stdio exchange happened
    │   ├── ConnectError               the request never reached the peer: safe to retry
    │   │   └── ConnectTimeout         (also a RequestTimeout)
    │   ├── ConnectionLost             the connection broke after the request was sent:
    │   │                              outcome unknown, do not blindly resend
    │   ├── RequestTimeout             (also builtins.TimeoutError)
    │   │   ├── ConnectTimeout
    │   │   ├── ReadTimeout            no byte arrived within the read/idle timeout
    │   │   └── DeadlineExceeded       the per-call wall clock ran out
    │   ├── RedirectRefused            a 3xx was answered; never followed (names Location)
    │   ├── ResponseTooLarge           body or event over the configured cap
    │   ├── StreamInterrupted          a stream dropped and could not be re-established
    │   └── Cancelled                  closed from another thread while blocked
    ├── HTTPStatusError                a non-2xx HTTP answer (.status_code, .retry_after)
    ├── ProtocolError                  the peer broke JSON-RPC / SSE / the schema
    │   ├── SignatureError             agent card signature missing or invalid
    │   └── ToolOutputError            an MCP tool result could not become the asked type
    │       ├── EmptyToolContent
    │       ├── NoTextContent
    │       └── ToolOutputParseError
    ├── RPCError                       a JSON-RPC error object arrived (.code .message .data)
    │   ├── ParseError ... InternalError            -32700 .. -32603
    │   ├── A2AError                                A2A codes -32001 .. -32009
    │   │   ├── TaskNotFound, TaskNotCancelable, PushNotificationNotSupported,
    │   │   │   UnsupportedOperation, ContentTypeNotSupported, InvalidAgentResponse,
    │   │   │   ExtendedAgentCardNotConfigured, ExtensionSupportRequired,
    │   │   │   VersionNotSupported
    │   └── MCPError                                MCP codes (-32002, -32020..-32022, -32042)
    │       ├── ResourceNotFound, HeaderMismatch, MissingRequiredClientCapability,
    │       │   UnsupportedProtocolVersion, URLElicitationRequired
    ├── TaskError                      a task settled in a state that is not success
    │   ├── TaskFailed, TaskCanceled, TaskRejected
    │   ├── InputRequired              the agent asks for input (.task_id, .prompt)
    │   ├── AuthRequired
    │   └── TaskWaitTimeout            (also builtins.TimeoutError; resumable by .task_id)
    ├── AllAgentsFailed                every agent of a resilient client failed (.failures)
    ├── OutcomeUnknown                 a send may or may not have reached the agent
    ├── ConnectionClosed               an MCP connection is closed or its server went away
    │   ├── ServerProcessError         the stdio server failed to start or exited
    │   │                              (.returncode, .stderr_tail)
    │   └── SessionExpired             the MCP HTTP session ended on the server and
    │                                  could not be re-established
    ├── AuthorizationError             OAuth failed (.step names where; the message the fix)
    │   ├── AuthorizationRequired      a person must open .authorization_url (headless)
    │   ├── InsufficientScope          still refused after one step-up (.scopes)
    │   └── TokenEndpointError         the token endpoint refused (.error, e.g. invalid_grant)
    └── ConfigurationError             bad arguments or settings (also ValueError)

Messages never contain credentials: headers are never formatted into messages and
body excerpts are truncated (:data:`EXCERPT_LIMIT`).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, ClassVar

from ._redact import redact_url, scrub

__all__ = [
    "install_hint",
    "EXCERPT_LIMIT",
    "A2ASyncError",
    "TransportError",
    "ConnectError",
    "ConnectionLost",
    "RequestTimeout",
    "ConnectTimeout",
    "ReadTimeout",
    "DeadlineExceeded",
    "RedirectRefused",
    "ResponseTooLarge",
    "StreamInterrupted",
    "Cancelled",
    "HTTPStatusError",
    "ProtocolError",
    "SignatureError",
    "ToolOutputError",
    "EmptyToolContent",
    "NoTextContent",
    "ToolOutputParseError",
    "RPCError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "A2AError",
    "TaskNotFound",
    "TaskNotCancelable",
    "PushNotificationNotSupported",
    "UnsupportedOperation",
    "ContentTypeNotSupported",
    "InvalidAgentResponse",
    "ExtendedAgentCardNotConfigured",
    "ExtensionSupportRequired",
    "VersionNotSupported",
    "MCPError",
    "ResourceNotFound",
    "HeaderMismatch",
    "MissingRequiredClientCapability",
    "UnsupportedProtocolVersion",
    "URLElicitationRequired",
    "TaskError",
    "TaskFailed",
    "TaskCanceled",
    "TaskRejected",
    "InputRequired",
    "AuthRequired",
    "TaskWaitTimeout",
    "AllAgentsFailed",
    "OutcomeUnknown",
    "ConnectionClosed",
    "ServerProcessError",
    "SessionExpired",
    "AuthorizationError",
    "AuthorizationRequired",
    "InsufficientScope",
    "TokenEndpointError",
    "ConfigurationError",
    "excerpt",
]

#: Longest body excerpt an error message carries, in characters.
EXCERPT_LIMIT = 200


def excerpt(body: bytes | str | None, limit: int = EXCERPT_LIMIT) -> str:
    """Return a printable, truncated excerpt of a peer's body for an error message."""
    if body is None:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if len(text) > limit:
        return text[:limit] + f"... ({len(text)} chars)"
    return text


def install_hint(extra: str) -> str:
    """How to install an optional part: the published package, and the same from a source
    checkout (where ``a2a-sync`` is not on PyPI yet, ``pip install 'a2a-sync[...]'`` fails)."""
    return f"pip install 'a2a-sync[{extra}]' (from a source checkout: pip install -e '.[{extra}]')"


class A2ASyncError(Exception):
    """Base of every exception raised by a2a_sync. Never raised directly."""


# --- transport ---------------------------------------------------------------------------


class TransportError(A2ASyncError):
    """No complete exchange with the peer happened.

    Attributes:
        url: The URL (or command, for stdio) involved, when known.
        attempts: How many attempts were made before giving up (1 when not retried).
    """

    #: True when the peer may have received and acted on the request.
    outcome_unknown: ClassVar[bool] = False

    def __init__(self, message: str, *, url: str | None = None, attempts: int = 1) -> None:
        super().__init__(scrub(message, url))  # no userinfo or query values in messages
        self.url = redact_url(url) if url is not None else None
        self.attempts = attempts


class ConnectError(TransportError):
    """The connection could not be made; the request never left. Safe to retry."""


class ConnectionLost(TransportError):
    """The connection broke after the request was sent.

    The peer may have received and applied the request, so a non-idempotent call
    (sending a message) is not resent automatically.
    """

    outcome_unknown = True


class RequestTimeout(TransportError, builtins.TimeoutError):
    """A timeout expired. Also catchable as the builtin :class:`TimeoutError`."""

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        attempts: int = 1,
        timeout: float | None = None,
    ) -> None:
        super().__init__(message, url=url, attempts=attempts)
        self.timeout = timeout


class ConnectTimeout(ConnectError, RequestTimeout):
    """Connecting took longer than the connect timeout. The request never left."""


class ReadTimeout(RequestTimeout):
    """No byte arrived within the read (idle) timeout. The peer may have acted."""

    outcome_unknown = True


class DeadlineExceeded(RequestTimeout):
    """The per-call wall-clock deadline passed (waits, retries and reads included)."""

    outcome_unknown = True


class RedirectRefused(TransportError):
    """The peer answered with a redirect. a2a_sync never follows redirects for RPC and
    stream requests, so credentials cannot be carried to another origin."""

    def __init__(self, message: str, *, url: str | None = None, location: str | None) -> None:
        super().__init__(message, url=url)
        self.location = location


class ResponseTooLarge(TransportError):
    """A response body, SSE event or stdio line exceeded the configured size cap."""

    def __init__(self, message: str, *, url: str | None = None, limit: int) -> None:
        super().__init__(message, url=url)
        self.limit = limit


class StreamInterrupted(TransportError):
    """A stream dropped and the reconnect budget is spent.

    Attributes:
        last_event_id: The last SSE event id received, if any.
        task_id: The A2A task the stream belonged to, if known.
    """

    outcome_unknown = True

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        attempts: int = 1,
        last_event_id: str | None = None,
        task_id: str | None = None,
    ) -> None:
        super().__init__(message, url=url, attempts=attempts)
        self.last_event_id = last_event_id
        self.task_id = task_id


class Cancelled(TransportError):
    """The call or stream was closed (from this or another thread) while it was blocked."""

    outcome_unknown = True


# --- HTTP status ---------------------------------------------------------------------------


class HTTPStatusError(A2ASyncError):
    """The peer answered with a non-success HTTP status.

    Attributes:
        status_code: The HTTP status.
        body: The (capped) response body, raw bytes.
        retry_after: Seconds from a valid ``Retry-After`` header, else ``None``.
        url: The request URL.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        body: bytes = b"",
        url: str | None = None,
        retry_after: float | None = None,
        content_type: str | None = None,
    ) -> None:
        super().__init__(scrub(message, url))  # no userinfo or query values in messages
        self.status_code = status_code
        self.body = body
        self.url = redact_url(url) if url is not None else None
        self.retry_after = retry_after
        self.content_type = content_type


# --- protocol --------------------------------------------------------------------------------


class ProtocolError(A2ASyncError):
    """The peer's answer does not follow the protocol (JSON-RPC, SSE, A2A or MCP schema).

    Attributes:
        excerpt: A truncated excerpt of the offending payload.
        details: Human-readable validation findings, each naming a JSON path
            (``"expected str @ $.status.state"``).
    """

    def __init__(
        self,
        message: str,
        *,
        excerpt: str = "",
        details: Sequence[str] = (),
    ) -> None:
        full = message
        if details:
            full += ": " + "; ".join(details[:5])
        if excerpt:
            full += f" (got: {excerpt})"
        super().__init__(full)
        self.excerpt = excerpt
        self.details = list(details)


class SignatureError(ProtocolError):
    """An agent card signature is missing, malformed or does not verify."""


class ToolOutputError(ProtocolError):
    """An MCP tool result could not be turned into the type the caller asked for."""

    def __init__(self, message: str, *, tool: str, excerpt: str = "") -> None:
        super().__init__(message, excerpt=excerpt)
        self.tool = tool


class EmptyToolContent(ToolOutputError):
    """The tool returned an empty content list and no structured content."""


class NoTextContent(ToolOutputError):
    """The tool returned content, but none of it was text (``.kinds`` lists what came)."""

    def __init__(self, message: str, *, tool: str, kinds: Sequence[str]) -> None:
        super().__init__(message, tool=tool)
        self.kinds = list(kinds)


class ToolOutputParseError(ToolOutputError):
    """The tool's text or structured output could not be parsed into the requested type."""


# --- JSON-RPC errors -------------------------------------------------------------------------


class RPCError(A2ASyncError):
    """The peer answered with a JSON-RPC error object.

    Subclasses carry a class-level :attr:`code`; the table in ``a2a_sync._net.jsonrpc`` maps
    codes to classes in both directions (client raising, server answering).

    Attributes:
        code: The JSON-RPC error code.
        message: The peer's error message.
        data: The peer's ``error.data`` member, if any.
    """

    #: The JSON-RPC code of this class (``None`` for codes without a class of their own).
    code_value: ClassVar[int | None] = None
    #: Message used when the server raises the error without one.
    default_message: ClassVar[str] = "Error"
    #: For errors raised while decoding an incoming request: its id, when it could be read.
    request_id: Any = None

    def __init__(
        self,
        message: str | None = None,
        *,
        code: int | None = None,
        data: Any = None,
    ) -> None:
        resolved = code if code is not None else self.code_value
        if resolved is None:
            raise TypeError(f"{type(self).__name__} needs a code")
        self.code: int = resolved
        self.message: str = message if message is not None else self.default_message
        self.data = data
        super().__init__(f"[{self.code}] {self.message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_rpc_error, (type(self), self.message, self.code, self.data))

    def to_error_object(self) -> dict[str, Any]:
        """Return the JSON-RPC ``error`` member for this error."""
        obj: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            obj["data"] = self.data
        return obj


def _rebuild_rpc_error(cls: type[RPCError], message: str, code: int, data: Any) -> RPCError:
    return cls(message, code=code, data=data)


class ParseError(RPCError):
    """-32700: the peer could not parse the JSON it received."""

    code_value = -32700
    default_message = "Parse error"


class InvalidRequest(RPCError):
    """-32600: the JSON sent is not a valid JSON-RPC request."""

    code_value = -32600
    default_message = "Invalid Request"


class MethodNotFound(RPCError):
    """-32601: the method does not exist or is not available."""

    code_value = -32601
    default_message = "Method not found"


class InvalidParams(RPCError):
    """-32602: invalid method parameters."""

    code_value = -32602
    default_message = "Invalid params"


class InternalError(RPCError):
    """-32603: internal JSON-RPC error on the peer."""

    code_value = -32603
    default_message = "Internal error"


class A2AError(RPCError):
    """An A2A-specific JSON-RPC error (codes -32001 .. -32009)."""


class TaskNotFound(A2AError):
    """-32001: the task does not exist (or is not visible to this caller)."""

    code_value = -32001
    default_message = "Task not found"


class TaskNotCancelable(A2AError):
    """-32002: the task is in a state that cannot be canceled."""

    code_value = -32002
    default_message = "Task cannot be canceled"


class PushNotificationNotSupported(A2AError):
    """-32003: the agent does not support push notifications."""

    code_value = -32003
    default_message = "Push Notification is not supported"


class UnsupportedOperation(A2AError):
    """-32004: the operation is not supported (e.g. streaming not declared, terminal task)."""

    code_value = -32004
    default_message = "This operation is not supported"


class ContentTypeNotSupported(A2AError):
    """-32005: incompatible content types."""

    code_value = -32005
    default_message = "Incompatible content types"


class InvalidAgentResponse(A2AError):
    """-32006: the agent produced an invalid response."""

    code_value = -32006
    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfigured(A2AError):
    """-32007: the agent declares an extended card but has none configured."""

    code_value = -32007
    default_message = "Extended agent card not configured"


class ExtensionSupportRequired(A2AError):
    """-32008: the agent requires an extension the client did not declare."""

    code_value = -32008
    default_message = "Extension support required"


class VersionNotSupported(A2AError):
    """-32009: the requested A2A protocol version is not supported."""

    code_value = -32009
    default_message = "Version not supported"


class MCPError(RPCError):
    """An MCP-specific JSON-RPC error."""


class ResourceNotFound(MCPError):
    """-32002 (MCP 2025-11-25): the resource does not exist."""

    code_value = -32002
    default_message = "Resource not found"


class HeaderMismatch(MCPError):
    """-32020 (MCP 2026-07-28): an HTTP header disagrees with the request body."""

    code_value = -32020
    default_message = "Header mismatch"


class MissingRequiredClientCapability(MCPError):
    """-32021 (MCP 2026-07-28): the request needs a client capability not declared."""

    code_value = -32021
    default_message = "Missing required client capability"


class UnsupportedProtocolVersion(MCPError):
    """-32022 (MCP 2026-07-28): the protocol version is not supported by the server."""

    code_value = -32022
    default_message = "Unsupported protocol version"


class URLElicitationRequired(MCPError):
    """-32042 (MCP 2025-11-25): the user must complete a URL elicitation first."""

    code_value = -32042
    default_message = "URL elicitation required"


# --- task outcomes -----------------------------------------------------------------------------


class TaskError(A2ASyncError):
    """A task settled in a state other than completed.

    Attributes:
        task_id: The task's id.
        task: The last known task snapshot (an ``a2a_sync.types.Task``), if any.
    """

    def __init__(self, message: str, *, task_id: str, task: Any = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.task = task


class TaskFailed(TaskError):
    """The task ended in the ``failed`` state."""


class TaskCanceled(TaskError):
    """The task ended in the ``canceled`` state."""


class TaskRejected(TaskError):
    """The agent rejected the task."""


class InputRequired(TaskError):
    """The agent needs more input to continue.

    Answer with ``client.send_message(text, task_id=err.task_id)`` (or
    ``err.reply(client, text)``).

    Attributes:
        prompt: The agent's question, as text (empty when the agent sent none).
    """

    def __init__(self, message: str, *, task_id: str, prompt: str = "", task: Any = None) -> None:
        super().__init__(message, task_id=task_id, task=task)
        self.prompt = prompt


class AuthRequired(TaskError):
    """The agent needs the caller to authenticate (out of band) before it continues."""


class TaskWaitTimeout(TaskError, builtins.TimeoutError):
    """Waiting for a task timed out. The task still exists: wait again with ``.task_id``."""

    def __init__(
        self, message: str, *, task_id: str, timeout: float | None = None, task: Any = None
    ) -> None:
        super().__init__(message, task_id=task_id, task=task)
        self.timeout = timeout


# --- resilience ---------------------------------------------------------------------------------


class AllAgentsFailed(A2ASyncError):
    """Every agent of a resilient client failed.

    Attributes:
        failures: ``(agent_url, exception)`` pairs in the order the agents were tried.
    """

    def __init__(self, failures: Sequence[tuple[str, BaseException]]) -> None:
        self.failures = list(failures)
        lines = [
            f"  {redact_url(url)}: {type(exc).__name__}: {scrub(str(exc), url)}"
            for url, exc in self.failures
        ]
        super().__init__(
            f"all {len(self.failures)} agent(s) failed, in order tried:\n" + "\n".join(lines)
        )


class OutcomeUnknown(A2ASyncError):
    """A message send failed after the request may have reached the agent.

    The message was not resent (resending could run the task twice). Resend it with the
    same ``message_id`` only if the agent deduplicates, or look the task up.

    Attributes:
        message_id: The id of the message whose outcome is unknown.
    """

    def __init__(self, message: str, *, message_id: str) -> None:
        super().__init__(message)
        self.message_id = message_id


# --- MCP connection ---------------------------------------------------------------------------


class ConnectionClosed(A2ASyncError):
    """The MCP connection is closed, or the server went away while calls were pending."""


class ServerProcessError(ConnectionClosed):
    """The MCP stdio server could not be started or exited.

    Attributes:
        returncode: The exit status (negative: killed by that signal), or ``None``.
        stderr_tail: The last lines the server wrote to stderr, if captured.
    """

    def __init__(
        self, message: str, *, returncode: int | None = None, stderr_tail: str = ""
    ) -> None:
        full = message
        if returncode is not None:
            full += f" (exit status {returncode})"
        if stderr_tail:
            full += f"; stderr tail:\n{stderr_tail}"
        super().__init__(full)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class SessionExpired(ConnectionClosed):
    """The server no longer knows the MCP HTTP session (404, or a 400 naming the session)
    and a fresh session could not be initialized, or the fresh one expired at once."""


# --- authorization (OAuth) --------------------------------------------------------------------


class AuthorizationError(A2ASyncError):
    """Obtaining or using an OAuth token failed. Never carries a token or a secret.

    Attributes:
        step: Where it failed: ``"discovery"``, ``"registration"``, ``"authorization"``,
            ``"token"``, ``"refresh"`` or ``"resource"`` (the server refused the token).
    """

    def __init__(self, message: str, *, step: str) -> None:
        super().__init__(message)
        self.step = step

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (type(self), str(self), self.__dict__))


def _rebuild_error(cls: type[A2ASyncError], message: str, state: dict[str, Any]) -> A2ASyncError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class AuthorizationRequired(AuthorizationError):
    """A person must approve access in a browser, and no browser step is possible here
    (headless): open ``authorization_url``, or log in first with a browser-capable handler.
    The URL holds no secret (PKCE keeps the verifier local)."""

    def __init__(self, message: str, *, authorization_url: str) -> None:
        super().__init__(message, step="authorization")
        self.authorization_url = authorization_url


class InsufficientScope(AuthorizationError):
    """The resource still refused with ``insufficient_scope`` after one step-up."""

    def __init__(self, message: str, *, scopes: Sequence[str] = ()) -> None:
        super().__init__(message, step="resource")
        self.scopes = tuple(scopes)


class TokenEndpointError(AuthorizationError):
    """The token endpoint refused a request; ``error`` is its OAuth error code
    (``invalid_grant`` for an expired or revoked refresh token or code)."""

    def __init__(self, message: str, *, step: str, error: str | None) -> None:
        super().__init__(message, step=step)
        self.error = error


class ConfigurationError(A2ASyncError, ValueError):
    """An argument or setting is invalid. Also a :class:`ValueError`."""
