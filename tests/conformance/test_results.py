"""Per-clause outcomes: a clause passes only when every test of it ran to the end."""

from __future__ import annotations

from sessionstate.conformance.expectations import Expectation
from sessionstate.conformance.results import ClauseResult, TestRecord, aggregate, verdict


def _passed(nodeid: str, *clauses: str) -> TestRecord:
    return TestRecord(nodeid, list(clauses), "passed")


def _failed(nodeid: str, clauses: list[str], failed: list[str], message: str) -> TestRecord:
    return TestRecord(nodeid, clauses, "failed", failed, message)


def test_a_clause_whose_test_stopped_at_another_clause_is_unchecked() -> None:
    # The DROP machine is tagged with LRU-5 and DROP-2; it stopped at DROP-2.
    records = [
        _passed("suite/test_lru.py::test_eviction", "LRU-5"),
        _failed("suite/test_drop.py::test_machine", ["DROP-2", "LRU-5"], ["DROP-2"], "x [DROP-2]"),
    ]
    results = aggregate(records, selected=["LRU-5", "DROP-2"])
    assert results["DROP-2"].outcome == "failed"
    assert results["LRU-5"].outcome == "unchecked"
    assert "test_drop.py::test_machine stopped at DROP-2" in results["LRU-5"].message


def test_every_test_passing_passes_the_clause() -> None:
    records = [_passed("a::one", "LRU-1"), _passed("a::two", "LRU-1", "LRU-2")]
    results = aggregate(records, selected=["LRU-1", "LRU-2"])
    assert (results["LRU-1"].outcome, results["LRU-2"].outcome) == ("passed", "passed")


def test_a_failure_for_an_untagged_clause_fails_it_in_a_full_run_too() -> None:
    # LRU-5 fails inside a DROP-4 test that is not tagged with LRU-5.
    records = [
        _passed("suite/test_lru.py::test_eviction", "LRU-5"),
        _failed("suite/test_drop.py::test_evicted", ["DROP-4"], ["LRU-5"], "lost [LRU-5]"),
    ]
    full = aggregate(records)
    narrowed = aggregate(records, selected=["DROP-4"])
    assert full["LRU-5"].outcome == narrowed["LRU-5"].outcome == "failed"
    assert full["LRU-5"].message == "lost [LRU-5]"
    assert full["DROP-4"].outcome == narrowed["DROP-4"].outcome == "unchecked"


def test_a_test_that_errors_errors_each_of_its_clauses() -> None:
    records = [_failed("a::t", ["KEY-1", "KEY-2"], [], "KeyError: 'a'")]
    results = aggregate(records, selected=["KEY-1", "KEY-2"])
    assert {r.outcome for r in results.values()} == {"error"}


def test_a_not_applicable_test_leaves_the_clause_unchecked_or_skipped() -> None:
    skip = "Skipped: not applicable: subject 's' has neither accounting nor buffer_factory"
    records = [
        _passed("a::ran", "RESET-1"),
        TestRecord("a::needs_buffer", ["RESET-1", "DROP-2"], "skipped", message=skip),
    ]
    results = aggregate(records, selected=["RESET-1", "DROP-2"])
    assert results["RESET-1"].outcome == "unchecked"
    assert "needs_buffer: not applicable" in results["RESET-1"].message
    assert results["DROP-2"].outcome == "skipped"
    assert results["DROP-2"].message == skip.removeprefix("Skipped: ")


def test_an_environment_skip_beside_passes_still_passes() -> None:
    records = [
        _passed("a::simulated", "ACCT-4"),
        TestRecord("a::real_cuda", ["ACCT-4"], "skipped", message="Skipped: no CUDA device"),
    ]
    assert aggregate(records, selected=["ACCT-4"])["ACCT-4"].outcome == "passed"


def test_an_expected_failure_becomes_xfailed_and_its_neighbours_unchecked() -> None:
    records = [_failed("a::reset", ["RESET-1", "RESET-2"], ["RESET-2"], "stale [RESET-2]")]
    entry = Expectation("RESET-2", "xfail", "stops at the first error", 1)
    results = aggregate(records, [entry], selected=["RESET-1", "RESET-2"])
    assert results["RESET-2"].outcome == "xfailed"
    assert results["RESET-1"].outcome == "unchecked"


def test_verdict_is_incomplete_when_a_must_clause_was_not_checked() -> None:
    unchecked = {"LRU-5": ClauseResult("MUST", "unchecked")}
    should_failed = {"ACCT-9": ClauseResult("SHOULD", "failed")}
    assert verdict(unchecked) == "incomplete"
    assert verdict({**unchecked, "DROP-2": ClauseResult("MUST", "failed")}) == "non-conformant"
    assert verdict(should_failed) == "conformant"
    assert verdict(should_failed, strict=True) == "non-conformant"
    assert verdict({"ACCT-9": ClauseResult("SHOULD", "unchecked")}, strict=True) == "incomplete"


def test_a_focused_test_that_never_got_through_leaves_its_clause_unchecked() -> None:
    skip = "Skipped: not checked: every example stopped at ENV-1 first: x [ENV-1]"
    records = [
        TestRecord("suite/test_env.py::test_oracle[ENV-3]", ["ENV-3"], "skipped", message=skip)
    ]
    result = aggregate(records, selected=["ENV-3"])["ENV-3"]
    assert result.outcome == "unchecked"
    assert "every example stopped at ENV-1 first" in result.message
