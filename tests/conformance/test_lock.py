"""The LOCK machinery: instrumented locks (``conformance/_machine/lock.py``), the threads of
the concurrent checks (``conformance/_harness/supervision/watchdog.py``), and the exact failures the LOCK
suite reports for subjects with one locking bug each (the per-call deadline itself:
``test_watchdog.py``)."""

from __future__ import annotations

import functools
import re
import sys
import threading
from typing import Any

import pytest

from sessionstate.conformance import Subject
from sessionstate.conformance._harness.supervision import watchdog
from sessionstate.conformance._harness.supervision.deadline import Hang
from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._harness.supervision.watchdog import Watchdog
from sessionstate.conformance._machine.acct import within_deadline
from sessionstate.conformance._machine.lock import (
    CountingFactory,
    Gate,
    LockReentered,
    RecordingLock,
    fast_switching,
    perturbed,
)
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.suite import test_lock as suite
from sessionstate.fixtures.reference_subject import subject as reference
from sessionstate.fixtures.zoo import lock_contains_unlocked, lock_stats_reentrant
from sessionstate.reference import SessionStateManager


def outer(lock: RecordingLock) -> None:
    with lock:
        inner(lock)


def inner(lock: RecordingLock) -> None:
    with lock:
        pass


def in_a_thread(lock: RecordingLock) -> None:
    """``outer(lock)`` in a thread started by the suite's code, so that the route the lock
    records starts at ``outer``; what it raised is re-raised here."""
    errors = run_threads_within("LOCK-2", [functools.partial(outer, lock)], InFlight())
    if errors:
        raise errors[0][1]


class TestCountingFactory:
    def test_counts_calls_and_keeps_what_it_made(self) -> None:
        factory = CountingFactory()
        first, second = factory(), factory()
        assert (factory.calls, factory.made) == (2, [first, second])
        assert type(first) is type(threading.Lock())


class TestRecordingLock:
    def test_supports_only_the_context_manager_protocol(self) -> None:
        lock = RecordingLock()
        assert [hasattr(lock, name) for name in ("acquire", "release", "locked")] == [False] * 3

    def test_counts_enters_and_exits_and_knows_when_held(self) -> None:
        lock = RecordingLock()
        with lock:
            assert lock.held
        with lock:
            pass
        assert (lock.enters, lock.exits, lock.held, lock.reentries) == (2, 2, False, [])

    def test_reentry_raises_at_once_and_records_the_route(self) -> None:
        lock = RecordingLock(reentry="raise")
        with pytest.raises(LockReentered, match="via outer -> inner"):
            in_a_thread(lock)
        assert [(r.thread, r.path) for r in lock.reentries] == [("thread 0", ("outer", "inner"))]
        assert (lock.enters, lock.exits, lock.held) == (1, 1, False)

    def test_allowed_reentry_nests_and_is_recorded(self) -> None:
        lock = RecordingLock(reentry="allow")
        in_a_thread(lock)
        assert (lock.enters, lock.exits, lock.held) == (2, 2, False)
        assert [r.describe() for r in lock.reentries] == ["outer -> inner"]

    def test_excludes_other_threads(self) -> None:
        lock, order = RecordingLock(yield_after_release=True), []

        def contender() -> None:
            with lock:
                order.append("contender")

        with lock:
            thread = threading.Thread(target=contender)
            thread.start()
            thread.join(0.2)
            order.append("holder")
        thread.join(5)
        assert order == ["holder", "contender"]

    def test_exit_by_a_thread_that_does_not_hold_it_raises(self) -> None:
        lock = RecordingLock()
        with pytest.raises(RuntimeError, match="does not hold it"):
            lock.__exit__(None, None, None)

    def test_factory_builds_configured_locks(self) -> None:
        make = RecordingLock.factory(reentry="allow")
        first, second = make(), make()
        assert first is not second
        in_a_thread(first)
        assert first.enters == 2


def _members(gate: Gate, *works: Any) -> list[str]:
    """Run each of ``works`` (a function of the log) in a thread that is a member of
    ``gate``; the log they wrote."""
    log: list[str] = []

    def member(work: Any) -> Any:
        def run() -> None:
            with gate.member():
                work(log)

        return run

    errors = run_threads_within("LOCK-6", [member(work) for work in works], InFlight())
    assert not errors, errors
    return log


class TestGate:
    """``Gate``: no member passes the door while another is still on its way to it."""

    def test_no_member_passes_before_the_others_have_arrived(self) -> None:
        gate = Gate(2, seconds=30)

        def first(log: list[str]) -> None:
            gate.arrive()
            log.append("first passed")

        def second(log: list[str]) -> None:
            threading.Event().wait(0.1)  # the first is at the door by now
            log.append("second arrives")
            gate.arrive()

        assert _members(gate, first, second) == ["second arrives", "first passed"]
        assert not gate.opened

    def test_a_party_not_started_yet_is_waited_for(self) -> None:
        gate, log = Gate(2, seconds=30), []

        def early() -> None:
            with gate.member():
                gate.arrive()
                log.append("early passed")

        def late() -> None:
            threading.Event().wait(0.1)
            log.append("late joins")
            with gate.member():
                pass

        assert not run_threads_within("LOCK-6", [early, late], InFlight())
        assert log == ["late joins", "early passed"]

    def test_a_member_that_leaves_is_not_waited_for(self) -> None:
        gate = Gate(2, seconds=30)

        def waits(log: list[str]) -> None:
            gate.arrive()
            log.append("passed")

        def leaves(log: list[str]) -> None:
            threading.Event().wait(0.1)
            log.append("left")

        assert _members(gate, waits, leaves) == ["left", "passed"]

    def test_a_member_back_from_the_lock_is_on_its_way_again(self) -> None:
        gate = Gate(2, seconds=30)
        through = threading.Event()

        def twice(log: list[str]) -> None:
            gate.arrive()
            gate.depart()  # out of the lock: the other must wait for this one again
            through.set()
            threading.Event().wait(0.1)
            log.append("back at the door")
            gate.arrive()

        def once(log: list[str]) -> None:
            gate.arrive()
            through.wait(30)
            gate.arrive()  # a second section: the other is on its way
            log.append("passed again")

        log = _members(gate, twice, once)
        assert log == ["back at the door", "passed again"], log

    def test_a_member_that_never_comes_opens_the_gate_for_good(self) -> None:
        gate, stuck = Gate(2, seconds=0.05), threading.Event()

        def waits(log: list[str]) -> None:
            gate.arrive()
            log.append("passed")
            stuck.set()

        def never_arrives(log: list[str]) -> None:
            stuck.wait(30)

        assert _members(gate, waits, never_arrives) == ["passed"]
        assert gate.opened
        gate.join()
        gate.arrive()  # an open gate holds no one

    def test_a_thread_that_is_not_a_member_passes_at_once(self) -> None:
        gate = Gate(1, seconds=30)
        gate.arrive()
        gate.depart()
        assert not gate.opened

    def test_a_lock_with_a_gate_meets_it_at_the_door_and_not_on_reentry(self) -> None:
        class Counting(Gate):
            def __init__(self) -> None:
                super().__init__(1)
                self.seen: list[str] = []

            def arrive(self) -> None:
                self.seen.append("arrive")

            def depart(self) -> None:
                self.seen.append("depart")

        gate = Counting()
        lock = RecordingLock(reentry="allow", gate=gate)
        in_a_thread(lock)  # outer enters, inner re-enters
        assert gate.seen == ["arrive", "depart"]


class TestPerturbed:
    def test_runs_the_work_with_a_hook_and_removes_it(self) -> None:
        seen: list[object] = []
        perturbed(lambda: seen.append(sys.getprofile()), "seed", 1.0)()
        assert seen[0] is not None and sys.getprofile() is None

    def test_propagates_exceptions(self) -> None:
        with pytest.raises(ZeroDivisionError):
            perturbed(lambda: 1 / 0, "seed", 0.5)()
        assert sys.getprofile() is None


class TestFastSwitching:
    def test_sets_and_restores_the_switch_interval(self) -> None:
        before = sys.getswitchinterval()
        with pytest.raises(ZeroDivisionError), fast_switching(1e-5):
            assert sys.getswitchinterval() == pytest.approx(1e-5)
            _ = 1 / 0
        assert sys.getswitchinterval() == before


class TestThreadsWithin:
    def test_threads_start_together_and_report_what_escaped(self) -> None:
        together = threading.Barrier(3, timeout=30)  # a loaded machine starts threads late

        def work() -> None:
            together.wait()  # breaks unless all three run at once

        def boom() -> None:
            together.wait()
            raise ValueError("boom")

        errors = run_threads_within("LOCK-4", [work, work, boom], InFlight())
        assert [(name, repr(e)) for name, e in errors] == [("thread 2", "ValueError('boom')")]

    def test_threads_that_hang_are_named_with_their_call(self) -> None:
        inflight, release = InFlight(), threading.Event()

        def stuck() -> None:
            with inflight.call("stats()"):
                release.wait()

        with pytest.raises(Hang) as caught:
            run_threads_within("LOCK-4", [lambda: None, stuck], inflight, seconds=0.2)
        release.set()
        assert str(caught.value) == (
            "thread 1: stats() did not return within 0.2 s (deadlock?) [LOCK-4]"
        )


# The suite on subjects with one locking bug: the exact first line each reports.


class AcquiringManager(SessionStateManager):
    """Uses the lock's acquire/release instead of ``with lock:`` in ``__len__``."""

    def __len__(self) -> int:
        self._lock.acquire()  # type: ignore[attr-defined]
        try:
            return len(self._sessions)
        finally:
            self._lock.release()  # type: ignore[attr-defined]


class TwoLockManager(SessionStateManager):
    """Builds a second lock from the factory, for stats()."""

    def __init__(self, max_sessions: int = 64, byte_budget: Any = None, lock_factory: Any = None):
        super().__init__(max_sessions, byte_budget, lock_factory or threading.Lock)
        self._stats_lock = (lock_factory or threading.Lock)()


def first_line(test: Any, subject: Subject) -> str:
    with pytest.raises(ClauseFailure) as caught:
        test(subject)
    return str(caught.value).splitlines()[0]


def test_lock1_names_a_lock_used_through_acquire() -> None:
    subject = Subject(name="acquiring", manager_factory=AcquiringManager)
    assert first_line(suite.test_lock_is_used_only_as_a_context_manager, subject) == (
        "len(manager) raised AttributeError(\"'RecordingLock' object has no attribute "
        "'acquire'\") [LOCK-1]"
    )


def test_lock1_counts_a_second_factory_call() -> None:
    subject = Subject(name="two locks", manager_factory=TwoLockManager)
    assert first_line(suite.test_lock_factory_is_called_once_per_manager, subject) == (
        "lock_factory calls=2, but should be 1 [LOCK-1: after constructing one manager]"
    )


def test_lock2_names_the_call_that_skipped_the_lock() -> None:
    assert (
        first_line(suite.test_every_table_method_enters_the_lock, lock_contains_unlocked.subject)
        == "lock entries during 'a' in manager=0, but should be at least 1 [LOCK-2]"
    )


def test_lock3_names_the_route_back_into_the_lock() -> None:
    assert first_line(
        suite.test_non_reentrant_lock_is_never_reentered, lock_stats_reentrant.subject
    ) == (
        "nested lock entries during stats() (via stats -> nbytes_by_device)=1, but should be 0 "
        "[LOCK-3: a threading.Lock deadlocks there]"
    )


def test_lock3_deadlock_is_reported_not_hung(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the plugin runs it: under the watchdog, the deadlocked stats() is named with the
    suite line that called it."""
    monkeypatch.setattr(watchdog, "_hung", set())  # no earlier test's hang shortens this one
    test = suite.test_every_method_returns_with_a_threading_lock
    with Watchdog(0.3, 0.05), pytest.raises(Hang) as caught:
        test(lock_stats_reentrant.subject)
    assert caught.value.clause == "LOCK-3"
    assert re.fullmatch(
        r"stats\(\) did not return within 0\.3 s \(deadlock\?\) \[LOCK-3: "
        r"StatsReentrantManager\.stats, called at conformance/_machine/lock\.py:\d+\]",
        str(caught.value),
    )


@pytest.mark.parametrize(
    "test",
    [
        suite.test_lock_factory_is_called_once_per_manager,
        suite.test_lock_is_used_only_as_a_context_manager,
        suite.test_nullcontext_is_a_valid_lock_factory,
        suite.test_every_table_method_enters_the_lock,
        suite.test_non_reentrant_lock_is_never_reentered,
        suite.test_every_method_returns_with_a_threading_lock,
    ],
)
def test_reference_passes_the_single_threaded_checks(test: Any) -> None:
    with Watchdog():  # as the plugin runs them: a regression fails instead of hanging
        test(reference)


def test_a_walk_that_never_ends_fails_acct9_not_lock3(monkeypatch: pytest.MonkeyPatch) -> None:
    """``within_deadline`` blames ACCT-9 for a hang, names the call, and the walk stops."""
    stopped = threading.Event()

    def spin(value: object, seen: object) -> dict[str, int]:
        try:
            while True:
                pass
        finally:
            stopped.set()

    # Still computing at the deadline (times the load: 1 here) fails the clause whose
    # rule is that the call ends.
    monkeypatch.setattr(watchdog, "load_factor", lambda: 1.0)
    with Watchdog(0.2, 0.05), pytest.raises(Hang) as caught:
        within_deadline(spin, object(), set(), "ACCT-9", "device_bytes(loop, seen)", "x")
    assert (caught.value.clause, str(caught.value)) == (
        "ACCT-9",
        "device_bytes(loop, seen) did not return within 0.2 s, after x [ACCT-9]",
    )
    assert stopped.is_set()
