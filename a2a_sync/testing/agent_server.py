"""``agent_server``: run an agent on a free local port for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..a2a.types import AgentCard
from ..errors import ConfigurationError
from ..server.app import A2AApplication
from ..server.executor import AgentExecutor
from ..server.serving import THREAD_GRACE, serve_in_thread
from ..server.stores.sqlite import SQLiteTaskStore
from .fake import FakeAgent, agent_card

__all__ = ["agent_server"]


@contextlib.contextmanager
def agent_server(
    agent: Any,
    *,
    card: AgentCard | None = None,
    database: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    grace: float = THREAD_GRACE,
    **app_options: Any,
) -> Iterator[str]:
    """Serve an agent on waitress in a background thread; yield its base URL.

    Example::

        from a2a_sync import A2AClient
        from a2a_sync.testing import agent_server

        def echo(context, updater):
            updater.add_artifact(context.text)
            updater.complete()

        with agent_server(echo) as url, A2AClient.from_url(url) as client:
            assert client.send_message("hi").text == "hi"

    On exit a :class:`~a2a_sync.testing.FakeAgent`'s runs are interrupted, the server
    stops gracefully (``grace`` seconds for agents still running) and every thread it
    started is joined.

    Args:
        agent: An :class:`~a2a_sync.server.A2AApplication` (served as it is), a
            :class:`~a2a_sync.testing.FakeAgent`, an
            :class:`~a2a_sync.server.AgentExecutor` or an ``execute(context, updater)``
            function.
        card: The card for an executor (default: the fake agent's, or
            :func:`~a2a_sync.testing.agent_card`).
        database: Keep tasks in this SQLite file (default: in memory).
        host: Address to bind (loopback: only local clients, DNS-rebinding protection).
        port: Port to bind (0: a free one).
        grace: Seconds running agents get when the block ends.
        **app_options: Further :class:`~a2a_sync.server.A2AApplication` arguments
            (``authenticate=``, ``max_streams=`` ...).

    Yields:
        The base URL, ``http://127.0.0.1:<port>``.

    Raises:
        ConfigurationError: Options given with a ready application, an object that is no
            agent, or waitress missing.
    """
    store: SQLiteTaskStore | None = None
    if isinstance(agent, A2AApplication):
        if card is not None or database is not None or app_options:
            raise ConfigurationError(
                "agent_server() serves an A2AApplication as it is: configure the "
                "application itself, not card/database/app options"
            )
        app = agent
    elif isinstance(agent, AgentExecutor) or callable(agent):
        if card is None:
            card = agent.card if isinstance(agent, FakeAgent) else agent_card()
        if database is not None:
            store = SQLiteTaskStore(os.fspath(database))
        app = A2AApplication(card, agent, task_store=store, **app_options)
    else:
        raise ConfigurationError(
            f"agent_server() needs an A2AApplication, an AgentExecutor or an execute "
            f"function, not {type(agent).__name__}"
        )
    try:
        with serve_in_thread(app, host, port, grace=grace) as url:
            try:
                yield url
            finally:
                if isinstance(agent, FakeAgent):
                    agent.interrupt()
    finally:
        if store is not None:
            store.close()
