"""Per-clause outcomes from per-test outcomes, and the verdict.

A failing test fails the clause its ``ClauseFailure`` names; a test that
fails any other way (the subject raised, a hang) errors every clause it is
tagged with. A clause passes when a test of it passed and none failed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .clauses import all_clauses
from .expectations import Expectation

__all__ = ["ClauseResult", "TestRecord", "aggregate", "report", "verdict"]

OUTCOMES = ("passed", "failed", "error", "xfailed", "skipped")


@dataclass
class TestRecord:
    """One test's result as the plugin saw it."""

    nodeid: str
    clauses: list[str]
    outcome: str  # passed | failed | skipped | xfailed
    failed_clauses: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0


@dataclass
class ClauseResult:
    level: str
    outcome: str
    tests: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def aggregate(
    records: Iterable[TestRecord],
    expectations: Iterable[Expectation] = (),
    selected: Iterable[str] | None = None,
) -> dict[str, ClauseResult]:
    """Clause id -> result, for every clause in spec order (or only ``selected``)."""
    clauses = all_clauses()
    wanted = list(clauses) if selected is None else [c for c in clauses if c in set(selected)]
    by_clause = {cid: ClauseResult(clauses[cid].level, "skipped") for cid in wanted}
    expected = {e.target: e for e in expectations if e.is_clause}
    seen_outcomes: dict[str, set[str]] = {cid: set() for cid in wanted}
    for record in records:
        for cid in record.failed_clauses:
            # A clause outside the selection that a selected test saw broken
            # is still broken: report it rather than let the verdict pass.
            if cid not in by_clause and cid in clauses:
                by_clause[cid] = ClauseResult(clauses[cid].level, "skipped")
                seen_outcomes[cid] = {"failed"}
                by_clause[cid].tests.append(record.nodeid)
                by_clause[cid].message = record.message
        for cid in record.clauses:
            if cid not in by_clause:
                continue
            result = by_clause[cid]
            result.tests.append(record.nodeid)
            result.seconds += record.seconds
            outcome = _clause_outcome(record, cid)
            seen_outcomes[cid].add(outcome)
            if outcome in ("failed", "error") and not result.message:
                result.message = record.message
    for cid, result in by_clause.items():
        outcomes = seen_outcomes[cid]
        result.outcome = next(
            (o for o in ("failed", "error", "passed", "xfailed") if o in outcomes), "skipped"
        )
        entry = expected.get(cid)
        if entry and result.outcome in ("failed", "error"):
            result.outcome = "xfailed" if entry.kind == "xfail" else "skipped"
            result.message = f"expected: {entry.reason}"
        elif entry and entry.kind == "skip":
            result.outcome, result.message = "skipped", f"expected: {entry.reason}"
        if result.outcome == "skipped" and "unchecked" in outcomes and not result.message:
            result.message = "not checked to the end: its tests stopped at another clause's failure"
        if not result.tests and not result.message:
            result.message = "no test of this clause was selected"
    return by_clause


def _clause_outcome(record: TestRecord, cid: str) -> str:
    if record.outcome != "failed":
        return record.outcome
    if not record.failed_clauses:
        return "error"
    # Failed for another clause: this one was not checked to the end.
    return "failed" if cid in record.failed_clauses else "unchecked"


def verdict(results: Mapping[str, ClauseResult], strict: bool = False) -> str:
    """``conformant`` unless a MUST clause (any clause, when strict) failed or errored."""
    for result in results.values():
        if result.outcome in ("failed", "error") and (strict or result.level == "MUST"):
            return "non-conformant"
    return "conformant"


def report(
    tests: Iterable[Mapping[str, Any]],
    expectations: list[Expectation],
    selected: Iterable[str] | None,
    *,
    strict: bool,
    facts: Mapping[str, Any],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON results: ``run`` (target, suite version, profile, seed, seconds), the
    ``facts`` of what was under test (``under_test.gather``), per-clause results and the
    verdict, and every test record."""
    records = [TestRecord(**t) for t in tests]
    results = aggregate(records, expectations, selected)
    unmatched = [
        f"{e.target} (line {e.line})"
        for e in expectations
        if not any(_matches(e, r) for r in records)
    ]
    return {
        "subject": facts["subject"],
        "target": run["target"],
        "suite_version": run["suite_version"],
        "profile": run["profile"],
        "seed": run["seed"],
        "verdict": verdict(results, strict=strict),
        "strict": strict,
        "seconds": run["seconds"],
        "unmatched_expectations": unmatched,
        "environment": facts["environment"],
        "capabilities": facts["capabilities"],
        "clauses": {cid: result.as_json() for cid, result in results.items()},
        "tests": [asdict(record) for record in records],
    }


def _matches(entry: Expectation, record: TestRecord) -> bool:
    return entry.target in record.clauses if entry.is_clause else entry.matches_test(record.nodeid)
