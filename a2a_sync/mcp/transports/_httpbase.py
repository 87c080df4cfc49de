"""What the two MCP HTTP transports share: the endpoint and its credentials, protocol
headers, reading JSON-RPC messages from an event stream, and the worker threads.

Nothing here logs or formats a header value: the ``Authorization`` credential and the
``Mcp-Session-Id`` never reach a log line, an exception message or a ``repr``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..._constants import DEFAULT_CONNECT_TIMEOUT
from ..._net.http import StreamResponse
from ..._net.secure import carries_credentials, check_credentials_destination
from ..._net.sse_decoder import ServerSentEvent, SSEDecoder
from ..._redact import redact_url
from ...auth.hook import ChallengeAuth
from ...errors import (
    Cancelled,
    ConfigurationError,
    HTTPStatusError,
    ProtocolError,
    TransportError,
    excerpt,
)
from ...policies import parse_retry_after

__all__ = [
    "ACK_TIMEOUT",
    "CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "Endpoint",
]

logger = logging.getLogger(__name__)

#: Longest silence on a response (waiting for its headers, or between bytes of its event
#: stream) before it counts as dead. Tools may think for minutes without a word; the
#: official clients allow 300 s. The caller's own per-request timeout usually ends first.
DEFAULT_READ_TIMEOUT: Final = 300.0
#: Connecting to the server (the shared a2a_sync default).
CONNECT_TIMEOUT: Final = DEFAULT_CONNECT_TIMEOUT
#: Whole exchange for a POST that only needs an acknowledgement (a notification, a reply
#: to a server request): servers answer 202 at once.
ACK_TIMEOUT: Final = 30.0
#: Whole ``DELETE`` of the session on close: closing must stay prompt, the server
#: reclaims forgotten sessions anyway.
DELETE_TIMEOUT: Final = 2.0
#: How long ``close()`` waits for each transport thread.
THREAD_JOIN_TIMEOUT: Final = 2.0
#: An idle worker thread waits this long for the next exchange before it exits.
WORKER_IDLE_TIMEOUT: Final = 30.0
#: Largest error body read to explain a refused request.
ERROR_BODY_LIMIT: Final = 64 * 1024

SESSION_HEADER: Final = "Mcp-Session-Id"
PROTOCOL_HEADER: Final = "MCP-Protocol-Version"
LAST_EVENT_ID_HEADER: Final = "Last-Event-ID"
JSON_TYPE: Final = "application/json"
EVENT_STREAM_TYPE: Final = "text/event-stream"
#: What a Streamable HTTP POST (or DELETE) accepts: one JSON body or an event stream.
ACCEPT_BOTH: Final = f"{JSON_TYPE}, {EVENT_STREAM_TYPE}"

#: Headers the transports set themselves; ``headers=`` may not override them.
_RESERVED_HEADERS: Final = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "content-type",
        "host",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: MCP session ids: visible ASCII only (2025-11-25 transports, "Session Management").
_SESSION_ID: Final = re.compile(r"^[\x21-\x7e]+$")
_SESSION_ID_MAX: Final = 1024
#: First bytes of a JSON-RPC body (an object, or a batch): ASCII, so never a BOM's.
_JSON_OPENERS: Final = frozenset(b"{[")

#: A bearer token, a callable returning the current one, or an authorization that answers
#: 401/403 challenges (``a2a_sync.auth.oauth.OAuth``).
AuthSource = str | Callable[[], str] | ChallengeAuth


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    return scheme, host.lower(), port or (443 if scheme == "https" else 80)


class Endpoint:
    """An MCP HTTP endpoint: its URL, the headers every request carries, the credential.

    Immutable after construction; safe to share between threads.

    Args:
        url: ``http(s)://host[:port]/path[?query]``; no userinfo, no fragment.
        headers: Extra headers for every request (an API key, a tenant id).
        auth: A bearer token, or a callable returning the current one (called per
            request); sent as ``Authorization: Bearer <token>``. Or a
            :class:`~a2a_sync.auth.ChallengeAuth` (OAuth), asked for the header per
            request and told about 401/403 refusals (:meth:`challenged`).
        insecure_credentials: Allow a token (or an ``Authorization``, ``Cookie`` or
            ``X-API-Key`` header) over plain HTTP to a host that is not loopback.

    Raises:
        ConfigurationError: Bad URL, a header the transport owns, a header that is not
            valid HTTP, a credential given twice, or a credential for a plain-HTTP host
            that is not loopback (without ``insecure_credentials``).
    """

    __slots__ = (
        "_auth",
        "_base",
        "_challenge_auth",
        "_post_base",
        "era_key",
        "name",
        "origin",
        "url",
    )

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthSource | None = None,
        insecure_credentials: bool = False,
    ) -> None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"an MCP HTTP endpoint must be an http(s) URL, not {redact_url(url)!r}"
            )
        if parts.username is not None or parts.password is not None:
            raise ConfigurationError(
                "the MCP endpoint URL contains credentials; pass them with auth= or headers="
            )
        if parts.fragment:
            raise ConfigurationError("the MCP endpoint URL must not have a #fragment")
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"invalid port in {redact_url(url)!r}") from exc
        self.url = url
        self.origin = _origin(scheme, parts.hostname, port)
        path = parts.path or "/"
        #: For messages and logs: the URL without its query (which may carry keys).
        self.name = urlunsplit((scheme, parts.netloc, path, "", ""))
        #: The era cache key: one verdict per endpoint (two servers may share an origin).
        self.era_key: Hashable = ("http", *self.origin, path)
        base: dict[str, str] = {}
        for name, value in (headers or {}).items():
            if not isinstance(name, str) or not _TOKEN.match(name):
                raise ConfigurationError(f"invalid header name {name!r}")
            lowered = name.lower()
            if lowered in _RESERVED_HEADERS or lowered.startswith("mcp-param-"):
                raise ConfigurationError(f"header {name!r} is set by the MCP transport")
            if lowered == "authorization" and auth is not None:
                raise ConfigurationError(
                    "give the credential once: auth= or an Authorization header"
                )
            if not isinstance(value, str) or "\r" in value or "\n" in value:
                raise ConfigurationError(f"invalid value for header {name!r}")
            base[name] = value
        self._base = base
        if carries_credentials(base) or not isinstance(auth, ChallengeAuth | None):
            check_credentials_destination(  # OAuth (ChallengeAuth) checks its own
                url, what="MCP endpoint", allow_insecure=insecure_credentials
            )
        self._auth = auth
        self._challenge_auth = auth if isinstance(auth, ChallengeAuth) else None
        if self._challenge_auth is not None:
            self._auth = None
        elif isinstance(auth, str):
            base["Authorization"] = _bearer(auth)
            self._auth = None
        #: What every POST carries before its credential is asked for (made once).
        self._post_base = {
            "Accept": ACCEPT_BOTH,
            "Accept-Encoding": "identity",
            **base,
            "Content-Type": JSON_TYPE,
        }

    def headers(self, accept: str) -> dict[str, str]:
        """A fresh header dict for one request: ``Accept``, the extra headers and the
        credential (the token callable is asked now).

        Raises:
            ConfigurationError: The token callable returned an empty or multi-line token.
        """
        return self._with_credential(
            {"Accept": accept, "Accept-Encoding": "identity", **self._base}
        )

    def post_headers(self) -> dict[str, str]:
        """:meth:`headers` for a POST, plus ``Content-Type``; from a template made once."""
        if self._auth is None and self._challenge_auth is None:
            return self._post_base.copy()
        return self._with_credential(self._post_base.copy())

    def _with_credential(self, headers: dict[str, str]) -> dict[str, str]:
        if self._auth is not None:
            headers["Authorization"] = _bearer(self._auth())  # type: ignore[operator]
        elif self._challenge_auth is not None:
            value = self._challenge_auth.authorization(self.url)
            if value is not None:
                headers["Authorization"] = value
        return headers

    def awaits_login(self) -> bool:
        """True when a :class:`~a2a_sync.auth.ChallengeAuth` holds no token for this
        endpoint yet (the first request would be refused and start a login)."""
        auth = self._challenge_auth
        return auth is not None and auth.authorization(self.url) is None

    def challenged(
        self, status: int, headers: Mapping[str, str], sent: str | None, attempt: int
    ) -> bool:
        """Whether to send a request refused with 401/403 again: asks the
        :class:`~a2a_sync.auth.ChallengeAuth` (which may obtain or step up a token, or
        raise :class:`~a2a_sync.errors.AuthorizationError`); False without one."""
        if self._challenge_auth is None or status not in (401, 403):
            return False
        challenge = headers.get("WWW-Authenticate")
        return self._challenge_auth.challenged(self.url, status, challenge, sent, attempt)

    def same_origin(self, url: str) -> bool:
        """True if ``url`` is on this endpoint's scheme, host and port."""
        parts = urlsplit(url)
        if not parts.hostname:
            return False
        try:
            return _origin(parts.scheme.lower(), parts.hostname, parts.port) == self.origin
        except ValueError:
            return False

    def redact(self, error: TransportError) -> TransportError:
        """``error`` with the endpoint URL shown without its query (see :func:`redacted`)."""
        return redacted(error, self.url, self.name)

    def __repr__(self) -> str:
        return f"<Endpoint {self.name}>"


def _bearer(token: str) -> str:
    if not isinstance(token, str) or not token or "\r" in token or "\n" in token:
        raise ConfigurationError("bearer token is empty or contains a line break")
    return f"Bearer {token}"


# --- answers --------------------------------------------------------------------------------


def check_session_id(value: str) -> str:
    """Validate a server-assigned ``Mcp-Session-Id`` (visible ASCII 0x21-0x7E).

    Raises:
        ProtocolError: Empty, too long, or with spaces/control characters (a CR/LF would
            let the server inject headers into our later requests). The value is not
            quoted in the message.
    """
    if len(value) > _SESSION_ID_MAX or not _SESSION_ID.match(value):
        raise ProtocolError(
            "the server sent an Mcp-Session-Id that is not visible ASCII (0x21-0x7E)"
        )
    return value


def error_object(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC ``error`` member of a refusal body, if it is one."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(decoded, dict):
        error = decoded.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            return error
    return None


def session_unknown(status: int, body: bytes) -> bool:
    """Whether a refusal of a request that carried our session id means "no such
    session": 404 (the spec), or a 400 whose JSON-RPC error names the session
    (TypeScript SDK servers such as server-everything: "No valid session ID provided")."""
    if status == 404:
        return True
    if status != 400:
        return False
    error = error_object(body)
    message = error.get("message") if error is not None else None
    return isinstance(message, str) and "session" in message.lower()


def status_error(
    method: str,
    url: str,
    status: int,
    body: bytes,
    *,
    headers: Mapping[str, str],
    content_type: str,
) -> HTTPStatusError:
    """An :class:`HTTPStatusError` for a refused request (a 401 names its challenge)."""
    message = f"{method} {url} answered HTTP {status}"
    challenge = headers.get("WWW-Authenticate") if status in (401, 403) else None
    if challenge:
        message += f" (WWW-Authenticate: {excerpt(challenge)})"
    if body:
        message += f": {excerpt(body)}"
    return HTTPStatusError(
        message,
        status_code=status,
        body=body,
        url=url,
        retry_after=parse_retry_after(headers.get("Retry-After")),
        content_type=content_type,
    )


def decode_messages(data: bytes | str, source: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a body or event (one object, or a batch of them).

    Anything else is logged and dropped, like a stdio line that is not JSON.
    """
    try:
        if type(data) is bytes and len(data) > 1 and data[0] in _JSON_OPENERS and data[1]:
            # What json.loads does with bytes it would detect as UTF-8 (no BOM, no NUL in
            # the first two bytes), without running the detection.
            decoded = json.loads(data.decode("utf-8", "surrogatepass"))
        else:
            decoded = json.loads(data)
    except (ValueError, RecursionError):
        logger.warning("%s sent data that is not JSON: %s", source, excerpt(data))
        return []
    if type(decoded) is dict:
        return [decoded]
    if isinstance(decoded, list) and all(type(item) is dict for item in decoded):
        return decoded
    logger.warning("%s sent JSON that is not a JSON-RPC message: %s", source, excerpt(data))
    return []


def pump(
    response: StreamResponse,
    decoder: SSEDecoder,
    on_event: Callable[[ServerSentEvent], bool],
) -> TransportError | None:
    """Read an event stream on this thread, handing each event to ``on_event`` as soon
    as its bytes arrive, until the body ends or ``on_event`` returns True.

    Returns:
        ``None`` when the body ended or ``on_event`` asked to stop; the error when the
        read broke off (connection lost, idle timeout, an event over the size cap).

    Raises:
        Cancelled: The response was aborted from another thread (abandon, close).
    """
    try:
        while True:
            data = response.read1()
            if not data:
                break
            for event in decoder.feed(data):
                if on_event(event):
                    return None
    except Cancelled:
        raise
    except TransportError as exc:
        return exc
    finally:
        decoder.finish()
    return None


def redacted(error: TransportError, secret: str, shown: str) -> TransportError:
    """A copy of ``error`` whose message and ``url`` show ``shown`` instead of ``secret``
    (a URL whose query carries a session id or key). Raise it ``from None``: the
    original, which names the secret URL, must not ride along as ``__cause__``."""
    if secret == shown or (secret not in str(error) and error.url != secret):
        return error
    clone = BaseException.__new__(type(error))
    clone.__dict__.update(error.__dict__)
    clone.args = (str(error).replace(secret, shown),)
    clone.url = shown
    return clone
