"""What a pytest run of the suite prints besides pytest's own lines: ``Header``.

The report header says what is under test (version, target, profile, seed, the subject's
facts; ``under_test``), how calls into the subject are bounded, and, under
``sessionstate check``'s supervisor, the bound of each test and of the run. The terminal
summary adds, under xdist, the facts the header could not give without loading the
subject, then one row per clause and the verdict. A run of the caller's own tests gets
none of it.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.run_state import (
    CALL_TIMEOUT_ENV,
    PROFILE_ENV,
    RUN_STATE,
    SUBJECT_ENV,
    facts,
    is_xdist_controller,
    run_state,
    suite_requested,
)

__all__ = ["Header"]


class Header:
    """The suite's header and summary lines (a pytest plugin object)."""

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        if not suite_requested(config):
            return []  # the caller's own tests: nothing of ours to report, and no torch import
        from sessionstate.conformance._harness import under_test

        if is_xdist_controller(config):
            lines = under_test.controller_header_lines(*_run_line_args(config))
        else:
            lines = under_test.header_lines(*_run_line_args(config), facts(config))
        return [*lines, _deadline_line(config), *_bound_lines(config)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str] | None:
        """A test whose every failed clause an expectations entry expects to fail (``CLAUSE
        xfail REASON``) is counted by pytest as such, ``x``: the verdict counts it so, and
        pytest's last line must not say ``N failed`` in red under a conformant verdict. Only
        what pytest prints changes; the test's record is its own."""
        if not report.failed or report.when != "call" or RUN_STATE not in config.stash:
            return None
        import json

        props = dict(report.user_properties)
        failed = json.loads(str(props.get("sessionstate_failed_clauses", "[]")))
        expected = {
            e.target for e in run_state(config)["expectations"] if e.is_clause and e.kind == "xfail"
        }
        if failed and all(cid in expected for cid in failed):
            return "expected failures", "x", "XFAIL (expected)"
        return None

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """Under xdist, what the header could not say without loading the subject; then
        the clause table (in the process that computed the results: never in a worker)."""
        state = run_state(config)
        if (
            terminalreporter.verbosity >= 0
            and is_xdist_controller(config)
            and state["facts"] is not None
            and suite_requested(config)
        ):
            from sessionstate.conformance._harness import under_test

            terminalreporter.write_sep("-", "sessionstate: under test (as the workers loaded it)")
            for line in under_test.header_lines(*_run_line_args(config), state["facts"]):
                terminalreporter.write_line(line)
        _clause_table(terminalreporter, config)


def _bound_lines(config: pytest.Config) -> list[str]:
    """Under ``sessionstate check``'s supervisor: the wall-clock bound of one test."""
    if not config.getoption(flag("journal")):
        return []
    seconds = config.getoption(flag("test-timeout"))
    if not seconds:
        return ["  each test: unbounded (SESSIONSTATE_TEST_TIMEOUT=0); a hang hangs the run"]
    lines = [
        f"  each test: cut off after {seconds:g} s of wall-clock time (the profile's bound, "
        "or SESSIONSTATE_TEST_TIMEOUT), its clauses unchecked"
    ]
    run = config.getoption(flag("run-timeout"))
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
    """Whether calls into the subject are bounded, and by what (see ``guard``)."""
    from sessionstate.conformance._harness.supervision.deadline import CONFIRM_FACTOR
    from sessionstate.conformance._harness.supervision.watchdog import unavailable

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
    subject, profile = os.environ.get(SUBJECT_ENV), os.environ.get(PROFILE_ENV)
    env = f"  env {SUBJECT_ENV}={subject!r} {PROFILE_ENV}={profile!r}"
    return __version__, state["target"], state["profile"], state["seed"], env


def _clause_table(terminalreporter: Any, config: pytest.Config) -> None:
    """One row per clause, failures first, and the verdict; ``-qq`` or
    ``--sessionstate-no-summary`` (``sessionstate check`` prints its own) leave it out."""
    results = run_state(config).get("results")
    if results is None or terminalreporter.verbosity < -1:
        return
    if config.getoption(flag("no-summary")) or not suite_requested(config):
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
