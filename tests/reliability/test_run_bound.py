"""A correct but slow subject ends with a verdict inside the run's bound: never a clause
failure, its clauses unchecked (exit 3), the slow call named.

Each run is ``sessionstate check`` in its own process with a small run bound
(``SESSIONSTATE_RUN_TIMEOUT``), on the quick profile, with a hard ``timeout`` a little
above the bound the tool promises (the bound, plus ``bounds.REPORT_SECONDS``), so a run
that overstays fails here instead of hanging this suite.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance._harness.supervision import bounds
from sessionstate.conformance._harness.supervision.bounds import (
    REPORT_SECONDS,
    RUN_SECONDS,
    TEST_SECONDS,
)
from sessionstate.conformance._harness.supervision.deadline import load_factor
from sessionstate.conformance.subject import UsageError

SLOW = """
    import dataclasses, time
    from sessionstate.fixtures.reference_subject import subject as reference
    from sessionstate.reference import SessionStateManager

    class EveryCallSlow(SessionStateManager):
        # Correct; every call takes 50 ms (a remote backend, a slow machine).
        def get_or_create_session(self, *args, **kwargs):
            time.sleep(0.05)
            return super().get_or_create_session(*args, **kwargs)

        def stats(self):
            time.sleep(0.05)
            return super().stats()

        def __len__(self):
            time.sleep(0.05)
            return super().__len__()

    class QuadraticStats(SessionStateManager):
        # Correct; stats() computes for 2 s per session held (a stand-in for O(n^2)).
        def stats(self):
            until = time.monotonic() + 2.0 * super().__len__()
            while time.monotonic() < until:
                pass
            return super().stats()

    class SecondsAStats(SessionStateManager):
        # Correct; every stats() takes 1.5 s (a remote backend's round trips).
        def stats(self):
            time.sleep(1.5)
            return super().stats()

    seconds_a_stats = dataclasses.replace(reference, name="seconds-a-stats",
                                          manager_factory=SecondsAStats)
    every_call = dataclasses.replace(reference, name="every-call-slow", manager_factory=EveryCallSlow)
    quadratic = dataclasses.replace(reference, name="quadratic-stats", manager_factory=QuadraticStats)
"""


def _run(tmp_path: Path, target: str, bound: int, *args: str, **env: str) -> tuple[Any, ...]:
    (tmp_path / "slow.py").write_text(textwrap.dedent(SLOW), encoding="utf-8")
    report = tmp_path / "report.json"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    environ.update(PYTHONPATH=str(tmp_path), SESSIONSTATE_RUN_TIMEOUT=str(bound), **env)
    command = [sys.executable, "-m", "sessionstate", "check", target, "--profile", "quick",
               "--report-json", str(report), *args]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=tmp_path, env=environ, capture_output=True, text=True,
        timeout=bound + REPORT_SECONDS + 30,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text(encoding="utf-8")), elapsed


def _ended_unchecked(done: Any, report: dict[str, Any], elapsed: float, bound: int) -> None:
    """Exit 3 inside the bound the tool promises, no clause failed, some unchecked."""
    assert done.returncode == 3, (done.stdout[-3000:], done.stderr[-3000:])
    assert elapsed < bound + REPORT_SECONDS, elapsed
    outcomes = {cid: c["outcome"] for cid, c in report["clauses"].items()}
    assert not {o for o in outcomes.values()} & {"failed", "error"}, outcomes
    assert report["verdict"] == "incomplete"
    assert "unchecked" in outcomes.values()


def test_every_call_slow_ends_unchecked_inside_the_run_bound(tmp_path: Path) -> None:
    """50 ms a call: the tests stop for time, later ones do not start; exit 3 by the bound."""
    bound = 15
    done, report, elapsed = _run(
        tmp_path, "slow:every_call", bound, "--clause", "LRU", "--clause", "STATS"
    )
    _ended_unchecked(done, report, elapsed, bound)
    assert report["run_timeout"] == bound
    messages = [t["message"] for t in report["tests"]]
    stopped = [m for m in messages if "stopped for time" in m or "run's bound" in m]
    assert stopped, messages
    # The slow call is named: the one in flight, and where the ticks found the time going.
    named = [m for m in messages if "stopped for time" in m]
    assert all(
        any(f"{call}()" in m for call in ("get_or_create_session", "stats", "__len__"))
        for m in named
    ), named
    assert "Traceback" not in done.stderr


def test_one_quadratic_call_is_too_slow_to_judge_never_a_failure(tmp_path: Path) -> None:
    """stats() computes for seconds: past the call deadline it is still computing, so it is
    waited for and then judged too slow (or the test's share runs out), never LOCK-3."""
    bound = 20
    done, report, elapsed = _run(
        tmp_path, "slow:quadratic", bound, "--clause", "STATS-1",
        SESSIONSTATE_CALL_TIMEOUT="0.5",
    )  # fmt: skip
    _ended_unchecked(done, report, elapsed, bound)
    slow = [
        t["message"] for t in report["tests"]
        if "too slow to judge: stats() still running" in t["message"]
        or ("stopped for time" in t["message"] and "stats()" in t["message"])
    ]  # fmt: skip
    assert slow, [t["message"] for t in report["tests"]]


def test_a_call_that_takes_seconds_is_named_once_and_cut_at_once_after(tmp_path: Path) -> None:
    """stats() takes 1.5 s a call: the first test that runs out of time in it names it
    ("stats() took 1.5 s a call"), each later test is cut at its first stats() call with
    that same reason, not after its whole share, and the report says it once, with the
    number of tests it stopped."""
    bound = 14
    done, report, elapsed = _run(
        tmp_path, "slow:seconds_a_stats", bound, "--clause", "STATS-2",
        SESSIONSTATE_TEST_TIMEOUT="8",
    )  # fmt: skip
    _ended_unchecked(done, report, elapsed, bound)
    messages = [t["message"] for t in report["tests"]]
    first = [m for m in messages if "stopped for time" in m and "too slow to judge: stats()" in m]
    cut = [m for m in messages if re.search(r"not checked: too slow to judge: stats\(\) took", m)]
    assert len(first) == 1 and len(cut) >= 2, messages
    fact = re.search(r"stats\(\) took ([\d.]+) s a call", first[0])
    assert fact is not None and 1.4 <= float(fact[1]) < 3.0, first
    assert all(f"too slow to judge: {fact[0]} [SecondsAStats.stats]" in m for m in cut), cut
    summary = [line for line in done.stdout.splitlines() if "tests stopped in it)" in line]
    assert summary == [
        f"  too slow to judge: {fact[0]} ({len(first) + len(cut)} tests stopped in it)"
    ]
    # The later tests took a cut call each, not their shares (3 s or more each).
    stopped = [t for t in report["tests"] if t["message"] in cut]
    assert max(t["seconds"] for t in stopped) < 1.5 + load_factor(), stopped
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("profile", "value", "expected"),
    [("quick", None, 600.0), ("ci", "", 1800.0), ("deep", None, 14400.0), ("quick", "30", 30.0),
     ("ci", "0", None), ("quick", "2.5", 2.5)],
)  # fmt: skip
def test_the_bound_of_a_run(profile: str, value: str | None, expected: float | None) -> None:
    environ = {} if value is None else {"SESSIONSTATE_RUN_TIMEOUT": value}
    assert bounds.run_bound(profile, environ) == expected
    assert RUN_SECONDS[profile] >= 5 * TEST_SECONDS[profile] or profile == "deep"


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_run_bound_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match=r"^SESSIONSTATE_RUN_TIMEOUT=.*the whole run may take"):
        bounds.run_bound("quick", {"SESSIONSTATE_RUN_TIMEOUT": value})


@pytest.mark.parametrize(
    ("test_seconds", "left", "tests", "expected"),
    [
        (120.0, 600.0, 100, 30.0),  # a fair share below a quarter of the test bound
        (120.0, 600.0, 4, 90.0),  # above three quarters of it
        (120.0, 600.0, 10, 60.0),  # in between: the share
        (120.0, 10.0, 10, 10.0),  # never more than what is left
        (120.0, -5.0, 10, 0.0),  # spent
        (None, 600.0, 10, 60.0),  # no test bound: the share alone
        (120.0, None, 10, None),  # no run bound: no budget
    ],
)
def test_a_tests_budget_is_its_share_of_what_is_left(
    test_seconds: float | None, left: float | None, tests: int, expected: float | None
) -> None:
    assert bounds.test_budget(test_seconds, left, tests) == expected
