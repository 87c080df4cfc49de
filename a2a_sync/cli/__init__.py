"""The ``a2a-sync`` command."""

from .commands import main

__all__ = ["main"]
