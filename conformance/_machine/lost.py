"""LOST: the machine and the race check for ``require_session``, and their blame rules.

``LostMachine`` mixes ``get_or_create_session``, ``drop_session`` and ``require_session``
over a small pool of ids and checks every ``require_session`` against the one LRU oracle,
``_model.manager.LruTable`` (its ``require_session``): a resident key is a hit returning
the session the model says the key holds (LOST-1), an absent one raises the lost error
(LOST-2) and changes nothing (LOST-3). The LRU order is observed through eviction: after
every step the table must hold the keys the model holds. When it does not, the trace is
replayed on a table whose ``require_session`` hits leave the order alone; if that
explains it, the refresh was missing (LOST-1), else something a lost lookup did moved
the table (LOST-3).

LOST's checks rest on the subject's table following LRU without ``require_session``
(LRU-*, DROP-*): a second manager of the same subject (``shadow``) takes every call, a
``require_session`` of a resident key as the ``get_or_create_session`` hit it must be
like, and an absent one as nothing. Where that table already differs from the model, the
difference is the table's own clause, not LOST's: inside ``focused_on`` the example stops
there (the test is not checked if every example does), as LOCK-1 compares with the same
subject on ``threading.Lock``. ``check_plain_table`` is the same rule for a fixed script.

``check_atomic`` (LOST-4) runs one ``require_session`` on a manager whose lock runs a
*meddle* (a drop, or the miss that evicts) right after the first time the call lets go
of the lock, as another thread would. An atomic lookup has one critical section, so the
meddle falls before or after the whole call; a check-then-act lookup lets it fall in
between. The observed result, counters and table must be those of one of the two orders.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from sessionstate.conformance._machine.admit import outcome_of
from sessionstate.conformance._model.manager import SPEC, LruTable, Semantics, spec_key
from sessionstate.conformance.checks import calling, check, check_equal
from sessionstate.conformance.sizes import sizes
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS

__all__ = [
    "ERROR_NAME",
    "LOST_CLAUSES",
    "LostMachine",
    "Meddle",
    "MeddlingLock",
    "check_atomic",
    "check_plain_table",
    "lost_error_problem",
    "plain_table_differs",
]

#: The clauses ``LostMachine`` checks; its test carries all of them.
LOST_CLAUSES = ("LOST-1", "LOST-2", "LOST-3")
#: The class name LOST-2 recognises, anywhere in the exception's class hierarchy.
ERROR_NAME = "SessionStateLostError"
#: Ids the machine uses: 7 and "7" are one key (KEY-2), None is "default" (KEY-1), and one
#: id that ``repr()`` shows otherwise than verbatim (a backslash, control characters), which a
#: LOST-2 message may name either way. Five ids, as many as the LRU-order bugs (LOST-1) need:
#: each more id thins the sequences that find them at a fixed budget.
POOL: tuple[object, ...] = (
    None, "a", *(i for i in TRICKY_SESSION_IDS if i not in repr(i)), 7, "7"
)  # fmt: skip


def lost_error_problem(error: BaseException, session_id: object) -> str | None:
    """What keeps ``error`` from being LOST-2's error for ``session_id``, or ``None``."""
    key = spec_key(session_id)
    names = [cls.__name__ for cls in type(error).__mro__]
    if ERROR_NAME not in names:
        return f"its class {type(error).__name__} is not (a subclass of one) named {ERROR_NAME}"
    if not isinstance(error, RuntimeError):
        return f"{type(error).__name__} is not a RuntimeError"
    message = str(error)
    # LOST-2: the key verbatim, or as repr() shows it (upstream's `{key!r}`, as ADMIT-1 takes).
    if key not in message and repr(key) not in message:
        return f"its message {message!r} does not name the key {key!r}, verbatim or by repr()"
    return None


class LostMachine(RuleBasedStateMachine):
    """``require_session`` mixed with the calls that create, drop and evict sessions."""

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.subject = subject
        self.manager: Any = None
        self.shadow: Any = None  # the same subject, never given a require_session
        self.table = LruTable(1)
        self.sessions: dict[Hashable, object] = {}  # key -> the session object it holds
        self.trace: list[tuple[str, object]] = []

    @initialize(max_sessions=sizes(1, 3))
    def make_manager(self, max_sessions: int) -> None:
        call = f"SessionStateManager(max_sessions={max_sessions}, byte_budget=None)"
        with calling("LOST-1", call):
            self.manager = self.subject.make_manager(max_sessions=max_sessions, byte_budget=None)
            self.shadow = self.subject.make_manager(max_sessions=max_sessions, byte_budget=None)
        self.table = LruTable(max_sessions)

    @rule(session_id=st.sampled_from(POOL))
    def get_or_create_session(self, session_id: object) -> None:
        """Setup: the session the model says a key holds is the one a hit must return."""
        with calling("LOST-1", f"get_or_create_session({session_id!r})"):
            session = self.manager.get_or_create_session(session_id)
            self.shadow.get_or_create_session(session_id)
        self.trace.append(("get_or_create_session", session_id))
        outcome = self.table.get_or_create_session(session_id)
        for victim in outcome.evicted:
            self.sessions.pop(victim, None)
        if not outcome.hit:
            self.sessions[spec_key(session_id)] = session

    @rule(session_id=st.sampled_from(POOL))
    def drop_session(self, session_id: object) -> None:
        with calling("LOST-3", f"drop_session({session_id!r})"):
            self.manager.drop_session(session_id)
            self.shadow.drop_session(session_id)
        self.trace.append(("drop_session", session_id))
        if self.table.drop_session(session_id):
            del self.sessions[spec_key(session_id)]

    @rule(session_id=st.sampled_from(POOL))
    def require_session(self, session_id: object) -> None:
        """LOST-1 for a resident key, LOST-2 and LOST-3 for an absent one."""
        call = f"require_session({session_id!r})"
        when = f"with {self.table.describe()}"
        before = self._counters()
        outcome = self.table.require_session(session_id)
        self.trace.append(("require_session", session_id))
        observed = outcome_of(lambda: self.manager.require_session(session_id))
        if outcome.hit:
            with calling("LOST-1", f"get_or_create_session({session_id!r}) on the shadow"):
                self.shadow.get_or_create_session(session_id)  # the hit it must be like
            expected = self.sessions[spec_key(session_id)]
            if observed is not expected:
                check_equal(_shown(observed), f"the resident {expected!r}", "LOST-1", call, when)
            counted = _delta(before, self._counters())
            check_equal(counted, (1, 0, 0), "LOST-1", f"(hits, misses, evictions) by {call}", when)
            return
        if not isinstance(observed, BaseException):
            check_equal(_shown(observed), f"raises {ERROR_NAME}", "LOST-2", call, when)
            return
        problem = lost_error_problem(observed, session_id)
        check(problem is None, "LOST-2", f"{call} raised {observed!r}: {problem} ({when})")
        counted = _delta(before, self._counters())
        check_equal(counted, (0, 0, 0), "LOST-3", f"(hits, misses, evictions) by {call}", when)
        with calling("LOST-3", f"{session_id!r} in manager"):
            present = session_id in self.manager
        check_equal(present, False, "LOST-3", f"{session_id!r} in manager after {call}", when)

    @invariant()
    def check_table_matches_model(self) -> None:
        """The table holds the keys the model holds: the LRU order was kept (LOST-1, LOST-3)."""
        if self.manager is None:
            return
        expected = {session_id: self.table.contains(session_id) for session_id in POOL}
        plain = self._membership(self.shadow)
        if plain != expected:  # the table's own clause: the example stops here, if focused
            last = self.trace[-1][0] if self.trace else None
            plain_table_differs(plain, expected, last, f"{self.trace}")
        observed = self._membership(self.manager)
        if observed == expected:
            return
        clause = "LOST-1" if self._explained_without_refresh(observed) else "LOST-3"
        reason = {
            "LOST-1": "as if require_session hits did not make their session most recent",
            "LOST-3": "as if a lost lookup had changed the table",
        }[clause]
        check_equal(observed, expected, clause, "ids in the table", f"{reason}; {self.trace}")

    def _explained_without_refresh(self, observed: dict[object, bool]) -> bool:
        table = LruTable(self.table.max_sessions, Semantics(require_refreshes=False))
        for method, session_id in self.trace:
            getattr(table, method)(session_id)
        return observed == {session_id: table.contains(session_id) for session_id in POOL}

    def _membership(self, manager: Any) -> dict[object, bool]:
        with calling("LOST-3", "reading `id in manager`"):
            return {session_id: session_id in manager for session_id in POOL}

    def _counters(self) -> tuple[int, int, int]:
        with calling("LOST-1", "reading manager.hits, .misses and .evictions"):
            return self.manager.hits, self.manager.misses, self.manager.evictions


#: The clause a difference of the subject's table from LRU's, with no require_session in
#: play, belongs to, by the call after which it showed (LRU-4 before any call).
_PLAIN_CLAUSE = {
    "get_or_create_session": "LRU-4",
    "drop_session": "DROP-3",
    "require_session": "LRU-3",
}


def plain_table_differs(observed: object, expected: object, last: str | None, when: str) -> None:
    """Fail the table's own clause (``_PLAIN_CLAUSE``, by ``last``, the call after which the
    difference showed): the subject's table, with every require_session a
    get_or_create_session hit, holds ``observed`` where LRU holds ``expected``. Inside
    ``focused_on`` LOST clauses this stops the example; LOST is never failed for it."""
    what = "ids in the table with every require_session a get_or_create_session hit"
    check_equal(observed, expected, _PLAIN_CLAUSE.get(last or "", "LRU-4"), what, when)


def check_plain_table(
    subject: Any, max_sessions: int, calls: Sequence[tuple[str, object]], ids: Sequence[object]
) -> None:
    """What a LOST test's script rests on: ``calls`` on a fresh manager of ``subject``, each
    ``require_session`` of a resident key made the ``get_or_create_session`` hit it must be
    like and an absent one skipped, leave ``ids`` in the table as ``LruTable`` does. A
    difference fails the table's own clause (LRU-4, DROP-3, LRU-3), which stops a test
    ``focused_on`` LOST clauses as not checked, never failed."""
    table = LruTable(max_sessions)
    with calling("LOST-1", f"SessionStateManager(max_sessions={max_sessions}, ...)"):
        manager = subject.make_manager(max_sessions=max_sessions, byte_budget=None)
    for done, (method, session_id) in enumerate(calls, start=1):
        if method == "require_session" and not table.contains(session_id):
            continue
        plain = "get_or_create_session" if method == "require_session" else method
        with calling("LOST-1", f"{plain}({session_id!r})"):
            getattr(manager, plain)(session_id)
            observed = {i: i in manager for i in ids}
        getattr(table, plain)(session_id)
        expected = {i: table.contains(i) for i in ids}
        if observed != expected:
            plain_table_differs(observed, expected, method, f"{list(calls[:done])}")


def _delta(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def _shown(value: object) -> str:
    if isinstance(value, BaseException):
        return f"raised {value!r}"
    return f"returned {value!r}"


# -- LOST-4: a drop or an eviction falling inside require_session ------------------------


class MeddlingLock:
    """A real mutex, used only as ``with lock:``, that runs an armed callable right after
    the next full release, in the releasing thread, with the lock free: what another thread
    could do at that moment. The callable runs once (it is disarmed before it runs), so
    its own calls into the manager do not set it off again. A nested ``with`` (a LOCK-3
    defect, not this clause's) neither deadlocks nor lets the callable in while held."""

    def __init__(self) -> None:
        self._mutex = threading.RLock()
        self._depth = 0
        self.armed: Callable[[], None] | None = None
        self.meddled = False

    def __enter__(self) -> None:
        self._mutex.acquire()
        self._depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        released = self._depth == 0
        self._mutex.release()
        if not released:
            return
        meddle, self.armed = self.armed, None
        if meddle is not None:
            self.meddled = True
            meddle()


@dataclass(frozen=True)
class Meddle:
    """One LOST-4 case: sessions created in order, the id required, and what another
    thread does (``(method, id)`` calls) once ``require_session`` first lets go of the lock."""

    id: str
    max_sessions: int
    setup: tuple[object, ...]
    required: object
    calls: tuple[tuple[str, object], ...]


def _sequential(
    meddle: Meddle, require_first: bool, semantics: Semantics = SPEC
) -> tuple[str, tuple[int, int, int], list[bool]]:
    """(the require outcome, the counters, membership of every id) in one order."""
    table = LruTable(meddle.max_sessions, semantics)
    for session_id in meddle.setup:
        table.get_or_create_session(session_id)
    table.hits = table.misses = table.evictions = 0
    calls: list[tuple[str, object]] = list(meddle.calls)
    required = ("require_session", meddle.required)
    kind = ""
    for method, session_id in [required, *calls] if require_first else [*calls, required]:
        result = getattr(table, method)(session_id)
        if method == "require_session":
            kind = _KINDS[result.kind]
    ids = _ids(meddle)
    counters = (table.hits, table.misses, table.evictions)
    return kind, counters, [table.contains(i) for i in ids]


#: How a ``require_session`` outcome reads in a LOST-4 failure.
_KINDS = {"hit": "returned the resident session", "lost": "raised the lost error"}


def _ids(meddle: Meddle) -> list[object]:
    ids = [meddle.required, *meddle.setup, *(i for _, i in meddle.calls)]
    return list(dict.fromkeys(ids))


def check_atomic(subject: Any, meddle: Meddle) -> None:
    """LOST-4: ``require_session`` with ``meddle.calls`` falling at its first lock release.

    The observation must be one of the two sequential orders: the call first (a hit on
    the session that was resident) or the meddle first (the lost error, nothing created).
    Both orders rest on the subject's table following LRU without require_session
    (``check_plain_table``).
    An observation that one of them explains once require_session hits leave the LRU
    order alone is blamed on that instead (LOST-1): the call was atomic.
    """
    __tracebackhide__ = True
    setup = [("get_or_create_session", i) for i in meddle.setup]
    required = ("require_session", meddle.required)
    for order in ([*setup, required, *meddle.calls], [*setup, *meddle.calls, required]):
        check_plain_table(subject, meddle.max_sessions, order, _ids(meddle))
    lock = MeddlingLock()
    with calling("LOST-4", f"SessionStateManager(max_sessions={meddle.max_sessions}, ...)"):
        manager = subject.make_manager(
            max_sessions=meddle.max_sessions, byte_budget=None, lock_factory=lambda: lock
        )
        resident = {spec_key(i): manager.get_or_create_session(i) for i in meddle.setup}
        before = (manager.hits, manager.misses, manager.evictions)

    def run_meddle() -> None:
        for method, session_id in meddle.calls:
            getattr(manager, method)(session_id)

    call = f"require_session({meddle.required!r})"
    lock.armed = run_meddle
    observed = outcome_of(lambda: manager.require_session(meddle.required))
    lock.armed = None
    when = f"with {list(meddle.calls)} falling at its first release of the lock"
    check(lock.meddled, "LOST-4", f"{call} never released the manager's lock ({when})")
    with calling("LOST-4", "reading the counters and `id in manager`"):
        after = (manager.hits, manager.misses, manager.evictions)
        membership = [i in manager for i in _ids(meddle)]
    counted = _delta(before, after)
    if isinstance(observed, BaseException):
        lost = lost_error_problem(observed, meddle.required) is None
        shown = _KINDS["lost"] if lost else "raised another error"
    else:
        hit = observed is resident.get(spec_key(meddle.required))
        shown = _KINDS["hit"] if hit else "returned another session"
    seen = (shown, counted, membership)
    orders = [_sequential(meddle, require_first) for require_first in (True, False)]
    if seen in orders:
        return
    what = f"({call} outcome, (hits, misses, evictions), ids {_ids(meddle)} in manager)"
    unrefreshed = Semantics(require_refreshes=False)
    clause = "LOST-4"
    if seen in [_sequential(meddle, first, unrefreshed) for first in (True, False)]:
        clause, when = "LOST-1", f"{when}, as if its hit did not make the session most recent"
    check_equal(seen, _OneOf(orders), clause, what, f"{when}; {_shown(observed)}")


class _OneOf:
    """Any of ``options``, for a failure message that shows them all."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, options: Sequence[object]) -> None:
        self.options = list(options)

    def __eq__(self, other: object) -> bool:
        return other in self.options

    def __repr__(self) -> str:
        return " or ".join(repr(option) for option in self.options)
