"""The project's own pytest plugins, on the plain pytest route: what they may not decide.

``sessionstate check`` runs the suite under its own configuration, but ``pytest --pyargs
sessionstate.conformance.suite`` runs it under the project's, with the plugins the project
has installed. Two of the common ones would change a clause's outcome:

* **pytest-timeout** (``timeout`` in the project's configuration, ``--timeout``) fails a
  test that runs longer than its bound: a clause ERROR for a test that was only slow,
  where the suite's own bounds make it UNCHECKED. A test it stops is UNCHECKED here too,
  saying which bound stopped it and how to lift it (``foreign_timeout``).
* **pytest-rerunfailures** (``--reruns``) runs a failed test again and keeps the last
  attempt: a bug that shows one time in two would pass, and the table would count the
  test once per attempt. The first attempt decides and is the one counted
  (``FirstAttempts``); pytest's own summary still shows the reruns.

The kill is told by its origin, not its words: the exception passed through
pytest-timeout's own signal handler (``timeout_sigalrm``'s code object). Its thread
method ends the process instead (``os._exit``), which the plain route cannot outlive;
``sessionstate check`` reports that as an interrupted run. pytest-randomly's reordering
changes nothing a test of the suite depends on (``tests/plugin/test_foreign.py``).
"""

from __future__ import annotations

import sys
from types import TracebackType

import pytest

from sessionstate.conformance._harness.applicability import NOT_CHECKED

__all__ = ["FirstAttempts", "foreign_timeout", "not_checked_report"]


def _timeout_handler_code() -> object | None:
    """The code object of pytest-timeout's signal handler, if the plugin is loaded."""
    module = sys.modules.get("pytest_timeout")
    handler = getattr(module, "timeout_sigalrm", None)
    return getattr(handler, "__code__", None)


def _frames(tb: TracebackType | None) -> list[object]:
    codes: list[object] = []
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return codes


def foreign_timeout(error: BaseException) -> str | None:
    """The not-checked reason when pytest-timeout's handler raised ``error``, else ``None``."""
    code = _timeout_handler_code()
    if code is None or code not in _frames(error.__traceback__):
        return None
    said = (str(error).strip().splitlines() or ["Timeout"])[0]
    return (
        f"{NOT_CHECKED}: stopped by pytest-timeout ({said}), a bound of the project's pytest "
        "configuration, not the suite's; the suite bounds its own tests, so run it with "
        "-p no:timeout (or a larger timeout) to have them checked to the end"
    )


def not_checked_report(report: pytest.TestReport, reason: str) -> None:
    """Make ``report`` the skip a bound of the suite's own would have made: UNCHECKED."""
    path, line, _ = report.location
    report.outcome = "skipped"
    report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {reason}")


class FirstAttempts:
    """Which tests already have a record in this process: a rerun's reports after the
    first attempt's are not recorded again (the first attempt decides)."""

    def __init__(self) -> None:
        self._recorded: set[str] = set()  # "when:nodeid"

    def first(self, report: pytest.TestReport) -> bool:
        """Whether ``report`` is the first of its test and phase (setup, call, teardown):
        a rerun repeats the phases of the first attempt, which are already recorded."""
        key = f"{report.when}:{report.nodeid}"
        if key in self._recorded:
            return False
        self._recorded.add(key)
        return True

    @staticmethod
    def outcome(report: pytest.TestReport) -> str:
        """pytest-rerunfailures reports an attempt it runs again as ``rerun``: a failure."""
        outcome = str(report.outcome)  # typed as passed/failed/skipped: "rerun" is the plugin's
        return "failed" if outcome == "rerun" else outcome
