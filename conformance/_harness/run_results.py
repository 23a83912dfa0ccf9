"""What the end of a run writes: ``RunResults``.

At the end of the session, the process that ran the tests (or xdist's controller) turns
the records into the JSON results (``results.results_json``), writes them to
``--sessionstate-report-json`` and the per-clause JUnit XML to ``--sessionstate-junitxml``,
and, outside ``sessionstate check`` (whose supervisor decides), sets the exit status by the
one exit policy (``exit_policy.session_status``). An xdist worker hands its facts, its
collection and its database faults to the controller instead.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from sessionstate.conformance._harness.atomic import write_error, write_text_atomic
from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.recording import (
    RECORDING,
    Recording,
    database_faults,
    merge_faults,
)
from sessionstate.conformance._harness.run_state import facts, json_facts, run_state
from sessionstate.conformance._harness.short_ids import is_suite_id, short_id

__all__ = ["RunResults", "how_it_ended", "write_junit"]

#: How a cut-short run's report says why: ``interrupted`` (Ctrl-C) or these prefixes.
_INTERRUPTIONS = ("interrupted", "collection errors", "pytest.exit", "internal error")


class RunResults:
    """The session's end (a pytest plugin object)."""

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        config = session.config
        state = run_state(config)
        recording = config.stash[RECORDING]
        if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
            output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
            if state["subject"] is not None:  # it collected conformance tests
                output["sessionstate"] = facts(config)
                # Each test's clauses: the controller's, should another worker's test be lost.
                output["sessionstate_collected"] = state["collected"]
            output["sessionstate_infrastructure"] = database_faults()
            return
        merge_faults(recording.infrastructure, database_faults())
        no_run = (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.NO_TESTS_COLLECTED)
        if exitstatus in no_run or config.option.collectonly:
            return  # no test ran, nor was one to: a report from an earlier run stays as it was
        path = config.getoption(flag("report-json"))
        junit = config.getoption(flag("junitxml"))
        if not (path or junit or recording.records):
            return
        from sessionstate import __version__
        from sessionstate.conformance._harness import search
        from sessionstate.conformance._harness.results import results_json

        database = search.run_database(state["profile"], config.getoption(flag("database")))

        run = {
            "target": state["target"],
            "suite_version": __version__,
            "profile": state["profile"],
            "seed": state["seed"],
            "randomized": search.is_randomized(state["profile"], state["seed"]),
            "database": database,
            "expectations": config.getoption(flag("expectations")),
            "seconds": round(time.monotonic() - state["started"], 2),
            # Under `sessionstate check`: the wall-clock bound of one test (None: unbounded).
            "test_timeout": config.getoption(flag("test-timeout")),
            "run_timeout": config.getoption(flag("run-timeout")),
            **how_it_ended(session, exitstatus, recording),
            # The example database failing mid-run (database.GuardedDatabase): never a clause's.
            "infrastructure": list(recording.infrastructure.values()),
            # When the run ended, in UTC: the matrix and the JUnit XML say how old a result is.
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        payload = results_json(
            recording.records, state["expectations"], state["selected"],
            strict=config.getoption(flag("strict")), facts=json_facts(config), run=run,
        )  # fmt: skip
        state["results"] = payload  # for the clause table in the terminal summary
        if not config.getoption(flag("journal")):  # under `check`, its supervisor's
            from sessionstate.conformance._harness.exit_policy import session_status

            # One exit policy (exit_policy): the verdict's status, not "a test failed".
            others = bool(recording.others_failed)
            session.exitstatus = session_status(payload, exitstatus, others)
        if path:
            write_text_atomic(path, json.dumps(payload, indent=2) + "\n")
        if junit:
            write_junit(junit, payload)


def how_it_ended(session: pytest.Session, exitstatus: int, recording: Recording) -> dict[str, Any]:
    """For ``results.results_json``: whether the run stopped before its last test and why
    (``stopped``; ``interrupted`` unless it stopped at a failure as ``-x`` asks), how many
    tests it held, and which clauses' tests did not all run (``None``: not known here)."""
    state = run_state(session.config)
    why = recording.stopped
    if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
        why = "internal error"
    elif exitstatus == pytest.ExitCode.INTERRUPTED:
        why = why or "interrupted"
    elif session.shouldfail or session.shouldstop:
        why = str(session.shouldfail or session.shouldstop)  # -x, --maxfail
    else:
        why = None
    collected: dict[str, list[str]] = state["collected"]
    reproduce = session.config.getoption(flag("reproduce"))
    unfinished: list[str] | None = []
    note = ""
    recorded = {record["nodeid"] for record in recording.records}
    if why is not None:
        unfinished = None
        if collected:
            unfinished = sorted({c for n, cs in collected.items() if n not in recorded for c in cs})
        note = "interrupted" if why == "interrupted" else f"the run stopped ({why})"
        note += " before all its tests ran"
    crashed, by_worker = recording.crashed, recording.worker_collected
    lost = [
        n for n in state["collected_ids"] if n not in recorded and (n in crashed or is_suite_id(n))
    ]
    if why is None and lost:  # a crashed worker's test: never silently absent
        # Its clauses, as a worker that finished collected them; else every clause.
        known = all(n in by_worker for n in lost)
        unfinished = sorted({c for n in lost for c in by_worker[n]}) if known else None
        crash = crashed.get(lost[0])
        note = f"{len(lost)} test(s) ended without a result, e.g. {short_id(lost[0])}" + (
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


def write_junit(path: str, payload: dict[str, Any]) -> None:
    """The per-clause JUnit XML (``junit.to_junit_xml``) of ``--sessionstate-junitxml``,
    through ``atomic.write_text_atomic`` (a file replaced whole, a device or FIFO written
    in place). A write that fails (a full disk) is one line on stderr, not a traceback
    that would cut off the clause table. (``sessionstate check`` writes its
    ``--junitxml`` itself, after the table, and exits 4 then.)"""
    from sessionstate.conformance._report.junit import to_junit_xml

    try:
        write_text_atomic(path, to_junit_xml(payload))
    except OSError as error:
        print(
            f"sessionstate: error: {flag('junitxml')} {path!r} could not be written: "
            f"{write_error(error)}",
            file=sys.stderr,
        )
