"""The seam between the MCP protocol session and whatever carries its messages.

A transport moves whole JSON-RPC messages (decoded ``dict`` objects) in both directions
and knows nothing about MCP methods, ids or eras; :class:`~a2a_sync.mcp.session.MCPSession`
knows nothing about pipes, sockets or HTTP. The contract, for stdio today and Streamable
HTTP / HTTP+SSE next:

**Lifecycle.** ``start(sink)`` is called once; from then on the transport calls
``sink.deliver(message)`` for every incoming message, from any thread it likes (stdio: its
reader thread; HTTP: the thread reading a POST's SSE stream or the GET stream). Messages
that are not JSON objects are logged and dropped by the transport. ``deliver`` is cheap
and never blocks on user code (the session hands callbacks to its own dispatcher thread),
so a transport may call it inline from a reader. When no further message can arrive
(EOF, process exit, fatal framing error, ``close()``), the transport calls
``sink.transport_closed(error)`` exactly once, with a typed error describing why
(``ServerProcessError`` with exit status and stderr tail, ``ResponseTooLarge``...) or
``None`` after a clean ``close()``. The session then fails every pending call at once.
A transport whose exchanges are independent (HTTP: one POST per request) reports the
failure of one exchange with ``sink.fail(request_id, error)`` instead: that request fails
with the typed error (``HTTPStatusError``, ``ConnectionLost``...) and the rest carry on.

**Sending.** ``send(message, context)`` hands one message over and returns without
waiting for any answer (HTTP: write the POST, then read its response on a worker thread
and ``deliver`` what arrives, JSON or SSE; a ``202`` for a notification or response ends
there). It raises :class:`~a2a_sync.errors.ConnectionClosed` (or a subclass) once the
transport is closed or its peer is gone, and other :class:`~a2a_sync.errors.TransportError`
subclasses for a failed exchange. It is thread-safe.

**Per-request context.** Transports with ``wants_context = True`` get an :class:`Outgoing`
for every message: the method, the request id and the headers the protocol era wants on
this message (``MCP-Protocol-Version`` in both eras; ``Mcp-Method``, ``Mcp-Name`` and
``Mcp-Param-*`` in 2026-07-28). A transport with ``wants_context = False`` (stdio) gets
``None`` and the session skips building it: that is the hot path.

**Cancellation.** When the session stops waiting for a request (timeout, explicit
cancel), it calls ``abandon(request_id)``. A transport that can cancel at its own level
(modern Streamable HTTP: close that request's response stream) does so and returns
``True``; otherwise it returns ``False`` and the session sends ``notifications/cancelled``.

**Leading (optional).** A transport that can let a waiting caller read its own answer
satisfies :class:`Leader` (stdio: :mod:`._stdio_lead`; Streamable HTTP runs the
request's POST there). A caller about to block on a request calls
``lead(request_id, waiter, deadline, busy)`` first: the transport may read and deliver
incoming messages on the caller's thread until ``waiter.settled()`` or ``deadline``, and
returns at once when it cannot (another caller leads); ``deadline`` ``None`` means "do
not block here" (the timeout restarts on progress). Anything that settles the call
elsewhere (a cancel, the connection's end) calls ``waiter.waker`` so a leader wakes. An
:class:`Outgoing` with ``inline`` set announces that its sender will wait for the answer
right away on the same thread (HTTP may then send it from ``lead``).

**Shutdown.** ``close()`` shuts down gracefully with bounded waits (stdio: close stdin,
wait, SIGTERM, SIGKILL; HTTP: ``DELETE`` the session, close the pool). It is idempotent
and may be called from any thread, including while another thread is inside ``send``.
It raises :class:`~a2a_sync.errors.ServerProcessError` (stdio) when the peer had failed,
so ``MCPConnection.close()`` can report it.

**Identity.** ``name`` describes the peer for messages and logs (no credentials);
``kind`` names the wire (``"stdio"``, ``"streamable-http"``, ``"http+sse"``, or a test
transport's own word), the same attribute on every transport; ``era_key`` identifies the
server for the per-process era cache (stdio: argv and cwd; HTTP: the endpoint URL without
userinfo or query).

**Server processes.** A transport that runs the server as a child process (stdio) also
satisfies :class:`ProcessTransport`: era negotiation uses it to quote stdout noise in a
handshake timeout, to collapse the error report an older server writes to stderr when
it refuses the era probe, and to bound the shutdown of a child that failed to connect.

An HTTP transport reconnects its streams internally. When its server session expires
(404) it re-initializes a fresh session itself, once, by replaying the handshake it sent
(``initialize``, ``notifications/initialized``, and the log level and resource
subscriptions in force), then re-sends the request the server refused; if that fails
too, the request fails with :class:`~a2a_sync.errors.SessionExpired` and the session
stays usable (the next request tries again).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol, runtime_checkable

from ...errors import A2ASyncError

__all__ = [
    "Busy",
    "Leader",
    "MessageSink",
    "Outgoing",
    "ProcessTransport",
    "RequestId",
    "Transport",
    "Waiter",
]

#: A JSON-RPC id as this package sends them (the session uses ints; peers may use strings).
RequestId = int | str
#: Tells a leading transport whether calls other than the leader's are pending.
Busy = Callable[[], bool]


class Outgoing:
    """Context for one outgoing message (only for transports with ``wants_context``).

    Attributes:
        kind: ``"request"``, ``"notification"`` or ``"response"``.
        method: The JSON-RPC method (``None`` for responses).
        request_id: The id of the request (or of the request a response answers).
        headers: Protocol headers to send with this message (HTTP transports).
    """

    __slots__ = ("headers", "inline", "kind", "method", "request_id")

    def __init__(
        self,
        kind: str,
        method: str | None,
        request_id: RequestId | None,
        headers: dict[str, str],
        inline: bool = False,
    ) -> None:
        self.kind = kind
        self.method = method
        self.request_id = request_id
        self.headers = headers
        #: A request whose sender waits for it at once on its own thread (``lead``).
        self.inline = inline

    @classmethod
    def of(cls, message: dict[str, Any]) -> Outgoing:
        """The context of ``message`` as its shape tells it, with no protocol headers."""
        method = message.get("method")
        if method is None:
            return cls("response", None, message.get("id"), {})
        return cls("request" if "id" in message else "notification", method, message.get("id"), {})

    def __repr__(self) -> str:
        return f"Outgoing({self.kind!r}, {self.method!r}, id={self.request_id!r})"


class MessageSink(Protocol):
    """What a transport delivers to (implemented by the session)."""

    def deliver(self, message: dict[str, Any]) -> None:
        """Take one incoming JSON-RPC message (request, notification or response)."""

    def fail(self, request_id: RequestId, error: A2ASyncError) -> None:
        """The exchange carrying request ``request_id`` failed; no answer will come."""

    def transport_closed(self, error: A2ASyncError | None) -> None:
        """No more messages will arrive; ``error`` says why (``None``: closed by us)."""


class Transport(Protocol):
    """A bidirectional carrier of JSON-RPC messages. Implementations are thread-safe."""

    name: str
    wants_context: bool

    @property
    def kind(self) -> str:
        """The wire: ``"stdio"``, ``"streamable-http"``, ``"http+sse"``..."""

    @property
    def era_key(self) -> Hashable:
        """Identifies the server for the era cache."""

    def start(self, sink: MessageSink) -> None:
        """Begin delivering incoming messages to ``sink``.

        Raises:
            ServerProcessError: The stdio server could not be started.
            TransportError: The connection could not be established.
        """

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """Hand one message to the peer; do not wait for an answer.

        Raises:
            ConnectionClosed: The transport is closed or the peer is gone.
            TransportError: The message could not be sent.
        """

    def abandon(self, request_id: RequestId) -> bool:
        """The session no longer waits for ``request_id``; True if that cancelled it."""

    def close(self) -> None:
        """Shut down gracefully (bounded), idempotently, from any thread.

        Raises:
            ServerProcessError: The stdio server had failed (non-zero exit).
        """


@runtime_checkable
class ProcessTransport(Protocol):
    """What a transport running the server as a child process adds (stdio)."""

    @property
    def stdout_noise(self) -> str | None:
        """The first stdout line that was not a JSON-RPC message (escaped, shortened)."""

    def hold_stderr(self) -> None:
        """Hold the server's stderr lines until :meth:`release_stderr`."""

    def release_stderr(self, collapse: str | None) -> None:
        """Forward held lines (``None``), or summarise them as the answer to ``collapse``."""

    def limit_shutdown(self, seconds: float) -> None:
        """Bound the next ``close()`` to about ``seconds``."""


class Waiter(Protocol):
    """A pending call as a leading transport sees it (the session's slot)."""

    #: Set by the leader while it reads; called when the call is settled elsewhere.
    waker: Callable[[], None] | None

    def settled(self) -> bool:
        """True once the call has its outcome."""


@runtime_checkable
class Leader(Protocol):
    """A transport on which a waiting caller may read its own answer (stdio)."""

    def lead(
        self,
        request_id: RequestId,
        waiter: Waiter,
        deadline: float | None,
        busy: Busy,
    ) -> None:
        """Read and deliver on this thread until ``waiter`` is settled, ``deadline``
        (``time.monotonic()``; None: do not block) passes or the transport needs the
        thread back; ``busy()`` tells whether other calls are still pending."""
