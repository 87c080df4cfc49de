"""The gRPC binding's conversion edge alone: a2a_sync's ProtoJSON reader and writer
(:mod:`a2a_sync.a2a.grpc.protojson`) against protobuf's ``json_format``, no network, one
process (``python -m benchmarks.grpc --part convert``). For an A/B of two trees, run it
with ``PYTHONPATH`` on each: the paired ratios to ``json_format`` are the steady figure
on a shared machine."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.harness import Variant, run_cli

# -- the conversion edge alone (no network, one process) -----------------------------------------

#: What the client sends and reads most: a SendMessage request, its answer (a completed
#: task with history and one artifact) and a streamed artifact chunk.
SEND_REQUEST = {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": "m-1"}}
TASK_ANSWER = {
    "task": {
        "id": "t-1",
        "contextId": "c-1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-02T06:19:33.704371Z"},
        "artifacts": [{"artifactId": "a-1", "name": "echo", "parts": [{"text": "echo: hi"}]}],
        "history": [
            {
                "messageId": "m-1",
                "contextId": "c-1",
                "taskId": "t-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
        ],
    }
}
CHUNK_EVENT = {
    "artifactUpdate": {
        "taskId": "t-1",
        "contextId": "c-1",
        "artifact": {"artifactId": "a-1", "parts": [{"text": "c7;"}]},
        "append": True,
    }
}


def convert_table(rest: list[str]) -> None:
    """CPU per conversion of a2a_sync's ProtoJSON edge against protobuf's ``json_format``
    (baseline), same messages. Run it with ``PYTHONPATH`` on two trees for an A/B."""
    from google.protobuf import json_format

    from a2a_sync.a2a.grpc import protojson
    from a2a_sync.a2a.grpc.messages import message_class

    request = message_class("SendMessageRequest")
    answer = json_format.ParseDict(TASK_ANSWER, message_class("SendMessageResponse")())
    event = json_format.ParseDict(CHUNK_EVENT, message_class("StreamResponse")())
    assert protojson.to_dict(answer) == json_format.MessageToDict(answer)
    assert protojson.parse(SEND_REQUEST, request()) == json_format.ParseDict(
        SEND_REQUEST, request()
    )

    def repeat(work: Callable[[], object]) -> Callable[[int], int]:
        def run(n: int) -> int:
            for _ in range(n):
                work()
            return n

        return run

    run_cli(
        [
            Variant(
                "jf-parse-send", repeat(lambda: json_format.ParseDict(SEND_REQUEST, request()))
            ),
            Variant(
                "parse-send",
                repeat(lambda: protojson.parse(SEND_REQUEST, request())),
                baseline="jf-parse-send",
            ),
            Variant("jf-dict-task", repeat(lambda: json_format.MessageToDict(answer))),
            Variant(
                "dict-task", repeat(lambda: protojson.to_dict(answer)), baseline="jf-dict-task"
            ),
            Variant("jf-dict-event", repeat(lambda: json_format.MessageToDict(event))),
            Variant(
                "dict-event", repeat(lambda: protojson.to_dict(event)), baseline="jf-dict-event"
            ),
        ],
        baseline="jf-parse-send",
        default_n=5000,
        title="gRPC conversion edge CPU: a2a_sync protojson vs json_format (one process)",
        argv=rest,
    )
