"""DROP-*: explicit end of session (SPEC.md, "DROP: explicit end of session").

The crowded machine (one or two sessions) evicts sessions that hold data on
most steps, so drops of present, absent and already-evicted ids all come up;
the programs are its regression corpus, and two direct tests pin what a
holder sees.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate
from sessionstate.conformance._machine.manager import (
    ContentsMachine,
    CrowdedMachine,
    ManagerMachine,
    replay,
)
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.checks import calling, check_equal

G, D, C = "get_or_create_session", "drop_session", "contains"

#: (intended clause, max_sessions, program)
PROGRAMS = [
    ("DROP-1", 2, [(D, "a"), (G, "a"), (D, "b"), (D, None), (C, "a")]),
    ("DROP-2", 2, [(G, "a"), (D, "a"), (D, "a"), (G, "a"), (C, "a")]),
    ("DROP-3", 3, [(G, "a"), (G, "b"), (G, "c"), (G, "a"), (D, "b"), (G, "b"), (G, "default")]),
    ("DROP-4", 1, [(G, "a"), (G, "b"), (D, "a"), (D, "b"), (G, "a"), (D, "a")]),
    ("DROP-2", 3, [(G, None), (D, ""), (G, 0), (D, False), (G, "7"), (D, 7)]),
]


@pytest.mark.clause(*ContentsMachine.CLAUSES)
@given(data=st.data())
def test_crowded_machine(subject: Any, data: st.DataObject) -> None:
    """Sessions holding data, one or two at a time: drops, evictions and holders agree with the model."""
    run_steps(lambda: CrowdedMachine(subject), data)


@pytest.mark.clause(*ManagerMachine.CLAUSES)
@pytest.mark.parametrize(
    ("max_sessions", "program"),
    [pytest.param(n, p, id=f"{clause}-{i}") for i, (clause, n, p) in enumerate(PROGRAMS)],
)
def test_program(subject: Any, max_sessions: int, program: list[tuple[str, object]]) -> None:
    """A hand-written program replayed with the machine's checks after every call."""
    replay(subject, max_sessions, program)


def _session_with_data(subject: Any, manager: Any, clause: str) -> tuple[Any, Any, Any]:
    """Session 'a' holding a buffer with one tensor, and that tensor as an attribute."""
    held = allocate("cpu", (2, 3))
    with calling(clause, "get_or_create_session('a'), put('frames', buffer), attrs['x'] = t"):
        session = manager.get_or_create_session("a")
        buffer = session.put("frames", subject.make_buffer())
        buffer.append(held.value)
        session.attrs["x"] = held.value
    return session, buffer, held.value


@pytest.mark.clause("DROP-2")
def test_drop_resets_for_holders(subject: Any) -> None:
    """A holder sees the same object cleared: objects registered but not resident, attrs empty."""
    with calling("DROP-2", "make_manager(max_sessions=2, byte_budget=None)"):
        manager = subject.make_manager(max_sessions=2, byte_budget=None)
    session, buffer, _ = _session_with_data(subject, manager, "DROP-2")
    with calling("DROP-2", "drop_session('a')"):
        dropped = manager.drop_session("a")
        seen = (
            session.names(),
            session.get("frames") is buffer,
            buffer.resident,
            list(session.attrs),
        )
    check_equal(dropped, True, "DROP-2", "drop_session('a')", "with 'a' present")
    check_equal(
        seen,
        (["frames"], True, False, []),
        "DROP-2",
        "(names(), get('frames') is the buffer, its resident, list(attrs))",
        "after the drop",
    )


def _holder_view(session: Any, buffer: Any, tensor: Any) -> tuple[bool, bool, int, bool, bool]:
    items = buffer.view()
    first = bool(items) and items[0] is tensor
    return (
        session.get("frames") is buffer,
        buffer.resident,
        len(items),
        first,
        session.attrs.get("x") is tensor,
    )


HOLDER = "(get('frames') is the buffer, its resident, len(view()), view()[0] is t, attrs['x'] is t)"


@pytest.mark.clause("DROP-4", "LRU-4", "LRU-5")
def test_drop_of_evicted_id_leaves_holders_data(subject: Any) -> None:
    """Dropping an id the LRU evicted returns False and leaves the holder's data untouched.

    The eviction itself is checked first, under its own clauses: a subject
    that evicts wrongly stops there, and DROP-4 is reported as not checked.
    """
    with calling("DROP-4", "make_manager(max_sessions=1, byte_budget=None)"):
        manager = subject.make_manager(max_sessions=1, byte_budget=None)
    session, buffer, tensor = _session_with_data(subject, manager, "DROP-4")
    intact = (True, True, 1, True, True)
    with calling("LRU-4", "get_or_create_session('b')"):
        manager.get_or_create_session("b")
        evicted = "a" not in manager
    check_equal(evicted, True, "LRU-4", "'a' not in manager", "after ('b') with max_sessions=1")
    check_equal(_holder_view(session, buffer, tensor), intact, "LRU-5", HOLDER, "after eviction")
    with calling("DROP-4", "drop_session('a')"):
        dropped = manager.drop_session("a")
        seen = _holder_view(session, buffer, tensor)
    check_equal(dropped, False, "DROP-4", "drop_session('a')", "after 'b' evicted it")
    check_equal(seen, intact, "DROP-4", HOLDER, "after drop_session('a') of the evicted 'a'")
