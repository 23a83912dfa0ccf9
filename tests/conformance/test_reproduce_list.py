"""``failures_to_reproduce``: the summary's commands, every failed MUST clause first."""

from __future__ import annotations

from typing import Any

from sessionstate.conformance._report.reproduce_list import failures_to_reproduce


def _test(nodeid: str, failed: list[str], outcome: str = "failed") -> dict[str, Any]:
    return {"nodeid": nodeid, "clauses": failed, "failed_clauses": failed, "outcome": outcome}


def _results(clauses: dict[str, tuple[str, str]], tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "clauses": {cid: {"level": level, "outcome": o} for cid, (level, o) in clauses.items()},
        "tests": tests,
    }


def test_must_clauses_come_first_whatever_the_order_of_the_tests() -> None:
    results = _results(
        {
            "LRU-3": ("MUST", "failed"),
            "ACCT-7": ("SHOULD", "failed"),
            "ACCT-9": ("SHOULD", "failed"),
            "LOCK-5": ("MUST", "error"),
        },
        # Ten SHOULD failures ran first, as a run over ACCT's tests does.
        [_test(f"test_acct.py::t[{n}]", ["ACCT-7"]) for n in range(10)]
        + [_test("test_acct.py::sparse", ["ACCT-9"]), _test("test_lru.py::m", ["LRU-3"])]
        + [_test("test_lock.py::h", ["LOCK-5"])],
    )
    offered = failures_to_reproduce(results)
    assert [(c, level, r["nodeid"]) for c, level, r in offered] == [
        (["LRU-3"], "MUST", "test_lru.py::m"),
        (["LOCK-5"], "MUST", "test_lock.py::h"),
        (["ACCT-7"], "SHOULD", "test_acct.py::t[0]"),
        (["ACCT-9"], "SHOULD", "test_acct.py::sparse"),
    ]


def test_an_expected_failure_is_not_offered() -> None:
    results = _results(
        {"ACCT-3": ("MUST", "xfailed"), "ACCT-9": ("SHOULD", "failed")},
        [_test("test_acct.py::meta", ["ACCT-3"]), _test("test_acct.py::sparse", ["ACCT-9"])],
    )
    assert [r["nodeid"] for _, _, r in failures_to_reproduce(results)] == ["test_acct.py::sparse"]


def test_a_test_failing_several_clauses_is_offered_once_under_all() -> None:
    results = _results(
        {"LRU-3": ("MUST", "failed"), "LRU-4": ("MUST", "failed")},
        [_test("test_lru.py::m", ["LRU-3", "LRU-4"])],
    )
    assert [(c, r["nodeid"]) for c, _, r in failures_to_reproduce(results)] == [
        (["LRU-3", "LRU-4"], "test_lru.py::m")
    ]


def test_every_failed_clause_is_offered_none_cut() -> None:
    clauses = {f"ACCT-{n}": ("SHOULD", "failed") for n in range(1, 46)}
    tests = [_test(f"test_acct.py::t[{n}]", [f"ACCT-{n}"]) for n in range(1, 46)]
    assert len(failures_to_reproduce(_results(clauses, tests))) == 45


def test_a_failed_test_whose_failure_names_no_clause_counts_for_its_clauses() -> None:
    error = {"nodeid": "test_env.py::e", "clauses": ["ENV-1"], "outcome": "failed"}
    results = _results({"ENV-1": ("MUST", "error")}, [error, _test("x", [], "passed")])
    assert [r["nodeid"] for _, _, r in failures_to_reproduce(results)] == ["test_env.py::e"]
