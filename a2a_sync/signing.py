"""Agent-card signatures: RFC 8785 canonical JSON and detached JWS (public import path).

The implementation lives in :mod:`a2a_sync.a2a.signing` and is re-exported here unchanged.
"""

from .a2a.signing import *  # noqa: F403 - the public path re-exports the whole module
from .a2a.signing import __all__ as __all__  # noqa: PLC0414 - the explicit re-export idiom
