"""The resilient client: stream re-establishment (L2), task recovery (L3) and
fallback (L4) over whole A2A clients."""

from .client import ResilientA2AClient
from .stream import ResilientTaskStream

__all__ = ["ResilientA2AClient", "ResilientTaskStream"]
