"""``sessionstate check``: validate the request, run the suite under pytest, report.

Exit status: by the one policy of ``exit_policy`` (0 conformant, 1 a clause failed, 2
misuse, 3 incomplete, 4 infrastructure, 128+N a signal). A report that cannot be written
(a full disk, a closed pipe) is one line naming it, after the verdict table, and exit 4;
an interrupted run's reports say ``"interrupted": true`` and ``"verdict": "incomplete"``.

Everything that can be found wrong with the request is found before the first test:
the target imports and its hooks answer (one call each, under the call deadline),
every report path can be written, ``-n`` is at most ``max_workers()`` and has
pytest-xdist to run on. Reports are written whole or not at all, or streamed into a
device, FIFO or descriptor (``atomic.write_text_atomic``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The exit statuses, and the one policy that maps a run's results to them.
from sessionstate.conformance._harness.exit_policy import (
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    decide,
    with_infrastructure,
)
from sessionstate.conformance._harness.options import flag, forwarded
from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.subject import DEFAULT_TARGET, UsageError

__all__ = [
    "CheckOptions", "finish_check", "infrastructure_status", "reproduce_command",
]  # fmt: skip

#: The most worker processes ``-n`` may start: more than this many per core only thrashes.
MAX_WORKERS_PER_CPU = 4
#: What ``Subject.manager_factory`` must return: the methods every manager clause calls
#: (SPEC KEY, LRU, STATS, LOCK-2). A missing one would fail every test with one AttributeError.
MANAGER_METHODS = (
    "get_or_create_session", "drop_session", "stats", "nbytes_by_device", "__len__",
    "__contains__",
)  # fmt: skip
#: What ``Subject.buffer_factory()`` must return: the StateObject methods the suite calls.
BUFFER_METHODS = ("append", "reset", "nbytes_by_device")


@dataclass
class CheckOptions:
    target: str = DEFAULT_TARGET
    profile: str = "ci"
    report_json: str | None = None
    junitxml: str | None = None
    markdown: str | None = None
    expectations: str | None = None
    strict: bool = False
    exitfirst: bool = False
    workers: str | None = None
    seed: int | None = None
    clauses: list[str] = field(default_factory=list)
    pytest_args: list[str] = field(default_factory=list)
    #: Run only this test (an id as the summary prints it), replaying ``blob`` if given.
    reproduce: str | None = None
    #: ``HYPOTHESIS_VERSION:BASE64``, the failing case of ``reproduce``'s last run.
    blob: str | None = None
    #: Allocate only on these devices (``cpu`` always kept); None: Subject.devices, or all.
    devices: list[str] | None = None
    #: An example database (a directory or ``redis://HOST:PORT[/DB]``): the run replays
    #: every failure stored there first, randomized with ``seed`` (0 when not given).
    database: str | None = None
    #: A bound on the whole run in seconds, within the profile's (``SESSIONSTATE_RUN_TIMEOUT``
    #: or ``bounds.RUN_SECONDS``): ``fuzz`` gives its quick pass its ``--seconds``.
    run_seconds: float | None = None

    def run_seed(self) -> int | None:
        """The seed the run uses: ``seed``, else 0 with a ``database`` (a run that reads
        one is randomized), else ``None`` (derandomized). The header and JSON say this."""
        if self.seed is None and self.database is not None:
            return 0
        return self.seed


def validate(options: CheckOptions) -> None:
    """Raise ``UsageError`` for anything wrong with the request, before any test runs."""
    from sessionstate.conformance._harness.expectations import parse_expectations
    from sessionstate.conformance._harness.profiles import check_profile
    from sessionstate.conformance.subject import _did_you_mean

    check_profile(options.profile)
    known = all_clauses()
    groups = {c.group for c in known.values()}
    for cid in options.clauses:
        if cid not in known and cid not in groups:
            hint = _did_you_mean(cid, [*known, *groups])
            raise UsageError(f"unknown clause or group {cid!r}{hint}; see 'sessionstate spec'")
    if options.devices is not None:
        from sessionstate.conformance._harness.devices import machine_devices

        _check_device_names(options.devices)

        unknown = [d for d in options.devices if d not in machine_devices()]
        if unknown:
            raise UsageError(
                f"--devices: unknown device {unknown[0]!r}; this machine has "
                f"{', '.join(machine_devices())}"
            )
    _check_workers(options)
    _check_reproduce(options)
    if options.database is not None:
        from sessionstate.conformance._harness.database import open_database

        open_database(options.database)
    subject = load_target(options.target)
    _check_specs(subject)
    if options.expectations:
        parse_expectations(options.expectations)
    check_hooks(subject)
    _check_own_hooks(subject, options.target)
    _check_report_paths(options)


def _check_own_hooks(subject: Any, target: str) -> None:
    """A subject whose every hook is the reference's (the unedited ``init`` template) is
    refused: checking it would test the reference under the subject's name (``own_hooks``)."""
    from sessionstate.conformance._harness.own_hooks import no_own_hook

    refusal = no_own_hook(subject, target)
    if refusal:
        raise UsageError(refusal)


def _check_workers(options: CheckOptions) -> None:
    """``-n`` is a whole number from 0 to ``max_workers()``, ``auto`` or ``logical``."""
    workers = options.workers
    if workers is None:
        return
    if not (workers.isdigit() or workers in ("auto", "logical")):
        raise UsageError(f"-n: {workers!r} is not a number of processes (or 'auto')")
    if workers.isdigit() and int(workers) > max_workers():
        raise UsageError(
            f"-n {workers}: at most {max_workers()} processes on this machine "
            f"({MAX_WORKERS_PER_CPU} per CPU); 'auto' starts one per CPU"
        )
    if options.reproduce:
        raise UsageError("--reproduce runs one test in one process: leave out -n")
    try:
        import xdist  # noqa: F401
    except ImportError:
        raise UsageError(
            f"-n {workers} needs pytest-xdist, which is not installed: pip install pytest-xdist"
        ) from None


def max_workers() -> int:
    """The most processes ``-n`` may start: ``MAX_WORKERS_PER_CPU`` per CPU."""
    return (os.cpu_count() or 1) * MAX_WORKERS_PER_CPU


def _check_device_names(devices: Sequence[str]) -> None:
    """``--devices`` names at least one device and no empty one (``cpu,,meta``, ``,,,``)."""
    if not devices or any(not name.strip() for name in devices):
        raise UsageError(
            f"--devices {','.join(devices)!r}: name the devices, comma-separated, e.g. cpu,meta"
        )


def _check_reproduce(options: CheckOptions) -> None:
    if options.reproduce:
        _check_test_id(options.reproduce)
    if options.blob is None:
        return
    import hypothesis

    if not options.reproduce:
        raise UsageError("--blob replays a failing case of one test: name it with --reproduce")
    from sessionstate.conformance._harness.reproduce import parse_blob

    try:
        version, _ = parse_blob(options.blob)
    except ValueError as error:
        raise UsageError(f"--blob {error} (copy it from the failure's reproduce line)") from None
    if version != hypothesis.__version__:
        raise UsageError(
            f"--blob was made by Hypothesis {version}, but {hypothesis.__version__} is installed: "
            "re-run the check for a blob of this version (or install that one)"
        )
    _check_blob_data(options.blob)


def _check_blob_data(blob: str) -> None:
    """The blob's data decodes as Hypothesis decodes a failure (``decode_failure``, which
    ``@reproduce_failure`` calls), or ``UsageError`` now: one line, before the header."""
    from hypothesis.errors import InvalidArgument

    from sessionstate.conformance._harness.reproduce import parse_blob

    try:
        from hypothesis.core import decode_failure
    except ImportError:  # moved: the replay itself reports a bad blob
        return
    try:
        decode_failure(parse_blob(blob)[1])
    except InvalidArgument:
        raise UsageError(
            f"--blob {blob!r} is not a failing case Hypothesis can read (cut short or edited?): "
            "copy it whole from the failure's reproduce line"
        ) from None


def _check_test_id(test_id: str) -> None:
    """``--reproduce``'s test names a module of the suite and a test function in it (its
    parametrization is checked once collected)."""
    import re

    from sessionstate.conformance.subject import _did_you_mean

    suite = Path(__file__).resolve().parent.parent / "suite"
    module, sep, rest = test_id.partition("::")
    files = sorted(p.name for p in suite.glob("test_*.py"))
    if not sep or Path(module).name not in files:
        hint = _did_you_mean(Path(module).name, files) if sep else ""
        raise UsageError(
            f"--reproduce {test_id!r} is not a test of the suite{hint}: give its id as the "
            "summary prints it, e.g. test_lru.py::test_manager_machine"
        )
    function = rest.partition("[")[0].rpartition("::")[2]
    source = (suite / Path(module).name).read_text(encoding="utf-8")
    names = re.findall(r"^\s*def (test_\w+)", source, flags=re.MULTILINE)
    if function not in names:
        raise UsageError(
            f"--reproduce: {Path(module).name} has no test {function!r}"
            f"{_did_you_mean(function, names)}"
        )


def load_target(target: str) -> Any:
    """``subject.load_subject``, with whatever the target's own code raises (a
    ``SyntaxError`` in its module, a subject callable that fails) as a ``UsageError``
    naming the exception and where it was raised."""
    from sessionstate.conformance.subject import load_subject

    module_name = target.partition(":")[0]
    try:
        return load_subject(target)
    except UsageError:
        raise
    except SystemExit as error:  # the subject's code would end the check, verdict-less
        if module_name not in sys.modules:
            raise UsageError(
                f"cannot import module {module_name!r} of target {target!r}: it called "
                f"{_exit_call(error)}"
            ) from None
        raise UsageError(f"target {target!r} called {_exit_call(error)} when called") from None
    except Exception as error:
        if module_name not in sys.modules:  # a module that fails to import is not kept
            raise UsageError(
                f"cannot import module {module_name!r} of target {target!r}: "
                f"{_describe(error)}{_raised_at(error)}"
            ) from None
        raise UsageError(
            f"target {target!r} raised {_describe(error)}{_raised_at(error)} when called"
        ) from None


def _exit_call(error: SystemExit) -> str:
    """``sys.exit(CODE)`` as the code called it (``sys.exit()`` without a code)."""
    return "sys.exit()" if error.code is None else f"sys.exit({error.code!r})"


def _describe(error: BaseException) -> str:
    """``Type: first line of the message``: one line, whatever the exception holds."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _raised_at(error: BaseException) -> str:
    """`` (at file.py:LINE)`` for the innermost frame that raised ``error``, if any."""
    if isinstance(error, SyntaxError):
        return ""  # its message names the file and line already
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})"


def check_hooks(subject: Any) -> None:
    """Call each hook of ``subject`` once, as the tests will, and check what it returns:
    a hook that cannot work fails here in one line, not once per test.

    ``manager_factory(max_sessions=2, byte_budget=None)`` must return an object with
    ``MANAGER_METHODS``; ``buffer_factory()`` one with ``BUFFER_METHODS``;
    ``accounting`` and ``config_resolver`` must be callable. Each call runs under the
    call deadline (``watchdog.Watchdog``): a factory that never returns is an error too.
    """
    for name in ("accounting", "config_resolver", "manager_factory", "buffer_factory"):
        hook = getattr(subject, name)
        if hook is not None and not callable(hook):
            raise UsageError(
                f"subject {subject.name!r}: {name} is a {type(hook).__name__}, not callable"
            )
    if subject.manager_factory is not None:
        call = "manager_factory(max_sessions=2, byte_budget=None)"
        manager = _call_hook(
            subject, call, lambda: subject.manager_factory(max_sessions=2, byte_budget=None)
        )
        _check_methods(subject, call, manager, MANAGER_METHODS)
    if subject.buffer_factory is not None:
        buffer = _call_hook(subject, "buffer_factory()", subject.buffer_factory)
        _check_methods(subject, "buffer_factory()", buffer, BUFFER_METHODS)


def _call_hook(subject: Any, call: str, hook: Callable[[], Any]) -> Any:
    from sessionstate.conformance._harness.supervision.deadline import (
        TIMEOUT_ENV,
        Hang,
        deadline_from,
    )
    from sessionstate.conformance._harness.supervision.watchdog import Watchdog

    try:
        seconds = deadline_from(os.environ.get(TIMEOUT_ENV))
    except ValueError as error:
        raise UsageError(f"{TIMEOUT_ENV}: {error}") from None
    try:
        if seconds is None:
            return hook()
        with Watchdog(seconds):
            return hook()
    except Hang:
        raise UsageError(
            f"subject {subject.name!r}: {call} did not return within {seconds} s"
        ) from None
    except SystemExit as error:
        raise UsageError(f"subject {subject.name!r}: {call} called {_exit_call(error)}") from None
    except Exception as error:
        raise UsageError(
            f"subject {subject.name!r}: {call} raised {_describe(error)}{_raised_at(error)}"
        ) from None


def _check_methods(subject: Any, call: str, made: Any, methods: tuple[str, ...]) -> None:
    kind = type(made)
    missing = [m for m in methods if not callable(getattr(kind, m, None) or getattr(made, m, None))]
    if missing:
        raise UsageError(
            f"subject {subject.name!r}: {call} returned a {kind.__name__}, which has no "
            f"{', '.join(missing)}"
        )


def _check_report_paths(options: CheckOptions) -> None:
    """Every report path names a file that can be written (its directories are made now),
    no two reports share one, and none is an input of the run."""
    reports = [
        (option, path)
        for option, path in (
            ("--report-json", options.report_json),
            ("--junitxml", options.junitxml),
            ("--markdown", options.markdown),
        )
        if path
    ]
    inputs = {}
    if options.expectations:
        inputs[os.path.realpath(options.expectations)] = "the --expectations file"
    module = sys.modules.get(options.target.partition(":")[0])
    if getattr(module, "__file__", None):
        inputs[os.path.realpath(module.__file__)] = "the target's module"  # type: ignore[union-attr,arg-type]
    taken: dict[str, str] = {}
    for option, path in reports:
        real = os.path.realpath(path)
        if real in taken:
            raise UsageError(f"{taken[real]} and {option} both name {path!r}")
        if real in inputs:
            raise UsageError(f"{option} {path!r} is {inputs[real]}")
        taken[real] = option
    for option, path in reports:
        _check_writable(option, path)


def _check_writable(option: str, path: str) -> None:
    """``path`` can take a report: a directory is refused; a device, FIFO or descriptor
    (``atomic.is_stream``) must be writable and is left alone (nothing is made next to
    ``/dev/null``); for a file, its directories are made and a probe file is written next
    to it, as the report's temporary file will be."""
    from sessionstate.conformance._harness.atomic import is_stream, write_error

    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path!r} is a directory")
    if is_stream(path):
        if not os.access(path, os.W_OK):
            raise UsageError(f"{option} {path!r} is not writable")
        return
    parent = Path(os.path.realpath(target)).parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise UsageError(f"{option} {path!r}: {str(folder)!r} is not a directory")
            break
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{target.name}.", suffix=".probe"):
            pass
    except OSError as error:
        raise UsageError(
            f"{option} {path!r}: cannot write in {str(parent)!r}: {write_error(error)}"
        ) from None
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{option} {path!r} exists and is not writable")


def _check_specs(subject: Any) -> None:
    from sessionstate.conformance.adapters import AdapterSpec
    from sessionstate.conformance.specs import StateObjectSpec
    from sessionstate.conformance.subject import typed_specs

    typed_specs(subject, "state_objects", StateObjectSpec)
    typed_specs(subject, "adapters", AdapterSpec)


#: The pytest arguments of every run of the suite (``check``'s and ``fuzz``'s): the suite,
#: our plugin, no cache.
SUITE = (
    "--pyargs", "sessionstate.conformance.suite",
    "-p", "sessionstate.conformance.plugin",
    "-p", "no:cacheprovider",
    # The subject's module may import hypothesis before pytest starts.
    "-W", "ignore::pytest.PytestAssertRewriteWarning",
)  # fmt: skip


def suite_arguments(target: str, profile: str, clauses: Sequence[str]) -> list[str]:
    """``SUITE``, then the subject, the profile and the clause selection."""
    args = [
        *SUITE,
        flag("subject"), target,
        flag("profile"), profile,
    ]  # fmt: skip
    for cid in clauses:
        args += [flag("clause"), cid]
    return args


def pytest_arguments(options: CheckOptions, json_path: str) -> list[str]:
    """The pytest arguments of ``check``'s run: the suite's, each option ``check`` forwards
    under the plugin's spelling (``options.forwarded``), and what a few of them also ask of
    pytest or Hypothesis."""
    args = [
        *SUITE,
        *forwarded(options),
        "-q", "--tb=short",
        flag("report-json"), json_path,
        # The clause table is printed below, after pytest's own summary.
        flag("no-summary"),
    ]  # fmt: skip
    if options.database is not None:
        # Randomized, so Hypothesis reads the database, yet reproducible: each test gets
        # the seed as @seed would give it (--hypothesis-seed would turn the database off).
        from sessionstate.conformance._harness.database import suite_rootdir

        args += ["--rootdir", suite_rootdir()]
        if options.seed is None:
            args += [flag("seed"), str(options.run_seed())]
    elif options.seed is not None:
        args.append(f"--hypothesis-seed={options.seed}")
    if options.exitfirst:
        args.append("-x")
    if options.workers:
        # worksteal: an idle worker takes queued tests from a busy one, so the run does not
        # wait on one worker's backlog of stateful machines (bench/suite_speed.py).
        args += ["-n", options.workers, "--dist", "worksteal"]
    # --junitxml (one testcase per clause, in a suite named after the subject) is written
    # by _write_reports with the other reports, after the summary; pytest's own per-test
    # file stays available as `-- --junitxml=PATH`.
    return args + options.pytest_args


def finish_check(
    options: CheckOptions, status: int, text: str | None, signum: int | None = None
) -> int:
    """Write the reports and print the summary of a run whose pytest exit status was
    ``status`` and whose JSON results are ``text`` (``None``: none were written); the exit
    status. ``signum``: the signal that interrupted the run (exit 128 + it)."""
    import pytest

    if status == pytest.ExitCode.NO_TESTS_COLLECTED:
        return _error("no test was selected (see the pytest arguments after '--')")
    if text is None:
        if status == pytest.ExitCode.OK:  # --collect-only: the listing is the output
            return EXIT_OK
        if status == pytest.ExitCode.INTERRUPTED:  # before the session started
            return _interrupted(None, options, signum)
        return _error(f"the suite did not run (pytest exited with {status!r}); see above")
    results: dict[str, Any] = json.loads(text)
    stopped = results.get("stopped") or ""
    if results.get("interrupted") and stopped.startswith("collection"):
        # Nothing ran: no table of unchecked clauses and no verdict, one line and exit 2.
        _write_reports(options, results, text)
        return _error(f"the suite could not be collected: {stopped.partition(': ')[2]}")
    _print_summary(options, results)  # first: a report that cannot be written loses no verdict
    if not _write_reports(options, results, text):
        return EXIT_INFRASTRUCTURE
    if status == pytest.ExitCode.INTERNAL_ERROR:
        return _error("pytest stopped with an internal error; see above")
    if results.get("interrupted"):
        if stopped != "interrupted":
            return _error(f"the run was stopped: {stopped}")
        return _interrupted(results, options, signum)
    return infrastructure_status(results, decide(results).status)


def infrastructure_status(results: dict[str, Any], status: int) -> int:
    """The exit status of a run that would exit ``status``, given how its example database
    failed (``results["infrastructure"]``), with one line on stderr when it did.

    A database that failed mid-run is nobody's clause: what it held may not have been
    replayed, so a run that found nothing wrong (0) or left something unchecked (3) exits
    4, saying its verdict does not count. A clause failure found anyway (1) was reproduced
    against the subject and stands: the status stays 1, and the line is a warning.
    """
    faults = results.get("infrastructure") or []
    if not faults:
        return status
    status = with_infrastructure(results, status)
    fault = faults[0]
    calls = fault["count"]
    failed = (
        f"the example database {fault['database']} failed during the run ({calls} "
        f"call{'s' if calls != 1 else ''} lost): {fault['error']}"
    )
    if status == EXIT_FAILED:
        print(f"sessionstate check: warning: {failed}; the clause failure above was found "
              "against the subject and stands, but stored failures may not all have been "
              "replayed", file=sys.stderr)  # fmt: skip
        return status
    print(f"sessionstate check: error: {failed}; the verdict above does not count "
          "(nothing is blamed on the subject)", file=sys.stderr)  # fmt: skip
    return status


def _error(message: str) -> int:
    print(f"sessionstate check: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _interrupted(
    results: dict[str, Any] | None, options: CheckOptions, signum: int | None = None
) -> int:
    """One line: how far the run got, and what became of the reports; 128 + ``signum``
    (130, as for Ctrl-C, when no signal is known)."""
    import signal

    code = 128 + signum if signum else EXIT_INTERRUPTED
    by = f" by {signal.Signals(signum).name}" if signum and signum != signal.SIGINT else ""
    reports = [p for p in (options.report_json, options.junitxml, options.markdown) if p]
    if results is None:
        kept = f"; {', '.join(reports)} left as they were" if reports else ""
        print(f"sessionstate check: interrupted{by} before any test ran{kept}", file=sys.stderr)
        return code
    ran, collected = len({t["nodeid"] for t in results["tests"]}), results.get("tests_collected")
    of = f" of {collected}" if collected is not None else ""
    say = "says" if len(reports) == 1 else "say"
    marked = f"; {', '.join(reports)} {say} incomplete" if reports else ""
    print(f"sessionstate check: interrupted{by} after {ran}{of} tests{marked}", file=sys.stderr)
    return code


def _write_reports(options: CheckOptions, results: dict[str, Any], text: str) -> bool:
    """Write every report asked for (``atomic.write_text_atomic``), each whole or not at
    all. A report that cannot be written (a full disk, a closed pipe) is one line on
    stderr naming it and why, and the others are still written; False if one failed."""
    from sessionstate.conformance._harness.atomic import write_error, write_text_atomic
    from sessionstate.conformance._report.junit import to_junit_xml
    from sessionstate.conformance._report.terminal import markdown

    reports: list[tuple[str, str | None, Callable[[], str]]] = [
        ("--report-json", options.report_json, lambda: text),
        ("--junitxml", options.junitxml, lambda: to_junit_xml(results)),
        ("--markdown", options.markdown, lambda: markdown(results)),
    ]
    written = True
    for option, path, render in reports:
        if not path:
            continue
        try:
            write_text_atomic(path, render())
        except OSError as error:
            written = False
            print(
                f"sessionstate check: error: {option} {path!r} could not be written: "
                f"{write_error(error)}",
                file=sys.stderr,
            )
    return written


def _print_summary(options: CheckOptions, results: dict[str, Any]) -> None:
    from sessionstate.conformance._report.reproduce_list import failures_to_reproduce
    from sessionstate.conformance._report.terminal import summary_lines
    from sessionstate.conformance._report.text import terminal_text

    print("\n".join(summary_lines(results)))
    failed = [t for t in results["tests"] if t["outcome"] == "failed"]
    if options.blob and not failed:
        print(f"reproduce: {options.reproduce} passed on that case (fixed, or another test's blob)")
    offered = failures_to_reproduce(results)
    if offered and not options.reproduce:
        print("reproduce a failure (runs that test alone, replaying its failing case):")
        for clauses, level, record in offered:  # every failed MUST clause first, then SHOULD
            print(f"  # {', '.join(clauses)} ({level})")
            print(f"  {terminal_text(reproduce_command(options, record))}")


def reproduce_command(options: CheckOptions, record: Mapping[str, Any]) -> str:
    """The ``sessionstate check`` command that re-runs ``record``'s test alone: with its
    ``@reproduce_failure`` blob, the one failing case (``reproduce``)."""
    from sessionstate.conformance._harness.reproduce import command

    return command(
        options.target, record["nodeid"], record.get("reproduce") or None,
        profile=options.profile, expectations=options.expectations, seed=options.seed,
    )  # fmt: skip
