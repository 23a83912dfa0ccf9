"""The per-call deadline (``conformance/_harness/supervision/watchdog.py``): what it interrupts, what it leaves
alone, what it reports, and that it leaves no timer behind.

Functions defined in this file count as subject code (they are not the suite's); the
test function that enters ``Watchdog`` never does (it was on the stack before).
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._harness.supervision import deadline, thread_deadline, watchdog
from sessionstate.conformance._harness.supervision.deadline import (
    Hang,
    OutOfTime,
    TooSlow,
    blame,
    deadline_from,
)
from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._harness.supervision.watchdog import Watchdog, unavailable
from sessionstate.fixtures.zoo.lock_stats_reentrant import StatsReentrantManager

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"{unavailable()}")

SECONDS, TICK = 0.5, 0.05
#: The confirmation bound the tests give: a call still computing is "too slow" then.
CONFIRM = 1.5
#: Scheduling slack: half a second on an idle machine, scaled by the load per core now (a
#: loaded machine delivers the timer and schedules the thread later, never earlier).
SLACK = 0.5 * deadline.load_factor()


@pytest.fixture(autouse=True)
def fresh_watchdog(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No function has hung before; no timer or handler is left after the test."""
    monkeypatch.setattr(watchdog, "_hung", set())
    monkeypatch.setattr(watchdog, "_slow", {})
    monkeypatch.setattr(watchdog, "load_factor", lambda: 1.0)  # an idle machine's bounds
    monkeypatch.setattr(thread_deadline, "load_factor", lambda: 1.0)
    before = signal.getsignal(signal.SIGALRM)
    yield
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def reenter(lock: threading.Lock) -> None:
    with lock, lock:  # a threading.Lock deadlocks on the second entry
        pass


def spin(stopped: threading.Event) -> None:
    try:
        while True:
            pass
    finally:
        stopped.set()


def swallow(lock: threading.Lock) -> str:
    try:
        reenter(lock)
    except BaseException:
        return "swallowed"
    return "returned"


def test_main_thread_lock_reentry_is_interrupted_within_deadline_and_tick() -> None:
    lock = threading.Lock()
    started = time.monotonic()
    with Watchdog(SECONDS, TICK) as watch, pytest.raises(Hang) as caught:
        reenter(lock)
    elapsed = time.monotonic() - started
    assert SECONDS <= elapsed < SECONDS + TICK + SLACK
    assert not lock.locked()  # the `with lock:` that got in was unwound
    assert (caught.value.clause, caught.value.call, watch.fired) == (
        "LOCK-3",
        "reenter()",
        caught.value,
    )
    assert re.fullmatch(
        r"reenter\(\) did not return within 0\.5 s \(deadlock\?\) "
        r"\[LOCK-3: reenter, called at (?:tests/conformance/)?test_watchdog\.py:\d+\]",
        str(caught.value),
    )


def test_a_cpu_loop_in_subject_code_is_too_slow_to_judge_not_a_hang() -> None:
    """Still computing at the deadline: waited for up to the confirmation bound, then
    ``TooSlow`` (its clauses unchecked), never ``Hang``."""
    stopped = threading.Event()
    started = time.monotonic()
    with Watchdog(SECONDS, TICK, confirm=CONFIRM) as watch, pytest.raises(TooSlow) as caught:
        spin(stopped)
    elapsed = time.monotonic() - started
    assert stopped.is_set() and CONFIRM - TICK <= elapsed < CONFIRM + TICK + SLACK
    assert watch.fired is None and watch.slow is caught.value
    assert re.fullmatch(
        r"too slow to judge: spin\(\) still running after \d+\.\d s \(still computing; "
        r"load \d+\.\dx the cores\) \[spin, called at (?:tests/conformance/)?test_watchdog\.py:\d+\]",
        str(caught.value),
    )


def test_a_call_slower_than_the_deadline_that_returns_is_no_failure() -> None:
    """A loaded machine: the call computes past the deadline and returns before the
    confirmation bound; nothing is raised."""
    with Watchdog(0.2, TICK, confirm=CONFIRM) as watch:
        assert spin_for(0.8) == "done"
        assert sleep_for(0.8) == "done"
    assert (watch.fired, watch.slow) == (None, None)


def spin_for(seconds: float) -> str:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass
    return "done"


def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc: wait channels unknown")
def test_a_call_asleep_past_the_confirmation_bound_is_too_slow_not_a_deadlock() -> None:
    """Blocked, but in a sleep, not on a lock (Linux: its wait channel): too slow to judge."""
    with Watchdog(SECONDS, TICK, confirm=CONFIRM), pytest.raises(TooSlow) as caught:
        sleep_for(60)
    assert "blocked in " in str(caught.value) and "not on a lock" in str(caught.value)


def test_a_spent_budget_stops_the_test_in_subject_code_naming_the_busiest_call() -> None:
    started = time.monotonic()
    with Watchdog(5.0, TICK, budget=0.5) as watch, pytest.raises(OutOfTime) as caught:
        while True:
            spin_briefly()
    assert 0.5 <= time.monotonic() - started < 0.5 + TICK + SLACK
    assert watch.slow is caught.value
    assert re.fullmatch(
        r"stopped for time: the test's share of the run's bound \(0\.5 s\) ran out after "
        r"\d+\.\d s, in spin_briefly\(\); most time in spin_briefly\(\) \(\d+ % of \d+ samples\)",
        str(caught.value),
    )


def test_a_function_that_cost_a_test_its_verdict_is_cut_at_once_in_later_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test ran out of time in calls of 0.4 s: ``learn`` marks the function slow (its
    mean call), and in a later test a call of it is too slow to judge after
    ``SLOW_CALL_SECONDS``, not at the confirmation bound, with the same reason every time;
    a function whose calls were short is not marked and runs on."""
    monkeypatch.setattr(watchdog, "SLOW_CALL_SECONDS", 0.3)
    with Watchdog(5.0, TICK, budget=1.0) as watch, pytest.raises(OutOfTime):
        while True:
            sleep_for(0.4)
            spin_for(0.01)
    assert [re.sub(r"\d\.\d", "N", fact) for fact in watch.learn()] == [
        "sleep_for() took N s a call"
    ]
    (fact,) = watchdog._slow.values()
    assert 0.3 <= float(fact.split()[2]) < 0.4 + 2 * TICK + SLACK
    for _ in range(2):
        started = time.monotonic()
        with Watchdog(SECONDS * 10, TICK) as later, pytest.raises(TooSlow) as caught:
            assert spin_for(0.1) == "done"
            sleep_for(60)
        elapsed = time.monotonic() - started
        assert 0.1 + 0.3 <= elapsed < 0.1 + 0.3 + 2 * TICK + SLACK
        assert str(caught.value) == f"too slow to judge: {fact} [sleep_for]"
        assert later.slow is caught.value and later.learn() == []


def test_a_test_that_ran_out_of_time_in_short_calls_marks_nothing_slow() -> None:
    with Watchdog(5.0, TICK, budget=0.5) as watch, pytest.raises(OutOfTime):
        while True:
            spin_for(0.01)
    assert watch.learn() == [] and watchdog._slow == {}


def test_hang_is_a_base_exception_that_except_exception_does_not_catch() -> None:
    assert not issubclass(Hang, Exception)


def test_a_stuck_manager_method_releases_its_lock_and_the_manager_works_on() -> None:
    manager = StatsReentrantManager(max_sessions=2, lock_factory=threading.Lock)
    manager.get_or_create_session("a")
    with Watchdog(SECONDS, TICK), pytest.raises(Hang) as caught:
        manager.stats()
    assert re.fullmatch(
        r"stats\(\) did not return within 0\.5 s \(deadlock\?\) \[LOCK-3: "
        r"StatsReentrantManager\.stats, called at (?:tests/conformance/)?test_watchdog\.py:\d+\]",
        str(caught.value),
    )
    assert (len(manager), "a" in manager, manager.nbytes_by_device()) == (1, True, {})


def test_long_running_suite_and_standard_library_frames_are_left_alone() -> None:
    """The main thread waiting in the suite's own code (joining LOCK-4 threads) or in the
    standard library is no call into the subject, however long it takes."""
    with Watchdog(0.2, TICK) as watch:
        errors = run_threads_within("LOCK-4", [lambda: time.sleep(0.6)], InFlight(), seconds=5)
        threading.Event().wait(0.4)
    assert (errors, watch.fired) == ([], None)


def test_many_short_calls_are_not_one_long_one() -> None:
    """Each call is a new frame with a deadline of its own."""
    deadline = time.monotonic() + 0.6
    with Watchdog(0.2, 0.02) as watch:
        while time.monotonic() < deadline:
            spin_briefly()
    assert watch.fired is None


def spin_briefly() -> None:
    until = time.monotonic() + 0.01
    while time.monotonic() < until:
        pass


def test_a_swallowed_hang_is_still_recorded_and_later_calls_get_one_tick() -> None:
    lock = threading.Lock()
    with Watchdog(SECONDS, TICK) as watch:
        assert swallow(lock) == "swallowed"
        first = watch.fired
        started = time.monotonic()
        with pytest.raises(Hang, match=r"^reenter\(\) did not return within 0\.05 s"):
            reenter(lock)
    assert first is not None and watch.fired is first
    assert time.monotonic() - started < 2 * TICK + SLACK


def test_a_function_that_hung_before_gets_the_shorter_repeat_deadline() -> None:
    lock = threading.Lock()
    with Watchdog(SECONDS, TICK), pytest.raises(Hang):
        reenter(lock)
    started = time.monotonic()
    with Watchdog(5.0, TICK), pytest.raises(Hang, match=r"within 1\.0 s .*; it hung before\]$"):
        reenter(lock)
    assert deadline.REPEAT_SECONDS <= time.monotonic() - started < 1.0 + TICK + SLACK


def test_blame_names_the_clause_and_the_call() -> None:
    stopped = threading.Event()
    with (
        Watchdog(SECONDS, TICK, confirm=CONFIRM),
        pytest.raises(Hang) as caught,
        blame("ACCT-9", "device_bytes(loop, seen)", why=", after x = loop()"),
    ):
        spin(stopped)  # still computing: a blame block's clause is that the call ends
    assert caught.value.clause == "ACCT-9"
    assert str(caught.value) == (
        "device_bytes(loop, seen) did not return within 0.5 s, after x = loop() [ACCT-9]"
    )


def test_a_blame_blocks_deadline_for_a_computing_call_scales_with_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watchdog, "load_factor", lambda: 3.0)
    with (
        Watchdog(0.2, TICK, confirm=CONFIRM),
        pytest.raises(Hang, match=r"did not return within 0\.6 s \[ACCT-9\]$"),
        blame("ACCT-9", "device_bytes(loop, seen)", why=""),
    ):
        spin(threading.Event())


def test_hypothesis_does_not_shrink_or_replay_a_hang() -> None:
    """One example runs into the deadline; Hypothesis re-raises at once."""
    lock, tried = threading.Lock(), []

    @settings(max_examples=50, database=None, deadline=None)
    @given(st.integers())
    def hangs(n: int) -> None:
        tried.append(time.monotonic())  # from the example's start: not Hypothesis' own
        reenter(lock)

    with Watchdog(SECONDS, TICK), pytest.raises(Hang):
        hangs()
    assert (len(tried), time.monotonic() - tried[0] < SECONDS + TICK + SLACK) == (1, True)


def test_disarmed_after_the_block_and_nesting_restores_the_outer_timer() -> None:
    with Watchdog(SECONDS, TICK):
        outer_handler = signal.getsignal(signal.SIGALRM)
        with Watchdog(0.2, 0.1):
            assert signal.getitimer(signal.ITIMER_REAL)[1] == pytest.approx(0.1)
        assert signal.getsignal(signal.SIGALRM) == outer_handler
        assert signal.getitimer(signal.ITIMER_REAL)[1] == pytest.approx(TICK)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(3 * TICK)  # no stray tick arrives (SIGALRM's default would end the process)


def test_inactive_off_the_main_thread_and_when_sigalrm_is_taken() -> None:
    seen: list[object] = []

    def in_thread() -> None:
        with Watchdog(SECONDS, TICK) as watch:
            seen.extend([unavailable(), watch.active])

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(5)
    assert seen == ["tests run off the main thread", False]

    def theirs(signum: int, frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, theirs)
    try:
        with Watchdog(SECONDS, TICK) as watch:
            assert not watch.active and signal.getsignal(signal.SIGALRM) is theirs
        assert unavailable() == f"SIGALRM is handled by {theirs.__qualname__!r}"
    finally:
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 5.0), ("", 5.0), (" 2.5 ", 2.5), ("0", None), ("0.0", None)]
)
def test_deadline_from_a_setting(value: str | None, seconds: float | None) -> None:
    assert deadline_from(value) == seconds


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "five"])
def test_deadline_from_rejects_what_is_not_seconds(value: str) -> None:
    with pytest.raises(ValueError):
        deadline_from(value)


# Threads of the test's own (run_threads_within) past their deadline ----------------------


def test_threads_still_computing_past_the_deadline_are_waited_for() -> None:
    """A loaded machine slows the threads: they end before the confirmation bound, no failure."""
    errors = run_threads_within("LOCK-4", [lambda: spin_for(0.8)] * 2, InFlight(), seconds=0.2)
    assert errors == []


def test_threads_blocked_on_a_lock_fail_the_clause_soon_after_the_deadline() -> None:
    lock = threading.Lock()
    lock.acquire()
    inflight = InFlight()

    def stuck() -> None:
        with inflight.call("stats()"):
            lock.acquire()

    started = time.monotonic()
    with pytest.raises(Hang, match=r"thread 0: stats\(\) did not return within 0\.2 s") as caught:
        run_threads_within("LOCK-4", [stuck], inflight, seconds=0.2)
    assert time.monotonic() - started < 0.2 + 0.2 + 4 * deadline.TICK_SECONDS + SLACK
    assert (caught.value.clause, caught.value.call) == ("LOCK-4", "thread 0: stats()")
    lock.release()


def test_threads_computing_past_the_confirmation_bound_are_too_slow_to_judge() -> None:
    stop = threading.Event()
    inflight = InFlight()

    def forever() -> None:
        with inflight.call("get_or_create_session('a')"):
            while not stop.is_set():
                pass

    started = time.monotonic()
    try:
        with pytest.raises(TooSlow, match=r"^too slow to judge: thread 0: get_or_create"):
            run_threads_within("LOCK-4", [forever], inflight, seconds=0.2)
    finally:
        stop.set()
    confirm = deadline.CONFIRM_FACTOR * 0.2
    assert confirm <= time.monotonic() - started < confirm + 4 * deadline.TICK_SECONDS + SLACK
