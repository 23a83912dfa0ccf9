"""Wall-clock bounds of a supervised run (``supervisor``): per test, and for start-up.

Each profile bounds one test (its setup, every example, its teardown) from outside the
process running it: past the bound, the supervisor kills that process and records the
test as cut off, its clauses unchecked. ``SESSIONSTATE_TEST_TIMEOUT`` overrides the
profile's bound: a number of seconds above 0, or ``0`` for no bound (a hang then hangs
the run: the report header says so); anything else is a usage error. The supervisor
reads it before any subject code runs, so a subject cannot change it.

Start-up (importing the target, calling its hooks, collecting the suite, up to the first
test's start) is bounded by ``STARTUP_SECONDS`` whenever tests are bounded.

The whole run is bounded too (``RUN_SECONDS`` per profile; ``SESSIONSTATE_RUN_TIMEOUT``
overrides it the same way, ``0`` for none): the supervisor ends the run at the bound, the
tests then running cut off and those not yet run unchecked, and reports within
``REPORT_SECONDS`` more. Inside the run each test gets a budget (``test_budget``): its fair
share of what is left of the run, at least a quarter of the test bound, at most most of
it; a test whose budget runs out stops (its clauses unchecked, "stopped for time", naming
the call), so that one slow test cannot take the whole run and leave the others unrun.

Light (standard library only): the supervisor imports it; ``profiles`` re-exports
``TEST_SECONDS`` next to the Hypothesis settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from sessionstate.conformance.subject import UsageError

__all__ = [
    "REPORT_SECONDS",
    "RUN_SECONDS",
    "RUN_TIMEOUT_ENV",
    "STARTUP_SECONDS",
    "TEST_SECONDS",
    "TEST_TIMEOUT_ENV",
    "run_bound",
    "startup_bound",
    "test_bound",
    "test_budget",
]

TEST_TIMEOUT_ENV = "SESSIONSTATE_TEST_TIMEOUT"
RUN_TIMEOUT_ENV = "SESSIONSTATE_RUN_TIMEOUT"
#: Seconds one test may take, per profile: far above what the slowest test of the suite
#: takes on a loaded CI machine (bench/suite_speed.py), so only a hang reaches it.
TEST_SECONDS: dict[str, float] = {
    "quick": 120.0,
    "quick-unshrunk": 120.0,
    "ci": 300.0,
    "triage": 300.0,
    "mutation": 300.0,
    "deep": 1800.0,
    "fuzz": 1800.0,
}
#: Seconds a whole run may take, per profile, start-up included: the reference takes a
#: few percent of it on a loaded 2-core machine (BENCHMARKS.md, "Suite speed").
RUN_SECONDS: dict[str, float] = {
    "quick": 600.0,
    "quick-unshrunk": 600.0,
    "ci": 1800.0,
    "triage": 1800.0,
    "mutation": 1800.0,
    "deep": 14400.0,
    "fuzz": 14400.0,
}
#: Seconds from the child's start to its first test (imports, hooks, collection).
STARTUP_SECONDS = 120.0
#: Seconds the supervisor may take after the run's bound to end the child and report.
REPORT_SECONDS = 15.0
#: The share of the run's bound the child keeps back (at least 3 s, at most a quarter): its
#: tests stop this much before the supervisor would cut them off, so their records say
#: which call was running.
RUN_RESERVE = 0.05


def test_bound(profile: str, environ: Mapping[str, str]) -> float | None:
    """Seconds one test of ``profile`` may run (``None``: unbounded); ``UsageError`` for
    a ``SESSIONSTATE_TEST_TIMEOUT`` that is not a number of seconds >= 0."""
    return _seconds(environ, TEST_TIMEOUT_ENV, TEST_SECONDS.get(profile, TEST_SECONDS["ci"]),
                    "one test")  # fmt: skip


def run_bound(profile: str, environ: Mapping[str, str]) -> float | None:
    """Seconds a whole run of ``profile`` may take (``None``: unbounded); ``UsageError`` for
    a ``SESSIONSTATE_RUN_TIMEOUT`` that is not a number of seconds >= 0."""
    return _seconds(environ, RUN_TIMEOUT_ENV, RUN_SECONDS.get(profile, RUN_SECONDS["ci"]),
                    "the whole run")  # fmt: skip


def test_budget(
    test_seconds: float | None, left_seconds: float | None, tests_left: int
) -> float | None:
    """Seconds the next test may take before it stops for time (``None``: no budget):
    ``left_seconds`` (of the run, the reserve taken off) shared among ``tests_left`` tests,
    at least a quarter of ``test_seconds`` and at most three quarters of it, never more
    than what is left."""
    if left_seconds is None:
        return None
    share = left_seconds / max(1, tests_left)
    if test_seconds is not None:
        share = min(max(share, test_seconds / 4), test_seconds * 3 / 4)
    return max(0.0, min(share, left_seconds))


def _seconds(environ: Mapping[str, str], name: str, default: float, what: str) -> float | None:
    value = environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UsageError(
            f"{name}={value!r}: give the seconds {what} may take "
            "(a number above 0), or 0 for no bound"
        )
    return seconds or None


def startup_bound(test_seconds: float | None) -> float | None:
    """Seconds from the child's start to its first test: unbounded only when tests are."""
    return None if test_seconds is None else max(STARTUP_SECONDS, test_seconds)
