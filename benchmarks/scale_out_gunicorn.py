"""gunicorn configuration of the scale-out benchmark's workers (as docs/scale-out.md)."""

from __future__ import annotations

from typing import Any


def worker_exit(server: Any, worker: Any) -> None:
    """Close the app, then the store, when a worker exits."""
    from benchmarks.scale_out_app import app, store  # the worker's own app

    app.close(10.0)
    store.close()
