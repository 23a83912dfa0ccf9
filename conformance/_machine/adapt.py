"""ADAPT: the differential machine that checks a model adapter against its bespoke state.

It drives the bespoke state of each session and a FRESH adapter per step (the way a
pipeline builds one per forward) with the same generated calls, described by an
:class:`~sessionstate.conformance.adapters.AdapterSpec`. Expected values come from the
bespoke side and from the suite's own walk of object graphs
(``_model.bitwise.reachable_memory``), never from any accounting code.

The bespoke side's LRU is the suite's one LRU oracle, ``_model.manager.LruTable``, run
under the pipeline's admission policy: under ``"refuse"`` (``evict_when_full=False``,
#7302) a forward for a new session while the table is full is refused on the bespoke
side too, and a refusal on both sides is agreement; a refusal on one side only fails
ADAPT-4. The machine then makes room by dropping, as such a pipeline does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionstate.conformance._model.bitwise import (
    Raised,
    Shown,
    bit_difference,
    bytes_by_device,
    reachable_memory,
    show,
)
from sessionstate.conformance._model.manager import LruTable, spec_key
from sessionstate.conformance.adapters import POLICIES, AdapterSpec, Call
from sessionstate.conformance.checks import ClauseFailure, calling, check_bytes, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, sizes

__all__ = ["AdapterMachine", "LongAdapterMachine"]

#: The most calls one ``apply`` or ``apply_held`` step makes.
CALLS_PER_STEP = 8


def _session_roots(session: Any) -> list[tuple[str, object]]:
    # What a SessionState reaches, through its public surface only (contract section 3).
    objects = [(f"session.get({name!r})", session.get(name)) for name in session.names()]
    return [*objects, ("session.attrs", session.attrs)]


@dataclass
class _Holder:
    """An adapter kept alive across steps, with the bespoke state and session it had."""

    key: str
    adapter: Any
    bespoke: Any
    session: Any


@dataclass(frozen=True)
class _Strategies:
    call_lists: st.SearchStrategy[list[Call]]
    session_ids: st.SearchStrategy[object]
    any_session_ids: st.SearchStrategy[object]


@cache
def _strategies(spec: AdapterSpec) -> _Strategies:
    # Built once per spec: validating a strategy is costly, and a machine draws every step.
    pool = spec.session_ids()
    # A few calls per forward-rule, so that one session sees sequences of calls
    # (a ring that overflows, a reset after a write) before it is dropped or evicted.
    call_lists = st.lists(spec.calls(), min_size=1, max_size=CALLS_PER_STEP)
    # Forwards favour the first id, so that one session lives through many calls;
    # drops pick any id, so the favourite is not dropped as often as it is used.
    favoured = st.sampled_from((pool[0],) * len(pool) + pool)
    return _Strategies(call_lists, favoured, st.sampled_from(pool))


session_ids = st.runner().flatmap(lambda machine: _strategies(machine.spec).session_ids)
any_session_ids = st.runner().flatmap(lambda machine: _strategies(machine.spec).any_session_ids)
call_lists = st.runner().flatmap(lambda machine: _strategies(machine.spec).call_lists)
#: Mostly not: holding a new adapter lets go of the one that may be evicted next.
holds = st.sampled_from([False, False, True])


#: The start of a refusal's message (ADMIT-1); the key follows in single quotes.
REFUSAL = "cannot admit session"
#: The refusal's conventional class name (ADMIT-1), found anywhere in its class hierarchy.
REFUSAL_CLASS = "SessionAdmissionError"


def _is_refusal(error: BaseException, key: str) -> bool:
    """A manager's admission refusal for ``key``: its class is (a subclass of one) named
    ``SessionAdmissionError``, or its message is ADMIT-1's. Either is enough here: the
    wording is ADMIT-1's to check, and an adapter must not fail for it."""
    named = any(cls.__name__ == REFUSAL_CLASS for cls in type(error).__mro__)
    return named or f"{REFUSAL} '{key}'" in str(error)


class AdapterMachine(RuleBasedStateMachine):
    """Bespoke states in an LRU of the manager's capacity versus adapters over the manager.

    ``apply`` runs calls on a session through fresh adapters, as a pipeline
    builds one per forward, and may keep the last one; ``apply_held`` uses the
    kept adapter, whose session ``touch_other_sessions`` has the manager evict
    (or, under ``"refuse"``, has it refuse the others); ``drop_session`` ends a
    session, which is how a refusing pipeline makes room (the pool of ids is one
    larger than the capacity, so a drop often frees a slot a newcomer then takes).
    With ``parity``, memory parity (ADAPT-8, a SHOULD) is checked after every call.

    ``policy`` is the admission policy asked of the manager (``"refuse"`` builds it
    with ``evict_when_full=False``). The bespoke LRU follows the policy the built
    manager states in its public ``evict_when_full`` attribute when it has one
    (ADMIT-11): a pipeline that always builds a refusing manager is judged as one.
    """

    def __init__(
        self, subject: Any, spec: AdapterSpec, *, parity: bool = False, policy: str = "evict"
    ) -> None:
        super().__init__()
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.spec = spec
        self.parity = parity
        admission = {"evict_when_full": False} if policy == "refuse" else {}
        self.manager = subject.make_manager(
            max_sessions=spec.max_sessions, byte_budget=None, **admission
        )
        stated = getattr(self.manager, "evict_when_full", policy == "evict")
        evicts = stated if isinstance(stated, bool) else policy == "evict"
        # key -> bespoke state, in LRU order, under the manager's admission policy.
        self.table = LruTable(spec.max_sessions, evict_when_full=evicts)
        self.held: _Holder | None = None

    @property
    def bespoke(self) -> dict[str, Any]:
        """The bespoke states of the sessions the bespoke LRU holds, least recent first."""
        return cast("dict[str, Any]", self.table.order)

    @rule(session_id=session_ids, calls=call_lists, hold=holds)
    def apply(self, session_id: object, calls: list[Call], hold: bool) -> None:
        """Forwards of one session: each call on its bespoke state and on a fresh adapter.

        After each call, a new fresh adapter must see what the last one wrote
        (ADAPT-3) and serves the next call. With ``hold``, the last adapter is
        kept alive instead, as a rollout mid-generation keeps its own.
        """
        key = spec_key(session_id)
        built = self._build(session_id)
        if built is None:
            return  # refused on both sides: the forward never ran
        adapter, session = built
        for i, call in enumerate(calls):
            when = f"after {call.describe('adapter')} on session {session_id!r}"
            self._step(adapter, session, self.bespoke[key], call, None, when)
            if hold and i == len(calls) - 1:
                self.held = _Holder(key, adapter, self.bespoke[key], session)
                return
            built = self._build(session_id, "ADAPT-3", f"by a fresh adapter {when}")
            assert built is not None  # a hit on the most recent session is never refused
            adapter, session = built

    @precondition(lambda self: self.held is not None)
    @rule(calls=call_lists)
    def apply_held(self, calls: list[Call]) -> None:
        """Calls on the held adapter, whose session the manager may have evicted (ADAPT-5)."""
        held = self.held
        assert held is not None
        for call in calls:
            evicted = self.bespoke.get(held.key) is not held.bespoke
            status = "evicted" if evicted else "held"
            when = f"after {call.describe('adapter')} on the {status} session {held.key!r}"
            clause = "ADAPT-5" if evicted else None
            self._step(held.adapter, held.session, held.bespoke, call, clause, when)

    @precondition(lambda self: self.held is not None)
    @rule()
    def touch_other_sessions(self) -> None:
        """A forward (a fresh adapter) for every other session: the held one is evicted
        (under ``"refuse"``, the newcomers are refused once the table is full)."""
        assert self.held is not None
        for session_id in self.spec.session_ids():
            if spec_key(session_id) != self.held.key:
                self._build(session_id, "ADAPT-3", f"by a fresh adapter for {session_id!r}")

    @rule(session_id=any_session_ids)
    def drop_session(self, session_id: object) -> None:
        """End a session: the next adapter for it starts a new one (ADAPT-6)."""
        with calling("ADAPT-6", f"manager.drop_session({session_id!r})"):
            self.manager.drop_session(session_id)
        key = spec_key(session_id)
        dropped = self.bespoke.get(key)
        self.table.drop_session(session_id)
        if self.held is not None and dropped is not None and self.held.bespoke is dropped:
            self.held = None  # its session was reset under it (DROP-2): not modelled

    @invariant()
    def check_table_matches_model(self) -> None:
        """Adapters touched exactly the sessions the bespoke LRU touched (ADAPT-4)."""
        for session_id in self.spec.session_ids():
            check_equal(
                session_id in self.manager,
                spec_key(session_id) in self.bespoke,
                "ADAPT-4",
                f"{session_id!r} in manager",
                f"with the bespoke LRU holding {list(self.bespoke)}",
            )

    def _build(
        self, session_id: object, clause: str = "", when: str = ""
    ) -> tuple[Any, Any] | None:
        """A fresh adapter for ``session_id`` and the session the manager holds for it, or
        ``None`` when the forward is refused on both sides (the bespoke LRU is full and
        refusing, and building the adapter raised the manager's admission refusal).

        Checks that building it counted one hit or miss, or nothing when refused, and
        that it refused exactly where the bespoke LRU refuses (ADAPT-4); and that it
        observes what the bespoke state does: as a new bespoke state after a
        miss (ADAPT-6), else under ``clause`` (ADAPT-3: it sees earlier writes).
        """
        __tracebackhide__ = True
        key = spec_key(session_id)
        table_before = self.table.describe()
        outcome = self.table.get_or_create_session(
            session_id, None if key in self.bespoke else self.spec.bespoke_factory()
        )
        before = self._counters()
        built = f"adapter_factory(manager=manager, session_id={session_id!r})"
        try:
            adapter = self.spec.adapter_factory(manager=self.manager, session_id=session_id)
        except ClauseFailure:
            raise
        except Exception as error:
            if outcome.kind == "refused" and _is_refusal(error, key):
                self._check_counted(session_id, (0, 0), "a refused new session", before)
                return None
            with calling("ADAPT-4", built):
                raise
        if outcome.kind == "refused":
            check_equal(
                "built an adapter",
                f"raised the admission refusal \"{REFUSAL} '{key}'\"",
                "ADAPT-4",
                built,
                f"the bespoke LRU refuses a new session when full: {table_before}",
            )
        kind = "an existing" if outcome.hit else "a new"
        self._check_counted(
            session_id, (1, 0) if outcome.hit else (0, 1), f"{kind} session", before
        )
        if not outcome.hit:
            clause, when = "ADAPT-6", f"by the first adapter of session {session_id!r}"
        if clause:
            self._compare_observations(adapter, self.bespoke[key], clause, when)
        # One more hit on the most recent session: the LRU order does not change.
        self.table.get_or_create_session(session_id)
        return adapter, self.manager.get_or_create_session(session_id)

    def _check_counted(
        self, session_id: object, expected: tuple[int, int], kind: str, before: tuple[int, int]
    ) -> None:
        """ADAPT-4: building the adapter counted ``expected`` (hits, misses) since ``before``."""
        __tracebackhide__ = True
        after = self._counters()
        counted = (after[0] - before[0], after[1] - before[1])
        what = f"(hits, misses) counted by adapter_factory(session_id={session_id!r})"
        check_equal(counted, expected, "ADAPT-4", what, f"for {kind}")

    def _counters(self) -> tuple[int, int]:
        with calling("ADAPT-4", "reading manager.hits and manager.misses"):
            return (self.manager.hits, self.manager.misses)

    def _step(
        self, adapter: Any, session: Any, bespoke: Any, call: Call, clause: str | None, when: str
    ) -> None:
        __tracebackhide__ = True
        expected, *expected_args = call.apply_keeping_args(bespoke)
        observed, *observed_args = call.apply_keeping_args(adapter)
        self._check_same(observed, expected, clause or "ADAPT-1", call.describe("adapter"), when)
        if call.op.mutates_args:
            what = f"the arguments of {call.describe('adapter')} after the call"
            self._check_same(observed_args, expected_args, clause or "ADAPT-1", what, when)
        self._check_accounted(adapter, session, when)
        self._compare_observations(adapter, bespoke, clause or "ADAPT-2", when)
        if self.parity:
            self._check_parity(session, bespoke, when)

    def _compare_observations(self, adapter: Any, bespoke: Any, clause: str, when: str) -> None:
        __tracebackhide__ = True
        for label, read in self.spec.observers():
            observed, expected = _read(read, adapter), _read(read, bespoke)
            self._check_same(observed, expected, clause, label.format("adapter"), when)

    def _check_same(self, observed: Any, expected: Any, clause: str, what: str, when: str) -> None:
        __tracebackhide__ = True
        found = bit_difference(observed, expected)
        if found is not None:
            shown, wanted = Shown(show(observed)), Shown(show(expected))
            check_equal(shown, wanted, clause, what, f"{when}; {found}")

    def _check_accounted(self, adapter: Any, session: Any, when: str) -> None:
        """ADAPT-7: the adapter reaches no allocation its SessionState does not reach."""
        __tracebackhide__ = True
        held = reachable_memory([("adapter", adapter)], stop=(self.manager, session))
        with calling("ADAPT-7", "walking the adapter's SessionState"):
            known = reachable_memory(_session_roots(session), stop=(self.manager,))
        unseen = [
            f"{m.path} ({m.nbytes} bytes on {m.device})" for k, m in held.items() if k not in known
        ]
        check_equal(
            unseen, [], "ADAPT-7", "memory the adapter holds outside its SessionState", when
        )

    def _check_parity(self, session: Any, bespoke: Any, when: str) -> None:
        """ADAPT-8: the session holds exactly the bytes the bespoke state holds, per device."""
        __tracebackhide__ = True
        observed = bytes_by_device(reachable_memory(_session_roots(session), stop=(self.manager,)))
        expected = bytes_by_device(reachable_memory([("bespoke", bespoke)]))
        check_bytes(observed, expected, "ADAPT-8", "bytes reachable from the session", when)


def _read(read: Callable[[Any], Any], state: Any) -> Any:
    try:
        return read(state)
    except Exception as error:
        return Raised(error)


#: The most adapter calls one program of ``LongAdapterMachine`` makes: each costs about
#: 0.18 ms on the reference's rollout (a fresh adapter, the call on both sides compared bit
#: for bit, both object graphs walked), so a program takes about a fifth of a second.
ADAPT_CALLS = 1024


class LongAdapterMachine(AdapterMachine):
    """``AdapterMachine`` with ``forwards``, a step of many: thousands of adapter calls a
    program (at most ``ADAPT_CALLS``), each checked as ``apply`` checks it, over sessions
    made, used and evicted (or refused and dropped) hundreds of times.

    Checking a call costs what the bespoke state and the session hold (a bit-for-bit
    comparison, a walk of both object graphs): bounded as long as the state is, which is
    the spec's to say; a state that grows with every call makes a long program quadratic."""

    def __init__(self, subject: Any, spec: AdapterSpec, *, policy: str = "evict") -> None:
        super().__init__(subject, spec, policy=policy)
        self.calls = 0

    @property
    def created(self) -> int:
        """Sessions created over the program: the bespoke LRU's misses."""
        return self.table.misses

    @initialize(calls=call_lists, opening=st.sampled_from((False, *(True,) * 9)))
    def start(self, calls: list[Call], opening: bool) -> None:
        """The ``opening`` (nine programs in ten, never the simplest): half the program's
        calls as ``forwards`` with a favourite, hundreds of sessions made beside it."""
        if opening:
            self.forwards(calls, ADAPT_CALLS // 2, 1, favourite=True)

    @rule(calls=call_lists, times=sizes(1, COUNT_BOUND), run=sizes(1, COUNT_BOUND),
          favourite=st.booleans())  # fmt: skip
    def forwards(self, calls: list[Call], times: int, run: int, favourite: bool) -> None:
        """``times`` forwards, each one of ``calls`` in turn through a fresh adapter (as
        ``apply`` makes them), ``run`` in a row on one session before the next id of the
        pool: a new session (the pool being larger than the table, an eviction) every
        ``run`` forwards, and a long run is one session through thousands of calls. With
        ``favourite``, every other forward is the pool's first id, the others taking the
        rest of the pool in turn: one session lives through the step while a new one is
        made (and one evicted) at every other forward. Under ``"refuse"``, when the table
        is full, the least recent session is dropped first, as a refusing pipeline does."""
        pool = self.spec.session_ids()
        for n in range(min(times, ADAPT_CALLS - self.calls)):
            session_id = pool[(n // run) % len(pool)]
            if favourite:
                session_id = pool[0] if n % 2 == 0 else pool[1 + (n // 2) % (len(pool) - 1)]
            table = self.table
            if not table.evict_when_full and table.full and spec_key(session_id) not in table.order:
                least = next(iter(table.order))
                self.drop_session(next(i for i in pool if spec_key(i) == least))
            self.apply(session_id, [calls[n % len(calls)]], hold=False)
            self.calls += 1
