"""The server package's public names and its walls (no client import, no waitress import)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from a2a_sync import server

PACKAGE = Path(server.__file__).parent


def test_public_names_resolve() -> None:
    for name in server.__all__:
        assert getattr(server, name) is not None


def test_the_server_never_imports_the_client() -> None:
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert not module.startswith("a2a_sync.client"), path
                assert not (node.level >= 2 and module.split(".")[0] == "client"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("a2a_sync.client") for a in node.names), path


def test_importing_the_server_does_not_import_waitress() -> None:
    code = "import sys, a2a_sync.server; print('waitress' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
