"""The app gunicorn imports in test_deploy.py (``tests.server.gunicorn_app:app``)."""

from __future__ import annotations

import attrs

from a2a_sync.server.app import A2AApplication
from tests.server.agents import EchoAgent, card

app = A2AApplication(
    attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), max_streams=4, rest_path="/rest"
)


def worker_exit(server: object, worker: object) -> None:
    """gunicorn hook (``-c``): end streams and let calls finish before the worker exits."""
    app.close(5.0)
