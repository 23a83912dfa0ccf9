"""Runs with a subject that deadlocks: they end, fail LOCK-3 naming the call, and go on.

Each run is a separate process with a hard ``timeout``, so a regression (a run that
hangs again) fails here instead of hanging this test suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sessionstate.conformance._harness.supervision.watchdog import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"{unavailable()}")

REENTRANT = "sessionstate.fixtures.zoo.lock_stats_reentrant:subject"
#: The first hang costs the 5 s deadline, each later one about a second: well under this.
BOUND_S = 150


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    return {**env, **extra}


def _importable(path: Path) -> str:
    """PYTHONPATH with ``path`` first."""
    return os.pathsep.join([str(path), *filter(None, [os.environ.get("PYTHONPATH")])])


def _check(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", *args, "--report-json", str(report)],
        capture_output=True, text=True, cwd=tmp_path, env=_env(**env), timeout=BOUND_S,
    )  # fmt: skip
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text(encoding="utf-8"))


def _pytest(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
         "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, cwd=tmp_path, env=_env(**env), timeout=BOUND_S,
    )  # fmt: skip


def test_the_drop_machine_on_a_deadlocking_stats_ends_and_fails_lock3(tmp_path: Path) -> None:
    """The run that used to hang forever: every DROP test stops at stats(), LOCK-3 fails."""
    done, report = _check(tmp_path, REENTRANT, "--clause", "DROP")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert report["verdict"] == "non-conformant"
    lock3 = report["clauses"]["LOCK-3"]
    assert lock3["outcome"] == "failed"
    assert lock3["message"].startswith(
        "stats() did not return within 5.0 s (deadlock?) [LOCK-3: StatsReentrantManager.stats, "
        "called at conformance/_machine/manager.py:"
    )
    ran = [t for t in report["tests"] if t["outcome"] != "skipped"]
    assert len(ran) >= 10 and all(t["failed_clauses"] == ["LOCK-3"] for t in ran), ran
    assert "stats() did not return within" in done.stdout


def test_the_whole_default_run_ends_under_xdist(tmp_path: Path) -> None:
    """Every group, two workers: the watchdog works on the workers' main threads."""
    done, report = _check(tmp_path, REENTRANT, "-n", "2", SESSIONSTATE_CALL_TIMEOUT="2")
    assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]
    assert report["clauses"]["LOCK-3"]["outcome"] == "failed"
    hung = [t for t in report["tests"] if "did not return within" in t["message"]]
    assert len(hung) >= 10, report["tests"]
    assert {t["message"].split(" [")[0] for t in hung} <= {
        "stats() did not return within 2.0 s (deadlock?)",
        "stats() did not return within 1.0 s (deadlock?)",
    }
    assert report["clauses"]["LOCK-4"]["outcome"] == "passed"  # the next tests ran normally


PROBE = """
    import json, os, signal, threading
    import pytest

    @pytest.hookimpl(trylast=True)  # innermost: inside every wrapper of the call
    def pytest_runtest_call(item):
        _note(item, "call", signal.getitimer(signal.ITIMER_REAL)[1])

    def pytest_runtest_teardown(item):
        _note(item, "teardown", signal.getitimer(signal.ITIMER_REAL)[1])

    def _note(item, when, interval):
        main = threading.current_thread() is threading.main_thread()
        with open(os.environ["PROBE_OUT"], "a") as out:
            out.write(json.dumps([item.name, when, interval, main]) + "\\n")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "xdist"])
def test_armed_only_during_the_call_on_the_main_thread(tmp_path: Path, workers: tuple) -> None:
    """During each test's call the timer ticks; in its teardown it is off. Under xdist too:
    the workers run tests on their main thread, where SIGALRM is delivered."""
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE), encoding="utf-8")
    out = tmp_path / "probe.jsonl"
    done = _pytest(
        tmp_path, "-p", "probe", "-q", "--sessionstate-clause", "LOCK-1", *workers,
        PYTHONPATH=_importable(tmp_path), PROBE_OUT=str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    notes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(notes) == 6  # three LOCK-1 tests, call and teardown
    assert {(when, interval, main) for _, when, interval, main in notes} == {
        ("call", 0.25, True),
        ("teardown", 0.0, True),
    }


def test_header_names_the_deadline_and_an_unbounded_run(tmp_path: Path) -> None:
    bounded = _pytest(tmp_path, "--sessionstate-clause", "ENV")
    assert (
        "calls into the subject: a call blocked on a lock for 5 s fails LOCK-3 as a deadlock; "
        "one still computing is waited for (up to 6x that, times the load per core), then is "
        "too slow to judge (unchecked)"
    ) in bounded.stdout
    off = _pytest(tmp_path, "--sessionstate-clause", "ENV", SESSIONSTATE_CALL_TIMEOUT="0")
    assert (
        "calls into the subject: unbounded (SESSIONSTATE_CALL_TIMEOUT=0); a deadlock hangs the run"
        in off.stdout
    )
    assert (bounded.returncode, off.returncode) == (0, 0), bounded.stdout + off.stdout


def test_a_bad_deadline_is_a_usage_error(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "-q", "--sessionstate-call-timeout", "soon")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--sessionstate-call-timeout / SESSIONSTATE_CALL_TIMEOUT: could not convert" in (
        done.stderr
    )


SWALLOWING = """
    from sessionstate.conformance import Subject
    from sessionstate.reference import SessionStateManager

    class Swallowing(SessionStateManager):
        def stats(self):
            try:
                with self._lock:
                    self.nbytes_by_device()  # deadlocks on threading.Lock
            except BaseException:  # the watchdog's Hang too
                pass
            return super().stats()

    subject = Subject(name="swallowing", manager_factory=Swallowing)
"""


def test_a_hang_the_subject_swallows_still_fails_lock3(tmp_path: Path) -> None:
    """stats() catches the interruption and returns normally: the test still fails."""
    (tmp_path / "swallowing.py").write_text(textwrap.dedent(SWALLOWING), encoding="utf-8")
    done, report = _check(
        tmp_path, "swallowing:subject", "--clause", "LOCK-3",
        PYTHONPATH=_importable(tmp_path), SESSIONSTATE_CALL_TIMEOUT="0.5",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    tests = {t["nodeid"].rpartition("::")[2]: t for t in report["tests"]}
    returns = tests["test_every_method_returns_with_a_threading_lock"]
    assert (returns["outcome"], returns["failed_clauses"]) == ("failed", ["LOCK-3"])
    assert returns["message"].startswith("stats() did not return within 0.5 s (deadlock?)")
