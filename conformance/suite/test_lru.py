"""LRU-*: ordering, eviction and identity (SPEC.md, "LRU: ordering, eviction and identity").

The state machine compares every call with ``conformance._model.manager``; the
programs below are its regression corpus (Hypothesis ``@example`` does not
work for state machines), each a hand-written sequence of calls that once
told a broken subject apart.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._machine.bulk import LargeWorldMachine, RaisingMachine, programs
from sessionstate.conformance._machine.manager import ManagerMachine, OrderMachine, replay
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.checks import check

G, D, C = "get_or_create_session", "drop_session", "contains"

#: (intended clause, max_sessions, program). Each starts with what a more basic
#: bug breaks first (a plain eviction), so a subject fails the program at
#: the clause it actually breaks: a hit-then-miss alone cannot tell LRU-3
#: from an eviction of the most recent session.
PROGRAMS = [
    ("LRU-1", 3, [(G, "a"), (G, "a"), (G, "b"), (G, "a")]),
    ("LRU-2", 3, [(G, "a"), (G, "b"), (G, "c")]),
    ("LRU-3", 2, [(G, "a"), (G, "b"), (G, "c"), (G, "b"), (G, 7), (C, "b"), (C, "c")]),
    ("LRU-4", 1, [(G, "a"), (G, "b"), (C, "a"), (C, "b")]),
    ("LRU-4", 3, [(G, "a"), (G, "b"), (G, "c"), (G, "default"), (G, "a"), (G, "b")]),
    ("LRU-6", 1, [(G, "a"), (G, "b"), (G, "a"), (G, "b")]),
    ("LRU-7", 2, [(G, "a"), (G, "b"), (G, "c"), (G, "a"), (G, "b"), (G, "c")]),
    ("STATS-4", 2, [(G, "a"), (G, "b"), (G, "c"), (C, "b"), (C, "b"), (G, 7), (C, "c")]),
]


@pytest.mark.clause(*ManagerMachine.CLAUSES)
@given(data=st.data())
def test_manager_machine(subject: Any, data: st.DataObject) -> None:
    """Random programs of get_or_create_session, drop_session and `in` agree with the model."""
    run_steps(lambda: ManagerMachine(subject), data)


@pytest.mark.clause(*LargeWorldMachine.CLAUSES)
@settings(max_examples=programs(settings.default.max_examples))  # type: ignore[union-attr]
@given(data=st.data())
def test_large_world_machine(subject: Any, data: st.DataObject) -> None:
    """Caps drawn as sizes (63, 64, 65, 128, ...) and steps of many calls: fills, cycles of
    hits, churn, drops across the table, ids of 255+ characters; each call against the model."""
    run_steps(lambda: LargeWorldMachine(subject), data)


@pytest.mark.clause(*RaisingMachine.CLAUSES)
@settings(max_examples=programs(settings.default.max_examples))  # type: ignore[union-attr]
@given(data=st.data())
def test_raising_machine(subject: Any, data: st.DataObject) -> None:
    """The same with raise_max_sessions among the steps: the raised cap is the one
    eviction uses, and a raise changes nothing else."""
    run_steps(lambda: RaisingMachine(subject), data)


@pytest.mark.clause(*OrderMachine.CLAUSES)
@given(data=st.data())
def test_order_machine(subject: Any, data: st.DataObject) -> None:
    """The same on four plain ids with two or three slots, where LRU order decides most misses."""
    run_steps(lambda: OrderMachine(subject), data)


@pytest.mark.clause(*ManagerMachine.CLAUSES)
@pytest.mark.parametrize(
    ("max_sessions", "program"),
    [pytest.param(n, p, id=f"{clause}-{i}") for i, (clause, n, p) in enumerate(PROGRAMS)],
)
def test_program(subject: Any, max_sessions: int, program: list[tuple[str, object]]) -> None:
    """A hand-written program replayed with the machine's checks after every call."""
    replay(subject, max_sessions, program)


@pytest.mark.clause("LRU-8")
@pytest.mark.parametrize("max_sessions", [0, -1])
def test_non_positive_max_sessions_is_rejected(subject: Any, max_sessions: int) -> None:
    """The constructor raises ValueError mentioning "max_sessions must be positive"."""
    call = f"make_manager(max_sessions={max_sessions}, byte_budget=None)"
    try:
        subject.make_manager(max_sessions=max_sessions, byte_budget=None)
    except ValueError as error:
        check(
            "max_sessions must be positive" in str(error),
            "LRU-8",
            f"{call} raised ValueError({str(error)!r}), but the message should contain "
            "'max_sessions must be positive'",
        )
    except Exception as error:
        check(False, "LRU-8", f"{call} raised {error!r}, but should raise ValueError")
    else:
        check(False, "LRU-8", f"{call} returned a manager, but should raise ValueError")
