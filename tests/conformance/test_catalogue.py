"""The catalogue and the tests agree: every requirement has a test or a documented status,
and every test names only catalogued requirements (the names are the traceability)."""

from __future__ import annotations

from collections import Counter

import pytest

from .catalogue import ID_PATTERN, LEVELS, ROLES, SPECS, STATUSES, Requirement, claims, load


@pytest.fixture(scope="module")
def catalogue() -> list[Requirement]:
    return load()


def test_ids_are_unique_and_well_formed(catalogue: list[Requirement]) -> None:
    counts = Counter(entry.id for entry in catalogue)
    assert not [i for i, n in counts.items() if n > 1]
    for entry in catalogue:
        match = ID_PATTERN.match(entry.id)
        assert match, entry.id
        assert match["spec"] == entry.spec in SPECS, entry.id
        assert match["section"] in entry.section, entry.id
        assert entry.level in LEVELS, entry.id
        assert entry.role in ROLES, entry.id
        assert entry.status in STATUSES, entry.id
        assert entry.summary.strip(), entry.id


def test_every_requirement_has_a_test_or_a_documented_status(
    catalogue: list[Requirement],
) -> None:
    by_test = {claim.test: claim for claim in claims()}
    for entry in catalogue:
        if entry.status in ("tested", "failing"):
            assert entry.test, f"{entry.id}: status {entry.status} needs a test"
        if entry.status in ("failing", "not-supported", "spec-conflict"):
            assert entry.reason.strip(), f"{entry.id}: status {entry.status} needs a reason"
        if entry.test:
            claim = by_test.get(entry.test)
            assert claim is not None, f"{entry.id}: no test {entry.test} carries a requirement mark"
            assert entry.id in claim.ids, f"{entry.test} does not carry {entry.id}"
            if entry.status == "failing":
                assert claim.known_failure, f"{entry.test} fails today: mark it known_failure"


def test_every_test_names_catalogued_requirements(catalogue: list[Requirement]) -> None:
    """A test's requirement ids exist, and the catalogue names that very test for them;
    a known_failure test covers a requirement whose status is ``failing``."""
    entries = {entry.id: entry for entry in catalogue}
    found = claims()
    assert found
    for claim in found:
        for requirement_id in claim.ids:
            entry = entries.get(requirement_id)
            assert entry is not None, f"{claim.test} names {requirement_id}, not in the catalogue"
            assert entry.test == claim.test, f"{requirement_id}: catalogue names {entry.test!r}"
        if claim.known_failure:
            assert any(entries[i].status == "failing" for i in claim.ids), claim.test
