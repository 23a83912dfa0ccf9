"""Ctrl-C during ``sessionstate check``: exit 130, and no report left saying "conformant".

The subject blocks inside its manager factory once it has built a given number of
managers, after touching a marker file; the test waits for the marker and sends SIGINT,
so the interruption lands inside a test at a known point: before the first test ended,
or after several.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")

EARLIER = {"verdict": "conformant", "note": "an earlier, complete report", "clauses": {}}

BLOCKING_SUBJECT = """
    import os
    import threading
    from pathlib import Path

    from sessionstate.conformance import Subject
    from sessionstate.reference import SessionStateManager

    BLOCK_AT = int(os.environ["BLOCK_AT"])
    built = 0


    def factory(**kwargs):
        global built
        built += 1
        if built == BLOCK_AT:
            Path(os.environ["MARKER"]).write_text(str(built))
            threading.Event().wait(120)
        return SessionStateManager(**kwargs)


    subject = Subject(name="blocking", manager_factory=factory)
"""


def _interrupted_run(tmp_path: Path, block_at: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the check until the subject blocks, then Ctrl-C it; the finished process."""
    (tmp_path / "blocking.py").write_text(textwrap.dedent(BLOCKING_SUBJECT), encoding="utf-8")
    marker = tmp_path / "blocked"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    # The subject's wait must be ended by the signal, not by the call deadline.
    env.update(PYTHONPATH=str(tmp_path), BLOCK_AT=str(block_at), MARKER=str(marker),
               SESSIONSTATE_CALL_TIMEOUT="0")  # fmt: skip
    command = [sys.executable, "-m", "sessionstate", "check", "blocking:subject", *args]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the subject never blocked"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _never_conformant(path: Path) -> dict:
    """The report at ``path``: the earlier one untouched, or one saying the run is incomplete."""
    report = json.loads(path.read_text(encoding="utf-8"))
    if report == EARLIER:
        return EARLIER
    assert report["verdict"] == "incomplete", report["verdict"]
    assert report["interrupted"] is True
    assert "passed" not in {c["outcome"] for c in report["clauses"].values()}
    return report


# The run's first test, the crowded machine (not applicable to this buffer-less subject),
# builds a manager per program until one reaches a buffer: some ten, as many as Hypothesis
# draws. The 24th manager comes well after it, within test_key.py.
@pytest.mark.parametrize(
    ("block_at", "least_tests"),
    [(2, 0), (24, 3)],
    ids=["before-the-first-test-ended", "after-several-tests"],
)
def test_ctrl_c_exits_130_and_no_report_says_conformant(
    tmp_path: Path, block_at: int, least_tests: int
) -> None:
    """The exit status is 130, stderr says how far the run got in one line, and the
    reports are the earlier ones or say incomplete, never conformant."""
    (tmp_path / "r.json").write_text(json.dumps(EARLIER), encoding="utf-8")
    (tmp_path / "r.md").write_text("earlier summary\n", encoding="utf-8")
    done = _interrupted_run(
        tmp_path, block_at, "--clause", "KEY", "--report-json", "r.json", "--markdown", "r.md"
    )
    assert done.returncode == 130, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert line.startswith("sessionstate check: interrupted after "), line
    assert "collection" not in line
    report = _never_conformant(tmp_path / "r.json")
    if report is not EARLIER:
        assert report["stopped"] == "interrupted"
        ran = {t["nodeid"] for t in report["tests"]}
        assert len(ran) >= least_tests
        assert report["tests_collected"] > len(ran)
        assert f"interrupted after {len(ran)} of {report['tests_collected']} tests" in line
        assert "is incomplete" in (tmp_path / "r.md").read_text(encoding="utf-8")
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left behind"


def test_collection_error_is_not_an_interruption(run_cli, tmp_path: Path) -> None:
    """A test file that does not import is a usage error naming collection, exit 2."""
    (tmp_path / "r.json").write_text(json.dumps(EARLIER), encoding="utf-8")
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    done = run_cli("check", "--clause", "ENV-1", "--report-json", "r.json", "--", "test_broken.py")
    assert done.returncode == 2, (done.stdout[-3000:], done.stderr[-3000:])
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "could not be collected: test_broken.py: ModuleNotFoundError: No module named" in line
    report = _never_conformant(tmp_path / "r.json")
    if report is not EARLIER:
        assert report["stopped"].startswith("collection errors")
