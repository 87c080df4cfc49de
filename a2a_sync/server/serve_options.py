"""``ServeOptions``: how :func:`~a2a_sync.server.serving.serve` runs, as one frozen value.

``serve``'s keywords (``threads=``, ``limits=``, ``grace=``, ``quiet=``, ``grpc_port=``,
``app_options=``) are applied onto a :class:`ServeOptions` with :meth:`ServeOptions.merge`,
so a deployment can keep them in one value; any other keyword is a waitress setting::

    options = ServeOptions(limits=ServerLimits(connection_limit=2000), grace=30.0)
    serve(app, port=8000, options=options)          # or serve(app, grace=30.0, ...)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .app import DEFAULT_GRACE_PERIOD
from .limits import ServerLimits

__all__ = ["ServeOptions"]


@attrs.frozen(kw_only=True)
class ServeOptions:
    """The options of one ``serve`` call. Immutable; derive variants with ``attrs.evolve``
    or :meth:`merge`.

    Attributes:
        threads: waitress worker threads (default: stream cap + ``limits.unary_threads``).
        limits: Connection limit, read deadlines, idle timeout (:class:`ServerLimits`;
            the defaults are documented in ``docs/server.md``).
        grace: Seconds unary calls and agents get to finish on shutdown.
        quiet: Print nothing (by default one line on stderr at start, with the URL, where
            tasks are kept and how to stop, and one at stop).
        grpc_port: Also serve the gRPC binding on this port (0: a free one), beside the
            HTTP app, on the same handler, stores and limits (the ``grpc`` extra); the
            card lists it. It stops after the HTTP server (whose shutdown ends its streams).
        app_options: Further :class:`~a2a_sync.server.app.A2AApplication` arguments when
            ``serve`` builds the application (an executor with ``card=``).
        waitress: Further waitress settings (``trusted_proxy`` ...); they override what
            ``limits`` sets.
    """

    threads: int | None = None
    limits: ServerLimits | None = None
    grace: float = DEFAULT_GRACE_PERIOD
    quiet: bool = False
    grpc_port: int | None = None
    app_options: Mapping[str, Any] = attrs.field(factory=dict)
    waitress: Mapping[str, Any] = attrs.field(factory=dict)

    def merge(self, overrides: Mapping[str, Any]) -> ServeOptions:
        """These options with ``overrides`` applied: names of attributes (but
        ``waitress``) set them, any other name is a waitress setting added to
        ``waitress``."""
        if not overrides:
            return self
        names = {field.name for field in attrs.fields(ServeOptions)} - {"waitress"}
        own = {k: v for k, v in overrides.items() if k in names}
        settings = {k: v for k, v in overrides.items() if k not in names}
        if own.get("app_options") is None:
            own.pop("app_options", None)  # ``app_options=None`` meant "none" before
        if settings:
            own["waitress"] = {**self.waitress, **settings}
        return attrs.evolve(self, **own)
