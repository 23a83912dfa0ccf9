"""LOCK-*: locking (SPEC.md, "LOCK: locking").

Every call into the subject from the test's own thread is bounded by the
watchdog the plugin arms around each test (``conformance._harness.supervision.watchdog``): a
call that deadlocks on ``threading.Lock`` fails LOCK-3 naming the call, instead of
hanging CI. The threads of LOCK-4 and LOCK-5 have a deadline of their own
(``run_threads_within``). The locks handed to the subject are the suite's own
(``conformance._machine.lock``, with the calls, checks and threads these tests
use): they count how they are used and never deadlock on re-entry. Expected results come from
``LruModel`` in ``conformance._model.linearizability``, the suite's own sequential
model of the manager. The concurrent checks (LOCK-4, LOCK-5) run with a tiny
``sys.setswitchinterval``, a lock that yields the GIL after each critical
section, and threads that yield at random calls inside the subject
(``conformance._machine.lock.perturbed``), so races the subject leaves open are hit on nearly
every run: each zoo ``lock_*`` subject is caught every time in our trials. The walk of
LOCK-2, the round of LOCK-4 and the histories of LOCK-5 are Hypothesis examples,
one per example, as many as the loaded profile runs.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._machine.lock import (
    CONTEXT_ONLY,
    COUNTING,
    KEYS,
    LOCK4_CALLS,
    LOCK4_MAX_SESSIONS,
    LOCK4_SECONDS,
    LOCK5_HISTORIES_PER_EXAMPLE,
    LOCK5_MIN_DECIDED,
    MAX_SESSIONS,
    MIX,
    RACING,
    YIELD_PROBABILITY,
    CountingFactory,
    RecordingLock,
    Tally,
    check_call_enters_lock,
    check_counters_at_rest,
    check_no_reentry,
    fail,
    fail_not_linearizable,
    fast_switching,
    invoke,
    lock4_worker,
    make_manager,
    perform,
    perturbed,
    racing,
    record_history,
    run_sequentially,
)
from sessionstate.conformance._machine.lock_capacity import (
    judge_histories,
    record_capacity_history,
)
from sessionstate.conformance._machine.lock_raise import (
    RAISE_HISTORIES_PER_EXAMPLE,
    blame_raises,
    record_raise_history,
)
from sessionstate.conformance._model.linearizability import LruModel, call_text, linearize
from sessionstate.conformance.checks import calling, check, check_equal

#: Every table-touching path once, with ``max_sessions=2``: miss, hit, a miss
#: that evicts, ``in`` present and absent, drop present, evicted and absent.
SCRIPT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("get_or_create_session", ("a",)),
    ("get_or_create_session", ("a",)),
    ("get_or_create_session", ("b",)),
    ("in", ("a",)),
    ("get_or_create_session", ("c",)),
    ("in", ("a",)),
    ("len", ()),
    ("nbytes_by_device", ()),
    ("stats", ()),
    ("drop_session", ("b",)),
    ("drop_session", ("a",)),
    ("drop_session", ("b",)),
    ("len", ()),
    ("stats", ()),
)

# LOCK-1 ---------------------------------------------------------------------------------


@pytest.mark.clause("LOCK-1")
def test_lock_factory_is_called_once_per_manager(subject: Any) -> None:
    """Each manager calls its lock_factory exactly once, at construction, and never again."""
    # Re-entry is let through: a LOCK-3 bug must not hang this LOCK-1 check.
    factory = CountingFactory(RecordingLock.factory(reentry="allow"))
    manager = make_manager(subject, "LOCK-1", factory, COUNTING)
    check_equal(factory.calls, 1, "LOCK-1", "lock_factory calls", "after constructing one manager")
    run_sequentially("LOCK-1", subject, manager, SCRIPT, "with a counting lock_factory")
    check_equal(factory.calls, 1, "LOCK-1", "lock_factory calls", "after using the manager")
    make_manager(subject, "LOCK-1", factory, COUNTING)
    check_equal(
        factory.calls, 2, "LOCK-1", "lock_factory calls", "after constructing a second manager"
    )


@pytest.mark.clause("LOCK-1")
def test_lock_is_used_only_as_a_context_manager(subject: Any) -> None:
    """A lock with only __enter__/__exit__ (no acquire/release/locked) serves every method."""
    manager = make_manager(subject, "LOCK-1", RecordingLock.factory(reentry="allow"), CONTEXT_ONLY)
    run_sequentially(
        "LOCK-1", subject, manager, SCRIPT, "with a lock that supports only `with lock:`"
    )


@pytest.mark.clause("LOCK-1")
def test_nullcontext_is_a_valid_lock_factory(subject: Any) -> None:
    """contextlib.nullcontext as lock_factory: every method works and returns the right result."""
    manager = make_manager(subject, "LOCK-1", contextlib.nullcontext, "contextlib.nullcontext")
    run_sequentially("LOCK-1", subject, manager, SCRIPT, "with lock_factory=contextlib.nullcontext")


# LOCK-2 ---------------------------------------------------------------------------------


_KEYED = ("get_or_create_session", "drop_session", "in")

#: One call of ``MIX`` (each method as often as its weight) on ``KEYS`` and an id never
#: used by ``SCRIPT``; it shrinks towards ``get_or_create_session('a')``.
calls = st.tuples(
    st.sampled_from([method for method, weight in MIX for _ in range(weight)]),
    st.sampled_from((*KEYS, "d")),
).map(lambda call: (call[0], (call[1],) if call[0] in _KEYED else ()))


@pytest.mark.clause("LOCK-2")
@given(walk=st.lists(calls, max_size=16))
def test_every_table_method_enters_the_lock(
    subject: Any, walk: list[tuple[str, tuple[str, ...]]]
) -> None:
    """Each call of get_or_create_session, drop_session, len, in, nbytes_by_device and stats
    enters the lock (possibly several times, one after another) and leaves it free: the
    script, then a random walk, then nbytes_by_device."""
    factory = CountingFactory(RecordingLock.factory(reentry="allow"))
    manager = make_manager(subject, "LOCK-2", factory, COUNTING)
    check_equal(factory.calls, 1, "LOCK-2", "lock_factory calls", "a manager must build its lock")
    for method, args in (*SCRIPT, *walk, ("nbytes_by_device", ())):
        check_call_enters_lock(factory.made[0], manager, method, args)


# LOCK-3 ---------------------------------------------------------------------------------


@pytest.mark.clause("LOCK-3")
def test_non_reentrant_lock_is_never_reentered(subject: Any) -> None:
    """No method enters the lock while already holding it (checked without deadlocking)."""
    factory = CountingFactory(RecordingLock.factory(reentry="raise"))
    manager = make_manager(subject, "LOCK-3", factory, COUNTING)
    for method, args in SCRIPT:
        text = call_text(method, args)
        with calling("LOCK-3", text):
            try:
                perform(manager, method, args)
            finally:
                # The lock's record names the route back in, even if the subject
                # swallowed or wrapped the LockReentered it raised.
                check_no_reentry(factory, text)


@pytest.mark.clause("LOCK-3")
def test_every_method_returns_with_a_threading_lock(subject: Any) -> None:
    """With lock_factory=threading.Lock every method returns (a re-entry would deadlock)."""
    manager = make_manager(subject, "LOCK-3", threading.Lock, "threading.Lock")
    for method, args in SCRIPT:
        invoke("LOCK-3", manager, method, args)


# LOCK-4 and LOCK-5: real threads -------------------------------------------------------


#: Which round: its number sets the thread count and seeds every thread's calls and
#: yields, so a failing round is replayed as it ran (its interleaving aside).
rounds = st.integers(0, 2**32 - 1)


@pytest.mark.clause("LOCK-4")
# A round is 4-8 threads of LOCK4_CALLS calls: a twentieth of the profile's examples, read
# when the module is imported (the plugin loads the profile first), keeps the run as long
# as it has always been. HypoFuzz ignores it and runs as many rounds as it likes.
@settings(max_examples=max(2, settings.default.max_examples // 20))  # type: ignore[union-attr]
@given(round_=rounds)
def test_concurrent_calls_keep_counters_consistent(subject: Any, round_: int) -> None:
    """4 to 8 threads hammer a small key space; no call raises, no observer sees more than
    max_sessions, and at rest hits + misses == gets and misses == len + evictions + drops."""
    threads = 4 + round_ % 5
    when = f"round {round_}: {threads} threads x {LOCK4_CALLS} calls"
    manager = make_manager(subject, "LOCK-4", racing(), RACING, LOCK4_MAX_SESSIONS)
    tallies, inflight = [Tally() for _ in range(threads)], InFlight()
    workers = [
        perturbed(lock4_worker(manager, seed, tally, inflight), seed, YIELD_PROBABILITY)
        for seed, tally in ((f"LOCK-4/{round_}/{i}", t) for i, t in enumerate(tallies))
    ]
    with fast_switching():
        escaped = run_threads_within("LOCK-4", workers, inflight, LOCK4_SECONDS)
    if escaped:
        fail("LOCK-4", f"{escaped[0][1]!r} escaped from {escaped[0][0]}", when)
    check_counters_at_rest(manager, tallies, f"{when}, max_sessions={LOCK4_MAX_SESSIONS}")


@pytest.mark.clause("LOCK-5")
# A batch is LOCK5_HISTORIES_PER_EXAMPLE histories, judged by SPEC LOCK-5's 90% rule; a
# fifth of the profile's examples records as many histories as the suite always has.
@settings(max_examples=max(2, settings.default.max_examples // 5))  # type: ignore[union-attr]
@given(batch=rounds)
def test_concurrent_histories_are_linearizable(subject: Any, batch: int) -> None:
    """Short concurrent histories (``LOCK5_HISTORIES_PER_EXAMPLE`` per example) have an
    order, consistent with real time, that the sequential model accepts. Undecided (out of
    budget) histories never count as passes. Every other history is one at capacity
    (``lock_capacity``): threads hammering one id more than a full table holds."""
    histories = LOCK5_HISTORIES_PER_EXAMPLE
    undecided: list[str] = []
    for n in range(batch * histories, (batch + 1) * histories):
        seed = f"LOCK-5/{n}"
        if n % 2:
            calls = record_capacity_history(subject, seed, admission=False)
        else:
            calls = record_history(subject, seed)
        verdict = linearize(calls, LruModel(MAX_SESSIONS))
        if verdict.outcome == "not linearizable":
            fail_not_linearizable(verdict, seed)
        if verdict.outcome == "inconclusive":
            undecided.append(seed)
    decided = histories - len(undecided)
    check(
        decided >= LOCK5_MIN_DECIDED * histories,
        "LOCK-5",
        f"decided histories={decided}, but should be at least {LOCK5_MIN_DECIDED:.0%} of "
        f"{histories}; undecided within the search budget: {', '.join(undecided[:3])}, ...",
    )


# LOCK-6 ---------------------------------------------------------------------------------


@pytest.mark.clause("LOCK-6")
# As LOCK-5: a batch of LOCK5_HISTORIES_PER_EXAMPLE histories per example, a tenth of the
# profile's examples (at least two batches).
@settings(max_examples=max(2, settings.default.max_examples // 10))  # type: ignore[union-attr]
@given(batch=rounds)
def test_admission_histories_are_linearizable(subject: Any, batch: int) -> None:
    """With evict_when_full=False, threads hammering one id more than a full table holds
    record histories that have an order, consistent with real time, that the sequential
    model with admission control accepts: a refusal only where that order is full, never
    two newcomers admitted into one free slot. Undecided histories never count as passes."""
    histories = LOCK5_HISTORIES_PER_EXAMPLE
    seeds = [f"LOCK-6/{n}" for n in range(batch * histories, (batch + 1) * histories)]
    judge_histories(
        "LOCK-6",
        ((seed, record_capacity_history(subject, seed, admission=True)) for seed in seeds),
        LruModel(MAX_SESSIONS, evict_when_full=False),
    )


# raise_max_sessions among the threads ---------------------------------------------------


@pytest.mark.clause("ADMIT-12", "LOCK-2", "LOCK-5", "LOCK-6")
# As LOCK-6: a tenth of the profile's examples (at least two), each a batch of
# RAISE_HISTORIES_PER_EXAMPLE histories per policy.
@settings(max_examples=max(2, settings.default.max_examples // 10))  # type: ignore[union-attr]
@given(batch=rounds)
def test_raise_histories_are_linearizable(subject: Any, batch: int) -> None:
    """Threads raising the cap (``n`` equal to it, one or two above, far above, zero or
    negative) among hits, misses and drops on a full table, evicting (LOCK-5) and refusing
    (LOCK-6), record histories that have an order, consistent with real time, that the
    sequential model with ``raise_max_sessions`` accepts; a history explained only once
    racing raises keep the results they reported fails ADMIT-12 (a comparison made outside
    the lock). Every table call enters the injected lock, also after a raise (LOCK-2), and
    a raise that returned True compared and wrote inside it (ADMIT-12)."""
    histories = range(
        batch * RAISE_HISTORIES_PER_EXAMPLE, (batch + 1) * RAISE_HISTORIES_PER_EXAMPLE
    )
    for clause, refusing in (("LOCK-5", False), ("LOCK-6", True)):
        seeds = [f"raise/{clause}/{n}" for n in histories]
        judge_histories(
            clause,
            (
                (seed, record_raise_history(subject, seed, refusing=refusing, clause=clause))
                for seed in seeds
            ),
            LruModel(MAX_SESSIONS, evict_when_full=not refusing),
            blame=blame_raises,
        )
