"""``sessionstate explain CLAUSE``: the clause, its rationale, and the tests that check it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.subject import _did_you_mean

__all__ = ["clause_tests", "explain"]


class _Collector:
    """A pytest plugin object that records each collected test's clauses."""

    def __init__(self) -> None:
        self.by_clause: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            for mark in item.iter_markers("clause"):
                for cid in mark.args:
                    self.by_clause.setdefault(cid, []).append(item.nodeid)


def clause_tests() -> dict[str, list[str]]:
    """Clause id -> node ids of the suite's tests tagged with it (collection only)."""
    collector = _Collector()
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--pyargs",
            "sessionstate.conformance.suite"]  # fmt: skip
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[collector])
    return collector.by_clause


def explain(clause_id: str) -> int:
    clauses = all_clauses()
    if clause_id not in clauses:
        hint = _did_you_mean(clause_id, list(clauses))
        print(f"sessionstate explain: error: unknown clause {clause_id!r}{hint}", file=sys.stderr)
        return 2
    clause = clauses[clause_id]
    print(f"{clause.id} · {clause.level} · {clause.title}")
    if clause.requires:
        print(f"Requires: {', '.join(sorted(clause.requires))}")
    print()
    print(clause.text)
    print()
    tests = clause_tests().get(clause_id, [])
    print(f"Checked by {len(tests)} test(s):")
    for nodeid in tests:
        print(f"  {nodeid}")
    return 0
