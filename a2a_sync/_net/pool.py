"""urllib3 glue for :mod:`a2a_sync._net.http`: deadline-capped timeouts and connections
that register themselves so another thread can cancel them.

These classes plug into urllib3's extension points (``Timeout.clone``,
``pool_classes_by_scheme``); :mod:`a2a_sync._net.adapter` mounts them on requests'
``HTTPAdapter``. The per-call state is in :mod:`a2a_sync._net.call`, the per-call
``Retry`` in :mod:`a2a_sync._net.retry` (both re-exported here for existing importers).
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from typing import Any, Final

import urllib3
import urllib3.connection
import urllib3.connectionpool

from .call import BudgetExhausted, Call, local, wait_before_retry
from .retry import CallRetry

__all__ = [
    "TRACKED_POOLS",
    "BudgetExhausted",
    "Call",
    "CallRetry",
    "DeadlineTimeout",
    "local",
    "wait_before_retry",
]


_DEFAULT: Final = urllib3.util.timeout._DEFAULT_TIMEOUT


class DeadlineTimeout(urllib3.Timeout):
    """urllib3 ``Timeout`` whose connect and read limits never reach past a deadline."""

    def __init__(self, connect: float | None, read: float | None, deadline: float | None) -> None:
        # Not urllib3's __init__: the limits come from a Timeout policy, validated when it
        # was made (positive numbers or None), so its three checks are not repeated on
        # every call. The attributes are the ones urllib3's __init__ sets.
        self._connect = connect
        self._read = read
        self.total = None
        self._start_connect = None
        self._deadline = deadline

    @classmethod
    def of(
        cls, connect: float | None, read: float | None, deadline: float | None
    ) -> DeadlineTimeout:
        """The timeout of one call. Without a deadline it is the same for every call with
        these limits (urllib3 clones it before use; the clone carries the connect clock),
        so one is made per pair and shared."""
        if deadline is not None:
            return cls(connect, read, deadline)
        key = (connect, read)
        timeout = _SHARED.get(key)
        if timeout is None:
            timeout = cls(connect, read, None)
            if len(_SHARED) >= _SHARED_LIMIT:
                _SHARED.clear()
            _SHARED[key] = timeout  # (a whole-entry write: a lost race makes one twice)
        return timeout

    def clone(self) -> DeadlineTimeout:
        # urllib3 clones the timeout twice per request; the values were validated when
        # this one was made, so the copy skips the three validations of __init__.
        clone = object.__new__(DeadlineTimeout)
        clone.__dict__.update(self.__dict__)
        clone._start_connect = None  # as urllib3's clone: a fresh connect clock
        return clone

    # urllib3 reads these three times per request: each computes its cap inline.

    @property
    def connect_timeout(self) -> Any:
        value, deadline = self._connect, self._deadline
        if deadline is None:
            return value
        # A zero connect timeout would make the socket non-blocking; a millisecond fails fast.
        remaining = max(0.001, deadline - time.monotonic())
        return remaining if value is None or value is _DEFAULT else min(value, remaining)

    @property
    def read_timeout(self) -> Any:
        value, deadline = self._read, self._deadline
        if deadline is None:
            return value
        # urllib3 raises ReadTimeoutError itself for a zero read timeout.
        remaining = max(0.0, deadline - time.monotonic())
        return remaining if value is None or value is _DEFAULT else min(value, remaining)


#: The shared deadline-free timeouts, per (connect, read); emptied when full.
_SHARED: dict[tuple[float | None, float | None], DeadlineTimeout] = {}
_SHARED_LIMIT: Final = 64


def _cap_by_deadline(sock: Any, call: Call) -> None:
    """Before a socket read: fail once the call's deadline passed, else lower the socket's
    timeout to what is left of it (the deadline is read on every call: a stream clears it
    once it is established)."""
    deadline = call.deadline  # (Call.remaining, inline: once per socket read)
    if deadline is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the call's deadline passed")
        current = sock.gettimeout()
        if current is None or current > remaining:
            sock.settimeout(remaining)


class _DeadlineSocketIO(socket.SocketIO):
    """The socket reader under an http.client response (what ``sock.makefile("rb")``
    makes), with every ``recv`` capped by what is left of the call's deadline.

    Socket timeouts bound one ``recv``; a peer dripping a byte at a time (a long header
    line, a slow body) would keep a call alive far past its deadline. Reading the status
    line and headers happens inside http.client, so the cap has to sit below it.
    """

    def __init__(self, sock: socket.socket, call: Call) -> None:
        super().__init__(sock, "rb")
        self._call = call

    def readinto(self, b: Any) -> int | None:
        deadline = self._call.deadline  # (_cap_by_deadline, inline: once per socket read)
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the call's deadline passed")
            sock = self._sock  # type: ignore[attr-defined]
            current = sock.gettimeout()
            if current is None or current > remaining:
                sock.settimeout(remaining)
        return super().readinto(b)


class _DeadlineReader(io.RawIOBase):
    """:class:`_DeadlineSocketIO` for a socket-like object that is not a
    ``socket.socket`` (urllib3's ``SSLTransport`` for TLS through an HTTPS proxy): a raw
    reader over its own unbuffered file."""

    def __init__(self, raw: io.RawIOBase, sock: Any, call: Call) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._call = call

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, buffer: Any) -> int | None:
        _cap_by_deadline(self._sock, self._call)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineFile:
    """Stands in for the socket while http.client's response makes its file from it
    (``sock.makefile("rb")``, its only use of the socket), so the file it gets is the
    deadline-capped one, made once, instead of a plain one wrapped afterwards."""

    __slots__ = ("_call", "_sock")

    def __init__(self, sock: Any, call: Call) -> None:
        self._sock = sock
        self._call = call

    def makefile(self, mode: str) -> io.BufferedReader:
        sock, call = self._sock, self._call
        if isinstance(sock, socket.socket):
            raw: io.RawIOBase = _DeadlineSocketIO(sock, call)
            sock._io_refs += 1  # type: ignore[attr-defined]  # as socket.makefile: closed with the file
        else:
            raw = _DeadlineReader(sock.makefile(mode, 0), sock, call)
        return io.BufferedReader(raw)


class _DeadlineHTTPResponse(http.client.HTTPResponse):
    """http.client response whose reads respect the calling thread's :class:`Call`."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        call: Call | None = getattr(local, "call", None)
        if call is not None and call.deadline is not None:
            sock = _DeadlineFile(sock, call)
        super().__init__(sock, *args, **kwargs)


class _TrackedConnectionMixin:
    """Registers the socket with the calling thread's :class:`Call` before waiting for the
    response, so another thread can shut it down; reads respect the call's deadline."""

    response_class: type[http.client.HTTPResponse] = _DeadlineHTTPResponse

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        call: Call | None = getattr(local, "call", None)
        if call is not None:
            call.attach(self.sock)  # type: ignore[attr-defined]
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _TrackedHTTPConnection(_TrackedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _TrackedHTTPSConnection(_TrackedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _TrackedHTTPConnectionPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSConnectionPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


#: Pool classes whose connections register with the calling thread's :class:`Call`.
TRACKED_POOLS: Final = {"http": _TrackedHTTPConnectionPool, "https": _TrackedHTTPSConnectionPool}
