"""The requirement catalogue (``requirements/<spec>.json``) and the tests that claim to cover it.

One JSON file per specification revision (``a2a-1.0.json``, ``a2a-0.3.json``,
``mcp-2025-11-25.json``, ``mcp-2026-07-28.json``), each ``{"spec", "source", "requirements"}``;
edit them by hand.

Each catalogue entry is one MUST / MUST NOT (or an honoured SHOULD) of a specification,
paraphrased, with a stable id ``<spec>-§<section>-<slug>`` (``a2a-1.0-§3.1.6-...``). Its
``status`` says how it stands:

``tested``         ``test`` names the conformance test that checks it (and passes).
``failing``        ``test`` names a test that fails against a2a_sync today; the test carries
                   the ``known_failure`` marker (deselected by default) and ``reason`` says
                   what is wrong.
``not-supported``  a2a_sync deliberately does not do this; ``reason`` says why.
``spec-conflict``  the specification contradicts itself here; ``reason`` names both
                   readings and the one a2a_sync follows (``test`` may check that reading).

A test claims a requirement with ``@pytest.mark.requirement("<id>")`` (several marks for
several ids). :func:`claims` finds the claims by importing the test modules, so it does not
depend on which tests a run selected.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "CATALOGUE",
    "LEVELS",
    "ROLES",
    "STATUSES",
    "Claim",
    "Requirement",
    "claims",
    "load",
]

CATALOGUE = Path(__file__).with_name("requirements")
HERE = Path(__file__).parent
PACKAGE = "tests.conformance"
LEVELS = frozenset({"MUST", "MUST NOT", "SHOULD", "SHOULD NOT"})
ROLES = frozenset({"client", "server"})
STATUSES = frozenset({"tested", "failing", "not-supported", "spec-conflict"})
SPECS = frozenset({"a2a-1.0", "a2a-0.3", "mcp-2025-11-25", "mcp-2026-07-28"})
#: ``<spec>-§<section>-<slug>``: the section is the one in the entry's ``section`` field.
ID_PATTERN = re.compile(
    r"^(?P<spec>[a-z0-9.-]+?)-§(?P<section>[0-9A-Za-z./]+)-(?P<slug>[a-z0-9-]+)$"
)


@attrs.frozen
class Requirement:
    """One catalogued requirement (see the module docstring for the fields)."""

    id: str
    spec: str
    section: str
    level: str
    role: str
    summary: str
    status: str
    test: str = ""
    reason: str = ""


@attrs.frozen
class Claim:
    """A conformance test function and the requirement ids its marks name."""

    test: str  # ``test_module.py::test_name``
    ids: tuple[str, ...]
    known_failure: bool


def load(folder: Path = CATALOGUE) -> list[Requirement]:
    """Every entry of the catalogue: files in name order, entries in file order."""
    found = []
    for path in sorted(folder.glob("*.json")):
        raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["requirements"]
        found.extend(Requirement(**entry) for entry in raw)
    return found


def _modules() -> Iterator[tuple[str, Any]]:
    for file in sorted(HERE.glob("test_*.py")):
        yield file.name, importlib.import_module(f"{PACKAGE}.{file.stem}")


def claims() -> list[Claim]:
    """Every conformance test function that carries a ``requirement`` mark."""
    found = []
    for filename, module in _modules():
        for name, function in sorted(vars(module).items()):
            if not name.startswith("test_") or not callable(function):
                continue
            marks = getattr(function, "pytestmark", [])
            ids = tuple(m.args[0] for m in marks if m.name == "requirement")
            if ids:
                known = any(m.name == "known_failure" for m in marks)
                found.append(Claim(f"{filename}::{name}", ids, known))
    return found
