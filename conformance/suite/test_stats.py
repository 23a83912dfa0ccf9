"""STATS-*: stats, counters and conservation (SPEC.md, "STATS").

The contents machine checks stats(), len, the counters, conservation and the
bytes after every call; the direct tests pin construction, the purity of each
observer, the shape of stats() with every device in use, and conservation on
its own (the machine compares counters with its model first, so a leak there
is named after the counter's clause, not STATS-5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.manager import (
    STATS_KEYS,
    ContentsMachine,
    check_construction,
)
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance._model import memory
from sessionstate.conformance.checks import calling, check_bytes, check_equal
from sessionstate.conformance.sizes import sizes

OBSERVERS = {
    "in": lambda manager: "b" in manager,  # the least recent: a refresh would save it
    "len": len,
    "stats": lambda manager: manager.stats(),
    "nbytes_by_device": lambda manager: manager.nbytes_by_device(),
}


@pytest.mark.clause(*ContentsMachine.CLAUSES)
@given(data=st.data())
def test_contents_machine(subject: Any, data: st.DataObject) -> None:
    """Sessions holding shared data: stats(), counters and bytes agree with the model."""
    run_steps(lambda: ContentsMachine(subject), data)


@pytest.mark.clause("STATS-1")
@pytest.mark.parametrize(
    # The types a budget can have: None, int (0 and past 32 bits) and float, each as given.
    ("max_sessions", "byte_budget"),
    [(1, None), (64, None), (3, 0), (5, 2**33), (2, 2**30 + 0.5)],
)
def test_construction_stores_arguments(subject: Any, max_sessions: int, byte_budget: Any) -> None:
    """max_sessions and byte_budget are stored as given; hits, misses, evictions start at 0."""
    call = f"make_manager(max_sessions={max_sessions}, byte_budget={byte_budget})"
    with calling("STATS-1", call):
        manager = subject.make_manager(max_sessions=max_sessions, byte_budget=byte_budget)
    check_construction(manager, max_sessions, byte_budget, f"after {call}")


@pytest.mark.clause("STATS-1")
def test_construction_defaults(subject: Any) -> None:
    """With no arguments: max_sessions is DEFAULT_MAX_SESSIONS (64), byte_budget None."""
    with calling("STATS-1", "make_manager()"):
        manager = subject.make_manager()
    check_construction(manager, 64, None, "after make_manager() with no arguments")


def _observed_eviction(subject: Any, observe: Any) -> tuple[object, ...]:
    """Counters after 'b', 'a' and three observations, and which of them a miss on 'c' left.

    'b' is created first, so LRU order differs from sorted order: an observer
    that re-sorts the table by key makes 'a' the victim (STATS-4).
    """
    manager = subject.make_manager(max_sessions=2, byte_budget=None)
    manager.get_or_create_session("b")
    manager.get_or_create_session("a")
    for _ in range(3):
        observe(manager)
    counters = (manager.hits, manager.misses, manager.evictions)
    manager.get_or_create_session("c")
    return counters, "a" in manager, "b" in manager


@pytest.mark.clause("STATS-4")
@pytest.mark.parametrize("observer", list(OBSERVERS))
def test_observer_changes_neither_counters_nor_order(subject: Any, observer: str) -> None:
    """Observing the least recent session changes neither counters nor the next victim.

    Differential: the same calls without the observer are the baseline, so a
    subject that evicts wrongly anyway (LRU-4) does not fail here.
    """
    calls = f"get_or_create_session('b'), ('a'), {observer} x3, ('c')"
    with calling("STATS-4", calls):
        baseline = _observed_eviction(subject, lambda manager: None)
        observed = _observed_eviction(subject, OBSERVERS[observer])
    check_equal(
        observed,
        baseline,
        "STATS-4",
        "((hits, misses, evictions), 'a' in manager, 'b' in manager)",
        f"after {calls}, beside the same calls without {observer}",
    )


@pytest.mark.clause("STATS-2", "STATS-3")
def test_stats_shape_with_every_device(subject: Any) -> None:
    """One buffer per device (and a NumPy array): stats() keys, order, total and per-device bytes."""
    helds = [allocate(d, (2, 3)) for d in reversed(available_devices())]
    helds.append(allocate("cpu", (4,), numpy=True))
    with calling("STATS-2", "get_or_create_session('a'), put('frames', buffer), append(...)"):
        manager = subject.make_manager(max_sessions=2, byte_budget=None)
        buffer = manager.get_or_create_session("a").put("frames", subject.make_buffer())
        for held in helds:
            buffer.append(held.value)
        stats = manager.stats()
    expected = memory.expected_bytes(helds)
    devices = [f"nbytes:{d}" for d in sorted(expected)]
    present = [k for k in stats if k.startswith("nbytes:") and stats[k]]
    check_equal(list(stats)[: len(STATS_KEYS)], list(STATS_KEYS), "STATS-2", "list(stats())[:6]")
    check_equal(present, devices, "STATS-2", "nonzero nbytes:<device> keys in order")
    check_equal(stats["total_nbytes"], sum(expected.values()), "STATS-2", "stats()['total_nbytes']")
    observed = {k.removeprefix("nbytes:"): v for k, v in stats.items() if k.startswith("nbytes:")}
    check_bytes(observed, expected, "STATS-3", "stats() nbytes:<device>", f"holding {helds}")


@dataclass(frozen=True, repr=False)
class Call:
    """One manager call of a conservation program; its repr is the call itself."""

    method: str  # "get_or_create_session" or "drop_session"
    session_id: str

    def __repr__(self) -> str:
        return f"{self.method}({self.session_id!r})"


def _program(max_sessions: int, *steps: str) -> tuple[int, list[Call]]:
    """``"+a"`` is get_or_create_session('a'), ``"-a"`` is drop_session('a')."""
    methods = {"+": "get_or_create_session", "-": "drop_session"}
    return max_sessions, [Call(methods[step[0]], step[1:]) for step in steps]


#: Hand-written programs, each aimed at one way to leak: a drop, an evicting
#: miss, then everything at once (hits, an absent drop, a re-created id).
PROGRAMS = {
    "drop-present": _program(2, "+a", "-a"),
    "evicting-miss": _program(1, "+a", "+b", "+c"),
    "mixed": _program(2, "+b", "+a", "+b", "+c", "-a", "-b", "+a", "-c", "-c", "+b", "+c"),
}

capacities = sizes(1, 3)
calls = st.builds(
    Call, st.sampled_from(("get_or_create_session", "drop_session")), st.sampled_from("abc")
)
programs = sizes(0, 12).flatmap(lambda n: st.lists(calls, min_size=n, max_size=n))


def _check_conservation(subject: Any, max_sessions: int, program: Sequence[Call]) -> None:
    """STATS-5 alone, after every call: misses == len + evictions + successful drops.

    Successful drops are counted from what ``drop_session`` returned, so this
    needs no model of the table: any subject whose counters and table agree
    with each other passes, whatever else it gets wrong.
    """
    done = [f"make_manager(max_sessions={max_sessions}, byte_budget=None)"]
    with calling("STATS-5", done[0]):
        manager = subject.make_manager(max_sessions=max_sessions, byte_budget=None)
    drops = 0
    for call in program:
        with calling("STATS-5", f"{call!r} after {', '.join(done)}"):
            returned = getattr(manager, call.method)(call.session_id)
        drops += call.method == "drop_session" and bool(returned)
        done.append(repr(call))
        with calling("STATS-5", "reading len(manager), manager.misses, manager.evictions"):
            size, misses, evictions = len(manager), manager.misses, manager.evictions
        check_equal(
            misses,
            size + evictions + drops,
            "STATS-5",
            "misses",
            f"len(manager) + evictions + successful drops = {size} + {evictions} + {drops}, "
            f"after {', '.join(done)}",
        )


@pytest.mark.clause("STATS-5")
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_conservation_after_each_call(subject: Any, name: str) -> None:
    """Every session created is resident, evicted or dropped, after every call of a program."""
    max_sessions, program = PROGRAMS[name]
    _check_conservation(subject, max_sessions, program)


@pytest.mark.clause("STATS-5")
@given(max_sessions=capacities, program=programs)
def test_conservation_over_programs(subject: Any, max_sessions: int, program: list[Call]) -> None:
    """The same equation over generated programs on three ids and a cap of 1 to 3."""
    _check_conservation(subject, max_sessions, program)


@pytest.mark.clause("STATS-6")
@pytest.mark.parametrize(
    "max_sessions",
    # Non-whole numbers of the other numeric types too: a check written for float alone
    # (isinstance(value, float)) lets them through, and they compare like 2.5 does.
    [True, False, float("nan"), float("inf"), float("-inf"), 2.5, Fraction(5, 2),
     Decimal("2.5"), np.float32(2.5)],
    ids=repr,
)  # fmt: skip
def test_max_sessions_must_be_a_finite_positive_whole_number(
    subject: Any, max_sessions: object
) -> None:
    """A bool, nan, an infinity or a non-whole float is rejected with TypeError or
    ValueError: each would silently turn eviction off or cap by accident."""
    call = f"make_manager(max_sessions={max_sessions!r})"
    try:
        manager = subject.make_manager(max_sessions=max_sessions)
    except (TypeError, ValueError):
        return
    except Exception as error:
        check_equal(repr(error), "TypeError or ValueError", "STATS-6", f"{call} raised")
    else:
        check_equal(manager.max_sessions, "a TypeError or ValueError", "STATS-6", call)
