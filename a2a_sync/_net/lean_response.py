"""The ``requests.Response`` :class:`~a2a_sync._net.adapter.Adapter` builds for an answer
without ``Set-Cookie``: requests' fields, less the objects requests makes for every
response that a2a_sync never reads on its paths.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

import requests
import requests.adapters
import requests.cookies
import requests.utils

__all__ = ["LeanResponse"]

_NO_TIME: Final = datetime.timedelta(0)
_UNSET: Final[Any] = object()


class LeanResponse(requests.Response):
    """The ``requests.Response`` :meth:`Adapter.build_response` returns for an answer
    without ``Set-Cookie``: requests' fields, less three objects requests makes for every
    response and a2a_sync never reads on its paths.

    * ``headers`` are the urllib3 response's own (case-insensitive, a repeated header's
      values joined with ``", "``: what requests' copy into a ``CaseInsensitiveDict``
      holds), not a copy;
    * the (empty) cookie jar and the ``encoding`` guessed from ``Content-Type`` are made
      when first read.
    """

    def __init__(
        self, adapter: requests.adapters.HTTPAdapter, req: requests.PreparedRequest, resp: Any
    ) -> None:
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
