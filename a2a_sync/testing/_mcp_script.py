"""The scripted MCP server itself (:class:`ScriptedMCPServer`): what a script offers and how
each request is answered. :mod:`a2a_sync.testing.mcp_server` documents the script and
runs it as a command."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Final

from ..errors import ConfigurationError

__all__ = ["PROTOCOL_VERSIONS", "ScriptedMCPServer", "ToolHandler"]

logger = logging.getLogger("a2a_sync.testing.mcp_server")  # where it always logged

#: Handshake revisions the server accepts; it answers a newer offer with the last one.
PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: A tool implemented in Python: ``handler(arguments) -> str | dict | JSON value``. A ``str``
#: is the text; a ``dict`` is the structured content (its JSON is the text); raising makes
#: a failed call (``isError`` with the exception's text; ``ValueError``/``TypeError`` mean
#: "bad arguments" and are not logged as crashes).
ToolHandler = Callable[[dict[str, Any]], Any]

_TOOL_KEYS: Final = frozenset(
    {
        "description",
        "input_schema",
        "output_schema",
        "reply",
        "structured",
        "is_error",
        "error",
        "delay",
        "progress",
    }
)
_RESOURCE_KEYS: Final = frozenset({"name", "description", "text", "blob", "mime_type"})
_PROMPT_KEYS: Final = frozenset({"description", "arguments", "text", "role"})
_SCRIPT_KEYS: Final = frozenset(
    {"name", "version", "instructions", "tools", "resources", "prompts", "pages"}
)
_PLACEHOLDER: Final = re.compile(r"\{(\w+)\}")
_METHOD_NOT_FOUND: Final = -32601
_INVALID_PARAMS: Final = -32602


def _fill(template: str, values: Mapping[str, Any]) -> str:
    """Replace ``{name}`` with ``values[name]`` (other braces stay as they are)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            return match.group(0)
        value = values[name]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return _PLACEHOLDER.sub(one, template)


def _entries(script: Mapping[str, Any], key: str, allowed: frozenset[str]) -> dict[str, Any]:
    section = script.get(key) or {}
    if not isinstance(section, Mapping):
        raise ConfigurationError(f"script {key!r} must be an object keyed by name")
    entries: dict[str, Any] = {}
    for name, given in section.items():
        spec = {"text" if key != "tools" else "reply": given} if isinstance(given, str) else given
        if not isinstance(spec, Mapping):
            raise ConfigurationError(f"script {key}[{name!r}] must be a string or an object")
        unknown = set(spec) - allowed
        if unknown:
            raise ConfigurationError(
                f"script {key}[{name!r}] has unknown keys {sorted(unknown)}; "
                f"known: {sorted(allowed)}"
            )
        entries[str(name)] = dict(spec)
    return entries


class ScriptedMCPServer:
    """The server behind :func:`mcp_server_command`: a script plus optional Python tools.

    Not thread-safe: :meth:`serve` answers one message at a time on the calling thread.

    Args:
        script: What the server offers (see the module docstring).
        handlers: Tools implemented in Python (:data:`ToolHandler`), by name; a name in
            the script's ``tools`` takes its description and schemas from there.
        record: A file to append every received message to (one JSON line each).

    Raises:
        ConfigurationError: The script is malformed (unknown keys, wrong types).
    """

    def __init__(
        self,
        script: Mapping[str, Any] | None = None,
        *,
        handlers: Mapping[str, ToolHandler] | None = None,
        record: str | os.PathLike[str] | None = None,
    ) -> None:
        script = dict(script or {})
        unknown = set(script) - _SCRIPT_KEYS
        if unknown:
            raise ConfigurationError(
                f"script has unknown keys {sorted(unknown)}; known: {sorted(_SCRIPT_KEYS)}"
            )
        self.name = str(script.get("name", "scripted-mcp-server"))
        self.version = str(script.get("version", "1.0"))
        self.instructions: str | None = script.get("instructions")
        self.tools = _entries(script, "tools", _TOOL_KEYS)
        self.handlers = dict(handlers or {})
        for name in self.handlers:
            self.tools.setdefault(name, {})
        self.resources = _entries(script, "resources", _RESOURCE_KEYS)
        self.prompts = _entries(script, "prompts", _PROMPT_KEYS)
        self._record = Path(record) if record is not None else None
        self.pages = _pages(script.get("pages"))

    # -- the loop ----------------------------------------------------------------------------

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Answer messages from ``stdin`` on ``stdout`` until end of input."""
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._write(stdout, _error(None, -32700, "Parse error"))
                continue
            if self._record is not None:
                with self._record.open("a", encoding="utf-8") as record:
                    record.write(json.dumps(message, ensure_ascii=False) + "\n")
            for answer in self.answers(message):
                self._write(stdout, answer)

    @staticmethod
    def _write(stdout: IO[bytes], message: dict[str, Any]) -> None:
        stdout.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        stdout.flush()

    def handle(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Everything the server writes in answer to one message (notifications first)."""
        return list(self.answers(message))

    def answers(self, message: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Like :meth:`handle`, produced as they are due (a tool's progress comes early)."""
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if not isinstance(method, str) or request_id is None:
            return  # a notification, or a response to nothing we asked
        if method == "tools/call":
            yield from self._call(request_id, params)
        elif method == "initialize":
            yield _result(request_id, self._initialize(params))
        elif method == "ping":
            yield _result(request_id, {})
        elif method in ("tools/list", "resources/list", "prompts/list") and method[:-5] in (
            self.pages
        ):
            yield self._page(request_id, method[:-5], params)
        elif method == "tools/list":
            listing = [self._tool(name, spec) for name, spec in self.tools.items()]
            yield _result(request_id, {"tools": listing})
        elif method == "resources/list":
            listing = [self._resource(uri, spec) for uri, spec in self.resources.items()]
            yield _result(request_id, {"resources": listing})
        elif method == "resources/read":
            yield self._read(request_id, params)
        elif method == "prompts/list":
            listing = [self._prompt(name, spec) for name, spec in self.prompts.items()]
            yield _result(request_id, {"prompts": listing})
        elif method == "prompts/get":
            yield self._get_prompt(request_id, params)
        else:
            yield _error(request_id, _METHOD_NOT_FOUND, "Method not found")

    # -- methods -------------------------------------------------------------------------------

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        offered = params.get("protocolVersion")
        capabilities: dict[str, Any] = {}
        if self.tools:
            capabilities["tools"] = {"listChanged": False}
        if self.resources:
            capabilities["resources"] = {"listChanged": False, "subscribe": False}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": False}
        result: dict[str, Any] = {
            "protocolVersion": offered if offered in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "capabilities": capabilities,
            "serverInfo": {"name": self.name, "version": self.version},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def _page(self, request_id: Any, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
        cursor = params.get("cursor", "")
        page = self.pages[kind].get(cursor) if isinstance(cursor, str) else None
        if page is None:
            return _error(request_id, _INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
        render: Callable[[str, Mapping[str, Any]], dict[str, Any]]
        entries: dict[str, Any]
        render, entries = {
            "tools": (self._tool, self.tools),
            "resources": (self._resource, self.resources),
            "prompts": (self._prompt, self.prompts),
        }[kind]
        result: dict[str, Any] = {kind: [render(n, entries.get(n, {})) for n in page["items"]]}
        if "next" in page:
            result["nextCursor"] = page["next"]
        return _result(request_id, result)

    @staticmethod
    def _tool(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "name": name,
            "inputSchema": spec.get("input_schema") or {"type": "object"},
        }
        if spec.get("description"):
            tool["description"] = spec["description"]
        if spec.get("output_schema"):
            tool["outputSchema"] = spec["output_schema"]
        return tool

    def _call(self, request_id: Any, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        spec = self.tools.get(name) if isinstance(name, str) else None
        if spec is None or not isinstance(arguments, dict):
            yield _error(request_id, _INVALID_PARAMS, f"Unknown tool: {name}")
            return
        assert isinstance(name, str)
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int(spec.get("progress", 0))
        delay = float(spec.get("delay", 0.0))
        # The delay is spread over the progress steps. Sleeping is the point: a test server
        # answers one request at a time, like a slow tool would.
        for step in range(1, steps + 1):
            if token is not None:
                yield _progress(token, step, steps)
            time.sleep(delay / steps)
        if delay and not steps:
            time.sleep(delay)
        if "error" in spec:
            error = spec["error"]
            yield _error(request_id, int(error["code"]), str(error["message"]))
            return
        handler = self.handlers.get(name)
        if handler is not None:
            yield _result(request_id, _handler_result(name, handler, arguments))
            return
        structured = spec.get("structured")
        text = spec.get("reply")
        if text is None:
            text = json.dumps(structured, ensure_ascii=False) if structured is not None else ""
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": _fill(str(text), arguments)}],
            "isError": bool(spec.get("is_error", False)),
        }
        if structured is not None:
            result["structuredContent"] = structured
        yield _result(request_id, result)

    @staticmethod
    def _resource(uri: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        resource: dict[str, Any] = {"uri": uri, "name": spec.get("name", uri)}
        if spec.get("description"):
            resource["description"] = spec["description"]
        resource["mimeType"] = spec.get("mime_type", "text/plain")
        return resource

    def _read(self, request_id: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        spec = self.resources.get(uri) if isinstance(uri, str) else None
        if spec is None:
            return _error(request_id, -32002, "Resource not found", {"uri": uri})
        contents: dict[str, Any] = {"uri": uri, "mimeType": spec.get("mime_type", "text/plain")}
        if "blob" in spec:
            contents["blob"] = spec["blob"]
        else:
            contents["text"] = spec.get("text", "")
        return _result(request_id, {"contents": [contents]})

    @staticmethod
    def _prompt(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        prompt: dict[str, Any] = {"name": name}
        if spec.get("description"):
            prompt["description"] = spec["description"]
        arguments = spec.get("arguments")
        if arguments is None:
            arguments = _PLACEHOLDER.findall(str(spec.get("text", "")))
        if arguments:
            prompt["arguments"] = [{"name": a, "required": True} for a in arguments]
        return prompt

    def _get_prompt(self, request_id: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        spec = self.prompts.get(name) if isinstance(name, str) else None
        if spec is None:
            return _error(request_id, _INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = params.get("arguments") or {}
        text = _fill(str(spec.get("text", "")), arguments)
        result: dict[str, Any] = {
            "messages": [
                {"role": spec.get("role", "user"), "content": {"type": "text", "text": text}}
            ]
        }
        if spec.get("description"):
            result["description"] = spec["description"]
        return _result(request_id, result)


def _pages(given: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """The script's ``pages`` section, checked."""
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not set(given) <= {"tools", "resources", "prompts"}:
        raise ConfigurationError(
            "script 'pages' must map 'tools', 'resources' or 'prompts' to pages by cursor"
        )
    pages: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, by_cursor in given.items():
        if not isinstance(by_cursor, Mapping) or "" not in by_cursor:
            raise ConfigurationError(f"script pages[{kind!r}] needs a first page under ''")
        for cursor, page in by_cursor.items():
            if not isinstance(page, Mapping) or not isinstance(page.get("items"), list):
                raise ConfigurationError(f"script pages[{kind!r}][{cursor!r}] needs 'items'")
            if set(page) - {"items", "next"}:
                raise ConfigurationError(
                    f"script pages[{kind!r}][{cursor!r}] has unknown keys; known: items, next"
                )
        pages[str(kind)] = {str(c): dict(p) for c, p in by_cursor.items()}
    return pages


def _handler_result(name: str, handler: ToolHandler, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        value = handler(arguments)
    except (ValueError, TypeError) as exc:  # the tool refused its arguments: a failed call
        logger.info("tool %s refused its arguments: %s", name, exc)
        return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    except Exception as exc:  # the server's top level: a crashing tool is a failed call
        logger.exception("tool %s raised", name)
        return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "isError": False}
    text = json.dumps(value, ensure_ascii=False)
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if isinstance(value, dict):
        result["structuredContent"] = value
    return result


def _result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _progress(token: Any, step: int, total: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": step, "total": total},
    }
