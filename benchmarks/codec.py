"""Wire codec cost: a2a_sync's cattrs codecs against a2a-sdk 1.3's own (de)serialization.

Operations on the JSON a client decodes per streamed event and builds per request:

* load an ``artifactUpdate`` stream item (the most frequent event: one text chunk) and a
  ``statusUpdate`` (with timestamp): ours for 1.0 and 0.3; a2a-sdk's is protobuf
  ``ParseDict`` into ``StreamResponse`` (1.0) and its pydantic 0.3 model (0.3);
* dump a one-part user Message; ours against protobuf ``MessageToDict``;
* load and dump a completed Task with one artifact and one history message.

Every pair is checked to produce the same JSON before it is timed. No JSON text parsing
(``json.loads``) is included. Run from the repository root:
``.venv/bin/python -m benchmarks.codec [--reps 7] [--n 20000]``
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a_sync.a2a.codec import V0_3, V1_0
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
from benchmarks.harness import Variant, run_cli


def _repeat(operation: Callable[[], Any]) -> Callable[[int], int]:
    def run(n: int) -> int:
        for _ in range(n):
            operation()
        return n

    return run


def _check(name: str, ours: Any, theirs: Any) -> None:
    if ours != theirs:
        sys.exit(f"{name}: a2a_sync and a2a-sdk disagree:\n{ours}\n{theirs}")


def main(argv: Sequence[str] | None = None) -> None:
    message = Message.user("What is the weather in Paris tomorrow?", context_id="ctx-1")
    task = Task(
        id="task-1",
        context_id="ctx-1",
        status=TaskStatus.now(TaskState.completed),
        artifacts=[Artifact.create("It will be sunny, 24 °C.", name="answer")],
        history=[message],
    )
    artifact_update = TaskArtifactUpdateEvent(
        task_id="task-1",
        context_id="ctx-1",
        artifact=Artifact(artifact_id="a-1", parts=[Part.from_text("chunk of streamed text ")]),
        append=True,
    )
    status_update = TaskStatusUpdateEvent(
        task_id="task-1", context_id="ctx-1", status=TaskStatus.now(TaskState.working)
    )
    artifact_v1 = V1_0.dump_stream_event(artifact_update)
    status_v1 = V1_0.dump_stream_event(status_update)
    artifact_v03 = V0_3.dump_stream_event(artifact_update)
    task_v1 = V1_0.dump_task(task)
    message_pb = ParseDict(V1_0.dump_message(message), a2a_pb2.Message())
    task_pb = ParseDict(task_v1, a2a_pb2.Task())

    _check("stream item", V1_0.dump_stream_event(V1_0.load_stream_event(artifact_v1)),
           MessageToDict(ParseDict(artifact_v1, a2a_pb2.StreamResponse())))  # fmt: skip
    _check("message", V1_0.dump_message(message), MessageToDict(message_pb))
    _check("task", V1_0.dump_task(task), MessageToDict(task_pb))
    _check("0.3 event", V0_3.dump_stream_event(V0_3.load_stream_event(artifact_v03)),
           v03.TaskArtifactUpdateEvent.model_validate(artifact_v03).model_dump(
               mode="json", by_alias=True, exclude_none=True))  # fmt: skip

    variants = [
        Variant("sdk 1.0 load artifactUpdate",
                _repeat(lambda: ParseDict(artifact_v1, a2a_pb2.StreamResponse()))),
        Variant("ours 1.0 load artifactUpdate",
                _repeat(lambda: V1_0.load_stream_event(artifact_v1))),
        Variant("sdk 1.0 load statusUpdate",
                _repeat(lambda: ParseDict(status_v1, a2a_pb2.StreamResponse()))),
        Variant("ours 1.0 load statusUpdate", _repeat(lambda: V1_0.load_stream_event(status_v1)),
                baseline="sdk 1.0 load statusUpdate"),
        Variant("sdk 0.3 load artifact-update",
                _repeat(lambda: v03.TaskArtifactUpdateEvent.model_validate(artifact_v03))),
        Variant("ours 0.3 load artifact-update",
                _repeat(lambda: V0_3.load_stream_event(artifact_v03)),
                baseline="sdk 0.3 load artifact-update"),
        Variant("sdk 1.0 dump message", _repeat(lambda: MessageToDict(message_pb))),
        Variant("ours 1.0 dump message", _repeat(lambda: V1_0.dump_message(message)),
                baseline="sdk 1.0 dump message"),
        Variant("ours 1.0 dump send params", _repeat(lambda: V1_0.dump_send_params(message)),
                baseline="sdk 1.0 dump message"),
        Variant("sdk 1.0 load task", _repeat(lambda: ParseDict(task_v1, a2a_pb2.Task()))),
        Variant("ours 1.0 load task", _repeat(lambda: V1_0.load_task(task_v1)),
                baseline="sdk 1.0 load task"),
        Variant("sdk 1.0 dump task", _repeat(lambda: MessageToDict(task_pb))),
        Variant("ours 1.0 dump task", _repeat(lambda: V1_0.dump_task(task)),
                baseline="sdk 1.0 dump task"),
    ]  # fmt: skip
    run_cli(
        variants,
        baseline="sdk 1.0 load artifactUpdate",
        default_n=20_000,
        title="A2A wire codecs: a2a_sync (cattrs) vs a2a-sdk 1.3 (protobuf / pydantic)",
        argv=argv,
    )


if __name__ == "__main__":
    main()
