"""Wall-clock bounds of a supervised run (``supervisor``): per test, and for start-up.

Each profile bounds one test (its setup, every example, its teardown) from outside the
process running it: past the bound, the supervisor kills that process and records the
test as cut off, its clauses unchecked. ``SESSIONSTATE_TEST_TIMEOUT`` overrides the
profile's bound: a number of seconds above 0, or ``0`` for no bound (a hang then hangs
the run: the report header says so); anything else is a usage error. The supervisor
reads it before any subject code runs, so a subject cannot change it.

Start-up (importing the target, calling its hooks, collecting the suite, up to the first
test's start) is bounded by ``STARTUP_SECONDS`` whenever tests are bounded.

Light (standard library only): the supervisor imports it; ``profiles`` re-exports
``TEST_SECONDS`` next to the Hypothesis settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from sessionstate.conformance.subject import UsageError

__all__ = ["STARTUP_SECONDS", "TEST_SECONDS", "TEST_TIMEOUT_ENV", "startup_bound", "test_bound"]

TEST_TIMEOUT_ENV = "SESSIONSTATE_TEST_TIMEOUT"
#: Seconds one test may take, per profile: far above what the slowest test of the suite
#: takes on a loaded CI machine (bench/suite_speed.py), so only a hang reaches it.
TEST_SECONDS: dict[str, float] = {
    "quick": 120.0,
    "ci": 300.0,
    "triage": 300.0,
    "mutation": 300.0,
    "deep": 1800.0,
    "fuzz": 1800.0,
}
#: Seconds from the child's start to its first test (imports, hooks, collection).
STARTUP_SECONDS = 120.0


def test_bound(profile: str, environ: Mapping[str, str]) -> float | None:
    """Seconds one test of ``profile`` may run (``None``: unbounded); ``UsageError`` for
    a ``SESSIONSTATE_TEST_TIMEOUT`` that is not a number of seconds >= 0."""
    value = environ.get(TEST_TIMEOUT_ENV)
    if value is None or not value.strip():
        return TEST_SECONDS.get(profile, TEST_SECONDS["ci"])
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UsageError(
            f"{TEST_TIMEOUT_ENV}={value!r}: give the seconds one test may take "
            "(a number above 0), or 0 for no bound"
        )
    return seconds or None


def startup_bound(test_seconds: float | None) -> float | None:
    """Seconds from the child's start to its first test: unbounded only when tests are."""
    return None if test_seconds is None else max(STARTUP_SECONDS, test_seconds)
