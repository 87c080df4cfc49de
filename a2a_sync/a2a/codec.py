"""Wire codecs: :mod:`a2a_sync.types` <-> A2A 1.0 and 0.3 JSON.

The models know nothing about JSON; this module is the edge. One :class:`Codec` per wire
revision, built from cattrs converters the first time it is used (``import`` stays cheap:
cattrs itself is imported lazily):

* **1.0** (:data:`V1_0`): ProtoJSON. camelCase, ``TASK_STATE_*`` / ``ROLE_*`` enums, parts
  as a oneof by member (``text`` | ``raw`` (base64) | ``url`` | ``data``) with
  ``mediaType``/``filename``/``metadata``, send results wrapped as ``{"task": ...}`` /
  ``{"message": ...}``, stream items as ``{"task"|"message"|"statusUpdate"|"artifactUpdate": ...}``.
* **0.3** (:data:`V0_3`): JSON-RPC objects tagged with ``kind`` (``message``, ``task``,
  ``status-update``, ``artifact-update``; parts ``text`` / ``file{bytes|uri,name,mimeType}``
  / ``data``), lower-case hyphenated states (``input-required``), roles ``user``/``agent``,
  ``final`` on status updates, nested push configs and ``blocking`` instead of
  ``returnImmediately``. Loading also accepts the 0.3 proto spellings (``TASK_STATE_*``
  including ``TASK_STATE_CANCELLED``, ``ROLE_*``).

API (all loaders raise :class:`~a2a_sync.errors.ProtocolError`; its ``details`` name the
JSON path of every problem, e.g. ``"unknown task state 'DONE' @ $.status.state"``)::

    codec = codec_for("1.0")                   # or V1_0 / V0_3
    codec.dump(value) -> dict                  # any model or *Params object
    codec.load(obj, cls) -> cls                # e.g. codec.load(obj, Task)
    codec.dump_message(msg) / load_message(obj)
    codec.dump_task(task) / load_task(obj)
    codec.dump_send_result(task_or_message) / load_send_result(obj) -> Task | Message
    codec.dump_stream_event(event) / load_stream_event(obj) -> StreamEvent
    # request params (client) and their loaders (server)
    codec.dump_send_params(message, configuration=None, *, metadata=None, tenant=None)
    codec.load_send_params(obj) -> SendMessageParams
    codec.get_task_params(task_id, *, history_length=None, tenant=None)
    codec.cancel_task_params(task_id, *, metadata=None, tenant=None)
    codec.subscribe_params(task_id, *, tenant=None)
    codec.list_tasks_params(ListTasksParams(...) or **fields)      # 1.0 only
    codec.load_list_tasks_result(obj) -> ListTasksResult           # 1.0 only
    codec.dump_push_config(config) / load_push_config(obj)         # create / get result
    codec.push_config_id_params(task_id, config_id, *, tenant=None)  # get / delete
    codec.list_push_configs_params(task_id, *, page_size=None, page_token=None, tenant=None)
    codec.load_push_config_list(obj) -> ListPushConfigsResult

Request parameters are models too (``GetTaskParams``, ``TaskIdParams``, ``ListTasksParams``,
``PushConfigParams``, ``ListPushConfigsParams``), so a server reads them with
``codec.load(params, GetTaskParams)``. :class:`~a2a_sync.types.PushNotificationConfig`
goes over the wire as the revision's TaskPushNotificationConfig (1.0 flat; 0.3
``{taskId, pushNotificationConfig: {...}}``); :class:`~a2a_sync.types.ListPushConfigsResult`
as ``{configs, nextPageToken}`` (1.0) or a bare array (0.3). ListTasks exists in 1.0 only
(the 0.3 codec raises ``ConfigurationError``).

Agent cards do not depend on the revision: they are read and written by
:mod:`a2a_sync.a2a.card_codec` (the last link of the chain primitives -> wire names, part,
card and 0.3 hooks -> converters -> load errors, envelopes -> codec -> card codec), which
reads a pure 0.3 card, a pure 1.0 card and the merged card a2a-sdk 1.x serves into the same
:class:`AgentCard`.

Rules: absent fields mean defaults, unknown fields are ignored, output omits unset values
(no ``null``, no empty lists), bytes are standard base64 (URL-safe and unpadded accepted
when loading). Free-form JSON (``metadata``, ``data``, extension ``params``) is passed through
without copying, in both directions: treat dumped JSON and loaded models as read-only.
Loading is fast-path first: a plain converter runs, and only when it fails a second
converter with cattrs' detailed validation re-runs to name the paths.

What 0.3 cannot carry is dropped when writing 0.3: ``media_type``/``filename`` of text and
data parts, ``tenant``, every authentication scheme but the first (read side: 0.3
``schemes[0]``), ListTasks. A 1.0 card carries one OAuth flow (the first set). ``final``
on a 0.3 status update is written true for terminal *and* interrupted states (a2a-sdk's
0.3 adapter marks only terminal ones, so a 0.3 client must also end a stream on
input-required / auth-required).

Codecs are immutable once built and safe to share across threads.
"""

from __future__ import annotations

import threading
from typing import Any, Final, TypeVar

from ..errors import ConfigurationError
from .converters import Converters, build_converters
from .envelopes import (
    member_v1,
    send_result_class_v03,
    send_result_v1,
    stream_class_v03,
    stream_v1,
)
from .load_errors import load_failure
from .primitives import format_timestamp, parse_timestamp
from .types import (
    AgentInterface,
    GetTaskParams,
    ListPushConfigsParams,
    ListPushConfigsResult,
    ListTasksParams,
    ListTasksResult,
    Message,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    SendResult,
    StreamEvent,
    Task,
    TaskIdParams,
)

__all__ = [
    "REVISIONS",
    "V0_3",
    "V1_0",
    "Codec",
    "codec_for",
    "format_timestamp",
    "parse_timestamp",
]

T = TypeVar("T")

#: The wire revisions this module speaks, newest first.
REVISIONS: Final = ("1.0", "0.3")


class Codec:
    """Converts models to and from one A2A wire revision. See the module docstring.

    Use the module's :data:`V1_0` / :data:`V0_3` (or :func:`codec_for`) instead of
    instantiating. Thread-safe: the converters are built once, under a lock, on first use,
    and only read afterwards.
    """

    __slots__ = ("_built", "_lock", "revision")

    def __init__(self, revision: str) -> None:
        if revision not in REVISIONS:
            raise ConfigurationError(f"unsupported A2A revision {revision!r}")
        #: ``"1.0"`` or ``"0.3"``.
        self.revision: Final = revision
        self._built: Converters | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Codec({self.revision!r})"

    # -- generic ----------------------------------------------------------------------------

    def dump(self, value: Any) -> Any:
        """Turn a model (or ``*Params`` / ``*Result`` object) into this revision's JSON value.

        Raises:
            ConfigurationError: The value cannot be expressed in this revision (ListTasks
                in 0.3, a 0.3 push config without ``task_id``).
        """
        built = self._built or self._build()
        cls = value.__class__
        dumper = built.dumpers.get(cls)
        if dumper is None:
            self._check_supported(cls)
            dumper = built.dumpers[cls] = built.fast.get_unstructure_hook(cls)
        return dumper(value)

    def load(self, obj: Any, cls: type[T], *, path: str = "$") -> T:
        """Read ``obj`` (decoded JSON) as a ``cls`` in this revision's shape.

        Args:
            obj: The decoded JSON value.
            cls: A model class from :mod:`a2a_sync.types`.
            path: JSON path of ``obj`` for error details.

        Raises:
            ProtocolError: ``obj`` does not fit; ``details`` name each bad path.
        """
        built = self._built or self._build()
        loader = built.loaders.get(cls)
        if loader is None:
            self._check_supported(cls)
            loader = built.loaders[cls] = built.fast.get_structure_hook(cls)
        try:
            return loader(obj, cls)  # type: ignore[no-any-return]
        except built.structure_errors as exc:
            error = load_failure(self.revision, built, obj, cls, exc, path)
            # Chained from cattrs' detailed error when there is one, else the fast one.
            raise error from (error.__cause__ or exc)

    # -- messages, tasks, events -------------------------------------------------------------

    def dump_message(self, message: Message) -> dict[str, Any]:
        """A Message as JSON."""
        out: dict[str, Any] = self.dump(message)
        return out

    def load_message(self, obj: Any) -> Message:
        """Read a Message."""
        return self.load(obj, Message)

    def dump_task(self, task: Task) -> dict[str, Any]:
        """A Task as JSON."""
        out: dict[str, Any] = self.dump(task)
        return out

    def load_task(self, obj: Any) -> Task:
        """Read a Task (GetTask / CancelTask results, 0.3 push bodies)."""
        return self.load(obj, Task)

    def dump_send_result(self, result: SendResult) -> dict[str, Any]:
        """A send result: 1.0 wraps it (``{"task": ...}``), 0.3 tags it with ``kind``."""
        raise NotImplementedError

    def load_send_result(self, obj: Any) -> SendResult:
        """Read a send result: the Task, or the agent's direct reply Message."""
        raise NotImplementedError

    def dump_stream_event(self, event: StreamEvent) -> dict[str, Any]:
        """One stream item in this revision's shape (also the 1.0 push-notification body)."""
        raise NotImplementedError

    def load_stream_event(self, obj: Any) -> StreamEvent:
        """Read one stream item (the JSON-RPC ``result`` of one SSE event)."""
        raise NotImplementedError

    # -- request parameters ------------------------------------------------------------------

    def dump_send_params(
        self,
        message: Message,
        configuration: SendMessageConfiguration | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """``params`` of SendMessage / SendStreamingMessage (0.3: message/send, message/stream).

        0.3 always states ``blocking`` (``not configuration.return_immediately``) so both
        revisions behave alike whatever the agent's 0.3 default is.
        """
        if configuration is None and metadata is None and tenant is None:
            # The common call: what SendMessageParams' hook writes, without building one.
            out: dict[str, Any] = {"message": self.dump(message)}
        else:
            out = self.dump(
                SendMessageParams(
                    message=message, configuration=configuration, metadata=metadata, tenant=tenant
                )
            )
        if self.revision == "0.3" and configuration is None:
            out["configuration"] = {"blocking": True}
        return out

    def load_send_params(self, obj: Any) -> SendMessageParams:
        """Read incoming send parameters (server side)."""
        return self.load(obj, SendMessageParams)

    def get_task_params(
        self, task_id: str, *, history_length: int | None = None, tenant: str | None = None
    ) -> dict[str, Any]:
        """``params`` of GetTask (tasks/get)."""
        return self._dump_dict(
            GetTaskParams(id=task_id, history_length=history_length, tenant=tenant)
        )

    def cancel_task_params(
        self, task_id: str, *, metadata: dict[str, Any] | None = None, tenant: str | None = None
    ) -> dict[str, Any]:
        """``params`` of CancelTask (tasks/cancel)."""
        return self._dump_dict(TaskIdParams(id=task_id, metadata=metadata, tenant=tenant))

    def subscribe_params(self, task_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """``params`` of SubscribeToTask (tasks/resubscribe)."""
        return self._dump_dict(TaskIdParams(id=task_id, tenant=tenant))

    def list_tasks_params(
        self, params: ListTasksParams | None = None, **filters: Any
    ) -> dict[str, Any]:
        """``params`` of ListTasks (1.0 only), from a ListTasksParams or its fields.

        Raises:
            ConfigurationError: This is the 0.3 codec (0.3 has no ListTasks).
        """
        return self._dump_dict(params if params is not None else ListTasksParams(**filters))

    def load_list_tasks_result(self, obj: Any) -> ListTasksResult:
        """Read a ListTasks result (1.0 only)."""
        return self.load(obj, ListTasksResult)

    # -- push notification configs ------------------------------------------------------------

    def dump_push_config(self, config: PushNotificationConfig) -> dict[str, Any]:
        """``params`` of CreateTaskPushNotificationConfig (tasks/pushNotificationConfig/set).

        ``config.task_id`` names the task (required by 0.3's nested shape).
        """
        return self._dump_dict(config)

    def load_push_config(self, obj: Any) -> PushNotificationConfig:
        """Read a push config as returned by create/get (``task_id`` set from the wire)."""
        return self.load(obj, PushNotificationConfig)

    def push_config_id_params(
        self, task_id: str, config_id: str | None, *, tenant: str | None = None
    ) -> dict[str, Any]:
        """``params`` of Get/DeleteTaskPushNotificationConfig (0.3 get may omit the id)."""
        return self._dump_dict(
            PushConfigParams(task_id=task_id, config_id=config_id, tenant=tenant)
        )

    def list_push_configs_params(
        self,
        task_id: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """``params`` of ListTaskPushNotificationConfigs (0.3 has no paging)."""
        return self._dump_dict(
            ListPushConfigsParams(
                task_id=task_id, page_size=page_size, page_token=page_token, tenant=tenant
            )
        )

    def load_push_config_list(self, obj: Any) -> ListPushConfigsResult:
        """Read a push config list (1.0 ``{configs, nextPageToken}``, 0.3 a bare array)."""
        return self.load(obj, ListPushConfigsResult)

    # -- internals ----------------------------------------------------------------------------

    def _dump_dict(self, value: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.dump(value)
        return out

    def _check_supported(self, cls: type) -> None:
        if self.revision == "0.3" and cls in (ListTasksParams, ListTasksResult):
            raise ConfigurationError("ListTasks does not exist in A2A 0.3")

    def _build(self) -> Converters:
        with self._lock:
            if self._built is None:
                self._built = build_converters(self.revision)
            return self._built


class _CodecV1(Codec):
    __slots__ = ()

    def dump_send_result(self, result: SendResult) -> dict[str, Any]:
        return {member_v1(result): self.dump(result)}

    def load_send_result(self, obj: Any) -> SendResult:
        member, cls = send_result_v1(obj)
        return self.load(obj[member], cls, path=f"$.{member}")

    def dump_stream_event(self, event: StreamEvent) -> dict[str, Any]:
        return {member_v1(event): self.dump(event)}

    def load_stream_event(self, obj: Any) -> StreamEvent:
        member, cls = stream_v1(obj)
        return self.load(obj[member], cls, path=f"$.{member}")


class _CodecV03(Codec):
    __slots__ = ()

    def dump_send_result(self, result: SendResult) -> dict[str, Any]:
        return self._dump_dict(result)

    def load_send_result(self, obj: Any) -> SendResult:
        return self.load(obj, send_result_class_v03(obj))

    def dump_stream_event(self, event: StreamEvent) -> dict[str, Any]:
        return self._dump_dict(event)

    def load_stream_event(self, obj: Any) -> StreamEvent:
        return self.load(obj, stream_class_v03(obj))


#: The A2A 1.0 codec (ProtoJSON).
V1_0: Final[Codec] = _CodecV1("1.0")
#: The A2A 0.3 codec (kind-tagged JSON-RPC objects).
V0_3: Final[Codec] = _CodecV03("0.3")
_CODECS: Final = {"1.0": V1_0, "0.3": V0_3}


def codec_for(version: str) -> Codec:
    """The codec for a protocol version (``"1.0"``, ``"1.0.1"``, ``"0.3"``, ``"0.3.0"``...).

    Raises:
        ConfigurationError: The version is neither 1.0 nor 0.3.
    """
    codec = _CODECS.get(version)  # the common spellings, without parsing
    if codec is None:
        codec = _CODECS.get(AgentInterface(url="", protocol_version=version).protocol_revision)
    if codec is None:
        raise ConfigurationError(f"unsupported A2A protocol version {version!r}")
    return codec
