"""The HTTP+JSON (REST) route table: each operation's HTTP method and path per revision.

A2A 1.0 takes the routes from the ``google.api.http`` annotations of ``a2a.proto``
(``POST /message:send``, ``GET /tasks/{id}`` ...), each also under ``/{tenant}``. A2A 0.3
uses the same shapes under ``/v1`` (its proto), with ``GET /v1/card`` for the extended
card and no list of tasks. Client and server both read this table: the client fills a
route's path parameters from the operation's params (:func:`build`), the server matches
an incoming path to an operation (:func:`match`).

Path parameters are single, non-empty segments; they are percent-encoded when built and
a decoded segment containing ``/`` (an encoded slash) never matches, so an id can not
step into another route.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, unquote

import attrs

from .methods import Operation, Revision

__all__ = [
    "ALLOWED_METHODS",
    "ROUTES",
    "Route",
    "RouteMatch",
    "build",
    "match",
    "route_for",
]


@attrs.frozen
class Route:
    """One REST route: ``method`` on ``template`` carries ``operation`` in ``revision``.

    ``params`` maps each ``{placeholder}`` of the template to the member of the
    operation's JSON params it carries; ``body`` says whether the remaining params go in
    a JSON body (else in the query string).
    """

    operation: Operation
    revision: Revision
    method: str
    template: str
    params: Mapping[str, str]
    body: bool

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.template)


@functools.cache
def _compiled(template: str) -> re.Pattern[str]:
    # A placeholder is one segment without ":" (the verb separator; an id's own ":" is
    # sent encoded), so "/tasks/x:subscribe" is never GetTask of "x:subscribe".
    regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/:]+)", re.escape(template))
    return re.compile(regex + r"\Z")


def _routes(prefix: str, revision: Revision) -> list[Route]:
    task = {"id": "id"}
    configs = "/tasks/{taskId}/pushNotificationConfigs"
    push = {"taskId": "taskId"}
    push_one = {"taskId": "taskId", "configId": "id"}
    if revision == "0.3":  # 0.3 params are translated first (see rest_v03.to_wire)
        push_one = {"taskId": "taskId", "configId": "configId"}
    table = [
        (Operation.SEND_MESSAGE, "POST", "/message:send", {}, True),
        (Operation.SEND_STREAMING_MESSAGE, "POST", "/message:stream", {}, True),
        (Operation.GET_TASK, "GET", "/tasks/{id}", task, False),
        (Operation.CANCEL_TASK, "POST", "/tasks/{id}:cancel", task, True),
        # The proto says GET, the 1.0 prose (§11.3.2) POST; SDKs serve both, clients POST.
        (Operation.SUBSCRIBE_TO_TASK, "POST", "/tasks/{id}:subscribe", task, True),
        (Operation.SUBSCRIBE_TO_TASK, "GET", "/tasks/{id}:subscribe", task, False),
        (
            Operation.CREATE_PUSH_CONFIG,
            "POST",
            "/tasks/{taskId}/pushNotificationConfigs",
            push,
            True,
        ),
        (
            Operation.LIST_PUSH_CONFIGS,
            "GET",
            "/tasks/{taskId}/pushNotificationConfigs",
            push,
            False,
        ),
        (
            Operation.GET_PUSH_CONFIG,
            "GET",
            configs + "/{configId}",
            push_one,
            False,
        ),
        (
            Operation.DELETE_PUSH_CONFIG,
            "DELETE",
            configs + "/{configId}",
            push_one,
            False,
        ),
    ]
    if revision == "1.0":
        table.append((Operation.LIST_TASKS, "GET", "/tasks", {}, False))
        table.append((Operation.GET_EXTENDED_CARD, "GET", "/extendedAgentCard", {}, False))
    else:
        table.append((Operation.GET_EXTENDED_CARD, "GET", "/card", {}, False))
    return [
        Route(op, revision, method, prefix + path, params, body)
        for op, method, path, params, body in table
    ]


#: Every route, 0.3 (``/v1/...``) first so its prefix wins over a 1.0 tenant named "v1".
ROUTES: Final[tuple[Route, ...]] = (*_routes("/v1", "0.3"), *_routes("", "1.0"))

_FIRST: Final[dict[tuple[Operation, Revision], Route]] = {}
for _route in ROUTES:
    _FIRST.setdefault((_route.operation, _route.revision), _route)

#: The HTTP methods each template answers (for 405 ``Allow``).
ALLOWED_METHODS: Final[dict[str, tuple[str, ...]]] = {}
for _route in ROUTES:
    ALLOWED_METHODS[_route.template] = (*ALLOWED_METHODS.get(_route.template, ()), _route.method)


def route_for(operation: Operation, revision: Revision) -> Route | None:
    """The route a client uses for ``operation`` in ``revision`` (``None``: none)."""
    return _FIRST.get((operation, revision))


def build(route: Route, params: Mapping[str, Any], *, tenant: str | None = None) -> str:
    """The path of ``route`` with its placeholders filled from ``params`` (encoded).

    Raises:
        ValueError: A path parameter is missing, empty, ``.``/``..`` or holds a ``/``
            (no server can route it: encoded slashes are refused, see :func:`match`).
    """
    path = route.template
    for placeholder, member in route.params.items():
        value = params.get(member)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{member} is required")
        if "/" in value or value in (".", ".."):
            raise ValueError(f"{member} {value!r} can not be a REST path segment")
        path = path.replace("{" + placeholder + "}", quote(value, safe=""))
    if tenant and route.revision == "1.0":
        path = "/" + quote(tenant, safe="") + path
    return path


@attrs.frozen
class RouteMatch:
    """An incoming path matched to a route (``route`` ``None``: path known, method not)."""

    route: Route | None
    #: Path parameters, decoded, keyed by the params member they carry.
    values: dict[str, str]
    tenant: str | None
    #: The methods the path answers (for 405).
    allowed: tuple[str, ...]


def match(method: str, path: str) -> RouteMatch | None:
    """Find the route of ``method path`` (``path`` still percent-encoded, as in
    ``RAW_URI``/``PATH_INFO``); ``None`` when no route has that path."""
    found = _match(method, path, None)
    if found is not None:
        return found
    head, sep, rest = path[1:].partition("/")
    if not sep or not head:
        return None
    tenant = unquote(head)
    if "/" in tenant or tenant in ("v1", ""):
        return None
    found = _match(method, "/" + rest, tenant)
    if found is not None and found.route is not None and found.route.revision != "1.0":
        return None
    return found


def _match(method: str, path: str, tenant: str | None) -> RouteMatch | None:
    allowed: tuple[str, ...] = ()
    for route in ROUTES:
        if tenant is not None and route.revision != "1.0":
            continue
        found = route.pattern.match(path)
        if found is None:
            continue
        values = {}
        for placeholder, raw in found.groupdict().items():
            value = unquote(raw, errors="strict")
            if "/" in value or value in (".", ".."):
                return None
            values[route.params[placeholder]] = value
        if route.method == method:
            return RouteMatch(route, values, tenant, ())
        allowed = ALLOWED_METHODS[route.template]
    if allowed:
        return RouteMatch(None, {}, tenant, allowed)
    return None
