"""ResilientA2AClient: happy-path overhead over A2AClient, and recovery time after a cut.

**Overhead.** The same calls through a plain :class:`A2AClient` and through a
:class:`ResilientA2AClient` wrapping it (one agent, default config), against the near-free
server of ``benchmarks/a2a_client.py`` in another process, so what is measured is client
cost. Variants run interleaved (``benchmarks/harness.py``); CPU is this process's (all
threads). Workloads: ``SendMessage`` answered with a reply message (CPU per request), and
``SendStreamingMessage`` of 100 chunks (102 events; CPU per event). Target: the resilient
wrapper costs at most 5 % more CPU per call than the plain client.

**Wrapper.** The same comparison without a network: the agent is a stub whose calls
return canned answers at once, so the difference is the wrapper's own CPU per call (and
per streamed event), free of the loopback noise that dominates the figures above on a
shared machine.

**Recovery.** The scripted a2a-sdk agent (tests/peers) behind the fault proxy
(tests/support), which cuts each message stream right after its first event (the Task).
Two cases, each ``--cuts`` times; median and p95 of:

* ``resubscribe``: the task is still running (``slow 20``, 1 s): time from the last event
  before the cut to the resubscription being answered (its headers; the snapshot follows in
  the same write), i.e. how long the client is blind;
* ``finished``: the task completed while the client was away (``chunks 20``): time from the
  last event before the cut to the final status delivered (resubscribe answered
  UnsupportedOperation, one GetTask, the difference delivered).

The reconnect delay is the config's backoff (``--delay``, default 0: the mechanics alone;
the default config adds its first backoff, 0.19-0.25 s, on top).

Run from the repo top::

    .venv/bin/python -m benchmarks.resilience
    .venv/bin/python -m benchmarks.resilience --part overhead --reps 7 --n 500
    .venv/bin/python -m benchmarks.resilience --part wrapper
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from a2a_sync._net.http import HTTPTransport
from a2a_sync.client import A2AClient, ResilientA2AClient, TaskStream
from a2a_sync.client._message import as_message
from a2a_sync.policies import ResilienceConfig
from a2a_sync.types import (
    Artifact,
    Message,
    Part,
    SendResult,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from benchmarks.a2a_client import REPLY_TEXT, STREAM_CHUNKS, raw_server, sdk_server
from benchmarks.harness import Result, Variant, measure, render, summarize

OVERHEAD_TARGET = 1.05  # resilient CPU per call <= 1.05 x plain
RECOVERY_CALL_TIMEOUT = 10.0  # per call; loopback answers take milliseconds

# -- overhead --------------------------------------------------------------------------------------


def overhead(
    url: str, pid: int, *, n: int, streams: int, reps: int
) -> tuple[list[Result], list[str]]:
    plain = A2AClient.from_url(url, timeout=30)
    resilient = ResilientA2AClient(A2AClient.from_url(url, timeout=30))

    def unary(client: A2AClient | ResilientA2AClient) -> Callable[[int], int]:
        def run(count: int) -> int:
            for _ in range(count):
                assert client.send_message("reply").text == REPLY_TEXT
            return count

        return run

    def stream(client: A2AClient | ResilientA2AClient) -> Callable[[int], int]:
        def run(count: int) -> int:
            events = 0
            for _ in range(max(1, count)):
                with client.stream_message(f"chunks {STREAM_CHUNKS}") as task_stream:
                    for _event in task_stream:
                        events += 1
                assert task_stream.get_final_task().text.count(",") == STREAM_CHUNKS
            return events

        return run

    try:
        unary_results = measure(
            [
                Variant("plain", unary(plain), server_pid=pid),
                Variant("resilient", unary(resilient), server_pid=pid),
            ],
            n=n,
            reps=reps,
            baseline="plain",
        )
        stream_results = measure(
            [
                Variant("plain", stream(plain), server_pid=pid),
                Variant("resilient", stream(resilient), server_pid=pid),
            ],
            n=streams,
            reps=reps,
            baseline="plain",
        )
    finally:
        plain.close()
        resilient.close()
    verdicts = []
    for label, results in (
        ("unary, per request", unary_results),
        ("stream, per event", stream_results),
    ):
        ratio = _paired_cpu(results, "resilient", "plain")
        ok = "met" if ratio <= OVERHEAD_TARGET else "MISSED"
        verdicts.append(
            f"{label}: resilient/plain CPU {ratio:.3f} (target <= {OVERHEAD_TARGET}) {ok}"
        )
    return unary_results + stream_results, verdicts


def _paired_cpu(results: list[Result], name: str, base: str) -> float:
    by_name = {r.name: r for r in results}
    base_by_rep = {s.rep: s for s in by_name[base].samples}
    return statistics.median(
        (s.cpu / s.ops) / (base_by_rep[s.rep].cpu / base_by_rep[s.rep].ops)
        for s in by_name[name].samples
    )


# -- wrapper (no network) ------------------------------------------------------------------------


def _canned_events() -> list[StreamEvent]:
    events: list[StreamEvent] = [
        Task(id="t", context_id="c", status=TaskStatus(state=TaskState.working))
    ]
    for index in range(STREAM_CHUNKS):
        artifact = Artifact(artifact_id="a", parts=[Part.from_text(f"{index},")])
        events.append(
            TaskArtifactUpdateEvent(
                task_id="t", context_id="c", artifact=artifact, append=index > 0
            )
        )
    events.append(
        TaskStatusUpdateEvent(
            task_id="t", context_id="c", status=TaskStatus(state=TaskState.completed)
        )
    )
    return events


class _CannedStream:
    """Stands in for a TaskStream: the canned events, nothing read from a socket."""

    def __init__(self, events: list[StreamEvent]) -> None:
        self._events = iter(events)
        self.task_id: str | None = "t"
        self.task: Task | None = None
        self.message: Message | None = None
        self.needs_confirmation = False  # the canned events fold without deviations

    def __iter__(self) -> _CannedStream:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def close(self) -> None:
        pass


class _StubAgent(A2AClient):
    """An agent answering at once: the message is built as the real client builds it."""

    events = _canned_events()
    canned_reply = Message.agent(REPLY_TEXT, message_id="r")

    def send_message(self, message: Any, **kwargs: Any) -> SendResult:
        as_message(message, task_id=kwargs.get("task_id"), context_id=kwargs.get("context_id"))
        return self.canned_reply

    def stream_message(self, message: Any, **kwargs: Any) -> TaskStream:
        as_message(message, task_id=kwargs.get("task_id"), context_id=kwargs.get("context_id"))
        return _CannedStream(self.events)  # type: ignore[return-value]


def wrapper(*, n: int, streams: int, reps: int) -> list[Result]:
    stub = _StubAgent("http://127.0.0.1:9/")
    resilient = ResilientA2AClient(stub)

    def unary(client: A2AClient | ResilientA2AClient) -> Callable[[int], int]:
        def run(count: int) -> int:
            for _ in range(count):
                client.send_message("reply")
            return count

        return run

    def stream(client: A2AClient | ResilientA2AClient) -> Callable[[int], int]:
        def run(count: int) -> int:
            events = 0
            for _ in range(count):
                for _event in client.stream_message("chunks"):
                    events += 1
            return events

        return run

    return measure(
        [
            Variant("plain unary", unary(stub)),
            Variant("resilient unary", unary(resilient), baseline="plain unary"),
            Variant("plain stream", stream(stub)),
            Variant("resilient stream", stream(resilient), baseline="plain stream"),
        ],
        n=n,
        reps=reps,
        baseline="plain unary",
    )


# -- recovery -------------------------------------------------------------------------------------


class _TimedAgent(A2AClient):
    """Records when each resubscription was answered (its response headers arrived)."""

    answered: list[float]

    def subscribe(self, task_id: str, **kwargs: Any) -> TaskStream:
        stream = super().subscribe(task_id, **kwargs)
        self.answered.append(time.perf_counter())
        return stream


def recovery(url: str, *, cuts: int, delay: float) -> dict[str, list[float]]:
    from tests.support.faultproxy import FaultProxy

    config = ResilienceConfig(retry_base_delay=delay, task_timeout=30.0)
    timings: dict[str, list[float]] = {"resubscribe": [], "finished": []}
    with FaultProxy(url) as proxy:
        agent = _TimedAgent(proxy.url + "/", transport=HTTPTransport(timeout=RECOVERY_CALL_TIMEOUT))
        agent.answered = []
        cleared = threading.Event()

        def before_resubscribe(seconds: float) -> None:
            proxy.clear()  # the resubscription's connection is not cut
            cleared.set()
            if seconds:
                time.sleep(seconds)

        client = ResilientA2AClient(agent, config, sleep=before_resubscribe)
        for case, text in (("resubscribe", "slow 20"), ("finished", "chunks 20")):
            for _ in range(cuts):
                proxy.cut_after_events(1)
                agent.answered.clear()
                stream = client.stream_message(text)
                first = next(stream)
                cut_at = time.perf_counter()  # the proxy closes right after this event
                assert isinstance(first, Task)
                final_at = None
                for event in stream:
                    if isinstance(event, TaskStatusUpdateEvent) and event.status.state.is_terminal:
                        final_at = time.perf_counter()
                assert stream.reconnects == 1, "the stream was expected to be cut once"
                assert stream.get_final_task().text.count(",") == 20
                if case == "resubscribe":
                    timings[case].append(agent.answered[0] - cut_at)
                else:
                    assert final_at is not None
                    timings[case].append(final_at - cut_at)
        client.close()
        agent.close()
    return timings


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def render_recovery(timings: dict[str, list[float]], delay: float) -> str:
    lines = [
        f"Recovery after a stream cut (a2a-sdk agent behind the fault proxy; reconnect delay "
        f"{delay} s; n={len(next(iter(timings.values())))} cuts per case)",
        f"{'case':<12}  {'median ms':>9}  {'p95 ms':>7}  {'max ms':>7}",
    ]
    for case, values in timings.items():
        lines.append(
            f"{case:<12}  {statistics.median(values) * 1e3:9.1f}  "
            f"{_percentile(values, 0.95) * 1e3:7.1f}  {max(values) * 1e3:7.1f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--part", choices=["overhead", "wrapper", "recovery", "all"], default="all")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (overhead)")
    parser.add_argument("--n", type=int, default=300, help="unary requests per run")
    parser.add_argument("--streams", type=int, default=30, help="streams per run")
    parser.add_argument("--cuts", type=int, default=30, help="cut streams per recovery case")
    parser.add_argument("--delay", type=float, default=0.0, help="reconnect backoff base (s)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    out: dict[str, Any] = {
        "meta": {"python": platform.python_version(), "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    }
    if args.part in ("overhead", "all"):
        with raw_server() as (url, pid):
            results, verdicts = overhead(url, pid, n=args.n, streams=args.streams, reps=args.reps)
        if args.json:
            out["overhead"] = {"summaries": summarize(results), "verdicts": verdicts}
        else:
            half = len(results) // 2
            print(
                render(
                    results[:half], f"SendMessage, ops = requests (n={args.n}, reps={args.reps})"
                )
            )
            print()
            print(
                render(
                    results[half:],
                    f"SendStreamingMessage, ops = events ({args.streams} streams x "
                    f"{STREAM_CHUNKS + 2} events, reps={args.reps})",
                )
            )
            print("\n".join(verdicts))
            print()
    if args.part in ("wrapper", "all"):
        results = wrapper(n=20 * args.n, streams=20 * args.streams, reps=args.reps)
        if args.json:
            out["wrapper"] = summarize(results)
        else:
            print(
                render(
                    results,
                    f"Wrapper alone (stub agent, no network): unary ops = calls "
                    f"(n={20 * args.n}); stream ops = events ({STREAM_CHUNKS + 2}/stream)",
                )
            )
            by_name = {str(r["name"]): r for r in summarize(results)}
            for kind in ("unary", "stream"):
                extra = float(by_name[f"resilient {kind}"]["cpu_us_per_op"] or 0) - float(
                    by_name[f"plain {kind}"]["cpu_us_per_op"] or 0
                )
                unit = "call" if kind == "unary" else "event"
                print(f"{kind}: the wrapper adds {extra:.2f} µs CPU per {unit}")
            print()
    if args.part in ("recovery", "all"):
        with sdk_server() as (url, _pid):
            timings = recovery(url, cuts=args.cuts, delay=args.delay)
        if args.json:
            out["recovery"] = {
                case: {
                    "median_s": statistics.median(values),
                    "p95_s": _percentile(values, 0.95),
                    "samples_s": values,
                }
                for case, values in timings.items()
            }
        else:
            print(render_recovery(timings, args.delay))
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
