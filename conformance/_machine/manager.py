"""``ManagerMachine``: a subject's manager against the suite's model, call by call.

The machine of the manager's get/drop/stats surface, and the home of the blame rules of
what it finds there: KEY, LRU, DROP and STATS, and, in ``ContentsMachine``, what the
sessions it hands out hold (ACCT-11, RESET-1, RESET-4).

Rules are named after the manager methods they call; after each call the
rule compares what it can see at once (the returned object, the table, the
counters) and ``check_at_rest`` compares the rest (stats, bytes, every
session a holder still has). The table's LRU order is never read through a
method that could refresh it: ``in`` probes only ids that should be absent
(and ``len`` counts the rest), and the order itself shows in
which sessions the next misses evict. When the subject disagrees with the model,
``ManagerMachine._expect`` names the clause from the trace of everything observed: the
first suspect that explains all of it (the subject's own grouping of ids,
``key_suspects``, then the model's, ``_model.manager.suspect``), a drop that reorders
the table for a wrong victim (``drop_reorders``), else the clause of the check.

``ContentsMachine`` adds sessions that hold data (buffers, attrs, resets)
whose expected bytes come from ``conformance._model.memory`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.composed_bytes import check_composed_bytes
from sessionstate.conformance._model.manager import (
    BufferModel,
    ManagerModel,
    Observation,
    Semantics,
    SessionModel,
    grouped_key,
    key_clause,
    slot,
    spec_key,
    suspect,
)
from sessionstate.conformance._model.memory import Held, derivations
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import calling, check, check_bytes, check_equal
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS

__all__ = [
    "SESSION_IDS",
    "ContentsMachine",
    "CrowdedMachine",
    "ManagerMachine",
    "OrderMachine",
    "check_construction",
    "learned_once",
    "replay",
    "resurrected",
]

#: Ids with a stable ``str``: three plain ones first (shrunk programs read
#: well), then every falsy spelling of "default" (KEY-1), non-strings (KEY-2), and
#: ids a repr() escapes or re-quotes (``strategies.TRICKY_SESSION_IDS``).
SESSION_IDS: tuple[object, ...] = (
    *("a", "b", "c", "default", None, "", 0, False, "7", 7, ("t",)),
    *TRICKY_SESSION_IDS,
)
#: ``get_or_create_session_repeatedly`` re-touches one of the ``RECENT`` most recent
#: sessions up to ``MAX_RUN`` times; ``get_or_create_session_newcomers`` makes up to
#: ``MAX_NEWCOMERS`` misses in a row (more than the largest cap: an eviction burst).
RECENT = 3
MAX_RUN = 64
MAX_NEWCOMERS = 7
COUNTERS = ("hits", "misses", "evictions")
STATS_KEYS = ("sessions", "max_sessions", "total_nbytes", "hits", "misses", "evictions")
FATE_CLAUSE = {
    "in the table": "LRU-1",  # a later hit must see what earlier forwards wrote
    "evicted": "LRU-5",
    "evicted, then its id dropped": "DROP-4",
    "dropped": "DROP-2",
}


def _per_machine(attribute: str) -> st.SearchStrategy[Any]:
    # Drawn from the running machine's class attribute (a pool, or a strategy such as
    # ``sizes()``), so a focused variant narrows its pools by subclassing alone.
    def draw(machine: Any) -> st.SearchStrategy[Any]:
        pool = getattr(machine, attribute)
        return pool if isinstance(pool, st.SearchStrategy) else st.sampled_from(pool)

    return st.runner().flatmap(draw)


session_ids = _per_machine("SESSION_IDS")
capacities = _per_machine("CAPACITIES")
sessions: Bundle[SessionModel] = Bundle("sessions")
buffers: Bundle[BufferModel] = Bundle("buffers")
values: Bundle[Held] = Bundle("values")


def check_construction(manager: Any, max_sessions: int, byte_budget: object, when: str) -> None:
    """STATS-1: the arguments are stored as given and the counters start at zero."""
    names = ("max_sessions", "byte_budget", *COUNTERS)
    with calling("STATS-1", f"reading {', '.join(names)} {when}"):
        observed = {name: getattr(manager, name) for name in names}
    expected = dict(zip(names, (max_sessions, byte_budget, 0, 0, 0), strict=True))
    check_equal(observed, expected, "STATS-1", "manager attributes", when)


def learn_keys(subject: Any, ids: Sequence[object] = SESSION_IDS) -> Semantics | None:
    """How the subject's methods group ``ids`` into sessions, learned on fresh managers.

    Only ever used to name the clause of a disagreement already found; None
    when the subject raises while being asked.
    """
    try:
        manager = subject.make_manager(max_sessions=len(ids) + 1, byte_budget=None)
        sessions = [manager.get_or_create_session(i) for i in ids]
        groups: dict[int, int] = {}
        get = {
            slot(i): groups.setdefault(id(s), len(groups))
            for i, s in zip(ids, sessions, strict=True)
        }
        contains: dict[tuple[type, object], int] = {}
        drop: dict[tuple[type, object], int] = {}
        for created in ids:
            for probe in ids:
                fresh = subject.make_manager(max_sessions=2, byte_budget=None)
                fresh.get_or_create_session(created)
                if probe in fresh:
                    contains.setdefault(slot(probe), get[slot(created)])
                fresh.drop_session(probe)  # what it removes, not what it returns
                if len(fresh) == 0:
                    drop.setdefault(slot(probe), get[slot(created)])
    except Exception:
        return None
    return Semantics(grouped_key(get), grouped_key(contains), grouped_key(drop))


_LEARNED: dict[tuple[int, tuple[object, ...]], tuple[Any, list[tuple[str, Semantics]]]] = {}


def key_suspects(subject: Any, ids: tuple[object, ...]) -> list[tuple[str, Semantics]]:
    """The subject's own grouping of ``ids`` as a suspect, if it breaks a KEY clause (cached)."""
    cached = (id(subject), ids)
    if cached not in _LEARNED:
        semantics = learn_keys(subject, ids)
        clause = key_clause(ids, semantics) if semantics else None
        _LEARNED[cached] = (subject, [(clause, semantics)] if clause and semantics else [])
    return _LEARNED[cached][1]


T = TypeVar("T")


def learned_once(cache: dict[int, tuple[Any, T]], subject: Any, learn: Callable[[Any], T]) -> T:
    """``learn(subject)``, asked once per subject: ``cache`` keeps the answer by the subject's
    id, and the subject beside it, so that id is never another subject's."""
    if id(subject) not in cache:
        cache[id(subject)] = (subject, learn(subject))
    return cache[id(subject)][1]


_CONTAINS_REFRESHES: dict[int, tuple[Any, bool]] = {}


def contains_refreshes(subject: Any) -> bool:
    """Whether the subject's ``in`` makes a session the most recent (cached): table ``a b``
    at cap 2, ``'a' in manager``, then a miss; ``a`` kept means it did. Learned on a fresh
    manager, as ``drop_reorders`` is, and only used to confirm the STATS-4 suspect."""
    return learned_once(_CONTAINS_REFRESHES, subject, _learn_contains_refreshes)


def _learn_contains_refreshes(subject: Any) -> bool:
    try:
        manager = subject.make_manager(max_sessions=2, byte_budget=None)
        manager.get_or_create_session("a")
        manager.get_or_create_session("b")
        _ = "a" in manager
        manager.get_or_create_session("c")
        return bool("a" in manager)
    except Exception:
        return True  # unknown: the suspect stands, as before


_DROP_ORDER: dict[int, tuple[Any, frozenset[str]]] = {}


def drop_reorders(subject: Any) -> frozenset[str]:
    """Which drops of the subject change the LRU order of the others (cached):
    ``"present"`` (DROP-3), ``"absent"`` (DROP-1: a drop that changes nothing).

    Learned on fresh managers, as ``key_suspects`` is, and only ever used to name
    the clause of a disagreement already found: a wrong victim after a drop is
    the drop's, not LRU-3's, when the subject's drops reorder the table. For each
    key of a table ``c a d b`` (neither sorted nor reversed), and for an absent
    one, misses after the drop evict the others one by one; the victims must come
    in the order the table had. Only ``in`` at the very end observes a victim, so a
    refreshing ``in`` (STATS-4) cannot mislead it.

    A control comes first: the same misses with no drop at all. A subject whose victims
    are out of order there (it evicts the most recent, say) has an eviction bug that no
    drop explains, and its drops are never blamed for it.
    """
    return learned_once(_DROP_ORDER, subject, _learn_drop_order)


def _learn_drop_order(subject: Any) -> frozenset[str]:
    keys = ["c", "a", "d", "b"]
    found = set()
    try:
        if not _evicts_in_order(subject, keys):
            return frozenset()
        for dropped in [*keys, "absent"]:
            rest = [k for k in keys if k != dropped]
            for misses in range(1, len(rest) + 1):
                manager = subject.make_manager(max_sessions=len(keys), byte_budget=None)
                for key in keys:
                    manager.get_or_create_session(key)
                manager.drop_session(dropped)
                for n in range(misses + len(keys) - len(rest)):
                    manager.get_or_create_session(f"new{n}")
                evicted = [k for k in rest if k not in manager]
                if evicted != rest[:misses]:
                    found.add("absent" if dropped == "absent" else "present")
                    break
    except Exception:
        return frozenset()
    return frozenset(found)


def _evicts_in_order(subject: Any, keys: list[str]) -> bool:
    """The control of ``_learn_drop_order``: with no drop, misses evict ``keys`` oldest
    first."""
    for misses in range(1, len(keys) + 1):
        manager = subject.make_manager(max_sessions=len(keys), byte_budget=None)
        for key in keys:
            manager.get_or_create_session(key)
        for n in range(misses):
            manager.get_or_create_session(f"new{n}")
        if [k for k in keys if k not in manager] != keys[:misses]:
            return False
    return True


def resurrected(known: SessionModel | None, session_id: object) -> str:
    """The clause a miss on ``session_id`` breaks by returning ``known`` rather than a new
    session: KEY-2 when ``known`` is resident under another key (two keys, one session)."""
    if known is None or known.fate == "in the table":
        other = known is not None and spec_key(known.session_id) != spec_key(session_id)
        return "KEY-2" if other else "LRU-2"
    return "DROP-2" if known.fate == "dropped" else "LRU-6"


class ManagerMachine(RuleBasedStateMachine):
    """The manager's table, counters and observers against ``ManagerModel``."""

    #: The ids and caps rules draw from (variants narrow them).
    SESSION_IDS: tuple[object, ...] = SESSION_IDS
    CAPACITIES: tuple[int, ...] | st.SearchStrategy[int] = (1, 2, 3, 4, 5)
    #: Every clause a run can fail: the markers of any test that runs this machine.
    CLAUSES: tuple[str, ...] = (
        *(f"KEY-{n}" for n in range(1, 4)),
        *(f"LRU-{n}" for n in range(1, 8)),
        *(f"DROP-{n}" for n in range(1, 5)),
        *(f"STATS-{n}" for n in range(1, 6)),
    )
    #: Whether sessions hold data worth counting (ACCT-11, in ContentsMachine).
    COUNTS_BYTES = False
    #: Whether the at-rest check reads ``nbytes_by_device()`` (for STATS-3 and ACCT-11); a
    #: machine whose sessions never hold data compares ``stats()`` with the model's {}.
    READS_NBYTES = True
    #: How many sessions' contents ``check_holders`` compares at rest, at most, each step.
    HOLDERS_AT_REST = 256

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.subject = subject
        self.manager: Any = None
        self.model = ManagerModel(1)  # replaced by make_manager
        self.trace: list[Observation] = []  # for ``suspect`` when the model disagrees
        self.drops = 0  # drop_session calls that returned True (STATS-5)
        self.names: dict[int, Held] = {}  # id(value) -> the Held it came from, for messages
        self.holders_cursor = 0  # where check_holders goes on in a large world

    # -- rules ------------------------------------------------------------------

    @initialize(max_sessions=capacities)
    def make_manager(self, max_sessions: int) -> None:
        call = f"make_manager(max_sessions={max_sessions}, byte_budget=None)"
        with calling("STATS-1", call):
            self.manager = self.subject.make_manager(max_sessions=max_sessions, byte_budget=None)
        self.model = ManagerModel(max_sessions)
        check_construction(self.manager, max_sessions, None, f"after {call}")

    @rule(target=sessions, session_id=session_ids)
    def get_or_create_session(self, session_id: object) -> SessionModel | MultipleResults[Any]:
        call = f"get_or_create_session({short_repr(session_id)})"
        expected = self.model.lookup(session_id)
        evicted_before = any(
            s.fate.startswith("evicted") for s in self.model.sessions_of(session_id)
        )
        with calling("LRU-1" if expected else "LRU-2", call):
            obj = self.manager.get_or_create_session(session_id)
        known = self.model.session_of(obj)
        clause = "LRU-1" if expected else resurrected(known, session_id)  # fates before the call
        session, evicted = self.model.get_or_create_session(session_id, obj)
        self.trace.append(("get_or_create_session", session_id, known is not None))
        self._expect(
            f"{call} returned an existing session",
            known is not None,
            expected is not None,
            clause,
            f"after {call}",
        )
        if expected is not None:
            check_equal(known, expected, "LRU-1", f"the session {call} returned", f"after {call}")
        else:  # LRU-2, LRU-6: a new, distinct, empty session
            self._check_contents(session, "LRU-6" if evicted_before else "LRU-2", call)
        for victim in evicted:
            self._check_contents(victim, "LRU-5", f"evicted by {call}")
        self._check_table(call, lambda _: "LRU-4")
        self._check_counters(call, {"hits": "LRU-1", "misses": "LRU-2", "evictions": "LRU-4"})
        return multiple() if expected is not None else session

    @precondition(lambda self: len(self.model.table) > 0)
    @rule(rank=st.integers(0, RECENT - 1), times=st.integers(1, MAX_RUN))
    def get_or_create_session_repeatedly(self, rank: int, times: int) -> None:
        """A run of hits: the ``rank``-th most recent session (0: the most recent) is asked
        for ``times`` times in a row: each call must return that session; the table and the
        counters are compared after the run (a hit changes neither membership nor order
        of the others).

        Designs that keep recency lazily (a heap of stamped entries whose old ones go
        stale, a generation tag, a periodic compaction) misbehave only once a session has
        been re-touched many times before an eviction; single calls drawn one per step
        almost never get there (bench/reachability.py measures how often these do)."""
        keys = self.model.lru.keys()
        expected = self.model.table[keys[-1 - rank % len(keys)]]
        session_id = expected.session_id
        call = f"get_or_create_session({session_id!r})"
        for n in range(times):  # the same session every time, and nothing else changes
            with calling("LRU-1", call):
                obj = self.manager.get_or_create_session(session_id)
            self.model.get_or_create_session(session_id, obj)
            self.trace.append(("get_or_create_session", session_id, obj is expected.obj))
            if obj is not expected.obj:
                self._check_identity(obj, expected, f"{call}, hit {n + 1} of {times}")
        runs = f"{times} x {call}"
        self._check_table(runs, lambda _: "LRU-4")
        self._check_counters(runs, {"hits": "LRU-1", "misses": "LRU-1", "evictions": "LRU-1"})

    @rule(target=sessions, count=st.integers(1, MAX_NEWCOMERS))
    def get_or_create_session_newcomers(self, count: int) -> MultipleResults[SessionModel]:
        """A burst of misses: ``count`` ids of distinct keys absent from the table, in a
        row, each checked as the single-call rule checks it: past capacity, evictions
        in LRU order (LRU-4), the order runs of hits left."""
        keys = set(self.model.lru.keys())
        newcomers: dict[str, object] = {}
        for session_id in self.SESSION_IDS:
            if spec_key(session_id) not in keys:
                newcomers.setdefault(spec_key(session_id), session_id)
        created = [self.get_or_create_session(i) for i in list(newcomers.values())[:count]]
        return multiple(*(s for s in created if isinstance(s, SessionModel)))

    @rule(session_id=session_ids)
    def drop_session(self, session_id: object) -> None:
        call = f"drop_session({short_repr(session_id)})"
        target = self.model.lookup(session_id)
        evicted = [s for s in self.model.sessions_of(session_id) if s.fate.startswith("evicted")]
        with calling("DROP-2" if target else "DROP-1", call):
            dropped = self.manager.drop_session(session_id)
        expected = self.model.drop_session(session_id)
        self.trace.append(("drop_session", session_id, dropped))
        clause = "DROP-2" if target else "DROP-4" if evicted else "DROP-1"
        self._expect(call, dropped, expected, clause, f"after {call}")
        self.drops += bool(dropped)
        for session in [target] if target else evicted:
            self._check_contents(session, FATE_CLAUSE[session.fate], f"after {call}")
        key = spec_key(session_id)
        self._check_table(
            call, lambda ids: "DROP-2" if any(spec_key(i) == key for i in ids) else "DROP-3"
        )
        self._check_counters(call, dict.fromkeys(COUNTERS, "DROP-3"))

    @rule(session_id=session_ids)
    def contains(self, session_id: object) -> None:
        call = f"{short_repr(session_id)} in manager"
        with calling("KEY-3", call):
            observed = session_id in self.manager
        expected = self.model.contains(session_id)
        self.trace.append(("contains", session_id, observed))
        self._expect(call, observed, expected, "KEY-3", f"after {call}")
        self._check_counters(call, dict.fromkeys(COUNTERS, "STATS-4"))

    # -- invariants -------------------------------------------------------------

    @invariant()
    def check_at_rest(self) -> None:
        """Every at-rest property, ordered so the most specific clause fails first."""
        with calling("STATS-2", "manager.stats()"):
            stats = self.manager.stats()
        if self.READS_NBYTES:
            with calling("ACCT-11", "manager.nbytes_by_device()"):
                by_device = dict(self.manager.nbytes_by_device())
        else:  # sessions that hold nothing: the model's count, {}, stands for it
            by_device = self.model.expected_bytes()
        with calling("STATS-4", "len(manager)"):
            size = len(self.manager)
        counters = self._counters()
        # STATS-4: those reads changed neither len nor the counters (nor the
        # order, which the next miss shows).
        when = "after stats() and nbytes_by_device()"
        self.trace += [("len", None, size), ("counters", None, counters)]
        self._expect("len(manager)", size, len(self.model.table), "STATS-4", when)
        self._expect("counters", counters, self.model.lru.counters(), "STATS-4", when)
        self.check_conservation(size, counters)
        self.check_stats(stats, by_device, size, counters)
        if self.COUNTS_BYTES:
            self.check_bytes(by_device)
        self.check_holders()

    def check_conservation(self, size: int, counters: Mapping[str, int]) -> None:
        """STATS-5: misses == len + evictions + successful drops."""
        check_equal(
            counters["misses"],
            size + counters["evictions"] + self.drops,
            "STATS-5",
            "misses",
            f"len(manager) + evictions + successful drops = {size} + "
            f"{counters['evictions']} + {self.drops}",
        )

    def check_stats(
        self,
        stats: Mapping[str, Any],
        by_device: Mapping[str, int],
        size: int,
        counters: Mapping[str, int],
    ) -> None:
        """STATS-2 (keys and order, the total) and STATS-3 (agreement with the other observers)."""
        keys = list(stats)
        devices = sorted(k for k in keys if isinstance(k, str) and k.startswith("nbytes:"))
        check_equal(keys, [*STATS_KEYS, *devices], "STATS-2", "list(stats())")
        total = sum(stats[d] for d in devices)
        check_equal(
            stats["total_nbytes"],
            total,
            "STATS-2",
            "stats()['total_nbytes']",
            f"the sum of {devices}",
        )
        observed = {k: stats[k] for k in ("sessions", "max_sessions", *COUNTERS)}
        expected = {"sessions": size, "max_sessions": self.manager.max_sessions, **counters}
        check_equal(observed, expected, "STATS-3", "stats()", "beside len() and the attributes")
        per_device = {d.removeprefix("nbytes:"): stats[d] for d in devices}
        check_bytes(per_device, by_device, "STATS-3", "stats() nbytes", "beside nbytes_by_device()")

    def check_bytes(self, by_device: Mapping[str, int]) -> None:
        """ACCT-11: one count of every allocation held by the sessions in the table."""
        held = {f"session #{s.number}": s.held() for s in self.model.table.values()}
        check_composed_bytes(
            self.subject,
            by_device,
            [h for items in held.values() for h in items],
            "ACCT-11",
            "nbytes_by_device()",
            f"the table holds {held}",
        )

    def check_holders(self) -> None:
        """LRU-1, LRU-5, DROP-2, DROP-4: every session still holds what the model says.

        Every session while there are at most ``HOLDERS_AT_REST`` of them; past that (a
        large world of thousands), that many a step in turn, so each is seen
        again within a bounded number of steps and a step stays O(1). A session's own
        calls (its miss, its eviction, its drop) are checked as they return."""
        every = self.model.sessions
        limit = self.HOLDERS_AT_REST
        if len(every) <= limit:
            chosen = every
        else:
            start = self.holders_cursor % len(every)
            chosen = [every[(start + n) % len(every)] for n in range(limit)]
            self.holders_cursor = start + limit
        for session in chosen:
            self._check_contents(session, FATE_CLAUSE[session.fate], "at rest")

    # -- comparison helpers -----------------------------------------------------

    def _when(self, call: str) -> str:
        return f"{call}; {self.model.describe()}"

    def _expect(
        self,
        what: str,
        observed: object,
        expected: object,
        clause: str,
        when: str,
        plain: Callable[[], str] | None = None,
    ) -> None:
        """Fail unless ``observed == expected``, naming the clause of a suspect that explains
        the whole trace if one does, else ``clause``. ``plain()``, when given, says what is
        wrong in words (else ``what=observed, but should be expected``)."""
        __tracebackhide__ = True
        if observed != expected:
            self._probe_all()
            learned = key_suspects(self.subject, self.SESSION_IDS)
            found = suspect(self.model.lru.initial_max_sessions, self.trace, learned)
            if found == "STATS-4" and not contains_refreshes(self.subject):
                found = None  # the trace fits by chance: the subject's `in` does not refresh
            clause = found or clause
            if clause in ("LRU-3", "LRU-4"):
                clause = self._order_damage() or ("LRU-3" if self._lost_hits() else clause)
            if plain is not None:
                check(False, clause, f"{plain()} ({self._when(when)})")
            check_equal(observed, expected, clause, what, self._when(when))

    def _lost_hits(self) -> bool:
        """Whether the subject evicted by creation order where hits had changed it: the
        sessions it lost though the model keeps them are the oldest created of the model's
        residents, and one of them was used after a session the subject kept (LRU-3: the
        hit did not make it most recent). Probes ``in`` on every resident: only once a
        check has failed, when order no longer matters."""
        residents = [self.model.table[key] for key in self.model.lru.order]
        try:
            present = [s.session_id in self.manager for s in residents]
        except Exception:
            return False
        lost = [s for s, here in zip(residents, present, strict=True) if not here]
        oldest = sorted(residents, key=lambda s: s.number)[: len(lost)]
        if not lost or {s.number for s in lost} != {s.number for s in oldest}:
            return False
        newest_kept = -1  # the latest created of the sessions kept, less recent than this one
        for session, here in zip(residents, present, strict=True):
            if here:
                newest_kept = max(newest_kept, session.number)
            elif newest_kept > session.number:
                return True
        return False

    def _order_damage(self) -> str | None:
        """The clause of a call that damaged the LRU order before a wrong victim showed it
        (``RaisingMachine`` adds raises); None when no such call explains it."""
        return self._drop_damage()

    def _drop_damage(self) -> str | None:
        """DROP-3 (or DROP-1) when this run dropped and the subject's drops reorder the
        table: the order a drop damaged shows only in a later eviction."""
        kinds = {"present" if seen else "absent" for call, _, seen in self.trace
                 if call == "drop_session"}  # fmt: skip
        damaging = kinds & drop_reorders(self.subject)
        if "present" in damaging:
            return "DROP-3"
        return "DROP-1" if damaging else None

    def _probe_all(self) -> None:
        # Failing anyway, so order no longer matters: `in` on every id gives
        # the suspects the whole table to explain, not only the absent ids.
        try:
            self.trace += [("contains", i, i in self.manager) for i in self.SESSION_IDS]
        except Exception:
            return

    def _counters(self) -> dict[str, int]:
        with calling("STATS-1", "reading manager.hits, .misses, .evictions"):
            return {name: getattr(self.manager, name) for name in COUNTERS}

    def _check_counters(self, call: str, clauses: Mapping[str, str]) -> None:
        observed, expected = self._counters(), self.model.lru.counters()
        wrong = next((n for n in COUNTERS if observed[n] != expected[n]), "hits")
        self.trace.append(("counters", None, observed))
        self._expect("counters", observed, expected, clauses[wrong], f"after {call}")

    def _probe_ids(self) -> list[object]:
        # Only ids the model says are absent: `in` on a present key would hide
        # (or repair) the reordering by an `in` that refreshes, which the
        # `contains` rule exists to cause (STATS-4). Present keys are checked
        # by `len`, and again when they are next hit or are the next victim.
        keys = set(self.model.lru.keys())
        return [i for i in self.SESSION_IDS if spec_key(i) not in keys]

    def _check_table(self, call: str, default: Callable[[list[object]], str]) -> None:
        """LRU-7, then ``len`` and the absent ids (probed with ``in``), against the model."""
        with calling("LRU-7", "len(manager)"):
            size = len(self.manager)
        cap = self.model.max_sessions
        if size > cap:
            check_equal(
                size,
                len(self.model.table),
                "LRU-7",
                "len(manager)",
                f"over max_sessions={cap} " + self._when(f"after {call}"),
            )
        probe = self._probe_ids()
        with calling("KEY-3", "session_id in manager"):
            present = {i: i in self.manager for i in probe}
        self.trace += [("contains", i, seen) for i, seen in present.items()]
        self.trace.append(("len", None, size))
        observed = [i for i in probe if present[i]]
        expected = [i for i in probe if self.model.contains(i)]
        clause, when = default(observed), f"after {call}"
        self._expect(
            "ids in manager", observed, expected, clause, when,
            lambda: _absent_ids_message(observed, expected),
        )  # fmt: skip
        self._expect("len(manager)", size, len(self.model.table), clause, when)

    def _check_identity(self, obj: object, expected: SessionModel, when: str) -> None:
        """LRU-1 (or the clause of a suspect that explains the trace): a hit returned
        ``obj``, not the resident ``expected``."""
        known = self.model.session_of(obj)
        self._expect("the session returned", known, expected, "LRU-1", f"after {when}")

    def _name(self, value: object, expected: Held | None = None) -> str:
        """``value`` as the expression that made it; marked when it only looks like ``expected``."""
        held = self.names.get(id(value))
        name = held.expr if held is not None and held.value is value else type(value).__name__
        if expected is not None and value is not expected.value and name == expected.expr:
            name += " (another object)"
        return name

    def _check_contents(self, session: SessionModel, clause: str, call: str) -> None:
        """The subject's session object holds exactly what ``session`` says (by identity)."""
        obj, where = session.obj, f"{session!r}"
        with calling(clause, f"{where}.names()"):
            names = list(obj.names())
        check_equal(names, list(session.objects), clause, f"{where}.names()", call)
        for name, buffer in session.objects.items():
            self._check_buffer(obj, name, buffer, clause, f"{call}, in {where}")
        with calling(clause, f"{where}.attrs"):
            attrs = dict(obj.attrs)
        expected = {k: h.expr for k, h in session.attrs.items()}
        observed = {k: self._name(v, session.attrs.get(k)) for k, v in attrs.items()}
        check_equal(observed, expected, clause, f"{where}.attrs", call)

    def _check_buffer(
        self, obj: Any, name: str, buffer: BufferModel, clause: str, when: str
    ) -> None:
        call = f".get({name!r})"
        with calling(clause, call):
            got = obj.get(name)
            resident = bool(got.resident) if got is buffer.obj else None
        items: list[Any] = []
        if got is buffer.obj:
            with calling(clause, f"{call}.view()"):
                items = _view_or_refusal(got, resident)
        check_equal(got is buffer.obj, True, clause, f"{call} is the buffer put there", when)
        check_equal(resident, buffer.resident, clause, f"{call}.resident", when)
        expected = [h.expr for h in buffer.items]
        padded = [*buffer.items, *[None] * len(items)]
        observed = [self._name(v, h) for v, h in zip(items, padded, strict=False)]
        check_equal(observed, expected, clause, f"{call}.view()", when)

    def teardown(self) -> None:
        self.names.clear()


def _view_or_refusal(buffer: Any, resident: bool | None) -> list[Any]:
    """``buffer.view()`` as a list; a non-resident buffer may refuse instead (SPEC OBJ).

    ``view()`` raising ``RuntimeError`` before ``allocate()`` is an allowed refusal,
    which says the buffer holds nothing: upstream's ``LatentBuffer`` does exactly
    that after a reset. A resident buffer must answer.
    """
    if resident:
        return list(buffer.view())
    try:
        return list(buffer.view())
    except RuntimeError:
        return []


#: ``attrs`` is a ``dict[str, object]``: any ``str`` is a key, ``_``-prefixed ones included
#: (a reset or an accounting that skips "private" keys is wrong), the usual names first.
ATTR_NAMES = st.one_of(
    st.sampled_from(["language", "prompt_embeds", "vae_cache"]),
    st.text(),
    st.text().map(lambda text: f"_{text}"),
)


class ContentsMachine(ManagerMachine):
    """``ManagerMachine`` with sessions that hold buffers and attributes, and resets.

    Values share allocations on purpose (``derive``), across buffers,
    attributes and sessions, so the bytes check sees one count per storage.
    """

    CLAUSES = (*ManagerMachine.CLAUSES, "ACCT-11", "RESET-1", "RESET-4")
    COUNTS_BYTES = True

    @initialize(target=values)
    def seed_values(self) -> MultipleResults[Held]:
        """One allocation on every device (two on meta: they share data pointer 0) from the
        first step, so that sessions hold data, share it and are evicted holding it within
        the quick profile's short programs (bench/reachability.py measures how often)."""
        devices = [*available_devices(), "meta"]
        held = [allocate(d, (2, 3), fill=i) for i, d in enumerate(devices)]
        held.append(allocate("cpu", (4,), numpy=True))
        for h in held:
            self.names[id(h.value)] = h
        return multiple(*held)

    @rule(session=sessions, value=values, view=st.integers(0, 15))
    def hold(self, session: SessionModel, value: Held, view: int) -> None:
        """A session's typical state in one step: a buffer holding ``value`` and an attribute
        holding a view of it (the same allocation, counted once)."""
        name = "held"
        if name not in session.objects:
            buffer = self.put(session, name)
            if isinstance(buffer, BufferModel):
                self.append(buffer, value)
        self.set_attr(session, "vae_cache", self.derive(value, view))

    @rule(
        target=values,
        device=st.sampled_from((*available_devices(), "numpy")),
        shape=st.sampled_from([(2, 3), (4,), (0,)]),
    )
    def allocate(self, device: str, shape: tuple[int, ...]) -> Held:
        numpy = device == "numpy"
        held = allocate("cpu" if numpy else device, shape, numpy=numpy)
        self.names[id(held.value)] = held
        return held

    @rule(target=values, value=values, how=st.integers(0, 15))
    def derive(self, value: Held, how: int) -> Held:
        """A view of ``value`` (``derivations(value)[how % n]``): the same allocation."""
        options = derivations(value)
        held = options[how % len(options)](value)
        self.names[id(held.value)] = held
        return held

    @rule(target=buffers, session=sessions, name=st.sampled_from(["frames", "latents", "kv"]))
    def put(self, session: SessionModel, name: str) -> BufferModel | MultipleResults[Any]:
        if name in session.objects:  # replacing is RESET-4's own business
            return multiple()
        call = f"session #{session.number}.put({name!r}, subject.make_buffer())"
        with calling("RESET-4", call):
            buffer = self.subject.make_buffer()
            returned = session.obj.put(name, buffer)
        check_equal(returned is buffer, True, "RESET-4", f"{call} is the buffer", "")
        return session.put(name, buffer)

    @rule(buffer=buffers, value=values)
    def append(self, buffer: BufferModel, value: Held) -> None:
        if not buffer.resident:  # a reset buffer refuses appends until allocated again
            return
        with calling("RESET-4", f"{buffer.where}.append({value!r})"):
            buffer.obj.append(value.value)
        buffer.append(value)

    @rule(session=sessions, name=ATTR_NAMES, value=values)
    def set_attr(self, session: SessionModel, name: str, value: Held) -> None:
        with calling("RESET-4", f"session #{session.number}.attrs[{name!r}] = {value!r}"):
            session.obj.attrs[name] = value.value
        session.set_attr(name, value)

    @rule(session=sessions)
    def reset(self, session: SessionModel) -> None:
        call = f"session #{session.number}.reset()"
        with calling("RESET-1", call):
            session.obj.reset()
        session.reset()
        self._check_contents(session, "RESET-1", f"after {call}")


class CrowdedMachine(ContentsMachine):
    """``ContentsMachine`` with one or two sessions: evictions of sessions that hold
    data, and drops of evicted ids (DROP-4), on most steps."""

    CAPACITIES = (1, 2)


class OrderMachine(ManagerMachine):
    """``ManagerMachine`` on four plain ids and small caps: LRU order on most steps."""

    SESSION_IDS = ("a", "b", "c", "d")
    CAPACITIES = (3, 2)


REPLAYABLE = ("get_or_create_session", "drop_session", "contains")


def replay(subject: Any, max_sessions: int, program: Sequence[tuple[str, Hashable]]) -> None:
    """Run a hand-written program of (method, session_id) steps, checking as the machine does."""
    machine = ManagerMachine(subject)
    machine.make_manager(max_sessions=max_sessions)
    machine.check_at_rest()
    for method, session_id in program:
        if method not in REPLAYABLE:
            raise ValueError(f"step {method!r} is not one of {REPLAYABLE}")
        getattr(machine, method)(session_id=session_id)
        machine.check_at_rest()


def _absent_ids_message(observed: list[object], expected: list[object]) -> str:
    """What ``session_id in manager`` got wrong, in words: the ids it says the manager
    holds that the spec says it must not (evicted, dropped, or never created), and those
    it says are gone that the manager must hold."""
    extra = [i for i in observed if i not in expected]
    missing = [i for i in expected if i not in observed]
    parts = []
    if extra:
        ids, them = ", ".join(short_repr(i) for i in extra), "it" if len(extra) == 1 else "them"
        parts.append(
            f"the manager still holds session {ids} ('in manager' is True), but should not "
            f"hold {them}: by the spec {them} {'was' if len(extra) == 1 else 'were'} evicted, "
            "dropped or never created"
        )
    if missing:
        ids = ", ".join(short_repr(i) for i in missing)
        parts.append(f"the manager does not hold session {ids} ('in manager' is False), "
                     "which it should")  # fmt: skip
    return "; ".join(parts)
