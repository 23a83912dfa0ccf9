"""Each test of the suite under the watchdog and its share of the run's bound: ``Guard``.

In a test of the suite, every call into subject code returns within the deadline or gets
``watchdog.Hang`` raised into it, which fails the test; other tests run as they are. A
hang the subject swallowed, or turned into another exception, still fails the test as the
hang: the deadlock is what went wrong. A call too slow to judge (``watchdog.TooSlow``), or
a test whose budget (``bounds.test_budget``) ran out, is skipped as not checked, naming
the call and, for a property, how many of its examples ran. A focused test that no example
got through (``checks.focused_on``) is skipped as not checked. A test that starts once the
run's time is spent is skipped as not checked before its fixtures are made.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.recording import RECORDING
from sessionstate.conformance._harness.run_state import RUN_STATE, inside, run_state
from sessionstate.conformance._harness.short_ids import SUITE_DIR

__all__ = ["Guard"]


class Guard:
    """The suite's bounds on each test (a pytest plugin object)."""

    def __init__(self) -> None:
        #: The examples of the running property that ran, and how many it asked for.
        self.examples = [0, 0]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A test of the suite that starts once the run's time is spent (its budget is 0)
        is skipped as not checked, before its fixtures are made."""
        if not inside(item.path, SUITE_DIR) or RUN_STATE not in item.config.stash:
            return
        budget = _budget(item.config)
        if budget is not None and budget <= 0:
            from sessionstate.conformance._harness.applicability import NOT_CHECKED

            run = item.config.getoption(flag("run-timeout")) or 0
            pytest.skip(
                f"{NOT_CHECKED}: the run's bound ({run:g} s) ran out before this test started"
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        """Run the test under the watchdog (see the module's docstring)."""
        if not inside(item.path, SUITE_DIR):
            yield
            return
        from sessionstate.conformance.checks import forget_derailments, not_checked_reason

        forget_derailments()
        config = item.config
        seconds = run_state(config)["call_timeout"] if RUN_STATE in config.stash else None
        outcome: Any
        if seconds is None:
            outcome = yield
        else:
            from sessionstate.conformance._harness.watchdog import Watchdog

            with Watchdog(seconds, budget=_budget(config)) as watch, self._counting(item, watch):
                outcome = yield
            fired = watch.fired
            if fired is not None and (outcome.excinfo is None or outcome.excinfo[1] is not fired):
                outcome.force_exception(fired)
                return
            slow = self._too_slow(outcome.excinfo[1] if outcome.excinfo else None, watch)
            if slow:
                outcome.force_exception(pytest.skip.Exception(slow))
                return
        reason = not_checked_reason(outcome.excinfo[1]) if outcome.excinfo else None
        if reason:
            outcome.force_exception(pytest.skip.Exception(reason))

    @contextmanager
    def _counting(self, item: pytest.Item, watch: Any) -> Iterator[None]:
        """For a ``@given`` test with a budget: count its examples, and stop it between two
        examples once the budget is spent (``watchdog.OutOfTime``), rather than only inside
        a call. Hypothesis' ``inner_test`` is the documented place to wrap each example."""
        from sessionstate.conformance._harness.watchdog import OutOfTime

        test = getattr(item, "obj", None)
        hypothesis: Any = getattr(test, "hypothesis", None)
        inner = getattr(hypothesis, "inner_test", None)
        self.examples = [0, 0]
        if inner is None or not watch.active:
            yield
            return
        chosen = getattr(test, "_hypothesis_internal_use_settings", None)
        self.examples[1] = int(getattr(chosen, "max_examples", 0) or 0)
        started = time.monotonic()

        @functools.wraps(inner)
        def example(*args: Any, **kwargs: Any) -> Any:
            spent = watch.budget is not None and time.monotonic() - started > watch.budget
            if spent and not watch.failing:  # a failure found is shrunk and reported instead
                busiest = watch.busiest()
                watch.slow = watch.slow or OutOfTime(
                    busiest.partition(" ")[0],
                    f"stopped for time: the test's share of the run's bound ({watch.budget:g} "
                    f"s) ran out after {time.monotonic() - started:.1f} s"
                    + (f"; most time in {busiest}" if busiest else ""),
                )
                raise watch.slow
            self.examples[0] += 1
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

    def _too_slow(self, error: BaseException | None, watch: Any) -> str | None:
        """The not-checked reason when the test ended too slow to judge, or ``None``."""
        from sessionstate.conformance._harness.applicability import NOT_CHECKED
        from sessionstate.conformance._harness.watchdog import TooSlow

        slow = error if isinstance(error, TooSlow) else watch.slow
        if slow is None:
            return None
        ran, asked = self.examples
        examples = f" ({ran} of {asked} examples ran)" if asked and ran < asked else ""
        return f"{NOT_CHECKED}: {str(slow).splitlines()[0]}{examples}"


def _budget(config: pytest.Config) -> float | None:
    """The next test's budget: its share of what is left of the run (``bounds.test_budget``);
    ``None`` outside ``sessionstate check`` or with no bound on the run."""
    from sessionstate.conformance._harness.bounds import test_budget

    deadline = config.getoption(flag("run-deadline"))
    if deadline is None:
        return None
    left = deadline - time.time()
    tests = config.stash[RECORDING].tests_left if RECORDING in config.stash else 1
    return test_budget(config.getoption(flag("test-timeout")), left, tests)
