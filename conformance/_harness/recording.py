"""What each test of the suite did, as the plugin hears it: ``Recording``.

A ``Recording`` is registered as a pytest plugin for the run (``plugin.pytest_configure``)
and keeps everything the run learns as it goes on itself, not in module globals:

* one record per test (``records``), from its reports: its clauses, its outcome, the
  clauses its failure names, the first line of its message, the command that replays it;
* the journal ``sessionstate check``'s supervisor reads (``--sessionstate-journal``; see
  ``journal``): each test's start and record, the facts once, a crashed xdist worker's
  test; and faulthandler's stack dump a little before a test's bound runs out;
* why the run stopped early (``stopped``), the caller's own tests that failed beside the
  suite, an xdist controller's crashed tests and the clauses its workers collected, and
  how the example database failed (``infrastructure``).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import pytest

from sessionstate.conformance._harness.foreign import (
    FirstAttempts,
    foreign_timeout,
    not_checked_report,
)
from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.run_state import (
    RUN_STATE,
    json_facts,
    run_state,
    suite_requested,
)
from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance.checks import item_clauses

if TYPE_CHECKING:
    from sessionstate.conformance._harness.supervision.journal import Journal

__all__ = ["RECORDING", "Recording", "database_faults", "merge_faults"]

#: Where Hypothesis' pytest plugin finds a test's failing examples to write a patch from.
_HYPOTHESIS_FAILING_EXAMPLES = "_hypothesis_failing_examples"
#: The sessionstate properties of a test's last setup or call report (JSON values).
_PROPERTIES = pytest.StashKey[list[tuple[str, str]]]()


class Recording:
    """The run's records and journal in this process (a pytest plugin object)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[dict[str, Any]] = []
        #: Node ids of the caller's own tests (no clause) that failed in this run.
        self.others_failed: list[str] = []
        #: How the example database failed in this run (``database.merge_faults``).
        self.infrastructure: dict[str, dict[str, Any]] = {}
        #: Why the run was cut short (``pytest_keyboard_interrupt``), if it was.
        self.stopped: str | None = None
        #: The first collection error: the module, and its error's last line.
        self.collection_error: str | None = None
        #: An xdist controller's crashed tests: node id -> xdist's message.
        self.crashed: dict[str, str] = {}
        #: An xdist controller's: test id -> clauses, as the workers that finished collected.
        self.worker_collected: dict[str, list[str]] = {}
        #: How many conformance tests this process has still to run (its share under xdist).
        self.tests_left = 1
        self._in_flight: set[str] = set()
        self._facts_sent = False
        self._attempts = FirstAttempts()
        self._fault_files: list[IO[str]] = []
        self.journal: Journal | None = None
        folder = config.getoption(flag("journal"))
        if folder:
            from sessionstate.conformance._harness.supervision.journal import Journal

            self.journal = Journal(folder)

    def write(self, event: str, **fields: Any) -> None:
        """Journal ``event``, when the supervisor asked for a journal."""
        if self.journal is not None:
            self.journal.write(event, **fields)

    def collected(self, tests: dict[str, list[str]], workers: int) -> None:
        """This process collected ``tests`` (node id -> clauses), its share of ``workers``."""
        self.tests_left = -(-len(tests) // max(1, workers))
        if tests:
            self.write("collected", tests=tests)

    # The test's run, in the process that runs it --------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        """Journal the test's start, and bracket it with the faulthandler dump."""
        if self.journal is None or not item_clauses(item):
            yield
            return
        import faulthandler

        config = item.config
        if not self._facts_sent and RUN_STATE in config.stash and suite_requested(config):
            self._facts_sent = True
            self.write("facts", facts=json_facts(config))
        self._in_flight.add(item.nodeid)
        self.write("start", nodeid=item.nodeid)
        self._arm_faulthandler()
        try:
            yield
        finally:
            if self._fault_files:
                faulthandler.cancel_dump_traceback_later()
            self._in_flight.discard(item.nodeid)
            self.tests_left = max(1, self.tests_left - 1)

    def _arm_faulthandler(self) -> None:
        """With a per-test bound: report a fatal signal to ``<pid>.fatal`` and dump every
        thread's stack to ``<pid>.stack`` a little before the bound runs out, from
        faulthandler's own thread, which runs even while a C loop holds the GIL. The
        supervisor names the call in flight from them."""
        import faulthandler

        seconds = self.config.getoption(flag("test-timeout"))
        if self.journal is None or not seconds:
            return
        if not self._fault_files:
            try:
                self._fault_files.append(self.journal.path(".stack").open("a", encoding="utf-8"))
                self._fault_files.append(self.journal.path(".fatal").open("a", encoding="utf-8"))
            except OSError:
                return
            faulthandler.enable(file=self._fault_files[1], all_threads=True)
            if hasattr(faulthandler, "register") and hasattr(signal, "SIGUSR2"):
                # The supervisor asks for the call in flight when it stops a run (census).
                faulthandler.register(signal.SIGUSR2, file=self._fault_files[0], all_threads=True)
        margin = min(5.0, seconds / 4)
        deadline = self.config.getoption(flag("run-deadline"))
        if deadline is not None:  # the supervisor cuts the run off a little after this
            seconds = min(seconds, max(deadline - time.time(), margin + 0.5))
        faulthandler.dump_traceback_later(max(seconds - margin, 0.5), file=self._fault_files[0])

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        """Put on the report what the records are made of: the test's clauses, the ones its
        failure names, its message, and the command that replays a failing case.

        First, before Hypothesis' own wrapper: a suite test's failing examples are taken
        off the item, so Hypothesis does not write a patch adding ``@example(...)`` to the
        suite's installed test function (nothing a user edits), which imports libcst and
        black for it, about 0.5 s at every failure; the reproduce command says how to
        replay the case instead."""
        if item_clauses(item):
            item.__dict__.pop(_HYPOTHESIS_FAILING_EXAMPLES, None)
        blob = _reproduce_hint(item, call)
        outcome: Any = yield
        report = outcome.get_result()
        stopped = foreign_timeout(call.excinfo.value) if call.excinfo is not None else None
        if stopped is not None and item_clauses(item):  # the project's pytest-timeout
            not_checked_report(report, stopped)
        if blob:
            report.user_properties.append(("sessionstate_reproduce", blob))
        faults = database_faults()
        if faults:  # to the process that writes the results, xdist's controller included
            report.user_properties.append(("sessionstate_infrastructure", json.dumps(faults)))
        ids = item_clauses(item)
        if not ids:
            return
        mine = _clause_properties(call, report, ids)
        if report.when == "teardown" and not report.failed:
            # pytest's JUnit XML writes a test's properties from its teardown report: there,
            # the call's (or a failed setup's) say what happened, not the teardown's.
            mine = item.stash.get(_PROPERTIES, mine)
        else:
            item.stash[_PROPERTIES] = mine
        report.user_properties.extend(mine)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One record per test of the suite, from its call report (or a failed or skipped
        setup or teardown); a crashed xdist worker's test and the caller's failed tests
        are noted."""
        # The sessionstate_* properties read here are the str ones makereport adds.
        props = cast("dict[str, str]", dict(report.user_properties))
        merge_faults(self.infrastructure, props.get("sessionstate_infrastructure"))
        if "sessionstate_clauses" not in props:
            if report.failed and str(report.when) == "???":  # xdist: the worker running it died
                message = str(report.longrepr).strip().splitlines()[0]
                self.crashed[report.nodeid] = message
                self.write("crash", nodeid=report.nodeid, message=message)
            elif report.failed:
                self.others_failed.append(report.nodeid)  # the caller's own test
            return
        if report.when != "call" and not (report.failed or report.skipped):
            return
        if not self._attempts.first(report):  # pytest-rerunfailures: the first decides
            return
        self.records.append(_record(report, props))
        if report.nodeid in self._in_flight:  # the process running it says it, not xdist's
            self.write("record", record=self.records[-1])

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """The first module that could not be collected, and why (its error's last line)."""
        if report.failed and self.collection_error is None:
            text = str(report.longrepr)
            errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
            last = errors[-1] if errors else (text.strip().splitlines() or ["error"])[-1]
            self.collection_error = f"{short_id(report.nodeid) or 'the suite'}: {last}"

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Tell Ctrl-C from the other ways pytest stops a run early (collection errors,
        ``pytest.exit``, ``-x`` under xdist): they all end with exit status INTERRUPTED."""
        error = excinfo.value
        text = str(error)
        if type(error) is KeyboardInterrupt or "keyboard-interrupt" in text:  # a worker's
            self.stopped = "interrupted"
        elif isinstance(error, pytest.exit.Exception):
            self.stopped = f"pytest.exit: {error.msg}"
        elif "during collection" in text:
            self.stopped = f"collection errors: {self.collection_error or text}"
        else:  # session.shouldstop: -x under xdist, --stepwise
            self.stopped = text or type(error).__name__

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """The xdist controller keeps the facts of the first worker that sent them, and
        every worker's collection and database faults."""
        output = getattr(node, "workeroutput", {})
        facts = output.get("sessionstate")
        if facts is not None and RUN_STATE in node.config.stash:
            state = run_state(node.config)
            state["facts"] = state["facts"] or facts
            self.worker_collected.update(output.get("sessionstate_collected") or {})
        merge_faults(self.infrastructure, output.get("sessionstate_infrastructure"))


RECORDING = pytest.StashKey[Recording]()


def _clause_properties(
    call: pytest.CallInfo[None], report: pytest.TestReport, ids: list[str]
) -> list[tuple[str, str]]:
    """The report's ``sessionstate_*`` properties: clauses, failed clauses, message."""
    failed: list[str] = []
    mine: list[tuple[str, str]] = []
    # An expectations entry's xfail: its message too, for the reason's note (its clauses
    # are xfailed as a whole, so none is named failed).
    xfailed = call.excinfo is not None and hasattr(report, "wasxfail") and not report.failed
    if call.excinfo is not None and (report.failed or xfailed):
        from sessionstate.conformance._harness.supervision.deadline import Hang
        from sessionstate.conformance.checks import clauses_of

        error = call.excinfo.value
        failed = [error.clause] if isinstance(error, Hang) else sorted(set(clauses_of(error)))
        text = str(error).strip() or type(error).__name__
        first = text.splitlines()[0]
        # A clause failure's message already is the one template; other errors get their
        # type so "KeyError('a')" is not just "'a'".
        mine.append(
            ("sessionstate_message", first if failed else f"{type(error).__name__}: {first}")
        )
        failed = [] if xfailed else failed
    return [
        *mine,
        ("sessionstate_clauses", json.dumps(ids)),
        ("sessionstate_failed_clauses", json.dumps(failed)),
    ]


def _record(report: pytest.TestReport, props: dict[str, str]) -> dict[str, Any]:
    outcome = FirstAttempts.outcome(report)
    message = ""
    if hasattr(report, "wasxfail"):  # an expectations entry's xfail: its reason goes along
        from sessionstate.conformance._harness.expectations import expected_outcome

        failure = ""
        if not report.passed:
            failure = props.get("sessionstate_message") or _first_line_of_failure(report)
        outcome, message = expected_outcome(str(report.wasxfail), failure)
    elif outcome == "failed":
        message = props.get("sessionstate_message") or _first_line_of_failure(report)
    elif report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[2])
    return {
        "nodeid": report.nodeid,
        "clauses": json.loads(props["sessionstate_clauses"]),
        "outcome": outcome,
        "failed_clauses": json.loads(props.get("sessionstate_failed_clauses", "[]")),
        "message": message,
        "seconds": round(report.duration, 4),
        "reproduce": props.get("sessionstate_reproduce", ""),
    }


def _first_line_of_failure(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0] if text.strip() else "failed"


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
            expectations=item.config.getoption(flag("expectations")),
        )  # fmt: skip

    return blob_from_notes(call.excinfo.value, line)


def database_faults() -> list[dict[str, Any]]:
    """This process's database faults since the last call (``database.drain_faults``);
    none in a run that never opened a database."""
    import sys

    if "sessionstate.conformance._harness.database" not in sys.modules:
        return []
    from sessionstate.conformance._harness.database import drain_faults

    return drain_faults()


def merge_faults(
    into: dict[str, dict[str, Any]], faults: str | list[dict[str, Any]] | None
) -> None:
    """Add ``faults`` (a JSON list, or the list) to ``into`` (a run's faults by database)."""
    if not faults:
        return
    from sessionstate.conformance._harness.database import merge_faults as merge

    merge(into, json.loads(faults) if isinstance(faults, str) else faults)


def skipped_ids(config: pytest.Config) -> set[str]:
    """``--sessionstate-skip-ids FILE``: the node ids (a JSON list) a resumed run leaves out."""
    path = config.getoption(flag("skip-ids"))
    if not path:
        return set()
    return set(json.loads(Path(path).read_text(encoding="utf-8")))
