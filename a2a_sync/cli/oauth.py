"""The CLI's OAuth options and the ``login`` / ``logout`` commands.

``a2a-sync mcp tools --url URL --oauth`` logs in through the system browser when the
server asks (tokens are kept in a 0600 file store, so the next run does not log in
again); ``a2a-sync login URL`` does it up front and ``a2a-sync logout URL`` forgets the
stored grant. Needs the ``oauth`` extra (``pip install 'a2a-sync[oauth]'``).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import ConfigurationError, install_hint

__all__ = ["add_login_commands", "oauth_arguments", "oauth_for"]


class _Output(Protocol):
    def line(self, text: str = "") -> None: ...

    def json(self, value: Any) -> None: ...


def oauth_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that configure OAuth for a command."""
    parser.add_argument(
        "--oauth", action="store_true", help="log in with OAuth when the server asks (HTTP)"
    )
    parser.add_argument("--client-id", help="pre-registered OAuth client id")
    parser.add_argument("--client-secret", help="its secret (for client credentials)")
    parser.add_argument(
        "--client-credentials",
        action="store_true",
        help="machine-to-machine: the client credentials grant (needs --client-id)",
    )
    parser.add_argument("--scope", action="append", default=[], help="scope to ask for")
    parser.add_argument("--token-dir", help="where tokens are kept (default: the state dir)")


def _oauth_module() -> Any:
    try:
        return importlib.import_module("a2a_sync.auth.oauth")
    except ImportError as exc:
        raise ConfigurationError(f"OAuth needs the oauth extra: {install_hint('oauth')}") from exc


def oauth_for(args: argparse.Namespace) -> Any:
    """The ``OAuth`` the options describe, or ``None`` without ``--oauth``."""
    if not getattr(args, "oauth", False):
        return None
    oauth = _oauth_module()
    return oauth.OAuth(
        client_id=args.client_id,
        client_secret=args.client_secret,
        grant="client_credentials" if args.client_credentials else "authorization_code",
        scopes=args.scope,
        store=oauth.FileTokenStore(args.token_dir),
        handler=oauth.ScriptHandler(),
        timeout=args.timeout or 30.0,
    )


def _cmd_login(args: argparse.Namespace, out: _Output) -> int:
    args.oauth = True
    auth = oauth_for(args)
    try:
        auth.login(args.url)
    finally:
        auth.close()
    out.json({"logged_in": args.url}) if args.json else out.line(f"logged in to {args.url}")
    return 0


def _cmd_logout(args: argparse.Namespace, out: _Output) -> int:
    args.oauth = True
    auth = oauth_for(args)
    try:
        held = auth.logout(args.url)
    finally:
        auth.close()
    if args.json:
        out.json({"logged_out": args.url, "had_token": held})
    else:
        out.line(f"logged out of {args.url}" if held else f"no stored login for {args.url}")
    return 0


def add_login_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """``login URL`` and ``logout URL``, made with the parser's ``command(name, handler,
    help)`` factory (which adds the common options)."""
    for name, handler, help_text in (
        ("login", _cmd_login, "log in to an OAuth-protected server (browser), keep the token"),
        ("logout", _cmd_logout, "forget the stored token of a server"),
    ):
        sub = command(name, handler, help_text)
        sub.add_argument("url", help="the server's URL (e.g. the MCP endpoint)")
        oauth_arguments(sub)
