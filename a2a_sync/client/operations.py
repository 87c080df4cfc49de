"""The A2A operations on tasks and push-notification configs, over a client's binding.

:class:`TaskOperations` is the part of :class:`~a2a_sync.client.client.A2AClient` that
turns each operation into one binding call (or stream) and decodes its answer; the client
itself (construction, the card, lifecycle) lives in :mod:`.client`, messages in
:mod:`.messages`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import attrs

from .._redact import redact_url
from ..a2a.codec import Codec
from ..a2a.methods import Operation, Revision
from ..a2a.types import (
    AgentCard,
    ListPushConfigsResult,
    ListTasksResult,
    PushNotificationConfig,
    Task,
    TaskState,
)
from ..errors import TaskNotFound, UnsupportedOperation
from .bindings import Binding
from .bindings.jsonrpc import TimeoutArg
from .stream import TaskStream

__all__ = ["TaskOperations"]


class TaskOperations:
    """Task and push-config operations; the client sets the attributes below."""

    url: str
    revision: Revision
    _codec: Codec
    _rpc: Binding
    _card: AgentCard | None

    # -- tasks ------------------------------------------------------------------------------------

    def get_task(
        self, task_id: str, *, history_length: int | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Fetch a task by id (``GetTask``). ``history_length=0`` omits the history."""
        params = self._codec.get_task_params(task_id, history_length=history_length)
        result = self._call(Operation.GET_TASK, params, timeout=timeout, task_id=task_id)
        return self._codec.load_task(result)

    def list_tasks(
        self,
        *,
        context_id: str | None = None,
        status: TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        history_length: int | None = None,
        status_timestamp_after: datetime | None = None,
        include_artifacts: bool | None = None,
        timeout: TimeoutArg = None,
    ) -> ListTasksResult:
        """List tasks, newest status first (``ListTasks``; A2A 1.0 only).

        Raises:
            UnsupportedOperation: The agent speaks A2A 0.3, which has no list method.
        """
        if self.revision == "0.3":
            raise UnsupportedOperation("ListTasks is not part of A2A 0.3")
        params = self._codec.list_tasks_params(
            context_id=context_id,
            status=status,
            page_size=page_size,
            page_token=page_token,
            history_length=history_length,
            status_timestamp_after=status_timestamp_after,
            include_artifacts=include_artifacts,
        )
        result = self._call(Operation.LIST_TASKS, params, timeout=timeout)
        return self._codec.load_list_tasks_result(result)

    def iter_tasks(self, **filters: Any) -> Iterator[Task]:
        """Iterate over every task matching ``filters`` (see :meth:`list_tasks`),
        fetching pages as needed."""
        token: str | None = filters.pop("page_token", None)
        while True:
            page = self.list_tasks(page_token=token, **filters)
            yield from page.tasks
            token = page.next_page_token
            if not token:
                return

    def cancel_task(
        self, task_id: str, *, metadata: Mapping[str, Any] | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Ask the agent to cancel a task (``CancelTask``); returns the task.

        Raises:
            TaskNotCancelable: The task already settled.
            TaskNotFound: No such task.
        """
        params = self._codec.cancel_task_params(
            task_id, metadata=dict(metadata) if metadata else None
        )
        result = self._call(Operation.CANCEL_TASK, params, timeout=timeout, task_id=task_id)
        return self._codec.load_task(result)

    def subscribe(self, task_id: str, *, timeout: TimeoutArg = None) -> TaskStream:
        """Re-attach to a running task's event stream (``SubscribeToTask`` /
        ``tasks/resubscribe``). The first event is the task's current state.

        Raises:
            UnsupportedOperation: The task already settled, or the agent cannot stream.
        """
        params = self._codec.subscribe_params(task_id)
        try:
            return self.open_stream(Operation.SUBSCRIBE_TO_TASK, params, timeout=timeout)
        except TaskNotFound as error:
            raise self._task_not_found(error, Operation.SUBSCRIBE_TO_TASK, task_id) from error

    # -- push notifications ---------------------------------------------------------------------

    def create_push_config(
        self, task_id: str, config: PushNotificationConfig, *, timeout: TimeoutArg = None
    ) -> PushNotificationConfig:
        """Register a webhook for a task's updates; returns it as the agent stored it."""
        params = self._codec.dump_push_config(attrs.evolve(config, task_id=task_id))
        result = self._call(Operation.CREATE_PUSH_CONFIG, params, timeout=timeout)
        return self._codec.load_push_config(result)

    def get_push_config(
        self, task_id: str, config_id: str, *, timeout: TimeoutArg = None
    ) -> PushNotificationConfig:
        """Fetch one webhook registration of a task."""
        params = self._codec.push_config_id_params(task_id, config_id)
        result = self._call(Operation.GET_PUSH_CONFIG, params, timeout=timeout)
        return self._codec.load_push_config(result)

    def list_push_configs(
        self,
        task_id: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        timeout: TimeoutArg = None,
    ) -> ListPushConfigsResult:
        """List a task's webhook registrations (one page; 0.3 has no paging)."""
        params = self._codec.list_push_configs_params(
            task_id, page_size=page_size, page_token=page_token
        )
        result = self._call(Operation.LIST_PUSH_CONFIGS, params, timeout=timeout)
        return self._codec.load_push_config_list(result)

    def delete_push_config(
        self, task_id: str, config_id: str, *, timeout: TimeoutArg = None
    ) -> None:
        """Remove a webhook registration."""
        params = self._codec.push_config_id_params(task_id, config_id)
        self._call(Operation.DELETE_PUSH_CONFIG, params, timeout=timeout)

    # -- calls over the binding --------------------------------------------------------

    def _call(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg,
        idempotent: bool = False,
        task_id: str | None = None,
    ) -> Any:
        try:
            return self._rpc.call(
                operation, params, timeout=timeout, idempotent=idempotent, card=self._card
            )
        except TaskNotFound as error:
            if task_id is None:
                raise
            raise self._task_not_found(error, operation, task_id) from error

    def _task_not_found(
        self, error: TaskNotFound, operation: Operation, task_id: str
    ) -> TaskNotFound:
        """``error`` with the task id, the agent and the fix in its text (``message``
        stays what the agent said)."""
        named = TaskNotFound(error.message, code=error.code, data=error.data)
        named.args = (
            f"{error}: {operation.value} found no task {task_id!r} at "
            f"{redact_url(self.url)}; check the id (a task is visible only to the caller "
            "that created it), or list tasks with list_tasks()",
        )
        return named

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
    ) -> TaskStream:
        """Open a streaming operation (advanced; used by the resilient client)."""
        sse, request_id = self._rpc.open_stream(
            operation, params, timeout=timeout, reconnect=reconnect, card=self._card
        )
        return TaskStream(
            sse,
            request_id=request_id,
            load_event=self._codec.load_stream_event,
            revision=self.revision,
            fetch_task=self.get_task,
            unwrap=self._rpc.unwrap_event,
        )
