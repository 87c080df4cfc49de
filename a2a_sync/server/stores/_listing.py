"""ListTasks pages shared by the stores: the sort key (status time, id), signed page tokens,
the SQL filters of the SQL stores and the in-memory page of the memory store.

Internal to :mod:`a2a_sync.server.stores` (re-exported by :mod:`.base`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any, Final

import attrs

from ...a2a.types import ListTasksParams, ListTasksResult, Task, TaskState
from ...errors import InvalidParams

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PageToken",
    "micros_of",
    "page",
    "sql_task_filters",
    "status_time",
]

#: ListTasks page size when the caller names none (what a2a-sdk uses).
DEFAULT_PAGE_SIZE: Final = 50
#: Largest ListTasks page (A2A 1.0 §3.1.4; a2a-sdk refuses more than 100 too).
MAX_PAGE_SIZE: Final = 100


def status_time(task: Task) -> datetime:
    """The instant a task's status was entered (its timestamp; epoch when unset)."""
    stamp = task.status.timestamp
    if stamp is None:
        return _EPOCH
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


#: Bytes of the HMAC-SHA256 tag that ends a page token.
_TAG_BYTES: Final = 16
#: Bounds of a token's sort key: microseconds within SQL's 64-bit integers, and task ids
#: of a sane length (a token outside them was not issued here).
_MAX_MICROS: Final = 2**62
_MAX_TASK_ID: Final = 4096
_BAD_PAGE: Final = (
    "invalid pageToken: pass the nextPageToken of an earlier ListTasks answer unchanged, "
    "or omit it to start from the first page"
)


@attrs.frozen
class PageToken:
    """Where a ListTasks page ends: the sort key of its last task.

    Tasks are listed by status time, newest first, ties by id descending; the next page
    starts strictly after ``(micros, task_id)``. The token is opaque to clients and
    integrity-protected: an HMAC-SHA256 tag under the store's ``page_token_key`` ends it,
    so a token the store did not issue is refused with InvalidParams before any query.
    """

    micros: int
    task_id: str

    def encode(self, key: bytes) -> str:
        """The token as sent to the client, tagged with ``key``."""
        raw = json.dumps([self.micros, self.task_id], separators=(",", ":")).encode()
        tag = hmac.new(key, raw, hashlib.sha256).digest()[:_TAG_BYTES]
        return base64.urlsafe_b64encode(tag + raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, token: str, key: bytes) -> PageToken:
        """Read a client's token.

        Raises:
            InvalidParams: The token was not issued by this store (bad encoding, bad tag,
                or a sort key out of range).
        """
        try:
            blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, binascii.Error) as exc:
            raise InvalidParams(_BAD_PAGE) from exc
        tag, raw = blob[:_TAG_BYTES], blob[_TAG_BYTES:]
        if not hmac.compare_digest(tag, hmac.new(key, raw, hashlib.sha256).digest()[:_TAG_BYTES]):
            raise InvalidParams(_BAD_PAGE)
        try:
            micros, task_id = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise InvalidParams(_BAD_PAGE) from exc
        if (
            isinstance(micros, bool)
            or not isinstance(micros, int)
            or not -_MAX_MICROS <= micros <= _MAX_MICROS
            or not isinstance(task_id, str)
            or len(task_id) > _MAX_TASK_ID
        ):
            raise InvalidParams(_BAD_PAGE)
        return cls(micros, task_id)

    @classmethod
    def after(cls, task: Task) -> PageToken:
        """The token that continues after ``task``."""
        return cls(micros_of(status_time(task)), task.id)


def sql_task_filters(
    params: ListTasksParams, principal: str, placeholder: str
) -> tuple[list[str], list[Any]]:
    """The WHERE clauses and bound values of a ListTasks query on the ``a2a_tasks`` table
    (shared by the SQL stores; ``placeholder`` is ``"?"`` or ``"%s"``). Only constant
    clauses are returned; every value is a bound parameter."""
    where = [f"principal = {placeholder}"]
    args: list[Any] = [principal]
    if params.context_id:
        where.append(f"context_id = {placeholder}")
        args.append(params.context_id)
    if params.status is not None and params.status is not TaskState.unknown:
        where.append(f"state = {placeholder}")
        args.append(params.status.value)
    if params.status_timestamp_after is not None:
        where.append(f"status_micros > {placeholder}")
        args.append(micros_of(params.status_timestamp_after))
    return where, args


def micros_of(moment: datetime) -> int:
    """Microseconds since the epoch (UTC)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def page(tasks: Iterable[Task], params: ListTasksParams, key: bytes) -> ListTasksResult:
    """Filter, sort and cut one ListTasks page out of a principal's tasks (in memory);
    ``key`` signs and checks page tokens.

    ``params.page_size`` must be validated already (1 .. :data:`MAX_PAGE_SIZE` or None).
    """
    after_micros = (
        micros_of(params.status_timestamp_after)
        if params.status_timestamp_after is not None
        else None
    )
    keyed = []
    for task in tasks:
        if params.context_id and task.context_id != params.context_id:
            continue
        if (
            params.status not in (None, TaskState.unknown)
            and task.status.state is not params.status
        ):
            continue
        micros = micros_of(status_time(task))
        if after_micros is not None and micros <= after_micros:
            continue
        keyed.append(((micros, task.id), task))
    keyed.sort(key=lambda pair: pair[0], reverse=True)
    total = len(keyed)
    if params.page_token:
        token = PageToken.decode(params.page_token, key)
        bound = (token.micros, token.task_id)
        keyed = [pair for pair in keyed if pair[0] < bound]
    size = params.page_size or DEFAULT_PAGE_SIZE
    chosen = [task for _, task in keyed[:size]]
    next_token = PageToken.after(chosen[-1]).encode(key) if len(keyed) > size else ""
    return ListTasksResult(
        tasks=chosen, next_page_token=next_token, page_size=size, total_size=total
    )
