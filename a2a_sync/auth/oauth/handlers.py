"""Where a person approves access: the browser step of the authorization-code flow.

A handler is one method, :meth:`AuthorizationHandler.authorize`: it is given ``build``,
which turns a redirect URI into the authorization URL, and returns the URL the browser
was redirected to (with ``code``, ``state`` and ``iss``). Built in:

* :class:`ScriptHandler` opens the system browser and catches the redirect on a
  ``127.0.0.1`` listener on an ephemeral port (RFC 8252 §7.3).
* :class:`NotebookHandler` shows the link (rich display in Jupyter) and catches the
  redirect the same way, with a bounded wait.
* :class:`HeadlessHandler` raises :class:`~a2a_sync.errors.AuthorizationRequired`
  carrying the authorization URL (log in elsewhere, e.g. ``a2a-sync login``).
"""

from __future__ import annotations

import http.server
import logging
import sys
import threading
import webbrowser
from collections.abc import Callable
from html import escape
from typing import Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ...errors import AuthorizationError, AuthorizationRequired

__all__ = [
    "AuthorizationHandler",
    "HeadlessHandler",
    "LoopbackListener",
    "NotebookHandler",
    "ScriptHandler",
    "default_handler",
]

logger = logging.getLogger(__name__)

#: How long a person has to approve in the browser.
DEFAULT_BROWSER_TIMEOUT: Final = 300.0
CALLBACK_PATH: Final = "/callback"
_PAGE: Final = (
    b"<!doctype html><title>a2a-sync</title><p>Authorization received. You can close this tab.</p>"
)


@runtime_checkable
class AuthorizationHandler(Protocol):
    """Drives the browser step; implement it to plug in your own."""

    def authorize(self, build: Callable[[str], str]) -> str:
        """Call ``build(redirect_uri)`` for the authorization URL, have a person open it,
        and return the full URL the browser was redirected to."""
        ...


class LoopbackListener:
    """A one-shot HTTP listener on ``127.0.0.1`` and an ephemeral port that waits for the
    authorization redirect. Its thread is a named daemon, joined on :meth:`close`."""

    def __init__(self, path: str = CALLBACK_PATH) -> None:
        self.path = path
        self._received: str | None = None
        self._event = threading.Event()
        listener = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if urlsplit(self.path).path != listener.path or listener._event.is_set():
                    self.send_error(404)
                    return
                listener._received = self.path
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(_PAGE)))
                self.end_headers()
                self.wfile.write(_PAGE)
                listener._event.set()

            def log_message(self, format: str, *args: object) -> None:
                return  # the query holds the authorization code: never log it

        self._server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
        self.redirect_uri = f"http://127.0.0.1:{self._server.server_port}{path}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="a2a-sync-oauth-callback",
            daemon=True,
        )
        self._thread.start()

    def wait(self, timeout: float) -> str:
        """The redirect URL, once it arrived.

        Raises:
            AuthorizationError: Nothing arrived within ``timeout`` seconds.
        """
        if not self._event.wait(timeout):
            raise AuthorizationError(
                f"no authorization arrived within {timeout:g} s; approve in the browser "
                "sooner, or raise the handler's timeout",
                step="authorization",
            )
        assert self._received is not None
        return f"http://127.0.0.1:{self._server.server_port}{self._received}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)

    def __enter__(self) -> LoopbackListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptHandler:
    """Opens the system browser; catches the redirect on a loopback listener.

    Args:
        timeout: How long to wait for the person to approve.
        open_browser: Opens a URL (``webbrowser.open``, looked up at call time, by default).
    """

    def __init__(
        self,
        timeout: float = DEFAULT_BROWSER_TIMEOUT,
        open_browser: Callable[[str], object] | None = None,
    ) -> None:
        self.timeout = timeout
        self._open = open_browser

    def authorize(self, build: Callable[[str], str]) -> str:
        with LoopbackListener() as listener:
            url = build(listener.redirect_uri)
            opener = self._open if self._open is not None else webbrowser.open
            if not opener(url):
                logger.warning("could not open a browser; open this URL to log in: %s", url)
            return listener.wait(self.timeout)


class NotebookHandler:
    """Shows the authorization link (a rich link in Jupyter, else a log line) and waits
    for the redirect on a loopback listener, at most ``timeout`` seconds."""

    def __init__(self, timeout: float = DEFAULT_BROWSER_TIMEOUT) -> None:
        self.timeout = timeout

    def authorize(self, build: Callable[[str], str]) -> str:
        with LoopbackListener() as listener:
            url = build(listener.redirect_uri)
            _show_link(url)
            return listener.wait(self.timeout)


def _show_link(url: str) -> None:
    try:
        from IPython.display import HTML, display  # noqa: PLC0415 - only in notebooks
    except ImportError:
        logger.warning("open this URL to log in: %s", url)
        return
    display(HTML(f'<a href="{escape(url)}" target="_blank">Log in (opens a new tab)</a>'))  # type: ignore[no-untyped-call]


class HeadlessHandler:
    """No browser here: raise :class:`~a2a_sync.errors.AuthorizationRequired` with the
    URL a person must open. ``redirect_uri`` is the one the URL is built for."""

    def __init__(self, redirect_uri: str = f"http://127.0.0.1{CALLBACK_PATH}") -> None:
        self.redirect_uri = redirect_uri

    def authorize(self, build: Callable[[str], str]) -> str:
        url = build(self.redirect_uri)
        raise AuthorizationRequired(
            "this process cannot show a browser: a person must approve access. Log in "
            "once where a browser is available (a2a-sync login, with a FileTokenStore), "
            "use client credentials, or pass handler=ScriptHandler()",
            authorization_url=url,
        )


def default_handler() -> AuthorizationHandler:
    """Notebook in a Jupyter kernel, the system browser at a terminal, else headless."""
    if "ipykernel" in sys.modules:
        return NotebookHandler()
    if sys.stdin is not None and sys.stdin.isatty():
        return ScriptHandler()
    return HeadlessHandler()
