"""One webhook POST under a total deadline, to an address that was checked.

Internal to :mod:`a2a_sync.server.push`. A per-operation socket timeout does not bound a
delivery: a receiver dripping one byte a second keeps every read short. Here every socket
operation (connect, TLS handshake, send, each read of the status line and headers) gets
the time *left* of one deadline, so the whole attempt ends when it passes, however the
receiver paces its bytes. The body of the answer is not read (the status decides).

Server-side request forgery: the host is resolved on every attempt and refused if *any*
address is not public unicast (unless ``allow_private``); the connection goes to a
checked address (no second lookup an attacker's DNS could answer differently); redirects
are failures, never followed. Host resolution is the system resolver's (its own limits;
it is not interruptible), which is one reason a destination gets only a few workers.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Deadline", "Refused", "Resolver", "address_blocked", "post", "system_resolve"]

#: ``resolve(host, port)`` -> the IP addresses to try, in order.
Resolver = Callable[[str, int], list[str]]


class Refused(Exception):
    """A delivery that must not be retried (blocked address, redirect, not http(s))."""


class Deadline:
    """The instant one delivery attempt must end by.

    Args:
        seconds: Time allowed from now.
        clock: Monotonic clock (tests inject one).
    """

    __slots__ = ("_at", "_clock")

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._at = clock() + seconds

    def remaining(self) -> float:
        """Seconds left.

        Raises:
            TimeoutError: The deadline passed (an ``OSError``: retried like a lost
                connection).
        """
        left = self._at - self._clock()
        if left <= 0:
            raise TimeoutError("push delivery deadline passed")
        return left


def address_blocked(ip: str) -> bool:
    """True for addresses a webhook must not reach: anything but public unicast."""
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return True
    mapped = getattr(addr, "ipv4_mapped", None)
    if mapped is not None:
        addr = mapped
    return (
        not addr.is_global
        or addr.is_loopback
        or addr.is_link_local
        or addr.is_multicast
        or addr.is_reserved
        or addr.is_unspecified
        or addr.is_private
    )


def system_resolve(host: str, port: int) -> list[str]:
    """``socket.getaddrinfo``: the host's addresses, each once, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _DeadlineSocket(socket.socket):
    """A socket whose every send and receive gets the time left of one deadline."""

    deadline: Deadline | None = None

    def _arm(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.remaining())

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return super().recv(*args)

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return super().recv_into(*args)

    def send(self, *args: Any) -> int:
        self._arm()
        return super().send(*args)

    def sendall(self, *args: Any) -> None:
        self._arm()  # sendall's timeout bounds the whole call (Python >= 3.5)
        super().sendall(*args)


class _DeadlineSSLSocket(ssl.SSLSocket):
    """The TLS counterpart of :class:`_DeadlineSocket` (``SSLContext.sslsocket_class``)."""

    deadline: Deadline | None = None

    def _arm(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.remaining())

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        self._arm()
        return super().recv(buflen, flags)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        self._arm()
        return super().recv_into(buffer, nbytes, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        self._arm()
        return super().send(data, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._arm()
        super().sendall(data, flags)


def tls_context(verify: bool | str) -> ssl.SSLContext:
    """The context of webhook TLS: verification on (``verify`` may name a CA bundle)."""
    context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.sslsocket_class = _DeadlineSSLSocket
    return context


def _connect(address: str, port: int, deadline: Deadline) -> _DeadlineSocket:
    infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    family, _, _, _, sockaddr = infos[0]
    sock = _DeadlineSocket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(deadline.remaining())
        sock.connect(sockaddr)
    except BaseException:
        sock.close()
        raise
    sock.deadline = deadline
    return sock


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to a checked address while the request names the URL's host."""

    def __init__(self, host: str, address: str, port: int, deadline: Deadline) -> None:
        super().__init__(host, port)
        self._address = address
        self._deadline = deadline

    def connect(self) -> None:
        self.sock = _connect(self._address, self.port, self._deadline)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """TLS to a checked address, verifying the certificate for the URL's host."""

    def __init__(
        self, host: str, address: str, port: int, deadline: Deadline, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, context=context)
        self._address = address
        self._deadline = deadline
        self._tls = context

    def connect(self) -> None:
        raw = _connect(self._address, self.port, self._deadline)
        raw.settimeout(self._deadline.remaining())  # the handshake keeps one deadline too
        tls = self._tls.wrap_socket(raw, server_hostname=self.host)
        assert isinstance(tls, _DeadlineSSLSocket)
        tls.deadline = self._deadline
        self.sock = tls


def post(
    parts: Any,
    body: bytes,
    headers: dict[str, str],
    *,
    deadline: Deadline,
    resolve: Resolver,
    allow_private: bool,
    tls: ssl.SSLContext,
) -> tuple[int, float | None]:
    """POST ``body`` to the URL ``parts`` (a ``urlsplit`` result) before ``deadline``.

    Returns:
        The status and the receiver's ``Retry-After`` in seconds (if any).

    Raises:
        Refused: Not to be retried (blocked address, redirect).
        OSError: Connection failure or deadline passed (``TimeoutError``).
        http.client.HTTPException: A malformed answer.
    """
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        raise Refused("not an http(s) URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = resolve(host, port)
    if not addresses:
        raise OSError("no address")
    if not allow_private and any(address_blocked(a) for a in addresses):
        raise Refused("the host resolves to a non-public address")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    sent = {**headers, "Host": parts.netloc.rpartition("@")[2], "Connection": "close"}
    last: OSError | None = None
    for address in addresses:
        connection: http.client.HTTPConnection = (
            _PinnedHTTPS(host, address, port, deadline, tls)
            if parts.scheme == "https"
            else _PinnedHTTP(host, address, port, deadline)
        )
        try:
            connection.request("POST", path, body=body, headers=sent)
            response = connection.getresponse()  # status line and headers only
            if 300 <= response.status < 400:
                raise Refused(f"redirect {response.status} not followed")
            return response.status, _retry_after(response.getheader("Retry-After"))
        except OSError as exc:
            last = exc
            if isinstance(exc, TimeoutError):
                break  # the deadline covers every address together
        finally:
            connection.close()
    assert last is not None
    raise last


def _retry_after(value: str | None) -> float | None:
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())
