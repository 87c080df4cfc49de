"""A throwaway PostgreSQL cluster for the tests and the scale-out benchmark.

:func:`postgres_cluster` runs ``initdb`` into a fresh temporary directory, starts ``postgres``
on a Unix socket in that directory and on ``127.0.0.1:<free port>``, yields a
:class:`Cluster`, and always stops the server (fast shutdown, then immediate, then SIGKILL,
each wait bounded) and removes the directory. PostgreSQL refuses to run as root: as root the
server runs as the ``postgres`` user (the distribution package creates it) or ``nobody``.

The server binaries are found in this order: ``$A2A_SYNC_PG_BIN`` (a directory holding
``initdb`` and ``postgres``), ``initdb`` on ``PATH``, then the newest
``/usr/lib/postgresql/<version>/bin`` (where Debian and Ubuntu's ``postgresql`` package puts
them, off ``PATH``). Missing binaries or a missing ``psycopg`` skip the tests that need them
with the reason, except under ``CI=true``, where they fail: CI must not pass by skipping.

Fixtures (register the module as a pytest plugin):

* ``postgres_server`` (session): the :class:`Cluster`; tests needing PostgreSQL share it.
* ``postgres_dsn``: a fresh, empty database for one test (dropped afterwards), as a DSN.

The test cluster trades durability for speed (``fsync=off``): a test never survives a
power cut. The benchmark asks for a ``durable`` cluster (PostgreSQL's defaults).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import attrs
import pytest

from tests.support.polling import poll_until
from tests.support.ports import probe_port

__all__ = [
    "Cluster",
    "PostgresUnavailable",
    "find_binaries",
    "import_psycopg",
    "postgres_cluster",
    "postgres_dsn",
    "postgres_server",
]

#: Environment variable naming the directory of ``initdb`` and ``postgres``.
BIN_VARIABLE = "A2A_SYNC_PG_BIN"
#: initdb on a loaded 2-core box takes 1-3 s; anything near this is a broken setup.
INITDB_TIMEOUT = 60.0
#: Start-up to accepting connections (crash recovery of a fresh cluster is instant).
START_TIMEOUT = 30.0
#: Each shutdown stage (fast, then immediate) gets this long before the next.
STOP_TIMEOUT = 10.0
#: Connections the test cluster accepts: several workers x (pool + listener) + tests.
MAX_CONNECTIONS = 300
#: The superuser created by initdb (trust authentication: the cluster is throwaway).
SUPERUSER = "postgres"
_DISTRIBUTION_DIRS = "/usr/lib/postgresql"
_TAIL = 3000  # characters of the server log quoted in errors
#: Starts on another port when the probed one was taken meanwhile (the server says so).
_START_ATTEMPTS = 3


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries (or psycopg) are not installed here."""


@attrs.frozen
class Cluster:
    """A running throwaway cluster.

    Attributes:
        socket_dir: Directory of the Unix socket (``host=`` in a DSN).
        port: TCP port on 127.0.0.1 (also names the socket file).
        data_dir: The cluster's data directory.
        pid: The postmaster's process id.
    """

    socket_dir: str
    port: int
    data_dir: str
    pid: int

    def dsn(self, dbname: str = "postgres", *, tcp: bool = False) -> str:
        """A libpq key/value DSN for ``dbname`` (the Unix socket unless ``tcp``)."""
        host = "127.0.0.1" if tcp else self.socket_dir
        return f"host={host} port={self.port} user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str = "postgres", *, tcp: bool = True) -> str:
        """A ``postgresql://`` URL for ``dbname`` (TCP unless ``tcp=False``)."""
        if tcp:
            return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={self.port}"


def find_binaries() -> Path:
    """The directory holding ``initdb`` and ``postgres``.

    Raises:
        PostgresUnavailable: Not found (names where it looked).
    """
    candidates: list[Path] = []
    named = os.environ.get(BIN_VARIABLE)
    if named:
        candidates.append(Path(named))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    versions = sorted(
        Path(_DISTRIBUTION_DIRS).glob("*/bin"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parent.name.split(".")],
        reverse=True,
    )
    candidates += versions
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (looked in $"
        f"{BIN_VARIABLE}, PATH and {_DISTRIBUTION_DIRS}/*/bin); install them, e.g. "
        "`apt-get install -y postgresql` on Debian/Ubuntu"
    )


def _run_as() -> tuple[int, int] | None:
    """``(uid, gid)`` to run the server as, or ``None`` to run as ourselves (not root)."""
    if os.geteuid() != 0:
        return None
    for name in (SUPERUSER, "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise PostgresUnavailable("running as root and neither 'postgres' nor 'nobody' exists")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-_TAIL:]
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def postgres_cluster(*, durable: bool = False) -> Iterator[Cluster]:
    """Start a throwaway cluster; stop it and delete its files on exit.

    Args:
        durable: Keep PostgreSQL's durability defaults (``fsync``, synchronous commit);
            by default they are off, for fast tests.

    Raises:
        PostgresUnavailable: The binaries are missing.
        RuntimeError: initdb or the server failed (the log tail is in the message).
    """
    bindir = find_binaries()
    identity = _run_as()
    # Not under pytest's tmp_path: its parents are 0700 root and the server user must reach
    # its directory. mkdtemp makes a 0700 directory that the chown below hands over.
    root = Path(tempfile.mkdtemp(prefix="a2a-pg-"))
    data = root / "data"
    log = root / "server.log"
    user: dict[str, int] = {}
    if identity is not None:
        os.chown(root, *identity)
        user = {"user": identity[0], "group": identity[1], "extra_groups": []}
    process: subprocess.Popen[bytes] | None = None
    try:
        initdb = subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            capture_output=True,
            timeout=INITDB_TIMEOUT,
            check=False,
            cwd=root,
            **user,  # type: ignore[arg-type]
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed: {initdb.stderr.decode(errors='replace')[-_TAIL:]}")
        settings = [
            f"max_connections={MAX_CONNECTIONS}",
            "unix_socket_permissions=0777",
        ]
        if not durable:
            settings += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
        # PostgreSQL can neither bind port 0 nor take a socket: a probed port may be taken
        # before the server binds it, which the server reports; then start again.
        for attempt in range(1, _START_ATTEMPTS + 1):
            port = probe_port()
            with log.open("wb") as log_file:
                process = subprocess.Popen(
                    [
                        str(bindir / "postgres"),
                        "-D",
                        str(data),
                        "-k",
                        str(root),
                        "-h",
                        "127.0.0.1",
                        "-p",
                        str(port),
                        *itertools.chain.from_iterable(("-c", s) for s in settings),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    cwd=root,
                    **user,  # type: ignore[arg-type]
                )
            cluster = Cluster(str(root), port, str(data), process.pid)
            try:
                _wait_ready(cluster, process, log)
                break
            except RuntimeError:
                if attempt == _START_ATTEMPTS or "already in use" not in _tail(log):
                    raise
                _stop(process)
        yield cluster
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(cluster: Cluster, process: subprocess.Popen[bytes], log: Path) -> None:
    import psycopg

    def accepts() -> bool:
        try:
            with psycopg.connect(cluster.dsn(), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    # postgres reports readiness only in its log: try connecting (or see it exit), bounded
    if not poll_until(
        lambda: process.poll() is not None or accepts(), START_TIMEOUT, interval=0.05
    ):
        raise RuntimeError(
            f"postgres did not accept connections in {START_TIMEOUT} s: {_tail(log)}"
        )
    if process.poll() is not None:
        raise RuntimeError(f"postgres exited with {process.returncode}: {_tail(log)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; each bounded."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
        if process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            continue
        return


# -- pytest fixtures -------------------------------------------------------------------------


def _under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``; under CI=true, fail instead (CI must run these tests)."""
    if _under_ci():
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def import_psycopg() -> ModuleType:
    """``psycopg``, for test modules that need it at import time: without the ``postgres``
    extra the module is skipped, or fails under ``CI=true``."""
    try:
        import psycopg
    except ImportError:
        reason = "psycopg is not installed: pip install 'a2a-sync[postgres]'"
        if _under_ci():
            pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return psycopg


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster shared by the whole session, always stopped."""
    try:
        import psycopg  # noqa: F401 - optional dependency (the "postgres" extra)
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'a2a-sync[postgres]'")
    try:
        find_binaries()
    except PostgresUnavailable as exc:
        _unavailable(str(exc))
    with postgres_cluster() as cluster:
        yield cluster


_databases = itertools.count(1)


@pytest.fixture
def postgres_dsn(postgres_server: Cluster) -> Iterator[str]:
    """A fresh empty database on the session cluster, dropped after the test."""
    import psycopg

    name = f"a2a_test_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.dsn(name)
    finally:
        with psycopg.connect(postgres_server.dsn(), autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
