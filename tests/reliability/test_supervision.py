"""``sessionstate check`` and ``fuzz`` end with a verdict whatever the subject does.

One table of hostile subjects, each written here into tmp_path and run through the
command in its own process, with one clause (or two) on the quick profile and a per-test
bound of ``BOUND`` seconds. Every case pins the exit status, the line or the report that
says what happened, that no earlier report is left saying conformant, and a time bound
(generous: the subjects hang forever, so the bound is about the mechanism, not speed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessionstate import conformance

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL") or not sys.platform.startswith("linux"),
    reason="process groups and signals as on Linux",
)

_spec = importlib.util.spec_from_file_location(
    "_cli_helpers", Path(__file__).resolve().parents[1] / "cli" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cli)
one_line_error: Callable[[subprocess.CompletedProcess[str]], str] = _cli.one_line_error

#: The per-test bound the cases run under (SESSIONSTATE_TEST_TIMEOUT).
BOUND = 20
#: The bound of the cases whose call spins until it is cut off: they burn a core for all of
#: it, and reach the spin in the first second of their test.
SPIN_BOUND = 10
#: What a report from an earlier, complete run said; never left in place by a bad run.
EARLIER = {"verdict": "conformant", "note": "an earlier, complete report", "clauses": {}}

HEADER = """
    import ctypes, dataclasses, os, signal, sys, threading
    from pathlib import Path
    from sessionstate.fixtures.reference_subject import subject as reference
    from sessionstate.reference import SessionStateManager

    def in_test(name):
        return name in os.environ.get("PYTEST_CURRENT_TEST", "")

    def once(name):
        # True the first time only, across processes: a resumed run gets past it.
        marker = Path(name + ".done")
        if marker.exists():
            return False
        marker.write_text("")
        return True
"""

OS_EXIT = """
    def factory(**kwargs):
        if in_test("test_falsy_id_is_default[0]"):
            os._exit(0)
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="exits", manager_factory=factory)
"""

SEGFAULT = """
    class Manager(SessionStateManager):
        def stats(self):
            if in_test("test_observer_changes_neither_counters_nor_order[stats]"):
                ctypes.string_at(0)
            return super().stats()

    subject = dataclasses.replace(reference, name="segfaults", manager_factory=Manager)
"""

# The watchdog's timer is off, SIGALRM blocked, and a bare except retries whatever is
# raised: nothing inside the process can end the call.
NO_ALARM = """
    class Manager(SessionStateManager):
        def stats(self):
            if len(self) and once("spin"):
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
                while True:
                    try:
                        sum(range(1000))
                    except:  # noqa: E722
                        pass
            return super().stats()

    subject = dataclasses.replace(reference, name="no-alarm", manager_factory=Manager)
"""

# stats() compiled from a string: no frame of it has a file the watchdog calls the subject's.
STRING_CODE = """
    SOURCE = (
        "def stats(self):\\n"
        "    if len(self) and once('spin'):\\n"
        "        while True:\\n"
        "            pass\\n"
        "    return SessionStateManager.stats(self)\\n"
    )
    namespace = {"once": once, "SessionStateManager": SessionStateManager}
    exec(compile(SOURCE, "<string>", "exec"), namespace)

    class Manager(SessionStateManager):
        stats = namespace["stats"]

    subject = dataclasses.replace(reference, name="string-code", manager_factory=Manager)
"""

THREAD_LEFT = """
    def factory(**kwargs):
        threading.Thread(target=threading.Event().wait, daemon=False).start()
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="thread-left", manager_factory=factory)
"""

BLOCKS = """
    def factory(**kwargs):
        if len(list(Path(".").glob("built.*"))) >= 3:
            Path("blocked").write_text("")
            threading.Event().wait(600)
        Path(f"built.{len(list(Path('.').glob('built.*')))}").write_text("")
        return SessionStateManager(**kwargs)

    subject = dataclasses.replace(reference, name="blocks", manager_factory=factory)
"""


Drive = Callable[[subprocess.Popen[str], Path], None]


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.1)


def signals(*sent: int) -> Drive:
    """Once the subject blocks inside a test, send ``sent`` to the command, in a row."""

    def drive(process: subprocess.Popen[str], cwd: Path) -> None:
        _wait_for(cwd / "blocked", process)
        for signum in sent:
            process.send_signal(signum)

    return drive


@dataclass
class Case:
    id: str
    source: str
    args: list[str]
    exit: int
    #: Each must appear in stderr.
    says: list[str] = field(default_factory=list)
    #: Clause -> outcome in the JSON report (None: the earlier report must be untouched).
    clauses: dict[str, str] | None = None
    verdict: str | None = None
    drive: Drive | None = None
    #: Seconds the command may take, start-up included.
    within: float = 120
    env: dict[str, str] = field(default_factory=dict)
    check: Callable[[subprocess.CompletedProcess[str], dict[str, Any]], None] | None = None


def _interrupted_by(
    name: str,
) -> Callable[[subprocess.CompletedProcess[str], dict[str, Any]], None]:
    def check(result: subprocess.CompletedProcess[str], report: dict[str, Any]) -> None:
        assert report["interrupted"] is True and report["signal"] == name, report
        assert "Traceback" not in result.stderr + result.stdout
        assert len(result.stderr.strip().splitlines()) < 30, result.stderr

    return check


def _exits_within(result: subprocess.CompletedProcess[str], report: dict[str, Any]) -> None:
    assert "CONFORMANT" in result.stdout


CASES = [
    Case("sys-exit-target", "", ["sys:exit"], 2, ["target 'sys:exit' called sys.exit()"]),
    Case(
        "os-exit-at-import", "os._exit(0)\n", ["exitsatimport:subject", "--clause", "KEY-1"], 3,
        ["the process ended with status 0 before a verdict, while importing the target"],
        clauses={"KEY-1": "unchecked"}, verdict="incomplete",
    ),
    Case(
        "os-exit-in-a-test", OS_EXIT, ["exits:subject", "--clause", "KEY-1"], 3,
        ["test_key.py::test_falsy_id_is_default[0]: the subject's code exited the process "
         "with status 0"],
        clauses={"KEY-1": "unchecked"}, verdict="incomplete",
    ),
    Case(
        "segfault", SEGFAULT, ["segfaults:subject", "--clause", "STATS-4", "--clause", "KEY-1"],
        3, ["the process died with SIGSEGV in stats()"],
        clauses={"STATS-4": "unchecked", "KEY-1": "passed"}, verdict="incomplete", within=180,
    ),
    Case(
        "segfault-under-xdist", SEGFAULT,
        ["segfaults:subject", "--clause", "STATS-4", "--clause", "KEY-1", "-n", "2"], 3,
        ["test_observer_changes_neither_counters_nor_order[stats]: the process died with "
         "SIGSEGV in stats()"],
        clauses={"STATS-4": "unchecked", "KEY-1": "passed"}, verdict="incomplete", within=180,
    ),
    Case(
        "no-alarm-bare-except", NO_ALARM, ["no-alarm:subject", "--clause", "STATS-1"], 3,
        [f"cut off after {SPIN_BOUND} s in stats()"],
        clauses={"STATS-1": "unchecked"}, verdict="incomplete", within=SPIN_BOUND + 150,
        env={"SESSIONSTATE_TEST_TIMEOUT": str(SPIN_BOUND)},
    ),
    Case(
        "string-code", STRING_CODE, ["stringcode:subject", "--clause", "STATS-1"], 3,
        [f"cut off after {BOUND} s in stats (<string>:"],
        clauses={"STATS-1": "unchecked"}, verdict="incomplete", within=BOUND + 150,
    ),
    Case(
        "non-daemon-thread", THREAD_LEFT, ["thread-left:subject", "--clause", "KEY-1"], 0,
        clauses={"KEY-1": "passed"}, verdict="conformant", check=_exits_within,
    ),
    Case(
        "sigterm", BLOCKS, ["blocks:subject", "--clause", "KEY-1"], 143,
        ["interrupted by SIGTERM after"], clauses={"KEY-1": "unchecked"}, verdict="incomplete",
        drive=signals(signal.SIGTERM), check=_interrupted_by("SIGTERM"),
        env={"SESSIONSTATE_CALL_TIMEOUT": "0"},
    ),
    Case(
        "sighup", BLOCKS, ["blocks:subject", "--clause", "KEY-1"], 129,
        ["interrupted by SIGHUP after"], clauses={"KEY-1": "unchecked"}, verdict="incomplete",
        drive=signals(signal.SIGHUP), check=_interrupted_by("SIGHUP"),
        env={"SESSIONSTATE_CALL_TIMEOUT": "0"},
    ),
    Case(
        "double-sigint", BLOCKS, ["blocks:subject", "--clause", "KEY-1"], 130,
        ["interrupted after"], clauses={"KEY-1": "unchecked"}, verdict="incomplete",
        drive=signals(signal.SIGINT, signal.SIGINT), check=_interrupted_by("SIGINT"),
        env={"SESSIONSTATE_CALL_TIMEOUT": "0"},
    ),
]  # fmt: skip


def _env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    env.update({"PYTHONPATH": str(tmp_path), "SESSIONSTATE_TEST_TIMEOUT": str(BOUND), **extra})
    return env


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_run_ends_with_a_verdict(case: Case, tmp_path: Path) -> None:
    if case.source:
        source = textwrap.dedent(HEADER) + textwrap.dedent(case.source)
        (tmp_path / f"{case.args[0].partition(':')[0]}.py").write_text(source, encoding="utf-8")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(EARLIER), encoding="utf-8")
    command = [sys.executable, "-m", "sessionstate", "check", *case.args, "--profile", "quick"]
    command += ["--report-json", str(report)]
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=tmp_path, env=_env(tmp_path, case.env), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        if case.drive is not None:
            case.drive(process, tmp_path)
        stdout, stderr = process.communicate(timeout=case.within)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    elapsed = time.monotonic() - started
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if case.exit == 2:
        line = one_line_error(result)
        assert all(text in line for text in case.says), line
    else:
        assert result.returncode == case.exit, (result.returncode, stdout[-3000:], stderr[-3000:])
        assert "Traceback" not in stderr, stderr[-3000:]
        for text in case.says:
            assert text in stderr, (text, stderr[-3000:])
    assert elapsed < case.within
    written = json.loads(report.read_text(encoding="utf-8"))
    if case.clauses is None:
        assert written == EARLIER
    else:
        assert written["verdict"] == case.verdict, written["verdict"]
        outcomes = {cid: written["clauses"][cid]["outcome"] for cid in case.clauses}
        assert outcomes == case.clauses, {c: written["clauses"][c] for c in case.clauses}
    if case.check is not None:
        case.check(result, written)


def _hypofuzz_group(parent: int) -> int | None:
    """The process group HypoFuzz, a child of ``parent``, leads (Linux's /proc), if any."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if int(fields[1]) == parent and int(fields[2]) == pid and b"hypothesis" in cmdline:
            return pid
    return None


def test_plain_pytest_under_xdist_never_drops_a_crashed_test(tmp_path: Path) -> None:
    """The in-process route (``pytest --pyargs ... -n 2``) has no supervisor: a worker's
    segfault still leaves its test's clause unchecked in the report, never passed, while
    the other clause, whose tests all ran, passes; the run exits by the exit policy,
    incomplete (3), as ``check`` does for the same crash."""
    source = textwrap.dedent(HEADER) + textwrap.dedent(SEGFAULT)
    (tmp_path / "segfaults.py").write_text(source, encoding="utf-8")
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
               "-p", "sessionstate.conformance.plugin", "-p", "no:cacheprovider", "-q",
               "--sessionstate-subject", "segfaults:subject", "--sessionstate-profile", "quick",
               "--sessionstate-clause", "STATS-4", "--sessionstate-clause", "KEY-1", "-n", "2",
               "--sessionstate-report-json", str(report)]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=_env(tmp_path, {}), capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 3, done.stdout[-3000:]  # exit_policy: incomplete
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["verdict"] == "incomplete"
    assert written["clauses"]["KEY-1"]["outcome"] == "passed"
    stats = written["clauses"]["STATS-4"]
    assert stats["outcome"] == "unchecked", stats
    assert "crashed while running" in stats["message"], stats["message"]


FUZZ_STOPS = [
    # (id, the signal sent to `sessionstate fuzz`, its exit status; None: killed outright)
    ("sigkill", signal.SIGKILL, None),
    ("sigterm", signal.SIGTERM, 143),
]


@pytest.mark.parametrize(("signum", "status"), [f[1:] for f in FUZZ_STOPS],
                         ids=[f[0] for f in FUZZ_STOPS])  # fmt: skip
def test_fuzz_leaves_no_hypofuzz_behind(tmp_path: Path, signum: int, status: int | None) -> None:
    """However ``sessionstate fuzz`` is stopped, HypoFuzz's whole process group is gone
    within the bound: SIGTERM is handled as Ctrl-C (exit 143, one line); SIGKILL, which no
    handler sees, is answered by the reaper."""
    pytest.importorskip("hypofuzz")
    command = [sys.executable, "-m", "sessionstate", "fuzz", "--seconds", "600", "--clause",
               "KEY-1", "--no-quick-pass", "--database", str(tmp_path / "db")]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=tmp_path, env=_env(tmp_path, {}), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        group = None
        while group is None:
            assert process.poll() is None, "fuzz ended before HypoFuzz started"
            assert time.monotonic() < deadline, "HypoFuzz never started"
            time.sleep(0.2)
            group = _hypofuzz_group(process.pid)
        time.sleep(2)  # HypoFuzz running, with whatever workers it starts
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        if status is not None:
            assert process.returncode == status, (process.returncode, stderr)
            assert stderr.strip().splitlines() == ["sessionstate fuzz: interrupted by SIGTERM"]
        deadline = time.monotonic() + 60
        while True:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "HypoFuzz's process group outlived fuzz"
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


# In-process: the rules the supervisor applies, without a process to run.

BOUNDS = [
    # (id, profile, SESSIONSTATE_TEST_TIMEOUT or None, bound or the usage error's start)
    ("quick-profile", "quick", None, 120.0),
    ("ci-profile", "ci", None, 300.0),
    ("deep-profile", "deep", None, 1800.0),
    ("override", "ci", "20", 20.0),
    ("zero-is-unbounded", "ci", "0", None),
    ("negative", "ci", "-5", "SESSIONSTATE_TEST_TIMEOUT='-5': give the seconds"),
    ("not-a-number", "ci", "soon", "SESSIONSTATE_TEST_TIMEOUT='soon': give the seconds"),
    ("infinite", "ci", "inf", "SESSIONSTATE_TEST_TIMEOUT='inf': give the seconds"),
]


@pytest.mark.parametrize(("profile", "value", "expected"), [b[1:] for b in BOUNDS],
                         ids=[b[0] for b in BOUNDS])  # fmt: skip
def test_the_bound_of_a_test(profile: str, value: str | None, expected: Any) -> None:
    from sessionstate.conformance._harness.supervision.bounds import test_bound
    from sessionstate.conformance.subject import UsageError

    environ = {} if value is None else {"SESSIONSTATE_TEST_TIMEOUT": value}
    if isinstance(expected, str):
        with pytest.raises(UsageError) as raised:
            test_bound(profile, environ)
        assert str(raised.value).startswith(expected), raised.value
    else:
        assert test_bound(profile, environ) == expected


#: A suite frame where the suite is imported from: the checkout under an editable install,
#: site-packages under the nox session's wheel.
SUITE = str(Path(conformance.__file__).resolve().parent / "_machine" / "manager.py")
STDLIB = sysconfig.get_paths()["stdlib"]
DUMPS = [
    # (id, faulthandler's text, the call it names)
    (
        "subject-called-from-the-suite",
        f"""Timeout (0:00:15)!
Thread 0x00007f0000000001 (most recent call first):
  File "{STDLIB}/threading.py", line 320 in wait
  File "/work/execnet/gateway_base.py", line 534 in read

Thread 0x00007f0000000002 (most recent call first):
  File "/home/me/mine/accounting.py", line 12 in _walk
  File "/home/me/mine/manager.py", line 88 in stats
  File "{SUITE}", line 297 in step
  File "/usr/lib/python3.11/site-packages/hypothesis/core.py", line 1 in run
""",
        " in stats() (accounting.py:12)",
    ),
    (
        "exec-d-code-only",
        f"""Timeout (0:00:15)!
Thread 0x00007f0000000002 (most recent call first):
  File "<string>", line 4 in stats
  File "{SUITE}", line 297 in step
""",
        " in stats (<string>:4)",
    ),
    (
        "fatal-signal",
        f"""Fatal Python error: Segmentation fault

Current thread 0x00007f0000000002 (most recent call first):
  File "{STDLIB}/ctypes/__init__.py", line 519 in string_at
  File "/home/me/mine/manager.py", line 9 in stats
  File "{SUITE}", line 297 in step
""",
        " in stats() (manager.py:9)",
    ),
    ("no-frames", "Timeout (0:00:15)!\n", ""),
]


@pytest.mark.parametrize(("text", "named"), [d[1:] for d in DUMPS], ids=[d[0] for d in DUMPS])
def test_the_call_in_flight_is_named_from_the_stack_dump(text: str, named: str) -> None:
    from sessionstate.conformance._harness.supervision.stack_dumps import call_from_dump

    assert call_from_dump(text) == named
