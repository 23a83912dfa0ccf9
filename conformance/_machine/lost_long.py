"""``LongLostMachine``: ``require_session`` (LOST-1..3) through programs of thousands of calls.

``lost.LostMachine`` runs five ids on caps of 1 to 3. This one runs a table of any size
(caps by ``sizes()`` to ``CAP_BOUND``) on fresh ids, through steps of many calls, at most
``PROGRAM_CALLS``: ``newcomers`` (fills, then evictions), ``requires_cycling`` over the
``k`` most or least recent sessions, ``requires_absent`` of ids evicted, dropped or never
created, ``drop_spread`` across the table, and the pool's ids (7 and "7", None, an id
``repr()`` shows otherwise) one call at a time. Each call is checked as it returns, in
O(1), against ``LruTable``: a resident key's ``require_session`` returns the session the
model says it holds and counts one hit (LOST-1); an absent one raises the lost error naming
the key (LOST-2) and changes no counter, creates nothing and leaves ``len`` as it was
(LOST-3); after every call, ``len`` and ``in`` on its id and on each session the model
evicted.

The order the requires leave shows through evictions: every newcomer's victims, and
``finish()``, which evicts every session the program left. A table that differs is
blamed as ``LostMachine`` blames it, on failure only (O(calls), once): replayed on a table
whose ``require_session`` hits leave the order alone, LOST-1 if that explains what the
subject holds (the refresh was missing), else LOST-3.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from sessionstate.conformance._machine.admit import outcome_of
from sessionstate.conformance._machine.admit_long import PROGRAM_CALLS
from sessionstate.conformance._machine.bulk import CAP_BOUND, NEWCOMER_REACH, OPENINGS
from sessionstate.conformance._machine.lost import (
    ERROR_NAME,
    LOST_CLAUSES,
    POOL,
    plain_table_differs,
)
from sessionstate.conformance._machine.lost import lost_error_problem as problem_of
from sessionstate.conformance._model.manager import LruTable, Semantics, spec_key
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import Lazy, calling, check, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, sizes

__all__ = ["LongLostMachine"]

#: What a pool step may call, as the model names it.
METHODS = ("get_or_create_session", "drop_session", "require_session")


class LongLostMachine(RuleBasedStateMachine):
    """One manager through a long program of ``require_session`` among the calls that
    create, drop and evict sessions (module doc)."""

    CLAUSES = LOST_CLAUSES

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.subject = subject
        self.manager: Any = None
        self.shadow: Any = None  # the same subject, never given a require_session (lost.py)
        self.table = LruTable(1)
        self.sessions: dict[Hashable, object] = {}  # key -> the session object it holds
        self.trace: list[tuple[str, object]] = []
        self.gone: list[Hashable] = []  # keys evicted or dropped, in turn
        self.fresh = self.created = 0

    @property
    def calls(self) -> int:
        return len(self.trace)

    @initialize(max_sessions=sizes(1, CAP_BOUND), opening=OPENINGS)
    def make_manager(self, max_sessions: int, opening: bool = False) -> None:
        """The ``opening``: 1,024 misses past the free room, 1,024 requires cycling over
        every resident from the least recent, most recent first, then 256 of ids evicted."""
        call = f"SessionStateManager(max_sessions={max_sessions}, byte_budget=None)"
        with calling("LOST-1", call):
            self.manager = self.subject.make_manager(max_sessions=max_sessions, byte_budget=None)
            self.shadow = self.subject.make_manager(max_sessions=max_sessions, byte_budget=None)
        self.table = LruTable(max_sessions)
        if opening:
            self.newcomers(count=PROGRAM_CALLS // 4, reach="past room")
            self.requires_cycling(max_sessions, PROGRAM_CALLS // 4, oldest=True, reverse=True)
            self.requires_absent(count=PROGRAM_CALLS // 16, never=False)

    def _fresh(self, prefix: str = "n") -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def _budget(self, count: int) -> int:
        return max(0, min(count, PROGRAM_CALLS - len(self.trace)))

    def _when(self, call: object, where: str) -> str:
        return f"{call} ({where}), with {self.table.describe()}"

    def _counters(self) -> tuple[int, int, int]:
        with calling("LOST-1", "reading manager.hits, .misses and .evictions"):
            return self.manager.hits, self.manager.misses, self.manager.evictions

    # -- one call, checked as it returns --------------------------------------------------

    def _get(self, session_id: object, where: str) -> None:
        """Setup, as in ``LostMachine``: the session a miss returns is the one the key holds."""
        outcome = self.table.get_or_create_session(session_id)
        self.trace.append(("get_or_create_session", session_id))
        call = Lazy(lambda: f"get_or_create_session({short_repr(session_id)})")
        with calling("LOST-1", call):
            session = self.manager.get_or_create_session(session_id)
            self.shadow.get_or_create_session(session_id)
        for victim in outcome.evicted:
            del self.sessions[victim]
            self.gone.append(victim)
        key = spec_key(session_id)
        if not outcome.hit:
            self.sessions[key] = session
            self.created += 1
        self._observe(call, where, (key,), outcome.evicted)

    def _drop(self, session_id: object, where: str) -> None:
        self.trace.append(("drop_session", session_id))
        call = Lazy(lambda: f"drop_session({short_repr(session_id)})")
        with calling("LOST-3", call):
            self.manager.drop_session(session_id)
            self.shadow.drop_session(session_id)
        key = spec_key(session_id)
        if self.table.drop_session(session_id):
            del self.sessions[key]
            self.gone.append(key)
        self._observe(call, where, (), (key,))

    def _require(self, session_id: object, where: str) -> None:
        """LOST-1 for a resident key, LOST-2 and LOST-3 for an absent one."""
        key = spec_key(session_id)
        outcome = self.table.require_session(session_id)
        self.trace.append(("require_session", session_id))
        call = Lazy(lambda: f"require_session({short_repr(session_id)})")
        before = self._counters()
        observed = outcome_of(partial(self.manager.require_session, session_id))
        counted = tuple(a - b for a, b in zip(self._counters(), before, strict=True))
        if outcome.hit:
            with calling("LOST-1", Lazy(lambda: f"{call} as a get_or_create_session hit")):
                self.shadow.get_or_create_session(session_id)  # the hit it must be like
            expected = self.sessions[key]
            if observed is not expected:
                shown = f"raised {observed!r}" if isinstance(observed, BaseException) else observed
                what, when = str(call), self._when(call, where)
                check_equal(shown, f"the resident {expected!r}", "LOST-1", what, when)
            if counted != (1, 0, 0):
                what = f"(hits, misses, evictions) by {call}"
                check_equal(counted, (1, 0, 0), "LOST-1", what, self._when(call, where))
            self._observe(call, where, (key,), ())
            return
        if not isinstance(observed, BaseException):
            what, when = str(call), self._when(call, where)
            check_equal(f"returned {observed!r}", f"raises {ERROR_NAME}", "LOST-2", what, when)
        problem = problem_of(observed, session_id)
        if problem is not None:
            check(False, "LOST-2", f"{call} raised {observed!r}: {problem} ({where})")
        if counted != (0, 0, 0):
            what = f"(hits, misses, evictions) by {call}"
            check_equal(counted, (0, 0, 0), "LOST-3", what, self._when(call, where))
        self._observe(call, where, (), (key,), "LOST-3")

    def _observe(self, call: Lazy, where: str, present: Iterable[Hashable],
                 absent: Iterable[Hashable], clause: str = "") -> None:  # fmt: skip
        """``len`` and ``in`` on ``present`` and ``absent`` keys; a table that differs is
        blamed by ``_blame`` unless ``clause`` names the call's own clause."""
        manager = self.manager
        with calling("LOST-3", Lazy(lambda: f"len(manager) and `in` after {call}")):
            size = len(manager)
            wrong = [k for k in present if k not in manager] + [k for k in absent if k in manager]
        if size == len(self.table) and not wrong:
            return
        self._plain_table(call, where)
        if clause:
            when = self._when(call, where)
            check_equal((size, wrong), (len(self.table), []), clause, "(len, ids wrong)", when)
        self._blame(call, where)

    def _plain_table(self, call: Lazy, where: str) -> None:
        """LOST's checks rest on the subject's table following LRU without require_session:
        where the shadow (every require a get_or_create hit) differs from the model too,
        the difference is the table's own clause (``lost.check_plain_table``), which stops
        a focused example, never fails LOST."""
        keys = list(dict.fromkeys([*self.table.keys(), *self.gone]))
        with calling("LOST-3", "reading `id in manager` on the shadow"):
            plain = {key: key in self.shadow for key in keys}
        expected = {key: key in self.table.order for key in keys}
        if plain != expected:
            wrong = {key: seen for key, seen in plain.items() if seen != expected[key]}
            when = f"after {call} ({where}), with {self.table.describe()}"
            flipped = {key: not seen for key, seen in wrong.items()}
            plain_table_differs(wrong, flipped, self.trace[-1][0], when)

    def _blame(self, call: Lazy, where: str) -> None:
        """The table differs: LOST-1 when a table whose require hits leave the order alone
        holds what the subject holds, else LOST-3 (``LostMachine``'s rule)."""
        unrefreshed = LruTable(self.table.max_sessions, Semantics(require_refreshes=False))
        for method, session_id in self.trace:
            getattr(unrefreshed, method)(session_id)
        keys = list(dict.fromkeys([*self.table.keys(), *unrefreshed.keys(), *self.gone]))
        with calling("LOST-3", "reading `id in manager`"):
            observed = {key: key in self.manager for key in keys}
        explained = observed == {key: key in unrefreshed.order for key in keys}
        clause = "LOST-1" if explained else "LOST-3"
        reason = {
            "LOST-1": "as if require_session hits did not make their session most recent",
            "LOST-3": "as if a lost lookup had changed the table",
        }[clause]
        wrong = {key: seen for key, seen in observed.items() if seen != (key in self.table.order)}
        expected = {key: not seen for key, seen in wrong.items()}
        when = f"{reason}; after {call} ({where}), with {self.table.describe()}"
        check_equal(wrong, expected, clause, "ids in the table", when)
        with calling("LOST-3", "len(manager)"):
            size = len(self.manager)
        check_equal(size, len(self.table), clause, "len(manager)", when)

    # -- the steps ---------------------------------------------------------------------

    @rule(count=sizes(1, COUNT_BOUND), reach=st.sampled_from(NEWCOMER_REACH))
    def newcomers(self, count: int, reach: str) -> None:
        """Misses on fresh ids; ``past room``: after as many as fill the free room;
        ``through``: after as many as also evict every resident."""
        if reach != "count":
            count += max(0, self.table.max_sessions - len(self.table))
        if reach == "through":
            count += len(self.table)
        for n in range(self._budget(count)):
            self._get(self._fresh(), f"newcomer {n + 1} of {count}")

    @precondition(lambda self: len(self.table) > 0)
    @rule(k=sizes(1, COUNT_BOUND), times=sizes(1, COUNT_BOUND), oldest=st.booleans(),
          reverse=st.booleans())  # fmt: skip
    def requires_cycling(self, k: int, times: int, oldest: bool, reverse: bool) -> None:
        """``require_session`` cycling over the ``k`` most (or ``oldest``: least) recent
        sessions, which each must make most recent (the next victims, when ``oldest``)."""
        every = self.table.keys()
        cycle = every[:k] if oldest else every[-k:]
        if reverse:
            cycle.reverse()
        for n in range(self._budget(times)):
            self._require(cycle[n % len(cycle)], f"require {n + 1} of {times} over {len(cycle)}")

    @rule(count=sizes(1, COUNT_BOUND), never=st.booleans())
    def requires_absent(self, count: int, never: bool) -> None:
        """``require_session`` of the ids last evicted or dropped, or (``never``) of ids never
        created: each lost, nothing changed."""
        count = self._budget(count)
        recent = self.gone[len(self.gone) - count :] if count else []
        gone = [key for key in reversed(recent) if key not in self.table.order]
        ids = [self._fresh("never") for _ in range(count)] if never or not gone else gone
        for n, session_id in enumerate(ids):
            self._require(session_id, f"absent {n + 1} of {len(ids)}")

    @precondition(lambda self: len(self.table) > 1)
    @rule(count=sizes(1, COUNT_BOUND), stride=sizes(1, 16), offset=sizes(0, COUNT_BOUND))
    def drop_spread(self, count: int, stride: int, offset: int) -> None:
        """Drop up to ``count`` residents ``stride`` apart in LRU order, from ``offset``."""
        keys = self.table.keys()
        chosen = keys[offset % len(keys) :: stride][: self._budget(count)]
        for n, key in enumerate(chosen):
            self._drop(key, f"drop {n + 1} of {len(chosen)}, {stride} apart")

    @rule(
        calls=st.lists(
            st.tuples(st.sampled_from(METHODS), st.sampled_from(POOL)), min_size=1, max_size=16
        )
    )
    def pool_calls(self, calls: list[tuple[str, object]]) -> None:
        """Single calls on the pool's ids: 7 and "7" are one key, None is "default"."""
        steps = {METHODS[0]: self._get, METHODS[1]: self._drop, METHODS[2]: self._require}
        for n, (method, session_id) in enumerate(calls):
            steps[method](session_id, f"call {n + 1} of {len(calls)}")

    def finish(self) -> None:
        """After a program that passed: misses on fresh ids until every session it left is
        evicted, each victim checked, so an order a require damaged shows."""
        if self.manager is None:
            return
        residents = len(self.table)
        count = max(0, self.table.max_sessions - residents) + residents
        for n in range(count):
            self._get(self._fresh("end"), f"evicting every session at the end, {n + 1} of {count}")
