"""The pytest plugin (entry point ``pytest11``): options, the ``subject`` fixture,
clause markers, capabilities, expectations, the report header and the JSON results.

Light at load time: it imports neither torch nor the subject until pytest is
configured, so ``-p sessionstate.conformance.plugin`` is cheap and options work
with ``pytest --pyargs sessionstate.conformance`` (options in an installed
package's conftest.py are ignored there; pytest #1596).
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from argparse import SUPPRESS
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from sessionstate.conformance._harness.atomic import write_text_atomic
from sessionstate.conformance._harness.run_state import (
    RUN_STATE,
    RunState,
    load_configured_subject,
    run_state,
)
from sessionstate.conformance._harness.stable_keys import StableKeys
from sessionstate.conformance.checks import item_clauses
from sessionstate.conformance.subject import DEFAULT_TARGET

if TYPE_CHECKING:
    from sessionstate.conformance._harness.journal import Journal

SUBJECT_ENV = "SESSIONSTATE_SUBJECT"
PROFILE_ENV = "SESSIONSTATE_PROFILE"
CALL_TIMEOUT_ENV = "SESSIONSTATE_CALL_TIMEOUT"  # the same name as watchdog.TIMEOUT_ENV


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sessionstate", "session-state conformance suite")
    group.addoption(
        "--sessionstate-subject",
        metavar="TARGET",
        default=None,
        help=f"pkg.module:attr of the Subject under test (env {SUBJECT_ENV}; "
        "default: the bundled reference)",
    )
    group.addoption(
        "--sessionstate-profile",
        default=None,
        help=f"Hypothesis profile: quick, ci (default), deep (env {PROFILE_ENV})",
    )
    group.addoption(
        "--sessionstate-seed",
        type=int,
        default=None,
        help="run randomized (not derandomized) with this Hypothesis seed",
    )
    group.addoption(
        "--sessionstate-expectations",
        metavar="FILE",
        default=None,
        help="expectations file: lines 'CLAUSE-OR-TEST-ID xfail|skip reason'",
    )
    group.addoption(
        "--sessionstate-clause",
        metavar="ID",
        action="append",
        default=[],
        help="run only the tests of this clause or group (repeatable; e.g. LRU-3, ACCT)",
    )
    group.addoption(
        "--sessionstate-report-json",
        metavar="PATH",
        default=None,
        help="write per-test and per-clause results as JSON",
    )
    group.addoption(
        "--sessionstate-junitxml",
        metavar="PATH",
        default=None,
        help="write JUnit XML with one testcase per clause, in a suite named after the subject "
        "(pytest's own --junitxml has one testcase per test)",
    )
    group.addoption(
        "--sessionstate-no-summary",
        action="store_true",
        default=False,
        help="do not print the clause table at the end of the run",
    )
    group.addoption(
        "--sessionstate-strict",
        action="store_true",
        default=False,
        help="SHOULD failures and unmatched expectations fail the run",
    )
    group.addoption(
        "--sessionstate-devices",
        metavar="LIST",
        default=None,
        help="allocate only on these devices, comma-separated (cpu is always kept), e.g. "
        "cpu,meta for code that cannot take a simulated CUDA tensor; wins over Subject.devices",
    )
    group.addoption(
        "--sessionstate-call-timeout",
        metavar="SECONDS",
        default=None,
        help=f"seconds any call into the subject may take before it fails LOCK-3 as a hang "
        f"(env {CALL_TIMEOUT_ENV}; default 5; 0: unbounded)",
    )
    group.addoption(
        "--sessionstate-reproduce",
        metavar="TEST_ID",
        default=None,
        help="run only this test (test_lru.py::test_manager_machine: an id as the summary "
        "prints it)",
    )
    group.addoption(
        "--sessionstate-database",
        metavar="PATH|URL",
        default=None,
        help="Hypothesis example database: a directory or redis://HOST:PORT[/DB]; the run is "
        "randomized and replays every failure stored there first (env SESSIONSTATE_DATABASE, "
        "for the fuzz profile)",
    )
    group.addoption(
        "--sessionstate-blob",
        metavar="VERSION:BLOB",
        default=None,
        help="with --sessionstate-reproduce: replay this failing case, as "
        "@reproduce_failure(VERSION, BLOB) on the test would",
    )
    # Internal, for `sessionstate check`'s supervisor (supervisor.py): not in --help.
    group.addoption("--sessionstate-journal", metavar="DIR", default=None, help=SUPPRESS)
    group.addoption("--sessionstate-test-timeout", type=float, default=None, help=SUPPRESS)
    group.addoption("--sessionstate-skip-ids", metavar="FILE", default=None, help=SUPPRESS)
    # time.time() by which the tests are to have stopped, and the run's bound in seconds.
    group.addoption("--sessionstate-run-deadline", type=float, default=None, help=SUPPRESS)
    group.addoption("--sessionstate-run-timeout", type=float, default=None, help=SUPPRESS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*ids): the spec clause(s) this test checks")
    config.addinivalue_line("markers", "cuda: needs a real CUDA device")
    # Derandomized draws keyed by the suite's own node ids, wherever it is installed.
    config.pluginmanager.register(StableKeys(_SUITE_DIR), "sessionstate-stable-keys")
    from sessionstate.conformance._harness.expectations import parse_expectations
    from sessionstate.conformance._harness.profiles import DEFAULT_PROFILE, check_profile
    from sessionstate.conformance.subject import UsageError

    target = (
        config.getoption("--sessionstate-subject") or os.environ.get(SUBJECT_ENV) or DEFAULT_TARGET
    )
    profile = (
        config.getoption("--sessionstate-profile") or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
    )
    seed = config.getoption("--sessionstate-seed")
    path = config.getoption("--sessionstate-expectations")
    try:
        check_profile(profile)  # checked now, loaded once conformance tests are collected
        expectations = parse_expectations(path) if path else []
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    call_timeout = _call_timeout(config)
    _RECORDS.clear()
    _OTHERS_FAILED.clear()
    _STOPPED.clear()
    _INFRASTRUCTURE.clear()
    _open_journal(config)
    state: RunState = {
        "target": target,
        "profile": profile,
        "seed": seed,
        "expectations": expectations,
        "subject": None,
        "started": time.monotonic(),
        # Checked now, so that a bad selection is a usage error in an xdist controller too.
        "selected": _selected_clauses(config),
        "facts": None,
        "call_timeout": call_timeout,
        # Test id -> clauses, for every conformance test this process collected; an xdist
        # controller collects none and only learns how many its workers did.
        "collected": {},
        "collected_count": None,
        "collected_ids": [],
        "profile_loaded": False,
    }
    config.stash[RUN_STATE] = state
    if _suite_requested(config):
        _hypothesis_for_the_suite(config, profile)


def _hypothesis_for_the_suite(config: pytest.Config, profile: str) -> None:
    """A run of the suite keeps Hypothesis' files out of the current directory, and says
    once that ``--hypothesis-profile`` does not apply to it (see ``profiles``)."""
    import sys

    from sessionstate.conformance._harness.profiles import (
        ignored_profile_notice,
        use_private_storage,
    )

    use_private_storage()
    notice = ignored_profile_notice(config.getoption("hypothesis_profile", None), profile)
    if notice and not hasattr(config, "workerinput"):  # the controller says it, once
        sys.stderr.write(notice + "\n")


def _call_timeout(config: pytest.Config) -> float | None:
    """The per-call deadline (``watchdog.Watchdog``) the options ask for; ``None``: none."""
    from sessionstate.conformance._harness.watchdog import deadline_from

    value = config.getoption("--sessionstate-call-timeout") or os.environ.get(CALL_TIMEOUT_ENV)
    try:
        seconds = deadline_from(value)
    except ValueError as error:
        message = f"--sessionstate-call-timeout / {CALL_TIMEOUT_ENV}: {error}"
        raise pytest.UsageError(message) from None
    # Stepping through a test under --trace must not be cut short by the deadline.
    return None if config.getoption("trace", False) else seconds


# The journal (--sessionstate-journal; see _harness/journal.py) ---------------------------

#: This process's journal, when the supervisor of ``sessionstate check`` asked for one.
_JOURNAL: list[Journal] = []
#: Node ids of the tests this process is running now (``pytest_runtest_protocol``).
_IN_FLIGHT: set[str] = set()
#: Files faulthandler writes to (kept open for as long as the process runs).
_FAULT_FILES: list[Any] = []
#: An xdist controller's crashed tests: node id -> xdist's message.
_CRASHED: dict[str, str] = {}
#: An xdist controller's: test id -> clauses, as the workers that finished collected them.
_WORKER_COLLECTED: dict[str, list[str]] = {}
#: Whether this process has journaled the facts (once, at its first test).
_FACTS_SENT: list[bool] = []
#: How many conformance tests this process has still to run (its share under xdist).
_TESTS_LEFT: list[int] = []


def _open_journal(config: pytest.Config) -> None:
    _JOURNAL.clear()
    _IN_FLIGHT.clear()
    _CRASHED.clear()
    _FACTS_SENT.clear()
    _WORKER_COLLECTED.clear()
    folder = config.getoption("--sessionstate-journal")
    if folder:
        from sessionstate.conformance._harness.journal import Journal

        _JOURNAL.append(Journal(folder))


def _journal(event: str, **fields: Any) -> None:
    if _JOURNAL:
        _JOURNAL[0].write(event, **fields)


def _skipped_ids(config: pytest.Config) -> set[str]:
    """``--sessionstate-skip-ids FILE``: the node ids (a JSON list) a resumed run leaves out."""
    path = config.getoption("--sessionstate-skip-ids")
    if not path:
        return set()
    return set(json.loads(Path(path).read_text(encoding="utf-8")))


def _arm_faulthandler(config: pytest.Config) -> None:
    """With a journal and a per-test bound: report a fatal signal to ``<pid>.fatal`` and
    dump every thread's stack to ``<pid>.stack`` a little before the bound runs out, from
    faulthandler's own thread, which runs even while a C loop holds the GIL. The
    supervisor names the call in flight from them."""
    import faulthandler

    seconds = config.getoption("--sessionstate-test-timeout")
    if not _JOURNAL or not seconds:
        return
    if not _FAULT_FILES:
        try:
            _FAULT_FILES.append(_JOURNAL[0].path(".stack").open("a", encoding="utf-8"))
            _FAULT_FILES.append(_JOURNAL[0].path(".fatal").open("a", encoding="utf-8"))
        except OSError:
            return
        faulthandler.enable(file=_FAULT_FILES[1], all_threads=True)
    margin = min(5.0, seconds / 4)
    deadline = config.getoption("--sessionstate-run-deadline")
    if deadline is not None:  # the supervisor cuts the run off a little after this
        seconds = min(seconds, max(deadline - time.time(), margin + 0.5))
    faulthandler.dump_traceback_later(max(seconds - margin, 0.5), file=_FAULT_FILES[0])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Only in the process running the test: journal its start, and bracket it with the
    faulthandler dump (see ``_arm_faulthandler``)."""
    if not _JOURNAL or not item_clauses(item):
        yield
        return
    import faulthandler

    config = item.config
    if not _FACTS_SENT and RUN_STATE in config.stash and _suite_requested(config):
        _FACTS_SENT.append(True)
        _journal("facts", facts=_json_facts(config))
    _IN_FLIGHT.add(item.nodeid)
    _journal("start", nodeid=item.nodeid)
    _arm_faulthandler(config)
    try:
        yield
    finally:
        if _FAULT_FILES:
            faulthandler.cancel_dump_traceback_later()
        _IN_FLIGHT.discard(item.nodeid)
        if _TESTS_LEFT:
            _TESTS_LEFT[0] = max(1, _TESTS_LEFT[0] - 1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Load the profile and narrow the devices before the suite's modules are imported: a
    ``@given`` test keeps the settings in force where it is defined, and the strategies
    read ``available_devices()`` once, at import. ``--sessionstate-devices`` wins over
    ``Subject.devices``; an xdist controller allocates nothing and loads no subject."""
    config = session.config
    if not _suite_requested(config) or _is_xdist_controller(config):
        return
    _load_profile(config)
    from sessionstate.conformance._model.memory import select_devices

    option = config.getoption("--sessionstate-devices")
    names: Sequence[str] | None
    names = [n.strip() for n in option.split(",") if n.strip()] if option else None
    source = "--sessionstate-devices"
    subject = load_configured_subject(config)
    from sessionstate.conformance._harness.own_hooks import no_own_hook

    refusal = no_own_hook(subject, run_state(config)["target"])  # the unedited init template
    if refusal:
        raise pytest.UsageError(refusal)
    if names is None:
        names, source = subject.devices, f"subject {subject.name!r}: devices"
    try:
        select_devices(names)
    except ValueError as error:
        raise pytest.UsageError(f"{source}: {error}") from None


@pytest.fixture(scope="session")
def subject(pytestconfig: pytest.Config) -> Any:
    """The Subject under test, chosen per process by option or environment."""
    return load_configured_subject(pytestconfig)


def _suite_requested(config: pytest.Config) -> bool:
    """Whether this run asked for the suite: an option or variable of ours, or an argument
    naming the suite (``--pyargs sessionstate.conformance...`` or a path into it)."""
    ours = ("--sessionstate-subject", "--sessionstate-profile", "--sessionstate-clause",
            "--sessionstate-expectations", "--sessionstate-report-json", "--sessionstate-seed",
            "--sessionstate-junitxml")  # fmt: skip
    if any(config.getoption(name) for name in ours) or config.getoption("--sessionstate-strict"):
        return True
    if os.environ.get(SUBJECT_ENV) or os.environ.get(PROFILE_ENV):
        return True
    suite = Path(__file__).resolve().parent / "suite"
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if "sessionstate.conformance" in arg or _inside(path, suite):
            return True
    return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder)
    except OSError:
        return False


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not _suite_requested(config):
        return []  # the caller's own tests: nothing of ours to report, and no torch import
    from sessionstate.conformance._harness import under_test

    if _is_xdist_controller(config):
        lines = under_test.controller_header_lines(*_run_line_args(config))
    else:
        lines = under_test.header_lines(*_run_line_args(config), _facts(config))
    return [*lines, _deadline_line(config), *_bound_line(config)]


def _bound_line(config: pytest.Config) -> list[str]:
    """Under ``sessionstate check``'s supervisor: the wall-clock bound of one test."""
    if not config.getoption("--sessionstate-journal"):
        return []
    seconds = config.getoption("--sessionstate-test-timeout")
    if not seconds:
        return ["  each test: unbounded (SESSIONSTATE_TEST_TIMEOUT=0); a hang hangs the run"]
    lines = [
        f"  each test: cut off after {seconds:g} s of wall-clock time (the profile's bound, "
        "or SESSIONSTATE_TEST_TIMEOUT), its clauses unchecked"
    ]
    run = config.getoption("--sessionstate-run-timeout")
    if run:
        lines.append(
            f"  the whole run: a verdict within {run:g} s (the profile's bound, or "
            "SESSIONSTATE_RUN_TIMEOUT); each test gets its share, a test out of time stops, "
            "its clauses unchecked"
        )
    else:
        lines.append("  the whole run: unbounded (SESSIONSTATE_RUN_TIMEOUT=0)")
    return lines


def _deadline_line(config: pytest.Config) -> str:
    """Whether calls into the subject are bounded, and by what (see ``pytest_runtest_call``)."""
    from sessionstate.conformance._harness.watchdog import CONFIRM_FACTOR, unavailable

    seconds = run_state(config)["call_timeout"]
    why: str | None
    if seconds is None:
        why = "--trace" if config.getoption("trace", False) else f"{CALL_TIMEOUT_ENV}=0"
    else:
        why = unavailable()
    if why:
        return f"  calls into the subject: unbounded ({why}); a deadlock hangs the run"
    return (
        f"  calls into the subject: a call blocked on a lock for {seconds:g} s fails LOCK-3 as "
        f"a deadlock; one still computing is waited for (up to {CONFIRM_FACTOR:g}x that, times "
        "the load per core), then is too slow to judge (unchecked)"
    )


def _run_line_args(config: pytest.Config) -> tuple[str, str, str, int | None, str]:
    """What every header names besides the facts: version, target, profile, seed, env line."""
    from sessionstate import __version__

    state = run_state(config)
    env = f"  env {SUBJECT_ENV}={os.environ.get(SUBJECT_ENV)!r} {PROFILE_ENV}={os.environ.get(PROFILE_ENV)!r}"
    return __version__, state["target"], state["profile"], state["seed"], env


def _is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands tests to xdist workers and runs none itself."""
    return config.pluginmanager.has_plugin("dsession")


def _facts(config: pytest.Config) -> dict[str, Any]:
    """What is under test (``under_test.gather``), once per process."""
    state = run_state(config)
    facts = state["facts"]
    if facts is None:
        from sessionstate.conformance._harness import under_test

        facts = state["facts"] = under_test.gather(load_configured_subject(config))
    return facts


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """The xdist controller keeps the facts of the first worker that sent them."""
    output = getattr(node, "workeroutput", {})
    facts = output.get("sessionstate")
    if facts is not None and RUN_STATE in node.config.stash:
        state = run_state(node.config)
        state["facts"] = state["facts"] or facts
        _WORKER_COLLECTED.update(output.get("sessionstate_collected") or {})
    _merge_faults(output.get("sessionstate_infrastructure"))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Under xdist, what the header could not say without loading the subject; then the
    clause table (in the process that computed the results: never in an xdist worker)."""
    state = run_state(config)
    if (
        terminalreporter.verbosity >= 0
        and _is_xdist_controller(config)
        and state["facts"] is not None
        and _suite_requested(config)
    ):
        from sessionstate.conformance._harness import under_test

        terminalreporter.write_sep("-", "sessionstate: under test (as the workers loaded it)")
        for line in under_test.header_lines(*_run_line_args(config), state["facts"]):
            terminalreporter.write_line(line)
    _clause_table(terminalreporter, config)


def _clause_table(terminalreporter: Any, config: pytest.Config) -> None:
    """One row per clause, failures first, and the verdict; ``-qq`` or
    ``--sessionstate-no-summary`` (``sessionstate check`` prints its own) leave it out."""
    results = run_state(config).get("results")
    if results is None or terminalreporter.verbosity < -1:
        return
    if config.getoption("--sessionstate-no-summary") or not _suite_requested(config):
        return
    from sessionstate.conformance._report.terminal import styled_table
    from sessionstate.conformance._report.text import terminal_text

    verdict = {"conformant": "green", "non-conformant": "red"}.get(results["verdict"], "yellow")
    colours = {"failed": "red", "error": "red", "unchecked": "yellow", "warning": "yellow"}
    subject = terminal_text(results["subject"])
    terminalreporter.write_sep("=", f"sessionstate: {subject} is {results['verdict']}")
    for line, kind in styled_table(results):
        if kind == "verdict":
            terminalreporter.write_line(line, **{verdict: True, "bold": True})
        elif kind in colours:
            terminalreporter.write_line(line, **{colours[kind]: True})
        else:
            terminalreporter.write_line(line)


#: Node ids of the shipped suite's tests, however pytest roots them.
_SUITE_ID = re.compile(r"(^|[/\\.])conformance[/\\.]suite[/\\.]test_\w+\.py::")


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from sessionstate.conformance.clauses import all_clauses

    state = run_state(config)
    known = all_clauses()
    wanted = config.getoption("--sessionstate-clause")
    reproduce = config.getoption("--sessionstate-reproduce")
    selected_clauses = state["selected"]
    skip_ids = _skipped_ids(config)
    subject = None
    keep, dropped = [], []
    for item in items:
        ids = item_clauses(item)
        if not ids:
            keep.append(item)
            continue
        if item.nodeid in skip_ids:  # a resumed run: ended in an earlier attempt
            dropped.append(item)
            continue
        for cid in ids:
            if cid not in known:
                raise pytest.UsageError(f"{item.nodeid} names unknown clause {cid!r}")
        if reproduce and _short_id(item.nodeid) != reproduce:
            dropped.append(item)
            continue
        if wanted and not set(ids) & set(selected_clauses):
            dropped.append(item)
            continue
        keep.append(item)
        subject = subject or load_configured_subject(config)
        _apply_capabilities(item, ids, subject, known)
        _apply_hooks(item, ids, subject)
        _apply_expectations(item, ids, state["expectations"])
    state["collected"] = {item.nodeid: item_clauses(item) for item in keep if item_clauses(item)}
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    _TESTS_LEFT[:] = [-(-len(state["collected"]) // max(1, workers))]  # this process's share
    if state["collected"]:
        _journal("collected", tests=state["collected"])
    if config.getoption("--sessionstate-database"):  # the keys HypoFuzz saved under
        from sessionstate.conformance._harness.database import align_keys

        align_keys([item for item in keep if item_clauses(item)], state["seed"] or 0)
    _arm_reproduction(config, state)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    if any(item_clauses(item) for item in keep) and not state["profile_loaded"]:
        _load_profile(config)  # suite tests collected from a path we did not recognise
    if keep and all(item_clauses(item) for item in keep):
        _freeze_what_collection_made()


def _short_id(nodeid: str) -> str:
    from sessionstate.conformance._harness.reproduce import short_test_id

    return short_test_id(nodeid)


def _arm_reproduction(config: pytest.Config, state: RunState) -> None:
    """``--sessionstate-reproduce``: the one test kept is the selection, its clauses the
    report's; ``--sessionstate-blob`` makes it replay that failing case."""
    test_id = config.getoption("--sessionstate-reproduce")
    blob = config.getoption("--sessionstate-blob")
    if not test_id:
        if blob:
            raise pytest.UsageError("--sessionstate-blob needs --sessionstate-reproduce TEST_ID")
        return
    if not state["collected"]:
        raise pytest.UsageError(
            f"--sessionstate-reproduce: no test {test_id!r} in this selection (a test id as "
            "the summary prints it, e.g. test_lru.py::test_manager_machine)"
        )
    from sessionstate.conformance._harness.reproduce import parse_blob
    from sessionstate.conformance.clauses import all_clauses

    ran = {cid for clauses in state["collected"].values() for cid in clauses}
    state["selected"] = [cid for cid in all_clauses() if cid in ran]
    if blob:
        try:
            parse_blob(blob)
        except ValueError as error:
            raise pytest.UsageError(f"--sessionstate-blob: {error}") from None


def _selected_clauses(config: pytest.Config) -> list[str]:
    """The clauses ``--sessionstate-clause`` selects (all of them without it), in spec order.

    From the options alone: an xdist controller, which collects nothing, reports
    the selection its workers ran.
    """
    from sessionstate.conformance.clauses import all_clauses

    known = all_clauses()
    wanted = config.getoption("--sessionstate-clause")
    for cid in wanted:
        if cid not in known and cid not in {c.group for c in known.values()}:
            raise pytest.UsageError(f"--sessionstate-clause: unknown clause or group {cid!r}")
    return [c for c in known if not wanted or c in wanted or known[c].group in wanted]


def _load_profile(config: pytest.Config) -> None:
    """Load the suite's Hypothesis profile (and ``--sessionstate-blob``'s case on top of it)
    before the suite's modules are imported.

    Not at configure time: the plugin is installed for every pytest run in the
    environment, and a run of the caller's own tests must keep its own Hypothesis
    settings. (A run mixing both gets the suite's profile: Hypothesis has one.)
    """
    from sessionstate.conformance._harness.profiles import load_profile

    state = run_state(config)
    from sessionstate.conformance.subject import UsageError

    try:
        load_profile(
            state["profile"], seed=state["seed"],
            database=config.getoption("--sessionstate-database"),
        )  # fmt: skip
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    state["profile_loaded"] = True
    blob = config.getoption("--sessionstate-blob")
    if blob and config.getoption("--sessionstate-reproduce"):  # that one case, and only it
        from sessionstate.conformance._harness.reproduce import load_replay

        try:
            load_replay(blob)
        except ValueError as error:
            raise pytest.UsageError(f"--sessionstate-blob: {error}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The xdist controller runs no test: freeze once its workers have collected a
    conformance-only run (their items carry clause marks; here only ids are known, so
    it is judged by where they live)."""
    config = getattr(node, "config", None)
    if ids and config is not None and RUN_STATE in config.stash:
        state = run_state(config)  # how many tests the run holds, for an interrupted run's report
        state["collected_count"] = state["collected_count"] or len(ids)
        state["collected_ids"] = state["collected_ids"] or list(ids)
    if ids and all(_SUITE_ID.search(nodeid) for nodeid in ids):
        _freeze_what_collection_made()


def _freeze_what_collection_made() -> None:
    """In a run of conformance tests only, exempt everything alive now from cyclic GC.

    torch, Hypothesis and the collected suite leave ~300k objects behind, and every
    full collection walks them all: about 0.4 s each, for the automatic ones during
    the run and for the five pytest forces at exit. ``gc.freeze()`` moves them to the
    permanent generation; refcounting still frees them, only cycles made before this
    point are never collected. Runs that also hold the caller's own tests are left as
    they are. Once per process: the xdist controller hears from every worker.
    """
    import gc

    if gc.get_freeze_count() == 0:
        gc.freeze()


def _apply_capabilities(
    item: pytest.Item, ids: list[str], subject: Any, known: dict[str, Any]
) -> None:
    # Automatic for every test: a clause that needs a capability the subject
    # does not declare is skipped, naming both (a forgotten per-test
    # decorator broke SQLAlchemy's third-party dialects, #5841).
    from sessionstate.conformance._harness.applicability import capability_reason

    for cid in ids:
        missing = sorted(known[cid].requires - subject.capabilities)
        if missing:
            reason = capability_reason(cid, missing[0], subject.name)
            item.add_marker(pytest.mark.skip(reason=reason))
            return


def _apply_hooks(item: pytest.Item, ids: list[str], subject: Any) -> None:
    # A test of a clause about a hook the subject lacks would run on our reference
    # code and credit the subject with its pass: skip it as not applicable.
    from sessionstate.conformance._harness.applicability import NOT_APPLICABLE, missing_hook

    missing = missing_hook(subject, ids)
    if missing:
        cid, hook = missing
        reason = f"{NOT_APPLICABLE}: subject {subject.name!r} has no {hook}, which {cid} needs"
        item.add_marker(pytest.mark.skip(reason=reason))


def _apply_expectations(item: pytest.Item, ids: list[str], expectations: list[Any]) -> None:
    # Indexed lookups: a test costs the same whatever the size of the expectations file.
    from sessionstate.conformance._harness.expectations import clause_skips, first_for_test

    entry = first_for_test(expectations, item.nodeid)
    if entry is not None:
        mark = pytest.mark.skip if entry.kind == "skip" else pytest.mark.xfail
        item.add_marker(mark(reason=f"expected: {entry.reason}"))
        return
    skipped = clause_skips(expectations)
    if ids and all(cid in skipped for cid in ids):
        item.add_marker(pytest.mark.skip(reason=f"expected: {skipped[ids[0]].reason}"))


_SUITE_DIR = Path(__file__).resolve().parent / "suite"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test of the suite that starts once the run's time is spent (``_budget`` is 0) is
    skipped as not checked, before its fixtures are made."""
    if not _inside(item.path, _SUITE_DIR) or RUN_STATE not in item.config.stash:
        return
    budget = _budget(item.config)
    if budget is not None and budget <= 0:
        from sessionstate.conformance._harness.applicability import NOT_CHECKED

        run = item.config.getoption("--sessionstate-run-timeout") or 0
        pytest.skip(f"{NOT_CHECKED}: the run's bound ({run:g} s) ran out before this test started")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """In a test of the suite, every call into subject code returns within the deadline or
    gets ``watchdog.Hang`` raised into it, which fails the test; other tests run as they are.

    A hang the subject swallowed, or turned into another exception, still fails the test
    as the hang: the deadlock is what went wrong. A call too slow to judge
    (``watchdog.TooSlow``), or a test whose budget (``bounds.test_budget``) ran out, is
    skipped as not checked, naming the call and, for a property, how many of its
    examples ran. A focused test that no example got through (``checks.focused_on``) is
    skipped as not checked.
    """
    if not _inside(item.path, _SUITE_DIR):
        yield
        return
    from sessionstate.conformance.checks import forget_derailments, not_checked_reason

    forget_derailments()
    seconds = run_state(item.config)["call_timeout"] if RUN_STATE in item.config.stash else None
    if seconds is None:
        outcome = yield
    else:
        from sessionstate.conformance._harness.watchdog import Watchdog

        with Watchdog(seconds, budget=_budget(item.config)) as watch, _counting(item, watch):
            outcome = yield
        fired = watch.fired
        if fired is not None and (outcome.excinfo is None or outcome.excinfo[1] is not fired):
            outcome.force_exception(fired)
            return
        slow = _too_slow(outcome.excinfo[1] if outcome.excinfo else None, watch)
        if slow:
            outcome.force_exception(pytest.skip.Exception(slow))
            return
    reason = not_checked_reason(outcome.excinfo[1]) if outcome.excinfo else None
    if reason:
        outcome.force_exception(pytest.skip.Exception(reason))


def _budget(config: pytest.Config) -> float | None:
    """The next test's budget: its share of what is left of the run (``bounds.test_budget``);
    ``None`` outside ``sessionstate check`` or with no bound on the run."""
    from sessionstate.conformance._harness.bounds import test_budget

    deadline = config.getoption("--sessionstate-run-deadline")
    if deadline is None:
        return None
    left = deadline - time.time()
    tests = _TESTS_LEFT[0] if _TESTS_LEFT else 1
    return test_budget(config.getoption("--sessionstate-test-timeout"), left, tests)


#: A property's examples run and asked for, while it runs (``_counting``).
_EXAMPLES: list[int] = [0, 0]


@contextmanager
def _counting(item: pytest.Item, watch: Any) -> Iterator[None]:
    """For a ``@given`` test with a budget: count its examples, and stop it between two
    examples once the budget is spent (``watchdog.OutOfTime``), rather than only inside a
    call. Hypothesis' ``inner_test`` is the documented place to wrap each example."""
    from sessionstate.conformance._harness.watchdog import OutOfTime

    test = getattr(item, "obj", None)
    hypothesis: Any = getattr(test, "hypothesis", None)
    inner = getattr(hypothesis, "inner_test", None)
    _EXAMPLES[:] = [0, 0]
    if inner is None or not watch.active:
        yield
        return
    chosen = getattr(test, "_hypothesis_internal_use_settings", None)
    _EXAMPLES[1] = int(getattr(chosen, "max_examples", 0) or 0)
    started = time.monotonic()

    @functools.wraps(inner)
    def example(*args: Any, **kwargs: Any) -> Any:
        spent = watch.budget is not None and time.monotonic() - started > watch.budget
        if spent and not watch.failing:  # a failure found is shrunk and reported instead
            busiest = watch.busiest()
            watch.slow = watch.slow or OutOfTime(
                busiest.partition(" ")[0],
                f"stopped for time: the test's share of the run's bound ({watch.budget:g} s) "
                f"ran out after {time.monotonic() - started:.1f} s"
                + (f"; most time in {busiest}" if busiest else ""),
            )
            raise watch.slow
        _EXAMPLES[0] += 1
        try:
            return inner(*args, **kwargs)
        except Exception:
            watch.failing = True
            raise

    hypothesis.inner_test = example
    try:
        yield
    finally:
        hypothesis.inner_test = inner


def _too_slow(error: BaseException | None, watch: Any) -> str | None:
    """The not-checked reason when the test ended too slow to judge, or ``None``."""
    from sessionstate.conformance._harness.applicability import NOT_CHECKED
    from sessionstate.conformance._harness.watchdog import TooSlow

    slow = error if isinstance(error, TooSlow) else watch.slow
    if slow is None:
        return None
    ran, asked = _EXAMPLES
    examples = f" ({ran} of {asked} examples ran)" if asked and ran < asked else ""
    return f"{NOT_CHECKED}: {str(slow).splitlines()[0]}{examples}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    blob = _reproduce_hint(item, call)
    outcome = yield
    report = outcome.get_result()
    if blob:
        report.user_properties.append(("sessionstate_reproduce", blob))
    faults = _database_faults()
    if faults:  # to the process that writes the results, xdist's controller included
        report.user_properties.append(("sessionstate_infrastructure", json.dumps(faults)))
    ids = item_clauses(item)
    if not ids:
        return
    failed: list[str] = []
    mine: list[tuple[str, str]] = []
    # An expectations entry's xfail: its message too, for the reason's note (its clauses are
    # xfailed as a whole, as before, so none is named failed).
    xfailed = call.excinfo is not None and hasattr(report, "wasxfail") and not report.failed
    if call.excinfo is not None and (report.failed or xfailed):
        from sessionstate.conformance._harness.watchdog import Hang
        from sessionstate.conformance.checks import clauses_of

        error = call.excinfo.value
        failed = [error.clause] if isinstance(error, Hang) else sorted(set(clauses_of(error)))
        text = str(error).strip() or type(error).__name__
        first = text.splitlines()[0]
        # A clause failure's message already is the one template; other
        # errors get their type so "KeyError('a')" is not just "'a'".
        message = first if failed else f"{type(error).__name__}: {first}"
        mine.append(("sessionstate_message", message))
        failed = [] if xfailed else failed
    mine += [
        ("sessionstate_clauses", json.dumps(ids)),
        ("sessionstate_failed_clauses", json.dumps(failed)),
    ]
    if report.when == "teardown" and not report.failed:
        # pytest's JUnit XML writes a test's properties from its teardown report: there,
        # the call's (or a failed setup's) say what happened, not the teardown's.
        mine = item.stash.get(_PROPERTIES, mine)
    else:
        item.stash[_PROPERTIES] = mine
    report.user_properties.extend(mine)


#: The sessionstate properties of a test's last setup or call report (JSON values).
_PROPERTIES = pytest.StashKey[list[tuple[str, str]]]()


def _reproduce_hint(item: pytest.Item, call: pytest.CallInfo[None]) -> str:
    """The failing case's ``VERSION:BLOB`` (``""``: none); Hypothesis' "add
    @reproduce_failure to your test function" (a function in site-packages) becomes the
    command that replays it (``reproduce``). Before the report is made, so its text says it."""
    if call.excinfo is None or RUN_STATE not in item.config.stash or not item_clauses(item):
        return ""
    from sessionstate.conformance._harness.reproduce import blob_from_notes, command

    state = run_state(item.config)

    def line(blob: str) -> str:
        return "Reproduce this failure alone: " + command(
            state["target"], item.nodeid, blob, profile=state["profile"],
            expectations=item.config.getoption("--sessionstate-expectations"),
        )  # fmt: skip

    return blob_from_notes(call.excinfo.value, line)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # The sessionstate_* properties read here are the str ones pytest_runtest_makereport adds.
    props = cast("dict[str, str]", dict(report.user_properties))
    _merge_faults(props.get("sessionstate_infrastructure"))
    if "sessionstate_clauses" not in props:
        if report.failed and str(report.when) == "???":  # xdist: the worker running it died
            message = str(report.longrepr).strip().splitlines()[0]
            _CRASHED[report.nodeid] = message
            _journal("crash", nodeid=report.nodeid, message=message)
        elif report.failed:
            _OTHERS_FAILED.append(report.nodeid)  # the caller's own test, run beside the suite
        return
    if report.when != "call" and not (report.failed or report.skipped):
        return
    outcome: str = report.outcome
    message = ""
    if hasattr(report, "wasxfail"):  # an expectations entry's xfail: its reason goes along
        from sessionstate.conformance._harness.expectations import expected_outcome

        failure = ""
        if not report.passed:
            failure = props.get("sessionstate_message") or _first_line_of_failure(report)
        outcome, message = expected_outcome(str(report.wasxfail), failure)
    elif report.failed:
        message = props.get("sessionstate_message") or _first_line_of_failure(report)
    elif report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[2])
    _RECORDS.append(
        {
            "nodeid": report.nodeid,
            "clauses": json.loads(props["sessionstate_clauses"]),
            "outcome": outcome,
            "failed_clauses": json.loads(props.get("sessionstate_failed_clauses", "[]")),
            "message": message,
            "seconds": round(report.duration, 4),
            "reproduce": props.get("sessionstate_reproduce", ""),
        }
    )
    if report.nodeid in _IN_FLIGHT:  # the process running it says it, not the controller
        _journal("record", record=_RECORDS[-1])


_RECORDS: list[dict[str, Any]] = []
#: Node ids of the caller's own tests (no clause) that failed in this run.
_OTHERS_FAILED: list[str] = []
#: How the example database failed in this run (``database.merge_faults``), by database.
_INFRASTRUCTURE: dict[str, dict[str, Any]] = {}


def _database_faults() -> list[dict[str, Any]]:
    """This process's database faults since the last call (``database.drain_faults``);
    none in a run that never opened a database."""
    import sys

    if "sessionstate.conformance._harness.database" not in sys.modules:
        return []
    from sessionstate.conformance._harness.database import drain_faults

    return drain_faults()


def _merge_faults(faults: str | list[dict[str, Any]] | None) -> None:
    """Add ``faults`` (a JSON list, or the list) to the run's ``_INFRASTRUCTURE``."""
    if not faults:
        return
    from sessionstate.conformance._harness.database import merge_faults

    merge_faults(_INFRASTRUCTURE, json.loads(faults) if isinstance(faults, str) else faults)


def _first_line_of_failure(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0] if text.strip() else "failed"


#: Why the run was cut short (``pytest_keyboard_interrupt``): ``{"why": ...}``.
_STOPPED: dict[str, str] = {}


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Tell Ctrl-C from the other ways pytest stops a run early (collection errors,
    ``pytest.exit``, ``-x`` under xdist): they all end with exit status INTERRUPTED."""
    error = excinfo.value
    text = str(error)
    if type(error) is KeyboardInterrupt or "keyboard-interrupt" in text:  # a worker's Ctrl-C
        why = "interrupted"
    elif isinstance(error, pytest.exit.Exception):
        why = f"pytest.exit: {error.msg}"
    elif "during collection" in text:
        why = f"collection errors: {text}"
    else:
        why = text or type(error).__name__  # session.shouldstop: -x under xdist, --stepwise
    _STOPPED["why"] = why


#: How a cut-short run's report says why: ``interrupted`` (Ctrl-C) or these prefixes.
_INTERRUPTIONS = ("interrupted", "collection errors", "pytest.exit", "internal error")


def _is_suite_id(nodeid: str) -> bool:
    """Whether ``nodeid`` names a test of the shipped suite: under ``--pyargs`` ids are
    relative to the rootdir (``test_lru.py::...``), so by the module's name too."""
    module = nodeid.split("::")[0]
    return bool(_SUITE_ID.search(nodeid)) or ("/" not in module and (_SUITE_DIR / module).is_file())


def _how_it_ended(session: pytest.Session, exitstatus: int) -> dict[str, Any]:
    """For ``results.results_json``: whether the run stopped before its last test and why
    (``stopped``; ``interrupted`` unless it stopped at a failure as ``-x`` asks), how many
    tests it held, and which clauses' tests did not all run (``None``: not known here)."""
    state = run_state(session.config)
    why = _STOPPED.get("why")
    if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
        why = "internal error"
    elif exitstatus == pytest.ExitCode.INTERRUPTED:
        why = why or "interrupted"
    elif session.shouldfail or session.shouldstop:
        why = str(session.shouldfail or session.shouldstop)  # -x, --maxfail
    else:
        why = None
    collected: dict[str, list[str]] = state["collected"]
    reproduce = session.config.getoption("--sessionstate-reproduce")
    unfinished: list[str] | None = []
    note = ""
    if why is not None:
        done = {record["nodeid"] for record in _RECORDS}
        unfinished = None
        if collected:
            unfinished = sorted({c for n, cs in collected.items() if n not in done for c in cs})
        note = "interrupted" if why == "interrupted" else f"the run stopped ({why})"
        note += " before all its tests ran"
    recorded = {record["nodeid"] for record in _RECORDS}
    lost = [
        n
        for n in state["collected_ids"]
        if n not in recorded and (n in _CRASHED or _is_suite_id(n))
    ]
    if why is None and lost:  # a crashed worker's test: never silently absent
        # Its clauses, as a worker that finished collected them; else every clause.
        known = all(n in _WORKER_COLLECTED for n in lost)
        unfinished = sorted({c for n in lost for c in _WORKER_COLLECTED[n]}) if known else None
        crash = _CRASHED.get(lost[0])
        note = f"{len(lost)} test(s) ended without a result, e.g. {_short_id(lost[0])}" + (
            f" ({crash})" if crash else ""
        )
    if reproduce:  # one test ran: its clauses' other tests did not
        unfinished = None if unfinished is None else sorted({*unfinished, *state["selected"]})
        note = note or f"only {reproduce} ran (--reproduce)"
    return {
        "stopped": why,
        "interrupted": why is not None and why.startswith(_INTERRUPTIONS),
        "tests_collected": len(collected) if collected else state["collected_count"],
        "unfinished": unfinished,
        "unfinished_why": note,
        "reproduce": reproduce,
    }


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = run_state(config)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
        if state["subject"] is not None:  # it collected conformance tests
            config.workeroutput["sessionstate"] = _facts(config)  # type: ignore[attr-defined]
            # Each test's clauses: the controller's, should another worker's test be lost.
            config.workeroutput["sessionstate_collected"] = state["collected"]  # type: ignore[attr-defined]
        config.workeroutput["sessionstate_infrastructure"] = _database_faults()  # type: ignore[attr-defined]
        return
    _merge_faults(_database_faults())
    no_run = (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED)
    if exitstatus in no_run or config.option.collectonly:
        return  # no test ran, nor was one to: a report from an earlier run stays as it was
    path = config.getoption("--sessionstate-report-json")
    junit = config.getoption("--sessionstate-junitxml")
    if not (path or junit or _RECORDS):
        return
    from sessionstate import __version__
    from sessionstate.conformance._harness.results import results_json

    run = {
        "target": state["target"],
        "suite_version": __version__,
        "profile": state["profile"],
        "seed": state["seed"],
        "seconds": round(time.monotonic() - state["started"], 2),
        # Under `sessionstate check`: the wall-clock bound of one test (None: unbounded).
        "test_timeout": config.getoption("--sessionstate-test-timeout"),
        "run_timeout": config.getoption("--sessionstate-run-timeout"),
        **_how_it_ended(session, exitstatus),
        # The example database failing mid-run (database.GuardedDatabase): never a clause's.
        "infrastructure": list(_INFRASTRUCTURE.values()),
        # When the run ended, in UTC: the matrix and the JUnit XML say how old a result is.
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    payload = results_json(
        _RECORDS, state["expectations"], state["selected"],
        strict=config.getoption("--sessionstate-strict"), facts=_json_facts(config), run=run,
    )  # fmt: skip
    state["results"] = payload  # for the clause table in the terminal summary
    if not config.getoption("--sessionstate-journal"):  # under `check`, its supervisor's
        from sessionstate.conformance._harness.exit_policy import session_status

        # One exit policy (exit_policy): the verdict's status, not pytest's "a test failed".
        session.exitstatus = session_status(payload, exitstatus, bool(_OTHERS_FAILED))
    if path:
        write_text_atomic(path, json.dumps(payload, indent=2) + "\n")
    if junit:
        _write_junit(junit, payload)


def _write_junit(path: str, payload: dict[str, Any]) -> None:
    """The per-clause JUnit XML (``junit.to_junit_xml``) of ``--sessionstate-junitxml``,
    through ``atomic.write_text_atomic`` (a file replaced whole, a device or FIFO written
    in place). A write that fails (a full disk) is one line on stderr, not a traceback
    that would cut off the clause table. (``sessionstate check`` writes its
    ``--junitxml`` itself, after the table, and exits 4 then.)"""
    import sys

    from sessionstate.conformance._harness.atomic import write_error, write_text_atomic
    from sessionstate.conformance._report.junit import to_junit_xml

    try:
        write_text_atomic(path, to_junit_xml(payload))
    except OSError as error:
        print(
            f"sessionstate: error: --sessionstate-junitxml {path!r} could not be written: "
            f"{write_error(error)}",
            file=sys.stderr,
        )


def _json_facts(config: pytest.Config) -> dict[str, Any]:
    """The facts for the JSON results: this process's, the workers', or, when the subject
    was never loaded (no worker reported: all crashed), the target and the environment."""
    state = run_state(config)
    if state["facts"] is not None or state["subject"] is not None:
        return _facts(config)
    from sessionstate.conformance._harness import under_test

    return {
        "subject": state["target"],
        "capabilities": [],
        "environment": under_test.environment(),
    }
