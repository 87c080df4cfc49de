"""Issue 18 item 4, third pass: the codec's shortcuts on the client's hot path (a text
message built directly, SendMessage params dumped without a SendMessageParams object,
optional strings and objects read without cattrs' Optional dispatch) give exactly what
the generic paths give, and still refuse what they refused."""

from __future__ import annotations

from typing import Any

import pytest

from a2a_sync.a2a.codec import V0_3, V1_0, Codec
from a2a_sync.a2a.methods import IDEMPOTENT, Operation, wire_name
from a2a_sync.a2a.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageParams,
    Task,
    TaskState,
)
from a2a_sync.client._message import as_message
from a2a_sync.errors import ProtocolError

CODECS = pytest.mark.parametrize("codec", [V1_0, V0_3], ids=["1.0", "0.3"])


@pytest.mark.parametrize(("task_id", "context_id"), [(None, None), ("t-1", None), ("t-1", "c-1")])
def test_text_message_equals_message_user(task_id: str | None, context_id: str | None) -> None:
    made = as_message("hello", task_id=task_id, context_id=context_id)
    expected = Message.user(
        "hello", task_id=task_id, context_id=context_id, message_id=made.message_id
    )
    assert made == expected
    assert made.role is Role.user
    assert made.parts == [Part(text="hello")]
    # A fresh id per message, as Message.user makes.
    assert as_message("hello", task_id=None, context_id=None).message_id != made.message_id


def _generic(codec: Codec, params: SendMessageParams) -> dict[str, Any]:
    out: dict[str, Any] = codec.dump(params)
    if codec.revision == "0.3" and params.configuration is None:
        out["configuration"] = {"blocking": True}
    return out


@CODECS
def test_send_params_shortcut_equals_the_params_hook(codec: Codec) -> None:
    message = as_message("hi", task_id="t-1", context_id="c-1")
    assert codec.dump_send_params(message) == _generic(codec, SendMessageParams(message=message))


@CODECS
def test_send_params_with_options_take_the_generic_path(codec: Codec) -> None:
    message = as_message("hi", task_id=None, context_id=None)
    configuration = SendMessageConfiguration(history_length=2)
    dumped = codec.dump_send_params(message, configuration, metadata={"k": 1})
    expected = _generic(
        codec, SendMessageParams(message=message, configuration=configuration, metadata={"k": 1})
    )
    assert dumped == expected
    assert dumped["metadata"] == {"k": 1}


def _reply(codec: Codec, **fields: Any) -> dict[str, Any]:
    if codec is V1_0:
        return {"role": "ROLE_AGENT", "parts": [{"text": "x"}], "messageId": "m", **fields}
    return {
        "kind": "message",
        "role": "agent",
        "parts": [{"kind": "text", "text": "x"}],
        "messageId": "m",
        **fields,
    }


@CODECS
def test_optional_strings_and_objects_are_read(codec: Codec) -> None:
    loaded = codec.load_message(_reply(codec, contextId="c", taskId=None, metadata={"a": [1]}))
    assert (loaded.context_id, loaded.task_id, loaded.metadata) == ("c", None, {"a": [1]})


@CODECS
@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("contextId", 3, "expected str @ $.contextId"),
        ("taskId", ["t"], "expected str @ $.taskId"),
        ("metadata", [1], "expected dict @ $.metadata"),
        ("metadata", "x", "expected dict @ $.metadata"),
    ],
)
def test_optional_fields_of_the_wrong_type_are_refused_at_their_path(
    codec: Codec, field: str, value: Any, detail: str
) -> None:
    with pytest.raises(ProtocolError) as caught:
        codec.load_message(_reply(codec, **{field: value}))
    assert any(detail in line for line in caught.value.details), caught.value.details


def test_task_send_result_with_optional_fields_loads() -> None:
    obj = {
        "task": {
            "id": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "metadata": {"k": "v"},
        }
    }
    task = V1_0.load_send_result(obj)
    assert isinstance(task, Task)
    assert (task.id, task.context_id, task.metadata) == ("t-1", "c-1", {"k": "v"})
    with pytest.raises(ProtocolError) as caught:
        V1_0.load_send_result({"task": {**obj["task"], "contextId": 5}})
    assert any("$.task.contextId" in line for line in caught.value.details)


def test_enum_hashes_keep_their_lookups() -> None:
    # Role and TaskState hash as their string (their names are their values), so a member
    # and its plain value still find each other in sets and dict keys.
    for member in (*Role, *TaskState):
        assert member.name == member.value
        assert hash(member) == hash(member.value)
        assert {member.value: 1}[member] == 1
    assert TaskState.completed.is_terminal
    assert not TaskState.working.is_terminal
    assert Operation.GET_TASK in IDEMPOTENT
    assert Operation.SEND_MESSAGE not in IDEMPOTENT
    assert wire_name(Operation.SEND_MESSAGE, "1.0") == "SendMessage"
    assert len({*Operation}) == len(Operation)
