"""``sessionstate check`` as a supervisor: the suite runs in a child process it can bound.

Nothing the subject does to its own process can take the verdict away: this process
imports neither torch, Hypothesis nor the subject. It starts the child (``spawn``, which
runs ``child``) in a process group of its own, follows it through the run journal
(``journal``, read into the ``ledger`` every ``POLL`` seconds), and always ends with a
verdict or one line saying why there is none. What it bounds, and how (a test past its
bound is cut off, a dead process's test recorded, the run resumed in a new child at most
``MAX_ATTEMPTS`` times, the run's bound, the caps on processes and memory, start-up,
``EXIT_GRACE`` after the results, signals forwarded with ``SIGNAL_GRACE``): the package's
docstring, ``sessionstate.conformance._harness.supervision``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

from sessionstate.conformance._harness.exit_policy import EXIT_INFRASTRUCTURE, EXIT_USAGE
from sessionstate.conformance._harness.progress import GroupProgress
from sessionstate.conformance._harness.runner import CheckOptions, finish_check
from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance._harness.supervision import spawn
from sessionstate.conformance._harness.supervision.bounds import (
    RUN_RESERVE,
    RUN_TIMEOUT_ENV,
    TEST_TIMEOUT_ENV,
    run_bound,
    startup_bound,
    test_bound,
)
from sessionstate.conformance._harness.supervision.census import (
    census,
    memory_cap,
    past_a_cap,
    process_cap,
)
from sessionstate.conformance._harness.supervision.journal import JournalReader
from sessionstate.conformance._harness.supervision.ledger import Ledger, with_signal, write_junit
from sessionstate.conformance._harness.supervision.stack_dumps import (
    call_in_flight,
    calls_now,
    fatal_error,
)
from sessionstate.conformance.subject import UsageError

__all__ = [
    "EXIT_GRACE",
    "MAX_ATTEMPTS",
    "POLL",
    "SIGNAL_GRACE",
    "supervise",
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
    signals: list[int] = field(default_factory=list)
    signal_deadline: float | None = None
    child: _Child | None = None
    attempts: int = 0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.journal = self.scratch / "journal"
        self.journal.mkdir()
        self.reader = JournalReader(self.journal)
        self.ledger = Ledger(self.journal)
        self.progress = GroupProgress(sys.stdout)

    # -- the attempts ---------------------------------------------------------------

    def go(self) -> int:
        """Run attempts until one ends the session or nothing is left to run; report."""
        last: _Child | None = None
        while not self.signals:
            skip = self.ledger.done()
            if last is not None and not (set(self.ledger.collected) - skip):
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
        process = spawn.spawn_child(files["spec"])
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
            for pid, nodeid in list(self.ledger.running):
                if fatal_error(self.journal / f"{pid}.fatal"):  # it is dying: say so now
                    self.ledger.crashed(pid, nodeid, None)
                    if self.options.workers and pid != child.process.pid:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
            if self.test_seconds is not None:
                for (pid, nodeid), seen in list(self.ledger.running.items()):
                    if now - seen > self.test_seconds:
                        self._cut_off(child, pid, nodeid)
        self._read_journal(child)

    def _read_journal(self, child: _Child) -> None:
        if self.ledger.read(self.reader.poll()):
            child.tested = True
        if not self.options.reproduce:
            self.progress.update(self.ledger.collected, self.ledger.all_records())

    def _cut_off(self, child: _Child, pid: int, nodeid: str) -> None:
        """``nodeid`` ran past its bound in process ``pid``: record it, kill the process."""
        seconds = self.test_seconds or 0
        call = call_in_flight(self.journal / f"{pid}.stack")
        message = f"cut off after {seconds:g} s{call} ({TEST_TIMEOUT_ENV} or the profile's bound)"
        self.ledger.record(nodeid, message, seconds)
        self.ledger.running.pop((pid, nodeid), None)
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
        for (pid, nodeid), seen in list(self.ledger.running.items()):
            call = call_in_flight(self.journal / f"{pid}.stack")
            message = (
                f"cut off: the run's bound of {seconds:g} s ran out{call} "
                f"({RUN_TIMEOUT_ENV} or the profile's bound)"
            )
            self.ledger.record(nodeid, message, round(now - seen, 2))
            self.ledger.running.pop((pid, nodeid), None)
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
        why = past_a_cap(census(child.process.pid), self.caps)
        if not why:
            return False
        self.stopped_for = why
        calls = calls_now(self.journal, [pid for pid, _ in self.ledger.running])
        for (pid, nodeid), seen in list(self.ledger.running.items()):
            message = f"stopped: the subject's code started {why}{calls.get(pid, '')}"
            self.ledger.record(nodeid, message, round(now - seen, 2))
            self.ledger.running.pop((pid, nodeid), None)
        self._kill(child, f"stopped: {why}")
        self.notes.append(
            f"the run was stopped: the subject's code started {why}; the tests not run are "
            "unchecked"
        )
        return True

    def _process_died(self, child: _Child) -> None:
        """The child ended without its results: record the tests it was running."""
        code = child.process.returncode
        for pid, nodeid in list(self.ledger.running):
            self.ledger.crashed(pid, nodeid, code if pid == child.process.pid else None)
        if not child.tested and not child.killed:
            self.notes.append(
                f"the process ended with {spawn.status(code)} before a verdict, while {self.ledger.phase}"
                + (" (the subject's code exited it?)" if code is not None and code >= 0 else "")
            )
        elif child.killed.startswith(("start-up", "the run's bound")) and not child.tested:
            pass  # said by _run_out
        elif child.killed.startswith("start-up"):
            self.notes.append(f"{child.killed} ({self.ledger.phase}): killed it")

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
        for record in self.ledger.own.values():
            print(f"sessionstate check: {short_id(record['nodeid'])}: {record['message']}",
                  file=sys.stderr)  # fmt: skip
        finished = last is not None and last.files["status"].exists()
        finished = finished and last is not None and last.killed in ("", "exit")
        if finished and self.attempts == 1 and not self.ledger.own and not self.ledger.crashes:
            # The child ran the session to its end: its results are the run's, or its
            # pytest status says why there are none (--collect-only, nothing selected).
            if text is not None and signum:
                text = with_signal(text, signum)
            return finish_check(self.options, status, text, signum)
        if signum and not self.ledger.collected and (last is None or not last.tested):
            return finish_check(self.options, _PYTEST_INTERRUPTED, None, signum)
        previous = json.loads(text) if text else None
        results = self.ledger.merged(
            self.options, previous, signum, seconds=time.monotonic() - self.started,
            bounds=(self.test_seconds, self.run_seconds), ran_out=self.ran_out,
            stopped_for=self.stopped_for,
        )  # fmt: skip
        write_junit(self.options, results)
        text = json.dumps(results, indent=2) + "\n"
        status = _PYTEST_INTERRUPTED if signum else _PYTEST_OK
        return finish_check(self.options, status, text, signum)
