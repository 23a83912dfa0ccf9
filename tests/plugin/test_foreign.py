"""The project's own pytest plugins on the plain pytest route (``_harness/foreign.py``): a
kill by pytest-timeout is UNCHECKED, a rerun by pytest-rerunfailures neither hides a
failure nor counts a test twice, and pytest-randomly's order changes no clause's outcome.

Each run is a separate ``pytest --pyargs sessionstate.conformance.suite`` process with the
plugin switched on, as a project that has it installed and configured runs the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytest_timeout")
pytest.importorskip("pytest_rerunfailures")
pytest.importorskip("pytest_randomly")

BOUND_S = 300

#: A manager factory that sleeps past a 1 s pytest-timeout; the suite's own bound on a
#: call is far longer, so only the project's plugin can stop it.
SLOW = """
    import time
    from dataclasses import replace
    from sessionstate.fixtures.reference_subject import subject as reference

    def slow(**kwargs):
        time.sleep(5)
        return reference.make_manager(**kwargs)

    subject = replace(reference, name="slow", manager_factory=slow)
"""

#: Fails LRU-8's test the first time it runs in a process, passes after: a rerun would pass.
FLAKY = """
    from dataclasses import replace
    from sessionstate.fixtures.reference_subject import subject as reference

    calls = []

    def once_wrong(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1 and kwargs.get("max_sessions") == 0:
            return reference.make_manager(max_sessions=1, byte_budget=None)  # no ValueError
        return reference.make_manager(**kwargs)

    subject = replace(reference, name="flaky", manager_factory=once_wrong)
"""


def _run(tmp_path: Path, module: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    (tmp_path / "foreign_subject.py").write_text(textwrap.dedent(module), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
         "-p", "no:cacheprovider", "--sessionstate-subject", "foreign_subject:subject",
         "--sessionstate-report-json", str(report), *args],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=BOUND_S,
    )  # fmt: skip
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text(encoding="utf-8"))


def _clause(report: Any, clause: str) -> Any:
    return report["clauses"][clause]


#: LRU-8's two tests alone, in the order given.
LRU8 = ("-p", "no:randomly", "-k", "test_non_positive_max_sessions_is_rejected")


def test_a_pytest_timeout_kill_is_unchecked_not_an_error(tmp_path: Path) -> None:
    done, report = _run(tmp_path, SLOW, "-p", "timeout", "--timeout", "1", *LRU8)
    output = done.stdout + done.stderr
    lru8 = _clause(report, "LRU-8")
    assert lru8["outcome"] == "unchecked", output[-3000:]
    assert "stopped by pytest-timeout (Timeout" in lru8["message"]
    assert "-p no:timeout" in lru8["message"]
    assert report["verdict"] != "non-conformant" and done.returncode != 1, output[-3000:]


def test_a_rerun_neither_hides_the_failure_nor_counts_twice(tmp_path: Path) -> None:
    done, report = _run(tmp_path, FLAKY, "-p", "rerunfailures", "--reruns", "2", *LRU8)
    output = done.stdout + done.stderr
    assert "rerun" in output  # pytest-rerunfailures did run the failed test again
    lru8 = _clause(report, "LRU-8")
    assert lru8["outcome"] == "failed", output[-3000:]
    assert report["verdict"] == "non-conformant" and done.returncode == 1
    ids = [t["nodeid"] for t in report["tests"]]
    assert len(ids) == len(set(ids)) == 2, ids  # the two parametrizations, once each


def test_a_random_order_changes_no_outcome(tmp_path: Path) -> None:
    plain = "import sessionstate.fixtures.reference_subject as r\nsubject = r.subject\n"
    args = ("--sessionstate-clause", "LRU", "--sessionstate-profile", "quick")
    _, ordered = _run(tmp_path, plain, "-p", "no:randomly", *args)
    done, shuffled = _run(tmp_path, plain, "-p", "randomly", *args)
    assert "Using --randomly-seed=" in done.stdout
    outcomes = {c: r["outcome"] for c, r in ordered["clauses"].items()}
    assert outcomes == {c: r["outcome"] for c, r in shuffled["clauses"].items()}
    assert set(outcomes.values()) <= {"passed", "skipped"}
