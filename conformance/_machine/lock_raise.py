"""Threaded histories with ``raise_max_sessions`` among the calls (SPEC ADMIT-12, LOCK-2),
for a subject with admission control.

The ADMIT tests raise the cap from one thread at a time, and the other threaded
histories never raise it, so two kinds of bug pass both: a raise that compares the new
cap with the one in force before it takes the lock and trusts that comparison inside it
(two racing raises both report True, or the lower cap lands last and stays in force),
and a raise that leaves the manager using a lock other than the injected one afterwards
(every later call is serialised by a lock the caller never gave it). These histories
fill a table of ``MAX_SESSIONS`` with ``RAISE_KEYS`` (more ids than any raised cap short
of ``FAR_CAP`` holds), then run 3-4 threads of 3-5 calls drawn from ``RAISE_MIX``:
hits, misses, drops, reads and raises with ``n`` around the cap (equal, one and two above,
far above, zero and negative). The first two threads open with a raise each, half the
time of one ``n``, so two raises race every time. A sequential epilogue then reads the
cap and asks for every id, so a cap left too low shows, and runs once more through the
lock after the raises.

Every call is recorded (``Recorder``) and the histories are judged by the linearizability
search against ``LruModel``, which models the raise (``lock_capacity.judge_histories``);
``blame_raises`` names ADMIT-12 for a history the model explains once the raises that
raced another raise keep the result they reported. Every call is also checked as it
returns (``check_wiring``): a table call made by this thread entered the injected lock
(``WiredLock``, a ``RecordingLock`` that counts per thread) and left it as often, and a
raise that returned True compared and wrote inside it; a history reports the first LOCK-2
failure, else what escaped a thread, else the first (``first_failure``). The race
amplifiers are those of the other threaded histories (``lock.racing``'s yielding lock,
``lock.perturbed``, ``lock.fast_switching``) and a ``lock.Gate`` at the lock's door: both
opening raises have compared before either enters, whatever the machine's load.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._machine.lock import (
    MAX_SESSIONS,
    YIELD_PROBABILITY,
    CountingFactory,
    Gate,
    RecordingLock,
    fast_switching,
    perform,
    perturbed,
)
from sessionstate.conformance._machine.lock_capacity import perform_admitting
from sessionstate.conformance._model.linearizability import (
    VALUE_ERROR,
    Call,
    LruModel,
    Recorder,
    call_text,
    linearize,
)
from sessionstate.conformance.checks import ClauseFailure, calling, check, check_equal

__all__ = [
    "FAR_CAP",
    "NON_POSITIVE",
    "RAISES",
    "RAISE_HISTORIES_PER_EXAMPLE",
    "RAISE_KEYS",
    "RAISE_MIX",
    "TABLE_METHODS",
    "WiredLock",
    "blame_raises",
    "check_wiring",
    "first_failure",
    "perform_raising",
    "raise_scripts",
    "record_raise_history",
    "stale_raises",
]

#: A cap far above any table these histories fill: a raise to it ends every refusal.
FAR_CAP = 64
#: ``n`` of a raise around the cap: equal, one above, two above, far above...
RAISES = (MAX_SESSIONS, MAX_SESSIONS + 1, MAX_SESSIONS + 2, FAR_CAP)
#: ...and the values ``raise_max_sessions`` rejects (ADMIT-7).
NON_POSITIVE = (0, -1)
#: More ids than a cap raised by two holds, so misses still evict (or are refused).
RAISE_KEYS = tuple("abcde"[: MAX_SESSIONS + 3])
#: (method, weight): mostly gets, so raises land between hits, misses and drops.
RAISE_MIX = (
    ("get_or_create_session", 8),
    ("drop_session", 2),
    ("raise_max_sessions", 3),
    ("in", 1),
    ("len", 1),
    ("stats", 1),
    ("max_sessions", 1),
)
#: The calls that must enter the injected lock (SPEC LOCK-2); ``max_sessions`` is an
#: attribute, a raise is ADMIT-12's.
TABLE_METHODS = frozenset({"get_or_create_session", "drop_session", "in", "len", "stats"})
#: Histories per example and policy (evicting, refusing).
RAISE_HISTORIES_PER_EXAMPLE = 10

Script = list[tuple[str, tuple[Any, ...]]]


class WiredLock(RecordingLock):
    """A ``RecordingLock`` that also counts how often each thread entered and left it,
    so a call made beside others is known to have gone through this lock (``mine``)."""

    __slots__ = ("_mine",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._mine = threading.local()

    def mine(self) -> tuple[int, int]:
        """(enters, exits) by the calling thread so far."""
        return getattr(self._mine, "enters", 0), getattr(self._mine, "exits", 0)

    def __enter__(self) -> None:
        super().__enter__()
        self._mine.enters = self.mine()[0] + 1

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        self._mine.exits = self.mine()[1] + 1


def perform_raising(manager: Any, method: str, args: Sequence[Any], *, refusing: bool) -> Any:
    """One call of a raise history: ``raise_max_sessions`` that raised ``ValueError`` is
    ``VALUE_ERROR``, ``max_sessions`` reads the attribute; the rest as ``lock.perform``
    (``lock_capacity.perform_admitting`` when ``refusing``)."""
    if method == "raise_max_sessions":
        try:
            return manager.raise_max_sessions(*args)
        except ValueError:
            return VALUE_ERROR
    if method == "max_sessions":
        return manager.max_sessions
    return (perform_admitting if refusing else perform)(manager, method, args)


def _pick(rnd: random.Random) -> tuple[str, tuple[Any, ...]]:
    method = rnd.choices([m for m, _ in RAISE_MIX], [w for _, w in RAISE_MIX])[0]
    if method == "raise_max_sessions":
        return method, (rnd.choice(RAISES + NON_POSITIVE),)
    if method in ("len", "stats", "max_sessions"):
        return method, ()
    return method, (rnd.choice(RAISE_KEYS),)


def raise_scripts(seed: str) -> tuple[Script, list[Script], Script]:
    """(the setup, one script per thread: 3-4 threads of 3-5 calls, the epilogue).

    The setup fills the table. The first two threads open with a raise each: the first
    to one of ``RAISES`` above the cap, the second half the time to the same ``n``
    (sequentially one of them returns False), else to any value of ``RAISES`` or
    ``NON_POSITIVE``; the rest is drawn from ``RAISE_MIX``. The epilogue reads
    ``max_sessions``, asks for every id of ``RAISE_KEYS`` and reads ``stats()``: the cap
    in force shows in what is admitted and evicted (or refused).
    """
    rnd = random.Random(seed)
    setup: Script = [
        ("get_or_create_session", (key,)) for key in rnd.sample(RAISE_KEYS, MAX_SESSIONS)
    ]
    scripts = [[_pick(rnd) for _ in range(rnd.randint(3, 5))] for _ in range(rnd.randint(3, 4))]
    first = rnd.choice(RAISES[1:])  # above the cap: the pair can raise it
    second = first if rnd.random() < 0.5 else rnd.choice(RAISES + NON_POSITIVE)
    scripts[0][0] = ("raise_max_sessions", (first,))
    scripts[1][0] = ("raise_max_sessions", (second,))
    epilogue: Script = [
        ("max_sessions", ()),
        *(("get_or_create_session", (key,)) for key in RAISE_KEYS),
        ("stats", ()),
    ]
    return setup, scripts, epilogue


def check_wiring(
    method: str, args: Sequence[Any], result: Any, entered: int, left: int, when: str
) -> None:
    """One call, made beside others, went through the injected lock as it must: a table
    call entered it and left it as often (LOCK-2, also after a raise), and a raise that
    returned True compared and wrote the cap inside it (ADMIT-12). ``entered`` and
    ``left`` count the calling thread's own enters and exits during the call."""
    __tracebackhide__ = True
    text = call_text(method, args)
    if method in TABLE_METHODS:
        check(
            entered >= 1,
            "LOCK-2",
            f"entries of the injected lock during {text}={entered}, but should be at least 1; "
            f"{when}",
        )
        check_equal(left, entered, "LOCK-2", f"lock exits during {text}", when)
    if method == "raise_max_sessions" and result is True:
        check(
            entered >= 1,
            "ADMIT-12",
            f"entries of the injected lock during {text} (it returned True)={entered}, but "
            f"should be at least 1: it compares and writes the cap inside the lock; {when}",
        )
        check_equal(left, entered, "ADMIT-12", f"lock exits during {text}", when)


def first_failure(
    wiring: Sequence[ClauseFailure], escaped: ClauseFailure | None
) -> ClauseFailure | None:
    """What a history reports: the first LOCK-2 failure ``check_wiring`` found, else the
    failure that escaped a thread (a call that raised, the history's clause), else the
    first wiring failure. A manager that left the injected lock for another fails LOCK-2
    for its table calls, and what follows from it (its raises went through the other lock,
    unserialised calls broke its table) is no finding of its own; only where every table
    call went through the injected lock is a raise outside it ADMIT-12's alone."""
    table = [failure for failure in wiring if failure.clause == "LOCK-2"]
    return next((found for found in (*table, escaped, *wiring) if found is not None), None)


def _worker(
    clause: str,
    call: Callable[[str, tuple[Any, ...]], Any],
    lock: WiredLock | None,
    recorder: Recorder,
    script: Script,
    inflight: InFlight,
    when: str,
    failures: list[ClauseFailure],
    gate: Gate | None = None,
) -> Callable[[], None]:
    # A wiring failure is kept, not raised: the history goes on, so a call after every
    # raise (the epilogue's) is checked too, and first_failure picks what to report.
    def work() -> None:
        name = threading.current_thread().name
        with gate.member() if gate is not None else nullcontext():
            for method, args in script:
                text = call_text(method, args)
                before = lock.mine() if lock is not None else (0, 0)
                try:
                    with inflight.call(text):
                        result = recorder.call(method, args, functools.partial(call, method, args))
                except Exception as error:
                    raise ClauseFailure(
                        clause, f"{text} raised {error!r} in {name} [{clause}: {when}]"
                    ) from error
                after = lock.mine() if lock is not None else (0, 0)
                entered, left = after[0] - before[0], after[1] - before[1]
                try:
                    check_wiring(method, args, result, entered, left, f"{name}, {when}")
                except ClauseFailure as failure:
                    failures.append(failure)  # list.append is atomic under the GIL

    return work


def record_raise_history(subject: Any, seed: str, *, refusing: bool, clause: str) -> list[Call]:
    """Fill a manager of ``MAX_SESSIONS`` (refusing when full if ``refusing``), run
    ``raise_scripts(seed)``'s threads, then its epilogue; every call recorded and checked
    by ``check_wiring``. A call that raises (but a refusal, when ``refusing``, and a raise's
    ``ValueError``) or a hang fails ``clause``, the history's own, and ends it; a wiring
    failure is kept and the history goes on. ``first_failure`` picks the one to raise."""
    __tracebackhide__ = True
    setup, scripts, epilogue = raise_scripts(seed)
    gate = Gate(len(scripts))
    factory = CountingFactory(
        WiredLock.factory(reentry="allow", yield_after_release=True, gate=gate)
    )
    keywords = {"evict_when_full": False} if refusing else {}
    shown = ", evict_when_full=False" if refusing else ""
    with calling(clause, f"make_manager(max_sessions={MAX_SESSIONS}{shown}, lock_factory=...)"):
        manager = subject.make_manager(
            max_sessions=MAX_SESSIONS, byte_budget=None, lock_factory=factory, **keywords
        )
    lock = factory.made[0] if factory.made else None  # none built: no call enters it
    call = functools.partial(perform_raising, manager, refusing=refusing)
    recorder, inflight, failures = Recorder(), InFlight(), list[ClauseFailure]()
    when = f"history {seed!r}, max_sessions={MAX_SESSIONS}{shown}"

    def run(scripts: list[Script], name: str, with_gate: bool = False) -> ClauseFailure | None:
        workers = [
            _worker(
                clause,
                call,
                lock,
                recorder,
                s,
                inflight,
                when,
                failures,
                gate if with_gate else None,
            )
            for s in scripts
        ]
        if with_gate:
            workers = [
                perturbed(w, f"{seed}/{i}", YIELD_PROBABILITY) for i, w in enumerate(workers)
            ]
        escaped = run_threads_within(clause, workers, inflight, name=name)
        if escaped and isinstance(escaped[0][1], ClauseFailure):
            return escaped[0][1]
        if escaped:
            thread, error = escaped[0]
            return ClauseFailure(clause, f"{thread}: {error!r} [{clause}: {when}]")
        return None

    escaped = run([setup], "setup")
    if escaped is None:
        with fast_switching():
            escaped = run(scripts, "thread", with_gate=True)
    if escaped is None:
        escaped = run([epilogue], "epilogue")
    failure = first_failure(failures, escaped)
    if failure is not None:
        raise failure
    return recorder.calls


def stale_raises(calls: Sequence[Call]) -> frozenset[int]:
    """The ``invoked`` stamps of the raises (``n > 0``) that overlap, in real time, another
    raise that returned True: only such a raise can have compared with a cap that the
    other's write made stale before its own write."""
    raises = [c for c in calls if c.method == "raise_max_sessions" and c.args[0] > 0]
    writers = [c for c in raises if c.result is True]
    return frozenset(
        c.invoked
        for c in raises
        if any(w is not c and w.invoked < c.returned and c.invoked < w.returned for w in writers)
    )


def blame_raises(calls: Sequence[Call], model: LruModel) -> str | None:
    """For a history ``model`` cannot explain: ADMIT-12 when it can once every raise
    that raced a writing raise keeps the result it reported (``stale_raises``): the
    raise compared the cap outside the lock. ``None`` otherwise: the table's calls are
    wrong, whatever the raises did."""
    stale = stale_raises(calls)
    if not stale:
        return None
    lenient = LruModel(
        model.max_sessions, evict_when_full=model.evict_when_full, stale_raises=stale
    )
    return "ADMIT-12" if linearize(calls, lenient).linearizable else None
