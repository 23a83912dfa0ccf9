"""The example database failing is infrastructure: exit 4, one line, never a clause.

Most cases run in this process: the guard around a failing backend (no exception reaches
the test, the first error is recorded), how faults from several processes add up, what
the results and the exit status say, the password never printed, and a database that
cannot be reached at the start. The outages during a run need a run: a real
``redis-server`` (tests/conftest.py) stopped, or a directory database replaced by a file,
while the subject waits inside its first test on a file this test writes only once the
database is broken. No clock is raced: the bounds below are about the mechanism.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    InMemoryExampleDatabase,
)

from sessionstate.cli import main
from sessionstate.conformance._harness import database as database_module
from sessionstate.conformance._harness.database import (
    GuardedDatabase,
    drain_faults,
    guarded_database,
    merge_faults,
    redact,
)
from sessionstate.conformance._harness.exit_policy import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
)
from sessionstate.conformance._harness.results import results_json
from sessionstate.conformance._harness.runner import infrastructure_status

SECRET = "s3cret"
KEY, VALUE = b"a test's key", b"a failing case"


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FailingDatabase(ExampleDatabase):
    """A backend whose every call raises ``error`` (``fetch`` once iterated, as Redis's
    does); ``calls`` counts the calls that reached it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
        self.calls = 0

    def _fail(self) -> None:
        self.calls += 1
        raise self.error

    def fetch(self, key: bytes) -> Iterator[bytes]:
        self._fail()
        yield b""  # never reached

    def save(self, key: bytes, value: bytes) -> None:
        self._fail()

    def delete(self, key: bytes, value: bytes) -> None:
        self._fail()


def _redis_refused(tmp_path: Path) -> ExampleDatabase:
    redis = pytest.importorskip("redis", reason="redis is in the [fuzz] extra")
    from hypothesis.extra.redis import RedisExampleDatabase

    client = redis.Redis(host="127.0.0.1", port=_dead_port(), socket_connect_timeout=5)
    return RedisExampleDatabase(client)


def _redis_timeout(tmp_path: Path) -> ExampleDatabase:
    redis = pytest.importorskip("redis", reason="redis is in the [fuzz] extra")
    return FailingDatabase(redis.exceptions.TimeoutError("Timeout reading from socket"))


def _directory(tmp_path: Path) -> DirectoryBasedExampleDatabase:
    (tmp_path / "db").mkdir()
    return DirectoryBasedExampleDatabase(tmp_path / "db")


def _remove_directory(db: ExampleDatabase, tmp_path: Path) -> None:
    shutil.rmtree(tmp_path / "db")


def _file_for_directory(db: ExampleDatabase, tmp_path: Path) -> None:
    shutil.rmtree(tmp_path / "db")
    (tmp_path / "db").write_text("not a database", encoding="utf-8")


def _file_for_key_directory(db: ExampleDatabase, tmp_path: Path) -> None:
    assert isinstance(db, DirectoryBasedExampleDatabase)
    db._key_path(KEY).write_text("not a key's folder", encoding="utf-8")


def _nothing(db: ExampleDatabase, tmp_path: Path) -> None:
    pass


@dataclass(frozen=True)
class Broken:
    """A backend, what breaks it before the calls, and the fault's first error."""

    id: str
    backend: Callable[[Path], ExampleDatabase]
    breaks: Callable[[ExampleDatabase, Path], None]
    error: str


BROKEN = [
    Broken("redis-refused", _redis_refused, _nothing, "ConnectionError: Error 111 connecting"),
    Broken("redis-timeout", _redis_timeout, _nothing, "TimeoutError: Timeout reading from socket"),
    Broken("disk-full", lambda _: FailingDatabase(OSError(errno.ENOSPC, "No space left on device")),
           _nothing, "OSError: [Errno 28] No space left on device"),
    Broken("backend-bug", lambda _: FailingDatabase(RuntimeError("boom\nsecond line")),
           _nothing, "RuntimeError: boom"),
    Broken("password-in-the-error",
           lambda _: FailingDatabase(ConnectionError(f"no redis://u:{SECRET}@h:1/0 here")),
           _nothing, "ConnectionError: no redis://u:***@h:1/0 here"),
    Broken("directory-removed", _directory, _remove_directory, "FileNotFoundError: the directory"),
    Broken("file-where-the-directory-was", _directory, _file_for_directory,
           "NotADirectoryError: the directory"),
    Broken("file-where-a-key-folder-goes", _directory, _file_for_key_directory,
           "FileExistsError: [Errno 17] File exists"),
]  # fmt: skip


@pytest.mark.parametrize("case", BROKEN, ids=lambda c: c.id)
def test_a_failing_backend_fails_no_call_and_is_recorded(case: Broken, tmp_path: Path) -> None:
    backend = case.backend(tmp_path)
    guard = GuardedDatabase(backend, f"redis://u:{SECRET}@h:1/0")
    case.breaks(backend, tmp_path)
    started = time.monotonic()
    guard.save(KEY, VALUE)  # none of these raises
    assert list(guard.fetch(KEY)) == []
    guard.move(KEY, b"elsewhere", VALUE)
    guard.delete(KEY, VALUE)
    assert time.monotonic() - started < 60
    assert guard.fault is not None
    assert guard.fault.error.startswith(case.error), guard.fault
    assert "\n" not in guard.fault.error and SECRET not in guard.fault.error
    assert (guard.fault.database, guard.fault.count) == ("redis://u:***@h:1/0", 4)
    assert guard.drain() == guard.fault  # once: the next drain has nothing new
    assert guard.drain() is None
    if isinstance(backend, FailingDatabase):
        assert backend.calls == 1  # the first failure; the later calls never reached it
    if case.breaks is _file_for_directory:
        assert (tmp_path / "db").read_text(encoding="utf-8") == "not a database"


def test_a_healthy_backend_is_used_as_it_is() -> None:
    guard = GuardedDatabase(InMemoryExampleDatabase(), "memory")
    guard.save(KEY, VALUE)
    guard.move(KEY, b"other", VALUE)
    assert (list(guard.fetch(KEY)), list(guard.fetch(b"other"))) == ([], [VALUE])
    assert (guard.fault, guard.drain()) == (None, None)


@pytest.mark.parametrize("fails", [False, True], ids=["passing", "failing"])
def test_inside_a_given_test_only_the_tests_own_failure_surfaces(fails: bool) -> None:
    """Hypothesis fetches (reuse phase) and saves (a failure) inside the test run: with the
    backend down, a passing property passes, a failing one fails with its own error."""
    backend = FailingDatabase(ConnectionError("Connection refused"))
    guard = GuardedDatabase(backend, "redis://127.0.0.1:1/0")

    @settings(database=guard, phases=[Phase.reuse, Phase.generate], max_examples=5,
              derandomize=False, deadline=None)  # fmt: skip
    @given(st.integers())
    def prop(n: int) -> None:
        assert not (fails and n == n), "the property's own failure"

    if fails:
        with pytest.raises(AssertionError, match="the property's own failure"):
            prop()
    else:
        prop()
    assert guard.fault is not None and guard.fault.error.startswith("ConnectionError")


def test_faults_of_several_processes_add_up_to_the_first_error() -> None:
    """What xdist workers send (each drain_faults()) merges in the controller."""
    kept: dict[str, dict[str, Any]] = {}
    worker_a = [{"database": "redis://h:1/0", "error": "ConnectionError: first", "count": 3}]
    worker_b = [{"database": "redis://h:1/0", "error": "TimeoutError: later", "count": 2}]
    merge_faults(kept, worker_a)
    merge_faults(kept, worker_b)
    merge_faults(kept, [])
    assert list(kept.values()) == [
        {"database": "redis://h:1/0", "error": "ConnectionError: first", "count": 5}
    ]


@pytest.mark.parametrize(
    ("backend", "breaks", "error"),
    [
        (_directory, _remove_directory, "FileNotFoundError: the directory"),
        (_directory, _file_for_directory, "NotADirectoryError: the directory"),
        (_redis_refused, _nothing, "ConnectionError: Error 111 connecting"),
    ],
    ids=["directory-removed", "file-where-the-directory-was", "redis-refused"],
)
def test_the_fuzz_watcher_turns_a_failing_database_into_the_runs_fault(
    backend: Callable[[Path], ExampleDatabase],
    breaks: Callable[[ExampleDatabase, Path], None],
    error: str,
    tmp_path: Path,
) -> None:
    """``sessionstate fuzz`` polls the database HypoFuzz writes: a failure there ends the
    watch with the error (then exit 4), where a directory database alone would say nothing."""
    pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")
    from sessionstate.conformance._harness.fuzz import FailureWatcher, _Outcome, _watch

    db = backend(tmp_path)
    breaks(db, tmp_path)
    outcome = _Outcome()
    assert _watch(FailureWatcher(db, since=time.time()), outcome) is None
    assert outcome.infrastructure is not None and outcome.infrastructure.startswith(error)


@pytest.fixture
def own_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's guarded databases only, gone after it (no fault left for the next)."""
    monkeypatch.setattr(database_module, "_GUARDED", {})


@pytest.mark.usefixtures("own_guards")
def test_a_guarded_database_reports_through_drain_faults(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    guard = guarded_database(str(tmp_path / "db"))
    assert guarded_database(str(tmp_path / "db")) is guard  # one per name and process
    assert drain_faults() == []
    shutil.rmtree(tmp_path / "db")
    assert list(guard.fetch(KEY)) == []
    [fault] = drain_faults()
    assert (fault["database"], fault["count"]) == (str((tmp_path / "db").resolve()), 1)
    assert fault["error"].startswith("FileNotFoundError: the directory")
    assert drain_faults() == []


@pytest.mark.usefixtures("own_guards")
def test_a_server_gone_before_a_process_opens_it_is_the_first_calls_fault() -> None:
    """An xdist worker opens the database after the check found it answering: a server
    gone by then fails no test and is no usage error, but the run's fault."""
    pytest.importorskip("redis", reason="redis is in the [fuzz] extra")
    url = _no_server("")
    guard = guarded_database(url)
    assert list(guard.fetch(KEY)) == [] and guard.fault is not None
    assert guard.fault.error.startswith("ConnectionError: Error 111 connecting to 127.0.0.1:")
    assert (guard.fault.database, guard.fault.count) == (redact(url), 1)
    assert SECRET in url and SECRET not in repr(guard)
    [fault] = drain_faults()
    assert fault == guard.fault.as_json()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://user:{SECRET}@127.0.0.1:1/0", "redis://user:***@127.0.0.1:1/0"),
        (f"redis://:{SECRET}@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0"),
        (f"rediss://user:{SECRET}@host", "rediss://user:***@host"),
        (f"redis://user:p@ss{SECRET}@host:1/0", "redis://user:***@host:1/0"),
        (f"redis://host:1/0?password={SECRET}", "redis://host:1/0?password=***"),
        (f"it said redis://:{SECRET}@h:1 twice: redis://:{SECRET}@h:1",
         "it said redis://:***@h:1 twice: redis://:***@h:1"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://user@127.0.0.1:6379/0", "redis://user@127.0.0.1:6379/0"),
        ("/var/cache/db:1@x", "/var/cache/db:1@x"),
    ],
)  # fmt: skip
def test_redact_hides_the_password_only(url: str, shown: str) -> None:
    assert redact(url) == shown


FAULT = {"database": "redis://:***@h:1/0", "error": "ConnectionError: refused", "count": 2}


@pytest.mark.parametrize(
    ("would", "faults", "exits", "line"),
    [
        (EXIT_OK, [], EXIT_OK, None),
        (EXIT_OK, [FAULT], EXIT_INFRASTRUCTURE, "sessionstate check: error: the example "
         "database redis://:***@h:1/0 failed during the run (2 calls lost): ConnectionError: "
         "refused; the verdict above does not count (nothing is blamed on the subject)"),
        (EXIT_INCOMPLETE, [FAULT], EXIT_INFRASTRUCTURE, "sessionstate check: error: "),
        # A clause failure found anyway was reproduced against the subject: it stands.
        (EXIT_FAILED, [FAULT], EXIT_FAILED, "sessionstate check: warning: "),
    ],
    ids=["no-fault", "conformant", "incomplete", "clause-failed"],
)  # fmt: skip
def test_exit_status_with_a_failed_database(
    would: int, faults: list[dict[str, Any]], exits: int, line: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert infrastructure_status({"infrastructure": faults}, would) == exits
    err = capsys.readouterr().err
    if line is None:
        assert err == ""
    else:
        assert len(err.splitlines()) == 1 and err.startswith(line), err


@pytest.mark.parametrize(
    ("outcome", "faults", "verdict"),
    [
        ("passed", [], "conformant"),
        ("passed", [FAULT], "incomplete"),  # a stored failure may have been missed
        ("failed", [FAULT], "non-conformant"),  # a failure found is real
    ],
)
def test_the_results_carry_the_faults(
    outcome: str, faults: list[dict[str, Any]], verdict: str
) -> None:
    record = {"nodeid": "test_lru.py::t", "clauses": ["LRU-1"], "outcome": outcome}
    facts = {"subject": "s", "environment": {}, "capabilities": []}
    run = {"target": "m:s", "suite_version": "0", "profile": "quick", "seed": 0,
           "seconds": 1.0, "infrastructure": faults}  # fmt: skip
    results = results_json([record], [], ["LRU-1"], strict=False, facts=facts, run=run)
    assert (results["verdict"], results["infrastructure"]) == (verdict, faults)


# --- the command, in this process: a database that cannot be reached at the start -------


def _no_server(user: str) -> str:
    return f"redis://{user}:{SECRET}@127.0.0.1:{_dead_port()}/0"


@pytest.mark.parametrize(
    ("command", "database", "exits", "says"),
    [
        ("check", lambda: _no_server("user"), EXIT_INFRASTRUCTURE,
         "infrastructure: cannot reach the example database redis://user:***@127.0.0.1:"),
        ("check", lambda: _no_server(""), EXIT_INFRASTRUCTURE,
         "infrastructure: cannot reach the example database redis://:***@127.0.0.1:"),
        ("fuzz", lambda: _no_server("user"), EXIT_INFRASTRUCTURE,
         "infrastructure: cannot reach the example database redis://user:***@127.0.0.1:"),
        ("fuzz", lambda: _no_server(""), EXIT_INFRASTRUCTURE,
         "infrastructure: cannot reach the example database redis://:***@127.0.0.1:"),
        # A URL that does not parse is the user's to fix: still a usage error.
        ("check", lambda: f"redis://user:{SECRET}@127.0.0.1:notaport/0", 2,
         "--database 'redis://user:***@127.0.0.1:notaport/0': the port is not a number"),
        ("fuzz", lambda: f"redis://:{SECRET}@127.0.0.1:1/x", 2,
         "--database 'redis://:***@127.0.0.1:1/x': expected redis://HOST:PORT[/DB]"),
    ],
    ids=["check-user", "check-no-user", "fuzz-user", "fuzz-no-user", "check-bad-port",
         "fuzz-bad-db"],
)  # fmt: skip
def test_a_database_unusable_at_the_start_is_one_line(
    command: str, database: Callable[[], str], exits: int, says: str,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    if command == "fuzz":
        pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")
    pytest.importorskip("redis", reason="redis is in the [fuzz] extra")
    report = tmp_path / "r.json"
    extra = ["--seconds", "5"] if command == "fuzz" else ["--report-json", str(report)]
    started = time.monotonic()
    status = main([command, "--database", database(), "--clause", "LRU-1", *extra])
    out, err = capsys.readouterr()
    assert status == exits, (out, err)
    assert err.splitlines() == [err.strip()] and err.startswith(f"sessionstate {command}: error: ")
    assert says in err, err
    assert SECRET not in out + err and "Traceback" not in out + err
    assert not report.exists()
    assert time.monotonic() - started < 120


# --- a run whose database breaks while it runs ----------------------------------------

#: The reference, but its manager factory waits, inside the first test that calls it (not
#: at the check's own call before the tests), until GO_FILE exists; it says it is waiting
#: by writing REACHED_FILE. A HypoFuzz worker is inside a test too (its counts folder).
GATED_SUBJECT = """
    import dataclasses
    import os
    import time
    from pathlib import Path

    from sessionstate.fixtures.reference_subject import subject as reference
    from sessionstate.reference import SessionStateManager


    def factory(**kwargs):
        go = Path(os.environ["GO_FILE"])
        in_a_test = "PYTEST_CURRENT_TEST" in os.environ or "SESSIONSTATE_FUZZ_COUNTS" in os.environ
        if in_a_test and not go.exists():
            Path(os.environ["REACHED_FILE"]).touch()
            while not go.exists():
                time.sleep(0.02)
        return SessionStateManager(**kwargs)


    subject = dataclasses.replace(reference, name="gated", manager_factory=factory)
"""


@dataclass(frozen=True)
class Outage:
    """A run (``check``/``fuzz``, xdist workers) on a database that breaks mid-run."""

    id: str
    command: str
    database: str  # redis | directory
    user: str | None = None
    workers: int = 0
    error: str = "ConnectionError: Error 111 connecting to 127.0.0.1:"


OUTAGES = [
    Outage("check-redis-stopped", "check", "redis", user="default"),
    Outage("check-redis-stopped-under-xdist", "check", "redis", user=None, workers=2),
    Outage("check-directory-replaced-by-a-file", "check", "directory",
           error="NotADirectoryError: the directory "),
    Outage("fuzz-redis-stopped", "fuzz", "redis", user="default", workers=1),
]  # fmt: skip


def _wait_for(path: Path, process: subprocess.Popen[str], bound: float) -> None:
    deadline = time.monotonic() + bound
    while not path.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the run ended (exit {process.returncode}) first:\n{out[-3000:]}{err}")
        assert time.monotonic() < deadline, f"no {path.name} within {bound} s"
        time.sleep(0.05)


def _group_of_child(pid: int) -> int | None:
    """The process group of ``pid``'s child in a group of its own (HypoFuzz's)."""
    psutil = pytest.importorskip("psutil", reason="psutil comes with HypoFuzz")
    for child in psutil.Process(pid).children():
        group = os.getpgid(child.pid)
        if group == child.pid:
            return group
    return None


def _alive_in_group(group: int) -> list[int]:
    import psutil

    alive = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == group and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


@pytest.mark.parametrize("case", OUTAGES, ids=lambda c: c.id)
def test_a_database_failing_mid_run_exits_4_in_one_line(
    case: Outage, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if case.command == "fuzz":
        pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")
    (tmp_path / "gated.py").write_text(textwrap.dedent(GATED_SUBJECT), encoding="utf-8")
    go, reached, report = tmp_path / "go", tmp_path / "reached", tmp_path / "r.json"
    server = None
    if case.database == "redis":
        # Only the Redis rows need (or skip without) a redis-server.
        server = request.getfixturevalue("redis_server")(password=SECRET)
        database, shown = server.url(case.user), redact(server.url(case.user))
    else:
        (tmp_path / "db").mkdir()
        database = shown = str(tmp_path / "db")
    # Not this run's pytest's: PYTEST_CURRENT_TEST would open the gate's check early, an
    # xdist worker's variables would make the run's own xdist controller think it a worker.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SESSIONSTATE_", "PYTEST_CURRENT_TEST", "PYTEST_XDIST_"))
    }
    env.pop("HYPOTHESIS_NO_PLUGINS", None)
    env.update(
        PYTHONPATH=str(tmp_path),
        GO_FILE=str(go),
        REACHED_FILE=str(reached),
        SESSIONSTATE_CALL_TIMEOUT="0",
    )  # the gate is ended by the test, not a deadline
    command = [sys.executable, "-m", "sessionstate", case.command, "gated:subject",
               "--database", database, "--clause", "LRU-1"]  # fmt: skip
    if case.command == "check":
        env["HYPOTHESIS_NO_PLUGINS"] = "1"  # HypoFuzz's plugin is for fuzz only
        command += ["--profile", "quick", "--report-json", str(report)]
        command += ["-n", str(case.workers)] if case.workers else []
    else:
        command += ["--seconds", "600", "-n", str(case.workers)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path, env=env)  # fmt: skip
    try:
        _wait_for(reached, process, 300)  # a test is running, the database was read
        group = _group_of_child(process.pid) if case.command == "fuzz" else None
        if server is not None:
            server.stop()
        else:
            shutil.rmtree(tmp_path / "db")
            (tmp_path / "db").write_text("not a database", encoding="utf-8")
        broken = time.monotonic()
        go.touch()
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert time.monotonic() - broken < 240
    assert process.returncode == EXIT_INFRASTRUCTURE, (process.returncode, out[-9000:], err)
    assert "Traceback" not in out + err
    [line] = err.strip().splitlines()
    assert line.startswith(
        f"sessionstate {case.command}: error: the example database {shown} failed during the run"
    ), line
    assert f": {case.error}" in line and "nothing is blamed on the subject" in line, line
    texts = [out, err]
    if case.command == "check":
        results = json.loads(report.read_text(encoding="utf-8"))
        texts.append(report.read_text(encoding="utf-8"))
        [fault] = results["infrastructure"]
        assert fault["database"] == shown and fault["error"].startswith(case.error), fault
        assert fault["count"] >= 1
        assert results["verdict"] == "incomplete"
        outcomes = {c["outcome"] for c in results["clauses"].values()}
        assert not outcomes & {"failed", "error"}, results["clauses"]
    else:
        assert f"database: {shown}" in out
        assert group is not None and _alive_in_group(group) == []
    assert all(SECRET not in text for text in texts)
    if case.database == "directory":  # what sat there is left as it was
        assert (tmp_path / "db").read_text(encoding="utf-8") == "not a database"
