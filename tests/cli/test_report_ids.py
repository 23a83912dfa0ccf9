"""Every report names a test by its suite-rooted id, the same from every route: ``check``
with and without ``--expectations``, plain pytest from any directory, with the package
installed anywhere. JSON (and the JUnit, Markdown and HTML made from it) from two machines
line up, and an expectations file written from one route matches on another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sessionstate.conformance._harness.results import results_json

ONE_CLAUSE = ("--clause", "LRU-8")
IDS = {
    "test_lru.py::test_non_positive_max_sessions_is_rejected[0]",
    "test_lru.py::test_non_positive_max_sessions_is_rejected[-1]",
}


def _ids(path: Path) -> set[str]:
    return {t["nodeid"] for t in json.loads(path.read_text(encoding="utf-8"))["tests"]}


def test_every_route_reports_the_same_ids(run_cli: Any, tmp_path: Path) -> None:
    expectations = tmp_path / "x.expectations"
    expectations.write_text("# nothing expected to fail\n", encoding="utf-8")
    plain = run_cli("check", *ONE_CLAUSE, "--report-json", "plain.json")
    listed = run_cli(
        "check", *ONE_CLAUSE, "--expectations", str(expectations), "--report-json", "x.json"
    )
    assert (plain.returncode, listed.returncode) == (0, 0), plain.stdout + listed.stdout
    deeper = tmp_path / "a" / "b"
    deeper.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    for cwd, name in ((tmp_path, "pytest.json"), (deeper, "deeper.json")):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
             "-p", "no:cacheprovider", "-q", "--sessionstate-clause", "LRU-8",
             "--sessionstate-report-json", str(tmp_path / name)],
            capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
    for name in ("plain.json", "x.json", "pytest.json", "deeper.json"):
        assert _ids(tmp_path / name) == IDS, name


def test_an_id_rooted_anywhere_is_reported_suite_rooted() -> None:
    """Records as pytest roots them in a venv, a checkout and under ``--pyargs``."""
    rooted = [
        ".venv/lib/python3.11/site-packages/sessionstate/conformance/suite/test_lru.py::t[0]",
        "conformance/suite/test_lru.py::t[a/b]",
        "test_lru.py::t[c]",
    ]
    tests = [{"nodeid": n, "clauses": ["LRU-8"], "outcome": "passed"} for n in rooted]
    facts = {"subject": "s", "environment": {}, "capabilities": []}
    run = {"target": "t", "suite_version": "0", "profile": "quick", "seed": None, "seconds": 1}
    payload = results_json(tests, [], ["LRU-8"], strict=False, facts=facts, run=run)
    expected = ["test_lru.py::t[0]", "test_lru.py::t[a/b]", "test_lru.py::t[c]"]
    assert [t["nodeid"] for t in payload["tests"]] == expected
    assert payload["clauses"]["LRU-8"]["tests"] == expected
