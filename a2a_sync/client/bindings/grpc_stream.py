"""The event stream of one gRPC server-streaming call (the client's gRPC binding).

Shaped like the SSE stream :class:`~a2a_sync.client.TaskStream` reads: ``next_event()``
returns an event with ``data`` and ``json()``, or ``None`` at the end, and raises the
call's error; ``close()`` works from any thread. Needs the ``grpc`` extra.

The consuming thread reads the call itself: grpcio's channel already buffers the events
that arrived (HTTP/2 flow control bounds how far the agent runs ahead), so a reader
thread would only add a thread wake-up and a queue hand-off per event. What the thread
did besides, bounding the silence between events, is done by a watchdog thread that
wakes once per idle timeout, not per event (``threaded``, the default): when the
consumer has waited ``idle_timeout`` for an event, it cancels the call and the wait
ends with :class:`ReadTimeout`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import grpc

from ...a2a.grpc.convert import from_message
from ...errors import Cancelled, ReadTimeout

__all__ = ["GRPCEventStream"]

_stream_numbers = itertools.count(1)


class _Event:
    """One received event, shaped like the SSE events :class:`TaskStream` reads."""

    __slots__ = ("payload",)
    data: Final = "grpc"

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def json(self) -> dict[str, Any]:
        return self.payload


class GRPCEventStream:
    """The events of one server-streaming call, read by the consuming thread.

    ``next_event`` returns the next event (``None`` at the end) or raises the call's
    error; :meth:`close` cancels the call from any thread (and joins the watchdog). With
    ``threaded`` (the default) a named daemon thread (``a2a-sync-grpc-stream-N``) ends a
    wait longer than ``idle_timeout``; without it no thread is started and the idle
    timeout is not enforced (a blocked read ends with :meth:`close` or the connection).
    """

    def __init__(
        self,
        call: Any,
        *,
        idle_timeout: float | None,
        error: Any,
        url: str,
        threaded: bool = True,
        reopen: Callable[[grpc.RpcError], Any] | None = None,
    ) -> None:
        self._call = call
        self._reopen = reopen
        self._delivered = False
        self._call_lock = threading.Lock()
        self._idle_timeout = idle_timeout
        self._error = error
        self._url = url
        self._closed = threading.Event()
        self._stop = threading.Event()  # the watchdog's end: closed, ended or expired
        self._ended = False
        self._expired = False
        # (since, limit) while the consumer waits for an event, else None; read by the
        # watchdog (one attribute, replaced whole).
        self._waiting: tuple[float, float] | None = None
        self._thread: threading.Thread | None = None
        if threaded and idle_timeout is not None:
            self._thread = threading.Thread(
                target=self._watch,
                name=f"a2a-sync-grpc-stream-{next(_stream_numbers)}",
                daemon=True,
            )
            self._thread.start()

    def _watch(self) -> None:
        """Cancel the call once the consumer has waited its limit for one event."""
        idle = self._idle_timeout
        while True:
            waiting = self._waiting
            if waiting is None:
                pause = idle
            else:
                since, limit = waiting
                pause = since + limit - time.monotonic()
                if pause <= 0 and self._waiting is waiting:
                    self._expired = True
                    with self._call_lock:
                        self._call.cancel()
                    return
            if self._stop.wait(max(pause or 0.0, 0.0)):
                return

    def next_event(self, timeout: float | None = None) -> _Event | None:
        """The next event; ``None`` once the call ended normally.

        ``timeout`` replaces the idle timeout for this wait (enforced by the watchdog,
        so only on a ``threaded`` stream).

        Raises:
            Cancelled: The stream was closed.
            ReadTimeout: No event within the idle timeout (the call is cancelled).
            RPCError, TransportError: The call failed.
        """
        if self._ended:
            return None
        if self._closed.is_set():
            raise Cancelled("the stream was closed", url=self._url)
        limit = timeout if timeout is not None else self._idle_timeout
        watched = self._thread is not None and limit is not None
        while True:
            if watched:
                self._waiting = (time.monotonic(), limit)  # type: ignore[assignment]
            try:
                message = next(self._call)
            except StopIteration:
                self._waiting = None
                self._end()
                return None
            except grpc.RpcError as exc:
                self._waiting = None
                if self._expired:
                    self.close()
                    raise ReadTimeout(
                        f"no event on the gRPC stream to {self._url} for {limit} s",
                        url=self._url,
                        timeout=limit,
                    ) from None
                if self._opened_again(exc):
                    continue
                self._end()
                if self._closed.is_set():
                    raise Cancelled("the stream was closed", url=self._url) from exc
                raise self._error(exc) from exc
            self._waiting = None
            self._delivered = True
            return _Event(from_message(message))

    def _end(self) -> None:
        self._ended = True
        self._stop.set()
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join()

    def _opened_again(self, exc: grpc.RpcError) -> bool:
        """Whether a refusal before any event was answered by opening the call again."""
        if self._delivered or self._reopen is None or self._closed.is_set():
            return False
        call = self._reopen(exc)
        if call is None:
            return False
        with self._call_lock:
            self._call = call
            if self._closed.is_set():  # closed meanwhile: do not leave the new call open
                call.cancel()
        return True

    def close(self) -> None:
        """Cancel the call and join the watchdog (safe from any thread; idempotent)."""
        self._closed.set()
        self._stop.set()
        with self._call_lock:
            self._call.cancel()
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed.is_set()
