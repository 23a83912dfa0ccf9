"""Under xdist the controller runs no test: it starts its workers before importing torch,
and reports what the workers loaded (header lines, summary, JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider"]

# Loaded in every process; only the controller calls pytest_xdist_setupnodes, right
# before it starts the workers (and after it printed the header).
PROBE = """
import sys

def pytest_xdist_setupnodes(config, specs):
    heavy = [m for m in ("torch", "sessionstate.reference") if m in sys.modules]
    print("controller imported before its workers:", heavy)
"""


def test_controller_starts_workers_first_and_reports_what_they_loaded(tmp_path: Path) -> None:
    (tmp_path / "xdist_probe.py").write_text(PROBE, encoding="utf-8")
    results = tmp_path / "results.json"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *SUITE, "-s", "-p", "xdist_probe", "-n", "2",
         "--sessionstate-clause", "KEY", "--sessionstate-report-json", str(results)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "controller imported before its workers: []" in out.stdout
    header, _, after = out.stdout.partition("created: 2/2 workers")
    assert "subject from sessionstate.fixtures.reference_subject:subject, loaded by each" in header
    assert "subject 'reference'" not in header
    summary = after.split("sessionstate: under test")[1]
    assert "subject 'reference' from sessionstate.fixtures.reference_subject:subject" in summary
    assert "devices: cpu, meta" in summary
    assert "capabilities: admission, require_session, threadsafe" in summary
    payload = json.loads(results.read_text(encoding="utf-8"))
    assert payload["subject"] == "reference"
    assert payload["capabilities"] == ["admission", "require_session", "threadsafe"]
    assert [d["name"] for d in payload["environment"]["devices"]][:2] == ["cpu", "meta"]
    assert payload["verdict"] == "conformant"


def test_unknown_clause_is_a_usage_error_in_the_controller(tmp_path: Path) -> None:
    """Checked at configure time: a one-line usage error, not a worker INTERNALERROR."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *SUITE, "-n", "2", "--sessionstate-clause", "NOPE"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert out.returncode == 4, out.stdout + out.stderr
    assert "ERROR: --sessionstate-clause: unknown clause or group 'NOPE'" in out.stderr
    assert "INTERNALERROR" not in out.stdout + out.stderr
