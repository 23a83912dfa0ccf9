"""What a supervised run knows of its tests, over every child it started: the ledger.

Each child writes events into the run journal (``journal``): the tests it collected, the
start and the record of each test, the crashes an xdist controller saw. The supervisor
reads them into a ``Ledger`` (``read``) and adds records of its own for the tests no child
could record: cut off at a bound, running when their process died, or when the run was
stopped at a cap (``record``, ``crashed``). At the end ``merged`` computes the run's
results over every record (``results.results_json``), as one child would have written them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sessionstate.conformance._harness import search
from sessionstate.conformance._harness.runner import CheckOptions
from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance._harness.supervision.bounds import RUN_TIMEOUT_ENV
from sessionstate.conformance._harness.supervision.spawn import signal_name
from sessionstate.conformance._harness.supervision.stack_dumps import fatal_error

__all__ = ["Ledger", "with_signal", "write_junit"]


@dataclass
class Ledger:
    """Every test of the run, collected, started and recorded, with the clauses it checks."""

    #: The run journal's folder (faulthandler's ``<pid>.fatal`` files are there too).
    journal: Path
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
    #: The subject's facts (versions, devices), as the first child reported them.
    facts: dict[str, Any] | None = None
    #: What the child was doing last (``importing the target``, ...).
    phase: str = "starting"

    def read(self, events: Iterable[tuple[int, dict[str, Any]]]) -> bool:
        """Take the journal's new events in; whether a test started among them. A crash an
        xdist controller reported is recorded after the starts read with it."""
        now = time.monotonic()
        started = False
        crashes: list[str] = []
        for pid, event in events:
            kind = event.get("e")
            if kind == "phase":
                self.phase = str(event.get("phase"))
            elif kind == "collected":
                self.collected.update(event.get("tests") or {})
            elif kind == "facts":
                self.facts = self.facts or event.get("facts")
            elif kind == "start":
                started = True
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
            self.crashed(pid, nodeid, None, xdist=self.crashes[nodeid])
        return started

    def done(self) -> set[str]:
        """The tests that have a record (the journal's or one made here)."""
        return set(self.records) | set(self.own)

    def lost(self) -> list[str]:
        """Collected tests with no record (neither the journal's nor one made here)."""
        return [n for n in self.collected if n not in self.records and n not in self.own]

    def all_records(self) -> list[dict[str, Any]]:
        return [*self.records.values(), *self.own.values()]

    def crashed(self, pid: int, nodeid: str, code: int | None, xdist: str = "") -> None:
        """The process ``pid`` ended (with return ``code``, where known) while it ran
        ``nodeid``: record it, naming the fatal error, the signal or the exit status."""
        self.running.pop((pid, nodeid), None)
        if nodeid in self.own:
            return
        fatal = fatal_error(self.journal / f"{pid}.fatal")
        if fatal:
            message = f"the process died with {fatal}"
        elif code is not None and code < 0:
            message = f"the process died with {signal_name(-code)}"
        elif code is not None:
            message = (
                f"the subject's code exited the process with status {code} (sys.exit/os._exit)"
            )
        else:
            message = "the process running it ended without a result"
        if xdist:
            message += f" ({xdist})"
        self.record(nodeid, message)

    def record(self, nodeid: str, message: str, seconds: float = 0.0) -> None:
        """A record made here: ``nodeid`` did not end with a result of its own, its
        clauses are unchecked, ``message`` says why."""
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

    def merged(
        self,
        options: CheckOptions,
        previous: dict[str, Any] | None,
        signum: int | None,
        *,
        seconds: float,
        bounds: tuple[float | None, float | None],
        ran_out: bool,
        stopped_for: str,
    ) -> dict[str, Any]:
        """The run's results over every record: ``previous`` (the last child's results, if
        any) gives the facts when no child reported them; ``bounds`` are the test's and the
        run's; ``ran_out`` and ``stopped_for`` say why tests did not run."""
        from sessionstate import __version__
        from sessionstate.conformance._harness.expectations import parse_expectations
        from sessionstate.conformance._harness.results import results_json

        test_seconds, run_seconds = bounds
        lost = self.lost()
        example = f", e.g. {short_id(lost[0])}" if lost else ""
        if not self.collected:
            unfinished: list[str] | None = None
            why = f"the run ended before its tests were collected ({self.phase})"
            if stopped_for:
                why += f": the subject's code started {stopped_for}"
        else:
            unfinished = sorted({c for n in lost for c in self.collected[n]})
            why = f"{len(lost)} test(s) did not run{example}"
            if ran_out:
                why = (
                    f"the run's bound of {run_seconds:g} s ({RUN_TIMEOUT_ENV} or the "
                    f"profile's) ran out before {len(lost)} test(s) ran{example}"
                )
            if stopped_for:
                why = (
                    f"the run was stopped before {len(lost)} test(s) ran: the subject's code "
                    f"started {stopped_for}"
                )
            if signum:
                why = "interrupted before all its tests ran"
        run = {
            "target": options.target,
            "suite_version": __version__,
            "profile": options.profile,
            "seed": options.run_seed(),
            "randomized": search.is_randomized(options.profile, options.run_seed()),
            # Hypothesis is imported only for a run given a database.
            "database": search.run_database(options.profile, options.database),
            "expectations": options.expectations,
            "seconds": round(seconds, 2),
            "test_timeout": test_seconds,
            "run_timeout": run_seconds,
            "stopped": "interrupted" if signum else None,
            "interrupted": bool(signum),
            "tests_collected": len(self.collected) or None,
            "unfinished": unfinished,
            "unfinished_why": why,
            "reproduce": options.reproduce,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        expectations = parse_expectations(options.expectations) if options.expectations else []
        facts = self.facts or previous or _light_facts(options.target)
        results = results_json(
            self.all_records(), expectations, self._selected(options),
            strict=options.strict, facts=facts, run=run,
        )  # fmt: skip
        if signum:
            results["signal"] = signal_name(signum)
        return results

    def _selected(self, options: CheckOptions) -> list[str]:
        """The clauses the run was asked about, as the plugin selects them."""
        from sessionstate.conformance.clauses import all_clauses

        known = all_clauses()
        if options.reproduce:
            ran = {c for clauses in self.collected.values() for c in clauses}
            return [cid for cid in known if cid in ran]
        wanted = options.clauses
        return [c for c in known if not wanted or c in wanted or known[c].group in wanted]


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


def with_signal(text: str, signum: int) -> str:
    """A child's results (JSON ``text``) with the signal that interrupted the run."""
    results = json.loads(text)
    results["signal"] = signal_name(signum)
    return json.dumps(results, indent=2) + "\n"


def write_junit(options: CheckOptions, results: dict[str, Any]) -> None:
    """The JUnit XML report of ``results``, where ``--junitxml`` asked for one."""
    if options.junitxml:
        from sessionstate.conformance._harness.atomic import write_text_atomic
        from sessionstate.conformance._report.junit import to_junit_xml

        write_text_atomic(options.junitxml, to_junit_xml(results))
