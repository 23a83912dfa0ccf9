"""The exit policy: what a run's results make its exit status, and the verdict line's word.

One table, applied by every way of running the suite (``sessionstate check``, plain
``pytest`` with the plugin, ``check --reproduce`` and ``sessionstate fuzz``, which replays
what it found through ``check``), and quoted by the README and docs/implementers.md:

===  ======================================================================================
 0   conformant: every MUST clause passed, or failed as an ``xfail`` expectation says, or
     was skipped by a ``skip`` expectation (each with its reason), or is not applicable (a
     hook or capability the subject does not declare). A failed SHOULD clause, an expected
     failure that passed (XPASS) and an expectation that matched nothing are warnings.
 1   a clause failed: a MUST clause (any clause under ``--strict``) failed or errored; under
     ``--reproduce``, the test's case still fails, whatever its clause's level.
 2   misuse: one line, before the first test (a bad target, option or expectations line);
     and, under ``--strict`` only, after the run: the expectations file is stale (an entry
     matched no test or clause, or an expected failure passed).
 3   incomplete: nothing failed, but a MUST clause (any under ``--strict``) was not checked
     to the end: its tests stopped at another failure, were cut off, crashed or never ran,
     or were skipped for a reason other than a declared missing hook or capability (say,
     an object's contents with no model to check them against).
     Under ``--reproduce``, the case no longer fails: one test checks no clause to the end,
     whatever its level.
 4   infrastructure: the example database failed (a clause failure found anyway stays 1),
     or a report could not be written.
128+N  interrupted by signal N: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP.
===  ======================================================================================

Under plain pytest the plugin sets the session's exit status from this table once the
run has a verdict; where pytest ends without one (its own usage errors, an
interruption, an internal error) the status is pytest's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INFRASTRUCTURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Decision",
    "decide",
    "exit_status",
    "session_status",
    "stale_expectations",
    "with_infrastructure",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INFRASTRUCTURE = 0, 1, 2, 3, 4
#: 128 + SIGINT, as a shell reports a command ended by Ctrl-C.
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Decision:
    """A run's exit ``status`` and the ``word`` its verdict line starts with."""

    status: int
    word: str


def stale_expectations(results: Mapping[str, Any]) -> list[str]:
    """The expectations entries that no longer describe the subject: each entry that
    matched no test or clause, then each clause whose expected failure passed (XPASS),
    then each test whose expected failure passed while its clause shows otherwise (a
    test-level entry on one parametrization, the clause failing on another)."""
    xpassed = [
        f"{cid} (expected to fail, but passed)"
        for cid, clause in results["clauses"].items()
        if clause["outcome"] == "xpassed"
    ]
    tests = [f"{nodeid} (expected to fail, but passed)" for nodeid in xpassed_tests(results)]
    return [*results.get("unmatched_expectations", []), *xpassed, *tests]


def xpassed_tests(results: Mapping[str, Any]) -> list[str]:
    """Tests whose expected failure passed (XPASS) and whose clauses' rows do not say so:
    their clause failed, or passed, through another test."""
    clauses = results["clauses"]
    return [
        str(test["nodeid"])
        for test in results.get("tests", [])
        if test["outcome"] == "xpassed"
        and not all(
            clauses.get(cid, {}).get("outcome") == "xpassed" for cid in test.get("clauses", [])
        )
    ]


def decide(results: Mapping[str, Any]) -> Decision:
    """The exit status and verdict word of a run with these JSON ``results``
    (``results.results_json``), by the table above, before the example database's faults
    are weighed (``with_infrastructure``). An interrupted run's status is its signal's,
    which the caller knows; its word here is ``INCOMPLETE``."""
    verdict = str(results["verdict"])
    if results.get("reproduce"):  # one test ran: its case, not the subject, is judged
        failed = [
            f"{clause['level']} clause {cid}"
            for cid, clause in results["clauses"].items()
            if clause["outcome"] in ("failed", "error")
        ]
        if failed:
            return Decision(EXIT_FAILED, f"FAILED (the case still fails: {', '.join(failed)})")
    if verdict == "non-conformant":
        return Decision(EXIT_FAILED, "NON-CONFORMANT")
    if results.get("strict") and stale_expectations(results):
        return Decision(EXIT_USAGE, f"STALE EXPECTATIONS (--strict: {_stale_counts(results)})")
    if verdict == "incomplete":
        return Decision(EXIT_INCOMPLETE, "INCOMPLETE")
    if results.get("reproduce"):
        # One test ran: it passed, which checks no clause to the end, SHOULD ones included.
        return Decision(EXIT_INCOMPLETE, "INCOMPLETE (the case no longer fails)")
    return Decision(EXIT_OK, "CONFORMANT")


def _stale_counts(results: Mapping[str, Any]) -> str:
    """``1 expectation matched no test or clause, 2 expected failures passed``."""
    unmatched = len(results.get("unmatched_expectations", []))
    xpassed = sum(1 for c in results["clauses"].values() if c["outcome"] == "xpassed")
    xpassed += len(xpassed_tests(results))
    parts = []
    if unmatched:
        entries = "expectation" if unmatched == 1 else "expectations"
        parts.append(f"{unmatched} {entries} matched no test or clause")
    if xpassed:
        failures = "expected failure" if xpassed == 1 else "expected failures"
        parts.append(f"{xpassed} {failures} passed")
    return ", ".join(parts)


def with_infrastructure(results: Mapping[str, Any], status: int) -> int:
    """``status`` once the example database's faults (``results["infrastructure"]``) are
    weighed: a clause failure found anyway (1) stands; any other verdict does not count (4)."""
    if results.get("infrastructure") and status != EXIT_FAILED:
        return EXIT_INFRASTRUCTURE
    return status


def exit_status(results: Mapping[str, Any]) -> int:
    """The exit status of a run with these ``results``, by the table above."""
    return with_infrastructure(results, decide(results).status)


#: pytest's own statuses for a run that ended as it should: all passed, some failed.
_PYTEST_RAN = (0, 1)


def session_status(results: Mapping[str, Any], pytest_status: int, others_failed: bool) -> int:
    """A plain pytest run's exit status: the table's for the suite's verdict. pytest's own
    when the run has none (an interruption, an internal or usage error: ``pytest_status``
    is then not 0 or 1), and 1 when a test of the caller's own, run beside the suite,
    failed (``others_failed``)."""
    if pytest_status not in _PYTEST_RAN or results.get("interrupted"):
        return pytest_status
    status = exit_status(results)
    return EXIT_FAILED if others_failed and status == EXIT_OK else status
