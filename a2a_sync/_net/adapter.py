"""The ``HTTPAdapter`` a2a_sync mounts on its session: per-call retries, tracked
connections, and the per-request work requests repeats for every call done once per
origin.

It plugs into requests through ``HTTPAdapter``'s documented subclassing hooks
(``max_retries``, ``init_poolmanager``, ``proxy_manager_for``,
``get_connection_with_tls_context``, ``request_url``, ``build_response``). ``send`` itself
is requests' own, so anything that patches ``HTTPAdapter.send`` (the ``responses`` test
library) still sees every call.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping
from typing import Any, Final

import requests
import requests.adapters
import requests.cookies
import requests.structures
import requests.utils
import urllib3.connectionpool
from urllib3.util.retry import Retry

from .pool import TRACKED_POOLS, local

__all__ = ["Adapter"]

#: Connection pools remembered per (origin, TLS settings, proxies) before the memo is
#: emptied; the pool manager itself keeps at most ``pool_connections`` pools.
_MEMO_LIMIT: Final = 256

_PoolKey = tuple[str, Any, Any, tuple[tuple[str, str], ...]]


def _origin(url: str) -> str:
    """``scheme://authority`` of a prepared URL (what selects its pool)."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return url
    path_start = url.find("/", scheme_end + 3)
    return url if path_start < 0 else url[:path_start]


class Adapter(requests.adapters.HTTPAdapter):
    """``HTTPAdapter`` whose ``max_retries`` is the calling thread's per-call ``Retry``.

    requests reads ``self.max_retries`` inside ``send``; making it thread-local lets each
    call carry its own decisions (idempotent or not, its deadline) through one shared
    adapter and pool.

    Per request, requests' adapter parses the URL five times, selects a proxy twice and
    rebuilds the pool key, although for one origin, TLS setting and proxy map the pool is
    always the same; the pool found is remembered (and looked up again once the pool
    manager closed it: evicted, or the adapter closed). Thread-safe: the memo is a dict
    written whole-entry under ``_memo_lock``.
    """

    @property
    def max_retries(self) -> Retry:
        retry: Retry | None = getattr(local, "retry", None)
        return retry if retry is not None else self._default_retries

    @max_retries.setter
    def max_retries(self, value: Retry) -> None:
        self._default_retries = value

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        # Also the place every construction and unpickling passes through.
        self._pools: dict[_PoolKey, urllib3.connectionpool.ConnectionPool] = {}
        self._paths: dict[str, str] = {}  # prepared URL -> its path and query
        self._memo_lock = threading.Lock()
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = TRACKED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = TRACKED_POOLS
        return manager

    def get_connection_with_tls_context(
        self,
        request: requests.PreparedRequest,
        verify: bool | str | None,
        proxies: Mapping[str, str] | None = None,
        cert: str | tuple[str, str] | None = None,
    ) -> urllib3.connectionpool.ConnectionPool:
        key: _PoolKey = (
            _origin(str(request.url)),
            verify,
            cert,
            tuple(sorted(proxies.items())) if proxies else (),
        )
        pool = self._pools.get(key)
        if pool is None or getattr(pool, "pool", None) is None:  # closed: no queue left
            pool = super().get_connection_with_tls_context(request, verify, proxies, cert)
            with self._memo_lock:
                if len(self._pools) >= _MEMO_LIMIT:
                    self._pools.clear()
                self._pools[key] = pool
        return pool

    def request_url(
        self, request: requests.PreparedRequest, proxies: Mapping[str, str] | None
    ) -> str:
        if proxies:
            return super().request_url(request, proxies)
        # What requests sends when no proxy applies: the path and query, from a parse of
        # the URL made once per URL.
        url = str(request.url)
        path = self._paths.get(url)
        if path is None:
            path = request.path_url
            with self._memo_lock:
                if len(self._paths) >= _MEMO_LIMIT:
                    self._paths.clear()
                self._paths[url] = path
        return path

    def build_response(self, req: requests.PreparedRequest, resp: Any) -> requests.Response:
        if "set-cookie" in resp.headers:
            return super().build_response(req, resp)
        # requests' own, less the cookie extraction that finds nothing without Set-Cookie
        # (it builds a mock request and response and parses the URL again for that).
        return _Response(self, req, resp)

    def close(self) -> None:
        with self._memo_lock:
            self._pools.clear()
        super().close()


_NO_TIME: Final = datetime.timedelta(0)
_UNSET: Final[Any] = object()


class _Response(requests.Response):
    """The ``requests.Response`` :meth:`Adapter.build_response` returns for an answer
    without ``Set-Cookie``: requests' fields, less three objects requests makes for every
    response and a2a_sync never reads on its paths.

    * ``headers`` are the urllib3 response's own (case-insensitive, a repeated header's
      values joined with ``", "``: what requests' copy into a ``CaseInsensitiveDict``
      holds), not a copy;
    * the (empty) cookie jar and the ``encoding`` guessed from ``Content-Type`` are made
      when first read.
    """

    def __init__(self, adapter: Adapter, req: requests.PreparedRequest, resp: Any) -> None:
        # Not requests' __init__: every attribute it sets is set here.
        self._content = False  # type: ignore[assignment]  # requests' "not read yet"
        self._content_consumed = False
        self._next = None
        self.status_code = resp.status
        self.headers = resp.headers
        self.raw = resp
        self.reason = resp.reason
        self.url = req.url.decode("utf-8") if isinstance(req.url, bytes) else str(req.url)
        self.history = []
        self.elapsed = _NO_TIME
        self.request = req
        self.connection = adapter
        self._jar: requests.cookies.RequestsCookieJar | None = None
        self._encoding: str | None = _UNSET

    @property
    def cookies(self) -> requests.cookies.RequestsCookieJar:
        if self._jar is None:
            self._jar = requests.cookies.RequestsCookieJar()
        return self._jar

    @cookies.setter
    def cookies(self, jar: requests.cookies.RequestsCookieJar) -> None:
        self._jar = jar

    @property
    def encoding(self) -> str | None:
        if self._encoding is _UNSET:
            self._encoding = requests.utils.get_encoding_from_headers(self.headers)
        return self._encoding

    @encoding.setter
    def encoding(self, value: str | None) -> None:
        self._encoding = value
