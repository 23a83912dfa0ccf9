"""Instrumented locks and lock factories for the LOCK clauses, and the LOCK tests' steps.

The contract lets the owner inject the manager's lock (``lock_factory``) and
says the manager only ever uses it as ``with lock:`` (SPEC LOCK-1), enters it
for every table access (LOCK-2) and never re-enters it (LOCK-3). These locks
make that observable:

* ``CountingFactory`` counts how often the manager calls its factory.
* ``RecordingLock`` is a real mutex that supports *only* ``__enter__`` and
  ``__exit__`` (no ``acquire``/``release``/``locked`` attributes), counts
  enters and exits, and notices a thread entering it while it already holds
  it. ``threading.Lock`` would deadlock there; this lock records the
  re-entry and either raises ``LockReentered`` (``reentry="raise"``, for
  LOCK-3) or lets the holder through (``reentry="allow"``, so the checks of
  other clauses are not masked by a LOCK-3 bug).

For the concurrent clauses (LOCK-4, LOCK-5, LOCK-6), four race amplifiers: the lock
can yield the GIL after each release, ``perturbed`` makes a thread yield at
random calls inside the subject, ``fast_switching`` shortens the switch
interval, and a ``Gate`` holds each thread at the lock's door until the others have
reached it too. None changes what the subject computes, only when threads switch.

The steps the LOCK tests are made of live here too: ``perform`` and ``invoke`` (one
call, as a pipeline makes it), ``run_sequentially`` (each call's result checked against the
same subject's manager on ``threading.Lock``), the ``check_*`` rules, and the threads of LOCK-4 (``lock4_worker``, ``Tally``) and LOCK-5
(``record_history``).
"""

from __future__ import annotations

import functools
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Literal

from sessionstate.conformance._harness.supervision.deadline import DEFAULT_SECONDS
from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._model.linearizability import (
    Call,
    Recorder,
    Verdict,
    call_text,
)
from sessionstate.conformance.checks import ClauseFailure, calling, check, check_equal
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS

__all__ = [
    "CONTEXT_ONLY",
    "COUNTING",
    "GATE_SECONDS",
    "KEYS",
    "LOCK4_CALLS",
    "LOCK4_KEYS",
    "LOCK4_MAX_SESSIONS",
    "LOCK4_SECONDS",
    "LOCK5_HISTORIES_PER_EXAMPLE",
    "LOCK5_MIN_DECIDED",
    "MAX_SESSIONS",
    "MIX",
    "RACING",
    "YIELD_PROBABILITY",
    "CountingFactory",
    "Gate",
    "LockReentered",
    "RecordingLock",
    "Reentry",
    "Tally",
    "check_call_enters_lock",
    "check_counters_at_rest",
    "check_no_reentry",
    "fail",
    "fail_not_linearizable",
    "fast_switching",
    "history_worker",
    "invoke",
    "lock4_worker",
    "make_manager",
    "perform",
    "perturbed",
    "pick",
    "racing",
    "record_history",
    "run_sequentially",
]

#: Frames in files under the ``conformance`` package are the suite's (whatever name
#: pytest imported them by); this module is in its ``_machine``.
_SUITE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class LockReentered(RuntimeError):
    """The thread holding a ``RecordingLock`` tried to enter it again."""


@dataclass(frozen=True)
class Reentry:
    """One re-entry: the thread, and the subject functions on the stack, outermost first."""

    thread: str
    path: tuple[str, ...]

    def describe(self) -> str:
        """``"stats -> nbytes_by_device"``: how the subject got back into the lock."""
        return " -> ".join(self.path) or "(unknown caller)"


class CountingFactory:
    """A ``lock_factory`` that counts its calls; ``make`` builds each lock, kept in ``made``."""

    def __init__(self, make: Callable[[], Any] = threading.Lock) -> None:
        self._make = make
        self.made: list[Any] = []

    @property
    def calls(self) -> int:
        return len(self.made)

    def __call__(self) -> Any:
        lock = self._make()
        self.made.append(lock)
        return lock


#: How long a thread waits at a ``Gate`` for the others before the gate opens for good.
GATE_SECONDS = 0.2


class Gate:
    """Holds each of ``parties`` threads at the lock's door until every other one has
    joined and is at the door too, past it (queued on the mutex or inside), or done.

    A check made before the lock is taken and trusted inside it (SPEC LOCK-5, LOCK-6)
    goes wrong only when another thread's call lands between the check and the lock.
    Under the GIL that takes a thread switch inside a window a few bytecodes wide, which
    a loaded machine makes rarer still. At the door, every participant has made its
    check before any of them enters: the window is open every time, whatever the load.

    The gate only delays; it never fails anything. A participant that does not come
    (blocked on a lock of the subject's own that a waiting thread holds) is waited for
    ``seconds``; then the gate opens for good, and the history runs as it would without it.
    """

    def __init__(self, parties: int, seconds: float = GATE_SECONDS) -> None:
        self._seconds = seconds
        self._changed = threading.Condition(threading.Lock())
        self._unjoined = parties  # a participant not started yet is on its way too
        self._members: set[int] = set()
        self._running: set[int] = set()  # members neither at the door nor past it
        self.opened = False

    def join(self) -> None:
        """The calling thread takes part from now on (one of the ``parties``)."""
        me = threading.get_ident()
        with self._changed:
            self._unjoined -= 1
            self._members.add(me)
            self._running.add(me)

    def leave(self) -> None:
        """The calling thread is done: no one waits for it any more."""
        me = threading.get_ident()
        with self._changed:
            self._members.discard(me)
            self._running.discard(me)
            self._changed.notify_all()

    @contextmanager
    def member(self) -> Iterator[None]:
        """The calling thread takes part for the block (``join``, then ``leave``)."""
        self.join()
        try:
            yield
        finally:
            self.leave()

    def arrive(self) -> None:
        """At the door: wait until no other participant is still on its way to it."""
        me = threading.get_ident()
        with self._changed:
            if me not in self._running:
                return  # not a participant (or already past the door)
            self._running.discard(me)
            self._changed.notify_all()
            if not self._changed.wait_for(self._all_there, self._seconds):
                self.opened = True
                self._changed.notify_all()

    def _all_there(self) -> bool:
        return self.opened or not (self._running or self._unjoined > 0)

    def depart(self) -> None:
        """Out of the lock again: on the way to the door, if a participant."""
        me = threading.get_ident()
        with self._changed:
            if me in self._members:
                self._running.add(me)


class RecordingLock:
    """A non-reentrant mutex usable only as ``with lock:``, that records how it is used.

    ``enters``/``exits`` count every ``__enter__``/``__exit__`` (nested ones
    included); ``reentries`` lists each time the holding thread entered again.
    With ``yield_after_release=True`` the lock gives up the GIL right after each
    release, so other threads tend to run exactly between two of the
    subject's critical sections: the window a split check-then-act leaves
    open (SPEC LOCK-4, LOCK-5). With a ``gate``, a thread first waits at its door
    (``Gate.arrive``) and is on its way again after the release (``Gate.depart``).
    """

    __slots__ = (
        "_depth",
        "_gate",
        "_mutex",
        "_owner",
        "_reentry",
        "_yield",
        "enters",
        "exits",
        "reentries",
    )

    def __init__(
        self,
        *,
        reentry: Literal["raise", "allow"] = "raise",
        yield_after_release: bool = False,
        gate: Gate | None = None,
    ) -> None:
        self._mutex = threading.Lock()
        self._gate = gate
        self._owner: int | None = None
        self._depth = 0
        self._reentry = reentry
        self._yield = yield_after_release
        self.enters = 0
        self.exits = 0
        self.reentries: list[Reentry] = []

    @classmethod
    def factory(
        cls,
        *,
        reentry: Literal["raise", "allow"] = "raise",
        yield_after_release: bool = False,
        gate: Gate | None = None,
    ) -> Callable[[], RecordingLock]:
        """A ``lock_factory`` building ``RecordingLock(reentry=..., yield_after_release=...,
        gate=...)``; every lock it builds shares the one ``gate``."""
        return lambda: cls(reentry=reentry, yield_after_release=yield_after_release, gate=gate)

    @property
    def held(self) -> bool:
        """Whether some thread is inside the lock now."""
        return self._owner is not None

    def __enter__(self) -> None:
        me = threading.get_ident()
        if self._owner == me:
            self._record_reentry()
            self._depth += 1
            self.enters += 1
            return
        if self._gate is not None:
            self._gate.arrive()
        self._mutex.acquire()
        self._owner, self._depth = me, 1
        self.enters += 1

    def __exit__(self, *exc_info: object) -> None:
        if self._owner != threading.get_ident():
            raise RuntimeError("RecordingLock exited by a thread that does not hold it")
        self.exits += 1
        self._depth -= 1
        if self._depth:
            return
        self._owner = None
        self._mutex.release()
        if self._gate is not None:
            self._gate.depart()
        if self._yield:
            time.sleep(0)

    def _record_reentry(self) -> None:
        entry = Reentry(threading.current_thread().name, _subject_path(sys._getframe(2)))
        self.reentries.append(entry)
        if self._reentry == "raise":
            raise LockReentered(
                f"the lock was entered again by the thread holding it, via {entry.describe()}"
            )


def _subject_path(frame: FrameType | None) -> tuple[str, ...]:
    # Walk out from the caller of __enter__ to the first suite frame: the
    # functions in between are the subject's route back into its own lock.
    names: list[str] = []
    while frame is not None and len(names) < 16:
        if os.path.abspath(frame.f_code.co_filename).startswith(_SUITE_DIR):
            break
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return tuple(reversed(names))


def perturbed(work: Callable[[], None], seed: str, probability: float) -> Callable[[], None]:
    """``work``, run with the GIL given up at random call boundaries of non-suite code.

    A tiny ``sys.setswitchinterval`` only *requests* a thread switch, and the
    waiting thread's timer fires every few tens of microseconds at best: too
    rarely to land in a check-then-act window a few bytecodes wide, in a
    subject that never enters a lock (the yielding lock cannot help there).
    A profile hook yields at a random ``probability`` of the subject's
    function calls (Python and C: ``dict.get``, ``SessionState()``), which is
    where such windows open and close (SPEC LOCK-4, LOCK-5).
    """

    def run() -> None:
        rnd = random.Random(seed)
        in_suite: dict[CodeType, bool] = {}

        def hook(frame: FrameType, event: str, arg: object) -> None:
            if event != "call" and event != "c_call":
                return
            code = frame.f_code
            if code not in in_suite:
                in_suite[code] = os.path.abspath(code.co_filename).startswith(_SUITE_DIR)
            if not in_suite[code] and rnd.random() < probability:
                time.sleep(0)

        before = sys.getprofile()
        sys.setprofile(hook)
        try:
            work()
        finally:
            sys.setprofile(before)

    return run


@contextmanager
def fast_switching(interval: float = 1e-6) -> Iterator[None]:
    """Ask for a thread switch every ``interval`` seconds; the old interval is restored."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


# -- the LOCK tests' steps: calls, sequential checks against a threading.Lock manager, the threads -------
#
# Every frame here is the suite's (this file is under ``conformance``): a call into the
# subject that hangs is named with the line below that made it (the watchdog), and a
# lock's re-entry route stops at it.

MAX_SESSIONS = 2
#: Three plain keys, and one a repr() re-quotes (``strategies.TRICKY_SESSION_IDS``).
KEYS = ("a", "b", "c", TRICKY_SESSION_IDS[0])
#: How failure messages name the suite's lock factories.
COUNTING = "<counting factory of context-only locks>"
CONTEXT_ONLY = "<context-only lock>"
RACING = "<context-only lock that yields the GIL after each section>"


def fail(clause: str, message: str, when: str = "") -> None:
    """Fail ``clause`` with ``message [CLAUSE: when]``: for what no single comparison states."""
    __tracebackhide__ = True
    raise ClauseFailure(clause, f"{message} [{clause}{': ' + when if when else ''}]")


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
    clause: str, subject: Any, manager: Any, calls: Sequence[tuple[str, tuple[str, ...]]], when: str
) -> None:
    """Run ``calls`` one by one on ``manager`` and on a manager of the same subject built
    with ``threading.Lock``: each result must be that manager's (LOCK-1: a lock used as the
    contract asks changes no result).

    Compared with the subject itself, not with a model: a table bug gives both managers
    the same wrong answer, which the LRU, DROP and STATS clauses report, not this one.
    Sessions are shown as ``s0, s1, ...`` (the n-th distinct session returned), and a call
    that raises as the type it raised.
    """
    __tracebackhide__ = True
    baseline = make_manager(subject, clause, threading.Lock, "threading.Lock")
    ours, theirs = _Results(), _Results()
    for method, args in calls:
        text = call_text(method, args)
        expected = theirs.outcome(baseline, method, args)
        if isinstance(expected, _Raised):
            got = ours.outcome(manager, method, args)  # raising as the baseline does is right
        else:
            with calling(clause, text):  # an exception here fails the clause, naming it
                got = ours.outcome(manager, method, args, catch=False)
        check_equal(got, expected, clause, text, f"{when}; with threading.Lock it was {expected!r}")


class _Raised(str):
    """A call's outcome that is an exception: ``raised TypeName``."""

    def __new__(cls, name: str) -> _Raised:
        return super().__new__(cls, f"raised {name}")


class _Results:
    """One manager's results, sessions as labels (``s0, s1, ...``) and an exception as
    ``raised TypeName``, so two managers' runs compare as values."""

    def __init__(self) -> None:
        self.labels: dict[int, str] = {}
        self.alive: list[object] = []  # keeps every session labelled alive: ids stay unique

    def outcome(
        self, manager: Any, method: str, args: Sequence[Any], *, catch: bool = True
    ) -> object:
        try:
            result = perform(manager, method, args)
        except Exception as error:  # a Hang or TooSlow (BaseException) goes on as it is
            if not catch:
                raise
            return _Raised(type(error).__name__)
        if method != "get_or_create_session":
            return result
        if id(result) not in self.labels:
            self.labels[id(result)] = f"s{len(self.labels)}"
            self.alive.append(result)
        return self.labels[id(result)]


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


def racing(gate: Gate | None = None) -> Callable[[], RecordingLock]:
    # A mutex that yields the GIL after each critical section: other threads
    # then run exactly in the gaps a split check-then-act leaves open. Re-entry
    # is let through, so a LOCK-3 bug cannot mask these clauses. With a gate,
    # threads also meet at its door (``Gate``).
    return RecordingLock.factory(reentry="allow", yield_after_release=True, gate=gate)


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
#: Per round (a round takes about a second): past it, threads still computing are waited
#: for (``run_threads_within``), so it bounds only how soon a deadlock is seen.
LOCK4_SECONDS = DEFAULT_SECONDS


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


#: Histories per example, and the share of them that must be decided (SPEC LOCK-5): 20, so
#: that one or two undecided histories in a batch do not fail the clause.
LOCK5_HISTORIES_PER_EXAMPLE = 20
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
