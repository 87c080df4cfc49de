"""The ``HTTPAdapter`` a2a_sync mounts on its session: per-call retries, tracked
connections, and the per-request work requests repeats for every call done once per
origin.

It plugs into requests through ``HTTPAdapter``'s documented subclassing hooks
(``max_retries``, ``init_poolmanager``, ``proxy_manager_for``,
``get_connection_with_tls_context``, ``request_url``, ``build_response``, ``send``).
``send`` is requests' own step for step, less its no-op steps, and hands urllib3 the
request headers as a plain dict; while ``HTTPAdapter.send`` itself is replaced (the
``responses`` test library patches it) the replacement is called, so it sees every call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import requests
import requests.adapters
import requests.exceptions as rex
import urllib3.connectionpool
import urllib3.exceptions as uex
from urllib3.util import Timeout as TimeoutSauce
from urllib3.util.retry import Retry

from .lean_response import LeanResponse
from .pool import TRACKED_POOLS, local

__all__ = ["Adapter"]

#: Connection pools remembered per (origin, TLS settings, proxies) before the memo is
#: emptied; the pool manager itself keeps at most ``pool_connections`` pools.
_MEMO_LIMIT: Final = 256

_PoolKey = tuple[str, Any, Any, tuple[tuple[str, str], ...]]

#: requests' own ``HTTPAdapter.send``: while it is in place, :meth:`Adapter.send` is used.
_REQUESTS_SEND: Final = requests.adapters.HTTPAdapter.send


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
        # (plain-HTTP URL, verify, cert) -> (pool, path): see send
        self._plain: dict[tuple[str, Any, Any], tuple[Any, str]] = {}
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
        return LeanResponse(self, req, resp)

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """requests' ``HTTPAdapter.send`` (2.32-2.34), the same steps and errors, less the
        ``add_headers`` hook (a no-op in requests, not overridden here); urllib3 gets the
        headers as a plain dict (it copies and walks them once per request; requests'
        ``CaseInsensitiveDict`` costs a Python call per header for each)."""
        if requests.adapters.HTTPAdapter.send is not _REQUESTS_SEND:
            # Replaced (the responses library mocks it): the replacement sees every call.
            return super().send(request, stream, timeout, verify, cert, proxies)
        target = str(request.url)
        plain = (
            (target, verify, cert)
            if not proxies and target.startswith("http://") and _hashable(cert)
            else None
        )
        memo = self._plain.get(plain) if plain is not None else None
        if memo is not None and getattr(memo[0], "pool", None) is not None:
            # Plain HTTP without a proxy: the three steps below give the same pool and
            # path every time for one URL and settings (the pool is re-checked: closed
            # pools are looked up again).
            conn, url = memo
        else:
            try:
                conn = self.get_connection_with_tls_context(request, verify, proxies, cert)
            except uex.LocationValueError as exc:
                raise rex.InvalidURL(exc, request=request) from exc
            self.cert_verify(conn, target, verify, cert)  # type: ignore[no-untyped-call]
            url = self.request_url(request, proxies)
            if plain is not None:
                with self._memo_lock:
                    if len(self._plain) >= _MEMO_LIMIT:
                        self._plain.clear()
                    self._plain[plain] = (conn, url)
        headers: Any = request.headers
        body = request.body
        store = getattr(headers, "_store", None)
        if type(store) is OrderedDict:
            chunked = not (body is None or "content-length" in store)
            if not conn.proxy_headers:
                # (with proxy headers urllib3 merges them in: case-insensitively only
                # into requests' mapping)
                headers = dict(store.values())
        else:
            chunked = not (body is None or "Content-Length" in headers)
        if isinstance(timeout, TimeoutSauce):
            resolved = timeout
        elif isinstance(timeout, tuple):
            try:
                connect, read = timeout
            except ValueError:
                raise ValueError(
                    f"Invalid timeout {timeout}. Pass a (connect, read) timeout tuple, "
                    f"or a single float to set both timeouts to the same value."
                ) from None
            resolved = TimeoutSauce(connect=connect, read=read)
        else:
            resolved = TimeoutSauce(connect=timeout, read=timeout)
        try:
            response = conn.urlopen(
                method=request.method,
                url=url,
                body=body,
                headers=headers,
                redirect=False,
                assert_same_host=False,
                preload_content=False,
                decode_content=False,
                retries=self.max_retries,
                timeout=resolved,
                chunked=chunked,
            )
        except (uex.ProtocolError, OSError, uex.HTTPError) as exc:
            error = _requests_error(exc, request)
            if error is exc:
                raise
            raise error from exc
        return self.build_response(request, response)

    def close(self) -> None:
        with self._memo_lock:
            self._pools.clear()
            self._plain.clear()
        super().close()


def _hashable(cert: Any) -> bool:
    """Whether a ``cert`` setting can be part of a memo key (requests takes a path or a
    (cert, key) pair; anything else is passed on unmemoized)."""
    return (
        cert is None
        or type(cert) is str
        or (type(cert) is tuple and all(type(part) is str for part in cert))
    )


def _requests_error(exc: BaseException, request: requests.PreparedRequest) -> BaseException:
    """The exception requests' ``HTTPAdapter.send`` raises for ``exc`` from ``urlopen``
    (its mapping, case for case; ``exc`` itself where requests lets it through)."""
    if isinstance(exc, (uex.ProtocolError, OSError)):
        return rex.ConnectionError(exc, request=request)
    if isinstance(exc, uex.MaxRetryError):
        reason = exc.reason
        if isinstance(reason, uex.ConnectTimeoutError) and not isinstance(
            reason, uex.NewConnectionError
        ):
            return rex.ConnectTimeout(exc, request=request)
        if isinstance(reason, uex.ResponseError):
            return rex.RetryError(exc, request=request)
        if isinstance(reason, uex.ProxyError):
            return rex.ProxyError(exc, request=request)
        if isinstance(reason, uex.SSLError):
            return rex.SSLError(exc, request=request)
        return rex.ConnectionError(exc, request=request)
    if isinstance(exc, uex.ClosedPoolError):
        return rex.ConnectionError(exc, request=request)
    if isinstance(exc, uex.ProxyError):
        return rex.ProxyError(exc)
    if isinstance(exc, uex.SSLError):
        return rex.SSLError(exc, request=request)
    if isinstance(exc, uex.ReadTimeoutError):
        return rex.ReadTimeout(exc, request=request)
    if isinstance(exc, uex.InvalidHeader):
        return rex.InvalidHeader(exc, request=request)
    return exc
