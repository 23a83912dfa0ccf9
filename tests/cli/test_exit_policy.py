"""One exit policy (``exit_policy``), the same through every route: ``sessionstate check``,
plain pytest with the plugin, ``check --reproduce`` and ``fuzz``'s replay.

The subject fails only a SHOULD clause (STATS-6), the case where the routes disagreed:
plain pytest exited 1 ("a test failed") where ``check`` exited 0, and a reproduce of the
failing case exited 0 saying CONFORMANT.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance._harness import fuzz
from sessionstate.conformance._harness.exit_policy import (
    decide,
    exit_status,
    session_status,
    stale_expectations,
)
from sessionstate.conformance._report.terminal import table_lines

#: Fails STATS-6 (a SHOULD clause) and nothing else.
SHOULD_ONLY = "sessionstate.fixtures.zoo.stats_nan_cap_accepted:subject"
#: One of its failing tests, as the summary prints it.
FAILING_TEST = "test_stats.py::test_max_sessions_must_be_a_finite_positive_whole_number[nan]"


def _results(**clauses: tuple[str, str]) -> dict[str, Any]:
    """Canned results: clause id (``_`` for ``-``) -> (level, outcome)."""
    return {
        "verdict": "conformant",
        "strict": False,
        "unmatched_expectations": [],
        "infrastructure": [],
        "clauses": {
            cid.replace("_", "-"): {"level": level, "outcome": outcome}
            for cid, (level, outcome) in clauses.items()
        },
    }


@pytest.mark.parametrize(
    ("changes", "status", "word"),
    [
        ({}, 0, "CONFORMANT"),
        ({"verdict": "non-conformant"}, 1, "NON-CONFORMANT"),
        ({"verdict": "incomplete"}, 3, "INCOMPLETE"),
        ({"reproduce": FAILING_TEST}, 1, "FAILED (the case still fails: SHOULD clause STATS-6)"),
        (
            {
                "reproduce": "test_lru.py::test_manager_machine",
                "verdict": "non-conformant",
                "clauses": {"LRU-3": {"level": "MUST", "outcome": "failed"}},
            },
            1,
            "FAILED (the case still fails: MUST clause LRU-3)",
        ),
        (
            {
                "reproduce": FAILING_TEST,
                "clauses": {"STATS-6": {"level": "SHOULD", "outcome": "unchecked"}},
            },
            3,
            "INCOMPLETE (the case no longer fails)",
        ),
        ({"unmatched_expectations": ["LOCK-1 (line 1)"]}, 0, "CONFORMANT"),
        (
            {"unmatched_expectations": ["LOCK-1 (line 1)"], "strict": True},
            2,
            "STALE EXPECTATIONS (--strict: 1 expectation matched no test or clause)",
        ),
        ({"infrastructure": [{"database": "x"}]}, 0, "CONFORMANT"),
    ],
)
def test_the_table(changes: dict[str, Any], status: int, word: str) -> None:
    """A failed SHOULD clause is a warning; a reproduce fails on it; stale expectations are
    2 under --strict only, never 1."""
    results = {**_results(STATS_6=("SHOULD", "failed"), KEY_1=("MUST", "passed")), **changes}
    assert decide(results).status == status
    assert decide(results).word == word
    infrastructure = bool(results["infrastructure"])
    assert exit_status(results) == (4 if infrastructure and status != 1 else status)


def test_an_xpass_is_stale() -> None:
    """An expected failure that passed is a warning, and 2 under --strict."""
    results = _results(ENV_1=("MUST", "xpassed"))
    assert exit_status(results) == 0
    results["strict"] = True
    assert decide(results).word == "STALE EXPECTATIONS (--strict: 1 expected failure passed)"
    assert exit_status(results) == 2


def test_a_test_level_xpass_is_stale_whatever_its_clause_shows() -> None:
    """An entry on one parametrization that now passes, while the clause passes (or fails)
    through another test: stale, named by its test, and 2 under --strict."""
    xpass = {"nodeid": "test_acct.py::t[coo]", "clauses": ["ACCT-9"], "outcome": "xpassed"}
    results = {**_results(ACCT_9=("SHOULD", "passed")), "tests": [xpass]}
    assert stale_expectations(results) == ["test_acct.py::t[coo] (expected to fail, but passed)"]
    assert exit_status(results) == 0
    results["strict"] = True
    assert decide(results).word == "STALE EXPECTATIONS (--strict: 1 expected failure passed)"
    assert exit_status(results) == 2
    failing = {**_results(ACCT_9=("SHOULD", "failed")), "tests": [xpass], "strict": True}
    assert stale_expectations(failing)  # surfaced even where the clause failed
    shown = {
        **failing,
        "subject": "s", "target": "m:s", "suite_version": "0", "profile": "ci", "seed": None,
        "seconds": 1.0, "environment": {"devices": [], "torch": "2", "numpy": "2", "hypothesis": "6"},
        "capabilities": [], "verdict": "conformant",
        "clauses": {"ACCT-9": {"level": "SHOULD", "outcome": "failed", "tests": [],
                               "message": "m", "seconds": 0.0}},
    }  # fmt: skip
    assert any("XPASS): test_acct.py::t[coo]" in line for line in table_lines(shown))


def test_plain_pytest_keeps_its_own_status_without_a_verdict() -> None:
    """pytest's interruptions and errors stand; a failing test of the caller's own is 1."""
    results = _results(STATS_6=("SHOULD", "failed"))
    assert session_status(results, 1, others_failed=False) == 0
    assert session_status(results, 1, others_failed=True) == 1
    assert session_status(results, 2, others_failed=False) == 2
    assert session_status({**results, "interrupted": True}, 1, others_failed=False) == 1


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    env["HYPOTHESIS_NO_PLUGINS"] = "1"
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def _verdict(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    assert len(lines) == 1, stdout[-3000:]
    return lines[0]


@pytest.mark.parametrize("strict", [False, True], ids=["plain", "strict"])
def test_check_and_plain_pytest_agree(tmp_path: Path, strict: bool) -> None:
    """The same subject, the same exit status and verdict line through both routes: 0 and
    CONFORMANT with the SHOULD warning, or 1 and NON-CONFORMANT under --strict."""
    check = ["-m", "sessionstate", "check", SHOULD_ONLY, "--clause", "STATS-6"]
    plain = [
        "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
        "-p", "sessionstate.conformance.plugin", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--sessionstate-subject", SHOULD_ONLY, "--sessionstate-clause", "STATS-6",
    ]  # fmt: skip
    if strict:
        check.append("--strict")
        plain.append("--sessionstate-strict")
    by_check, by_pytest = _run(check, tmp_path), _run(plain, tmp_path)
    expected = (1, "verdict: NON-CONFORMANT") if strict else (0, "verdict: CONFORMANT")
    for done in (by_check, by_pytest):
        assert done.returncode == expected[0], done.stdout[-3000:] + done.stderr[-3000:]
        assert _verdict(done.stdout).startswith(expected[1])
    if not strict:
        assert "warning: SHOULD clauses failed: STATS-6" in by_pytest.stdout
        # Both headers say whose code was tested.
        assert "hooks: own manager_factory" in by_pytest.stdout
        assert "hooks: own manager_factory" in by_check.stdout


def test_reproduce_of_a_failing_should_case_exits_1(tmp_path: Path) -> None:
    """A reproduce asks "does this case still fail?": yes, whatever the clause's level."""
    done = _run(["-m", "sessionstate", "check", SHOULD_ONLY, "--reproduce", FAILING_TEST], tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert _verdict(done.stdout).startswith(
        "verdict: FAILED (the case still fails: SHOULD clause STATS-6)"
    )
    assert "--strict fails on them" not in done.stdout  # it already failed, exit 1


def test_reproduce_of_a_should_case_that_passes_exits_3(tmp_path: Path) -> None:
    """ "No longer fails" checks no clause to the end, SHOULD clauses included: 3, as a
    MUST clause's reproduce would, never a CONFORMANT verdict from one test."""
    done = _run(
        ["-m", "sessionstate", "check", "sessionstate.fixtures.reference_subject:subject",
         "--reproduce", FAILING_TEST], tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert _verdict(done.stdout).startswith("verdict: INCOMPLETE (the case no longer fails)")


def _replay_with(monkeypatch: pytest.MonkeyPatch, status: int, outcome: str) -> int:
    """``fuzz._replay`` over a check that exits ``status`` with STATS-6 ``outcome``."""
    from sessionstate.conformance._harness import runner
    from sessionstate.conformance._harness.supervision import supervisor

    def check(options: runner.CheckOptions) -> int:
        clauses = {"STATS-6": {"level": "SHOULD", "outcome": outcome}}
        assert options.report_json is not None
        Path(options.report_json).write_text(json.dumps({"clauses": clauses}), encoding="utf-8")
        return status

    monkeypatch.setattr(supervisor, "supervise", check)
    return fuzz._replay(fuzz.FuzzOptions(target=SHOULD_ONLY), "db")


def test_fuzz_replays_a_should_failure_by_the_same_policy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replayed SHOULD failure is the check's 0 with a warning, not "flaky" and 1; a
    failure that did not fail again still is."""
    assert _replay_with(monkeypatch, 0, "failed") == 0
    assert "SHOULD clause STATS-6 failing, no MUST clause" in capsys.readouterr().err
    assert _replay_with(monkeypatch, 0, "passed") == 1
    assert "did not fail again" in capsys.readouterr().err
    assert _replay_with(monkeypatch, 1, "failed") == 1
