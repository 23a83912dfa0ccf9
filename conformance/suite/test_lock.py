"""LOCK-*: locking (SPEC.md, "LOCK: locking").

Every call into the subject from the test's own thread is bounded by the
watchdog the plugin arms around each test (``conformance.watchdog``): a call
that deadlocks on ``threading.Lock`` fails LOCK-3 naming the call, instead of
hanging CI. The threads of LOCK-4 and LOCK-5 have a deadline of their own
(``run_threads_within``). The locks
handed to the subject are the suite's own (``conformance.locks``): they count
how they are used and never deadlock on re-entry. Expected results come from
``LruModel`` in ``conformance.linearizability``, the suite's own sequential
model of the manager. The concurrent checks (LOCK-4, LOCK-5) run with a tiny
``sys.setswitchinterval``, a lock that yields the GIL after each critical
section, and threads that yield at random calls inside the subject
(``locks.perturbed``), so races the subject leaves open are hit on nearly
every run: each zoo ``lock_*`` subject is caught every time in our trials.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings

from sessionstate.conformance._harness.watchdog import InFlight, run_threads_within
from sessionstate.conformance._machine.lock import (
    CountingFactory,
    RecordingLock,
    fast_switching,
    perturbed,
)
from sessionstate.conformance._model.linearizability import (
    Call,
    LruModel,
    Recorder,
    Verdict,
    call_text,
    linearize,
)
from sessionstate.conformance.checks import ClauseFailure, calling, check, check_equal

MAX_SESSIONS = 2
KEYS = ("a", "b", "c")
#: How failure messages name the suite's lock factories.
COUNTING = "<counting factory of context-only locks>"
CONTEXT_ONLY = "<context-only lock>"
RACING = "<context-only lock that yields the GIL after each section>"


def profile_examples() -> int:
    """The loaded profile's ``max_examples``: scales the checks that do not use Hypothesis."""
    return settings().max_examples


def fail(clause: str, message: str, when: str = "") -> None:
    """Fail ``clause`` with ``message [CLAUSE: when]``: for what no single comparison states."""
    __tracebackhide__ = True
    raise ClauseFailure(clause, f"{message} [{clause}{': ' + when if when else ''}]")


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

#: Concurrent mixes: (method, weight). ``nbytes_by_device`` is left to LOCK-2/3:
#: the model does not count bytes.
MIX = (("get_or_create_session", 8), ("drop_session", 3), ("len", 3), ("in", 3), ("stats", 2))


def perform(manager: Any, method: str, args: Sequence[Any]) -> Any:
    """Call ``method`` the way a pipeline does; ``stats`` as (sessions, hits, misses, evictions)."""
    if method == "len":
        return len(manager)
    if method == "in":
        return args[0] in manager
    if method == "stats":
        stats = manager.stats()
        return tuple(stats.get(k) for k in ("sessions", "hits", "misses", "evictions"))
    return getattr(manager, method)(*args)


def invoke(clause: str, manager: Any, method: str, args: Sequence[Any]) -> Any:
    """``perform``; a subject exception fails ``clause`` (a hang, LOCK-3: the watchdog)."""
    __tracebackhide__ = True
    with calling(clause, call_text(method, args)):
        return perform(manager, method, args)


def make_manager(
    subject: Any, clause: str, lock_factory: Any, label: str, max_sessions: int = MAX_SESSIONS
) -> Any:
    """``subject.make_manager(...)``; ``label`` names the factory in a failure."""
    __tracebackhide__ = True
    text = f"make_manager(max_sessions={max_sessions}, byte_budget=None, lock_factory={label})"
    with calling(clause, text):
        return subject.make_manager(
            max_sessions=max_sessions, byte_budget=None, lock_factory=lock_factory
        )


def pick(rnd: random.Random, keys: Sequence[str] = KEYS) -> tuple[str, tuple[str, ...]]:
    """One random call from ``MIX`` on ``keys``."""
    method = rnd.choices([m for m, _ in MIX], [w for _, w in MIX])[0]
    takes_key = method in ("get_or_create_session", "drop_session", "in")
    return method, (rnd.choice(keys),) if takes_key else ()


def run_sequentially(
    clause: str, manager: Any, calls: Sequence[tuple[str, tuple[str, ...]]], when: str
) -> None:
    """Run ``calls`` one by one and check every result against ``LruModel``.

    Sessions are shown as ``s0, s1, ...``: the n-th distinct session returned.
    """
    __tracebackhide__ = True
    model, recorder = LruModel(MAX_SESSIONS), Recorder()
    state = model.initial()
    for method, args in calls:
        text = call_text(method, args)
        with calling(clause, text):
            recorder.call(method, args, functools.partial(perform, manager, method, args))
        if method == "nbytes_by_device":
            continue  # not modelled: bytes are the ACCT clauses' business
        step = model.step(state, recorder.calls[-1])
        if not step.ok:
            check_equal(recorder.calls[-1].result, step.expected, clause, text, when)
        state = step.state


# LOCK-1 ---------------------------------------------------------------------------------


@pytest.mark.clause("LOCK-1")
def test_lock_factory_is_called_once_per_manager(subject: Any) -> None:
    """Each manager calls its lock_factory exactly once, at construction, and never again."""
    # Re-entry is let through: a LOCK-3 bug must not hang this LOCK-1 check.
    factory = CountingFactory(RecordingLock.factory(reentry="allow"))
    manager = make_manager(subject, "LOCK-1", factory, COUNTING)
    check_equal(factory.calls, 1, "LOCK-1", "lock_factory calls", "after constructing one manager")
    run_sequentially("LOCK-1", manager, SCRIPT, "with a counting lock_factory")
    check_equal(factory.calls, 1, "LOCK-1", "lock_factory calls", "after using the manager")
    make_manager(subject, "LOCK-1", factory, COUNTING)
    check_equal(
        factory.calls, 2, "LOCK-1", "lock_factory calls", "after constructing a second manager"
    )


@pytest.mark.clause("LOCK-1")
def test_lock_is_used_only_as_a_context_manager(subject: Any) -> None:
    """A lock with only __enter__/__exit__ (no acquire/release/locked) serves every method."""
    manager = make_manager(subject, "LOCK-1", RecordingLock.factory(reentry="allow"), CONTEXT_ONLY)
    run_sequentially("LOCK-1", manager, SCRIPT, "with a lock that supports only `with lock:`")


@pytest.mark.clause("LOCK-1")
def test_nullcontext_is_a_valid_lock_factory(subject: Any) -> None:
    """contextlib.nullcontext as lock_factory: every method works and returns the right result."""
    manager = make_manager(subject, "LOCK-1", contextlib.nullcontext, "contextlib.nullcontext")
    run_sequentially("LOCK-1", manager, SCRIPT, "with lock_factory=contextlib.nullcontext")


# LOCK-2 ---------------------------------------------------------------------------------


def _walk(seed: str, length: int) -> list[tuple[str, tuple[str, ...]]]:
    rnd = random.Random(seed)
    walk = [pick(rnd, (*KEYS, "d")) for _ in range(length)]
    return [*walk, ("nbytes_by_device", ())]


def check_call_enters_lock(
    lock: RecordingLock, manager: Any, method: str, args: Sequence[Any]
) -> None:
    """One call enters the lock at least once, leaves it as often, and returns with it free."""
    __tracebackhide__ = True
    text = call_text(method, args)
    enters, exits = lock.enters, lock.exits
    invoke("LOCK-2", manager, method, args)
    entered, left = lock.enters - enters, lock.exits - exits
    check(entered >= 1, "LOCK-2", f"lock entries during {text}={entered}, but should be at least 1")
    check_equal(left, entered, "LOCK-2", f"lock exits during {text}", f"it entered {entered} times")
    check(not lock.held, "LOCK-2", f"the lock is still held after {text} returned")


@pytest.mark.clause("LOCK-2")
def test_every_table_method_enters_the_lock(subject: Any) -> None:
    """Each call of get_or_create_session, drop_session, len, in, nbytes_by_device and stats
    enters the lock (possibly several times, one after another) and leaves it free."""
    factory = CountingFactory(RecordingLock.factory(reentry="allow"))
    manager = make_manager(subject, "LOCK-2", factory, COUNTING)
    check_equal(factory.calls, 1, "LOCK-2", "lock_factory calls", "a manager must build its lock")
    for method, args in (*SCRIPT, *_walk("LOCK-2", 8 * profile_examples())):
        check_call_enters_lock(factory.made[0], manager, method, args)


# LOCK-3 ---------------------------------------------------------------------------------


def check_no_reentry(factory: CountingFactory, text: str) -> None:
    """No lock built by ``factory`` was entered by a thread already holding it."""
    __tracebackhide__ = True
    for lock in factory.made:
        if lock.reentries:
            check_equal(
                len(lock.reentries),
                0,
                "LOCK-3",
                f"nested lock entries during {text} (via {lock.reentries[0].describe()})",
                "a threading.Lock deadlocks there",
            )


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


def racing() -> Callable[[], RecordingLock]:
    # A mutex that yields the GIL after each critical section: other threads
    # then run exactly in the gaps a split check-then-act leaves open. Re-entry
    # is let through, so a LOCK-3 bug cannot mask these clauses.
    return RecordingLock.factory(reentry="allow", yield_after_release=True)


#: Share of the subject's function calls at which a LOCK-4/5 thread yields the GIL.
YIELD_PROBABILITY = 0.1


@dataclass
class Tally:
    """What one LOCK-4 thread did and saw."""

    gets: int = 0
    drops: int = 0
    errors: list[str] = field(default_factory=list)
    over_cap: list[str] = field(default_factory=list)


LOCK4_KEYS = tuple(f"k{i}" for i in range(6))
LOCK4_MAX_SESSIONS = 3
LOCK4_CALLS = 500  # per thread and round
LOCK4_SECONDS = 30.0  # per round; a round takes well under a second


def lock4_worker(manager: Any, seed: str, tally: Tally, inflight: InFlight) -> Callable[[], None]:
    """A thread's LOCK-4 work: random calls, tallied; exceptions recorded, never fatal."""

    def work() -> None:
        rnd = random.Random(seed)
        for _ in range(LOCK4_CALLS):
            method, args = pick(rnd, LOCK4_KEYS)
            text = call_text(method, args)
            tally.gets += method == "get_or_create_session"
            try:
                with inflight.call(text):
                    result = perform(manager, method, args)
            except Exception as error:  # reported after the round, which goes on
                tally.errors.append(f"{text} raised {error!r} in {threading.current_thread().name}")
                continue
            tally.drops += method == "drop_session" and bool(result)
            seen = result if method == "len" else result[0] if method == "stats" else 0
            if isinstance(seen, int) and seen > LOCK4_MAX_SESSIONS:
                shown = text if method == "len" else f"{text}['sessions']"
                tally.over_cap.append(f"{shown}={seen}")

    return work


def check_counters_at_rest(manager: Any, tallies: Sequence[Tally], when: str) -> None:
    """Nothing raised or overflowed; hits + misses == gets and conservation, at rest."""
    __tracebackhide__ = True
    errors = [error for tally in tallies for error in tally.errors]
    if errors:
        fail("LOCK-4", errors[0], f"{when}; {len(errors)} calls raised")
    over_cap = [seen for tally in tallies for seen in tally.over_cap]
    if over_cap:
        fail("LOCK-4", f"{over_cap[0]}, but should be at most {LOCK4_MAX_SESSIONS}", when)
    gets, drops = sum(t.gets for t in tallies), sum(t.drops for t in tallies)
    size = invoke("LOCK-4", manager, "len", ())
    hits, misses, evictions = manager.hits, manager.misses, manager.evictions
    check_equal(hits + misses, gets, "LOCK-4", "hits + misses", f"{when}, {gets} gets")
    conserved = f"len + evictions + successful drops = {size} + {evictions} + {drops}"
    check_equal(misses, size + evictions + drops, "LOCK-4", "misses", f"{when}, {conserved}")


@pytest.mark.clause("LOCK-4")
def test_concurrent_calls_keep_counters_consistent(subject: Any) -> None:
    """4 to 8 threads hammer a small key space; no call raises, no observer sees more than
    max_sessions, and at rest hits + misses == gets and misses == len + evictions + drops."""
    for round_ in range(max(2, profile_examples() // 20)):
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


#: Histories per profile example, and the share that must be decided (see SPEC LOCK-5).
LOCK5_HISTORIES_PER_EXAMPLE = 4
LOCK5_MIN_DECIDED = 0.9


def history_worker(
    manager: Any, recorder: Recorder, script: Sequence[tuple[str, tuple[str, ...]]]
) -> Callable[[], None]:
    """A thread's LOCK-5 work: its calls, recorded; the first exception ends it."""

    def work() -> None:
        for method, args in script:
            text = call_text(method, args)
            try:
                recorder.call(method, args, functools.partial(perform, manager, method, args))
            except Exception as error:
                name = threading.current_thread().name
                raise ClauseFailure("LOCK-5", f"{text} raised {error!r} in {name}") from error

    return work


def record_history(subject: Any, seed: str) -> list[Call]:
    """A short sequential setup, then 2-4 threads making 2-5 calls each, all recorded."""
    rnd = random.Random(seed)
    manager = make_manager(subject, "LOCK-5", racing(), RACING)
    recorder, inflight = Recorder(), InFlight()
    setup = [("get_or_create_session", (rnd.choice(KEYS),)) for _ in range(rnd.randrange(4))]
    scripts = [[pick(rnd) for _ in range(rnd.randint(2, 5))] for _ in range(rnd.randint(2, 4))]
    escaped = run_threads_within(
        "LOCK-5", [history_worker(manager, recorder, setup)], inflight, name="setup"
    )
    with fast_switching():
        workers = [
            perturbed(history_worker(manager, recorder, script), f"{seed}/{i}", YIELD_PROBABILITY)
            for i, script in enumerate(scripts)
        ]
        escaped += run_threads_within("LOCK-5", workers, inflight)
    if escaped:
        thread, error = escaped[0]
        shown = str(error) if isinstance(error, ClauseFailure) else f"{thread}: {error!r}"
        fail("LOCK-5", shown, f"history {seed!r}")
    return recorder.calls


def fail_not_linearizable(verdict: Verdict, seed: str) -> None:
    """Name the first call no order explains, then the search's account and the history."""
    __tracebackhide__ = True
    index, expected = verdict.rejected[0]  # a dead end always has rejected candidates
    call = verdict.calls[index]
    raise ClauseFailure(
        "LOCK-5",
        f"{call.text()}={call.result!r}, but should be {expected!r} [LOCK-5: no order of "
        f"history {seed!r} explains it, max_sessions={MAX_SESSIONS}]\n{verdict.explain()}",
    )


@pytest.mark.clause("LOCK-5")
def test_concurrent_histories_are_linearizable(subject: Any) -> None:
    """Short concurrent histories have an order, consistent with real time, that the
    sequential model accepts. Undecided (out of budget) histories never count as passes."""
    histories = LOCK5_HISTORIES_PER_EXAMPLE * profile_examples()
    undecided: list[str] = []
    for n in range(histories):
        seed = f"LOCK-5/{n}"
        verdict = linearize(record_history(subject, seed), LruModel(MAX_SESSIONS))
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
