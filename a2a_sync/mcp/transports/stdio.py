"""The stdio transport: an MCP server as a child process speaking JSON lines.

Spawning: an argv list (never a shell), an environment built from an allow-list
(:data:`DEFAULT_INHERITED_ENV_VARS`, shell functions dropped) plus ``env``, an optional
``cwd``, and on POSIX its own session (process group) so the whole tree can be stopped.

Threads (daemons, named): a **reader** that splits stdout on ``\\n`` only, decodes each
line and hands it to the session (a line that is not JSON is skipped and logged, the
first few one by one, then as a periodic count; the first is quoted if the handshake times
out; a line over ``max_line_bytes`` ends the connection with
:class:`~a2a_sync.errors.ResponseTooLarge`); a **stderr drain** that reassembles whole
lines (incremental UTF-8 decoding, lines over 1 MiB cut with a marker) and forwards them to
logging, a file-like object or nowhere while keeping a tail for error messages (it never
touches ``sys.stderr``'s file descriptor, so it works in Jupyter; during the era probe it
holds lines so an older server's complaint about the probe can be collapsed, see
:mod:`._stdio_text`); and an **exit watcher** that reaps the child the
moment it exits (on POSIX a waiting caller reads its own answer while no one else needs
stdout: :mod:`._stdio_lead`). Writes happen on the caller's thread under a lock, one
JSON message per line, flushed.

Shutdown follows the MCP lifecycle: close stdin, wait :data:`PROCESS_TERMINATION_TIMEOUT`,
SIGTERM the process group, wait :data:`FORCE_KILL_TIMEOUT`, SIGKILL; every wait bounded,
exit detected by the watcher (not by pipe EOF, which a grandchild can hold open), stdout
drained meanwhile so a server blocked on a full pipe can exit, and stragglers left in the
group killed. A server that exits on its own fails every pending call at once with its exit
status and the tail of its stderr.

Windows: the child gets a new process group and is terminated directly (no Job Object
tree kill: grandchildren of a wrapper may survive there).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Final

from ...errors import (
    A2ASyncError,
    ConfigurationError,
    ConnectionClosed,
    ServerProcessError,
)
from . import Busy, MessageSink, Outgoing, RequestId, Waiter
from ._process import (
    DEFAULT_INHERITED_ENV_VARS,
    FORCE_KILL_TIMEOUT,
    KILL_REAP_TIMEOUT,
    PROCESS_TERMINATION_TIMEOUT,
    default_environment,
    escalate,
    kill_stragglers,
    shutdown_waits,
    signal_group,
)
from ._stdio_lead import StdoutPipe, open_pipe
from ._stdio_stderr import LOG, StderrChannel
from ._stdio_text import NoiseLimiter, discard, encode_line, read_messages

__all__ = [
    "DEFAULT_INHERITED_ENV_VARS",
    "DEFAULT_MAX_LINE_BYTES",
    "FORCE_KILL_TIMEOUT",
    "PROCESS_TERMINATION_TIMEOUT",
    "StdioTransport",
    "default_environment",
]

logger = logging.getLogger(__name__)

#: How long a writer blocked on a full stdin pipe may hold up ``close()``.
_WRITER_LOCK_TIMEOUT: Final = 0.5
#: After the server exits, how long to keep reading stdout for answers it wrote first.
_EXIT_DRAIN_TIMEOUT: Final = 0.5
#: How long ``close()`` waits for each pipe thread to finish.
_THREAD_JOIN_TIMEOUT: Final = 2.0
#: Longest JSON line accepted from the server (64 MiB: a big embedded resource fits;
#: a server that never writes a newline cannot exhaust memory).
DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024


class StdioTransport:
    """Runs an MCP server subprocess and exchanges JSON lines with it.

    Thread-safe: any thread may ``send``; ``close`` may be called from any thread, any
    number of times. Normally created by :meth:`MCPConnection.stdio
    <a2a_sync.mcp.connection.MCPConnection.stdio>`.

    Args:
        argv: Program and arguments (``["python", "server.py"]``); never run by a shell.
        env: Extra variables, merged over the allow-listed environment.
        cwd: Working directory for the server.
        stderr: ``"log"`` (default: lines to the ``a2a_sync.mcp.transports.stdio.stderr``
            logger at INFO), a text file-like object (anything with ``write``), or
            ``None`` to discard. The last lines are kept for error messages in every case.
        inherit_env: Names of variables copied from this process's environment.
        max_line_bytes: Longest stdout line accepted.
        terminate_timeout: Seconds between closing stdin and SIGTERM.
        kill_timeout: Seconds between SIGTERM and SIGKILL.
    """

    wants_context = False
    kind = "stdio"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = LOG,
        inherit_env: Iterable[str] = DEFAULT_INHERITED_ENV_VARS,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        terminate_timeout: float = PROCESS_TERMINATION_TIMEOUT,
        kill_timeout: float = FORCE_KILL_TIMEOUT,
    ) -> None:
        if isinstance(argv, (str, bytes)) or not argv:
            raise ConfigurationError("argv must be a non-empty list of strings, not a string")
        self.argv = [os.fspath(a) for a in argv]
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.name = "stdio server " + " ".join(self.argv)[:200]
        self.era_key = ("stdio", tuple(self.argv), self.cwd)
        self._env = {**default_environment(inherit_env), **(env or {})}
        self._stderr_to = stderr
        self._max_line = max_line_bytes
        self._terminate_timeout = terminate_timeout
        self._kill_timeout = kill_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._sink: MessageSink | None = None
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()  # guards _closing, _reported
        self._closing = False
        self._reported = False
        self._signalled = False
        self._exited = threading.Event()
        self._reader_done = threading.Event()
        self._close_done = threading.Event()
        self._threads: list[threading.Thread] = []
        self._stdin: IO[bytes] | None = None
        self._pipe: StdoutPipe | None = None
        self._noise = NoiseLimiter(logger, self.name)
        self._stderr = StderrChannel(stderr, self.name, lambda: self.pid)
        self._shutdown_limit: float | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id (also its process group id on POSIX)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited (negative: killed by that signal)."""
        return self._proc.returncode if self._exited.is_set() and self._proc else None

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return self._stderr.tail

    @property
    def stdout_noise(self) -> str | None:
        """The first stdout line that was not a JSON-RPC message (escaped, shortened)."""
        return self._noise.first

    def hold_stderr(self) -> None:
        """Hold stderr lines (while the era probe runs) until :meth:`release_stderr`."""
        self._stderr.hold()

    def release_stderr(self, collapse: str | None) -> None:
        """Forward the held stderr lines, or (``collapse``: what the server refused)
        summarise them in one line and log them at DEBUG.

        What the server wrote to stderr before its last answer may still be in the pipe:
        it is read first (bounded by :data:`._stdio_stderr.SETTLE_TIMEOUT`)."""
        proc = self._proc
        self._stderr.release(collapse, proc.stderr if proc is not None else None)

    def limit_shutdown(self, seconds: float) -> None:
        """Bound the next :meth:`close` to about ``seconds`` (a failed connect's budget):
        the grace periods shrink, SIGKILL comes sooner."""
        self._shutdown_limit = max(seconds, 0.0)

    # --- Transport ----------------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Spawn the server and start the pipe threads.

        Raises:
            ServerProcessError: The program could not be started (missing, not executable,
                bad cwd).
        """
        self._sink = sink
        posix = os.name == "posix"
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL if self._stderr_to is None else subprocess.PIPE,
                env=self._env,
                cwd=self.cwd,
                start_new_session=posix,
                creationflags=0 if posix else subprocess.CREATE_NEW_PROCESS_GROUP,  # type: ignore[attr-defined,unused-ignore]
                close_fds=True,
            )
        except OSError as exc:
            raise ServerProcessError(f"could not start {self.name}: {exc.strerror or exc}") from exc
        self._proc = proc
        self._stdin = proc.stdin
        self._pipe = open_pipe(proc.stdout, self._max_line, sink.deliver, self._noise, self.name)
        tag = str(proc.pid)
        self._spawn(self._read_stdout, f"a2a-sync-mcp-stdio-reader-{tag}")
        if proc.stderr is not None:
            self._spawn(self._drain_stderr, f"a2a-sync-mcp-stdio-stderr-{tag}")
        self._spawn(self._watch_exit, f"a2a-sync-mcp-stdio-exit-{tag}")

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """Write one message as a JSON line.

        Raises:
            ConnectionClosed: The transport is closed.
            ServerProcessError: The server has exited.
        """
        data = encode_line(message)
        stdin = self._stdin
        with self._write_lock:
            if self._closing or stdin is None:
                raise ConnectionClosed(f"MCP connection to {self.name} is closed")
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise self._gone_error("could not write to") from exc

    def lead(self, _id: RequestId, waiter: Waiter, deadline: float | None, busy: Busy) -> None:
        """Read stdout on the waiting caller's thread (see :mod:`._stdio_lead`)."""
        if self._pipe is not None and deadline is not None:
            self._pipe.lead(waiter, deadline, busy)

    def abandon(self, request_id: RequestId) -> bool:
        """stdio cancels with ``notifications/cancelled``: nothing to do here."""
        return False

    def close(self) -> None:
        """Stop the server: close stdin, wait, SIGTERM, wait, SIGKILL (all bounded).

        Idempotent; a concurrent second call waits for the first.

        Raises:
            ServerProcessError: The server had exited with a failure status on its own
                (before or during a graceful close), not because it was signalled.
        """
        with self._state_lock:
            first = not self._closing
            self._closing = True
        proc = self._proc
        if proc is None:
            self._report(None)
            return
        if not first:
            self._close_done.wait(
                self._terminate_timeout + self._kill_timeout + KILL_REAP_TIMEOUT + 1
            )
            return
        try:
            self._shutdown(proc)
        finally:
            self._report(None)
            self._close_done.set()
        code = proc.returncode
        if code is not None and code > 0 and not self._signalled:
            raise ServerProcessError(
                f"{self.name} failed", returncode=code, stderr_tail=self.stderr_tail
            )

    # --- shutdown ------------------------------------------------------------------------------

    def _shutdown(self, proc: subprocess.Popen[bytes]) -> None:
        pipe = self._pipe
        if pipe is not None:
            pipe.closing()  # a leading caller hands stdout to the reader, which drains it
        acquired = self._write_lock.acquire(timeout=_WRITER_LOCK_TIMEOUT)
        try:
            if proc.stdin is not None:
                # A broken pipe on the final flush means the server is gone already.
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        finally:
            if acquired:
                self._write_lock.release()
        send = functools.partial(self._signal, proc)
        waits = shutdown_waits(self._terminate_timeout, self._kill_timeout, self._shutdown_limit)
        escalate(self._exited, send, waits, self.name, proc.pid)
        if os.name == "posix":
            kill_stragglers(proc.pid, send)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(_THREAD_JOIN_TIMEOUT)
        if pipe is not None:  # a grandchild may hold stdout open: stop reading it
            pipe.stop(self._threads[0], _THREAD_JOIN_TIMEOUT)  # [0]: the reader
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _signal(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        if not self._exited.is_set():
            self._signalled = True  # the exit status is ours, not a server failure
        signal_group(proc, sig)

    # --- threads ------------------------------------------------------------------------------

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _read_stdout(self) -> None:
        proc = self._proc
        sink = self._sink
        assert proc is not None
        assert proc.stdout is not None
        assert sink is not None
        readline = proc.stdout.readline
        pipe = self._pipe
        error = (
            pipe.run()
            if pipe is not None
            else read_messages(readline, self._max_line, sink.deliver, self._noise, self.name)
        )
        if error is not None:
            self._report(error)
            threading.Thread(
                target=self._close_quietly, name="a2a-sync-mcp-stdio-abort", daemon=True
            ).start()
            # Keep draining stdout: a server stuck on a full pipe could not exit.
            pipe.discard() if pipe is not None else discard(readline)
            self._reader_done.set()
            return
        self._reader_done.set()
        if self._closing:
            return
        # EOF: the server exited or closed its stdout; give the exit watcher a moment.
        if self._exited.wait(_EXIT_DRAIN_TIMEOUT):
            self._report(self._gone_error("connection lost:"))
        else:
            self._report(ConnectionClosed(f"{self.name} closed its stdout"))

    def _watch_exit(self) -> None:
        proc = self._proc
        assert proc is not None
        proc.wait()  # reaps the child: no zombie, whoever holds the pipes
        self._exited.set()
        if self._closing:
            return
        # Answers written just before exit are still in the pipe: let the reader finish
        # (unless a grandchild holds stdout open, then do not wait for EOF).
        self._reader_done.wait(_EXIT_DRAIN_TIMEOUT)
        self._report(self._gone_error("connection lost:"))

    def _drain_stderr(self) -> None:
        proc = self._proc
        assert proc is not None
        assert proc.stderr is not None
        self._stderr.drain(proc.stderr)

    # --- helpers ------------------------------------------------------------------------------

    def _close_quietly(self) -> None:
        try:
            self.close()
        except ServerProcessError as exc:
            logger.debug("%s", exc)

    def _report(self, error: A2ASyncError | None) -> None:
        with self._state_lock:
            if self._reported:
                return
            self._reported = True
        if self._sink is not None:
            self._sink.transport_closed(error)

    def _gone_error(self, what: str) -> A2ASyncError:
        proc = self._proc
        if self._exited.is_set() and proc is not None:
            return ServerProcessError(
                f"{what} {self.name} exited",
                returncode=proc.returncode,
                stderr_tail=self.stderr_tail,
            )
        if self._closing:
            return ConnectionClosed(f"MCP connection to {self.name} is closed")
        return ConnectionClosed(f"{what} {self.name}: its stdin is closed")
