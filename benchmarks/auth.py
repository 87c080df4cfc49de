"""OAuth client overhead: an authorized MCP call over an unauthorized one, token cached.

Target (issue 16): once a token is cached, an authorized call costs under 5 % more client
CPU than an unauthorized one. One server process (``--serve``: the test authorization
server of ``tests/support/oauth_server.py`` and a minimal stateless MCP responder on
waitress, JWTs verified with :class:`a2a_sync.auth.verify.JWTVerifier`) serves the same
responder twice: open at ``/open/mcp`` and protected at ``/mcp``. The client logs in once
(authorization code + PKCE, auto-approved) before measuring, then every variant makes
sequential ``tools/call`` round trips; CPU µs/op is this process's CPU only.

* ``open``: ``MCPConnection.http(open_url)``, no credential (the baseline).
* ``static``: the protected URL with ``auth=<the cached access token string>``.
* ``oauth``: the protected URL with ``auth=OAuth(...)`` (token cached; per request: a lock,
  a dict lookup, an expiry check).
* ``hook``: only ``OAuth.authorization(url)``, the per-request work OAuth adds (its
  ``CPU x base`` is that work as a fraction of one unauthorized call).

The ``static``/``oauth`` rows also pay for sending a ~1 KB JWT header; ``oauth`` against
``static`` is what OAuth itself costs. On the shared 2-core box the call rows move by
±10 % between runs; the ``hook`` row is the stable figure.

Run from the repo top::

    .venv/bin/python -m benchmarks.auth
    .venv/bin/python -m benchmarks.auth --reps 7 --n 3000
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

import requests

from a2a_sync.auth.oauth import OAuth
from a2a_sync.mcp import MCPConnection
from benchmarks.harness import Variant, run_cli

TOOL = {"name": "echo", "description": "echo", "inputSchema": {"type": "object"}}


def _mcp_app(verify: Callable[[str], bool] | None, metadata_url: str) -> Callable[..., Any]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if verify is not None:
            header = environ.get("HTTP_AUTHORIZATION", "")
            if not header.startswith("Bearer ") or not verify(header[7:]):
                start_response(
                    "401 Unauthorized",
                    [("WWW-Authenticate", f'Bearer resource_metadata="{metadata_url}"')],
                )
                return [b""]
        if environ.get("REQUEST_METHOD") != "POST":  # no GET stream, no session to end
            start_response("405 Method Not Allowed", [("Allow", "POST")])
            return [b""]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        message = json.loads(environ["wsgi.input"].read(length) or b"{}")
        if "id" not in message:
            start_response("202 Accepted", [])
            return [b""]
        method = message.get("method")
        if method == "initialize":
            result: Any = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "hello"}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    return app


def serve() -> None:
    """The server process: prints ``READY <base>`` and serves until stdin closes."""
    from a2a_sync.auth.verify import JWTVerifier
    from a2a_sync.errors import AuthorizationError
    from tests.support.oauth_server import serve_authorization_server
    from tests.support.servers import serve_wsgi

    holder: dict[str, Any] = {}

    def router(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/.well-known/oauth-protected-resource/mcp":
            body = json.dumps(
                {"resource": holder["base"] + "/mcp", "authorization_servers": [holder["iss"]]}
            ).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        app = holder["open"] if path == "/open/mcp" else holder["protected"]
        return app(environ, start_response)  # type: ignore[no-any-return]

    with serve_authorization_server() as server, serve_wsgi(router) as base:
        verifier = JWTVerifier(issuer=server.issuer, audience=f"{base}/mcp", keys=server.jwks)

        verified: set[str] = set()

        def verify(token: str) -> bool:
            # Each token is verified once, then remembered: the protected endpoint then
            # answers as fast as the open one, so the client rows differ by client work only.
            if token in verified:
                return True
            try:
                verifier.verify(token)
            except AuthorizationError:
                return False
            verified.add(token)
            return True

        metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
        holder.update(
            base=base,
            iss=server.issuer,
            open=_mcp_app(None, metadata),
            protected=_mcp_app(verify, metadata),
        )
        print(f"READY {base}", flush=True)
        sys.stdin.read()


class AutoApprove:
    """The test authorization server approves at once: follow to the redirect."""

    def authorize(self, build: Callable[[str], str]) -> str:
        url = build("http://127.0.0.1:8765/callback")
        response = requests.get(url, allow_redirects=False, timeout=10)
        return str(response.headers["Location"])


def _calls(conn: MCPConnection) -> Callable[[int], int]:
    client = conn.client()

    def run(n: int) -> int:
        for _ in range(n):
            client.call_tool("echo", {})
        return n

    return run


def _hook(oauth: OAuth, url: str) -> Callable[[int], int]:
    def run(n: int) -> int:
        for _ in range(n):
            oauth.authorization(url)
        return n

    return run


def main() -> None:
    if "--serve" in sys.argv:
        serve()
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.auth", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line[:1] == ["READY"], line
        base = line[1]
        oauth = OAuth(handler=AutoApprove())
        with (
            MCPConnection.http(f"{base}/open/mcp", era="legacy") as open_conn,
            MCPConnection.http(f"{base}/mcp", era="legacy", auth=oauth) as oauth_conn,
        ):
            header = oauth.authorization(f"{base}/mcp")  # logged in by the handshake
            assert header is not None
            token = header.removeprefix("Bearer ")
            with MCPConnection.http(f"{base}/mcp", era="legacy", auth=token) as static_conn:
                run_cli(
                    [
                        Variant("open", _calls(open_conn), server_pid=proc.pid),
                        Variant("static", _calls(static_conn), server_pid=proc.pid),
                        Variant("oauth", _calls(oauth_conn), server_pid=proc.pid),
                        Variant("hook", _hook(oauth, f"{base}/mcp")),
                    ],
                    baseline="open",
                    default_n=2000,
                    title="MCP tools/call over HTTP: no credential vs static token vs OAuth "
                    "(token cached)",
                )
        oauth.close()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(30)


if __name__ == "__main__":
    main()
