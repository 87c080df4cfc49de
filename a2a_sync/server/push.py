"""Push notifications: POST task updates to the webhooks clients registered.

:class:`PushSender` delivers from a small pool of daemon threads (``workers``, 4 by
default), per webhook and task in event order (a delivery waiting for a retry holds back
the later ones of the same lane, so a receiver never sees ``completed`` before
``working``). Each notification is:

* A2A 1.0 configs: the event as a ``StreamResponse`` (``{"statusUpdate": ...}``),
  ``Content-Type: application/a2a+json`` (1.0 §4.3.3);
  A2A 0.3 configs: the task snapshot, ``Content-Type: application/json``;
* ``Authorization: {scheme} {credentials}`` when the config carries authentication, and
  ``X-A2A-Notification-Token`` when it carries a token (what a2a-sdk sends).

One receiver cannot hold up the others:

* ``timeout`` bounds the **whole** attempt (connect, TLS, sending, status line and
  headers), however slowly the receiver drips its answer (:mod:`._push_http`);
* a destination (scheme, host and port) gets at most ``per_destination`` workers at once
  (2), so a slow or dead receiver occupies those and the other workers keep serving
  every other destination;
* back-pressure: at most ``destination_queue_limit`` notifications wait per destination
  (1,000) and ``queue_limit`` in all (10,000); beyond that new notifications are
  **dropped** (logged, counted in :attr:`PushSender.dropped`), never blocking the agent.

Failures are retried with exponential backoff (5xx, 408, 429, connection errors,
deadline passed) up to ``max_attempts`` (5); other 4xx, redirects and refused addresses
are given up at once. Safety against server-side request forgery: see
:mod:`._push_http` (every resolved address checked, pinned connection, no redirects).
Tokens and credentials are never logged. Delivery is at least once: receivers must be
idempotent.
"""

from __future__ import annotations

import heapq
import http.client
import ipaddress
import itertools
import logging
import random
import threading
import time
from collections import deque
from typing import Any, Final
from urllib.parse import urlsplit

import attrs

from .._net.jsonrpc import encode
from ..a2a.codec import V0_3, V1_0
from ..a2a.types import StreamEvent
from ..errors import ConfigurationError, InvalidParams
from ._push_http import Deadline, Refused, Resolver, address_blocked, post, system_resolve
from ._push_http import tls_context as _tls_context
from .push_options import (
    PushSenderOptions,
    resolve_push_options,
)
from .stores.base import StoredPushConfig, StoredTask

__all__ = ["PushSender", "PushSenderOptions", "Resolver", "address_blocked"]

logger = logging.getLogger(__name__)

#: How long close() waits for the sender threads (plus one delivery's timeout).
CLOSE_TIMEOUT: Final = 10.0

_RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})

_Lane = tuple[str, str]  # (task id, config id): deliveries of a lane keep their order
_Due = tuple[float, int, _Lane]  # (when, tie, lane)


@attrs.frozen
class _Delivery:
    url: str
    body: bytes
    headers: dict[str, str] = attrs.field(repr=False)  # carries credentials
    lane: _Lane
    destination: str  # scheme://host:port: the unit of fairness and back-pressure
    attempt: int = 0


def _destination(url: str) -> str:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return url
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class PushSender:
    """Delivers push notifications from a pool of daemon threads. Thread-safe.

    Args:
        options: How to deliver (:class:`PushSenderOptions`): address policy, timeout,
            retries and back-off, queue limits, threads, resolver, TLS, clock.
        **overrides: Any :class:`PushSenderOptions` attribute by name
            (``allow_private=``, ``timeout=``, ``max_attempts=``...), applied onto
            ``options``.

    Raises:
        ConfigurationError: A limit below 1, or an unknown option.
    """

    def __init__(self, options: PushSenderOptions | None = None, **overrides: Any) -> None:
        opts = resolve_push_options(options, overrides)
        limits = (
            opts.max_attempts,
            opts.queue_limit,
            opts.destination_queue_limit,
            opts.workers,
            opts.per_destination,
        )
        if min(limits) < 1:
            raise ConfigurationError(
                "PushSender: max_attempts, queue limits, workers and per_destination must be >= 1"
            )
        if opts.timeout <= 0:
            raise ConfigurationError("PushSender: timeout must be positive")
        self.options = opts
        self.allow_private = opts.allow_private
        self._timeout = opts.timeout
        self._max_attempts = opts.max_attempts
        self._backoff_base = opts.backoff_base
        self._backoff_max = opts.backoff_max
        self._queue_limit = opts.queue_limit
        self._destination_queue_limit = opts.destination_queue_limit
        self._per_destination = opts.per_destination
        self._resolve = opts.resolve or system_resolve
        self._tls = _tls_context(opts.verify)
        self._clock = opts.clock
        self._cond = threading.Condition()
        self._lanes: dict[_Lane, deque[_Delivery]] = {}
        self._due: list[_Due] = []
        self._parked: dict[str, list[_Due]] = {}  # due, but the destination is saturated
        self._busy: dict[str, int] = {}  # destination -> deliveries in flight
        self._queued: dict[str, int] = {}  # destination -> notifications waiting
        self._ties = itertools.count()
        self._pending = 0
        self._closed = False
        self._drain_deadline: float | None = None
        #: Deliveries made / given up (for tests and metrics).
        self.delivered = 0
        self.dropped = 0
        self._threads = [
            threading.Thread(target=self._loop, name=f"a2a-sync-push-{i}", daemon=True)
            for i in range(opts.workers)
        ]
        for thread in self._threads:
            thread.start()

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
        """Queue ``event`` for each config (never blocks; drops when a queue is full)."""
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
            delivery = _Delivery(
                config.url, bodies[item.revision], headers, lane, _destination(config.url)
            )
            self._enqueue(delivery)

    def _enqueue(self, delivery: _Delivery) -> None:
        with self._cond:
            if self._closed:
                return
            destination = delivery.destination
            queued = self._queued.get(destination, 0)
            if self._pending >= self._queue_limit or queued >= self._destination_queue_limit:
                self.dropped += 1
                logger.warning(
                    "push queue full (%s): notification for task %s dropped",
                    "this webhook" if self._pending < self._queue_limit else "all webhooks",
                    delivery.lane[0],
                )
                return
            self._pending += 1
            self._queued[destination] = queued + 1
            lane = self._lanes.get(delivery.lane)
            if lane is None:
                self._lanes[delivery.lane] = deque([delivery])
                heapq.heappush(self._due, (self._clock(), next(self._ties), delivery.lane))
                self._cond.notify()
            else:
                lane.append(delivery)

    # -- the sender threads ----------------------------------------------------------------------

    def _next(self) -> tuple[_Lane, _Delivery] | None:
        """The next delivery to make (``None``: stop). Called holding the lock."""
        while True:
            if self._closed and (not self._due or self._draining_done()):
                return None
            now = self._clock()
            while self._due and self._due[0][0] <= now:
                entry = heapq.heappop(self._due)
                delivery = self._lanes[entry[2]][0]
                busy = self._busy.get(delivery.destination, 0)
                if busy >= self._per_destination:
                    self._parked.setdefault(delivery.destination, []).append(entry)
                    continue
                self._busy[delivery.destination] = busy + 1
                return entry[2], delivery
            wait = self._due[0][0] - now if self._due else None
            if self._drain_deadline is not None:
                left = max(0.0, self._drain_deadline - now)
                wait = left if wait is None else min(wait, left)
            self._cond.wait(wait)

    def _loop(self) -> None:
        while True:
            with self._cond:
                job = self._next()
            if job is None:
                return
            lane_key, delivery = job
            try:
                outcome = self._deliver(delivery)
            except Exception:  # top of a sender thread: a bug must not stop deliveries
                logger.exception("push delivery failed unexpectedly")
                outcome = None
            self._settle(lane_key, delivery, outcome)

    def _draining_done(self) -> bool:
        return self._drain_deadline is not None and self._clock() >= self._drain_deadline

    def _settle(self, lane_key: _Lane, delivery: _Delivery, retry_in: float | None) -> None:
        with self._cond:
            destination = delivery.destination
            self._busy[destination] -= 1
            if not self._busy[destination]:
                del self._busy[destination]
            for entry in self._parked.pop(destination, ()):  # a slot is free again
                heapq.heappush(self._due, entry)
            lane = self._lanes[lane_key]
            attempt = delivery.attempt + 1
            now = self._clock()
            if retry_in is not None and attempt < self._max_attempts and not self._closed:
                lane[0] = attrs.evolve(delivery, attempt=attempt)
                heapq.heappush(self._due, (now + retry_in, next(self._ties), lane_key))
                self._cond.notify_all()
                return
            if retry_in is not None:
                self.dropped += 1
                logger.warning(
                    "push notification for task %s dropped after %d attempts", lane_key[0], attempt
                )
            lane.popleft()
            self._pending -= 1
            self._queued[destination] -= 1
            if not self._queued[destination]:
                del self._queued[destination]
            if lane:
                heapq.heappush(self._due, (now, next(self._ties), lane_key))
            else:
                del self._lanes[lane_key]
            self._cond.notify_all()

    def _deliver(self, delivery: _Delivery) -> float | None:
        """One attempt. Returns ``None`` when done (delivered or refused), else the delay
        before the next attempt."""
        parts = urlsplit(delivery.url)
        where = f"{parts.scheme}://{parts.hostname}"
        try:
            status, retry_after = post(
                parts,
                delivery.body,
                delivery.headers,
                deadline=Deadline(self._timeout, self._clock),
                resolve=self._resolve,
                allow_private=self.allow_private,
                tls=self._tls,
            )
        except Refused as exc:
            self._count_drop()
            logger.warning("push notification to %s refused: %s", where, exc)
            return None
        except (OSError, http.client.HTTPException) as exc:
            logger.info("push notification to %s failed: %s", where, type(exc).__name__)
            return self._backoff(delivery.attempt, None)
        if 200 <= status < 300:
            with self._cond:
                self.delivered += 1
            return None
        if status in _RETRY_STATUSES:
            logger.info("push notification to %s answered %d; will retry", where, status)
            return self._backoff(delivery.attempt, retry_after)
        self._count_drop()
        logger.warning("push notification to %s answered %d; not retried", where, status)
        return None

    def _count_drop(self) -> None:
        with self._cond:
            self.dropped += 1

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
        """Deliver what is due within ``timeout`` (no new retries), then stop the threads.

        A delivery under way when ``timeout`` passes still runs to its own deadline
        (``timeout`` of the sender), so this may take up to that much longer.

        Returns:
            True when every sender thread ended.
        """
        with self._cond:
            self._closed = True
            self._drain_deadline = self._clock() + timeout
            self._cond.notify_all()
        end = time.monotonic() + timeout + self._timeout + 1.0
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)
