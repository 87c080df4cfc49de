"""The A2A method table: one wire name per operation and revision, both directions."""

from __future__ import annotations

import importlib

import pytest

from a2a_sync.a2a.methods import (
    IDEMPOTENT,
    REVISIONS,
    STREAMING,
    Operation,
    lookup,
    wire_name,
)


def test_every_operation_has_a_1_0_name_and_all_but_list_tasks_a_0_3_name() -> None:
    for operation in Operation:
        assert wire_name(operation, "1.0")
        if operation is Operation.LIST_TASKS:
            assert wire_name(operation, "0.3") is None
        else:
            assert wire_name(operation, "0.3")


def test_lookup_inverts_wire_name() -> None:
    names = set()
    for operation in Operation:
        for revision in REVISIONS:
            name = wire_name(operation, revision)
            if name is not None:
                assert lookup(name) == (operation, revision)
                names.add(name)
    assert len(names) == 2 * len(Operation) - 1  # no name is shared across operations


@pytest.mark.parametrize("name", ["tasks/send", "tasks/list", "sendMessage", "", "GetTask "])
def test_lookup_of_unknown_names_is_none(name: str) -> None:
    assert lookup(name) is None


def test_spec_names() -> None:
    assert wire_name(Operation.SEND_MESSAGE, "1.0") == "SendMessage"
    assert wire_name(Operation.SEND_MESSAGE, "0.3") == "message/send"
    assert wire_name(Operation.SUBSCRIBE_TO_TASK, "0.3") == "tasks/resubscribe"
    # 1.0 pluralises the list method; 0.3 does not
    assert wire_name(Operation.LIST_PUSH_CONFIGS, "1.0") == "ListTaskPushNotificationConfigs"
    assert wire_name(Operation.LIST_PUSH_CONFIGS, "0.3") == "tasks/pushNotificationConfig/list"
    assert wire_name(Operation.GET_EXTENDED_CARD, "0.3") == "agent/getAuthenticatedExtendedCard"


def test_sending_a_message_is_neither_idempotent_nor_both_kinds() -> None:
    assert Operation.SEND_MESSAGE not in IDEMPOTENT
    assert Operation.SEND_STREAMING_MESSAGE not in IDEMPOTENT
    assert {Operation.SEND_STREAMING_MESSAGE, Operation.SUBSCRIBE_TO_TASK} == STREAMING
    assert set(Operation) - IDEMPOTENT == {
        Operation.SEND_MESSAGE,
        Operation.SEND_STREAMING_MESSAGE,
        Operation.CREATE_PUSH_CONFIG,
    }


@pytest.mark.peer
def test_names_are_the_ones_a2a_sdk_dispatches() -> None:
    # In this order: importing the 0.3 adapter first trips a circular import in a2a-sdk 1.3.
    dispatcher = importlib.import_module("a2a.server.routes.jsonrpc_dispatcher")
    adapter = importlib.import_module("a2a.compat.v0_3.jsonrpc_adapter")

    ours_1_0 = {wire_name(op, "1.0") for op in Operation}
    ours_0_3 = {wire_name(op, "0.3") for op in Operation} - {None}
    assert ours_1_0 == set(dispatcher.JsonRpcDispatcher.METHOD_TO_MODEL)
    assert ours_0_3 == set(adapter.JSONRPC03Adapter.METHOD_TO_MODEL)
