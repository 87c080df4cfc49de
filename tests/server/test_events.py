"""Subscription ordering: gaps are filled from the log, repeats dropped, waits bounded."""

from __future__ import annotations

import threading

from a2a_sync.server.events import EventBroker, LogEntry, Subscription
from a2a_sync.types import Message

WAIT = 5.0


def msg(i: int) -> Message:
    return Message.user(str(i), message_id=str(i))


class Log:
    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self.reads = 0

    def append(self, broker: EventBroker) -> None:
        seq = len(self.entries) + 1
        self.entries.append((seq, msg(seq)))
        broker.publish("t", seq, msg(seq))

    def backlog(self, task_id: str, after: int) -> list[LogEntry]:
        self.reads += 1
        return self.entries[after:]


def test_a_reader_keeping_pace_never_reads_the_log_after_catching_up() -> None:
    broker, log = EventBroker(), Log()
    sub = broker.subscribe("t", 0, log.backlog)
    assert sub.poll(0) == []
    reads = log.reads
    for _ in range(5):
        log.append(broker)
        assert [seq for seq, _ in sub.poll(WAIT)] == [len(log.entries)]
    assert log.reads == reads


def test_overflow_inside_one_batch_is_refilled_from_the_log_in_order() -> None:
    broker, log = EventBroker(buffer=3), Log()
    sub = broker.subscribe("t", 0, log.backlog)
    assert sub.poll(0) == []
    for _ in range(10):
        log.append(broker)
    got = [seq for seq, _ in sub.poll(WAIT)]
    assert got == list(range(1, 11))
    log.append(broker)
    assert [seq for seq, _ in sub.poll(WAIT)] == [11]


def test_poll_times_out_empty_and_closed_subscription_stops_receiving() -> None:
    broker, log = EventBroker(), Log()
    sub = broker.subscribe("t", 0, log.backlog)
    assert sub.poll(0.01) == []
    assert broker.subscriber_count("t") == 1
    sub.close()
    assert broker.subscriber_count("t") == 0
    log.append(broker)
    assert sub.poll(0.01) == []


def test_a_publisher_never_blocks_on_a_stalled_reader() -> None:
    broker, log = EventBroker(buffer=2), Log()
    Subscription  # noqa: B018 - the type under test
    sub = broker.subscribe("t", 0, log.backlog)
    done = threading.Event()

    def publish() -> None:
        for _ in range(1000):
            log.append(broker)
        done.set()

    threading.Thread(target=publish).start()
    assert done.wait(WAIT)
    got: list[int] = []
    while len(got) < 1000:
        batch = sub.poll(WAIT)
        assert batch
        got += [seq for seq, _ in batch]
    assert got == list(range(1, 1001))
