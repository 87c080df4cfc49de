"""Sending one request through a ``requests.Session`` without requests' generic
per-request machinery.

``Session.prepare_request`` + ``Session.send`` cost more than everything else on a
JSON-RPC call (docs/decisions.md, "The requests hot path"): per call they copy the cookie
jar twice, merge headers, params, hooks and auth through generic ``to_key_val_list``
paths, re-parse and IDNA-check the URL, validate every header with a regular expression
and run runtime ``Protocol`` ``isinstance`` checks on the body. For the requests a2a_sync
sends (a fixed set of URLs, a ``bytes`` body, no per-call cookies, params or auth) all of
that has the same answer every time, so :class:`SessionSender` works it out once:

* the prepared form of each URL (requests' ``prepare_url``) is remembered per URL;
* each header pair is validated once (requests' ``check_header_validity``), and the
  merge of the session's and the call's headers is remembered per content of both;
* the session's own state is read on every call, so changes the user makes through
  :attr:`HTTPTransport.session` apply at once: its headers (merged as requests merges
  them: a ``None`` value removes a header), its cookie jar (a ``Cookie`` header is built
  only when the jar holds cookies; ``Set-Cookie`` answers are stored back into it) and
  its mounted adapters (``Session.get_adapter``);
* the request then goes to the mounted adapter's ``send`` directly, with the same
  arguments ``Session.send`` would pass, so the adapter stays the owner of the connection
  pools and retries, and libraries that patch ``HTTPAdapter.send`` (the ``responses``
  test library) see every call.

Whatever the fast path does not model (session-level ``auth``, ``params`` or response
hooks, credentials inside the URL) goes through ``prepare_request`` + ``send`` unchanged.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, Mapping
from http.cookiejar import CookieJar
from typing import Any, Final

import requests
import requests.cookies
import requests.structures
import requests.utils

from .lean_response import LeanResponse

__all__ = ["SessionSender"]

#: Entries kept per cache before it is emptied (URLs and header pairs a process sends
#: are few; a flood of distinct ones must not grow memory without bound).
_CACHE_LIMIT: Final = 512

_NO_HEADERS: Final[Mapping[str, str]] = {}

#: Methods for which requests sends no ``Content-Length: 0`` when there is no body.
_BODYLESS: Final = frozenset({"GET", "HEAD"})


class SessionSender:
    """Prepares and sends requests through one session (see the module docstring).

    Thread-safe: the caches are plain dicts written whole-entry (a lost race only means
    one entry is computed twice) and the session is only read.
    """

    def __init__(self, session: requests.Session) -> None:
        self._session = session
        self._urls: dict[str, tuple[str, bool]] = {}  # url -> (prepared url, has credentials)
        self._valid_headers: set[tuple[str, str]] = set()
        # (session header pairs, call header pairs) -> the merged store, copied per call
        self._merged: dict[tuple[Any, Any], OrderedDict[str, tuple[str, str]]] = {}
        self._lock = threading.Lock()  # guards clearing the caches

    def send(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        **adapter_kwargs: Any,
    ) -> requests.Response:
        """Send and return once the response headers arrived (a streamed response).

        ``adapter_kwargs`` are ``HTTPAdapter.send``'s (``timeout``, ``verify``, ``cert``,
        ``proxies``); redirects are never followed.
        """
        session = self._session
        prepared_url, has_credentials = self._prepared_url(url)
        if (
            has_credentials
            or session.auth is not None
            or session.params
            or any(session.hooks.get("response") or ())
        ):
            return self._send_generic(method, url, body, headers, adapter_kwargs)
        # PreparedRequest() without its __init__ (which builds a hooks dict through a
        # helper call): the same attributes, set once.
        request = requests.PreparedRequest.__new__(requests.PreparedRequest)
        request.method = method = method.upper()
        request.url = prepared_url
        request.headers = merged = self._merged_headers(headers)
        request.body = body or None  # as requests: an empty body is no body
        request._cookies = None  # type: ignore[attr-defined]
        request.hooks = {"response": []}
        request._body_position = None  # type: ignore[attr-defined]
        store = merged._store  # (merged["Content-Length"] = ..., inline)
        if body:
            store["content-length"] = ("Content-Length", str(len(body)))
        elif method not in _BODYLESS and "content-length" not in store:
            store["content-length"] = ("Content-Length", "0")
        jar = session.cookies
        if _has_cookies(jar):
            request.prepare_cookies(jar)
        adapter = session.get_adapter(prepared_url)
        response = adapter.send(request, stream=True, **adapter_kwargs)
        raw = response.raw
        # (the adapter's LeanResponse is made only for answers without Set-Cookie)
        if type(response) is not LeanResponse and raw is not None and "set-cookie" in raw.headers:
            requests.cookies.extract_cookies_to_jar(jar, request, raw)  # type: ignore[no-untyped-call]
        return response

    # -- internals -----------------------------------------------------------------------

    def _send_generic(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        adapter_kwargs: dict[str, Any],
    ) -> requests.Response:
        session = self._session
        prepared = session.prepare_request(
            requests.Request(method, url, data=body, headers=headers)
        )
        return session.send(prepared, stream=True, allow_redirects=False, **adapter_kwargs)

    def _prepared_url(self, url: str) -> tuple[str, bool]:
        entry = self._urls.get(url)
        if entry is None:
            probe = requests.PreparedRequest()
            probe.prepare_url(url, None)  # raises InvalidURL/MissingSchema, as requests does
            prepared = str(probe.url)
            username, password = requests.utils.get_auth_from_url(prepared)
            entry = (prepared, bool(username or password))
            with self._lock:
                if len(self._urls) >= _CACHE_LIMIT:
                    self._urls.clear()
                self._urls[url] = entry
        return entry

    def _merged_headers(self, headers: Mapping[str, str] | None) -> _Headers:
        # As Session.prepare_request: the session's headers, then the call's; a None value
        # (in either) removes the header. The merge is remembered per content of both (the
        # key: their pairs, as tuples); a change to either is a different key.
        session_headers = self._session.headers
        session_store = getattr(session_headers, "_store", None)
        if type(session_store) is OrderedDict and isinstance(
            session_headers, requests.structures.CaseInsensitiveDict
        ):
            key = (
                tuple(session_store.values()),
                tuple(headers.items()) if headers else (),
            )
            try:
                merged = self._merged.get(key)
            except TypeError:  # an unhashable value: the merge below rejects it
                merged = None
            if merged is None:
                merged = self._merge(session_store.values(), headers)
                with self._lock:
                    if len(self._merged) >= _CACHE_LIMIT:
                        self._merged.clear()
                    self._merged[key] = merged
            return _Headers.of(merged.copy())
        return _Headers.of(self._merge(session_headers.items(), headers))

    def _merge(
        self, session_pairs: Iterable[tuple[str, Any]], headers: Mapping[str, str] | None
    ) -> OrderedDict[str, tuple[str, str]]:
        store: OrderedDict[str, tuple[str, str]] = OrderedDict()
        valid = self._valid_headers
        # A None value is allowed at runtime (it removes the header), whatever the stubs say.
        call_pairs: Iterable[tuple[str, str | None]] = (headers or _NO_HEADERS).items()
        for pairs in (session_pairs, call_pairs):
            for name, value in pairs:
                if value is None:
                    store.pop(name.lower(), None)
                    continue
                if (name, value) not in valid:
                    requests.utils.check_header_validity((name, value))  # InvalidHeader
                    with self._lock:
                        if len(valid) >= _CACHE_LIMIT:
                            valid.clear()
                        valid.add((name, value))
                store[name.lower()] = (name, value)
        return store


def _has_cookies(jar: CookieJar) -> bool:
    """Whether the session's jar holds a cookie; for the standard library's ``CookieJar``
    (requests' jar is one) a look at its storage, not ``len()``, which walks every cookie
    through generators on each call."""
    store = getattr(jar, "_cookies", None)
    if isinstance(jar, CookieJar) and isinstance(store, dict):
        return bool(store)
    return bool(len(jar))


class _Headers(requests.structures.CaseInsensitiveDict[str]):
    """A request's headers: requests' ``CaseInsensitiveDict`` (what
    ``PreparedRequest.headers`` is, and what tests reading a mocked request's headers
    get), made straight from the merged pairs, with ``copy`` and ``items`` at dict speed:
    urllib3 copies a request's headers and iterates them once per request, and the
    generic ``Mapping`` versions of both cost a lookup per header.

    It relies on requests' storage (``_store``: lower-cased name -> (name, value)),
    unchanged since requests 2.0.
    """

    _store: OrderedDict[str, tuple[str, str]]

    @classmethod
    def of(cls, store: OrderedDict[str, tuple[str, str]]) -> _Headers:
        headers = cls.__new__(cls)
        headers._store = store
        return headers

    def copy(self) -> _Headers:
        return _Headers.of(self._store.copy())

    def items(self) -> ItemsView[str, str]:
        return _PairsView(self)

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._store.values()])

    def __contains__(self, key: object) -> bool:
        # (requests' adapter asks for Content-Length once per request; the generic
        # Mapping version goes through __getitem__ and a caught KeyError when absent)
        return isinstance(key, str) and key.lower() in self._store

    def update(self, *args: Any, **kwargs: str) -> None:
        # urllib3 merges its pool's proxy headers into each request's copy; without a
        # proxy there are none, and the generic update would still walk them.
        if kwargs or any(args):
            super().update(*args, **kwargs)


class _PairsView(ItemsView[str, str]):
    """``items()`` of :class:`_Headers`: its stored pairs, iterated without lookups."""

    _mapping: _Headers

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._mapping._store.values())
