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

Agent cards do not depend on the revision: :func:`load_card` reads a pure 0.3 card, a pure
1.0 card and the merged card a2a-sdk 1.x serves into the same :class:`AgentCard`;
:func:`dump_card` writes the 1.0 card plus merged 0.3 top-level fields when the card lists a
0.3 interface (what a2a-sdk serves), or a pure 1.0 / 0.3 card on request.

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
from collections.abc import Callable
from types import UnionType
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs

from ._card_paths import as_sent
from ._converters import (
    WireError,
    build_converter,
    format_timestamp,
    parse_timestamp,
    wire_name,
)
from .errors import ConfigurationError, ProtocolError
from .types import (
    AgentCard,
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
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskStatusUpdateEvent,
)

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = [
    "REVISIONS",
    "V0_3",
    "V1_0",
    "Codec",
    "codec_for",
    "dump_card",
    "format_timestamp",
    "load_card",
    "parse_timestamp",
]

T = TypeVar("T")

#: The wire revisions this module speaks, newest first.
REVISIONS: Final = ("1.0", "0.3")
#: What a structuring hook raises on bad input (cattrs' own errors are added once imported).
_PLAIN_ERRORS: Final = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)

# --- codecs ------------------------------------------------------------------------------------


@attrs.frozen
class _Built:
    fast: Converter
    detailed: Callable[[], Converter]
    structure_errors: tuple[type[BaseException], ...]
    loaders: dict[Any, Callable[[Any, Any], Any]]
    dumpers: dict[Any, Callable[[Any], Any]]


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
        self._built: _Built | None = None
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
            error = self._failure(obj, cls, exc, path)
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
        params = SendMessageParams(
            message=message, configuration=configuration, metadata=metadata, tenant=tenant
        )
        out: dict[str, Any] = self.dump(params)
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

    def _build(self) -> _Built:
        with self._lock:
            if self._built is not None:
                return self._built
            from cattrs.errors import (  # noqa: PLC0415 - cattrs is imported on first use
                BaseValidationError,
                ForbiddenExtraKeysError,
                StructureHandlerNotFoundError,
            )

            fast = build_converter(self.revision, detailed=False)
            detailed: list[Converter] = []

            def get_detailed() -> Converter:
                # Built on the first failure only; a benign race may build it twice.
                if not detailed:
                    detailed.append(build_converter(self.revision, detailed=True))
                return detailed[0]

            errors = (
                *_PLAIN_ERRORS,
                BaseValidationError,
                ForbiddenExtraKeysError,
                StructureHandlerNotFoundError,
            )
            self._built = _Built(fast, get_detailed, errors, {}, {})
            return self._built

    def _failure(self, obj: Any, cls: Any, exc: BaseException, path: str) -> ProtocolError:
        """Build the ProtocolError for a failed load, naming the paths."""
        what = f"invalid A2A {self.revision} {getattr(cls, '__name__', 'value')}"
        if isinstance(exc, RecursionError):
            return ProtocolError(what, details=[f"nested too deeply @ {path}"])
        if obj.__class__ is not dict and not (
            cls is ListPushConfigsResult and isinstance(obj, list)
        ):
            return ProtocolError(what, details=[f"expected a JSON object @ {path}"])
        built = self._built or self._build()
        try:
            built.detailed().structure(obj, cls)
        except built.structure_errors as detailed_exc:
            error = ProtocolError(what, details=_details(self.revision, detailed_exc, path))
            error.__cause__ = detailed_exc
            return error
        return ProtocolError(what, details=[f"{_describe(exc, None)} @ {path}"])


def _describe(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, WireError):
        return str(exc)
    from cattrs.v import format_exception  # noqa: PLC0415 - only on the failure path

    args = [a for a in getattr(type_, "__args__", ()) if a is not type(None)]
    if type(type_) is UnionType and len(args) == 1:  # "expected str", not "str | None"
        type_ = args[0]
    return format_exception(exc, type_)


def _details(revision: str, exc: BaseException, path: str) -> list[str]:
    """cattrs' ``transform_error``, but the path uses wire (camelCase) member names."""
    from cattrs.errors import (  # noqa: PLC0415 - only on the failure path
        ClassValidationError,
        IterableValidationError,
    )

    found: list[str] = []
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        with_notes, without = exc.group_exceptions()
        for sub_exc, note in with_notes:
            if isinstance(exc, ClassValidationError):
                sub_path = f"{path}.{wire_name(revision, exc.cl, note.name)}"  # type: ignore[union-attr]
            else:
                sub_path = f"{path}[{note.index!r}]"
            if isinstance(sub_exc, (ClassValidationError, IterableValidationError)):
                found += _details(revision, sub_exc, sub_path)
            else:
                found.append(f"{_describe(sub_exc, note.type)} @ {sub_path}")
        found += [f"{_describe(sub_exc, None)} @ {path}" for sub_exc in without]
    else:
        found.append(f"{_describe(exc, None)} @ {path}")
    return found


_STREAM_MEMBERS_V1: Final[dict[str, type[StreamEvent]]] = {
    "artifactUpdate": TaskArtifactUpdateEvent,
    "statusUpdate": TaskStatusUpdateEvent,
    "task": Task,
    "message": Message,
}
_STREAM_KEYS_V1: Final = {cls: key for key, cls in _STREAM_MEMBERS_V1.items()}
_KINDS_V03: Final[dict[str, type[StreamEvent]]] = {
    "artifact-update": TaskArtifactUpdateEvent,
    "status-update": TaskStatusUpdateEvent,
    "task": Task,
    "message": Message,
}


class _CodecV1(Codec):
    __slots__ = ()

    def dump_send_result(self, result: SendResult) -> dict[str, Any]:
        return {"task" if result.__class__ is Task else "message": self.dump(result)}

    def load_send_result(self, obj: Any) -> SendResult:
        if obj.__class__ is dict:
            if "task" in obj and "message" not in obj:
                return self.load(obj["task"], Task, path="$.task")
            if "message" in obj and "task" not in obj:
                return self.load(obj["message"], Message, path="$.message")
        raise ProtocolError(
            "invalid A2A 1.0 SendMessageResponse",
            details=["expected exactly one of task, message @ $"],
        )

    def dump_stream_event(self, event: StreamEvent) -> dict[str, Any]:
        return {_STREAM_KEYS_V1[event.__class__]: self.dump(event)}

    def load_stream_event(self, obj: Any) -> StreamEvent:
        member = None
        if obj.__class__ is dict:
            for key in obj:  # normally exactly one key
                if key in _STREAM_MEMBERS_V1:
                    if member is not None:
                        member = None
                        break
                    member = key
        if member is None:
            raise ProtocolError(
                "invalid A2A 1.0 StreamResponse",
                details=["expected exactly one of task, message, statusUpdate, artifactUpdate @ $"],
            )
        return self.load(obj[member], _STREAM_MEMBERS_V1[member], path=f"$.{member}")


class _CodecV03(Codec):
    __slots__ = ()

    def dump_send_result(self, result: SendResult) -> dict[str, Any]:
        return self._dump_dict(result)

    def load_send_result(self, obj: Any) -> SendResult:
        cls = _kind_of(obj)
        if cls is Task:
            return self.load(obj, Task)
        if cls is Message:
            return self.load(obj, Message)
        raise ProtocolError(
            "invalid A2A 0.3 send result", details=['expected kind "task" or "message" @ $.kind']
        )

    def dump_stream_event(self, event: StreamEvent) -> dict[str, Any]:
        return self._dump_dict(event)

    def load_stream_event(self, obj: Any) -> StreamEvent:
        cls = _kind_of(obj)
        if cls is None:
            raise ProtocolError(
                "invalid A2A 0.3 stream event",
                details=["expected kind task, message, status-update or artifact-update @ $.kind"],
            )
        return self.load(obj, cls)


def _kind_of(obj: Any) -> type[StreamEvent] | None:
    """The 0.3 class an object's ``kind`` names (inferred from members when untagged)."""
    if obj.__class__ is not dict:
        return None
    kind = obj.get("kind")
    if kind is not None:
        return _KINDS_V03.get(kind) if kind.__class__ is str else None
    # Untagged objects are not 0.3-conformant but come from hand-written agents.
    if "artifact" in obj:
        return TaskArtifactUpdateEvent
    if "status" in obj:
        return TaskStatusUpdateEvent if "taskId" in obj else Task
    return Message if "messageId" in obj else None


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
    codec = _CODECS.get(AgentInterface(url="", protocol_version=version).protocol_revision)
    if codec is None:
        raise ConfigurationError(f"unsupported A2A protocol version {version!r}")
    return codec


def load_card(obj: Any) -> AgentCard:
    """Read an agent card: pure 0.3, pure 1.0, or a2a-sdk's merged dual-version card.

    A 0.3 card's ``url``/``preferredTransport``/``additionalInterfaces`` become
    ``supported_interfaces`` carrying the card's ``protocolVersion``;
    ``supportsAuthenticatedExtendedCard``, ``security`` and ``type``-tagged security
    schemes map to their 1.0 places. 1.0 fields win where both are present.

    Raises:
        ProtocolError: ``obj`` is not a valid card; ``details`` name the paths.
    """
    from ._card_codec import load_card as load  # noqa: PLC0415 - it imports this module

    try:
        return load(obj)
    except ProtocolError as exc:
        told = as_sent(exc, obj)  # a 0.3 card's errors name its own paths, not 1.0's
        if told is exc:
            raise
        raise told from exc.__cause__ or exc


def dump_card(card: AgentCard, revision: str | None = None) -> dict[str, Any]:
    """Write an agent card.

    Args:
        card: The card.
        revision: ``None`` for the well-known document: the 1.0 card plus the merged 0.3
            top-level fields when ``card`` lists a 0.3 interface (what a2a-sdk 1.x serves,
            readable by 0.3 and 1.0 clients). ``"1.0"`` or ``"0.3"`` for a pure card of
            that revision (e.g. an extended-card response).

    Raises:
        ConfigurationError: ``revision`` is ``"0.3"`` but the card lists no 0.3 interface,
            or ``revision`` is unknown.
    """
    from ._card_codec import dump_card as dump  # noqa: PLC0415 - it imports this module

    return dump(card, revision)
