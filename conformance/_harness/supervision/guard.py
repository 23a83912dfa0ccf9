"""Each test of the suite under the watchdog and its share of the run's bound: ``Guard``.

In a test of the suite, every call into subject code returns within the deadline or gets
``deadline.Hang`` raised into it, which fails the test; other tests run as they are. A
hang the subject swallowed, or turned into another exception, still fails the test as the
hang: the deadlock is what went wrong. A call too slow to judge (``deadline.TooSlow``), or
a test whose budget (``bounds.test_budget``) ran out, is skipped as not checked, naming
the call and, for a property, how many of its examples ran. A focused test that no example
got through (``checks.focused_on``) is skipped as not checked. A test that starts once the
run's time is spent is skipped as not checked before its fixtures are made. A test ended
by one of pytest's outcomes that subject code raised (``pytest.skip``, ``.xfail``,
``.exit``, a ``KeyboardInterrupt`` with no signal: ``own_outcomes``) is skipped as not
checked, naming the call: only the suite's own skips are skips.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.recording import RECORDING
from sessionstate.conformance._harness.run_state import RUN_STATE, inside, run_state
from sessionstate.conformance._harness.short_ids import SUITE_DIR
from sessionstate.conformance._harness.supervision import forks
from sessionstate.conformance._harness.supervision.own_outcomes import (
    SubjectOutcome,
    foreign,
    mine,
    skip,
)

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
            skip(f"{NOT_CHECKED}: the run's bound ({run:g} s) ran out before this test started")

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
        watch: Any = None
        if seconds is None:
            with forks.armed():
                outcome = yield
        else:
            from sessionstate.conformance._harness.supervision.watchdog import Watchdog

            with (
                Watchdog(seconds, budget=_budget(config)) as watch,
                self._counting(item, watch),
                forks.armed(),
            ):
                outcome = yield
            fired = watch.fired
            if fired is not None and (outcome.excinfo is None or outcome.excinfo[1] is not fired):
                outcome.force_exception(fired)
                return
        error = outcome.excinfo[1] if outcome.excinfo else None
        failure = _flaky_failure(error)
        if failure is not None:  # failed once, not when replayed: the failure, alone
            outcome.force_exception(failure)
            return
        reason = _subject_outcome(error) or _flaky(error)
        if reason is None and watch is not None:
            reason = self._too_slow(error, watch)
        if reason is None and error is not None:
            reason = not_checked_reason(error)
        if reason:
            outcome.force_exception(mine(pytest.skip.Exception(reason)))

    @contextmanager
    def _counting(self, item: pytest.Item, watch: Any) -> Iterator[None]:
        """For a ``@given`` test with a budget: count its examples, and stop it between two
        examples once the budget is spent (``deadline.OutOfTime``), rather than only inside
        a call. Hypothesis' ``inner_test`` is the documented place to wrap each example."""
        from sessionstate.conformance._harness.supervision.deadline import OutOfTime

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
        from sessionstate.conformance._harness.supervision.deadline import TooSlow

        slow = error if isinstance(error, TooSlow) else watch.slow
        if slow is None:
            return None
        learned = watch.learn()  # its slow functions are cut at once in the tests after it
        ran, asked = self.examples
        examples = f" ({ran} of {asked} examples ran)" if asked and ran < asked else ""
        also = "".join(f"; too slow to judge: {fact}" for fact in learned)
        return f"{NOT_CHECKED}: {str(slow).splitlines()[0]}{examples}{also}"


def _subject_outcome(error: BaseException | None) -> str | None:
    """The not-checked reason of a test ended by one of pytest's outcomes (or a
    ``KeyboardInterrupt`` with no signal) raised by subject code, or ``None``: only the
    suite skips a test, expects it to fail or interrupts the run (``own_outcomes``)."""
    from sessionstate.conformance._harness.applicability import NOT_CHECKED

    if isinstance(error, SubjectOutcome):
        return f"{NOT_CHECKED}: {error}"
    described = foreign(error) if error is not None else None
    if described is None:
        return None
    return f"{NOT_CHECKED}: the subject's code raised {described}{_where(error)}"


def _is_flaky(error: BaseException | None) -> bool:
    errors = sys.modules.get("hypothesis.errors")
    return errors is not None and isinstance(error, errors.Flaky)


def _flaky_failure(error: BaseException | None) -> BaseException | None:
    """For Hypothesis' ``FlakyFailure`` (a case failed, then passed when replayed: the
    subject changed its answers) around a clause failure: that failure, its message saying
    so, in place of the exception group printed whole; else ``None``."""
    from sessionstate.conformance.checks import ClauseFailure

    if not _is_flaky(error):
        return None
    stack = [error]
    while stack:
        inner = stack.pop(0)
        if isinstance(inner, ClauseFailure):
            again = " (it failed once, then not when Hypothesis replayed the case: the "
            again += "subject's answers changed between two runs of the same calls)"
            failure = ClauseFailure(inner.clause, f"{inner}{again}")
            return failure.with_traceback(inner.__traceback__)
        stack.extend(getattr(inner, "exceptions", ()))
    return None


def _flaky(error: BaseException | None) -> str | None:
    """The not-checked reason of a test Hypothesis found flaky with no clause failure
    inside (``FlakyStrategyDefinition``: the suite's draws follow the subject's answers,
    which changed when a case was replayed), else ``None``."""
    from sessionstate.conformance._harness.applicability import NOT_CHECKED

    if not _is_flaky(error):
        return None
    first = (str(error).strip().splitlines() or [""])[0]
    return (
        f"{NOT_CHECKED}: the subject answered the same calls differently when Hypothesis "
        f"replayed a case ({type(error).__name__}: {first}); its answers depend on more than "
        "the calls the suite made (state shared between managers, the time, randomness)"
    )


def _where(error: BaseException | None) -> str:
    """`` in fn (file:line)``: the innermost frame of subject code ``error`` passed through."""
    from sessionstate.conformance._harness.supervision.frames import SUBJECT, kind_of

    tb = error.__traceback__ if error is not None else None
    found = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if kind_of(code.co_filename) == SUBJECT:
            found = f" in {code.co_name} ({code.co_filename}:{tb.tb_lineno})"
        tb = tb.tb_next
    return found


def _budget(config: pytest.Config) -> float | None:
    """The next test's budget: its share of what is left of the run (``bounds.test_budget``);
    ``None`` outside ``sessionstate check`` or with no bound on the run."""
    from sessionstate.conformance._harness.supervision.bounds import test_budget

    deadline = config.getoption(flag("run-deadline"))
    if deadline is None:
        return None
    left = deadline - time.time()
    tests = config.stash[RECORDING].tests_left if RECORDING in config.stash else 1
    return test_budget(config.getoption(flag("test-timeout")), left, tests)
