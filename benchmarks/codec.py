"""Micro-benchmark of the wire codecs (µs per call, best of several rounds).

Run: ``.venv/bin/python benchmarks/codec.py``
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable
from typing import Any

from a2a_sync._codec import V0_3, V1_0
from a2a_sync.types import (
    Artifact,
    Message,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

ROUNDS = 5


def bench(name: str, fn: Callable[[], Any]) -> float:
    fn()  # warm up (builds the converters)
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    best = min(timer.repeat(ROUNDS, number)) / number * 1e6
    print(f"{name:<44} {best:8.2f} µs")
    return best


def main() -> None:
    message = Message.user("What is the weather in Paris tomorrow?", context_id="ctx-1")
    task = Task(
        id="task-1",
        context_id="ctx-1",
        status=TaskStatus.now(TaskState.completed),
        artifacts=[Artifact.create("It will be sunny, 24 °C.", name="answer")],
        history=[message],
    )
    artifact_event = TaskArtifactUpdateEvent(
        task_id="task-1",
        context_id="ctx-1",
        artifact=Artifact(artifact_id="a-1", parts=[Part.from_text("chunk of streamed text ")]),
        append=True,
    )
    status_event = TaskStatusUpdateEvent(
        task_id="task-1", context_id="ctx-1", status=TaskStatus.now(TaskState.working)
    )
    for codec in (V1_0, V0_3):
        wire_artifact = codec.dump_stream_event(artifact_event)
        wire_status = codec.dump_stream_event(status_event)
        wire_message = codec.dump_message(message)
        wire_task = codec.dump_task(task)
        raw_artifact = json.dumps(wire_artifact)
        print(f"--- A2A {codec.revision}")
        bench("load_stream_event(artifact-update)", lambda: codec.load_stream_event(wire_artifact))
        bench("json.loads + load_stream_event(artifact)",
              lambda: codec.load_stream_event(json.loads(raw_artifact)))  # fmt: skip
        bench("load_stream_event(status-update)", lambda: codec.load_stream_event(wire_status))
        bench("dump_stream_event(artifact-update)", lambda: codec.dump_stream_event(artifact_event))
        bench("load_message (1 text part)", lambda: codec.load_message(wire_message))
        bench("dump_message (1 text part)", lambda: codec.dump_message(message))
        bench("dump_send_params", lambda: codec.dump_send_params(message))
        bench("load_task (1 artifact, 1 history msg)", lambda: codec.load_task(wire_task))
        bench("dump_task (1 artifact, 1 history msg)", lambda: codec.dump_task(task))


if __name__ == "__main__":
    main()
