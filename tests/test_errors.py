"""The exception hierarchy: what callers can catch and what the errors carry."""

from __future__ import annotations

import pickle

import pytest

from a2a_sync import errors


def test_every_public_error_derives_from_the_package_root() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type):
            assert issubclass(value, errors.A2ASyncError), name


def test_timeouts_are_also_builtin_timeout_errors() -> None:
    for cls in (errors.ConnectTimeout, errors.ReadTimeout, errors.DeadlineExceeded):
        assert issubclass(cls, TimeoutError)
    assert issubclass(errors.TaskWaitTimeout, TimeoutError)


def test_connect_timeout_is_a_connect_error_that_is_safe_to_retry() -> None:
    assert issubclass(errors.ConnectTimeout, errors.ConnectError)
    assert not errors.ConnectTimeout.outcome_unknown
    assert errors.ConnectionLost.outcome_unknown
    assert errors.ReadTimeout.outcome_unknown


def test_configuration_errors_are_value_errors() -> None:
    assert issubclass(errors.ConfigurationError, ValueError)


def test_rpc_errors_carry_code_message_and_data_and_survive_pickling() -> None:
    error = errors.TaskNotFound("no such task", data={"taskId": "t1"})
    assert (error.code, error.message, error.data) == (-32001, "no such task", {"taskId": "t1"})
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is errors.TaskNotFound
    assert (clone.code, clone.message, clone.data) == (error.code, error.message, error.data)


def test_an_rpc_error_without_a_class_code_needs_one() -> None:
    with pytest.raises(TypeError):
        errors.RPCError("x")
    assert errors.RPCError("x", code=-1).code == -1


def test_all_agents_failed_lists_every_agent_in_order() -> None:
    failure = errors.AllAgentsFailed(
        [("http://a", errors.ConnectError("refused")), ("http://b", errors.InternalError())]
    )
    text = str(failure)
    assert text.index("http://a") < text.index("http://b")
    assert len(failure.failures) == 2


def test_server_process_error_shows_exit_status_and_stderr_tail() -> None:
    error = errors.ServerProcessError("server exited", returncode=3, stderr_tail="boom")
    assert error.returncode == 3
    assert "3" in str(error)
    assert "boom" in str(error)


def test_protocol_error_excerpt_is_truncated() -> None:
    error = errors.ProtocolError("bad", excerpt=errors.excerpt("y" * 5000))
    assert len(str(error)) < 300
