"""Authorization shared by the MCP and A2A clients.

:mod:`a2a_sync.auth.hook` is the seam the HTTP transports call (no third-party imports);
:mod:`a2a_sync.auth.oauth` is the OAuth 2.1 client behind it (needs the ``oauth`` extra:
``pip install 'a2a-sync[oauth]'``). Nothing here imports the clients, the server or MCP:
they import this package, never the reverse.
"""

from __future__ import annotations

from .hook import ChallengeAuth

__all__ = ["ChallengeAuth"]
