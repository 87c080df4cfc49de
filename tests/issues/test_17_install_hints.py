"""Install hints work from a source checkout too (issue 17 item 1): a2a-sync is not on PyPI
yet, so ``pip install 'a2a-sync[extra]'`` alone fails for someone who cloned the repo."""

from __future__ import annotations

import subprocess
import sys

import pytest

from a2a_sync.errors import install_hint


def test_the_hint_names_the_published_package_and_the_checkout_form() -> None:
    hint = install_hint("server")
    assert "pip install 'a2a-sync[server]'" in hint
    assert "pip install -e '.[server]'" in hint


@pytest.mark.parametrize(
    ("hidden", "code"),
    [
        ("waitress", "from a2a_sync.server import A2AApplication, serve; serve(object())"),
        ("authlib", "import a2a_sync.auth.oauth.grants"),
    ],
)
def test_a_missing_extra_says_how_to_install_it_from_a_checkout(hidden: str, code: str) -> None:
    """The user's view: the error names both install commands."""
    script = f"import sys; sys.modules[{hidden!r}] = None\n{code}"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "pip install -e '." in done.stderr, done.stderr[-2000:]
