"""ADMIT-*: admission control (SPEC.md, "ADMIT: admission control").

Needs the ``admission`` capability (skipped otherwise, from the clauses' ``Requires:``).
Each clause has a short scripted test; two state machines from
``sessionstate.conformance._machine.admit`` then mix every call, checked against the model,
and one long program (``_machine.admit_long``) runs thousands of calls on a table of any size.
A session is *marked* with ``attrs["mark"] = key`` when admitted, so a later reset or
replacement of it shows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._machine.admit import (
    ADMIT_CLAUSES,
    CapLock,
    DefaultManagerMachine,
    RefusingManagerMachine,
    Same,
    admit,
    check_eviction_order,
    check_marks,
    counters,
    make_manager,
    non_positive,
    outcome_of,
    refuse,
    refusing_manager,
    set_evict_when_full,
)
from sessionstate.conformance._machine.admit_long import LongAdmissionMachine
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.checks import calling, check, check_equal
from sessionstate.conformance.strategies import TRICKY_SESSION_IDS


@pytest.mark.clause("ADMIT-1")
# 300 lies above CPython's small-int cache: a fullness test written `len(t) is cap` passes at 3.
@pytest.mark.parametrize("max_sessions", [1, 3, 300])
def test_refuses_a_miss_when_full(subject: Any, max_sessions: int) -> None:
    """Below the cap a miss is admitted; at the cap it raises, naming the normalised key
    as upstream does, ``repr(key)`` (ids with quotes, backslashes, control characters
    and non-ASCII text included), or as ``'<key>'`` verbatim."""
    manager = refusing_manager(subject, max_sessions)
    admit(manager, *[f"s{n}" for n in range(max_sessions)])
    for session_id in ("x", 7, None, "", *TRICKY_SESSION_IDS):
        refuse(manager, session_id, "ADMIT-1", f"{max_sessions} sessions, evict_when_full=False")


@pytest.mark.clause("ADMIT-2", "ADMIT-1", "ADMIT-4")
def test_refusal_leaves_the_table(subject: Any) -> None:
    """Two refusals leave the sessions, their contents and their LRU order b, c, a."""
    manager = refusing_manager(subject, 3)
    sessions = admit(manager, "a", "b", "c")
    with calling("ADMIT-4", "get_or_create_session('a')"):
        manager.get_or_create_session("a")
    when = "after refusing 'd' and 7 with table ['b', 'c', 'a']"
    for session_id in ("d", 7):
        refuse(manager, session_id, "ADMIT-1", "table ['b', 'c', 'a'], max_sessions=3")
    check_equal(len(manager), 3, "ADMIT-2", "len(manager)", when)
    check_equal(manager.evictions, 0, "ADMIT-2", "evictions", when)
    check_equal(
        [k for k in ("d", "7") if k in manager], [], "ADMIT-2", "refused ids in manager", when
    )
    check_marks(sessions, "ADMIT-2", when)
    check_eviction_order(manager, ["b", "c", "a"], "ADMIT-2", when)


@pytest.mark.clause("ADMIT-3", "ADMIT-1", "ADMIT-4")
def test_refused_miss_counts_in_no_counter(subject: Any) -> None:
    """Refusals leave hits, misses, evictions and their stats() keys as they were."""
    manager = refusing_manager(subject, 2)
    admit(manager, "a", "b")
    with calling("ADMIT-4", "get_or_create_session('a')"):
        manager.get_or_create_session("a")
    for session_id in ("c", "c", None):
        refuse(manager, session_id, "ADMIT-1", "table ['b', 'a'], max_sessions=2")
    when = "after 1 hit, 2 misses and 3 refusals"
    check_equal(counters(manager), (1, 2, 0), "ADMIT-3", "(hits, misses, evictions)", when)
    with calling("ADMIT-3", "stats()"):
        stats = manager.stats()
    in_stats = (stats["hits"], stats["misses"], stats["evictions"])
    check_equal(in_stats, (1, 2, 0), "ADMIT-3", "stats() (hits, misses, evictions)", when)


@pytest.mark.clause("ADMIT-4", "ADMIT-1")
def test_hits_are_served_when_full(subject: Any) -> None:
    """A full refusing manager returns the same sessions, counts hits and reorders them."""
    manager = refusing_manager(subject, 2)
    sessions = admit(manager, "a", "b")
    when = "table full, max_sessions=2, evict_when_full=False"
    for session_id in ["a", "c", "b", "a"]:
        if session_id == "c":
            refuse(manager, "c", "ADMIT-1", when)
            continue
        call = f"get_or_create_session({session_id!r})"
        observed = outcome_of(partial(manager.get_or_create_session, session_id))
        check_equal(observed, Same(sessions[session_id]), "ADMIT-4", call, when)
    check_equal(manager.hits, 3, "ADMIT-4", "hits", f"after 3 hits, {when}")
    check_eviction_order(manager, ["b", "a"], "ADMIT-4", "after hits on 'a', 'b', 'a'")


@pytest.mark.clause("ADMIT-5", "ADMIT-1")
def test_drop_readmits(subject: Any) -> None:
    """A successful drop frees one slot for a new, empty session; an absent id frees none."""
    manager = refusing_manager(subject, 2)
    admit(manager, "a", "b")
    refuse(manager, "c", "ADMIT-1", "table ['a', 'b'], max_sessions=2")
    for session_id, dropped in (("c", False), ("a", True)):
        call = f"drop_session({session_id!r})"
        with calling("ADMIT-5", call):
            observed = manager.drop_session(session_id)
        check_equal(observed, dropped, "ADMIT-5", call, "table ['a', 'b'], max_sessions=2")
        if not dropped:
            refuse(manager, "c", "ADMIT-5", f"after {call} of an absent id")
    when = "after drop_session('a') with table ['a', 'b'], max_sessions=2"
    misses = manager.misses
    with calling("ADMIT-5", "get_or_create_session('c')"):
        new = manager.get_or_create_session("c")
        contents = (list(new.names()), dict(new.attrs))
    check_equal(contents, ([], {}), "ADMIT-5", "(names(), attrs) of session 'c'", when)
    check_equal(manager.misses - misses, 1, "ADMIT-5", "misses counted by the miss", when)
    check_equal(["b" in manager, "c" in manager], [True, True], "ADMIT-5", "['b', 'c'] in", when)
    refuse(manager, "d", "ADMIT-5", "table ['b', 'c'] full again")


@pytest.mark.clause("ADMIT-6")
@pytest.mark.parametrize(("new", "raised"), [(4, True), (3, False), (2, False), (1, False)])
def test_raise_max_sessions_only_raises(subject: Any, new: int, raised: bool) -> None:
    """Only a higher cap is taken; an equal or lower one is refused with False, changing nothing."""
    manager = refusing_manager(subject, 3)
    admit(manager, "a", "b", "c")
    call, cap = f"raise_max_sessions({new})", new if raised else 3
    observed = outcome_of(lambda: manager.raise_max_sessions(new))
    check_equal(observed, raised, "ADMIT-6", call, "max_sessions=3")
    with calling("ADMIT-6", "stats()"):
        stats = manager.stats()
    check_equal(manager.max_sessions, cap, "ADMIT-6", "max_sessions", f"after {call}")
    check_equal(stats["max_sessions"], cap, "ADMIT-6", 'stats()["max_sessions"]', f"after {call}")
    state = (stats["sessions"], counters(manager))
    check_equal(state, (3, (0, 3, 0)), "ADMIT-6", "(sessions, counters)", f"after {call}")


@pytest.mark.clause("ADMIT-7")
@pytest.mark.parametrize("new", [0, -1])
@pytest.mark.parametrize("refusing", [True, False], ids=["refusing", "default"])
def test_raise_max_sessions_rejects_non_positive(subject: Any, new: int, refusing: bool) -> None:
    """n <= 0 raises ValueError("max_sessions must be positive") and keeps the cap."""
    manager = refusing_manager(subject, 2) if refusing else make_manager(subject, 2)
    call = f"raise_max_sessions({new})"
    observed = outcome_of(lambda: manager.raise_max_sessions(new))
    check_equal(observed, non_positive(), "ADMIT-7", call, "max_sessions=2")
    check_equal(manager.max_sessions, 2, "ADMIT-7", "max_sessions", f"after {call}")


@pytest.mark.clause("ADMIT-8", "ADMIT-1", "ADMIT-6")
def test_raised_cap_admits_more(subject: Any) -> None:
    """From 2 to 4: two more sessions are admitted without eviction, the fifth is refused."""
    manager = refusing_manager(subject, 2)
    admit(manager, "a", "b")
    refuse(manager, "c", "ADMIT-1", "table ['a', 'b'], max_sessions=2")
    observed = outcome_of(lambda: manager.raise_max_sessions(4))
    check_equal(observed, True, "ADMIT-6", "raise_max_sessions(4)", "max_sessions=2")
    admit(manager, "c", "d", clause="ADMIT-8")
    when = "after raise_max_sessions(4) and admitting 'c', 'd'"
    present = [key in manager for key in ("a", "b", "c", "d")]
    check_equal(present, [True] * 4, "ADMIT-8", "['a', 'b', 'c', 'd'] in manager", when)
    check_equal((len(manager), manager.evictions), (4, 0), "ADMIT-8", "(len, evictions)", when)
    refuse(manager, "e", "ADMIT-8", f"{when}: table full at the raised cap 4")


@pytest.mark.clause("ADMIT-9")
def test_conservation_with_refusals(subject: Any) -> None:
    """misses == len + evictions + drops after each call of a scripted mixed history."""
    manager = refusing_manager(subject, 2)
    steps: list[tuple[str, object]] = [
        ("get", "a"), ("get", "b"), ("get", "c"), ("drop", "a"), ("get", "c"), ("get", None),
        ("raise", 3), ("get", None), ("get", "e"), ("get", "b"), ("drop", "x"), ("drop", "b"),
    ]  # fmt: skip
    drops = 0
    for name, arg in steps:
        call = f"{name}({arg!r})"
        if name == "get":
            outcome_of(partial(manager.get_or_create_session, arg))
        elif name == "drop":
            with calling("ADMIT-9", call):
                drops += bool(manager.drop_session(arg))
        else:
            outcome_of(partial(manager.raise_max_sessions, arg))
        total = len(manager) + manager.evictions + drops
        check_equal(
            manager.misses, total, "ADMIT-9", "misses", f"len + evictions + drops, after {call}"
        )


@pytest.mark.clause("ADMIT-10")
@pytest.mark.parametrize("kwargs", [{}, {"evict_when_full": True}], ids=["default", "true"])
def test_default_keeps_evicting(subject: Any, kwargs: dict[str, bool]) -> None:
    """An evicting manager evicts the least recently used, and evicts later after a raise."""
    manager = make_manager(subject, 2, **kwargs)
    when = f"max_sessions=2, {kwargs or 'evict_when_full omitted'}"
    with calling("ADMIT-10", "manager.evict_when_full"):
        flag = manager.evict_when_full
    check_equal(flag, True, "ADMIT-10", "evict_when_full", when)
    admit(manager, "a", "b", clause="ADMIT-10")
    with calling("ADMIT-10", "get_or_create_session('a')"):
        manager.get_or_create_session("a")
    admit(manager, "c", clause="ADMIT-10")
    present = [key in manager for key in ("a", "b", "c")]
    check_equal(
        present, [True, False, True], "ADMIT-10", "['a', 'b', 'c'] in", f"a, b, a, c; {when}"
    )
    check_equal(counters(manager), (1, 3, 1), "ADMIT-10", "(hits, misses, evictions)", when)
    outcome_of(lambda: manager.raise_max_sessions(3))
    admit(manager, "d", clause="ADMIT-10")
    when = "after raise_max_sessions(3) and a miss"
    check_equal((len(manager), manager.evictions), (3, 1), "ADMIT-10", "(len, evictions)", when)


@pytest.mark.clause("ADMIT-11")
def test_evict_when_full_is_a_live_attribute(subject: Any) -> None:
    """False is stored; setting True evicts at the next miss, setting False refuses again."""
    manager = refusing_manager(subject, 1)
    with calling("ADMIT-11", "manager.evict_when_full"):
        flag = manager.evict_when_full
    check_equal(flag, False, "ADMIT-11", "evict_when_full", "given False")
    admit(manager, "a")
    set_evict_when_full(manager, True)
    admit(manager, "b", clause="ADMIT-11")
    when = "after evict_when_full = True and a miss, max_sessions=1"
    check_equal(["a" in manager, "b" in manager], [False, True], "ADMIT-11", "['a', 'b'] in", when)
    set_evict_when_full(manager, False)
    refuse(manager, "c", "ADMIT-11", "after evict_when_full = False, table ['b']")


@pytest.mark.clause("ADMIT-12", "ADMIT-1", "ADMIT-6")
def test_admission_is_safe_under_the_lock(subject: Any) -> None:
    """A refusal releases the lock; raise_max_sessions writes the cap while holding it."""
    lock = CapLock()
    manager = make_manager(subject, 2, lock_factory=lambda: lock, evict_when_full=False)
    lock.manager = manager
    admit(manager, "a", "b")
    refuse(manager, "c", "ADMIT-1", "table ['a', 'b'], max_sessions=2")
    with calling("ADMIT-12", "len(manager) after a refusal"):
        len(manager)
    lock.spans.clear()
    observed = outcome_of(lambda: manager.raise_max_sessions(4))
    check_equal(observed, True, "ADMIT-6", "raise_max_sessions(4)", "max_sessions=2")
    check(
        (2, 4) in lock.spans,
        "ADMIT-12",
        f"raise_max_sessions(4) changed max_sessions from 2 to 4 outside the lock (held spans saw {lock.spans})",
    )


@pytest.mark.clause(*ADMIT_CLAUSES)
@given(data=st.data())
def test_refusing_manager_machine(subject: Any, data: st.DataObject) -> None:
    """Every call on a manager built with evict_when_full=False agrees with the model."""
    run_steps(lambda: RefusingManagerMachine(subject), data)


@pytest.mark.clause(*ADMIT_CLAUSES)
@given(data=st.data())
def test_default_manager_machine(subject: Any, data: st.DataObject) -> None:
    """Every call on a manager built without evict_when_full agrees with the model."""
    run_steps(lambda: DefaultManagerMachine(subject), data)


@pytest.mark.clause(*LongAdmissionMachine.CLAUSES)
@settings(max_examples=max(2, settings.default.max_examples // 20))  # type: ignore[union-attr]
@given(data=st.data())
def test_long_program(subject: Any, data: st.DataObject) -> None:
    """Thousands of calls on one refusing or evicting table of any size (hundreds of
    sessions admitted, refused, dropped, evicted; raises, the flag switched), each checked
    against the model as it returns; at the end every session is evicted in LRU order. (The
    first program Hypothesis runs is its simplest; the others are drawn.)"""
    run_steps(lambda: LongAdmissionMachine(subject), data)
