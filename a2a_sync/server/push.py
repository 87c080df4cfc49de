"""Push notifications: POST task updates to the webhooks clients registered.

:class:`PushSender` runs one daemon thread that delivers, per webhook and task, in event
order (a delivery waiting for a retry holds back the later ones of the same lane, so a
receiver never sees ``completed`` before ``working``). Each notification is:

* A2A 1.0 configs: the event as a ``StreamResponse`` (``{"statusUpdate": ...}``),
  ``Content-Type: application/a2a+json`` (1.0 §4.3.3);
  A2A 0.3 configs: the task snapshot, ``Content-Type: application/json``;
* ``Authorization: {scheme} {credentials}`` when the config carries authentication, and
  ``X-A2A-Notification-Token`` when it carries a token (what a2a-sdk sends).

Safety (server-side request forgery): only ``http``/``https`` URLs; the host is resolved
on **every** attempt and refused if *any* address is loopback, private, link-local,
multicast, reserved or unspecified (IPv4-mapped IPv6 judged as IPv4), unless the operator
passes ``allow_private=True``; the connection goes to an address that was checked (no
second lookup an attacker's DNS could answer differently); redirects are never followed
(a 3xx is a failed delivery). Failures are retried with exponential backoff (5xx, 408,
429, connection errors); other 4xx are given up at once. Tokens and credentials are never
logged. Delivery is at least once: receivers must be idempotent.
"""

from __future__ import annotations

import heapq
import http.client
import ipaddress
import itertools
import logging
import random
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

import attrs

from .._net.jsonrpc import encode
from ..a2a.codec import V0_3, V1_0
from ..a2a.types import StreamEvent
from ..errors import InvalidParams
from .stores.base import StoredPushConfig, StoredTask

__all__ = ["PushSender", "address_blocked"]

logger = logging.getLogger(__name__)

#: Connect + read limit of one webhook call. Receivers should answer at once (2xx) and
#: work later; a slow one must not hold the lane for long.
DEFAULT_PUSH_TIMEOUT: Final = 10.0
#: Attempts per notification before it is dropped (logged).
DEFAULT_MAX_ATTEMPTS: Final = 5
#: First retry delay; doubles per attempt (1, 2, 4, 8 s ...), with up to 25 % jitter.
DEFAULT_BACKOFF_BASE: Final = 1.0
#: Ceiling of one retry delay (also caps a receiver's Retry-After).
DEFAULT_BACKOFF_MAX: Final = 60.0
#: Notifications waiting at most; more are dropped (logged) instead of growing memory.
DEFAULT_QUEUE_LIMIT: Final = 10_000
#: How long close() waits for the sender thread.
CLOSE_TIMEOUT: Final = 10.0

_RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})

#: ``resolve(host, port)`` -> the IP addresses to try, in order.
Resolver = Callable[[str, int], list[str]]


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


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@attrs.frozen
class _Delivery:
    url: str
    body: bytes
    headers: dict[str, str] = attrs.field(repr=False)  # carries credentials
    lane: tuple[str, str]  # (task id, config id): deliveries of a lane keep their order
    attempt: int = 0


class _Refused(Exception):
    """A delivery that must not be retried (blocked address, redirect, 4xx)."""


class PushSender:
    """Delivers push notifications from one background thread. Thread-safe.

    Args:
        allow_private: Allow webhooks on loopback/private/link-local addresses (tests,
            trusted internal networks).
        timeout: Connect and read limit of one call.
        max_attempts: Attempts per notification.
        backoff_base: First retry delay (doubles per attempt).
        backoff_max: Longest retry delay.
        queue_limit: Most notifications waiting.
        resolve: Host resolution (``socket.getaddrinfo`` by default).
        verify: TLS verification: True, or a CA bundle path.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        timeout: float = DEFAULT_PUSH_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        resolve: Resolver | None = None,
        verify: bool | str = True,
    ) -> None:
        self.allow_private = allow_private
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._queue_limit = queue_limit
        self._resolve = resolve or _system_resolve
        self._ssl = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
        if verify is False:
            self._ssl.check_hostname = False
            self._ssl.verify_mode = ssl.CERT_NONE
        self._cond = threading.Condition()
        self._lanes: dict[tuple[str, str], deque[_Delivery]] = {}
        self._due: list[tuple[float, int, tuple[str, str]]] = []  # (when, tie, lane)
        self._ties = itertools.count()
        self._pending = 0
        self._closed = False
        self._drain_deadline: float | None = None
        self._thread = threading.Thread(target=self._loop, name="a2a-sync-push", daemon=True)
        self._thread.start()
        #: Deliveries made / given up (for tests and metrics).
        self.delivered = 0
        self.dropped = 0

    # -- the handler's side --------------------------------------------------------------------

    def check_url(self, url: str) -> None:
        """Refuse a webhook URL at registration: scheme, host, and literal addresses.

        Host names are resolved only when delivering (every attempt).

        Raises:
            InvalidParams: Not an http(s) URL with a host, or a blocked literal address.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidParams("push notification URL must be an http(s) URL with a host")
        try:
            ipaddress.ip_address(parts.hostname)
        except ValueError:
            return
        if not self.allow_private and address_blocked(parts.hostname):
            raise InvalidParams("push notification URL points to a non-public address")

    def notify(
        self, stored: StoredTask, event: StreamEvent, configs: list[StoredPushConfig]
    ) -> None:
        """Queue ``event`` for each config (never blocks; drops when the queue is full)."""
        bodies: dict[str, bytes] = {}
        for item in configs:
            config = item.config
            if item.revision not in bodies:
                if item.revision == "0.3":
                    bodies["0.3"] = encode(V0_3.dump_task(stored.task))
                else:
                    bodies[item.revision] = encode(V1_0.dump_stream_event(event))
            headers = {
                "Content-Type": "application/json"
                if item.revision == "0.3"
                else "application/a2a+json"
            }
            if config.token:
                headers["X-A2A-Notification-Token"] = config.token
            auth = config.authentication
            if auth is not None and auth.credentials:
                headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
            lane = (stored.task.id, config.id or config.url)
            self._enqueue(_Delivery(config.url, bodies[item.revision], headers, lane))

    def _enqueue(self, delivery: _Delivery) -> None:
        with self._cond:
            if self._closed:
                return
            if self._pending >= self._queue_limit:
                self.dropped += 1
                logger.warning(
                    "push queue full: notification for task %s dropped", delivery.lane[0]
                )
                return
            self._pending += 1
            lane = self._lanes.get(delivery.lane)
            if lane is None:
                self._lanes[delivery.lane] = deque([delivery])
                heapq.heappush(self._due, (time.monotonic(), next(self._ties), delivery.lane))
                self._cond.notify()
            else:
                lane.append(delivery)

    # -- the sender thread -----------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed and (not self._due or self._draining_done()):
                        return
                    if self._due:
                        when = self._due[0][0]
                        wait = when - time.monotonic()
                        if wait <= 0:
                            _, _, lane_key = heapq.heappop(self._due)
                            delivery = self._lanes[lane_key][0]
                            break
                        if self._drain_deadline is not None:
                            wait = min(wait, self._drain_deadline - time.monotonic())
                        self._cond.wait(max(0.0, wait))
                    else:
                        self._cond.wait()
            try:
                outcome = self._deliver(delivery)
            except Exception:  # top of the sender thread: a bug must not stop deliveries
                logger.exception("push delivery failed unexpectedly")
                outcome = None
            self._settle(lane_key, delivery, outcome)

    def _draining_done(self) -> bool:
        return self._drain_deadline is not None and time.monotonic() >= self._drain_deadline

    def _settle(
        self, lane_key: tuple[str, str], delivery: _Delivery, retry_in: float | None
    ) -> None:
        with self._cond:
            lane = self._lanes[lane_key]
            attempt = delivery.attempt + 1
            if retry_in is not None and attempt < self._max_attempts and not self._closed:
                lane[0] = attrs.evolve(delivery, attempt=attempt)
                heapq.heappush(self._due, (time.monotonic() + retry_in, next(self._ties), lane_key))
                return
            if retry_in is not None:
                self.dropped += 1
                logger.warning(
                    "push notification for task %s dropped after %d attempts", lane_key[0], attempt
                )
            lane.popleft()
            self._pending -= 1
            if lane:
                heapq.heappush(self._due, (time.monotonic(), next(self._ties), lane_key))
            else:
                del self._lanes[lane_key]
            self._cond.notify_all()

    def _deliver(self, delivery: _Delivery) -> float | None:
        """One attempt. Returns ``None`` when done (delivered or refused), else the delay
        before the next attempt."""
        parts = urlsplit(delivery.url)
        where = f"{parts.scheme}://{parts.hostname}"
        try:
            status, retry_after = self._post(parts, delivery)
        except _Refused as exc:
            self.dropped += 1
            logger.warning("push notification to %s refused: %s", where, exc)
            return None
        except (OSError, http.client.HTTPException) as exc:
            logger.info("push notification to %s failed: %s", where, type(exc).__name__)
            return self._backoff(delivery.attempt, None)
        if 200 <= status < 300:
            self.delivered += 1
            return None
        if status in _RETRY_STATUSES:
            logger.info("push notification to %s answered %d; will retry", where, status)
            return self._backoff(delivery.attempt, retry_after)
        self.dropped += 1
        logger.warning("push notification to %s answered %d; not retried", where, status)
        return None

    def _post(self, parts: Any, delivery: _Delivery) -> tuple[int, float | None]:
        host = parts.hostname
        if parts.scheme not in ("http", "https") or not host:
            raise _Refused("not an http(s) URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = self._resolve(host, port)
        if not addresses:
            raise OSError("no address")
        if not self.allow_private and any(address_blocked(a) for a in addresses):
            raise _Refused("the host resolves to a non-public address")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = {**delivery.headers, "Host": parts.netloc.rpartition("@")[2]}
        last: OSError | None = None
        for address in addresses:
            connection = self._connection(parts.scheme, host, address, port)
            try:
                connection.request("POST", path, body=delivery.body, headers=headers)
                response = connection.getresponse()
                response.read(65536)
                if 300 <= response.status < 400:
                    raise _Refused(f"redirect {response.status} not followed")
                return response.status, _retry_after(response.getheader("Retry-After"))
            except OSError as exc:
                last = exc
            finally:
                connection.close()
        assert last is not None
        raise last

    def _connection(
        self, scheme: str, host: str, address: str, port: int
    ) -> http.client.HTTPConnection:
        if scheme == "https":
            return _PinnedHTTPS(host, address, port, timeout=self._timeout, context=self._ssl)
        return _PinnedHTTP(host, address, port, timeout=self._timeout)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self._backoff_max, self._backoff_base * 2.0**attempt)
        delay -= delay * 0.25 * random.random()  # noqa: S311 - jitter, not security
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._backoff_max))
        return delay

    # -- lifecycle ------------------------------------------------------------------------------

    def flush(self, timeout: float) -> bool:
        """Wait until nothing is queued or being retried (tests, shutdown).

        Returns:
            True when everything was delivered or given up within ``timeout``.
        """
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout=timeout)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> bool:
        """Deliver what is due within ``timeout`` (no new retries), then stop the thread."""
        with self._cond:
            self._closed = True
            self._drain_deadline = time.monotonic() + timeout
            self._cond.notify_all()
        self._thread.join(timeout + 1.0)
        return not self._thread.is_alive()


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to a checked address while the request names the URL's host."""

    def __init__(self, host: str, address: str, port: int, *, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """TLS to a checked address, verifying the certificate for the URL's host."""

    def __init__(
        self, host: str, address: str, port: int, *, timeout: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def _retry_after(value: str | None) -> float | None:
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())
