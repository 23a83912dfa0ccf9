"""The clause-coverage matrix: which zoo fixtures kill which clause.

Every MUST clause of SPEC.md must be killed by at least one fixture, and every
fixture may only name clauses that exist. The matrix is built from each zoo
module's ``KILLS`` (whoever wrote it); nothing is run and nothing is written.
"""

from __future__ import annotations

from sessionstate.conformance.clauses import PREFIXES, all_clauses
from sessionstate.fixtures.zoo import ZOO, ZooEntry


def coverage(entries: list[ZooEntry]) -> dict[str, list[str]]:
    """Clause id -> names of the fixtures that must fail it, for every known clause."""
    matrix: dict[str, list[str]] = {cid: [] for cid in all_clauses()}
    for entry in entries:
        for cid in entry.kills:
            if cid in matrix:
                matrix[cid].append(entry.name)
    return matrix


def test_every_must_clause_is_killed_by_a_fixture() -> None:
    matrix = coverage(ZOO)
    must = [cid for cid, clause in all_clauses().items() if clause.level == "MUST"]
    assert [cid for cid in must if not matrix[cid]] == []


def test_fixtures_declare_only_known_clauses() -> None:
    known = all_clauses()
    unknown = {e.name: [c for c in e.kills if c not in known] for e in ZOO}
    assert {name: ids for name, ids in unknown.items() if ids} == {}


def test_fixture_names_start_with_a_group_they_kill() -> None:
    """``lru_hit_no_refresh`` kills an LRU clause: the name says where to look."""
    misnamed = [e.name for e in ZOO if e.name.split("_")[0].upper() not in e.groups]
    assert misnamed == []


def test_every_group_has_a_fixture() -> None:
    groups_in_spec = {clause.group for clause in all_clauses().values()}
    covered = {group for entry in ZOO for group in entry.groups}
    assert sorted(g for g in PREFIXES if g in groups_in_spec and g not in covered) == []
