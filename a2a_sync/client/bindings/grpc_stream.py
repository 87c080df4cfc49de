"""The event stream of one gRPC server-streaming call (the client's gRPC binding).

Shaped like the SSE stream :class:`~a2a_sync.client.TaskStream` reads: ``next_event()``
returns an event with ``data`` and ``json()``, or ``None`` at the end, and raises the
call's error; ``close()`` works from any thread. Needs the ``grpc`` extra.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Final

import attrs
import grpc

from ...a2a.grpc.convert import from_message
from ...errors import A2ASyncError, Cancelled, ProtocolError, ReadTimeout

__all__ = ["GRPCEventStream"]

logger = logging.getLogger(__name__)

#: Events read ahead of the consumer.
_QUEUE: Final = 64
_stream_numbers = itertools.count(1)


@attrs.frozen
class _Event:
    """One received event, shaped like the SSE events :class:`TaskStream` reads."""

    payload: dict[str, Any]
    data: str = "grpc"

    def json(self) -> dict[str, Any]:
        return self.payload


class _End:
    """The call ended normally."""


@attrs.frozen
class _Failed:
    error: BaseException


class GRPCEventStream:
    """The events of one server-streaming call, read ahead by a named daemon thread
    (``threaded``, the default) or by the consuming thread itself.

    ``next_event`` returns the next event (``None`` at the end) or raises the call's
    error; :meth:`close` cancels the call from any thread (and joins the reader). Without
    the thread one wake-up per event is saved, and ``idle_timeout`` is not enforced (a
    blocked read ends with :meth:`close` or the connection).
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
        self._queue: queue.Queue[Any] = queue.Queue(_QUEUE)
        self._closed = threading.Event()
        self._ended = False
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(
                target=self._read,
                name=f"a2a-sync-grpc-stream-{next(_stream_numbers)}",
                daemon=True,
            )
            self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                try:
                    for message in self._call:
                        self._delivered = True
                        if not self._put(from_message(message)):
                            return
                    self._put(_End())
                    return
                except grpc.RpcError as exc:
                    if not self._opened_again(exc):
                        self._put(_Failed(exc))
                        return
        except A2ASyncError as exc:  # the credential gave up opening the call again
            self._put(_Failed(exc))
        except Exception:  # the reader's top level: log, end the stream with an error
            logger.exception("reading the gRPC stream to %s failed", self._url)
            self._put(_Failed(ProtocolError(f"the gRPC stream to {self._url} broke")))

    def _put(self, item: Any) -> bool:
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.25)
                return True
            except queue.Full:
                continue
        return False

    def next_event(self, timeout: float | None = None) -> _Event | None:
        """The next event; ``None`` once the call ended normally.

        Raises:
            Cancelled: The stream was closed.
            ReadTimeout: No event within the idle timeout (the call is cancelled).
            RPCError, TransportError: The call failed.
        """
        if self._ended:
            return None
        if self._closed.is_set():
            raise Cancelled("the stream was closed", url=self._url)
        if self._thread is None:
            return self._read_inline()
        try:
            item = self._queue.get(timeout=timeout if timeout is not None else self._idle_timeout)
        except queue.Empty:
            self.close()
            raise ReadTimeout(
                f"no event on the gRPC stream to {self._url} for {self._idle_timeout} s",
                url=self._url,
                timeout=self._idle_timeout,
            ) from None
        if isinstance(item, _End):
            self._ended = True
            self._thread.join()
            return None
        if isinstance(item, _Failed):
            self._ended = True
            if self._closed.is_set():
                raise Cancelled("the stream was closed", url=self._url)
            error = item.error
            raise (self._error(error) if isinstance(error, grpc.RpcError) else error)
        return _Event(item)

    def _read_inline(self) -> _Event | None:
        while True:
            try:
                message = next(self._call)
                break
            except StopIteration:
                self._ended = True
                return None
            except grpc.RpcError as exc:
                if self._opened_again(exc):
                    continue
                self._ended = True
                if self._closed.is_set():
                    raise Cancelled("the stream was closed", url=self._url) from exc
                raise self._error(exc) from exc
        self._delivered = True
        return _Event(from_message(message))

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
        """Cancel the call and join the reader (safe from any thread; idempotent)."""
        self._closed.set()
        with self._call_lock:
            self._call.cancel()
        if self._thread is None:
            return
        # Unblock the reader waiting for room, then wake a consumer waiting for an event.
        while True:
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()
            try:
                self._queue.put_nowait(_Failed(Cancelled("the stream was closed", url=self._url)))
                break
            except queue.Full:
                continue
        if threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed.is_set()
