"""The A2A models: named constructors, validation, read helpers, immutability, safe reprs."""

from __future__ import annotations

import uuid
from datetime import timezone

import attrs
import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    AuthenticationInfo,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskState,
    TaskStatus,
)

TERMINAL = {TaskState.completed, TaskState.canceled, TaskState.failed, TaskState.rejected}
INTERRUPTED = {TaskState.input_required, TaskState.auth_required}


def test_message_user_wraps_text_in_a_part_and_generates_a_uuid4_id() -> None:
    message = Message.user("hi")

    assert message.role is Role.user
    assert message.parts == [Part(text="hi")]
    assert uuid.UUID(message.message_id).version == 4
    assert Message.user("hi").message_id != message.message_id


def test_message_constructors_keep_content_order_and_options() -> None:
    file = Part.file_url("https://example.com/a.png", media_type="image/png")

    message = Message.agent(
        "look", file, task_id="t", context_id="c", message_id="m", reference_task_ids=["r"]
    )

    assert message.role is Role.agent
    assert message.parts == [Part(text="look"), file]
    assert (message.task_id, message.context_id, message.message_id) == ("t", "c", "m")
    assert message.reference_task_ids == ["r"]


def test_message_without_content_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Message.user()


@pytest.mark.parametrize(
    "content",
    [{}, {"text": "a", "url": "https://x"}, {"raw": b"", "data": {"a": 1}}],
    ids=["none", "text+url", "raw+data"],
)
def test_part_needs_exactly_one_content(content: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        Part(**content)  # type: ignore[arg-type]


def test_part_constructors_set_one_content_and_kind_names_it() -> None:
    parts = {
        "text": Part.from_text("hello"),
        "raw": Part.file_bytes(b"\x00\x01", media_type="application/pdf", filename="r.pdf"),
        "url": Part.file_url("https://example.com/r.pdf", filename="r.pdf"),
        "data": Part.from_data({"city": "Paris"}),
    }

    assert {kind: part.kind for kind, part in parts.items()} == {k: k for k in parts}
    assert parts["raw"].raw == b"\x00\x01"
    assert parts["raw"].media_type == "application/pdf"
    assert parts["url"].filename == "r.pdf"


def test_part_repr_shows_the_size_of_file_bytes_not_the_bytes() -> None:
    part = Part.file_bytes(b"secret-bytes" * 100)

    assert "secret-bytes" not in repr(part)
    assert "1200 bytes" in repr(part)


def test_message_text_joins_text_parts_with_newlines_and_skips_other_parts() -> None:
    message = Message.user("one", Part.from_data({"x": 1}), "two")

    assert message.text == "one\ntwo"


def test_artifact_text_concatenates_streamed_chunks() -> None:
    artifact = Artifact(artifact_id="a", parts=[Part(text="Hel"), Part(text="lo")])

    assert artifact.text == "Hello"


def test_task_text_is_the_artifacts_text_else_the_status_message() -> None:
    question = Message.agent("which city?")
    waiting = Task(id="t", status=TaskStatus(state=TaskState.input_required, message=question))
    answered = attrs.evolve(
        waiting,
        status=TaskStatus(state=TaskState.completed),
        artifacts=[Artifact.create("Paris", name="a"), Artifact.create("Lyon", name="b")],
    )

    assert waiting.text == "which city?"
    assert answered.text == "Paris\nLyon"
    assert Task(id="t", status=TaskStatus(state=TaskState.working)).text == ""


@pytest.mark.parametrize("state", list(TaskState))
def test_task_state_helpers_classify_every_state(state: TaskState) -> None:
    task = Task(id="t", status=TaskStatus(state=state))

    assert state.is_terminal is (state in TERMINAL)
    assert state.is_interrupted is (state in INTERRUPTED)
    assert (task.is_terminal, task.is_interrupted, task.state) == (
        state.is_terminal,
        state.is_interrupted,
        state,
    )


def test_enums_print_as_their_value() -> None:
    assert str(TaskState.input_required) == "input_required"
    assert f"{Role.agent}" == "agent"


def test_models_are_frozen_and_evolve_makes_a_new_snapshot() -> None:
    task = Task(id="t", status=TaskStatus(state=TaskState.working))

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        task.id = "other"  # type: ignore[misc]
    done = attrs.evolve(task, status=TaskStatus(state=TaskState.completed))

    assert task.state is TaskState.working
    assert done.state is TaskState.completed


def test_status_now_is_stamped_in_utc() -> None:
    status = TaskStatus.now(TaskState.working)

    assert status.timestamp is not None
    assert status.timestamp.tzinfo is timezone.utc


def test_push_config_repr_never_shows_token_or_credentials() -> None:
    config = PushNotificationConfig(
        url="https://hook.example/a2a",
        token="tok-s3cret",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="cred-s3cret"),
    )

    text = repr(config)

    assert "s3cret" not in text
    assert "https://hook.example/a2a" in text
    assert "Bearer" in text


@pytest.mark.parametrize(
    ("version", "revision"),
    [("1.0", "1.0"), ("1.0.1", "1.0"), ("0.3.0", "0.3"), ("0.3", "0.3"), ("1", "1.0")],
)
def test_interface_protocol_revision_is_major_dot_minor(version: str, revision: str) -> None:
    assert AgentInterface(url="u", protocol_version=version).protocol_revision == revision


def test_markdown_reprs_escape_agent_html_and_truncate_long_text() -> None:
    task = Task(
        id="t<1>",
        status=TaskStatus(state=TaskState.completed),
        artifacts=[Artifact.create("<script>alert(1)</script>" + "x" * 2000)],
    )
    message = Message.agent("<b>hi</b>")

    markdown = task._repr_markdown_()

    assert "<script>" not in markdown
    assert "&lt;script&gt;" in markdown
    assert len(markdown) < 700
    assert "completed" in markdown
    assert "<b>" not in message._repr_markdown_()
    assert message._repr_markdown_().startswith("**agent:**")


def test_markdown_reprs_neutralise_agent_written_markdown() -> None:
    # An agent must not make a notebook load a remote image or show a live link.
    hostile = "![pixel](http://tracker.example/x.png) [click](http://phish.example) `code`"
    task = Task(
        id="t`1![x](http://tracker.example/y.png)",
        status=TaskStatus(state=TaskState.completed),
        artifacts=[Artifact.create(hostile)],
    )
    card = AgentCard(
        name=hostile,
        supported_interfaces=[AgentInterface(url="![i](http://tracker.example/z.png)")],
    )
    for markdown in (task._repr_markdown_(), Message.agent(hostile)._repr_markdown_()):
        assert "![" not in markdown
        assert "](" not in markdown
        assert "http://" not in markdown  # no autolink either
    card_markdown = card._repr_markdown_()
    assert "![" not in card_markdown
    assert "](" not in card_markdown


def test_card_markdown_lists_interfaces_skills_and_security_scheme_names() -> None:
    card = AgentCard(
        name="Echo <agent>",
        version="1.2",
        description="Echoes",
        supported_interfaces=[AgentInterface(url="https://agent.example/a2a")],
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="echo", name="Echo skill")],
        security_schemes={"bearer": HTTPAuthSecurityScheme(scheme="Bearer")},
    )

    markdown = card._repr_markdown_()

    assert "Echo &lt;agent&gt; 1\\.2" in markdown
    assert "https\\://agent\\.example/a2a" in markdown
    assert "JSONRPC" in markdown
    assert "Echo skill" in markdown
    assert "streaming" in markdown
    assert "bearer" in markdown


def test_interface_defaults_to_json_rpc_and_protocol_1_0() -> None:
    interface = AgentInterface(url="https://agent.example/")

    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
