"""The A2A data model: messages, parts, tasks, events, agent cards and operation parameters.

This is the public import path; the models live in :mod:`a2a_sync.a2a.types` (the A2A
protocol package) and are re-exported here unchanged.
"""

from .a2a.types import *  # noqa: F403 - the public path re-exports the whole model
from .a2a.types import __all__ as __all__  # noqa: PLC0414 - the explicit re-export idiom
