"""Per-clause outcomes from per-test outcomes, and the verdict.

A clause passes only when every test tagged with it ran to the end and passed.
A ``ClauseFailure`` fails the clause it names, whether or not the failing test
is tagged with it; the test's other clauses were not checked to the end
(``unchecked``, naming the clause that stopped them). A test that fails any
other way (the subject raised, a hang) errors every clause it is tagged with.
A test skipped as *not applicable* (the subject lacks a hook it needs) leaves
its clauses unchecked when their other tests ran, and skipped when none did. A clause
whose every test was skipped for a reason the subject did not declare (a hook or
capability it lacks, an expectations entry: ``applicability.declared_skip``), say no
CUDA device on this machine, is unchecked, not skipped: nothing checked it, and nothing
the subject said excused that. A test skipped as *not checked* (OBJ-9 for a spec with
no model: its contents) leaves its clauses unchecked whatever else ran.

A test an ``xfail`` entry names that passes is ``xpassed``, as is a clause with an
``xfail`` entry that passed: the expectation is stale (a warning; under ``--strict``,
exit 2 by ``exit_policy``). Either way its note quotes the entry's reason, as an
``xfailed`` one's does.

A test the process running it never returned from (``crashed``: the process died in it,
or the supervisor cut it off at its bound, see ``supervisor``) leaves its clauses
unchecked, naming what happened: that it ended is no proof the subject is wrong, and
certainly no pass.

A run that stopped before its last test (Ctrl-C, collection errors, ``-x``) or ran
one test alone (``--reproduce``) leaves every clause whose tests did not all run
unchecked, never passed; an interrupted run's verdict is ``incomplete`` whatever ran.

A run whose example database failed (``run["infrastructure"]``: ``database.Fault``s) may
have missed a stored failure it was to replay: it is never ``conformant`` (``incomplete``
instead); a clause failure it found is real, so ``non-conformant`` stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sessionstate.conformance._harness.applicability import (
    NOT_APPLICABLE,
    NOT_CHECKED,
    declared_skip,
)
from sessionstate.conformance._harness.expectations import Expectation, xpass_note
from sessionstate.conformance._harness.expectations import unmatched as expectations_unmatched
from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance.clauses import all_clauses

__all__ = ["ClauseResult", "TestRecord", "aggregate", "mark_unfinished", "results_json", "verdict"]


@dataclass
class TestRecord:
    """One test's result as the plugin saw it."""

    __test__ = False  # a record, not a test class for pytest to collect

    nodeid: str
    clauses: list[str]
    #: passed | failed | skipped | xfailed | xpassed (an expected failure that passed) |
    #: crashed (died or cut off)
    outcome: str
    failed_clauses: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    #: ``HYPOTHESIS_VERSION:BLOB`` of the failing case (``sessionstate check --reproduce``).
    reproduce: str = ""


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
    """Clause id -> result, for every clause in spec order (or only ``selected``).

    A clause outside the selection that a selected test saw broken is reported
    too: a failure is never dropped for not being asked about.
    """
    clauses = all_clauses()
    wanted = set(clauses) if selected is None else set(selected)
    seen: dict[str, list[tuple[str, TestRecord]]] = {cid: [] for cid in clauses}
    for record in records:
        for cid in record.clauses:
            if cid in seen:
                seen[cid].append((_clause_outcome(record, cid), record))
        for cid in record.failed_clauses:
            if cid in seen and cid not in record.clauses:
                seen[cid].append(("failed", record))
    expected = {e.target: e for e in expectations if e.is_clause}
    by_clause: dict[str, ClauseResult] = {}
    for cid, outcomes in seen.items():
        broken = any(o in ("failed", "error") for o, _ in outcomes)
        if cid not in wanted and not broken:
            continue
        by_clause[cid] = _clause_result(clauses[cid].level, outcomes, expected.get(cid))
    return by_clause


def _clause_outcome(record: TestRecord, cid: str) -> str:
    """What ``record`` says about ``cid``, one of its tagged clauses."""
    if record.outcome in ("failed", "xfailed") and record.failed_clauses:
        if cid in record.failed_clauses:
            return record.outcome
        return "unchecked"  # it stopped at another clause's failure
    if record.outcome == "failed":
        return "error"
    if record.outcome == "crashed":
        return "crashed"
    if record.outcome == "skipped" and NOT_CHECKED in record.message:
        return "not-checked"  # a focused test that never got past another clause
    if record.outcome == "skipped" and NOT_APPLICABLE in record.message:
        return "not-applicable"
    if record.outcome == "skipped" and not declared_skip(record.message):
        return "skipped-undeclared"  # this machine, or the spec, left it unchecked
    return record.outcome


def _clause_result(
    level: str, outcomes: list[tuple[str, TestRecord]], entry: Expectation | None
) -> ClauseResult:
    result = ClauseResult(level, "skipped")
    for _, record in outcomes:
        result.tests.append(record.nodeid)
        result.seconds += record.seconds
    kinds = {outcome for outcome, _ in outcomes}
    ran = kinds - {"skipped", "not-applicable", "skipped-undeclared"}

    def first(*wanted: str) -> TestRecord:
        return next(record for outcome, record in outcomes if outcome in wanted)

    if kinds & {"failed", "error"}:
        result.outcome = "failed" if "failed" in kinds else "error"
        result.message = first(result.outcome).message
    elif "crashed" in kinds:
        record = first("crashed")
        result.outcome = "unchecked"
        result.message = f"not checked to the end: {short_id(record.nodeid)}: {record.message}"
    elif not ran and "skipped-undeclared" in kinds:
        record = first("skipped-undeclared")
        result.outcome = "unchecked"
        reason = record.message.removeprefix("Skipped: ")
        result.message = f"not checked: every test of it was skipped, e.g. {reason}"
    elif not ran:
        skipped = [record.message.removeprefix("Skipped: ") for _, record in outcomes]
        result.message = skipped[0] if skipped else "no test of this clause was selected"
    elif "unchecked" in kinds:
        record = first("unchecked")
        result.outcome = "unchecked"
        result.message = (
            f"not checked to the end: {short_id(record.nodeid)} stopped at "
            f"{', '.join(record.failed_clauses)}'s failure"
        )
    elif kinds & {"not-checked", "not-applicable"}:
        record = first("not-checked", "not-applicable")
        result.outcome = "unchecked"
        reason = record.message.removeprefix("Skipped: ")
        result.message = f"not checked to the end: {short_id(record.nodeid)}: {reason}"
    elif "xfailed" in kinds:
        result.outcome, result.message = "xfailed", first("xfailed").message
    elif "xpassed" in kinds:
        result.outcome, result.message = "xpassed", first("xpassed").message
    else:
        result.outcome = "passed"
    if entry and result.outcome in ("failed", "error"):
        result.outcome = "xfailed" if entry.kind == "xfail" else "skipped"
        result.message = f"expected: {entry.reason}"
    elif entry and entry.kind == "skip":
        result.outcome, result.message = "skipped", f"expected: {entry.reason}"
    elif entry and result.outcome == "passed":  # an xfail entry the clause no longer needs
        result.outcome, result.message = "xpassed", xpass_note(entry.reason)
    return result


def mark_unfinished(
    results: Mapping[str, ClauseResult], clauses: Iterable[str] | None, why: str
) -> None:
    """Clauses (``None``: every one) whose tests did not all run: one that would have
    passed, xfailed or been skipped is ``unchecked`` instead. A failure stays a failure,
    and a clause skipped by an expectations entry stays skipped."""
    chosen = None if clauses is None else set(clauses)
    for cid, result in results.items():
        if chosen is not None and cid not in chosen:
            continue
        if result.outcome in ("failed", "error", "unchecked"):
            continue
        if result.outcome == "skipped" and result.message.startswith("expected: "):
            continue
        result.outcome = "unchecked"
        result.message = f"not checked to the end: {why}"


def verdict(results: Mapping[str, ClauseResult], strict: bool = False) -> str:
    """``non-conformant`` if a MUST clause (any clause, when strict) failed or errored;
    else ``incomplete`` if one was not checked to the end; else ``conformant``."""
    counted = [r for r in results.values() if strict or r.level == "MUST"]
    if any(r.outcome in ("failed", "error") for r in counted):
        return "non-conformant"
    if any(r.outcome == "unchecked" for r in counted):
        return "incomplete"
    return "conformant"


def results_json(
    tests: Iterable[Mapping[str, Any]],
    expectations: list[Expectation],
    selected: Iterable[str] | None,
    *,
    strict: bool,
    facts: Mapping[str, Any],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON results: ``run`` (target, suite version, profile, seed, seconds, date), the
    ``facts`` of what was under test (``under_test.gather``), per-clause results and the
    verdict, and every test record.

    ``run`` may also give ``test_timeout``, the wall-clock bound of one test under
    ``sessionstate check`` (``None``: unbounded, or not run by it), ``run_timeout``, the
    bound of the whole run (``bounds.run_bound``), and say how the run ended (``plugin._how_it_ended``): ``stopped`` (why it
    ended before its last test, or ``None``), ``interrupted`` (stopped other than at a
    failure, as ``-x`` asks: the verdict is then ``incomplete``), ``tests_collected``,
    and ``unfinished``: the clauses whose tests did not all run (``None``: not known, so
    every clause), with ``unfinished_why`` for their notes; and ``infrastructure``: how
    the example database failed (``database.Fault.as_json``), copied to the results.
    """
    # Every report names a test by its suite-rooted id (``test_acct.py::...``), however
    # pytest rooted it: the route, the flags and where the package is installed change
    # pytest's node ids, and reports from two machines must line up.
    records = [TestRecord(**{**t, "nodeid": short_id(t["nodeid"])}) for t in tests]
    results = aggregate(records, expectations, selected)
    stopped = run.get("stopped")
    unfinished = run.get("unfinished", [])
    reproduce = run.get("reproduce")
    if unfinished is None or unfinished:
        mark_unfinished(results, unfinished, run.get("unfinished_why") or "the run stopped")
    interrupted = bool(run.get("interrupted"))
    infrastructure = list(run.get("infrastructure") or [])
    judged = verdict(results, strict=strict)
    if interrupted or (infrastructure and judged == "conformant"):
        judged = "incomplete"
    unmatched = [
        f"{e.target} (line {e.line})"
        for e in expectations_unmatched(expectations, ((r.nodeid, r.clauses) for r in records))
    ]
    return {
        "subject": facts["subject"],
        "target": run["target"],
        "suite_version": run["suite_version"],
        "profile": run["profile"],
        "seed": run["seed"],
        # Whether the search was randomized: a seed given or drawn each run (deep, fuzz).
        "randomized": bool(run.get("randomized")),
        # What the run replayed and expected: the example database (its password redacted,
        # the profile's own for deep) and the expectations file, each None when it had none.
        "database": run.get("database"),
        "expectations": run.get("expectations"),
        "verdict": judged,
        "interrupted": interrupted,
        "infrastructure": infrastructure,
        "stopped": stopped,
        "tests_collected": run.get("tests_collected"),
        "strict": strict,
        # The test a ``--reproduce`` run ran alone (its case failing again is exit 1).
        "reproduce": reproduce,
        "seconds": run["seconds"],
        "test_timeout": run.get("test_timeout"),
        "run_timeout": run.get("run_timeout"),
        "date": run.get("date"),
        "unmatched_expectations": unmatched,
        "environment": facts["environment"],
        "capabilities": facts["capabilities"],
        "hooks": facts.get("hooks"),
        "clauses": {cid: result.as_json() for cid, result in results.items()},
        "tests": [asdict(record) for record in records],
    }
