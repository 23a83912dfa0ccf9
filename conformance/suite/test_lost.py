"""LOST-*: lost sessions and ``require_session`` (SPEC.md, "LOST: lost sessions").

Needs the ``require_session`` capability (LOST-4 also ``threadsafe``; skipped otherwise,
from the clauses' ``Requires:``). Scripted cases pin each clause's basic statement; the
machine from ``sessionstate.conformance._machine.lost`` then mixes every call, checked
against ``LruTable``, and one long program (``_machine.lost_long``) runs thousands of calls on
a table of any size; LOST-4 puts a drop or an eviction inside the call.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._machine.lost import (
    LOST_CLAUSES,
    LostMachine,
    Meddle,
    check_atomic,
    check_plain_table,
    lost_error_problem,
)
from sessionstate.conformance._machine.lost_long import LongLostMachine
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.checks import (
    ClauseFailure,
    calling,
    check,
    check_equal,
    focused_on,
)


def _manager(subject: Any, max_sessions: int, *session_ids: object) -> tuple[Any, list[Any]]:
    with calling("LOST-1", f"SessionStateManager(max_sessions={max_sessions}, ...)"):
        manager = subject.make_manager(max_sessions=max_sessions, byte_budget=None)
        return manager, [manager.get_or_create_session(i) for i in session_ids]


def _counters(manager: Any) -> tuple[int, int, int]:
    return manager.hits, manager.misses, manager.evictions


@pytest.mark.clause("LOST-1")
@pytest.mark.parametrize(("created", "required"), [("a", "a"), (None, ""), (7, "7"), ("", 0)])
def test_a_resident_session_is_a_hit(subject: Any, created: object, required: object) -> None:
    """The same session, one hit, and most recent: the next miss evicts the other one."""
    with focused_on("LOST-1"):
        script = [("get_or_create_session", created), ("get_or_create_session", "other"),
                  ("require_session", required), ("get_or_create_session", "newcomer")]  # fmt: skip
        check_plain_table(subject, 2, script, [created, "other", "newcomer"])
        _a_resident_session_is_a_hit(subject, created, required)


def _a_resident_session_is_a_hit(subject: Any, created: object, required: object) -> None:
    manager, (session, _) = _manager(subject, 2, created, "other")
    before = _counters(manager)
    call = f"require_session({required!r})"
    with calling("LOST-1", f"{call} after get_or_create_session({created!r})"):
        found = manager.require_session(required)
    check(found is session, "LOST-1", f"{call} returned {found!r}, not the resident {session!r}")
    counted = tuple(a - b for a, b in zip(_counters(manager), before, strict=True))
    check_equal(counted, (1, 0, 0), "LOST-1", f"(hits, misses, evictions) by {call}")
    with calling("LOST-1", "get_or_create_session('newcomer')"):
        manager.get_or_create_session("newcomer")
        order_kept = (created in manager, "other" in manager)
    check_equal(order_kept, (True, False), "LOST-1", f"(resident, other) after {call} and a miss")


@pytest.mark.clause("LOST-2", "LOST-3")
@pytest.mark.parametrize("history", ["never created", "dropped", "evicted"])
def test_an_absent_session_is_lost(subject: Any, history: str) -> None:
    """The lost error naming the key; no session, no counter, no eviction, the order kept."""
    setup = ("c", "b") if history == "never created" else ("gone", "c")
    script = [("get_or_create_session", i) for i in setup]
    script += [("drop_session", "gone")] if history == "dropped" else []
    script += [("get_or_create_session", "b")] if history != "never created" else []
    script += [("require_session", "gone"), ("require_session", "never-seen")]
    script += [("get_or_create_session", "d")]
    with focused_on("LOST-2", "LOST-3"):
        check_plain_table(subject, 2, script, ["gone", "c", "b", "d"])
        _an_absent_session_is_lost(subject, history, setup)


def _an_absent_session_is_lost(subject: Any, history: str, setup: tuple[str, str]) -> None:
    manager, _ = _manager(subject, 2, *setup)
    with calling("LOST-3", f"making 'gone' {history}"):
        if history == "dropped":
            manager.drop_session("gone")
        if history != "never created":
            manager.get_or_create_session("b")  # evicts 'gone' unless it was dropped
    # The table is now c, b (least recent first).
    for session_id in ("gone", "never-seen"):
        before, call = _counters(manager), f"require_session({session_id!r})"
        try:
            found = manager.require_session(session_id)
        except ClauseFailure:
            raise
        except Exception as error:
            problem = lost_error_problem(error, session_id)
            check(problem is None, "LOST-2", f"{call} raised {error!r}: {problem} ({history})")
        else:
            check(False, "LOST-2", f"{call} returned {found!r} for an absent id ({history})")
        counted = tuple(a - b for a, b in zip(_counters(manager), before, strict=True))
        check_equal(counted, (0, 0, 0), "LOST-3", f"(hits, misses, evictions) by {call}")
        with calling("LOST-3", f"{session_id!r} in manager"):
            check_equal(session_id in manager, False, "LOST-3", f"{session_id!r} in manager")
    with calling("LOST-3", "get_or_create_session('d')"):
        manager.get_or_create_session("d")  # evicts c, the least recent, if the order held
        kept = ("c" in manager, "b" in manager)
    check_equal(kept, (False, True), "LOST-3", "('c', 'b') in manager after a lost lookup")


@pytest.mark.clause(*LOST_CLAUSES)
@given(data=st.data())
def test_require_session_machine(subject: Any, data: st.DataObject) -> None:
    """Every require_session in any mix of creations, drops and evictions agrees with LruTable
    (an example where the subject's table differs from LRU without it stops there)."""
    with focused_on(*LOST_CLAUSES):
        run_steps(lambda: LostMachine(subject), data)


@pytest.mark.clause(*LongLostMachine.CLAUSES)
@settings(max_examples=max(2, settings.default.max_examples // 20))  # type: ignore[union-attr]
@given(data=st.data())
def test_long_program(subject: Any, data: st.DataObject) -> None:
    """Thousands of calls on one table of any size: hundreds of sessions created, required
    while resident (the same session, one hit, made most recent), required once evicted,
    dropped or never created (the lost error, nothing changed), each call checked against
    the model as it returns; at the end every session is evicted in LRU order."""
    with focused_on(*LongLostMachine.CLAUSES):
        run_steps(lambda: LongLostMachine(subject), data)


MEDDLES = [
    Meddle("dropped", 2, ("a", "b"), "a", (("drop_session", "a"),)),
    Meddle("evicted", 2, ("a", "b"), "a", (("get_or_create_session", "c"),)),
    Meddle("other-dropped", 2, ("a", "b"), "a", (("drop_session", "b"),)),
    Meddle(
        "full-then-dropped", 1, ("a",), "a", (("drop_session", "a"), ("get_or_create_session", "b"))
    ),
]


# LOST-1 too: a hit that does not refresh the order shows here, and is blamed on it.
@pytest.mark.clause("LOST-4", "LOST-1")
@pytest.mark.parametrize("meddle", MEDDLES, ids=[m.id for m in MEDDLES])
def test_require_session_is_atomic(subject: Any, meddle: Meddle) -> None:
    """A drop or an eviction at the call's first lock release falls before or after it."""
    with focused_on("LOST-4", "LOST-1"):
        check_atomic(subject, meddle)
