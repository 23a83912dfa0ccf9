"""How often the LRU machines and the LOCK histories reach what lazily-kept recency and
racing admission get wrong (SPEC LRU-3, LRU-4, LOCK-5, LOCK-6).

* A *long run then evictions*: a program of the LRU machines in which at least
  ``RUN_HITS`` hits on at most ``RUN_SESSIONS`` sessions, with no miss between them, are
  followed by at least ``RUN_EVICTIONS`` evictions. A recency heap's stale entries, a
  wrapping generation tag and compaction misbehave only there.
* A *hit beside a miss at capacity*: a recorded threaded history in which a hit and a miss
  on a full table (one that evicts or is refused) overlap in real time. Whether a call was
  a hit is read from the order the linearizability search found on the reference.
* *Newcomers racing for one slot* (admission control): a history in which a miss takes the
  table's last free slot while a miss on another id, refused in that order, overlaps it
  in real time: the race a room check made outside the lock loses (LOCK-6).

``tests/conformance/test_reach.py`` asserts floors under these shares;
``bench/reachability.py`` publishes them in BENCHMARKS.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from sessionstate.conformance._machine.lock import record_history
from sessionstate.conformance._machine.lock_capacity import MAX_SESSIONS, record_capacity_history
from sessionstate.conformance._machine.manager import ManagerMachine
from sessionstate.conformance._model.linearizability import Call, LruModel, linearize
from sessionstate.conformance._model.manager import LruTable, Outcome, spec_key

__all__ = [
    "RUN_EVICTIONS",
    "RUN_HITS",
    "RUN_SESSIONS",
    "history_reach",
    "long_run_then_evictions",
    "newcomers_racing_for_one_slot",
    "overlapping_hit_and_full_miss",
    "program_reach",
]

RUN_HITS = 16
RUN_SESSIONS = 3
RUN_EVICTIONS = 2


def long_run_then_evictions(trace: Sequence[tuple[str, object, object]]) -> bool:
    """Whether a machine's trace holds ``RUN_HITS`` hits on at most ``RUN_SESSIONS``
    sessions with no miss between them, then ``RUN_EVICTIONS`` evictions."""
    hits, keys, evictions, armed = 0, set(), 0, None
    for call, session_id, seen in trace:
        if call == "counters" and isinstance(seen, dict):
            evictions = seen["evictions"]
            if armed is not None and evictions - armed >= RUN_EVICTIONS:
                return True
        elif call == "get_or_create_session" and seen:
            hits += 1
            keys.add(spec_key(session_id))
        elif call == "get_or_create_session":
            if armed is None and hits >= RUN_HITS and len(keys) <= RUN_SESSIONS:
                armed = evictions
            hits, keys = 0, set()
    return False


def program_reach(machine: type[ManagerMachine], subject: Any, **profile: Any) -> tuple[int, int]:
    """(programs that reached a long run then evictions, programs run): ``machine`` on
    ``subject`` under ``settings(**profile)``, derandomized, so the count is repeatable."""
    counts = [0, 0]

    class Counting(machine):  # type: ignore[valid-type, misc]
        def teardown(self) -> None:
            counts[0] += long_run_then_evictions(self.trace)
            counts[1] += 1
            super().teardown()

    Counting.__name__ = machine.__name__
    Counting.TestCase.settings = settings(derandomize=True, database=None, deadline=None, **profile)
    run_state_machine_as_test(lambda: Counting(subject), settings=Counting.TestCase.settings)
    return counts[0], counts[1]


class _Step(NamedTuple):
    """A ``get_or_create_session`` of a history, replayed in the order the search found."""

    call: Call
    outcome: Outcome
    full_before: bool
    full_after: bool


def _replayed(calls: Sequence[Call], max_sessions: int, admission: bool) -> list[_Step]:
    """Each ``get_or_create_session`` of ``calls``, classified by replaying the order the
    linearizability search found on the model's table; none if no order was found."""
    verdict = linearize(calls, LruModel(max_sessions, evict_when_full=not admission))
    if not verdict.linearizable:
        return []
    table = LruTable(max_sessions, evict_when_full=not admission)
    steps = []
    for index in verdict.order:
        call = calls[index]
        if call.method == "get_or_create_session":
            full = table.full
            outcome = table.get_or_create_session(call.args[0])
            steps.append(_Step(call, outcome, full, table.full))
        elif call.method == "drop_session":
            table.drop_session(call.args[0])
    return steps


def _overlap(a: Call, b: Call) -> bool:
    return a.invoked < b.returned and b.invoked < a.returned


def overlapping_hit_and_full_miss(
    calls: Sequence[Call], max_sessions: int, admission: bool
) -> bool:
    """Whether a hit and a miss on a full table overlap in real time in ``calls``, each
    call classified by the order the linearizability search found (``False`` if none)."""
    steps = _replayed(calls, max_sessions, admission)
    hits = [s.call for s in steps if s.outcome.hit]
    full_misses = [s.call for s in steps if not s.outcome.hit and s.full_before]
    return any(_overlap(a, b) for a in hits for b in full_misses)


def newcomers_racing_for_one_slot(calls: Sequence[Call], max_sessions: int) -> bool:
    """Whether, with admission control, a miss admitted into the last free slot and a
    refused miss on another id overlap in real time in ``calls``, each call classified by
    the order the linearizability search found (``False`` if none)."""
    steps = _replayed(calls, max_sessions, admission=True)
    last_slot = [s.call for s in steps if s.outcome.kind == "miss" and s.full_after]
    refused = [s.call for s in steps if s.outcome.kind == "refused"]
    return any(a.args != b.args and _overlap(a, b) for a in last_slot for b in refused)


HISTORIES: dict[str, Callable[[Any, str], list[Call]]] = {
    "LOCK-5 mixed": record_history,
    "LOCK-5 at capacity": lambda s, seed: record_capacity_history(s, seed, admission=False),
    "LOCK-6 admission": lambda s, seed: record_capacity_history(s, seed, admission=True),
}


def history_reach(subject: Any, kind: str, count: int) -> tuple[int, int, int]:
    """(histories with a hit beside a miss at capacity, histories with newcomers racing for
    one slot, histories recorded) of ``kind``; the second is 0 without admission control."""
    admission = kind.startswith("LOCK-6")
    reached = racing = 0
    for n in range(count):
        calls = HISTORIES[kind](subject, f"reach/{kind}/{n}")
        reached += overlapping_hit_and_full_miss(calls, MAX_SESSIONS, admission)
        racing += admission and newcomers_racing_for_one_slot(calls, MAX_SESSIONS)
    return reached, racing, count
