"""Admission control (SPEC ADMIT): the machine that checks a subject, and its blame rules.

The model is the suite's one LRU oracle, ``_model.manager.LruTable``, with its admission
policy: a hit, an admitted miss (evicting only when ``evict_when_full``), a refused miss, a
drop, a cap raise, as SPEC.md and the contract (section 6) describe them. It is written
from the spec alone and never imports an implementation (zarr's rule for its store model:
the oracle must not share the code under test). ``AdmissionMachine`` drives a subject's
manager and the model side by side and compares them after every call, naming the ADMIT
clause a difference breaks (``hit_clause``, ``admit_clause``, ...: ``admit_long`` names
them alike). The scripted tests' steps (``make_manager``, ``admit``, ``refuse``, ...) and
their lock (``CapLock``) follow.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionstate.conformance._model.manager import NON_POSITIVE, LruTable, spec_key
from sessionstate.conformance.checks import ClauseFailure, calling, check, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, sizes
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS
from sessionstate.conformance.strategies import session_ids as id_pool

__all__ = [
    "ADMIT_CLAUSES",
    "AdmissionMachine",
    "CapLock",
    "DefaultManagerMachine",
    "Raises",
    "RefusingManagerMachine",
    "Same",
    "admit",
    "admit_clause",
    "check_eviction_order",
    "check_marks",
    "counters",
    "hit_clause",
    "make_manager",
    "non_positive",
    "outcome_of",
    "refusal",
    "refusal_clause",
    "refuse",
    "refusing_manager",
    "set_evict_when_full",
    "table_clause",
]

#: Every clause the machine can fail; its tests carry all of them.
ADMIT_CLAUSES = tuple(f"ADMIT-{n}" for n in range(1, 12))


class Raises:
    """An expected exception, for ``check_equal``: equal to an exception of ``kind``
    whose message contains ``phrase``.

    A failure then reads ``get_or_create_session('d')=<SessionState ...>, but should be
    SessionAdmissionError("cannot admit session 'd'") [ADMIT-1: ...]``.
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self, name: str, phrase: str, kind: type[BaseException] = Exception, *, also: str = ""
    ) -> None:
        self.name, self.phrase, self.kind = name, phrase, kind
        self.phrases = (phrase, also) if also and also != phrase else (phrase,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.kind) and any(p in str(other) for p in self.phrases)

    def __repr__(self) -> str:
        return f"{self.name}({self.phrase!r})"


class Same:
    """An expected object, for ``check_equal``: equal only to that very object (identity)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return other is self.obj

    def __repr__(self) -> str:
        return f"the same object, {self.obj!r}"


def refusal(session_id: object) -> Raises:
    """What a refused miss raises (ADMIT-1).

    Recognised by its message, so the subject's own ``SessionAdmissionError`` class
    passes: the suite never asks for the reference's class. The key is shown as
    upstream formats it, ``repr(key)`` (#7302); ``'<key>'`` verbatim, the form SPEC
    version 1 asked for, is accepted too: the two differ only for ids holding a
    quote, a backslash or a control character.
    """
    key = spec_key(session_id)
    return Raises(
        "SessionAdmissionError",
        f"cannot admit session {key!r}",
        also=f"cannot admit session '{key}'",
    )


def non_positive() -> Raises:
    """What ``raise_max_sessions(n)`` raises for ``n <= 0`` (ADMIT-7)."""
    return Raises("ValueError", NON_POSITIVE, ValueError)


def outcome_of(call: Callable[[], Any]) -> Any:
    """``call()``'s result, or the exception it raised, to compare with a ``Raises``.

    A ``ClauseFailure`` (raised by a suite hook the subject called, such as a checking
    lock) is the suite's own verdict and propagates.
    """
    try:
        return call()
    except ClauseFailure:
        raise
    except Exception as error:
        return error


# Which clause a wrong observation breaks, from the model's state before the call: the
# most specific clause whose promise the call relied on.


def hit_clause(model: LruTable) -> str:
    return "ADMIT-10" if model.evict_when_full else "ADMIT-4"


def admit_clause(model: LruTable) -> str:
    """Why this miss must be admitted rather than refused."""
    if model.evict_when_full:
        return "ADMIT-11" if model.flipped else "ADMIT-10"
    if len(model) >= model.initial_max_sessions:
        return "ADMIT-8"  # only a raised cap leaves room here
    return "ADMIT-5" if model.drops else "ADMIT-1"


def table_clause(model: LruTable) -> str:
    """Why the table after an admitted miss must be what the model says: a refusing
    manager evicts nothing; an evicting one evicts as the LRU clauses say."""
    return "ADMIT-10" if model.evict_when_full else admit_clause(model)


def refusal_clause(model: LruTable, observed: object, could_refuse: bool) -> str:
    # A manager that evicted after evict_when_full was set to False ignored the setting,
    # if it is known to refuse at all: built evicting (the flag was all it had to go by)
    # or seen refusing before. One never seen refusing breaks ADMIT-1 itself.
    returned = not isinstance(observed, BaseException)
    return "ADMIT-11" if returned and model.flipped and could_refuse else "ADMIT-1"


ids = id_pool("a", "b", "c", "d", 7, None, "")
#: Small caps, so the few ids fill the table; a raise drawn by the boundary rule, half the
#: time near the cap (the table soon full again, refusing) and half from the non-positive
#: (ADMIT-7) to far above it (63, 64, 65, 128, ..., 4,097).
capacities = sizes(1, 3)
new_capacities = st.one_of(sizes(-1, 5), sizes(-1, COUNT_BOUND))
flags = st.booleans()

# One id per key in ``ids`` ("" and None are both "default").
_PROBES: tuple[object, ...] = ("a", "b", "c", "d", 7, None, *TRICKY_SESSION_IDS)


class AdmissionMachine(RuleBasedStateMachine):
    """A subject's manager against ``LruTable``, compared after every call.

    ``evict_when_full`` is what the constructor is given: ``False`` for a refusing
    manager, ``None`` to leave the argument out (the default, ADMIT-10). Every admitted
    session gets ``attrs["mark"] = key``, so a refusal that resets or replaces a resident
    session shows (ADMIT-2). The LRU order of a refusing manager is invisible, so after a
    refusal, or a hit while refusing, it is read from a twin: a fresh manager given the
    same calls, then switched to evicting (ADMIT-11) and fed newcomers (a sequential
    manager is deterministic, so the twin's order is the subject's).
    """

    evict_when_full: bool | None = False

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.subject = subject
        self.kwargs: dict[str, Any] = {}
        self.manager: Any = None
        self.model = LruTable(1)
        self.sessions: dict[Hashable, Any] = {}  # key -> the object the subject returned
        self.successful_drops = 0  # as the subject reported them (STATS-5)
        self.history: list[Callable[[Any], Any]] = []  # every call made, for the twin
        # Built evicting, or seen refusing a miss: then an eviction where the flag says
        # refuse is the flag ignored (ADMIT-11), not a manager that never refuses (ADMIT-1).
        self.could_refuse = False

    def _construct(self, clause: str) -> Any:
        call = "SessionStateManager(" + ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        with calling(clause, call + ")"):
            return self.subject.make_manager(**self.kwargs)

    @initialize(max_sessions=capacities)
    def make_manager(self, max_sessions: int) -> None:
        self.kwargs = {"max_sessions": max_sessions, "byte_budget": None}
        if self.evict_when_full is not None:
            self.kwargs["evict_when_full"] = self.evict_when_full
        flag = self.evict_when_full is not False
        clause = "ADMIT-10" if self.evict_when_full is None else "ADMIT-11"
        self.manager = self._construct(clause)
        with calling(clause, "manager.evict_when_full"):
            observed = self.manager.evict_when_full
        check_equal(observed, flag, clause, "evict_when_full", f"given {self.kwargs}")
        self.model = LruTable(max_sessions, evict_when_full=flag)
        self.could_refuse = flag

    def _call(self, call: Callable[[Any], Any]) -> Any:
        self.history.append(call)
        return outcome_of(lambda: call(self.manager))

    @rule(session_id=ids)
    def get_or_create_session(self, session_id: object) -> None:
        call = f"get_or_create_session({session_id!r})"
        when = f"{call} with {self.model.describe()}"
        model, before = self.model, self.model.keys()
        clauses = (hit_clause(model), admit_clause(model), table_clause(model))
        expected = model.get_or_create_session(session_id)
        observed = self._call(lambda manager: manager.get_or_create_session(session_id))
        if expected.kind == "refused":
            clause = refusal_clause(model, observed, self.could_refuse)
            check_equal(observed, refusal(session_id), clause, call, when)
            self.could_refuse = True
            self._check_state("ADMIT-2", "ADMIT-3", when)
            self._check_order("ADMIT-2", when, before)
        elif expected.kind == "hit":
            held = self.sessions[spec_key(session_id)]
            check_equal(observed, Same(held), clauses[0], call, when)
            self._check_state(clauses[0], clauses[0], when)
            if not model.evict_when_full:
                self._check_order("ADMIT-4", when, before)
        else:
            self._check_admitted(session_id, observed, clauses[1], call, when)
            for key in expected.evicted:
                self.sessions.pop(key, None)
            self._check_state(clauses[2], clauses[1], when)

    def _check_admitted(
        self, session_id: object, observed: Any, clause: str, call: str, when: str
    ) -> None:
        with calling(clause, call):
            if isinstance(observed, BaseException):
                raise observed
            contents = (list(observed.names()), dict(observed.attrs))
        check_equal(contents, ([], {}), clause, f"({call}.names(), .attrs)", when)
        holders = [key for key, held in self.sessions.items() if held is observed]
        check_equal(holders, [], clause, f"resident ids already holding {call}", when)
        observed.attrs["mark"] = spec_key(session_id)
        self.sessions[spec_key(session_id)] = observed

    @precondition(lambda self: len(self.model) > 0)
    @rule(session_id=ids)
    def drop_session(self, session_id: object) -> None:
        call = f"drop_session({session_id!r})"
        when = f"{call} with {self.model.describe()}"
        clause = "ADMIT-10" if self.model.evict_when_full else "ADMIT-5"
        expected = self.model.drop_session(session_id)
        with calling(clause, call):
            observed = self._call(lambda manager: manager.drop_session(session_id))
            if isinstance(observed, BaseException):
                raise observed
        check_equal(observed, expected, clause, call, when)
        if expected:
            self.successful_drops += 1
            self.sessions.pop(spec_key(session_id))
        self._check_state(clause, clause, when)

    @precondition(lambda self: self.model.full)  # when an operator would
    @rule(max_sessions=new_capacities)
    def raise_max_sessions(self, max_sessions: int) -> None:
        call = f"raise_max_sessions({max_sessions})"
        when = f"{call} with {self.model.describe()}"
        observed = self._call(lambda manager: manager.raise_max_sessions(max_sessions))
        expected: object = non_positive()
        clause = "ADMIT-7" if max_sessions <= 0 else "ADMIT-6"
        if max_sessions > 0:
            expected = self.model.raise_max_sessions(max_sessions)
        check_equal(observed, expected, clause, call, when)
        with calling(clause, "stats()"):
            in_stats = self.manager.stats()["max_sessions"]
        check_equal(in_stats, self.model.max_sessions, clause, 'stats()["max_sessions"]', when)
        self._check_state(clause, clause, when)

    @precondition(lambda self: len(self.model) > 0)
    @rule(flag=flags)
    def set_evict_when_full(self, flag: bool) -> None:
        call = f"manager.evict_when_full = {flag}"
        when = f"after {call} with {self.model.describe()}"
        with calling("ADMIT-11", call):
            self._call(lambda manager: _set_flag(manager, flag))
            observed = self.manager.evict_when_full
        self.model.set_evict_when_full(flag)
        check_equal(observed, flag, "ADMIT-11", "evict_when_full", when)
        self._check_state("ADMIT-11", "ADMIT-11", when)

    def _check_state(self, table_clause: str, counter_clause: str, when: str) -> None:
        """The table (size, membership, marks) and the counters equal the model's."""
        manager, model = self.manager, self.model
        with calling(table_clause, "len(manager)"):
            check_equal(len(manager), len(model), table_clause, "len(manager)", when)
        for probe in _PROBES:
            with calling(table_clause, f"{probe!r} in manager"):
                present = probe in manager
            check_equal(present, model.contains(probe), table_clause, f"{probe!r} in manager", when)
        for key, held in self.sessions.items():
            mark = held.attrs.get("mark")
            check_equal(mark, key, table_clause, f"attrs['mark'] of session {key!r}", when)
        counters = (manager.hits, manager.misses, manager.evictions)
        expected = (model.hits, model.misses, model.evictions)
        check_equal(counters, expected, counter_clause, "(hits, misses, evictions)", when)

    def _check_order(self, clause: str, when: str, before: list[Hashable]) -> None:
        """The twin, given the same calls, evicts in the model's LRU order (see class doc).

        If a twin of every call but the last (order ``before``) is already wrong, the
        last call is not to blame: eviction itself breaks the LRU clauses (ADMIT-10).
        """
        if len(self.model) < 2:
            return
        evicted = self._twin_evictions(self.history, self.model.keys(), clause)
        wrong = evicted != self.model.keys()
        if wrong and not evicted:
            clause = "ADMIT-11"  # switched to evicting, the twin evicted nothing: not honoured
        elif wrong and self._twin_evictions(self.history[:-1], before, clause) != before:
            clause = "ADMIT-10"
        what = "eviction order of a twin switched to evict_when_full=True"
        check_equal(evicted, self.model.keys(), clause, what, when)

    def _twin_evictions(
        self, calls: list[Callable[[Any], Any]], order: list[Hashable], clause: str
    ) -> list[Hashable]:
        """The keys of ``order`` a fresh manager given ``calls`` evicts, in turn, once
        switched to evicting and fed newcomers (enough to fill it, then one per key)."""
        twin = self._construct(clause)
        for call in calls:
            outcome_of(partial(call, twin))
        with calling("ADMIT-11", "twin.evict_when_full = True"):
            twin.evict_when_full = True
        remaining, evicted = list(order), []
        for n in range(self.model.max_sessions):
            if not remaining:  # a raised cap of thousands: stop once every key is out
                break
            outcome_of(partial(twin.get_or_create_session, f"newcomer{n}"))
            evicted += [key for key in remaining if key not in twin]
            remaining = [key for key in remaining if key in twin]
        return evicted

    @invariant()
    def check_conservation(self) -> None:
        manager, drops = self.manager, self.successful_drops
        total = len(manager) + manager.evictions + drops
        when = f"len(manager) + evictions + successful drops ({drops}), {self.model.describe()}"
        check_equal(manager.misses, total, "ADMIT-9", "misses", when)

    @invariant()
    def check_max_sessions(self) -> None:
        observed, model = self.manager.max_sessions, self.model
        check_equal(observed, model.max_sessions, "ADMIT-6", "max_sessions", model.describe())


def _set_flag(manager: Any, flag: bool) -> None:
    manager.evict_when_full = flag


class RefusingManagerMachine(AdmissionMachine):
    """Built with ``evict_when_full=False``."""

    evict_when_full = False


class DefaultManagerMachine(AdmissionMachine):
    """Built without ``evict_when_full``: evicting by default (ADMIT-10)."""

    evict_when_full = None


# -- the scripted tests' steps: each names the clause a failure breaks --------------------


def make_manager(subject: Any, max_sessions: int, **kwargs: Any) -> Any:
    """``subject.make_manager(max_sessions, byte_budget=None, **kwargs)``; an exception fails
    ADMIT-11 with ``kwargs`` (the admission keywords), ADMIT-10 without."""
    args = "".join(f", {name}={value!r}" for name, value in kwargs.items())
    call = f"SessionStateManager(max_sessions={max_sessions}, byte_budget=None{args})"
    with calling("ADMIT-11" if kwargs else "ADMIT-10", call):
        return subject.make_manager(max_sessions=max_sessions, byte_budget=None, **kwargs)


def refusing_manager(subject: Any, max_sessions: int) -> Any:
    """``make_manager(subject, max_sessions, evict_when_full=False)``."""
    return make_manager(subject, max_sessions, evict_when_full=False)


def admit(manager: Any, *session_ids: object, clause: str = "ADMIT-1") -> dict[str, Any]:
    """Admit each id as a new, marked session; ``clause`` is why there must be room."""
    admitted: dict[str, Any] = {}
    for session_id in session_ids:
        key = spec_key(session_id)
        with calling(clause, f"get_or_create_session({session_id!r})"):
            session = manager.get_or_create_session(session_id)
            session.attrs["mark"] = key
        admitted[key] = session
    return admitted


def refuse(manager: Any, session_id: object, clause: str, when: str) -> None:
    """``get_or_create_session(session_id)`` must raise the admission refusal (``clause``)."""
    call = f"get_or_create_session({session_id!r})"
    observed = outcome_of(lambda: manager.get_or_create_session(session_id))
    check_equal(observed, refusal(session_id), clause, call, when)


def counters(manager: Any) -> tuple[int, int, int]:
    """``(hits, misses, evictions)``."""
    return manager.hits, manager.misses, manager.evictions


def set_evict_when_full(manager: Any, flag: bool) -> None:
    """``manager.evict_when_full = flag``; an exception fails ADMIT-11."""
    with calling("ADMIT-11", f"manager.evict_when_full = {flag}"):
        manager.evict_when_full = flag


def check_marks(sessions: dict[str, Any], clause: str, when: str) -> None:
    """Each session still carries the mark ``admit`` gave it: none was reset or replaced."""
    for key, session in sessions.items():
        mark = session.attrs.get("mark")
        check_equal(mark, key, clause, f"attrs['mark'] of session {key!r}", when)


def check_eviction_order(manager: Any, order: list[str], clause: str, when: str) -> None:
    """On a full table, set evict_when_full; then each newcomer evicts the next of ``order``."""
    set_evict_when_full(manager, True)
    for n in range(len(order)):
        admit(manager, f"new{n}", clause="ADMIT-11")
        present = [key for key in order if key in manager]
        check_equal(present, order[n + 1 :], clause, "resident of " + repr(order), when)


class CapLock:
    """A non-reentrant lock that fails instead of deadlocking, recording the cap it saw
    at each enter and exit (ADMIT-12)."""

    def __init__(self) -> None:
        self.manager: Any = None
        self.held = False
        self.spans: list[tuple[int, int]] = []
        self._cap = 0

    def _read_cap(self) -> int:
        return -1 if self.manager is None else int(self.manager.max_sessions)

    def __enter__(self) -> CapLock:
        check(not self.held, "ADMIT-12", "the manager's lock was entered while it was held")
        self.held, self._cap = True, self._read_cap()
        return self

    def __exit__(self, *exc: object) -> None:
        self.held = False
        self.spans.append((self._cap, self._read_cap()))
