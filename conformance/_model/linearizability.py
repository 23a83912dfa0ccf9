"""Concurrent histories, and a search for a sequential order that explains them.

A history is a list of completed calls, each with an invocation and a response
time stamp taken from one shared counter. It is *linearizable* when its calls
can be put in one order that (a) keeps every call that returned before another
was invoked ahead of it and (b) is accepted, result by result, by a sequential
model (SPEC LOCK-5). The search is Wing and Gong's (pick any call that may go
first, apply it to the model, recurse, backtrack) with Lowe's memo of
(calls placed, model state) configurations already explored, which bounds it by
the number of distinct configurations. A ``budget`` caps the model steps: a
search that runs out is ``inconclusive``, never a pass.

``LruModel`` is the suite's own sequential model of the manager (contract
section 4), written from the spec and independent of any implementation; on a manager
with admission control it models ``raise_max_sessions`` too.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from sessionstate.conformance._model.manager import LruTable, spec_key

__all__ = [
    "DEFAULT_BUDGET",
    "REFUSED",
    "VALUE_ERROR",
    "Call",
    "LruModel",
    "Model",
    "Recorder",
    "Step",
    "Verdict",
    "call_text",
    "linearize",
]

S = TypeVar("S", bound=Hashable)

#: Model steps per history. Histories of a dozen calls need a few hundred.
DEFAULT_BUDGET = 20_000


class _Outcome:
    """A recorded result that is no value the subject returned, but what the call did
    instead: one object each, compared by identity, shown by its name."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: The recorded result of a ``get_or_create_session`` that raised on a manager with
#: admission control on (``evict_when_full=False``): a refusal, which the model accepts
#: only where it refuses too (SPEC LOCK-6).
REFUSED = _Outcome("refused")
#: The recorded result of a ``raise_max_sessions(n)`` that raised ``ValueError``: what the
#: model asks of a non-positive ``n`` (SPEC ADMIT-7), and of no other.
VALUE_ERROR = _Outcome("ValueError")


@dataclass(frozen=True)
class Call:
    """One completed call: ``method(*args) -> result`` on ``thread``, in [invoked, returned]."""

    thread: str
    method: str
    args: tuple[Any, ...]
    result: Any
    invoked: int
    returned: int

    def text(self) -> str:
        """The call as Python, e.g. ``"get_or_create_session('a')"``."""
        return call_text(self.method, self.args)


def call_text(method: str, args: Sequence[Any]) -> str:
    """``method(*args)`` as Python; ``len``, ``in`` and ``max_sessions`` (an attribute read) as
    ``len(manager)``, ``'a' in manager``, ``manager.max_sessions``."""
    if method == "len":
        return "len(manager)"
    if method == "in":
        return f"{args[0]!r} in manager"
    if method == "max_sessions":
        return "manager.max_sessions"
    return f"{method}({', '.join(map(repr, args))})"


class Step(NamedTuple):
    """What a model says about one call: accepted or not, the state after, what it expected."""

    ok: bool
    state: Any
    expected: Any


class Model(Protocol[S]):
    """A sequential specification: an initial state and one step per call."""

    def initial(self) -> S: ...

    def step(self, state: S, call: Call) -> Step: ...


@dataclass
class Verdict:
    """The outcome of one search: ``linearizable``, ``not linearizable`` or ``inconclusive``."""

    outcome: str
    calls: Sequence[Call]
    order: tuple[int, ...] = ()
    steps: int = 0
    rejected: list[tuple[int, Any]] = field(default_factory=list)

    @property
    def linearizable(self) -> bool:
        return self.outcome == "linearizable"

    def explain(self) -> str:
        """For a failure: the deepest explainable prefix, what could not follow, the history."""
        placed = ", ".join(f"#{i}" for i in self.order) or "nothing"
        lines = [
            f"{self.outcome} after {self.steps} model steps; longest explained prefix: {placed}"
        ]
        lines += [
            f"  then #{i} {self.calls[i].text()} returned {self.calls[i].result!r}, "
            f"but the model expected {expected!r}"
            for i, expected in self.rejected
        ]
        lines.append("history (thread [invoked, returned] call -> result):")
        lines += [
            f"  #{i} {c.thread} [{c.invoked}, {c.returned}] {c.text()} -> {c.result!r}"
            for i, c in enumerate(self.calls)
        ]
        return "\n".join(lines)


class _OutOfBudget(Exception):
    pass


class _Search(Generic[S]):
    def __init__(self, calls: Sequence[Call], model: Model[S], budget: int) -> None:
        self.calls, self.model, self.budget = calls, model, budget
        self.full = (1 << len(calls)) - 1
        self.seen: set[tuple[int, S]] = set()
        self.steps = 0
        self.best: tuple[int, ...] = ()

    def candidates(self, placed: int) -> list[int]:
        # A call may go next unless a remaining call returned before it was invoked.
        rest = [i for i in range(len(self.calls)) if not placed >> i & 1]
        first_return = min(self.calls[i].returned for i in rest)
        return [i for i in rest if self.calls[i].invoked < first_return]

    def run(self, placed: int, state: S, order: tuple[int, ...]) -> tuple[int, ...] | None:
        if placed == self.full:
            return order
        if len(order) > len(self.best):
            self.best = order
        for i in self.candidates(placed):
            self.steps += 1
            if self.steps > self.budget:
                raise _OutOfBudget
            step = self.model.step(state, self.calls[i])
            key = (placed | 1 << i, step.state)
            if not step.ok or key in self.seen:
                continue
            self.seen.add(key)
            found = self.run(placed | 1 << i, step.state, (*order, i))
            if found is not None:
                return found
        return None


def linearize(calls: Sequence[Call], model: Model[S], budget: int = DEFAULT_BUDGET) -> Verdict:
    """Search for an order of ``calls`` that respects real time and ``model``."""
    search = _Search(calls, model, budget)
    try:
        order = search.run(0, model.initial(), ())
    except _OutOfBudget:
        return Verdict("inconclusive", calls, search.best, search.steps)
    if order is not None:
        return Verdict("linearizable", calls, order, search.steps)
    return Verdict("not linearizable", calls, search.best, search.steps, _rejected(search, model))


def _rejected(search: _Search[S], model: Model[S]) -> list[tuple[int, Any]]:
    # Replay the deepest prefix and ask the model about each call that could follow.
    state, placed = model.initial(), 0
    for i in search.best:
        state, placed = model.step(state, search.calls[i]).state, placed | 1 << i
    if placed == search.full:
        return []
    # Every candidate there is rejected: an accepted one would have gone deeper.
    steps = [(i, model.step(state, search.calls[i])) for i in search.candidates(placed)]
    return [(i, step.expected) for i, step in steps if not step.ok]


class Recorder:
    """Records calls made from several threads, stamped by one shared counter.

    ``call(method, args, fn)`` takes the invocation stamp, runs ``fn()`` (the
    call ``method(*args)``), takes the response stamp. Sessions returned by
    ``get_or_create_session`` are recorded as labels ``s0, s1, ...`` (one per
    distinct object, kept alive here so ``id`` is never reused), which is all
    the model needs: whether a result is the same object as another call's, or
    a new one.
    """

    def __init__(self) -> None:
        self._clock = itertools.count()  # next() on a count is atomic under the GIL
        self._labels: dict[int, str] = {}
        self._alive: list[object] = []
        self._guard = threading.Lock()
        self.calls: list[Call] = []

    def call(self, method: str, args: tuple[Any, ...], fn: Callable[[], Any]) -> Any:
        invoked = next(self._clock)
        result = fn()
        returned = next(self._clock)
        name = threading.current_thread().name
        labelled = method == "get_or_create_session" and result is not REFUSED
        recorded = self._label(result) if labelled else result
        with self._guard:
            self.calls.append(Call(name, method, args, recorded, invoked, returned))
        return result

    def _label(self, session: object) -> str:
        with self._guard:
            if id(session) not in self._labels:
                self._labels[id(session)] = f"s{len(self._labels)}"
                self._alive.append(session)
            return self._labels[id(session)]


class _LruState(NamedTuple):
    """An ``LruTable`` frozen, so the search can remember the states it has seen."""

    table: tuple[tuple[Hashable, object], ...]  # (key, session label), least recent first
    created: frozenset[str]
    hits: int
    misses: int
    evictions: int
    cap: int  # the max_sessions in force


class LruModel:
    """The manager as a sequential specification (contract section 4, SPEC LRU/DROP/STATS).

    Each step asks the suite's one LRU oracle (``_model.manager.LruTable``) what the
    call does, on a table thawed from the frozen state. Calls use normalised string
    keys. ``get_or_create_session`` must return the table's session on a hit and a
    never-seen session on a miss; ``drop_session`` returns whether the key was
    present; ``len``, ``in`` and ``max_sessions`` (the attribute) are pure reads;
    ``stats`` is observed as ``(sessions, hits, misses, evictions)``. With
    ``evict_when_full=False`` (admission control, SPEC LOCK-6) a miss on a full table
    must be ``REFUSED`` and changes nothing.

    ``raise_max_sessions(n)`` (SPEC ADMIT-6, ADMIT-7) returns True and sets the cap when
    ``n`` is above the cap in force, returns False and changes nothing for a positive
    ``n`` at or below it, and is ``VALUE_ERROR`` for ``n <= 0``, changing nothing.

    ``stale_raises`` names raise calls (by their ``invoked`` stamp) whose result is taken
    as the subject reported it: True sets the cap to their ``n``, lower or not, False
    changes nothing. That is what a raise whose comparison read the cap before another
    raise wrote it can do; a machine asks such a model only once the spec's has found no
    order, to tell a stale comparison from a wrong table. ``n <= 0`` is judged as ever.
    """

    def __init__(
        self,
        max_sessions: int,
        *,
        evict_when_full: bool = True,
        stale_raises: Collection[int] = (),
    ) -> None:
        self.max_sessions = max_sessions
        self.evict_when_full = evict_when_full
        self.stale_raises = frozenset(stale_raises)

    def initial(self) -> _LruState:
        return _LruState((), frozenset(), 0, 0, 0, self.max_sessions)

    def step(self, state: _LruState, call: Call) -> Step:
        handler = getattr(self, f"_{call.method}")
        return handler(state, call)  # type: ignore[no-any-return]

    def _thaw(self, state: _LruState) -> LruTable:
        table = LruTable(state.cap, evict_when_full=self.evict_when_full)
        table.order = dict(state.table)
        table.hits, table.misses, table.evictions = state.hits, state.misses, state.evictions
        return table

    @staticmethod
    def _freeze(table: LruTable, created: frozenset[str]) -> _LruState:
        return _LruState(
            tuple(table.order.items()),
            created,
            table.hits,
            table.misses,
            table.evictions,
            table.max_sessions,
        )

    def _get_or_create_session(self, state: _LruState, call: Call) -> Step:
        table = self._thaw(state)
        key = call.args[0]
        outcome = table.get_or_create_session(key, payload=call.result)
        if outcome.kind == "refused":  # ADMIT-2, ADMIT-3: nothing changes
            return Step(call.result is REFUSED, state, REFUSED)
        if outcome.hit:
            label = table.order[spec_key(key)]
            return Step(call.result == label, self._freeze(table, state.created), label)
        fresh = call.result is not REFUSED and call.result not in state.created
        return Step(fresh, self._freeze(table, state.created | {call.result}), "a new session")

    def _drop_session(self, state: _LruState, call: Call) -> Step:
        table = self._thaw(state)
        present = table.drop_session(call.args[0])
        return Step(call.result == present, self._freeze(table, state.created), present)

    def _len(self, state: _LruState, call: Call) -> Step:
        return Step(call.result == len(state.table), state, len(state.table))

    def _in(self, state: _LruState, call: Call) -> Step:
        present = self._thaw(state).contains(call.args[0])
        return Step(call.result == present, state, present)

    def _stats(self, state: _LruState, call: Call) -> Step:
        expected = (len(state.table), state.hits, state.misses, state.evictions)
        return Step(call.result == expected, state, expected)

    def _max_sessions(self, state: _LruState, call: Call) -> Step:
        return Step(call.result == state.cap, state, state.cap)

    def _raise_max_sessions(self, state: _LruState, call: Call) -> Step:
        n = call.args[0]
        table = self._thaw(state)
        try:
            raised = table.raise_max_sessions(n)
        except ValueError:  # ADMIT-7: nothing changes
            return Step(call.result is VALUE_ERROR, state, VALUE_ERROR)
        if call.invoked in self.stale_raises and isinstance(call.result, bool):
            return Step(True, state._replace(cap=n) if call.result else state, raised)
        return Step(call.result is raised, self._freeze(table, state.created), raised)
