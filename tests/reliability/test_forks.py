"""Subject code that forks (``conformance._harness.supervision.forks``), or starts too many processes
(``conformance._harness.supervision.census``), never runs the suite twice and
never takes the machine: a forked copy of the suite's process ends the moment it returns
into the suite (``_harness.supervision.forks``), and past ``SESSIONSTATE_MAX_PROCESSES`` the run stops
with its tests unchecked, naming the cap and the call in flight (``_harness.supervision.census``), and
starts no new child.

The forking subjects are bounded by construction: each process forks only while its depth
is below 6, so whatever happens there are at most 64 of them, and the last ones sleep in
subject code until the run kills their group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "fork"),
    reason="fork and /proc as on Linux",
)

HEADER = """
    import dataclasses, os, time
    from sessionstate.fixtures.reference_subject import subject as reference
    from sessionstate.reference import SessionStateManager

    DEPTH = [0]
"""

#: Forks at every call, and the copy goes back into the suite (the fork bomb: each copy
#: forked again at its next call, 1,011 processes in 110 s).
EVERY_CALL = """
    def factory(**kwargs):
        if DEPTH[0] < 6:
            if os.fork() == 0:
                DEPTH[0] += 1
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="forks", manager_factory=factory)
"""

#: Forks once, in the first call: the copy goes back into the suite.
ONCE = """
    def factory(**kwargs):
        if DEPTH[0] == 0:
            DEPTH[0] = 1
            os.fork()
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="forks-once", manager_factory=factory)
"""

#: A tree of 64 processes that stay in subject code (sleeping), built in the first call.
TREE = """
    def factory(**kwargs):
        if DEPTH[0] == 0:
            DEPTH[0] = 1
            if os.fork() == 0:
                depth = 1
                while depth < 6:
                    os.fork()
                    depth += 1
                time.sleep(600)
                os._exit(0)
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="forest", manager_factory=factory)
"""


def _check(tmp_path: Path, source: str, clause: str, **env: str) -> tuple[int, str, dict]:
    (tmp_path / "forking.py").write_text(textwrap.dedent(HEADER + source), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "forking:subject", "--clause", clause,
         "--profile", "quick", "--report-json", "r.json"],
        cwd=tmp_path, env={**environ, "PYTHONPATH": str(tmp_path), **env},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    return done.returncode, done.stdout + done.stderr, report


def _left_behind(tmp_path: Path) -> int:
    """Live processes working in this test's folder (the suite's child, and every copy a
    fork made of it, runs there): none once the check has returned."""
    alive = 0
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if os.readlink(cwd) == str(tmp_path) and _state(cwd.parent) != "Z":
                alive += 1
        except OSError:
            continue
    return alive


def _state(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "?"


def test_the_census_of_a_folder_sees_a_process_there(tmp_path: Path) -> None:
    """``_left_behind`` is not vacuous: a process started in the folder is counted."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path)
    try:
        time.sleep(0.3)
        assert _left_behind(tmp_path) == 1
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _left_behind(tmp_path) == 0


def test_a_factory_that_forks_at_every_call_runs_the_suite_once(tmp_path: Path) -> None:
    """The copies end as they return into the suite: the verdict is the reference's, every
    test recorded once, and nothing is left running."""
    started = time.monotonic()
    status, output, report = _check(tmp_path, EVERY_CALL, "LRU")
    assert status == 0, output[-3000:]
    assert report["verdict"] == "conformant"
    ids = [test["nodeid"] for test in report["tests"]]
    assert len(ids) == len(set(ids)), "a test recorded twice"
    assert time.monotonic() - started < 120
    assert _left_behind(tmp_path) == 0


def test_a_factory_that_forks_once_keeps_its_verdict(tmp_path: Path) -> None:
    status, output, report = _check(tmp_path, ONCE, "KEY")
    assert status == 0, output[-3000:]
    ids = [test["nodeid"] for test in report["tests"]]
    assert report["verdict"] == "conformant" and len(ids) == len(set(ids))


def test_past_the_process_cap_the_run_stops_naming_it(tmp_path: Path) -> None:
    """64 processes sleeping in subject code, a cap of 16: the run stops within seconds,
    incomplete (exit 3), the test running unchecked with the cap in its note, no second
    child started, and the group killed (nothing left running)."""
    started = time.monotonic()
    status, output, report = _check(tmp_path, TREE, "KEY-1", SESSIONSTATE_MAX_PROCESSES="16")
    assert status == 3, output[-3000:]
    assert report["verdict"] == "incomplete"
    # Named where the tests stopped: the one running then, or (between two tests) the note
    # of every clause whose tests did not run.
    notes = [t["message"] for t in report["tests"] if t["outcome"] == "crashed"]
    notes.append(report["clauses"]["KEY-1"]["message"])
    assert any("past the cap of 16 (SESSIONSTATE_MAX_PROCESSES)" in m for m in notes), notes
    assert "the run was stopped: the subject's code started" in output
    assert time.monotonic() - started < 90
    time.sleep(1)
    assert _left_behind(tmp_path) == 0


def test_a_cap_that_is_not_a_number_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "forking.py").write_text(textwrap.dedent(HEADER + ONCE), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "forking:subject", "--clause", "KEY-1"],
        cwd=tmp_path, env={**environ, "PYTHONPATH": str(tmp_path),
                           "SESSIONSTATE_MAX_PROCESSES": "lots"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "SESSIONSTATE_MAX_PROCESSES='lots'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


#: The main process of ``sessionstate fuzz``'s HypoFuzz (``COUNTS_ENV`` set) loads the fuzz
#: profile and forks a worker (no suite frame on that stack: the worker runs on). The worker
#: runs a test of the suite (code compiled under the suite's folder) whose subject call
#: forks: that copy ends on its way back into the suite, the worker goes on.
FUZZ_WORKER = """
    import os, sys
    from sessionstate.conformance._harness import profiles
    from sessionstate.conformance._harness.fuzz_worker import COUNTS_ENV
    from sessionstate.conformance._harness.supervision.frames import CONFORMANCE_DIR

    os.environ[COUNTS_ENV] = sys.argv[1]
    profiles.load_profile("fuzz")
    suite = {}
    exec(compile(
        "def test(subject):\\n    pid = subject()\\n    print('back in the suite', pid == 0, flush=True)\\n    return pid\\n",
        os.path.join(CONFORMANCE_DIR, "suite", "test_fuzzed.py"), "exec"), suite)

    def subject():
        return os.fork()

    worker = os.fork()
    if worker == 0:
        pid = suite["test"](subject)
        _, status = os.waitpid(pid, 0)
        print("copy ended with", os.waitstatus_to_exitcode(status), flush=True)
        os._exit(0)
    os.waitpid(worker, 0)
    print("worker ended", flush=True)
"""


def test_a_fuzz_worker_is_armed_for_good(tmp_path: Path) -> None:
    """HypoFuzz runs tests outside pytest's call phase, where the guard arms: a process of
    `sessionstate fuzz` is armed for its life, so a fork in a fuzzed test never makes a
    second worker, while HypoFuzz's own fork of a worker is left alone."""
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(FUZZ_WORKER), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "back in the suite False", "copy ended with 0", "worker ended"
    ], done.stdout  # fmt: skip
