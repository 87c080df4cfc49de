"""One request over Streamable HTTP, run on a worker thread: its POST, what the answer
means, and what a failed POST allows.

A 2xx answer carries the response: one JSON object, or an event stream whose messages
reach the session as they arrive (legacy era: a stream that breaks before the answer is
resumed, see :func:`~._streams.resume`). A JSON-RPC error at a 4xx/5xx status is the
request's answer too. Otherwise the POST ends in a verdict, and :meth:`RequestPoster.run`
acts on it:

* the server forgot the session (legacy: a 404, or a 400 naming the session, to a request
  that carried the session id): renew the session once and send the request again, which
  the server never ran;
* a modern response stream broke before the answer: re-issue the request once with a new
  id if it cannot change server state (:data:`REISSUABLE`), else fail with
  ``ConnectionLost`` (the tool may have run);
* ``initialize`` was refused with 400/404/405: hand it to the HTTP+SSE fallback.

Any other refusal raises :class:`~a2a_sync.errors.HTTPStatusError`.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any, Final

from ..._net import jsonrpc as _jsonrpc
from ..._net.http import HTTPTransport, StreamResponse
from ...errors import (
    Cancelled,
    ConnectionLost,
    ProtocolError,
    SessionExpired,
    TransportError,
    excerpt,
)
from ...policies import Timeout
from . import Outgoing
from ._httpbase import (
    ACCEPT_BOTH,
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    JSON_TYPE,
    SESSION_HEADER,
    Endpoint,
    decode_messages,
    error_object,
    session_unknown,
    status_error,
)
from ._session import LegacySession
from ._streams import Exchange, Link, resume

__all__ = ["REISSUABLE", "RequestPoster", "log_in_first", "new_id", "post_ack"]

logger = logging.getLogger(__name__)

#: Requests a broken modern stream may re-issue: they read, nothing changes on the server.
REISSUABLE: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    }
)
# What became of one POST of a request.
_DONE: Final = "done"
_EXPIRED: Final = "expired"
_LOST: Final = "lost"
_FALLBACK: Final = "fallback"
_AUTHORIZED: Final = "authorized"  # refused with 401/403; the auth has a new token

_internal_ids = itertools.count(1)


def new_id() -> str:
    """A JSON-RPC id for requests the transport sends itself (re-issued, replayed)."""
    return f"a2a-sync-{next(_internal_ids)}"


class RequestPoster:
    """POSTs the requests of one Streamable HTTP transport and reads their answers.

    Holds no state of its own: any number of worker threads run exchanges through it at
    once. Each exchange is owned by the thread running it.

    Args:
        link: The transport's endpoint, HTTP pool and stream settings.
        session: The transport's legacy-era session (its id goes on legacy requests).
        renew: Initializes a new session after the server forgot the one ``exchange``
            was sent in; False when none could be (see :meth:`LegacySession.renew
            <._session.LegacySession.renew>`).
        fall_back: Takes over an ``initialize`` refused with 400/404/405 (the HTTP+SSE
            fallback), or ``None`` to treat the refusal like any other.
    """

    __slots__ = ("_fall_back", "_link", "_renew", "_session")

    def __init__(
        self,
        link: Link,
        session: LegacySession,
        *,
        renew: Callable[[Exchange], bool],
        fall_back: Callable[[Exchange], None] | None,
    ) -> None:
        self._link = link
        self._session = session
        self._renew = renew
        self._fall_back = fall_back

    def run(self, exchange: Exchange) -> None:
        """POST the request until it is answered (or stopped), renewing the session or
        re-issuing the request once where the verdict allows.

        Raises:
            SessionExpired: The server forgot the session and no new one could be
                initialized (or it forgot the new one too).
            ConnectionLost: The response stream broke before the answer and the request
                cannot be re-issued.
            A2ASyncError: Anything else the POST, its answer or the fallback raised.
        """
        link = self._link
        renewed = reissued = False
        refusals = 0
        while True:
            verdict = self._post(exchange, refusals + 1)
            if verdict == _DONE:
                return
            if verdict == _AUTHORIZED:
                refusals += 1  # the ChallengeAuth bounds these and raises when it gives up
                continue
            if verdict == _EXPIRED:
                if renewed or exchange.internal or not self._renew(exchange):
                    again = " (again, after a new one was initialized)" if renewed else ""
                    raise SessionExpired(f"{link.name} no longer knows the MCP session{again}")
                renewed = True  # the server never ran the refused request: send it again
            elif verdict == _LOST:
                failure = exchange.failure
                detail = f": {failure}" if failure is not None else ""
                if reissued or exchange.method not in REISSUABLE:
                    raise ConnectionLost(
                        f"the response stream of {exchange.method} from {link.name} broke "
                        f"before the answer; the request is lost{detail}",
                        url=link.endpoint.name,
                    )
                logger.info("%s: re-issuing %s with a new id%s", link.name, exchange.method, detail)
                reissued = True
                exchange.reissue(new_id())
            else:
                assert self._fall_back is not None
                self._fall_back(exchange)
                return

    def _post(self, exchange: Exchange, attempt: int = 1) -> str:
        link = self._link
        headers = link.endpoint.post_headers()
        headers.update(exchange.context.headers)
        if exchange.internal:  # a replay: this thread is renewing the session
            state = self._session
            session = None if exchange.method == "initialize" else state.id
            exchange.generation = state.generation
        else:
            session, exchange.generation = self._session.current()
        if session is not None and not exchange.modern:
            headers[SESSION_HEADER] = session
        try:
            with exchange.sending:
                response = link.http.open_stream(
                    "POST",
                    link.endpoint.url,
                    body=exchange.body,
                    headers=headers,
                    timeout=link.open_timeout,
                    idle_timeout=link.read_timeout,
                    on_start=exchange.started,
                )
        except Cancelled:
            if exchange.stopped:
                return _DONE
            raise
        with response:
            if response.status in (401, 403) and link.endpoint.challenged(
                response.status, response.headers, headers.get("Authorization"), attempt
            ):
                return _AUTHORIZED
            return self._answer(exchange, response, session is not None)

    def _answer(self, exchange: Exchange, response: StreamResponse, sent_session: bool) -> str:
        link = self._link
        status = response.status
        content_type = response.content_type
        if 200 <= status < 300 and status not in (202, 204):
            if exchange.method == "initialize":
                self._session.adopt(response.headers.get(SESSION_HEADER))
            if content_type == EVENT_STREAM_TYPE:
                if exchange.read(response, link.name):
                    return _DONE
                if exchange.modern:
                    return _LOST
                resume(
                    link,
                    exchange,
                    lambda: self._session.get_headers(link.endpoint, exchange.context),
                )
                return _DONE
            if content_type == JSON_TYPE:
                body = response.read_body(link.http.max_response_bytes)
                for message in decode_messages(body, link.name):
                    exchange.take(message)
                if not exchange.answered:
                    raise ProtocolError(
                        f"{link.name} answered {exchange.method} with JSON that is not its "
                        "response",
                        excerpt=excerpt(body),
                    )
                return _DONE
            body = response.read_body(ERROR_BODY_LIMIT)
            raise ProtocolError(
                f"{link.name} answered {exchange.method} with {content_type or 'no Content-Type'}",
                excerpt=excerpt(body),
            )
        if status in (202, 204):
            raise ProtocolError(
                f"{link.name} accepted {exchange.method} (HTTP {status}) but sent no response"
            )
        body = response.read_body(ERROR_BODY_LIMIT)
        if sent_session and session_unknown(status, body):
            return _EXPIRED
        error = error_object(body)
        refused = status_error(
            "POST",
            link.endpoint.name,
            status,
            body,
            headers=response.headers,
            content_type=content_type,
        )
        fallback = self._fall_back is not None and not exchange.internal
        if fallback and exchange.method == "initialize" and status in (400, 404, 405):
            exchange.refusal = error or refused
            return _FALLBACK
        if error is None:
            raise refused
        # A JSON-RPC error at a 4xx/5xx status (modern servers map codes to statuses; the
        # id may be null when the server could not read ours): the request's answer.
        exchange.take({"jsonrpc": "2.0", "id": exchange.wire_id, "error": error})
        return _DONE


def post_ack(
    http: HTTPTransport,
    endpoint: Endpoint,
    session: str | None,
    sent: tuple[dict[str, Any], Outgoing],
    timeout: Timeout,
) -> None:
    """POST a message that needs only an acknowledgement (a notification, a reply to a
    server request) on the caller's thread, so such messages reach the server in order.

    Raises:
        SessionExpired: The server no longer knows ``session``.
        HTTPStatusError: The server refused the message.
        TransportError: The POST failed (redacted: no secret URL in it).
    """
    message, context = sent
    attempt = 1
    while True:
        headers = endpoint.post_headers()
        headers.update(context.headers)
        if session is not None and "Mcp-Method" not in context.headers:
            headers[SESSION_HEADER] = session
        try:
            result = http.request(
                "POST",
                endpoint.url,
                body=_jsonrpc.encode(message),
                headers=headers,
                timeout=timeout,
                max_response_bytes=ERROR_BODY_LIMIT,
            )
        except TransportError as exc:
            raise endpoint.redact(exc) from None
        # A 401/403 challenge the authorization answers (a fresh or stepped-up token) is
        # sent again; the authorization bounds the attempts.
        if result.status in (401, 403) and endpoint.challenged(
            result.status, result.headers, headers.get("Authorization"), attempt
        ):
            attempt += 1
            continue
        break
    if result.ok:
        return
    if session is not None and session_unknown(result.status, result.content):
        raise SessionExpired(f"MCP server at {endpoint.name} no longer knows the MCP session")
    raise status_error(
        "POST",
        endpoint.name,
        result.status,
        result.content,
        headers=result.headers,
        content_type=result.content_type,
    )


def log_in_first(http: HTTPTransport, endpoint: Endpoint, timeout: Timeout) -> bool:
    """Before the era probe: when an OAuth ``auth`` holds no token yet, POST one
    unauthenticated ``ping`` and, if the server answers 401/403 with a challenge, let the
    authorization log in now (discovery, registration, the person's browser step), so
    the login is not raced by the probe's short wait. Any other answer is ignored: the
    handshake sends the real requests (an unprotected server never sees a token).

    Raises:
        AuthorizationError: The login failed.
        TransportError: The POST failed (redacted: no secret URL in it).
    """
    if not endpoint.awaits_login():
        return False
    headers = endpoint.headers(ACCEPT_BOTH)
    headers["Content-Type"] = JSON_TYPE
    ping = {"jsonrpc": "2.0", "id": new_id(), "method": "ping"}
    try:
        result = http.request(
            "POST",
            endpoint.url,
            body=_jsonrpc.encode(ping),
            headers=headers,
            timeout=timeout,
            max_response_bytes=ERROR_BODY_LIMIT,
        )
    except TransportError as exc:
        raise endpoint.redact(exc) from None
    if result.status not in (401, 403):
        return False
    return endpoint.challenged(result.status, result.headers, headers.get("Authorization"), 1)
