"""``LargeWorldMachine``: the manager machine with steps that cross a size threshold in one move.

Real backends change behaviour at their own constants: a slot array that grows when its
first chunk of 64 is full, a cap stored in a byte, a key buffer of 255 or 256 characters,
a compaction every 1,024 lookups, per-chunk bookkeeping past the 64th session. A program
of a few dozen single calls never gets there. Each rule here is one step of many calls,
its sizes drawn by ``sizes()`` (the suite's one rule for a size), and every call in it is
compared with the model as it returns: what it returned (a new session or the resident
one), ``len``, the counters, and ``in`` on the newcomer and on each session the model says
it evicted. The full table probe and every at-rest check follow the step, as after any
other rule. The model is O(1) a call, so a step of 4,096 calls costs 4,096 model steps.

* ``newcomers``: ``count`` misses in a row on fresh ids, after as many as fill the free
  room, or as many as also evict every resident: fills the table to any size, evicts
  past the cap, shows the whole LRU order (``CAPACITIES`` are ``sizes()`` too: 63, 64,
  65, 128, 129, ...).
* ``hits_cycling``: ``times`` hits cycling over the ``k`` most (or least) recent sessions,
  in LRU order or reversed: thousands of lookups between two evictions, with the order
  they leave seen by the next misses.
* ``churn``: ``count`` times, a miss on a fresh id and its drop: a slot freed and taken
  again at once.
* ``drop_spread``: drops ``count`` residents ``stride`` apart in LRU order: removals from
  the middle of a large table, whose order the next misses show.
* ``long_ids``: ``count`` ids of one shared prefix of ``length`` characters (any one
  character, from the whole of ``str``), differing only after it: one key, or two,
  past a buffer of 255 or 256 characters.

``RaisingMachine`` adds ``raise_max_sessions`` (ADMIT-6, ADMIT-10) to these steps, for
subjects that declare ``admission``; its target cap is drawn as a size as well.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import MultipleResults, initialize, multiple, precondition, rule

from sessionstate.conformance._machine.admit import non_positive, outcome_of
from sessionstate.conformance._machine.manager import (
    COUNTERS,
    ManagerMachine,
    capacities,
    learned_once,
    resurrected,
    sessions,
)
from sessionstate.conformance._model.manager import SessionModel
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import Lazy, calling, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, LENGTH_BOUND, sizes

__all__ = ["LargeWorldMachine", "RaisingMachine"]

#: The clauses a raise inside a program can break (ADMIT: the cap it sets, and the
#: cap eviction uses afterwards).
RAISE_CLAUSES = ("ADMIT-6", "ADMIT-7", "ADMIT-10")


#: The largest cap drawn (2**10): every step compares ``stats()`` and ``nbytes_by_device()``,
#: O(sessions) in most managers, so the table's size, not the number of calls, is what a
#: program's time grows with; counts of calls still go up to ``COUNT_BOUND``.
CAP_BOUND = 2**10


def programs(max_examples: int) -> int:
    """How many programs a large-world test runs at a profile of ``max_examples``: half
    (at least two). A bulk step makes up to thousands of calls, so a program of these
    machines costs tens of ordinary ones; half as many keep every threshold of
    ``bench/threshold_reach.py`` crossed by most quick runs (BENCHMARKS.md), and the
    raising machine, which subjects with ``admission`` also run, is a second half."""
    return max(2, max_examples // 2)


#: Whether a program opens with a long step (or, in the raising machine, a raise that takes
#: effect): nine times in ten, never in a program's simplest form. Hypothesis runs the
#: simplest program first, so each of a run's drawn programs has one, whichever rules the
#: swarm left on.
OPENINGS = st.sampled_from((False, *(True,) * 9))
#: How far ``newcomers`` goes past ``count``: nothing more, the free room, or every resident.
NEWCOMER_REACH = ("count", "past room", "through")
_GET_COUNTERS = {"hits": "LRU-1", "misses": "LRU-2", "evictions": "LRU-4"}
_DROP_COUNTERS = dict.fromkeys(COUNTERS, "DROP-3")


def _get(session_id: object) -> Lazy:
    return Lazy(lambda: f"get_or_create_session({short_repr(session_id)})")


class LargeWorldMachine(ManagerMachine):
    """``ManagerMachine`` with caps drawn by ``sizes()`` and the bulk steps of the module."""

    CAPACITIES = sizes(1, CAP_BOUND)
    # Its sessions hold nothing (ContentsMachine's hold data): their bytes are the model's {}
    # without an O(sessions) nbytes_by_device() a step, and their contents, empty, are read
    # 16 a step in turn (each call's own result is checked as it returns).
    READS_NBYTES = False
    HOLDERS_AT_REST = 16

    def __init__(self, subject: Any) -> None:
        super().__init__(subject)
        self.fresh = 0  # fresh ids are "n0", "n1", ...: never one of SESSION_IDS

    def _fresh_id(self, prefix: str = "") -> str:
        self.fresh += 1
        return f"{prefix}n{self.fresh}"

    # -- one call, checked as it returns ------------------------------------------

    def _call_get(self, session_id: object, where: str) -> SessionModel:
        """``get_or_create_session(session_id)`` against the model, O(1) checks: the session
        returned, ``in`` on the id and on each victim, ``len`` and the counters.

        Messages are built only once a check fails: a step may make 4,096 of these calls."""
        expected = self.model.lookup(session_id)
        call = _get(session_id)
        with calling("LRU-1" if expected else "LRU-2", call):
            obj = self.manager.get_or_create_session(session_id)
        known = self.model.session_of(obj)
        clause = "LRU-1" if expected else resurrected(known, session_id)  # fates before the call
        session, evicted = self.model.get_or_create_session(session_id, obj)
        self.trace.append(("get_or_create_session", session_id, known is not None))
        if (known is not None) != (expected is not None):
            self._expect(f"{call} returned an existing session", known is not None,
                         expected is not None, clause, f"after {call} ({where})")  # fmt: skip
        if expected is not None and known is not expected:
            self._check_identity(obj, expected, f"{call} ({where})")
        probes = [(v.session_id, False, "LRU-4") for v in evicted]
        probes.append((session_id, True, "LRU-1" if expected else "LRU-2"))
        self._observe(probes, call, where, "LRU-4", _GET_COUNTERS)
        # The sessions of these steps hold nothing, so a victim's contents say nothing a
        # rule of ContentsMachine would not; check_holders still reads them at rest.
        return session

    def _call_drop(self, session_id: object, where: str) -> None:
        """``drop_session(session_id)`` of a resident id, O(1) checks: True, the id absent,
        ``len`` and the counters unchanged."""
        call = Lazy(lambda: f"drop_session({short_repr(session_id)})")
        with calling("DROP-2", call):
            dropped = self.manager.drop_session(session_id)
        expected = self.model.drop_session(session_id)
        self.trace.append(("drop_session", session_id, dropped))
        if dropped != expected:
            self._expect(str(call), dropped, expected, "DROP-2", f"after {call} ({where})")
        self.drops += bool(dropped)
        self._observe([(session_id, False, "DROP-2")], call, where, "DROP-2", _DROP_COUNTERS)

    def _observe(
        self,
        probes: list[tuple[object, bool, str]],
        call: object,
        where: str,
        size_clause: str,
        counter_clauses: Mapping[str, str],
    ) -> None:
        """``in`` on each probed id (present or not, else its clause), ``len`` (LRU-7 past the
        cap, else ``size_clause``) and the counters, all read before any is compared."""
        manager = self.manager
        with calling("KEY-3", Lazy(lambda: f"`in`, len(manager) and the counters after {call}")):
            seen = [session_id in manager for session_id, _, _ in probes]
            size = len(manager)
            counters = {name: getattr(manager, name) for name in COUNTERS}
        self.trace += [("contains", p[0], s) for p, s in zip(probes, seen, strict=True)]
        self.trace += [("len", None, size), ("counters", None, counters)]
        for (session_id, present, clause), observed in zip(probes, seen, strict=True):
            if observed != present:
                what = f"{short_repr(session_id)} in manager"
                self._expect(what, observed, present, clause, f"after {call} ({where})")
        if size != len(self.model.table):
            clause = "LRU-7" if size > self.model.max_sessions else size_clause
            when = f"after {call} ({where})"
            self._expect("len(manager)", size, len(self.model.table), clause, when)
        expected = self.model.lru.counters()
        if counters != expected:
            wrong = next(n for n in COUNTERS if counters[n] != expected[n])
            when = f"after {call} ({where})"
            self._expect("counters", counters, expected, counter_clauses[wrong], when)

    def _after_step(self, step: str) -> None:
        """The table probe and the counters, as after a single call."""
        self._check_table(step, lambda _: "LRU-4")
        self._check_counters(step, _GET_COUNTERS)

    def finish(self) -> None:
        """After a program that passed: misses on fresh ids until every session it left is
        evicted, each victim checked against the model, so an order a hit, a drop, a
        raise or a compaction damaged shows even when no later step evicted that deep.
        (Called by ``run_steps``; the program's last step has been checked at rest.)"""
        if self.manager is None:
            return
        count = max(self.model.max_sessions, len(self.model.table))  # the room, then everyone
        for n in range(count):
            self._call_get(self._fresh_id("end-"), f"evicting every session at the end, {n + 1}"
                           f" of {count}")  # fmt: skip

    # -- the bulk steps -----------------------------------------------------------

    @rule(target=sessions, count=sizes(1, COUNT_BOUND), reach=st.sampled_from(NEWCOMER_REACH))
    def newcomers(self, count: int, reach: str) -> MultipleResults[SessionModel]:
        """``count`` misses in a row on fresh ids; ``past room``: after as many as fill the
        free room (to any size, then across the cap in one move); ``through``: after as
        many as also evict every resident, so the whole LRU order shows."""
        if reach != "count":
            count += max(0, self.model.max_sessions - len(self.model.table))
        if reach == "through":
            count += len(self.model.table)
        created = []
        for n in range(count):
            created.append(self._call_get(self._fresh_id(), f"newcomer {n + 1} of {count}"))
        self._after_step(f"{count} newcomers")
        # Only the last few go into the bundle: later rules pick among them.
        return multiple(*created[-4:])

    @precondition(lambda self: len(self.model.table) > 0)
    @rule(
        k=sizes(1, COUNT_BOUND),
        times=sizes(1, COUNT_BOUND),
        oldest=st.booleans(),
        reverse=st.booleans(),
    )
    def hits_cycling(self, k: int, times: int, oldest: bool, reverse: bool) -> None:
        """``times`` hits cycling over ``k`` sessions: the ``k`` most recent, or (``oldest``)
        the ``k`` least recent, the next victims; least recent of them first, or (``reverse``)
        most recent first, which leaves them in an order no creation order matches."""
        every: list[Hashable] = self.model.lru.keys()
        keys = every[:k] if oldest else every[-k:]
        cycle = [self.model.table[key].session_id for key in keys]
        if reverse:
            cycle.reverse()
        for n in range(times):
            session_id = cycle[n % len(cycle)]
            self._call_get(session_id, f"hit {n + 1} of {times} cycling over {len(cycle)}")
        self._after_step(f"{times} hits cycling over {len(cycle)} sessions")

    @rule(count=sizes(1, COUNT_BOUND))
    def churn(self, count: int) -> None:
        """``count`` times: a miss on a fresh id, then its drop."""
        for n in range(count):
            session_id = self._fresh_id("churn-")
            self._call_get(session_id, f"churn {n + 1} of {count}")
            self._call_drop(session_id, f"churn {n + 1} of {count}")
        self._after_step(f"{count} misses each dropped at once")

    @precondition(lambda self: len(self.model.table) > 1)
    @rule(count=sizes(1, COUNT_BOUND), stride=sizes(1, 16), offset=sizes(0, COUNT_BOUND))
    def drop_spread(self, count: int, stride: int, offset: int) -> None:
        """Drop up to ``count`` residents ``stride`` apart in LRU order, from ``offset``."""
        keys = self.model.lru.keys()
        chosen = keys[offset % len(keys) :: stride][:count]
        for n, key in enumerate(chosen):
            session_id = self.model.table[key].session_id
            self._call_drop(session_id, f"drop {n + 1} of {len(chosen)}, {stride} apart")
        self._after_step(f"{len(chosen)} drops {stride} apart")

    @rule(
        target=sessions,
        length=sizes(0, LENGTH_BOUND),
        count=sizes(2, 9),
        char=st.characters(),
    )
    def long_ids(self, length: int, count: int, char: str) -> MultipleResults[SessionModel]:
        """``count`` ids sharing ``char * length`` and differing only after it (KEY-2: distinct
        keys are distinct sessions), each asked for twice: a miss, then, after the others,
        a hit on the session it made."""
        prefix = char * length
        ids = [f"{prefix}{self._fresh_id('#')}" for _ in range(count)]
        where = f"ids sharing a prefix of {length} x {char!r}"
        created = [self._call_get(i, where) for i in ids]
        for session_id in ids:
            if self.model.lookup(session_id) is not None:
                self._call_get(session_id, where)
        self._after_step(f"{count} ids of {length}+ characters")
        return multiple(*created[-2:])


_RAISE_ORDER: dict[int, tuple[Any, bool]] = {}


def raise_reorders(subject: Any) -> bool:
    """Whether a raise of the subject's cap changes the LRU order (cached per subject).

    Learned on fresh managers, as ``drop_reorders`` learns drops, and only ever used to
    name the clause of a wrong victim already found: table ``c a d b`` at cap 4 (created
    ``a b c d``, then each hit in that order), the cap
    raised to 5 and one newcomer admitted, then misses must evict ``c a d b`` in turn. A
    control without the raise comes first: a subject that evicts out of order there has
    an eviction bug no raise explains."""
    return learned_once(_RAISE_ORDER, subject, _learn_raise_order)


def _learn_raise_order(subject: Any) -> bool:
    keys = ["c", "a", "d", "b"]  # the LRU order hits leave; created in another order
    try:
        for raised in (False, True):
            for misses in range(1, len(keys) + 1):
                manager = subject.make_manager(max_sessions=len(keys), byte_budget=None)
                for key in [*sorted(keys), *keys]:
                    manager.get_or_create_session(key)
                if raised:
                    manager.raise_max_sessions(len(keys) + 1)
                    manager.get_or_create_session("filler")
                for n in range(misses):
                    manager.get_or_create_session(f"new{n}")
                if [k for k in keys if k not in manager] != keys[:misses]:
                    return raised
    except Exception:
        return False
    return False


class RaisingMachine(LargeWorldMachine):
    """``LargeWorldMachine`` with ``raise_max_sessions`` inside the programs (``admission``)."""

    CLAUSES = (*LargeWorldMachine.CLAUSES, *RAISE_CLAUSES)

    def _order_damage(self) -> str | None:
        """ADMIT-6 when a raise of this run succeeded and the subject's raises reorder the
        table: a raise changes the cap and nothing else."""
        raised = any(call == "raise_max_sessions" and seen is True
                     for call, _, seen in self.trace)  # fmt: skip
        if raised and raise_reorders(self.subject):
            return "ADMIT-6"
        return super()._order_damage()

    @initialize(max_sessions=capacities, opening=OPENINGS, step=sizes(1, CAP_BOUND))
    def make_manager(self, max_sessions: int, opening: bool = False, step: int = 1) -> None:
        """The manager, then (``opening``) a table filled to its cap, a hit on its least
        recent session, a raise of the cap by ``step`` and newcomers that fill the room and
        evict one session past it: every program but the simplest has a raise that took
        effect followed by an eviction, whichever rules the swarm left on."""
        super().make_manager(max_sessions)
        if opening:
            self.newcomers(count=0, reach="past room")
            self._raise(self.model.max_sessions + step, touch_first=True, fill=True)

    @rule(data=st.data(), touch_first=st.booleans(), fill=st.booleans())
    def raise_max_sessions(self, data: st.DataObject, touch_first: bool, fill: bool) -> None:
        """A raise to a cap drawn as a size: above, equal to or below the cap in force, or
        not positive (then ValueError); the cap in force is read back at once, and the
        next misses evict by it. With ``touch_first``, a hit on the least recent session
        comes first, so the order the raise must keep is not the order of creation. With
        ``fill``, a raise that took effect is followed by newcomers that fill the room it
        made and evict one session past it: the threshold crossed in the same step."""
        cap = self.model.max_sessions
        n = data.draw(
            st.one_of(
                st.sampled_from([cap + 1, cap, cap - 1, 0, -1]),
                sizes(1, CAP_BOUND).map(lambda step: cap + step),
                sizes(1, CAP_BOUND),
            ),
            label="n",
        )
        self._raise(n, touch_first=touch_first, fill=fill)

    def _raise(self, n: int, *, touch_first: bool, fill: bool) -> None:
        """``raise_max_sessions(n)`` against the model (see ``raise_max_sessions``)."""
        if touch_first and len(self.model.table) > 1:
            least = self.model.table[self.model.lru.keys()[0]]
            self._call_get(least.session_id, "the hit before a raise")
        call = f"raise_max_sessions({n})"
        when = f"after {call}; {self.model.describe()}"
        clause = "ADMIT-7" if n <= 0 else "ADMIT-6"
        observed = outcome_of(lambda: self.manager.raise_max_sessions(n))
        expected: object = non_positive() if n <= 0 else self.model.lru.raise_max_sessions(n)
        if isinstance(observed, Exception) and expected != observed:
            with calling(clause, call):  # an exception the SPEC does not call for, with its frames
                raise observed
        if n > 0:
            self.trace.append(("raise_max_sessions", n, observed))
        check_equal(observed, expected, clause, call, when)
        with calling(clause, "manager.max_sessions, stats()['max_sessions']"):
            caps = (self.manager.max_sessions, self.manager.stats()["max_sessions"])
        expected_caps = (self.model.max_sessions, self.model.max_sessions)
        check_equal(caps, expected_caps, clause, "(max_sessions, stats()['max_sessions'])", when)
        self._after_step(call)
        if fill and observed is True:
            self.newcomers(count=1, reach="past room")
