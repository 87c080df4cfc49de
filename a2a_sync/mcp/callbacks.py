"""The user callbacks of an MCP connection, how they answer the server, and the
dispatcher thread they run on."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs

from ..errors import (
    A2ASyncError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    ProtocolError,
    RPCError,
)
from . import _codec
from . import types as t

__all__ = ["Handlers", "Responder", "progress_for"]

logger = logging.getLogger(__name__)

#: How long ``close()`` waits for the dispatcher to finish queued callbacks.
DISPATCHER_JOIN_TIMEOUT: Final = 2.0
#: How long a call with a progress callback waits for queued progress callbacks to run
#: before returning (a callback that blocks longer only delays, never hangs, the caller).
CALLBACK_FLUSH_TIMEOUT: Final = 5.0

_LIST_CHANGED: Final[Mapping[str, str]] = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


@attrs.frozen
class Handlers:
    """The user callbacks of a connection. Each is optional.

    Callbacks run on the session's dispatcher thread (``a2a-sync-mcp-dispatch``), in the
    order messages arrived, except ``input_required`` answers, which run on the thread
    that made the call. A callback may raise an :class:`~a2a_sync.errors.RPCError` to
    answer the server with that error; any other exception is logged and answered with
    ``-32603``.

    Attributes:
        sampling: ``(CreateMessageRequest) -> CreateMessageResult``; declares ``sampling``.
        elicitation: ``(ElicitRequest) -> ElicitResult``; declares ``elicitation``
            (form and url).
        roots: ``() -> Sequence[Root]``; declares ``roots`` (with ``listChanged``).
        logging: ``(LoggingMessage) -> None`` for ``notifications/message``.
        list_changed: ``(kind) -> None`` with kind ``"tools"``, ``"prompts"`` or
            ``"resources"``.
        resource_updated: ``(uri) -> None`` for ``notifications/resources/updated``.
        notification: ``(method, params) -> None`` for every notification (raw).
    """

    sampling: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None
    elicitation: Callable[[t.ElicitRequest], t.ElicitResult] | None = None
    roots: Callable[[], Sequence[t.Root]] | None = None
    logging: Callable[[t.LoggingMessage], None] | None = None
    list_changed: Callable[[str], None] | None = None
    resource_updated: Callable[[str], None] | None = None
    notification: Callable[[str, dict[str, Any]], None] | None = None

    def capabilities(self) -> t.ClientCapabilities:
        """The client capabilities these callbacks declare."""
        return t.ClientCapabilities(
            sampling={} if self.sampling else None,
            elicitation={"form": {}, "url": {}} if self.elicitation else None,
            roots={"listChanged": True} if self.roots else None,
        )

    def answer(self, method: str, params: Any) -> Any:
        """Answer a server→client request (legacy) or an input request (MRTR).

        Raises:
            RPCError: No callback for ``method``, invalid params, or the callback's own.
        """
        params = params if isinstance(params, dict) else {}
        if method == "ping":
            return {}
        if method == "sampling/createMessage" and self.sampling is not None:
            request = _request(params, t.CreateMessageRequest, "sampling request")
            return _codec.unstructure(self.sampling(request), t.CreateMessageResult)
        if method == "elicitation/create" and self.elicitation is not None:
            elicit = _request(params, t.ElicitRequest, "elicitation request")
            return _codec.unstructure(self.elicitation(elicit), t.ElicitResult)
        if method == "roots/list" and self.roots is not None:
            return {"roots": [_codec.unstructure(r, t.Root) for r in self.roots()]}
        raise MethodNotFound(f"client does not support {method}")

    @property
    def wants_notifications(self) -> bool:
        """Whether any callback hears notifications (else none need dispatching)."""
        return not (
            self.logging is None
            and self.list_changed is None
            and self.resource_updated is None
            and self.notification is None
        )

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        """Run the callbacks a server notification is for (on the dispatcher thread).

        Raises:
            ProtocolError: A log message that does not fit :class:`~.types.LoggingMessage`
                (and whatever a callback raises: the dispatcher logs it).
        """
        if method == "notifications/message" and self.logging is not None:
            self.logging(_codec.structure(params, t.LoggingMessage, what="log message"))
        elif method in _LIST_CHANGED and self.list_changed is not None:
            self.list_changed(_LIST_CHANGED[method])
        elif method == "notifications/resources/updated" and self.resource_updated is not None:
            uri = params.get("uri")
            if isinstance(uri, str):
                self.resource_updated(uri)
        if self.notification is not None:
            self.notification(method, params)


_T = TypeVar("_T")


def _request(params: dict[str, Any], cls: type[_T], what: str) -> _T:
    """A server request's params as ``cls``; a mismatch is the server's -32602 (e.g. an
    elicitation mode the client did not declare), not a client failure."""
    try:
        return _codec.structure(params, cls, what=what)
    except ProtocolError as exc:
        raise InvalidParams(str(exc)) from exc


class Dispatcher:
    """The named daemon thread user callbacks run on (``a2a-sync-mcp-dispatch``), one
    at a time in the order they were submitted, so they never block the transport's
    reader. Started on first use; after :meth:`close` it runs what is already queued
    (late log lines) and stops.

    Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _thread (creation) and _closed
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, work: Callable[[], None]) -> None:
        """Queue ``work``; it runs after everything submitted before it."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    thread = threading.Thread(
                        target=self._loop, name="a2a-sync-mcp-dispatch", daemon=True
                    )
                    thread.start()
                    self._thread = thread
                    if self._closed:
                        self._queue.put(None)
        self._queue.put(work)

    def close(self) -> None:
        """Stop the thread once the work queued so far has run (does not wait)."""
        with self._lock:
            self._closed = True
            started = self._thread is not None
        if started:
            self._queue.put(None)

    def flush(self, timeout: float = CALLBACK_FLUSH_TIMEOUT) -> None:
        """Wait (bounded) until the work queued so far has run. No-op on the dispatcher
        thread itself (a callback calling back into the client must not wait for itself)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread() or not thread.is_alive():
            return
        done = threading.Event()
        self._queue.put(done.set)
        if not done.wait(timeout):
            logger.warning("MCP callbacks still busy after %g s; not waiting longer", timeout)

    def join(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> None:
        """Wait (bounded) for queued work to finish; call after :meth:`close`."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                # Run what is already queued (late log lines), then stop.
                while True:
                    try:
                        rest = self._queue.get_nowait()
                    except queue.Empty:
                        return
                    if rest is not None:
                        _run_logged(rest)
            _run_logged(work)


def _run_logged(work: Callable[[], None]) -> None:
    try:
        work()
    except Exception:  # top of the dispatcher thread: a callback must not kill it
        logger.exception("MCP callback failed")


def requests_progress_only(_progress: t.Progress) -> None:
    """Stands for "send a progressToken" when nobody listens: the timeout resets on it."""


def progress_for(
    progress: Callable[[t.Progress], None] | None, reset_on_progress: bool
) -> Callable[[t.Progress], None] | None:
    """The progress callback a request needs: ``progress``, or, when only the timeout
    should reset on progress, one that asks for progress (``_meta.progressToken``) and
    ignores it (without a token the server sends no progress at all)."""
    if progress is None and reset_on_progress:
        return requests_progress_only
    return progress


def run_progress(callback: Callable[[t.Progress], None], params: dict[str, Any]) -> None:
    callback(_codec.structure(params, t.Progress, what="progress notification"))


#: Server cancellations remembered for requests we may still be answering; a bound so a
#: server cancelling ids it never sent cannot grow memory.
_MAX_REMEMBERED_CANCELS: Final = 1024


class Responder:
    """Answers server→client requests through the user's :class:`Handlers` (on the
    dispatcher thread), unless the server cancelled the request meanwhile.

    Thread-safe. ``reply`` sends one JSON-RPC response (the session's, with the era's
    headers); ``name`` names the server in log messages.
    """

    def __init__(
        self, handlers: Handlers, reply: Callable[[dict[str, Any]], None], name: str
    ) -> None:
        self._handlers = handlers
        self._reply = reply
        self._name = name
        self._lock = threading.Lock()
        self._cancelled: set[Any] = set()

    def cancelled(self, request_id: Any) -> None:
        """The server cancelled ``request_id`` (``notifications/cancelled``): no answer."""
        with self._lock:
            if len(self._cancelled) > _MAX_REMEMBERED_CANCELS:
                self._cancelled.clear()
            try:
                self._cancelled.add(request_id)
            except TypeError:  # unhashable id: it names no request of ours
                return

    def answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        """Run the handler for ``method`` and send its result (or its ``RPCError``; any
        other exception is logged and answered with -32603)."""
        try:
            result = self._handlers.answer(method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except RPCError as exc:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_error_object()}
        except Exception:  # a user callback on the dispatcher: log, answer -32603
            logger.exception("callback for server request %s failed", method)
            error = InternalError(f"client callback for {method} failed")
            reply = {"jsonrpc": "2.0", "id": request_id, "error": error.to_error_object()}
        with self._lock:
            if request_id in self._cancelled:
                self._cancelled.discard(request_id)
                return
        try:
            self._reply(reply)
        except A2ASyncError as exc:
            logger.warning("could not answer %s to %s: %s", method, self._name, exc)
