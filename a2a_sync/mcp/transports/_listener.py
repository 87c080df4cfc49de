"""The GET stream of a Streamable HTTP session (server-initiated messages): opened,
read with :func:`~._httpbase.pump`, re-opened with ``Last-Event-ID`` when it ends."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from ..._net.http import StreamResponse
from ..._net.pool import Call
from ..._net.sse_decoder import ServerSentEvent, SSEDecoder
from ...errors import (
    AuthorizationError,
    Cancelled,
    RedirectRefused,
    ResponseTooLarge,
    TransportError,
    excerpt,
)
from . import MessageSink
from ._httpbase import (
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    LAST_EVENT_ID_HEADER,
    SESSION_HEADER,
    decode_messages,
    pump,
    session_unknown,
)
from ._streams import Link

__all__ = ["HEALTHY_STREAM_TIME", "Listener"]

logger = logging.getLogger("a2a_sync.mcp.transports._streams")  # where it always logged

#: A GET stream that stayed open this long (or delivered a message) was healthy: its end
#: does not count toward giving up (servers and proxies end idle streams routinely).
HEALTHY_STREAM_TIME: Final = 10.0

_READ: Final = "read"
_RETRY: Final = "retry"
_STOP: Final = "stop"


class Listener:
    """The GET stream of one session: server-initiated messages (legacy era).

    Re-opened with ``Last-Event-ID`` when it ends. A 401/403 is answered by the
    endpoint's authorization (a refreshed or stepped-up token; bounded by it) and the GET
    re-opened at once. A stream that ends at once without a message counts as a failure;
    after ``policy.max_attempts`` of those in a row (with growing delays) it is given up
    (MH-06). A 405 means the server offers none. Stopped by
    :meth:`halt` from any thread; its thread is a named daemon.
    """

    def __init__(
        self,
        link: Link,
        sink: MessageSink,
        headers: Callable[[], dict[str, str]],
        name: str,
    ) -> None:
        self._link = link
        self._sink = sink
        self._headers = headers
        self.stop = threading.Event()
        self._call: Call | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def halt(self) -> None:
        """Stop from any thread; an open stream is cut at once."""
        self.stop.set()
        call = self._call
        if call is not None:
            call.cancel()

    def _started(self, call: Call) -> None:
        self._call = call
        if self.stop.is_set():
            call.cancel()

    def _run(self) -> None:
        try:
            self._listen()
        except Exception:  # top of the GET thread: log; requests carry on without it
            logger.exception("the GET stream of %s failed", self._link.name)

    def _listen(self) -> None:  # noqa: PLR0912 - one loop over the stream: open, challenge, read, reopen
        link = self._link
        decoder = SSEDecoder(link.max_event_bytes)
        failures = 0
        received = 0

        def on_event(event: ServerSentEvent) -> bool:
            nonlocal received
            if event.data:
                for message in decode_messages(event.data, link.name):
                    received += 1
                    self._sink.deliver(message)
            return self.stop.is_set()

        refusals = 0  # 401/403 answers in a row, each answered by the ChallengeAuth
        while not self.stop.is_set():
            opened = time.monotonic()
            received = 0
            headers = self._headers()
            if decoder.last_event_id:
                headers[LAST_EVENT_ID_HEADER] = decoder.last_event_id
            try:
                response = link.open("GET", headers, self._started)
            except Cancelled:
                return
            except (RedirectRefused, ResponseTooLarge) as exc:
                logger.warning("%s: no GET stream: %s", link.name, link.endpoint.redact(exc))
                return
            except TransportError as exc:
                logger.debug("%s: GET stream: %s", link.name, link.endpoint.redact(exc))
            else:
                with response:
                    if response.status in (401, 403):
                        refusals += 1  # the ChallengeAuth bounds these and raises when done
                        if self._challenged(response, headers, refusals):
                            continue  # a fresh or stepped-up token: re-open at once
                        if self.stop.is_set():
                            return
                    else:
                        refusals = 0
                    verdict = self._verdict(response, SESSION_HEADER in headers)
                    if verdict == _STOP:
                        return
                    if verdict == _READ:
                        try:
                            pump(response, decoder, on_event)
                        except Cancelled:
                            return
            if self.stop.is_set():
                return
            healthy = received > 0 or time.monotonic() - opened >= HEALTHY_STREAM_TIME
            failures = 0 if healthy else failures + 1
            if failures > link.policy.max_attempts:
                logger.warning(
                    "the GET stream of %s ended at once %d times; not re-opening it "
                    "(server messages still arrive on request streams)",
                    link.name,
                    failures,
                )
                return
            if self.stop.wait(link.delay(failures, decoder.retry)):
                return

    def _challenged(self, response: StreamResponse, headers: dict[str, str], refusals: int) -> bool:
        """A 401/403 answered as on the POST path (:meth:`Endpoint.challenged
        <._httpbase.Endpoint.challenged>`): True to re-open with the new token. A login
        that fails stops the GET stream (logged); requests carry on and report it."""
        try:
            return self._link.endpoint.challenged(
                response.status, response.headers, headers.get("Authorization"), refusals
            )
        except AuthorizationError as exc:
            logger.warning("%s: no GET stream: %s", self._link.name, exc)
            self.stop.set()
            return False

    def _verdict(self, response: StreamResponse, sent_session: bool) -> str:
        """Read an event stream, retry after an outage, or stop (a refusal says why)."""
        status = response.status
        if 200 <= status < 300 and response.content_type == EVENT_STREAM_TYPE:
            return _READ
        name = self._link.name
        body = response.read_body(ERROR_BODY_LIMIT)
        if status == 405:
            logger.debug("%s offers no GET stream (405)", name)
        elif sent_session and session_unknown(status, body):
            logger.debug("%s: the GET stream's session is gone; the next request renews it", name)
        elif status in (408, 429) or status >= 500:
            return _RETRY  # an outage: back off and try again
        else:
            logger.warning("%s refused the GET stream with HTTP %s %s", name, status, excerpt(body))
        return _STOP
