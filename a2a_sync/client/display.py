"""Progress display for streams in a terminal or a notebook (tqdm, optional).

Used by the ``a2a-sync`` command and the demo; tqdm comes with the ``cli`` extra and is
imported only when a bar is shown.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["progress_bar"]


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython imported and running a ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def progress_bar(
    total: int | None, description: str, *, unit: str = " events", counter: bool = True
) -> Any:
    """A tqdm progress bar on stderr, or ``None`` where it would not be seen properly.

    Shown when tqdm is installed (the ``cli`` extra) and stderr is a terminal or the code
    runs in a notebook (a widget if ipywidgets is installed, else text); never in pipes,
    logs or CI, where plain lines are printed instead. ``counter=False`` shows only the
    description and the time elapsed (for waits that count nothing).
    """
    notebook = _in_notebook()
    if not notebook and not sys.stderr.isatty():
        return None
    try:
        if notebook and importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.notebook import tqdm  # noqa: PLC0415 - optional, slow to import
        else:
            from tqdm.std import tqdm  # noqa: PLC0415
    except ImportError:
        return None
    options: dict[str, Any] = {} if counter else {"bar_format": "{desc} {elapsed}"}
    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, leave=False, **options)
