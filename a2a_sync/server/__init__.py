"""The A2A server: a WSGI application serving an agent from plain threads.

::

    from a2a_sync.server import A2AApplication, AgentExecutor, serve

    class Echo(AgentExecutor):
        def execute(self, context, updater):
            updater.add_artifact(f"echo: {context.text}")
            updater.complete()

    serve(A2AApplication(card, Echo()), port=8000)

See ``docs/server.md`` for deployment (waitress, gunicorn ``gthread``, mounting in Flask
or Django, reverse proxies).
"""

from __future__ import annotations

from ..a2a.methods import Operation
from .app import A2AApplication
from .auth import APIKeys, Authenticator, BearerTokens, Principal
from .context import CallContext
from .executor import AgentExecutor, FunctionExecutor, RequestContext, TaskUpdater
from .handler import DefaultRequestHandler, RequestHandler, StreamingRequestHandler
from .limits import ServerLimits
from .mount import Mount, mount
from .push import PushSender
from .push_options import PushSenderOptions
from .push_policy import PushSettings
from .runs import EventStream
from .serving import RunningServer, ServeOptions, ServerHandle, serve, serve_in_thread
from .settings import AppSettings
from .stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore

__all__ = [
    "A2AApplication",
    "APIKeys",
    "AppSettings",
    "AgentExecutor",
    "Authenticator",
    "BearerTokens",
    "CallContext",
    "DefaultRequestHandler",
    "EventStream",
    "FunctionExecutor",
    "InMemoryTaskStore",
    "Mount",
    "Operation",
    "Principal",
    "PushSender",
    "PushSenderOptions",
    "PushSettings",
    "RequestContext",
    "RequestHandler",
    "RunningServer",
    "SQLiteTaskStore",
    "ServeOptions",
    "ServerHandle",
    "ServerLimits",
    "StreamingRequestHandler",
    "TaskStore",
    "TaskUpdater",
    "mount",
    "serve",
    "serve_in_thread",
]
