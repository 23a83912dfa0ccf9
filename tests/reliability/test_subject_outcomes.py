"""Subject code cannot decide a test's outcome (``conformance._harness.supervision.own_outcomes``): a ``pytest.skip`` (worded as the suite's own
skips, or through ``pytest.importorskip``), ``pytest.xfail``, ``pytest.exit(returncode=0)``
or a ``KeyboardInterrupt`` with no signal, raised by the manager under test, leaves that
test not checked to the end: its clause UNCHECKED, the verdict incomplete, exit 3, the note
naming the call and what it raised. Before, the first two made the run CONFORMANT (exit 0,
no expectations file), the third read as failed clauses, and the last as an interrupted run
(exit 130) though no signal came.

Each case runs ``sessionstate check`` on one clause (KEY-1, whose tests call
``get_or_create_session``), through the supervisor, and the same on plain pytest for two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

SUBJECT = """
    import dataclasses
    import pytest
    from sessionstate.fixtures.reference_subject import subject as reference
    from sessionstate.reference import SessionStateManager

    class Manager(SessionStateManager):
        def get_or_create_session(self, session_id):
            {body}
            return super().get_or_create_session(session_id)

    subject = dataclasses.replace(reference, name="outcomes", manager_factory=Manager)
"""


@dataclass(frozen=True)
class Case:
    id: str
    body: str
    #: What the clause's note says the call raised.
    raised: str


CASES = [
    Case(
        "skip-in-the-suites-words",
        'pytest.skip("not applicable: this backend has no GPU")',
        "raised pytest.skip('not applicable: this backend has no GPU')",
    ),
    Case(
        "importorskip",
        'pytest.importorskip("sessionstate_no_such_module")',
        "raised pytest.skip(\"could not import 'sessionstate_no_such_module'",
    ),
    Case("xfail", 'pytest.xfail("known to fail")', "raised pytest.xfail('known to fail')"),
    Case(
        "exit-0",
        'pytest.exit("stop here", returncode=0)',
        "raised pytest.exit('stop here', returncode=0)",
    ),
    Case("keyboard-interrupt", "raise KeyboardInterrupt", "raised KeyboardInterrupt (no signal came)"),
]  # fmt: skip


def _write(tmp_path: Path, body: str) -> dict[str, str]:
    source = textwrap.dedent(SUBJECT).replace("{body}", body)
    (tmp_path / "outcomes.py").write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    return {**env, "PYTHONPATH": str(tmp_path)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_outcome_raised_by_subject_code_leaves_the_test_unchecked(
    case: Case, tmp_path: Path
) -> None:
    env = _write(tmp_path, case.body)
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "outcomes:subject", "--clause", "KEY-1",
         "--profile", "quick", "--report-json", "r.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 3, output[-3000:]
    assert "verdict: INCOMPLETE" in done.stdout and "Traceback" not in done.stderr, output[-3000:]
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    clause = report["clauses"]["KEY-1"]
    assert (report["verdict"], report["interrupted"], clause["outcome"]) == (
        "incomplete", False, "unchecked",
    ), clause  # fmt: skip
    assert "get_or_create_session(" in clause["message"], clause["message"]
    assert case.raised in clause["message"], clause["message"]


@pytest.mark.parametrize("case", [CASES[0], CASES[4]], ids=[CASES[0].id, CASES[4].id])
def test_plain_pytest_tells_them_apart_too(case: Case, tmp_path: Path) -> None:
    """The same under plain pytest: no supervisor, the plugin alone decides."""
    env = _write(tmp_path, case.body)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--pyargs", "sessionstate.conformance", "--sessionstate-subject", "outcomes:subject",
         "--sessionstate-clause", "KEY-1", "--sessionstate-profile", "quick",
         "--sessionstate-report-json", "r.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 3, (done.stdout + done.stderr)[-3000:]
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["clauses"]["KEY-1"]["outcome"] == "unchecked", report["clauses"]["KEY-1"]
    assert not report["interrupted"]


def test_a_subject_that_changes_its_answers_is_reported_without_exception_groups() -> None:
    """``conformance._harness.supervision.guard``: Hypothesis' ``FlakyFailure`` (a case failed, then passed
    when replayed) around a clause
    failure becomes that failure, saying so, not the exception group printed whole; a
    ``FlakyStrategyDefinition`` (the suite's draws follow the subject's answers, which
    changed) leaves the test not checked to the end, never an ERROR of its clauses."""
    from hypothesis.errors import FlakyFailure, FlakyStrategyDefinition

    from sessionstate.conformance._harness.supervision import guard
    from sessionstate.conformance.checks import ClauseFailure

    inner = ClauseFailure("STATS-1", "len(manager)=3, but should be 2 [STATS-1]")
    failure = guard._flaky_failure(FlakyFailure("Inconsistent results", [inner]))
    assert isinstance(failure, ClauseFailure) and failure.clause == "STATS-1"
    assert str(failure).startswith("len(manager)=3, but should be 2 [STATS-1] (it failed once")
    assert guard._flaky_failure(ValueError("x")) is None
    reason = guard._flaky(FlakyStrategyDefinition("Inconsistent data generation!"))
    assert reason is not None and reason.startswith("not checked")
    assert "answered the same calls differently" in reason
    assert guard._flaky(ValueError("x")) is None
