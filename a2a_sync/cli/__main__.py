"""``python -m a2a_sync.cli``: the ``a2a-sync`` command."""

import sys

from .commands import main

sys.exit(main())
