"""Per-clause outcomes: a clause passes only when every test of it ran to the end."""

from __future__ import annotations

from sessionstate.conformance._harness.expectations import Expectation
from sessionstate.conformance._harness.results import ClauseResult, TestRecord, aggregate, verdict


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


def _report(records: list[TestRecord], selected: list[str], **how: object) -> dict:
    from dataclasses import asdict

    from sessionstate.conformance._harness.results import results_json

    run = {"target": "t:s", "suite_version": "0", "profile": "ci", "seed": None, "seconds": 1.0}
    facts = {"subject": "s", "environment": {}, "capabilities": []}
    return results_json(
        [asdict(r) for r in records], [], selected, strict=False, facts=facts, run={**run, **how}
    )


def test_an_interrupted_run_is_incomplete_and_passes_nothing_it_did_not_finish() -> None:
    """Ctrl-C after LRU-1's only test: LRU-1 passed; LRU-2, whose second test never
    ran, and LRU-3, whose tests never ran, are unchecked; the verdict is incomplete."""
    records = [_passed("a::one", "LRU-1", "LRU-2")]
    results = _report(
        records, ["LRU-1", "LRU-2", "LRU-3"], stopped="interrupted", interrupted=True,
        tests_collected=3, unfinished=["LRU-2", "LRU-3"],
        unfinished_why="interrupted before all its tests ran",
    )  # fmt: skip
    outcomes = {cid: c["outcome"] for cid, c in results["clauses"].items()}
    assert outcomes == {"LRU-1": "passed", "LRU-2": "unchecked", "LRU-3": "unchecked"}
    assert results["clauses"]["LRU-3"]["message"] == (
        "not checked to the end: interrupted before all its tests ran"
    )
    assert (results["verdict"], results["interrupted"], results["stopped"]) == (
        "incomplete",
        True,
        "interrupted",
    )
    assert results["tests_collected"] == 3


def test_an_interrupted_run_with_a_failure_is_still_incomplete() -> None:
    """The failure stays in its clause; the run as a whole gives no verdict."""
    records = [_failed("a::one", ["LRU-1"], ["LRU-1"], "x [LRU-1]")]
    results = _report(records, ["LRU-1", "LRU-2"], stopped="interrupted", interrupted=True,
                      unfinished=None, unfinished_why="interrupted")  # fmt: skip
    assert results["clauses"]["LRU-1"]["outcome"] == "failed"
    assert results["clauses"]["LRU-2"]["outcome"] == "unchecked"
    assert results["verdict"] == "incomplete"


def test_a_run_stopped_at_a_failure_keeps_its_verdict() -> None:
    """-x stopped at a SHOULD failure before any MUST clause ran: incomplete, not
    conformant; at a MUST failure: non-conformant."""
    should = [_failed("a::s", ["ACCT-12"], ["ACCT-12"], "x [ACCT-12]")]
    results = _report(should, ["ACCT-12", "LRU-1"], stopped="stopping after 1 failures",
                      interrupted=False, unfinished=["LRU-1"], unfinished_why="stopped")  # fmt: skip
    assert results["clauses"]["LRU-1"]["outcome"] == "unchecked"
    assert (results["verdict"], results["interrupted"]) == ("incomplete", False)
    must = [_failed("a::m", ["LRU-1"], ["LRU-1"], "x [LRU-1]")]
    assert _report(must, ["LRU-1", "LRU-2"], stopped="stopping after 1 failures",
                   unfinished=["LRU-2"])["verdict"] == "non-conformant"  # fmt: skip


def test_a_complete_run_says_it_was_not_interrupted() -> None:
    results = _report([_passed("a::one", "LRU-1")], ["LRU-1"])
    assert (results["verdict"], results["interrupted"], results["stopped"]) == (
        "conformant",
        False,
        None,
    )
