"""The LOST machinery in-process: the machine, the race check and the lost error's
recogniser, on the reference, on correct designs unlike it, and on each lost_ zoo bug."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from sessionstate.conformance import Subject
from sessionstate.conformance._machine.lost import (
    POOL,
    LostMachine,
    Meddle,
    check_atomic,
    lost_error_problem,
)
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS
from sessionstate.fixtures.zoo import ZOO
from sessionstate.fixtures.zoo._kit import ZooManager
from sessionstate.reference import SessionState, SessionStateLostError, SessionStateManager

LOST_ZOO = [entry for entry in ZOO if entry.name.startswith("lost_")]


class SubjectLostError(RuntimeError):
    """A subject's own error class, named as upstream names it."""


class SessionStateLostError2(SubjectLostError):
    pass


SessionStateLostError2.__name__ = "SessionStateLostError"


class PrecheckedManager(ZooManager):
    """Correct, unlike the reference: a first critical section only reads the size (a
    drop may fall after it), then the lookup and the hit in one more; its own error."""

    def require_session(self, session_id: object) -> SessionState:
        key = self._key(session_id)
        with self._lock:
            empty = not self._sessions
        with self._lock:
            session = None if empty else self._sessions.get(key)
            if session is None:
                raise SessionStateLostError2(f"DreamZero session {key!r} has no live state")
            return self._hit(key, session)


def _subject(name: str, manager: type[SessionStateManager]) -> Subject:
    return Subject(
        name=name,
        manager_factory=manager,
        capabilities=frozenset({"threadsafe", "require_session"}),
    )


def _zoo_subject(name: str) -> Subject:
    subject: Subject = importlib.import_module(f"sessionstate.fixtures.zoo.{name}").subject
    return subject


MEDDLES = [
    Meddle("dropped", 2, ("a", "b"), "a", (("drop_session", "a"),)),
    Meddle("evicted", 2, ("a", "b"), "a", (("get_or_create_session", "c"),)),
    Meddle("other-dropped", 2, ("a", "b"), "a", (("drop_session", "b"),)),
]


@dataclass(frozen=True)
class Run:
    id: str
    subject: Subject
    machine: str | None  # the clause LostMachine fails, None when it passes
    atomic: str | None  # the clause check_atomic fails on "dropped" and "evicted"


RUNS = [
    Run("reference", _subject("reference", SessionStateManager), None, None),
    Run("prechecked", _subject("prechecked", PrecheckedManager), None, None),
    Run("require-creates", _zoo_subject("lost_require_creates"), "LOST-2", None),
    Run("raises-key-error", _zoo_subject("lost_raises_key_error"), "LOST-2", None),
    Run("message-without-id", _zoo_subject("lost_message_without_id"), "LOST-2", None),
    Run("absent-counts-miss", _zoo_subject("lost_absent_counts_miss"), "LOST-3", None),
    Run("hit-no-refresh", _zoo_subject("lost_hit_no_refresh"), "LOST-1", "LOST-1"),
    Run("check-then-act", _zoo_subject("lost_check_then_act"), None, "LOST-4"),
]


@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
def test_the_machine(run: Run) -> None:
    """The machine alone finds each non-racing bug and blames its clause."""
    settings_ = settings(
        max_examples=60, stateful_step_count=12, deadline=None, database=None, derandomize=True
    )
    machine = lambda: LostMachine(run.subject)  # noqa: E731
    if run.machine is None:
        run_state_machine_as_test(machine, settings=settings_)
        return
    with pytest.raises(ClauseFailure) as info:
        run_state_machine_as_test(machine, settings=settings_)
    assert info.value.clause == run.machine


@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
def test_the_race_check(run: Run) -> None:
    """A drop or an eviction inside the call: only a lookup split from its hit fails."""
    failed = set()
    for meddle in MEDDLES:
        try:
            check_atomic(run.subject, meddle)
        except ClauseFailure as failure:
            failed.add(failure.clause)
    assert failed == ({run.atomic} if run.atomic else set())


def test_a_lock_never_released_fails_lost_4() -> None:
    """A require_session that bypasses the manager's lock cannot be shown atomic."""

    class Unlocked(SessionStateManager):
        def require_session(self, session_id: object) -> SessionState:
            return self._sessions[str(session_id or "default")]

    with pytest.raises(ClauseFailure) as info:
        check_atomic(_subject("unlocked", Unlocked), MEDDLES[0])
    assert info.value.clause == "LOST-4"
    assert "never released the manager's lock" in str(info.value)


ERRORS = [
    ("reference", SessionStateLostError("session 'a' has no state"), None),
    ("own-class-by-name", SessionStateLostError2("session 'a' lost"), None),
    ("key-error", KeyError("a"), "its class KeyError is not (a subclass of one) named"),
    ("no-key", SessionStateLostError("lost"), "does not name the key 'a'"),
]


@pytest.mark.parametrize("session_id", TRICKY_SESSION_IDS)
def test_the_lost_error_may_name_the_key_as_repr_shows_it(session_id: str) -> None:
    """Upstream's idiom, ``f"... {key!r} ..."``, names a key holding a quote, a backslash, a
    control character or non-ASCII text differently from the key itself: both forms name it."""
    assert (
        lost_error_problem(SessionStateLostError(f"session {session_id!r} is lost"), session_id)
        is None
    )
    assert (
        lost_error_problem(SessionStateLostError(f"session {session_id} is lost"), session_id)
        is None
    )
    assert lost_error_problem(SessionStateLostError("a session is lost"), session_id) is not None


def test_the_lost_machine_draws_an_id_repr_shows_otherwise() -> None:
    assert [i for i in POOL if isinstance(i, str) and i not in repr(i)] == ["C:\\tmp\tnew\nline"]


@pytest.mark.parametrize(("error", "problem"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_the_lost_error_recogniser(error: BaseException, problem: str | None) -> None:
    found = lost_error_problem(error, "a")
    assert found is None if problem is None else (found is not None and problem in found)


def test_a_subject_lost_error_that_is_no_runtime_error() -> None:
    class SessionStateLostError(KeyError):
        pass

    assert lost_error_problem(SessionStateLostError("a"), "a") == (
        "SessionStateLostError is not a RuntimeError"
    )


def test_zoo_lost_modules_name_a_lost_clause() -> None:
    assert len(LOST_ZOO) == 6
    for entry in LOST_ZOO:
        assert all(cid.startswith("LOST-") and cid in entry.bug for cid in entry.kills)


def test_a_nested_lock_neither_deadlocks_nor_lets_the_meddle_in() -> None:
    """A require_session that re-enters the lock (LOCK-3's defect) is still one critical
    section here: the meddle waits for the outer release, and the call passes LOST-4."""

    class Nested(SessionStateManager):
        def require_session(self, session_id: object) -> SessionState:
            with self._lock:
                return super().require_session(session_id)

    for meddle in MEDDLES:
        check_atomic(_subject("nested", Nested), meddle)
