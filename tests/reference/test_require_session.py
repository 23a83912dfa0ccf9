"""Unit tests of ``SessionStateManager.require_session`` (SPEC LOST-1..4), as one table."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from sessionstate.reference import SessionStateLostError, SessionStateManager


@dataclass(frozen=True)
class Case:
    id: str
    created: tuple[object, ...]  # get_or_create_session, in order
    dropped: tuple[object, ...]  # then drop_session
    required: object
    #: The key of the session returned (same object as created), or None for the lost error.
    returns: str | None
    counted: tuple[int, int, int]  # (hits, misses, evictions) by require_session
    #: The table after require_session and one more miss, least recent first.
    then: tuple[str, ...]


CASES = [
    Case("resident", ("a", "b"), (), "a", "a", (1, 0, 0), ("a", "new")),
    Case("falsy-is-default", (None, "b"), (), "", "default", (1, 0, 0), ("default", "new")),
    Case("int-is-its-str", (7, "b"), (), "7", "7", (1, 0, 0), ("7", "new")),
    Case("never-created", ("a", "b"), (), "x", None, (0, 0, 0), ("b", "new")),
    Case("dropped", ("a", "b"), ("a",), "a", None, (0, 0, 0), ("b", "new")),
    Case("evicted", ("a", "b", "c"), (), "a", None, (0, 0, 0), ("c", "new")),
]


def _keys(manager: SessionStateManager) -> tuple[str, ...]:
    return tuple(manager._sessions)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_require_session(case: Case) -> None:
    manager = SessionStateManager(max_sessions=2)
    sessions = {str(i or "default"): manager.get_or_create_session(i) for i in case.created}
    for session_id in case.dropped:
        manager.drop_session(session_id)
    before = (manager.hits, manager.misses, manager.evictions)
    table = _keys(manager)
    if case.returns is None:
        key = str(case.required or "default")
        with pytest.raises(SessionStateLostError, match=rf"^session '{key}' has no state: "):
            manager.require_session(case.required)
        assert _keys(manager) == table  # nothing created, nothing reordered
    else:
        assert manager.require_session(case.required) is sessions[case.returns]
    after = (manager.hits, manager.misses, manager.evictions)
    assert tuple(a - b for a, b in zip(after, before, strict=True)) == case.counted
    manager.get_or_create_session("new")
    assert _keys(manager) == case.then


def test_the_lost_error_is_a_runtime_error_naming_the_key() -> None:
    manager = SessionStateManager(max_sessions=1)
    with pytest.raises(RuntimeError) as info:
        manager.require_session(0)
    assert type(info.value) is SessionStateLostError
    assert "'default'" in str(info.value)


class _MeddlingLock:
    """Runs ``meddle`` right after the next release, as another thread could."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self.meddle: list[object] = []

    def __enter__(self) -> None:
        self._mutex.acquire()

    def __exit__(self, *exc: object) -> None:
        self._mutex.release()
        while self.meddle:
            self.meddle.pop()()  # type: ignore[operator]


def test_a_drop_cannot_fall_between_the_lookup_and_the_hit() -> None:
    """One critical section: the drop lands after the whole call, which returned a hit."""
    lock = _MeddlingLock()
    manager = SessionStateManager(max_sessions=2, lock_factory=lambda: lock)
    session = manager.get_or_create_session("a")
    lock.meddle.append(lambda: manager.drop_session("a"))
    assert manager.require_session("a") is session
    assert ("a" in manager, manager.hits, manager.misses) == (False, 1, 1)
