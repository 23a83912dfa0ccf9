"""``conformance._machine.admit_long``: the long admission program's steps check each call
as it returns, stay within ``PROGRAM_CALLS``, show a refusing manager's LRU order through
evictions, and name the call that damaged it by bisection on twins.

The steps are run by hand here, as a program would run them, against the reference and
against the admit_ zoo subjects whose bug the order or a per-call check shows."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance._machine.admit_long import (
    PROGRAM_CALLS,
    Lazy,
    LongAdmissionMachine,
)
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.sizes import COUNT_BOUND
from sessionstate.fixtures.reference_subject import subject as reference


class Drawn:
    """A ``data`` whose every draw is ``value``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def draw(self, strategy: object, label: str = "") -> int:
        return self.value


def _zoo(name: str) -> Any:
    module = __import__(f"sessionstate.fixtures.zoo.{name}", fromlist=["subject"])
    return module.subject


def _machine(subject: Any, cap: int, flag: bool | None = False) -> LongAdmissionMachine:
    machine = LongAdmissionMachine(subject)
    machine.make_manager(max_sessions=cap, flag=flag)
    machine.check_at_rest()
    return machine


def _fails(clause: str, *steps: Any) -> None:
    with pytest.raises(ClauseFailure) as caught:
        for step in steps:
            step()
    assert caught.value.clause == clause, str(caught.value)


class TestOnTheReference:
    def test_a_refusing_table_of_65_through_every_step(self) -> None:
        machine = _machine(reference, 65)
        machine.newcomers(count=3, reach="past room")  # 65 admitted, 3 refused
        machine.check_at_rest()
        assert len(machine.manager) == 65 and machine.manager.misses == 65
        machine.hits_cycling(k=8, times=1025, oldest=True, reverse=True)
        machine.readmits(count=100, oldest=False)
        machine.drop_spread(count=10, stride=3, offset=5)
        machine.pool_calls([(False, "a"), (False, 7), (False, "7"), (True, None), (True, "")])
        machine.raise_max_sessions(Drawn(129))
        machine.newcomers(count=1, reach="past room")
        machine.set_evict_when_full(True)
        machine.check_at_rest()
        machine.finish()
        assert machine.admitted > 200 and machine.manager.max_sessions == 129
        assert machine.manager.evictions == 129  # finish evicted the whole table, in order

    def test_an_evicting_table_by_default(self) -> None:
        machine = _machine(reference, 64, flag=None)
        machine.newcomers(count=200, reach="count")
        machine.hits_cycling(k=3, times=10, oldest=True, reverse=False)
        machine.set_evict_when_full(False)
        machine.newcomers(count=5, reach="count")  # refused
        machine.raise_max_sessions(Drawn(0))  # ValueError, the cap kept
        machine.check_at_rest()
        machine.finish()

    def test_a_program_makes_at_most_program_calls(self) -> None:
        machine = _machine(reference, 2)
        for _ in range(3):
            machine.newcomers(count=COUNT_BOUND, reach="count")
            machine.readmits(count=COUNT_BOUND, oldest=True)
        assert len(machine.history) == PROGRAM_CALLS
        machine.finish()
        assert len(machine.history) == PROGRAM_CALLS + 1 + 2  # the switch, 2 victims

    @pytest.mark.parametrize("flag", [False, None], ids=["refusing", "evicting"])
    def test_the_opening_is_long_whatever_the_swarm_leaves_on(self, flag: bool | None) -> None:
        machine = LongAdmissionMachine(reference)
        machine.make_manager(max_sessions=8, flag=flag, opening=True)
        machine.check_at_rest()
        assert len(machine.history) == 8 + 1024 + 2 * 512
        assert machine.admitted == (8 + 512 if flag is False else 8 + 1024 + 512)

    def test_text_is_made_only_when_shown(self) -> None:
        made: list[int] = []
        text = Lazy(lambda: str(made.append(1) or "call()"))
        assert made == [] and f"{text}" == "call()" and made == [1]

    def test_the_order_is_right_on_a_twin_of_every_prefix(self) -> None:
        machine = _machine(reference, 3)
        machine.newcomers(count=1, reach="past room")
        machine.hits_cycling(k=3, times=2, oldest=True, reverse=False)
        assert [machine._twin_damage(n) for n in range(len(machine.history) + 1)] == [None] * 7
        assert machine.order_clause("ADMIT-10") == "ADMIT-10"  # no call to blame


@pytest.mark.parametrize(
    ("name", "flag", "steps", "clause"),
    [
        # A refusal touches the least recent session: the end's evictions show it, and the
        # bisection blames the refusal, not the eviction that showed it.
        ("admit_refusal_touches_lru", False, [("newcomers", (1, "past room"))], "ADMIT-2"),
        # Hits on a full refusing table are refused: the call itself fails.
        ("admit_refuses_hits_when_full", False, [("newcomers", (0, "past room")),
                                                  ("hits_cycling", (1, 1, True, False))], "ADMIT-4"),
        ("admit_drop_frees_nothing", False, [("newcomers", (0, "past room")),
                                             ("readmits", (1, True))], "ADMIT-5"),
        ("admit_refusal_counts_miss", False, [("newcomers", (1, "past room"))], "ADMIT-3"),
        ("admit_default_refuses", None, [("newcomers", (1, "past room"))], "ADMIT-10"),
    ],
)  # fmt: skip
def test_a_bug_fails_its_clause(
    name: str, flag: bool | None, steps: list[tuple[str, tuple[Any, ...]]], clause: str
) -> None:
    def run() -> None:
        machine = _machine(_zoo(name), 3, flag)  # a default that refuses fails here already
        for method, arguments in steps:
            getattr(machine, method)(*arguments)
            machine.check_at_rest()
        machine.finish()

    _fails(clause, run)


def test_a_raise_that_rebuilds_the_order_is_blamed_on_admit_6() -> None:
    """Evicting by default: hits reorder a full table, a raise puts it back in creation order,
    and the misses that fill the raised cap and evict show it; bisection finds the raise."""
    machine = _machine(_zoo("admit_raise_rebuilds_order"), 4, flag=None)
    machine.newcomers(count=4, reach="count")
    machine.hits_cycling(k=2, times=2, oldest=True, reverse=False)
    machine.raise_max_sessions(Drawn(5))
    _fails("ADMIT-6", lambda: machine.newcomers(count=2, reach="past room"), machine.finish)


def test_a_flag_read_once_fails_admit_11_at_the_end() -> None:
    """The end switches a refusing manager to evicting: one that read the flag once refuses."""
    machine = _machine(_zoo("admit_flag_read_once"), 2)
    machine.newcomers(count=2, reach="count")
    _fails("ADMIT-11", machine.finish)
