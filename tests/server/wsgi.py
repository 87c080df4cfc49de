"""Call a WSGI app in-process through ``wsgiref.validate`` (PEP 3333 checks on every call)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

from a2a_sync.server.app import A2AApplication


class CountingInput(io.BytesIO):
    """A ``wsgi.input`` that records how many bytes the app read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.consumed = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.consumed += len(chunk)
        return chunk

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.consumed += len(line)
        return line


class Response:
    """A started response: status, headers, and the body iterator (close it when done)."""

    def __init__(self, status: str, headers: list[tuple[str, str]], body: Any) -> None:
        self.status = status
        self.code = int(status.split(maxsplit=1)[0])
        self.headers = {k.lower(): v for k, v in headers}
        self._body = body
        self._iter: Iterator[bytes] = iter(body)

    def next_chunk(self) -> bytes:
        return next(self._iter)

    def read(self) -> bytes:
        try:
            return b"".join(self._iter)
        finally:
            self.close()

    def finish(self) -> int:
        """Read and close the body; return the status code."""
        self.read()
        return self.code

    def json(self) -> Any:
        return json.loads(self.read())

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is not None:
            close()


def call(
    app: A2AApplication,
    method: str = "POST",
    path: str = "/",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    content_length: bool = True,
    wsgi_input: io.BytesIO | None = None,
    input_terminated: bool = False,
) -> Response:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "QUERY_STRING": "",
        "SCRIPT_NAME": "",
    }
    if input_terminated:
        environ["wsgi.input_terminated"] = True
    setup_testing_defaults(environ)
    environ["wsgi.input"] = wsgi_input if wsgi_input is not None else CountingInput(body or b"")
    if body is not None and content_length:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
        elif key == "QUERY_STRING":
            environ["QUERY_STRING"] = value
        else:
            environ[f"HTTP_{key}"] = value
    started: dict[str, Any] = {}

    def start_response(
        status: str, response_headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Any:
        started["status"] = status
        started["headers"] = response_headers
        return lambda data: None

    result = validator(app)(environ, start_response)
    return Response(started["status"], started["headers"], result)


def rpc(
    app: A2AApplication,
    method: str,
    params: Any = None,
    *,
    request_id: Any = 1,
    version: str | None = "1.0",
    headers: dict[str, str] | None = None,
) -> Response:
    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        envelope["params"] = params
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if version is not None:
        all_headers["A2A-Version"] = version
    return call(app, body=json.dumps(envelope).encode(), headers=all_headers)


def sse_events(response: Response) -> list[dict[str, Any]]:
    """Every ``data:`` event of a finished stream, decoded (comments skipped)."""
    text = response.read().decode()
    out = []
    for block in text.split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out
