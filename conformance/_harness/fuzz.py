"""``sessionstate fuzz``: the suite's properties under HypoFuzz, for a time or until a failure.

The fuzzing is HypoFuzz's (``hypothesis fuzz``, the ``[fuzz]`` extra): this module starts
it on the suite against a subject, watches the example database it writes, shows progress
on one line, and stops it when the time is up or a failure was found. A failure is then
reported exactly as ``sessionstate check`` reports it, by ``sessionstate check --database``
on the same database: Hypothesis' reuse phase replays the failure HypoFuzz stored and
shrank, so the clause table and the shrunk program are the check's own.

Exit status, by the check's one policy (``exit_policy``): 0 nothing found (the examples run
are listed per clause group), or only a SHOULD clause failed (a warning unless ``strict``);
1 a clause failed (the check's table follows); 2 misuse (one line: a bad target, clause, database,
``--seconds``, or the ``[fuzz]`` extra missing); 3 incomplete: no example ran (the time
was up before HypoFuzz's workers started one); 4 infrastructure (one line): the example
database cannot be reached, or failed while HypoFuzz ran (HypoFuzz is then stopped, and
nothing is blamed on the subject); 130 interrupted (143 by SIGTERM, 129 by SIGHUP,
handled as Ctrl-C). A database URL is printed with its password redacted
(``database.redact``). HypoFuzz runs in a process group of its own, which is
stopped on every way out, and killed by a reaper process (``_Reaper``) when this one is
killed outright (SIGKILL).

What counts as an example: one run of a property's body on one input, in any of HypoFuzz's
worker processes (generated, mutated, replayed from its corpus, or tried while shrinking).
Each worker counts its own through a Hypothesis observability callback (``fuzz_worker``)
and writes the counts to a file of the run's; the figures are as of the last write, at
most half a second before the workers stop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sessionstate.conformance._harness.exit_policy import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    EXIT_USAGE,
)
from sessionstate.conformance._harness.fuzz_worker import COUNTS_ENV
from sessionstate.conformance.subject import DEFAULT_TARGET, UsageError

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

__all__ = [
    "FuzzOptions", "fuzz_arguments", "quick_pass", "run_fuzz",
    "usable_cores",
]  # fmt: skip

#: Set by ``sessionstate fuzz`` for HypoFuzz's workers: the folder their counts go to.
DEFAULT_SECONDS = 600
#: Seconds between two looks at the database, and between two progress lines when the
#: output is not a terminal.
_POLL, _PLAIN_EVERY = 1.0, 15.0
#: Seconds over which the progress line's examples per second are taken.
_WINDOW = 10.0
#: Seconds HypoFuzz gets to stop on SIGINT before it is killed.
_GRACE = 10.0


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where the
    platform has none): the default number of fuzzing processes."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class FuzzOptions:
    target: str = DEFAULT_TARGET
    #: The whole run's time: the quick pass (``quick_pass``), then HypoFuzz for what is left.
    seconds: float = DEFAULT_SECONDS
    workers: int = field(default_factory=usable_cores)
    #: A directory or ``redis://HOST:PORT[/DB]``; None: ``profiles.default_fuzz_database()``
    #: of the target, one per subject.
    database: str | None = None
    clauses: list[str] = field(default_factory=list)
    dashboard: bool = False
    port: int = 9999
    pytest_args: list[str] = field(default_factory=list)
    #: As ``check --strict``: a SHOULD clause's failure fails the replay too.
    strict: bool = False
    #: Run every selected test once at the quick profile first (``quick_pass``).
    quick_pass: bool = True


def validate(options: FuzzOptions) -> str:
    """``UsageError`` for anything wrong with the request; the database's name otherwise
    (made now if it is a directory that does not exist yet)."""
    from sessionstate.conformance._harness.database import EXTRA_HINT, open_database
    from sessionstate.conformance._harness.profiles import default_fuzz_database
    from sessionstate.conformance._harness.runner import CheckOptions
    from sessionstate.conformance._harness.supervision.validation import validate_in_child

    if not (options.seconds > 0 and options.seconds != float("inf")):  # nan fails both
        raise UsageError(f"--seconds {options.seconds:g}: give a finite number of seconds above 0")
    if options.workers < 1:
        raise UsageError(f"-n {options.workers}: give a number of processes of 1 or more")
    if not 0 <= options.port <= 65535:
        raise UsageError(f"--port {options.port}: not a port number")
    try:
        import hypofuzz  # noqa: F401
    except ImportError:
        raise UsageError(f"fuzzing needs HypoFuzz, which is not installed: {EXTRA_HINT}") from None
    # In a child process: the subject's code must not end or hang this one.
    validate_in_child(CheckOptions(target=options.target, clauses=list(options.clauses)))
    spec = options.database or str(default_fuzz_database(options.target))
    open_database(spec, create=True)
    return spec


def fuzz_arguments(options: FuzzOptions, database: str) -> list[str]:
    """``hypothesis fuzz``'s arguments: its own, then the pytest arguments of the suite."""
    own = ["fuzz", "-n", str(options.workers)]
    own += ["--dashboard", "--port", str(options.port)] if options.dashboard else ["--no-dashboard"]
    from sessionstate.conformance._harness.database import suite_rootdir
    from sessionstate.conformance._harness.options import flag
    from sessionstate.conformance._harness.runner import suite_arguments

    pytest_args = [
        *suite_arguments(options.target, "fuzz", options.clauses),
        "--rootdir", suite_rootdir(),
        flag("database"), database,
    ]  # fmt: skip
    return [*own, "--", *pytest_args, *options.pytest_args]


def run_fuzz(options: FuzzOptions) -> int:
    """Fuzz as ``options`` say; report; return the exit status."""
    from sessionstate.conformance._harness.database import (
        InfrastructureError,
        describe,
        open_database,
        redact,
    )
    from sessionstate.conformance._harness.supervision.validation import NoAnswer

    try:
        spec = validate(options)
    except InfrastructureError as error:
        print(f"sessionstate fuzz: error: {error}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    except UsageError as error:
        print(f"sessionstate fuzz: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except NoAnswer as error:
        print(f"sessionstate fuzz: incomplete: {error}", file=sys.stderr)
        return EXIT_INCOMPLETE

    database = open_database(spec, create=True)
    selection = ", ".join(options.clauses) or "every clause"
    after = " after a quick pass" if options.quick_pass else ""
    print(f"sessionstate fuzz: {options.target}, {selection}, {options.workers} process(es), "
          f"{options.seconds:g} s of fuzzing{after}")  # fmt: skip
    print(f"  database: {describe(spec)}")
    if options.dashboard:
        print(f"  dashboard: http://localhost:{options.port}/")
    begun = time.monotonic()
    skipped: set[str] = set()  # groups the quick pass found not applicable
    if options.quick_pass:
        status, skipped = quick_pass(options, spec)
        if status is not None:
            return status
        # --seconds bounds the whole run: HypoFuzz gets what the quick pass left.
        left = options.seconds - (time.monotonic() - begun)
        if left < 1:
            print(f"sessionstate fuzz: the quick pass found nothing and took the {options.seconds:g} "
                  "s of --seconds: no time was left to fuzz (give more --seconds)")  # fmt: skip
            return EXIT_OK
        options = dataclasses.replace(options, seconds=left)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="sessionstate-fuzz-") as scratch:
        counts_dir = Path(scratch) / "counts"
        counts_dir.mkdir()
        log_path = Path(scratch) / "hypofuzz.log"
        with log_path.open("w+", encoding="utf-8", errors="replace") as log:
            try:
                with _signals_as_interrupts():
                    outcome = _fuzz(options, spec, database, counts_dir, log, started)
            except KeyboardInterrupt as error:
                signum = getattr(error, "signum", signal.SIGINT)
                by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
                print(f"\nsessionstate fuzz: interrupted{by}", file=sys.stderr)
                return 128 + signum
            counts = read_counts(counts_dir)
            log.seek(0)
            log_text = log.read()
    elapsed = time.time() - started
    total = sum(counts.values())
    if outcome.infrastructure:
        print(f"sessionstate fuzz: error: the example database {describe(spec)} failed during "
              f"the run: {outcome.infrastructure}; HypoFuzz was stopped after {elapsed:.0f} s "
              "(nothing is blamed on the subject)", file=sys.stderr)  # fmt: skip
        return EXIT_INFRASTRUCTURE
    if outcome.found:
        print(f"sessionstate fuzz: {outcome.found} failed after {elapsed:.0f} s and "
              f"{total:,} examples; replaying it with 'sessionstate check --database':")  # fmt: skip
        return _replay(options, spec)
    if outcome.died:
        tail = [redact(line) for line in log_text.strip().splitlines() if line.strip()][-15:]
        print("\n".join(tail), file=sys.stderr)
        print(f"sessionstate fuzz: error: hypothesis fuzz stopped after {elapsed:.0f} s "
              "without a failure to replay; its last lines are above", file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    if not total:  # nothing was checked: not a pass
        print(f"sessionstate fuzz: incomplete: no example ran in {elapsed:.0f} s (the workers "
              "were still starting); give more --seconds", file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    print(f"sessionstate fuzz: no failure in {elapsed:.0f} s, {total:,} examples "
          f"({total / max(elapsed, 1e-9):,.0f}/s); examples per clause group checked:")  # fmt: skip
    for group, number in group_counts(counts, selected_groups(options.clauses)).items():
        why = "not applicable: the quick pass skipped every clause of it"
        why = why if group in skipped else "no test of it started yet"
        print(f"  {group:<8} {number:>12,}" + (f"  ({why})" if not number else ""))
    return EXIT_OK


def quick_pass(options: FuzzOptions, spec: str) -> tuple[int | None, set[str]]:
    """Run every selected test once at the quick profile, as ``sessionstate check
    --profile quick --database SPEC -n WORKERS`` runs it, before HypoFuzz starts: a bug
    the check finds in seconds is not left to the fuzzer's luck, and every clause group
    is exercised at least that much. ``None`` when it found nothing (fuzzing follows);
    else its exit status, its report printed as the check prints it: 1 a clause failed
    (the failing example is stored in the database, for ``check --database`` to replay),
    2 misuse, 3 incomplete, 4 infrastructure, 128 + a signal when interrupted. With it,
    the clause groups every clause of which the check skipped (not applicable)."""
    from sessionstate.conformance._harness.runner import CheckOptions
    from sessionstate.conformance._harness.supervision.supervisor import supervise

    # The check's own limit is a few processes per CPU: more than the CPUs only thrashes.
    processes = min(options.workers, usable_cores())
    workers = str(processes) if processes > 1 else None
    print("quick pass: every selected test once at the quick profile "
          "(sessionstate check --profile quick), then HypoFuzz", flush=True)  # fmt: skip
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="sessionstate-fuzz-quick-") as scratch:
        report = Path(scratch) / "quick.json"
        check = CheckOptions(
            target=options.target, profile="quick", clauses=list(options.clauses),
            database=spec, workers=workers, report_json=str(report), strict=options.strict,
            pytest_args=list(options.pytest_args), run_seconds=options.seconds,
        )  # fmt: skip
        status = supervise(check)
        failed = _failed_tests(report)
        skipped = _skipped_groups(report)
    elapsed = time.time() - started
    sys.stdout.flush()
    if status == EXIT_OK:
        left = max(options.seconds - elapsed, 0)
        print(f"quick pass: no failure in {elapsed:.0f} s; fuzzing for the {left:.0f} s left of "
              f"--seconds", flush=True)  # fmt: skip
        return None, skipped
    if status == EXIT_INCOMPLETE and elapsed >= options.seconds * 0.75:
        print(f"sessionstate fuzz: the quick pass was cut off by --seconds {options.seconds:g}, "
              "which bounds the whole run: give more --seconds", file=sys.stderr)  # fmt: skip
    if status == EXIT_FAILED and failed:
        print(f"sessionstate fuzz: {failed[0]} failed after {elapsed:.0f} s, in the quick pass "
              "(the check's report is above; Hypothesis saved its failing cases in the "
              "database)")  # fmt: skip
    return status, skipped


def _skipped_groups(report: Path) -> set[str]:
    """The clause groups whose every clause a check's JSON report gives as skipped (none
    if unreadable): not applicable to the subject, so no fuzzing example runs them."""
    try:
        clauses = json.loads(report.read_text(encoding="utf-8")).get("clauses", {})
    except (OSError, ValueError, AttributeError):
        return set()
    groups: dict[str, set[str]] = {}
    for cid, clause in clauses.items():
        groups.setdefault(cid.split("-")[0], set()).add(str(clause.get("outcome")))
    return {group for group, outcomes in groups.items() if outcomes == {"skipped"}}


def _failed_tests(report: Path) -> list[str]:
    """The node ids of the failed tests in a check's JSON report (none if unreadable),
    those with a Hypothesis case to replay (a ``reproduce`` blob) first."""
    try:
        results = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    failed = [t for t in results.get("tests", []) if t.get("outcome") == "failed"]
    failed.sort(key=lambda t: not t.get("reproduce"))
    return [str(t["nodeid"]) for t in failed]


@dataclass
class _Outcome:
    found: str | None = None  # the failing test's node id
    died: bool = False  # HypoFuzz stopped by itself with nothing to replay
    #: How the database failed (``Type: message``), when it did: the run stopped there.
    infrastructure: str | None = None


def _fuzz(
    options: FuzzOptions,
    spec: str,
    database: ExampleDatabase,
    counts_dir: Path,
    log: IO[str],
    started: float,
) -> _Outcome:
    env = {**os.environ, COUNTS_ENV: str(counts_dir)}
    env.pop("SESSIONSTATE_SUBJECT", None)  # the --sessionstate-subject option decides
    command = [sys.executable, "-c", "from hypothesis.extra.cli import main; main()"]
    process = subprocess.Popen(
        [*command, *fuzz_arguments(options, spec)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        start_new_session=True,
    )  # fmt: skip
    reaper = _Reaper(process.pid)
    watcher = FailureWatcher(database, since=started)
    progress = _Progress(sys.stdout)
    outcome = _Outcome()
    try:
        deadline = time.monotonic() + options.seconds
        while True:
            found = _watch(watcher, outcome)
            if found or outcome.infrastructure:
                outcome.found = found
                break
            if process.poll() is not None:
                # It stops by itself once every test failed: give the last save a moment.
                time.sleep(_POLL)
                outcome.found = _watch(watcher, outcome)
                outcome.died = outcome.found is None and outcome.infrastructure is None
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            progress.show(read_counts(counts_dir), time.time() - started, left, watcher.behaviors)
            time.sleep(min(_POLL, max(left, 0.0)))
    finally:
        progress.done()
        _stop(process)
        reaper.close()
    return outcome


def _watch(watcher: FailureWatcher, outcome: _Outcome) -> str | None:
    """``watcher.poll()``; when the database fails instead (``database.backend_errors``, a
    directory gone), ``None``, with the error in ``outcome.infrastructure``."""
    from sessionstate.conformance._harness.database import (
        backend_errors,
        check_alive,
        describe_error,
    )

    try:
        check_alive(watcher.raw)
        return watcher.poll()
    except backend_errors() as error:
        outcome.infrastructure = describe_error(error)
        return None


class _Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is (``signum`` says which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _signals_as_interrupts() -> Iterator[None]:
    """While fuzzing, SIGTERM and SIGHUP raise ``_Interrupted`` as SIGINT raises
    ``KeyboardInterrupt``: HypoFuzz's group is stopped either way, and the exit status
    is 128 + the signal."""

    def interrupt(signum: int, frame: object) -> None:
        raise _Interrupted(signum)

    names = ("SIGTERM", "SIGHUP")
    previous = {s: signal.signal(s, interrupt) for n in names if (s := getattr(signal, n, None))}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: The reaper: reads its stdin until EOF, which comes when the last holder of the pipe's
#: write end (the ``sessionstate fuzz`` process, alone) ends however it ends, even by
#: SIGKILL; then kills the process group named by its argument.
_REAPER = """
import os, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
while os.read(0, 512):
    pass
try:
    os.killpg(int(sys.argv[1]), signal.SIGKILL)
except OSError:
    pass
"""


class _Reaper:
    """Kills HypoFuzz's process group once this process is gone (``_REAPER``): HypoFuzz
    never outlives ``sessionstate fuzz``, not even a SIGKILL of it, which no handler
    sees. (A SIGKILL in the instant between HypoFuzz's start and the reaper's is the one
    window left.)"""

    def __init__(self, pgid: int) -> None:
        read_end, self._write_end = os.pipe()  # not inherited: only this process holds it
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-c", _REAPER, str(pgid)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        except OSError:
            self.process = None
        finally:
            os.close(read_end)

    def close(self) -> None:
        """The group is stopped: let the reaper go (it finds nothing left to kill)."""
        with contextlib.suppress(OSError):
            os.close(self._write_end)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT to HypoFuzz's process group (its hub, workers and dashboard), then SIGKILL."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with contextlib.suppress(ProcessLookupError):  # a worker left behind
        os.killpg(process.pid, signal.SIGKILL)


def _replay(options: FuzzOptions, spec: str) -> int:
    """Replay what HypoFuzz found with ``sessionstate check --database``: its exit status is
    the run's, by the one policy (a SHOULD clause's failure is a warning unless ``strict``).
    A failure that does not fail again on replay is said so, and exits 1."""
    from sessionstate.conformance._harness.runner import CheckOptions
    from sessionstate.conformance._harness.supervision.supervisor import supervise

    sys.stdout.flush()
    with tempfile.TemporaryDirectory(prefix="sessionstate-replay-") as scratch:
        report = Path(scratch) / "results.json"
        check = CheckOptions(
            target=options.target, clauses=list(options.clauses), database=spec,
            strict=options.strict, report_json=str(report),
        )  # fmt: skip
        status = supervise(check)
        failed = _failed_on_replay(report)
    if status == EXIT_OK and not failed:
        print("sessionstate fuzz: the failure HypoFuzz found did not fail again when replayed "
              "(a flaky test or subject); see the dashboard or the database", file=sys.stderr)  # fmt: skip
        return EXIT_FAILED
    if status == EXIT_OK:
        print(f"sessionstate fuzz: HypoFuzz found {', '.join(failed)} failing, no MUST clause: "
              "a warning, exit 0 (--strict fails on it)", file=sys.stderr)  # fmt: skip
    return status


def _failed_on_replay(report: Path) -> list[str]:
    """The clauses the replay's results say failed or errored (none: no results)."""
    try:
        results = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [
        f"{c['level']} clause {cid}"
        for cid, c in results.get("clauses", {}).items()
        if c.get("outcome") in ("failed", "error")
    ]


class FailureWatcher:
    """Looks in the database for a failure HypoFuzz found since ``since`` (a time).

    HypoFuzz saves a report in phase ``failed`` once it has shrunk a failure, and the
    shrunk failure under the test's own key (the one Hypothesis' reuse phase replays). A
    failure counts once both are there, so what the check replays has been written; a
    failure stored by an earlier run and found again counts too (a new report), one that
    no longer fails does not.
    """

    def __init__(self, database: ExampleDatabase, *, since: float) -> None:
        self.raw = database
        self.since = since
        self.behaviors = 0
        self._reports: dict[bytes, Any] = {}  # raw report -> parsed (None: not ours)
        self._last_behaviors = -float("inf")

    def _keys(self) -> list[bytes]:
        from hypofuzz.database.database import test_keys_key

        return list(self.raw.fetch(test_keys_key))

    def _ours(self, key: bytes) -> Iterator[Any]:
        """The reports saved under ``key`` since ``since`` (each parsed once)."""
        from hypofuzz.database.database import reports_key
        from hypofuzz.database.models import Report

        for value in self.raw.fetch(key + reports_key):
            if value not in self._reports:
                report = Report.from_json(value)
                ours = report is not None and report.timestamp >= self.since - 1
                self._reports[value] = report if ours else None
            if self._reports[value] is not None:
                yield self._reports[value]

    def poll(self) -> str | None:
        """The node id of a test that failed, or None; updates ``behaviors`` every 10 s
        (the behaviors HypoFuzz's latest reports name, summed over the tests)."""
        from hypofuzz.database.models import Phase

        recount = time.monotonic() - self._last_behaviors > 10
        behaviors = 0
        for key in self._keys():
            stored = next(iter(self.raw.fetch(key)), None) is not None
            if not (stored or recount):
                continue
            reports = list(self._ours(key))
            if stored:
                for report in reports:
                    if report.phase is Phase.FAILED:
                        return str(report.nodeid)
            behaviors += max((report.behaviors for report in reports), default=0)
        if recount:
            self._last_behaviors = time.monotonic()
            self.behaviors = behaviors
        return None


class _Progress:
    """One refreshing line on a terminal; a plain line every ``_PLAIN_EVERY`` s elsewhere."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.shown = False
        self.last_plain = time.monotonic()
        #: (seconds since the start, examples then) over the last ``_WINDOW`` seconds.
        self.samples: deque[tuple[float, int]] = deque()

    def show(self, counts: dict[str, int], elapsed: float, left: float, behaviors: int) -> None:
        total = sum(counts.values())
        self.samples.append((elapsed, total))
        while self.samples[0][0] < elapsed - _WINDOW:
            self.samples.popleft()
        since, then = self.samples[0]
        rate = (total - then) / (elapsed - since) if elapsed > since else 0.0
        covered = f", {behaviors:,} behaviors" if behaviors else ""
        line = f"fuzzing: {total:,} examples, {rate:,.0f}/s{covered}, {_clock(left)} left"
        if not total:
            line = f"fuzzing: HypoFuzz is collecting the suite, {_clock(left)} left"
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.stream.flush()
            self.shown = True
        elif time.monotonic() - self.last_plain >= _PLAIN_EVERY:
            self.last_plain = time.monotonic()
            print(line, file=self.stream, flush=True)

    def done(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02}:{rest % 60:02}" if hours else f"{rest // 60}:{rest % 60:02}"


def read_counts(folder: Path) -> dict[str, int]:
    """Examples run per test node id, summed over the workers' files in ``folder``."""
    counts: dict[str, int] = {}
    for path in folder.glob("*.json"):
        try:
            mine = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being replaced; the next look reads it
        for nodeid, number in mine.items():
            counts[nodeid] = counts.get(nodeid, 0) + int(number)
    return counts


_MODULE = re.compile(r"test_([a-z]+)\w*\.py::")


def selected_groups(clauses: list[str]) -> list[str]:
    """The clause groups ``--clause`` names (every group without it)."""
    from sessionstate.conformance.clauses import PREFIXES

    return [g for g in PREFIXES if not clauses or any(c.split("-")[0] == g for c in clauses)]


def group_counts(counts: dict[str, int], groups_shown: Sequence[str] = ()) -> dict[str, int]:
    """``read_counts`` per clause group, in the spec's order. A test's examples count
    under every group it checks (its tags in the clause index), as the check's table
    counts a test under every clause it checks: ``--clause LRU`` selects tests of
    ``test_drop.py`` that check LRU clauses too, and their examples are LRU's. A test
    the index does not know counts under the group its module is named after.
    ``groups_shown`` are listed even when no example of theirs ran; the column can sum
    to more than the examples run."""
    from sessionstate.conformance._harness.short_ids import short_id
    from sessionstate.conformance._report.clause_index import load
    from sessionstate.conformance.clauses import PREFIXES

    try:
        index = load()
    except (OSError, ValueError):
        index = {}
    groups: dict[str, int] = dict.fromkeys(groups_shown, 0)
    for nodeid, number in counts.items():
        tags = index.get(short_id(nodeid), [])
        checked = list(dict.fromkeys(tag.split("-")[0] for tag in tags))
        if not checked:
            match = _MODULE.search(nodeid)
            checked = [match.group(1).upper() if match else "other"]
        for group in checked:
            groups[group] = groups.get(group, 0) + number
    order = {g: i for i, g in enumerate(PREFIXES)}
    return dict(sorted(groups.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
