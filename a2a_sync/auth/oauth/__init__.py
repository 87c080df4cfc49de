"""OAuth 2.1 for the MCP and A2A clients (the ``oauth`` extra: ``pip install
'a2a-sync[oauth]'``). See docs/auth.md.

::

    from a2a_sync.auth.oauth import OAuth, FileTokenStore
    with MCPConnection.http(url, auth=OAuth(store=FileTokenStore())) as conn:
        ...
"""

from __future__ import annotations

from .client import OAuth
from .handlers import (
    AuthorizationHandler,
    HeadlessHandler,
    LoopbackListener,
    NotebookHandler,
    ScriptHandler,
)
from .options import OAuthOptions
from .tokens import (
    ClientInfo,
    FileTokenStore,
    Grant,
    GrantKey,
    MemoryTokenStore,
    Token,
    TokenStore,
)

__all__ = [
    "OAuth",
    "OAuthOptions",
    "AuthorizationHandler",
    "ScriptHandler",
    "NotebookHandler",
    "HeadlessHandler",
    "LoopbackListener",
    "TokenStore",
    "MemoryTokenStore",
    "FileTokenStore",
    "Token",
    "Grant",
    "GrantKey",
    "ClientInfo",
]
