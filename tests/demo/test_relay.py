"""The demo's stream-cutting relay, in front of a real agent."""

from __future__ import annotations

import threading

import pytest

from a2a_sync import A2AClient
from a2a_sync.demo.relay import StreamCutter
from a2a_sync.errors import ConfigurationError, TransportError
from a2a_sync.testing import FakeAgent, agent_server
from a2a_sync.types import StreamEvent, TaskState

CHUNKS = ["a", "b", "c", "d", "e"]


def test_the_first_stream_is_cut_after_exactly_n_events_and_later_ones_pass() -> None:
    agent = FakeAgent().on("go", chunks=CHUNKS, delay=0.01)
    with (
        agent_server(agent) as url,
        StreamCutter(url, cut_after_events=3) as relay,
        A2AClient.from_url(relay.url, timeout=5.0) as client,
    ):
        received: list[StreamEvent] = []
        with pytest.raises(TransportError), client.stream_message("go") as stream:
            received.extend(stream)
        assert len(received) == 3
        assert relay.cut.is_set()
        with client.stream_message("go") as stream:
            task = stream.get_final_task()
        assert (task.state, task.text) == (TaskState.completed, "abcde")


def test_unary_calls_on_a_kept_alive_connection_pass_untouched() -> None:
    with (
        agent_server(FakeAgent()) as url,
        StreamCutter(url, cut_after_events=1) as relay,
        A2AClient.from_url(relay.url, timeout=5.0) as client,
    ):
        for text in ("one", "two", "three"):
            assert client.send_message(text).text == f"echo: {text}"
    assert not relay.cut.is_set()


def test_close_joins_every_relay_thread() -> None:
    with agent_server(FakeAgent()) as url:
        relay = StreamCutter(url, cut_after_events=1)
        with A2AClient.from_url(relay.url, timeout=5.0) as client:
            client.send_message("hello")
        assert relay.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-demo-relay")]


def test_only_http_upstreams_are_accepted() -> None:
    with pytest.raises(ConfigurationError):
        StreamCutter("https://example.invalid", cut_after_events=1)
