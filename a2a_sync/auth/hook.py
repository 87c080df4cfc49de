"""The seam between an HTTP transport and an authorization that can react to refusals.

A transport asks :meth:`ChallengeAuth.authorization` for the ``Authorization`` header of
each request and, when the server answers 401 or 403, hands the challenge to
:meth:`ChallengeAuth.challenged`, which may obtain, refresh or step up a token and tell
the transport to send the request once more. The transport bounds the retries (it passes
the attempt number); the authorization decides when to give up with a typed error.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ChallengeAuth"]


@runtime_checkable
class ChallengeAuth(Protocol):
    """An authorization that answers challenges (OAuth: :class:`a2a_sync.auth.oauth.OAuth`).

    Both methods are called from any thread; implementations serialize themselves.
    """

    def authorization(self, url: str) -> str | None:
        """The ``Authorization`` header value for a request to ``url`` (``None``: send
        the request without one, e.g. before the first challenge)."""
        ...

    def challenged(
        self, url: str, status: int, challenge: str | None, sent: str | None, attempt: int
    ) -> bool:
        """The server refused a request to ``url`` with ``status`` (401 or 403) and the
        ``WWW-Authenticate`` value ``challenge``; ``sent`` is the ``Authorization`` value
        that request carried and ``attempt`` counts refusals of this request (1, 2, ...).

        Returns:
            True to send the request again (with a new :meth:`authorization`), False to
            let the transport report the refusal.

        Raises:
            AuthorizationError: No token could be obtained, or the server keeps refusing.
        """
        ...
