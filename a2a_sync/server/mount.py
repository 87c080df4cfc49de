"""``mount``: put an A2A application under a path prefix of another WSGI application
(Flask, Django, any WSGI site), without werkzeug.

Flask::

    flask_app.wsgi_app = mount(flask_app.wsgi_app, "/agents/echo", a2a_app)

Django (``wsgi.py``)::

    application = mount(get_wsgi_application(), "/agents/echo", a2a_app)

Requests for ``/agents/echo`` and below go to ``a2a_app`` with the prefix moved from
``PATH_INFO`` to ``SCRIPT_NAME`` (so the card advertises ``https://host/agents/echo/``);
everything else goes to the site, untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigurationError

__all__ = ["Mount", "mount"]

WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


class Mount:
    """A WSGI application sending one path prefix to another application.

    Attributes:
        site: The application serving everything outside the prefix.
        prefix: The prefix (``/agents/echo``: no trailing slash).
        app: The application under it.
    """

    def __init__(self, site: WSGIApp, prefix: str, app: WSGIApp) -> None:
        if not prefix.startswith("/") or prefix.rstrip("/") == "" or "?" in prefix:
            raise ConfigurationError(
                f"mount prefix {prefix!r} must be a path such as '/agents/echo'"
            )
        self.site = site
        self.prefix = prefix.rstrip("/")
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        if path == self.prefix or path.startswith(self.prefix + "/"):
            inner = dict(environ)
            inner["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + self.prefix
            inner["PATH_INFO"] = path[len(self.prefix) :]
            return self.app(inner, start_response)
        return self.site(environ, start_response)

    def close(self, grace: float) -> bool:
        """Close the mounted application gracefully (an :class:`A2AApplication`: streams
        end, running calls get ``grace`` seconds); call it from the server's shutdown
        hook (gunicorn's ``worker_exit``)."""
        close = getattr(self.app, "close", None)
        return bool(close(grace)) if close is not None else True

    def __repr__(self) -> str:
        return f"<Mount {self.prefix} -> {self.app!r}>"


def mount(site: WSGIApp, prefix: str, app: WSGIApp) -> Mount:
    """``site`` with ``app`` (an :class:`~a2a_sync.server.A2AApplication`) under
    ``prefix``.

    Raises:
        ConfigurationError: ``prefix`` is not a path.
    """
    return Mount(site, prefix, app)
