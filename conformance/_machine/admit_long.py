"""``LongAdmissionMachine``: admission control (ADMIT) through programs of thousands of calls.

The machines of ``admit`` check the whole table after each call: every mark, and a
refusing manager's LRU order by replaying every call so far on a twin, O(calls) a call.
This one runs a table of any size (caps by ``sizes()`` to ``CAP_BOUND``, raised past 4,096)
through bulk steps and the single calls of the surface, at most ``PROGRAM_CALLS`` calls,
each checked as it returns in O(1) against ``LruTable``: what it returned (the resident
session; a new, empty one no resident holds; the refusal naming the key), ``len``, the
counters, ``in`` on its id and on each session the model evicted, and on a refusal the
least recent session's presence and mark (what a refusal that evicts or touches reaches
first). At rest after each step: every resident's mark (O(residents) once a step: a reset
or replaced session shows however the step went on) and ADMIT-9's conservation.

A refusing manager's order shows only through evictions: each miss's victims after
``evict_when_full = True``, and ``finish()``, which switches to evicting and evicts every
session the program left. The twin is spent only once a victim is wrong, to name the call
that damaged the order (``order_clause``: a bisection, each probe a fresh twin given a
prefix of the calls; O(calls x log calls), once). What this misses and the per-call twin of
``admit`` sees: an order damaged, then put right before an eviction reached it; the short
machines keep that check.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionstate.conformance._machine import admit
from sessionstate.conformance._machine.bulk import CAP_BOUND, NEWCOMER_REACH, OPENINGS
from sessionstate.conformance._model.manager import LruTable, spec_key
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import Lazy, calling, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, sizes

__all__ = ["OPENINGS", "PROGRAM_CALLS", "LongAdmissionMachine"]

#: The most calls of the surface one program makes (``finish()`` aside): a bulk step is cut
#: to what is left, so a program's time is bounded whatever its steps drew.
PROGRAM_CALLS = 4096
#: A recorded call: (the name of a method a manager shares with ``LruTable``, its argument).
Call = tuple[str, Any]


def _apply(target: Any, call: Call) -> object:
    """``call`` on a manager or an ``LruTable`` (whose flag is a method); what it raises is
    returned."""
    method, arg = call
    if method == "set_evict_when_full" and not isinstance(target, LruTable):
        target.evict_when_full = arg
        return None
    return admit.outcome_of(partial(getattr(target, method), arg))


def _call_clause(model: LruTable, call: Call) -> str:
    """The clause ``call`` breaks when it leaves another LRU order than the model's (the
    model as it was before the call)."""
    method, arg = call
    if method in ("raise_max_sessions", "set_evict_when_full"):
        return "ADMIT-6" if method == "raise_max_sessions" else "ADMIT-11"
    if method == "drop_session":
        return "ADMIT-10" if model.evict_when_full else "ADMIT-5"
    if spec_key(arg) in model.order:
        return admit.hit_clause(model)
    return "ADMIT-2" if model.full and not model.evict_when_full else admit.table_clause(model)


class LongAdmissionMachine(RuleBasedStateMachine):
    """One manager, refusing or evicting by default, through a long program (module doc)."""

    CLAUSES = admit.ADMIT_CLAUSES

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.subject = subject
        self.kwargs: dict[str, Any] = {}
        self.manager: Any = None
        self.model = LruTable(1)
        self.sessions: dict[Hashable, Any] = {}  # key -> the object the subject returned
        self.holders: dict[int, Hashable] = {}  # id(object) -> key, residents only
        self.history: list[Call] = []
        self.drops = 0  # successful drops (ADMIT-9)
        self.admitted = 0  # sessions created over the program
        self.fresh = 0
        self.could_refuse = False  # built refusing or seen refusing (admit.refusal_clause)
        self.refused = False  # a refusal in this step: a wrong mark at rest is ADMIT-2's

    @initialize(max_sessions=sizes(1, CAP_BOUND), flag=st.sampled_from([False, None]),
                opening=OPENINGS)  # fmt: skip
    def make_manager(self, max_sessions: int, flag: bool | None, opening: bool = False) -> None:
        """``flag``: ``evict_when_full=False``, or the argument left out (evicting, ADMIT-10).
        The ``opening``: 1,024 misses past the free room (refused, or evicting), then 512
        sessions dropped and their slots taken by newcomers."""
        self.kwargs = {"max_sessions": max_sessions, "byte_budget": None}
        if flag is not None:
            self.kwargs["evict_when_full"] = flag
        self.manager = self._construct("ADMIT-10" if flag is None else "ADMIT-11")
        evicts = flag is None
        with calling("ADMIT-10", "manager.evict_when_full"):
            observed = self.manager.evict_when_full
        check_equal(observed, evicts, "ADMIT-10", "evict_when_full", f"given {self.kwargs}")
        self.model = LruTable(max_sessions, evict_when_full=evicts)
        self.could_refuse = evicts
        if opening:
            self.newcomers(count=PROGRAM_CALLS // 4, reach="past room")
            self.readmits(count=PROGRAM_CALLS // 8, oldest=True)

    def _construct(self, clause: str) -> Any:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        with calling(clause, f"SessionStateManager({shown})"):
            return self.subject.make_manager(**self.kwargs)

    def _fresh(self, prefix: str = "n") -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def _budget(self, count: int) -> int:
        return max(0, min(count, PROGRAM_CALLS - len(self.history)))

    def _when(self, call: object, where: str) -> str:
        return f"{call} ({where}), the model after it: {self.model.describe()}"

    # -- one call, checked as it returns --------------------------------------------------

    def _get(self, session_id: object, where: str) -> None:
        model, key = self.model, spec_key(session_id)
        clauses = (admit.hit_clause(model), admit.admit_clause(model), admit.table_clause(model))
        front = next(iter(model.order), None)
        could_refuse = self.could_refuse
        expected = model.get_or_create_session(session_id)
        self.history.append(("get_or_create_session", session_id))
        observed = admit.outcome_of(partial(self.manager.get_or_create_session, session_id))
        call = Lazy(lambda: f"get_or_create_session({short_repr(session_id)})")
        if expected.kind == "refused":
            wanted = admit.refusal(session_id)
            if observed != wanted:
                clause = admit.refusal_clause(model, observed, could_refuse)
                check_equal(observed, wanted, clause, str(call), self._when(call, where))
            self.could_refuse = self.refused = True
            present = () if front is None else (front,)
            self._observe(call, where, ("ADMIT-2", "ADMIT-3"), present, (key,))
            if front is not None and self.sessions[front].attrs.get("mark") != front:
                self._check_marks("ADMIT-2", f"after {call} ({where})")
        elif expected.kind == "hit":
            held = self.sessions[key]
            if observed is not held:
                check_equal(
                    observed, admit.Same(held), clauses[0], str(call), self._when(call, where)
                )
            self._observe(call, where, (clauses[0], clauses[0]), (key,), ())
        else:
            self._admitted(key, observed, clauses[1], call, where)
            for victim in expected.evicted:
                self.holders.pop(id(self.sessions.pop(victim)), None)
            self._observe(call, where, (clauses[2], clauses[1]), (key,), expected.evicted)

    def _admitted(self, key: Hashable, observed: Any, clause: str, call: Lazy, where: str) -> None:
        """A miss: a new session, empty and held by no resident, marked with its key."""
        with calling(clause, call):
            if isinstance(observed, BaseException):
                raise observed
            contents = (list(observed.names()), dict(observed.attrs))
        if contents != ([], {}):
            what = f"({call}.names(), .attrs)"
            check_equal(contents, ([], {}), clause, what, self._when(call, where))
        holder = self.holders.get(id(observed))
        if holder is not None:
            what = f"resident ids already holding {call}"
            check_equal([holder], [], clause, what, self._when(call, where))
        observed.attrs["mark"] = key
        self.sessions[key], self.holders[id(observed)] = observed, key
        self.admitted += 1

    def _drop(self, session_id: object, where: str) -> None:
        clause = "ADMIT-10" if self.model.evict_when_full else "ADMIT-5"
        expected = self.model.drop_session(session_id)
        self.history.append(("drop_session", session_id))
        call = Lazy(lambda: f"drop_session({short_repr(session_id)})")
        with calling(clause, call):
            observed = self.manager.drop_session(session_id)
        if observed != expected:
            check_equal(observed, expected, clause, str(call), self._when(call, where))
        key = spec_key(session_id)
        if expected:
            self.drops += 1
            self.holders.pop(id(self.sessions.pop(key)), None)
        self._observe(call, where, (clause, clause), (), (key,))

    def _observe(self, call: Lazy, where: str, clauses: tuple[str, str],
                 present: Iterable[Hashable], absent: Iterable[Hashable]) -> None:  # fmt: skip
        """``len``, ``in`` on ``present`` and ``absent`` keys (``clauses[0]``; a victim left
        in place is an order to blame, ``order_clause``) and the counters (``clauses[1]``)."""
        manager, model = self.manager, self.model
        with calling(clauses[0], Lazy(lambda: f"len(manager), `in` and the counters after {call}")):
            size = len(manager)
            missing = [key for key in present if key not in manager]
            kept = [key for key in absent if key in manager]
            counters = (manager.hits, manager.misses, manager.evictions)
        if size != len(model):
            check_equal(size, len(model), clauses[0], "len(manager)", self._when(call, where))
        if missing:
            check_equal(missing, [], clauses[0], "ids missing", self._when(call, where))
        if kept:
            clause = self.order_clause(clauses[0])
            check_equal(kept, [], clause, "ids still in manager", self._when(call, where))
        expected = (model.hits, model.misses, model.evictions)
        if counters != expected:
            what = "(hits, misses, evictions)"
            check_equal(counters, expected, clauses[1], what, self._when(call, where))

    def _flag(self, flag: bool) -> None:
        self.history.append(("set_evict_when_full", flag))
        call = f"manager.evict_when_full = {flag}"
        with calling("ADMIT-11", call):
            self.manager.evict_when_full = flag
            observed = self.manager.evict_when_full
        self.model.set_evict_when_full(flag)
        if observed != flag:
            check_equal(observed, flag, "ADMIT-11", "evict_when_full", self._when(call, "a step"))

    # -- blame: which call damaged the order --------------------------------------------

    def order_clause(self, fallback: str) -> str:
        """The clause of the call that first left the subject's LRU order unlike the model's,
        found by bisection on twins (``_twin_damage``) over the calls before the last one;
        ``fallback`` when the order was right before it: the last call evicted wrongly."""
        end = len(self.history) - 1
        damage = self._twin_damage(end)
        if damage != "order":
            return damage or fallback
        good, bad = 0, end
        while bad - good > 1:
            middle = (good + bad) // 2
            damage = self._twin_damage(middle)
            if damage == "ADMIT-11":
                return damage
            good, bad = (good, middle) if damage else (middle, bad)
        model = self._replayed(bad - 1)
        return _call_clause(model, self.history[bad - 1])

    def _replayed(self, prefix: int) -> LruTable:
        kwargs = self.kwargs
        model = LruTable(kwargs["max_sessions"], evict_when_full="evict_when_full" not in kwargs)
        for call in self.history[:prefix]:
            _apply(model, call)
        return model

    def _twin_damage(self, prefix: int) -> str | None:
        """``None`` when a fresh manager given the first ``prefix`` calls, then switched to
        evicting and fed newcomers, evicts in the model's order; ``"ADMIT-11"`` when, once
        switched, it refuses a newcomer; ``"order"`` otherwise."""
        model, twin = self._replayed(prefix), self._construct("ADMIT-10")
        for call in self.history[:prefix]:
            _apply(twin, call)
        order, cap = model.keys(), model.max_sessions
        with calling("ADMIT-11", "twin.evict_when_full = True"):
            twin.evict_when_full = True
        if len(twin) != len(order) or not all(key in twin for key in order):
            return "order"
        for n, key in enumerate([None] * (cap - len(order)) + order):
            made = admit.outcome_of(partial(twin.get_or_create_session, f"twin newcomer {n}"))
            if isinstance(made, BaseException):
                return "ADMIT-11"
            if key is not None and (key in twin or len(twin) != cap):
                return "order"
        return None

    # -- the steps ---------------------------------------------------------------------

    @rule(count=sizes(1, COUNT_BOUND), reach=st.sampled_from(NEWCOMER_REACH[:2]))
    def newcomers(self, count: int, reach: str) -> None:
        """Misses on fresh ids; ``past room``: after as many as fill the free room, so the
        rest are refused (or evict)."""
        if reach == "past room":
            count += max(0, self.model.max_sessions - len(self.model))
        for n in range(self._budget(count)):
            self._get(self._fresh(), f"newcomer {n + 1} of {count}")

    @precondition(lambda self: len(self.model) > 0)
    @rule(k=sizes(1, COUNT_BOUND), times=sizes(1, COUNT_BOUND), oldest=st.booleans(),
          reverse=st.booleans())  # fmt: skip
    def hits_cycling(self, k: int, times: int, oldest: bool, reverse: bool) -> None:
        """Hits cycling over the ``k`` most (or ``oldest``: least) recent sessions."""
        every = self.model.keys()
        cycle = every[:k] if oldest else every[-k:]
        if reverse:
            cycle.reverse()
        for n in range(self._budget(times)):
            self._get(cycle[n % len(cycle)], f"hit {n + 1} of {times} over {len(cycle)}")

    @precondition(lambda self: len(self.model) > 0)
    @rule(count=sizes(1, COUNT_BOUND), oldest=st.booleans())
    def readmits(self, count: int, oldest: bool) -> None:
        """``count`` times: drop the least (``oldest``) or most recent session, then a miss
        on a fresh id, admitted into the slot the drop freed (ADMIT-5)."""
        for n in range(min(count, self._budget(2 * count) // 2)):
            order = self.model.order
            if not order:
                break
            victim = next(iter(order)) if oldest else next(reversed(order))
            self._drop(victim, f"readmit {n + 1} of {count}")
            self._get(self._fresh("r"), f"readmit {n + 1} of {count}")

    @precondition(lambda self: len(self.model) > 1)
    @rule(count=sizes(1, COUNT_BOUND), stride=sizes(1, 16), offset=sizes(0, COUNT_BOUND))
    def drop_spread(self, count: int, stride: int, offset: int) -> None:
        """Drop up to ``count`` residents ``stride`` apart in LRU order, from ``offset``."""
        keys = self.model.keys()
        chosen = keys[offset % len(keys) :: stride][: self._budget(count)]
        for n, key in enumerate(chosen):
            self._drop(key, f"drop {n + 1} of {len(chosen)}, {stride} apart")

    @rule(calls=st.lists(st.tuples(st.booleans(), admit.ids), min_size=1, max_size=16))
    def pool_calls(self, calls: list[tuple[bool, object]]) -> None:
        """Gets and drops of the plain and tricky ids (7 and "7", None and "")."""
        for n, (drop, session_id) in enumerate(calls):
            (self._drop if drop else self._get)(session_id, f"call {n + 1} of {len(calls)}")

    @rule(data=st.data())
    def raise_max_sessions(self, data: st.DataObject) -> None:
        """A raise to a cap drawn as a size, above, at or below the cap in force, or not
        positive; the cap is read back from ``max_sessions`` and ``stats()``."""
        cap = self.model.max_sessions
        above = sizes(1, COUNT_BOUND).map(lambda step: cap + step)
        near = st.sampled_from([cap + 1, cap, cap - 1, 0, -1])
        n = data.draw(st.one_of(near, above, sizes(1, COUNT_BOUND)), label="n")
        self.history.append(("raise_max_sessions", n))
        call, clause = f"raise_max_sessions({n})", "ADMIT-7" if n <= 0 else "ADMIT-6"
        observed = admit.outcome_of(partial(self.manager.raise_max_sessions, n))
        expected: object = admit.non_positive() if n <= 0 else self.model.raise_max_sessions(n)
        if observed != expected:
            check_equal(observed, expected, clause, call, self._when(call, "a step"))
        with calling(clause, f"max_sessions, stats()['max_sessions'] after {call}"):
            caps = (self.manager.max_sessions, self.manager.stats()["max_sessions"])
        if caps != (self.model.max_sessions,) * 2:
            what = "(max_sessions, stats()['max_sessions'])"
            check_equal(caps, (self.model.max_sessions,) * 2, clause, what, self._when(call, ""))

    @rule(flag=st.booleans())
    def set_evict_when_full(self, flag: bool) -> None:
        self._flag(flag)

    @invariant()
    def check_at_rest(self) -> None:
        """After each step: every resident's mark, the cap, and ADMIT-9's conservation."""
        if self.manager is None:
            return
        clause = "ADMIT-2" if self.refused else admit.hit_clause(self.model)
        self._check_marks(clause, "at rest after a step")
        self.refused = False
        manager = self.manager
        with calling("ADMIT-9", "len(manager), misses, evictions, max_sessions"):
            size, misses, evictions = len(manager), manager.misses, manager.evictions
            cap = manager.max_sessions
        if misses != size + evictions + self.drops:
            when = f"len(manager) + evictions + successful drops ({self.drops}) at rest"
            check_equal(misses, size + evictions + self.drops, "ADMIT-9", "misses", when)
        check_equal(cap, self.model.max_sessions, "ADMIT-6", "max_sessions", "at rest")

    def _check_marks(self, clause: str, when: str) -> None:
        marks = ((key, held.attrs.get("mark")) for key, held in self.sessions.items())
        wrong = {key: mark for key, mark in marks if mark != key}
        if wrong:
            check_equal(wrong, {k: k for k in wrong}, clause, "attrs['mark'] of residents", when)

    def finish(self) -> None:
        """After a program that passed: switched to evicting, misses on fresh ids until
        every session it left is evicted, each victim checked (the whole LRU order)."""
        if self.manager is None:
            return
        if not self.model.evict_when_full:
            self._flag(True)
        residents = len(self.model)
        count = max(0, self.model.max_sessions - residents) + residents
        for n in range(count):
            self._get(self._fresh("end"), f"evicting every session at the end, {n + 1} of {count}")
