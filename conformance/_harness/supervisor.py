"""``sessionstate check`` as a supervisor: the suite runs in a child process it can bound.

Nothing the subject does to its own process can take the verdict away: this process
imports neither torch, Hypothesis nor the subject. It starts the child
(``python -m sessionstate.conformance._harness.child``) in a process group of its own,
follows it through the run journal (``journal``, polled every ``POLL`` seconds), and
always ends with a verdict or one line saying why there is none:

- **A test past its bound** (``bounds``: per profile, ``SESSIONSTATE_TEST_TIMEOUT``) is
  cut off: the process running it is killed (an xdist worker alone, which xdist
  replaces; else the child's whole group) and the test is recorded as ``crashed``, its
  clauses unchecked, with the call in flight named from faulthandler's stack dump:
  ``cut off after 20 s in stats() (slow.py:7)``. Slowness proves no clause broken.
- **A process that dies in a test** (a segfault, ``os._exit``, the OOM killer) gets the
  test recorded the same way, naming the signal or the exit status.
- **Resume**: after the child died or was killed, a new child runs the tests that have
  no record yet (``--sessionstate-skip-ids``), at most ``MAX_ATTEMPTS`` children in all;
  the results are then computed here over every attempt's records and these
  (``results.results_json``), and written as the check writes them.
- **The whole run** is bounded (``bounds.run_bound``: per profile,
  ``SESSIONSTATE_RUN_TIMEOUT``): the child learns the deadline and gives each test a budget
  (``bounds.test_budget``), so slow tests stop for time with their call named; at the
  bound itself the child is killed, the tests then running are cut off, those not yet
  run are unchecked, and no further child starts. The verdict follows within
  ``bounds.REPORT_SECONDS``.
- **Processes and memory** (``census``: ``SESSIONSTATE_MAX_PROCESSES``,
  ``SESSIONSTATE_MAX_MEMORY_MB``): the child's process group is counted every ``POLL``
  seconds; past a cap the group is killed, the tests then running are unchecked, naming
  the cap and the call in flight, and no further child starts (it would do the same
  again). A fork by subject code never runs the suite twice (``forks``).
- **Start-up** (imports, hooks, collection) is bounded too (``bounds.startup_bound``); a
  child that ends before a verdict (``os._exit`` at import) is incomplete, exit 3,
  naming the phase. A usage error found in the child comes back as its one line, exit 2.
- **Exit**: once the child's results are written it gets ``EXIT_GRACE`` seconds to end
  (a thread the subject left running), then its group is killed.
- **Signals**: SIGINT, SIGTERM and SIGHUP are forwarded to the child's group as SIGINT
  (pytest then writes an interrupted run's results); after ``SIGNAL_GRACE`` seconds, or
  at a second signal, the group is killed. The reports are written either way (from the
  journal when the child could not), saying ``incomplete``, ``"interrupted": true`` and
  the signal, so no earlier report is left saying conformant; exit 128 + the signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

from sessionstate.conformance._harness import search
from sessionstate.conformance._harness.bounds import (
    RUN_RESERVE,
    RUN_TIMEOUT_ENV,
    TEST_TIMEOUT_ENV,
    run_bound,
    startup_bound,
    test_bound,
)
from sessionstate.conformance._harness.census import (
    MEMORY_ENV,
    PROCESSES_ENV,
    census,
    memory_cap,
    process_cap,
)
from sessionstate.conformance._harness.exit_policy import EXIT_INFRASTRUCTURE, EXIT_USAGE
from sessionstate.conformance._harness.frames import LIBRARIES, STDLIB_DIRS
from sessionstate.conformance._harness.journal import JournalReader
from sessionstate.conformance._harness.progress import GroupProgress
from sessionstate.conformance._harness.runner import CheckOptions, finish_check
from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance.subject import UsageError

__all__ = [
    "EXIT_GRACE",
    "MAX_ATTEMPTS",
    "POLL",
    "SIGNAL_GRACE",
    "NoAnswer",
    "supervise",
    "validate_in_child",
]

#: Seconds between two reads of the journal.
POLL = 0.5
#: Seconds the child gets to end once its results are written.
EXIT_GRACE = 10.0
#: Seconds the child gets to write an interrupted run's results after the first signal.
SIGNAL_GRACE = 15.0
#: Children started in one check, the first included; then what is left is unchecked.
MAX_ATTEMPTS = 10
_PYTEST_OK, _PYTEST_INTERRUPTED = 0, 2
_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def supervise(options: CheckOptions) -> int:
    """Run the check as ``options`` say, the suite in a child process; the exit status."""
    try:
        seconds = test_bound(options.profile, os.environ)
        run_seconds = run_bound(options.profile, os.environ)
        if options.run_seconds is not None:
            run_seconds = min(run_seconds or options.run_seconds, options.run_seconds)
        given = options.workers or ""
        workers = int(given) if given.isdigit() else os.cpu_count()
        caps = (process_cap(workers or 1, os.environ), memory_cap(os.environ))
    except UsageError as error:
        print(f"sessionstate check: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if {"--trace", "--pdb"} & set(options.pytest_args):
        seconds = run_seconds = None  # a person stepping through a test is not a hang
    with tempfile.TemporaryDirectory(prefix="sessionstate-check-") as scratch:
        run = _Run(options, seconds, Path(scratch), run_seconds=run_seconds, caps=caps)
        with run.handling_signals():
            return run.go()


class NoAnswer(Exception):
    """The child validating a request ended, or ran past the start-up bound, without an
    answer: the subject's code ended or hung its process (incomplete, not misuse)."""


def validate_in_child(options: CheckOptions) -> None:
    """``runner.validate`` in a child process, so that the subject's code (importing the
    target, calling its hooks) can neither end nor hang this one: ``UsageError`` with the
    check's one line, or ``NoAnswer`` naming how the child ended."""
    from sessionstate.conformance._harness.bounds import STARTUP_SECONDS

    with tempfile.TemporaryDirectory(prefix="sessionstate-validate-") as scratch:
        folder = Path(scratch)
        files = {
            name: folder / f"{name}.json" for name in ("spec", "usage", "infrastructure", "status")
        }
        files["journal"] = folder
        files["results"] = folder / "results.json"
        spec = {"options": asdict(options), "files": {k: str(v) for k, v in files.items()},
                "test_seconds": None, "skip_ids": None, "validate_only": True}  # fmt: skip
        files["spec"].write_text(json.dumps(spec), encoding="utf-8")
        process = spawn_child(files["spec"])
        try:
            code: int | None = process.wait(STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if files["infrastructure"].exists():
            from sessionstate.conformance._harness.database import InfrastructureError

            message = files["infrastructure"].read_text(encoding="utf-8")
            raise InfrastructureError(message, RuntimeError(message))
        if files["usage"].exists():
            raise UsageError(files["usage"].read_text(encoding="utf-8"))
        if not files["status"].exists():
            how = (
                f"ran over {STARTUP_SECONDS:g} s" if code is None else f"ended with {_status(code)}"
            )
            raise NoAnswer(
                f"the process importing the target and calling its hooks {how} before it "
                "answered (the subject's code?)"
            )


@dataclass
class _Child:
    """One attempt: the process and the files it hands back."""

    process: subprocess.Popen[bytes]
    files: dict[str, Path]
    started: float
    #: Why this process was killed here, if it was (a cut-off test, start-up, exit).
    killed: str = ""
    #: Whether a test started in it.
    tested: bool = False


@dataclass
class _Run:
    options: CheckOptions
    test_seconds: float | None
    scratch: Path
    #: The whole run's bound (``None``: unbounded), and whether it ran out.
    run_seconds: float | None = None
    ran_out: bool = False
    #: The most processes and resident bytes the child's group may hold (None: no cap), and
    #: why the run was stopped for them ("" while it was not); when it was last counted.
    caps: tuple[int | None, int | None] = (None, None)
    stopped_for: str = ""
    counted: float = 0.0
    started: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)
    #: Every conformance test collected, with its clauses (all attempts).
    collected: dict[str, list[str]] = field(default_factory=dict)
    #: The records the journal holds (the processes running the tests wrote them).
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Records made here: tests cut off, or during which their process died.
    own: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Tests an xdist controller saw a worker die in: node id -> its message.
    crashes: dict[str, str] = field(default_factory=dict)
    #: (pid, node id) of each test started and not yet ended -> when it was first seen.
    running: dict[tuple[int, str], float] = field(default_factory=dict)
    #: Node id -> the process that started it last.
    started_by: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] | None = None
    phase: str = "starting"
    signals: list[int] = field(default_factory=list)
    signal_deadline: float | None = None
    child: _Child | None = None
    attempts: int = 0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.journal = self.scratch / "journal"
        self.journal.mkdir()
        self.reader = JournalReader(self.journal)
        self.progress = GroupProgress(sys.stdout)

    # -- the attempts ---------------------------------------------------------------

    def go(self) -> int:
        """Run attempts until one ends the session or nothing is left to run; report."""
        last: _Child | None = None
        while not self.signals:
            skip = set(self.records) | set(self.own)
            if last is not None and not (set(self.collected) - skip):
                break  # every collected test has its record
            last = self._start(skip)
            self._watch(last)
            if self.ran_out or self.stopped_for:
                break  # the run's bound, or a cap: what is left is unchecked
            if last.files["usage"].exists():
                message = last.files["usage"].read_text(encoding="utf-8")
                print(f"sessionstate check: error: {message}", file=sys.stderr)
                return EXIT_USAGE
            if last.files["infrastructure"].exists():
                message = last.files["infrastructure"].read_text(encoding="utf-8")
                print(f"sessionstate check: error: {message}", file=sys.stderr)
                return EXIT_INFRASTRUCTURE
            if last.files["status"].exists() or self.signals:
                break
            self._process_died(last)
            if not last.tested and not last.killed.startswith("cut off"):
                break  # it died before any test: another attempt would do the same
            if self.attempts >= MAX_ATTEMPTS:
                self.notes.append(f"gave up after {MAX_ATTEMPTS} processes; the rest is unchecked")
                break
        return self._report(last)

    def _start(self, skip: set[str]) -> _Child:
        self.attempts += 1
        n = self.attempts
        files = {
            name: self.scratch / f"{name}.{n}.json"
            for name in ("spec", "usage", "infrastructure", "results", "status", "skip")
        }
        files["journal"] = self.journal
        spec = {
            "options": asdict(self.options),
            "files": {k: str(v) for k, v in files.items()},
            "test_seconds": self.test_seconds,
            "run_deadline": self._child_deadline(),
            "run_seconds": self.run_seconds,
            "skip_ids": str(files["skip"]) if skip else None,
        }
        if skip:
            files["skip"].write_text(json.dumps(sorted(skip)), encoding="utf-8")
        files["spec"].write_text(json.dumps(spec), encoding="utf-8")
        process = spawn_child(files["spec"])
        self.child = _Child(process, files, time.monotonic())
        return self.child

    def _child_deadline(self) -> float | None:
        """When (``time.time()``) the child's tests are to have stopped: the run's bound,
        less ``RUN_RESERVE`` of it, so a test stops for time before it is cut off."""
        if self.run_seconds is None:
            return None
        reserve = min(max(self.run_seconds * RUN_RESERVE, 3.0), self.run_seconds / 4)
        return self.started_wall + self.run_seconds - reserve

    def _watch(self, child: _Child) -> None:
        """Follow ``child`` until it ends, killing it where a bound says so."""
        startup = startup_bound(self.test_seconds)
        results_at: float | None = None
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.process.wait(POLL)
            self._read_journal(child)
            if child.process.returncode is not None:
                break
            now = time.monotonic()
            if self.signal_deadline is not None and now >= self.signal_deadline:
                self._kill(child, "interrupted")
                continue
            if child.files["status"].exists():
                results_at = results_at or now
                if now - results_at >= EXIT_GRACE:
                    self.notes.append(
                        f"the child process did not exit within {EXIT_GRACE:g} s of writing its "
                        "results (a thread the subject left running?): killed it"
                    )
                    self._kill(child, "exit")
                continue
            if self.run_seconds is not None and now - self.started > self.run_seconds:
                self._run_out(child)
                continue
            if now - self.counted >= POLL and self._past_a_cap(child, now):
                continue
            if not child.tested and startup is not None and now - child.started > startup:
                self._kill(child, f"start-up took over {startup:g} s")
                continue
            for pid, nodeid in list(self.running):
                if _fatal_error(self.journal / f"{pid}.fatal"):  # it is dying: say so now
                    self._crashed(pid, nodeid, None)
                    if self.options.workers and pid != child.process.pid:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
            if self.test_seconds is not None:
                for (pid, nodeid), seen in list(self.running.items()):
                    if now - seen > self.test_seconds:
                        self._cut_off(child, pid, nodeid)
        self._read_journal(child)

    def _read_journal(self, child: _Child) -> None:
        now = time.monotonic()
        crashes: list[str] = []
        for pid, event in self.reader.poll():
            kind = event.get("e")
            if kind == "phase":
                self.phase = str(event.get("phase"))
            elif kind == "collected":
                self.collected.update(event.get("tests") or {})
            elif kind == "facts":
                self.facts = self.facts or event.get("facts")
            elif kind == "start":
                child.tested = True
                self.running[(pid, str(event["nodeid"]))] = now
                self.started_by[str(event["nodeid"])] = pid
            elif kind == "record":
                record = event["record"]
                self.running.pop((pid, record["nodeid"]), None)
                if record["nodeid"] not in self.own:
                    self.records[record["nodeid"]] = record
            elif kind == "crash":
                crashes.append(str(event["nodeid"]))
                self.crashes[crashes[-1]] = str(event.get("message", ""))
        for nodeid in crashes:  # after the starts read with them, from the workers' files
            pid = self.started_by.get(nodeid, 0)
            self._crashed(pid, nodeid, None, xdist=self.crashes[nodeid])
        if not self.options.reproduce:
            self.progress.update(self.collected, [*self.records.values(), *self.own.values()])

    def _cut_off(self, child: _Child, pid: int, nodeid: str) -> None:
        """``nodeid`` ran past its bound in process ``pid``: record it, kill the process."""
        seconds = self.test_seconds or 0
        call = _call_in_flight(self.journal / f"{pid}.stack")
        message = f"cut off after {seconds:g} s{call} ({TEST_TIMEOUT_ENV} or the profile's bound)"
        self._record(nodeid, message, seconds)
        self.running.pop((pid, nodeid), None)
        if self.options.workers and pid != child.process.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # xdist reports the crash and starts another
        else:
            self._kill(child, f"cut off {nodeid}")

    def _run_out(self, child: _Child) -> None:
        """The run's bound ran out: cut off every test running, end the child."""
        self.ran_out = True
        seconds = self.run_seconds or 0
        now = time.monotonic()
        for (pid, nodeid), seen in list(self.running.items()):
            call = _call_in_flight(self.journal / f"{pid}.stack")
            message = (
                f"cut off: the run's bound of {seconds:g} s ran out{call} "
                f"({RUN_TIMEOUT_ENV} or the profile's bound)"
            )
            self._record(nodeid, message, round(now - seen, 2))
            self.running.pop((pid, nodeid), None)
        self._kill(child, f"the run's bound of {seconds:g} s ran out")
        self.notes.append(
            f"the run's bound of {seconds:g} s ({RUN_TIMEOUT_ENV} or the profile's) ran out "
            f"{'during start-up' if not child.tested else ''}".rstrip()
            + ": the tests not run are unchecked"
        )

    def _past_a_cap(self, child: _Child, now: float) -> bool:
        """Count the child's group (``census``); past a cap, stop the run: the tests running
        are recorded naming the cap and the call in flight, the group is killed."""
        self.counted = now
        found = census(child.process.pid)
        processes, memory = self.caps
        if found is None:
            return False
        if processes is not None and found.processes > processes:
            why = f"{found.processes} processes, past the cap of {processes} ({PROCESSES_ENV})"
        elif memory is not None and found.resident > memory:
            why = (
                f"{found.resident / 2**20:,.0f} MiB resident, past the cap of "
                f"{memory / 2**20:,.0f} MiB ({MEMORY_ENV})"
            )
        else:
            return False
        self.stopped_for = why
        calls = _calls_now(self.journal, [pid for pid, _ in self.running])
        for (pid, nodeid), seen in list(self.running.items()):
            message = f"stopped: the subject's code started {why}{calls.get(pid, '')}"
            self._record(nodeid, message, round(now - seen, 2))
            self.running.pop((pid, nodeid), None)
        self._kill(child, f"stopped: {why}")
        self.notes.append(
            f"the run was stopped: the subject's code started {why}; the tests not run are "
            "unchecked"
        )
        return True

    def _process_died(self, child: _Child) -> None:
        """The child ended without its results: record the tests it was running."""
        code = child.process.returncode
        for pid, nodeid in list(self.running):
            self._crashed(pid, nodeid, code if pid == child.process.pid else None)
        if not child.tested and not child.killed:
            self.notes.append(
                f"the process ended with {_status(code)} before a verdict, while {self.phase}"
                + (" (the subject's code exited it?)" if code is not None and code >= 0 else "")
            )
        elif child.killed.startswith(("start-up", "the run's bound")) and not child.tested:
            pass  # said by _run_out
        elif child.killed.startswith("start-up"):
            self.notes.append(f"{child.killed} ({self.phase}): killed it")

    def _crashed(self, pid: int, nodeid: str, code: int | None, xdist: str = "") -> None:
        """The process ``pid`` ended while it ran ``nodeid``."""
        self.running.pop((pid, nodeid), None)
        if nodeid in self.own:
            return
        fatal = _fatal_error(self.journal / f"{pid}.fatal")
        if fatal:
            message = f"the process died with {fatal}"
        elif code is not None and code < 0:
            message = f"the process died with {_signal_name(-code)}"
        elif code is not None:
            message = (
                f"the subject's code exited the process with status {code} (sys.exit/os._exit)"
            )
        else:
            message = "the process running it ended without a result"
        if xdist:
            message += f" ({xdist})"
        self._record(nodeid, message)

    def _record(self, nodeid: str, message: str, seconds: float = 0.0) -> None:
        self.own[nodeid] = {
            "nodeid": nodeid,
            "clauses": list(self.collected.get(nodeid, [])),
            "outcome": "crashed",
            "failed_clauses": [],
            "message": message,
            "seconds": seconds,
            "reproduce": "",
        }
        self.records.pop(nodeid, None)

    def _kill(self, child: _Child, why: str) -> None:
        child.killed = child.killed or why
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)
        child.process.wait()

    # -- signals --------------------------------------------------------------------

    @contextlib.contextmanager
    def handling_signals(self) -> Iterator[None]:
        """SIGINT, SIGTERM, SIGHUP: see the module's docstring; the old handlers after."""
        previous = {signum: signal.signal(signum, self._on_signal) for signum in _SIGNALS}
        try:
            yield
        finally:
            if self.child is not None and self.child.process.poll() is None:
                self._kill(self.child, "the check ended")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.child is not None:  # whatever the child left in its group
                    os.killpg(self.child.process.pid, signal.SIGKILL)
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        now = time.monotonic()
        if len(self.signals) > 1:
            self.signal_deadline = now  # a second signal: stop waiting
            return
        self.signal_deadline = now + SIGNAL_GRACE
        if self.child is not None and self.child.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.child.process.pid, signal.SIGINT)

    # -- the results ----------------------------------------------------------------

    def _report(self, last: _Child | None) -> int:
        """Hand the results to the check's own reporting: the child's, when one child ran
        and ended as it should; else those computed here from every attempt."""
        signum = self.signals[0] if self.signals else None
        text = None
        status = _PYTEST_INTERRUPTED if signum else _PYTEST_OK
        if last is not None and last.files["results"].exists():
            text = last.files["results"].read_text(encoding="utf-8")
        if last is not None and last.files["status"].exists():
            status = json.loads(last.files["status"].read_text(encoding="utf-8"))["pytest"]
        for note in self.notes:
            print(f"sessionstate check: {note}", file=sys.stderr)
        for record in self.own.values():
            print(f"sessionstate check: {short_id(record['nodeid'])}: {record['message']}",
                  file=sys.stderr)  # fmt: skip
        finished = last is not None and last.files["status"].exists()
        finished = finished and last is not None and last.killed in ("", "exit")
        if finished and self.attempts == 1 and not self.own and not self.crashes:
            # The child ran the session to its end: its results are the run's, or its
            # pytest status says why there are none (--collect-only, nothing selected).
            if text is not None and signum:
                text = _with_signal(text, signum)
            return finish_check(self.options, status, text, signum)
        if signum and not self.collected and (last is None or not last.tested):
            return finish_check(self.options, _PYTEST_INTERRUPTED, None, signum)
        previous = json.loads(text) if text else None
        results = self._merged(previous, signum)
        self._write_junit(results)
        text = json.dumps(results, indent=2) + "\n"
        status = _PYTEST_INTERRUPTED if signum else _PYTEST_OK
        return finish_check(self.options, status, text, signum)

    def _lost(self) -> list[str]:
        """Collected tests with no record (neither the journal's nor one made here)."""
        return [n for n in self.collected if n not in self.records and n not in self.own]

    def _merged(self, previous: dict[str, Any] | None, signum: int | None) -> dict[str, Any]:
        from sessionstate import __version__
        from sessionstate.conformance._harness.expectations import parse_expectations
        from sessionstate.conformance._harness.results import results_json

        options = self.options
        lost = self._lost()
        if not self.collected:
            unfinished: list[str] | None = None
            why = f"the run ended before its tests were collected ({self.phase})"
            if self.stopped_for:
                why += f": the subject's code started {self.stopped_for}"
        else:
            unfinished = sorted({c for n in lost for c in self.collected[n]})
            why = f"{len(lost)} test(s) did not run" + (
                f", e.g. {short_id(lost[0])}" if lost else ""
            )
            if self.ran_out:
                why = (
                    f"the run's bound of {self.run_seconds:g} s ({RUN_TIMEOUT_ENV} or the "
                    f"profile's) ran out before {len(lost)} test(s) ran"
                    + (f", e.g. {short_id(lost[0])}" if lost else "")
                )
            if self.stopped_for:
                why = (
                    f"the run was stopped before {len(lost)} test(s) ran: the subject's code "
                    f"started {self.stopped_for}"
                )
            if signum:
                why = "interrupted before all its tests ran"
        # Hypothesis is imported only for a run given a database.
        database = search.run_database(options.profile, options.database)
        run = {
            "target": options.target,
            "suite_version": __version__,
            "profile": options.profile,
            "seed": options.run_seed(),
            "randomized": search.is_randomized(options.profile, options.run_seed()),
            "database": database,
            "expectations": options.expectations,
            "seconds": round(time.monotonic() - self.started, 2),
            "test_timeout": self.test_seconds,
            "run_timeout": self.run_seconds,
            "stopped": "interrupted" if signum else None,
            "interrupted": bool(signum),
            "tests_collected": len(self.collected) or None,
            "unfinished": unfinished,
            "unfinished_why": why,
            "reproduce": options.reproduce,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        records = [*self.records.values(), *self.own.values()]
        expectations = parse_expectations(options.expectations) if options.expectations else []
        facts = self.facts or previous or _light_facts(options.target)
        results = results_json(
            records, expectations, self._selected(), strict=options.strict, facts=facts, run=run
        )
        if signum:
            results["signal"] = _signal_name(signum)
        return results

    def _selected(self) -> list[str]:
        """The clauses the run was asked about, as the plugin selects them."""
        from sessionstate.conformance.clauses import all_clauses

        known = all_clauses()
        if self.options.reproduce:
            ran = {c for clauses in self.collected.values() for c in clauses}
            return [cid for cid in known if cid in ran]
        wanted = self.options.clauses
        return [c for c in known if not wanted or c in wanted or known[c].group in wanted]

    def _write_junit(self, results: dict[str, Any]) -> None:
        if self.options.junitxml:
            from sessionstate.conformance._harness.atomic import write_text_atomic
            from sessionstate.conformance._report.junit import to_junit_xml

            write_text_atomic(self.options.junitxml, to_junit_xml(results))


# -- helpers ------------------------------------------------------------------------


def _spawn(spec: Path) -> subprocess.Popen[bytes]:
    """``python -m`` the child entry on ``spec``, in a session (process group) of its own."""
    return subprocess.Popen([*_child_command(), str(spec)], start_new_session=True)


#: How a child process is started: ``_spawn`` (a fresh interpreter). Only the project's
#: own tests replace it, with a fork of an interpreter that has imported torch, pytest and
#: Hypothesis already (tests/zoo/forkserver.py): the child then runs the same ``child.main``
#: on the same spec, minus the imports. What it returns needs ``pid``, ``returncode``,
#: ``poll()`` and ``wait(timeout)`` as ``subprocess.Popen`` has them.
spawn_child: Callable[[Path], subprocess.Popen[bytes]] = _spawn


def _child_command() -> list[str]:
    """``python -m`` the child entry; with ``-P`` where Python has it (3.11+), so the
    current directory is not put first on ``sys.path`` by ``-m`` (``load_subject`` puts
    it there, as in one process) and the child sees the modules this process would."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe_path, "-m", "sessionstate.conformance._harness.child"]


def _with_signal(text: str, signum: int) -> str:
    results = json.loads(text)
    results["signal"] = _signal_name(signum)
    return json.dumps(results, indent=2) + "\n"


def _light_facts(target: str) -> dict[str, Any]:
    """Facts for results no process of the run could gather: versions from the installed
    distributions' metadata (importing none of them), no device, no capability."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return {
        "subject": target,
        "capabilities": [],
        "environment": {
            **{name: installed(name) for name in ("torch", "numpy", "hypothesis")},
            "devices": [],
            "devices_left_out": [],
        },
    }


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _status(code: int | None) -> str:
    if code is None:
        return "an unknown status"
    return _signal_name(-code) if code < 0 else f"status {code}"


_FATAL = re.compile(r"Fatal Python error: (.+)")
_FATAL_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Aborted": "SIGABRT",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


def _fatal_error(path: Path) -> str:
    """From faulthandler's report in ``path``: ``SIGSEGV in stats() (mod.py:5)``, or ``""``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    found = list(_FATAL.finditer(text))
    if not found:
        return ""
    what = found[-1].group(1).strip()
    call = _call_from_dump(text[found[-1].start() :])
    return f"{_FATAL_SIGNALS.get(what, what)}{call}"


def _calls_now(journal: Path, pids: list[int]) -> dict[int, str]:
    """The call in flight in each of ``pids``, from the stack faulthandler dumps there on
    ``SIGUSR2`` (``recording``) into ``<pid>.stack``; ``""`` where none came in time."""
    if not hasattr(signal, "SIGUSR2"):
        return {}
    sizes: dict[int, int] = {}
    for pid in pids:
        path = journal / f"{pid}.stack"
        sizes[pid] = path.stat().st_size if path.exists() else 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR2)
    time.sleep(0.3)  # faulthandler writes from the signal handler, at once
    found: dict[int, str] = {}
    for pid, size in sizes.items():
        try:
            with (journal / f"{pid}.stack").open(encoding="utf-8", errors="replace") as dump:
                dump.seek(size)
                found[pid] = _call_from_dump(dump.read())
        except OSError:
            found[pid] = ""
    return found


def _call_in_flight(path: Path) -> str:
    """`` in stats() (mod.py:5)`` from the last stack dump in ``path`` (``""``: none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    at = text.rfind("Timeout (")
    return _call_from_dump(text[at:]) if at >= 0 else ""


_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>\S+)')
_CONFORMANCE = str(Path(__file__).resolve().parent.parent) + os.sep


def _kind(filename: str) -> str:
    """``suite``, ``neutral`` or ``subject``: the watchdog's rule, from a file name alone."""
    if filename.startswith("<"):
        return "neutral"  # exec'd or generated code: its caller names the call
    path = os.path.abspath(filename)
    if path.startswith(_CONFORMANCE):
        return "suite"
    parts = path.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            after = parts[parts.index(marker) + 1 :]
            name = after[0].removesuffix(".py") if after else ""
            return "neutral" if name in LIBRARIES else "subject"
    if path.startswith(STDLIB_DIRS):
        return "neutral"
    return "subject"


def _is_probe(frames: list[tuple[str, str, str]]) -> bool:
    """Whether these frames are the watchdog's probe thread (``watchdog._Probe``): the
    suite's own code, waiting, never the call in flight."""
    return any(f == "_serve" and Path(p).name == "watchdog.py" for p, _, f in frames)


def _call_from_dump(text: str) -> str:
    """`` in CALL() (FILE:LINE)``: in the thread running suite code, the outermost
    subject frame the suite called (the call in flight) and the innermost subject frame
    (where it was); the innermost frame when no subject frame is on the stack."""
    threads: list[list[tuple[str, str, str]]] = []
    for line in text.splitlines():
        if "most recent call first" in line:
            threads.append([])
            continue
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].append((match["file"], match["line"], match["func"]))
    threads = [frames for frames in threads if frames and not _is_probe(frames)]
    if not threads:
        return ""
    chosen = next((f for f in threads if any(_kind(p) == "suite" for p, _, _ in f)), threads[0])
    outermost_first = chosen[::-1]
    suite_at = max((i for i, (p, _, _) in enumerate(outermost_first) if _kind(p) == "suite"),
                   default=-1)  # fmt: skip
    subject = [f for f in outermost_first[suite_at + 1 :] if _kind(f[0]) == "subject"]
    if not subject:
        path, line, func = chosen[0]
        return f" in {func} ({Path(path).name}:{line})"
    call, inner = subject[0], subject[-1]
    return f" in {call[2]}() ({Path(inner[0]).name}:{inner[1]})"
