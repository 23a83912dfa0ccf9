"""Threaded histories at capacity (SPEC LOCK-5, LOCK-6): threads hammering a few ids
around a full table.

LOCK-5's mixed histories (``lock.record_history``) start from a table of zero to three
sessions and spread their calls over every method, so a hit and a miss at capacity rarely
run side by side. A recency clock advanced outside the lock (two hits sharing a stamp, or
stamps out of order with the lock) shows only there: a later eviction then picks a victim
no order of the calls explains. Admission control (``evict_when_full=False``) decided by a
check outside the lock shows only there too: two threads both admitted into the last
free slot. These histories fill the table first (with admission control, then free one
slot for two newcomers to race for), then run several threads of mostly
``get_or_create_session`` on one id more than the table holds, with a few ``in``, ``len``
and drops, so hits refresh, misses evict (or are refused) and slots free up inside one
another's intervals. They use the race amplifiers of the other concurrent checks
(``lock.racing``, ``lock.perturbed``, ``lock.fast_switching``), and a ``lock.Gate`` at the
lock's door: the threads meet there before any of them enters, so a check made before the
lock and trusted inside it is stale whenever another thread's call could make it so,
whatever the machine's load (a loaded machine rarely switches threads inside a window a
few bytecodes wide).

With admission control on, a ``get_or_create_session`` that raises is recorded as
``REFUSED``: the model accepts it only where a sequential order refuses too. Whether the
exception is ADMIT-1's is ADMIT-1's business, checked sequentially.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from typing import Any

from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._machine.lock import (
    MAX_SESSIONS,
    YIELD_PROBABILITY,
    Gate,
    fail,
    fast_switching,
    perform,
    perturbed,
    racing,
)
from sessionstate.conformance._model.linearizability import (
    REFUSED,
    Call,
    LruModel,
    Recorder,
    Verdict,
    call_text,
    linearize,
)
from sessionstate.conformance.checks import ClauseFailure, calling, check

__all__ = [
    "CAPACITY_MIX",
    "HOT_KEYS",
    "MIN_DECIDED",
    "capacity_scripts",
    "judge_histories",
    "perform_admitting",
    "record_capacity_history",
]

#: One id more than the table holds: every miss at capacity evicts (or is refused).
HOT_KEYS = tuple("abc"[: MAX_SESSIONS + 1])
#: (method, weight): mostly gets, so hits and misses at capacity interleave.
CAPACITY_MIX = (("get_or_create_session", 10), ("in", 2), ("len", 1), ("drop_session", 1))
#: SPEC LOCK-5, LOCK-6: the share of histories the search must decide.
MIN_DECIDED = 0.9

Script = list[tuple[str, tuple[str, ...]]]


def _pick(rnd: random.Random) -> tuple[str, tuple[str, ...]]:
    method = rnd.choices([m for m, _ in CAPACITY_MIX], [w for _, w in CAPACITY_MIX])[0]
    return method, () if method == "len" else (rnd.choice(HOT_KEYS),)


def capacity_scripts(seed: str, *, admission: bool = False) -> tuple[Script, list[Script]]:
    """(the setup, one script per thread: 3-4 threads of 3-5 calls).

    The setup fills the table. With ``admission`` it then drops one of its sessions, so
    one slot is free and two ids are absent, and the first two threads open with a miss
    on each: two newcomers race for the one slot (both admitted is LOCK-6's bug). The
    rest is drawn from ``CAPACITY_MIX``, so later misses find the table full, or a slot
    a drop freed.
    """
    rnd = random.Random(seed)
    filled = rnd.sample(HOT_KEYS, MAX_SESSIONS)
    setup: Script = [("get_or_create_session", (key,)) for key in filled]
    scripts = [[_pick(rnd) for _ in range(rnd.randint(3, 5))] for _ in range(rnd.randint(3, 4))]
    if admission:
        dropped = rnd.choice(filled)
        setup.append(("drop_session", (dropped,)))
        absent = [dropped, *(key for key in HOT_KEYS if key not in filled)]
        for script, key in zip(scripts, absent, strict=False):
            script[0] = ("get_or_create_session", (key,))
    return setup, scripts


def perform_admitting(manager: Any, method: str, args: Sequence[Any]) -> Any:
    """``lock.perform``; a ``get_or_create_session`` that raises is ``REFUSED``."""
    if method != "get_or_create_session":
        return perform(manager, method, args)
    try:
        return manager.get_or_create_session(*args)
    except Exception:
        return REFUSED


def _worker(
    clause: str,
    calls: Callable[[Any, str, Sequence[Any]], Any],
    manager: Any,
    recorder: Recorder,
    script: Script,
    gate: Gate | None = None,
) -> Callable[[], None]:
    def work() -> None:
        with gate.member() if gate is not None else nullcontext():
            for method, args in script:
                run = functools.partial(calls, manager, method, args)
                try:
                    recorder.call(method, args, run)
                except Exception as error:
                    name = threading.current_thread().name
                    raise ClauseFailure(
                        clause, f"{call_text(method, args)} raised {error!r} in {name}"
                    ) from error

    return work


def record_capacity_history(subject: Any, seed: str, *, admission: bool) -> list[Call]:
    """Fill a manager of ``MAX_SESSIONS`` (refusing when full if ``admission``), then run
    ``capacity_scripts(seed)`` in threads; every call recorded."""
    clause = "LOCK-6" if admission else "LOCK-5"
    setup, scripts = capacity_scripts(seed, admission=admission)
    gate = Gate(len(scripts))
    keywords = {"evict_when_full": False} if admission else {}
    shown = ", evict_when_full=False" if admission else ""
    with calling(clause, f"make_manager(max_sessions={MAX_SESSIONS}{shown}, lock_factory=...)"):
        manager = subject.make_manager(
            max_sessions=MAX_SESSIONS, byte_budget=None, lock_factory=racing(gate), **keywords
        )
    calls = perform_admitting if admission else perform
    recorder, inflight = Recorder(), InFlight()
    escaped = run_threads_within(
        clause, [_worker(clause, calls, manager, recorder, setup)], inflight, name="setup"
    )
    with fast_switching():
        workers = [
            perturbed(
                _worker(clause, calls, manager, recorder, s, gate), f"{seed}/{i}", YIELD_PROBABILITY
            )
            for i, s in enumerate(scripts)
        ]
        escaped += run_threads_within(clause, workers, inflight)
    if escaped:
        thread, error = escaped[0]
        text = str(error) if isinstance(error, ClauseFailure) else f"{thread}: {error!r}"
        fail(clause, text, f"history {seed!r}")
    return recorder.calls


def judge_histories(
    clause: str,
    histories: Iterable[tuple[str, list[Call]]],
    model: LruModel,
    blame: Callable[[Sequence[Call], LruModel], str | None] | None = None,
) -> None:
    """Fail ``clause`` at the first history no order explains, or when fewer than
    ``MIN_DECIDED`` of them are decided within the search budget.

    ``blame(calls, model)``, asked only of a history no order explains, may name the
    clause it breaks instead (``None``: ``clause``)."""
    __tracebackhide__ = True
    undecided: list[str] = []
    total = 0
    for seed, calls in histories:
        total += 1
        verdict = linearize(calls, model)
        if verdict.outcome == "not linearizable":
            named = blame(calls, model) if blame is not None else None
            _fail_unexplained(named or clause, verdict, seed, model)
        if verdict.outcome == "inconclusive":
            undecided.append(seed)
    decided = total - len(undecided)
    check(
        decided >= MIN_DECIDED * total,
        clause,
        f"decided histories={decided}, but should be at least {MIN_DECIDED:.0%} of "
        f"{total}; undecided within the search budget: {', '.join(undecided[:3])}, ...",
    )


def _fail_unexplained(clause: str, verdict: Verdict, seed: str, model: LruModel) -> None:
    __tracebackhide__ = True
    index, expected = verdict.rejected[0]  # a dead end always has rejected candidates
    call = verdict.calls[index]
    policy = "" if model.evict_when_full else ", evict_when_full=False"
    raise ClauseFailure(
        clause,
        f"{call.text()}={call.result!r}, but should be {expected!r} [{clause}: no order of "
        f"history {seed!r} explains it, max_sessions={model.max_sessions}{policy}]\n"
        f"{verdict.explain()}",
    )
