"""``conformance._machine.bulk``: the large-world machine's steps cross the thresholds they
are drawn for, check each call as it returns, and name the clause a size bug breaks.

The steps are run by hand here, as a program would run them, against the reference and
against the zoo subjects whose bug lives only past a threshold."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance._machine.bulk import (
    CAP_BOUND,
    LargeWorldMachine,
    RaisingMachine,
    raise_reorders,
)
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.sizes import COUNT_BOUND
from sessionstate.fixtures.reference_subject import subject as reference
from sessionstate.fixtures.zoo import load_entry


def _zoo(name: str) -> Any:
    module = __import__(f"sessionstate.fixtures.zoo.{name}", fromlist=["subject"])
    return module.subject


def _machine(subject: Any, cap: int, kind: type[LargeWorldMachine] = LargeWorldMachine) -> Any:
    machine = kind(subject)
    machine.make_manager(max_sessions=cap)
    machine.check_at_rest()
    return machine


def _fails(clause: str, step: Any) -> None:
    with pytest.raises(ClauseFailure) as caught:
        step()
    assert caught.value.clause == clause, str(caught.value)


class TestOnTheReference:
    def test_a_fill_past_the_default_cap_evicts_in_lru_order(self) -> None:
        machine = _machine(reference, 64)
        machine.newcomers(count=1, reach="past room")
        machine.check_at_rest()
        assert len(machine.manager) == 64 and machine.manager.evictions == 1
        machine.hits_cycling(k=8, times=1025, oldest=True, reverse=True)
        machine.newcomers(count=4096, reach="through")
        machine.check_at_rest()
        machine.finish()
        assert machine.manager.hits == 1025

    def test_churn_and_drops_across_the_table(self) -> None:
        machine = _machine(reference, 129)
        machine.newcomers(count=200, reach="count")
        machine.churn(count=65)
        machine.drop_spread(count=40, stride=3, offset=5)
        machine.check_at_rest()
        # The first churn's miss, on a full table, evicts one resident: 128, then 40 drops.
        assert len(machine.manager) == 128 - 40
        machine.finish()

    def test_ids_of_a_long_shared_prefix_are_distinct_sessions(self) -> None:
        machine = _machine(reference, 3)
        machine.long_ids(length=65_536, count=5, char="\U0010ffff")
        machine.check_at_rest()
        assert machine.manager.misses == 5 and machine.manager.hits == 3  # the last 3 stay

    def test_a_raise_inside_a_program(self) -> None:
        machine = _machine(reference, 2, RaisingMachine)
        machine.newcomers(count=2, reach="count")

        class Drawn:
            def draw(self, strategy: object, label: str = "") -> int:
                return 130

        machine.raise_max_sessions(data=Drawn(), touch_first=False, fill=True)
        # fill: the 128 newcomers that fill the room, then one that evicts the oldest
        assert len(machine.manager) == 130 and machine.manager.max_sessions == 130
        assert machine.manager.evictions == 1 and machine.manager.misses == 2 + 129
        machine.finish()

    def test_a_raise_that_did_not_take_effect_fills_nothing(self) -> None:
        machine = _machine(reference, 4, RaisingMachine)

        class Drawn:
            def draw(self, strategy: object, label: str = "") -> int:
                return 3

        machine.raise_max_sessions(data=Drawn(), touch_first=True, fill=True)
        assert machine.manager.misses == 0 and machine.manager.max_sessions == 4

    def test_the_opening_raises_then_evicts_past_the_raised_cap(self) -> None:
        machine = RaisingMachine(reference)
        machine.make_manager(max_sessions=3, opening=True, step=2)
        machine.check_at_rest()
        # 3 to fill the table, a hit on the oldest, the raise to 5, 2 to fill, 1 past
        assert machine.manager.max_sessions == 5 and len(machine.manager) == 5
        assert (machine.manager.hits, machine.manager.misses) == (1, 6)
        assert machine.manager.evictions == 1
        assert "n1" in machine.manager and "n2" not in machine.manager  # n1 was hit
        machine.finish()

    def test_the_caps_reach_past_a_byte_and_the_counts_past_4096(self) -> None:
        assert CAP_BOUND >= 2**10 and COUNT_BOUND >= 2**12

    def test_the_reference_raise_keeps_the_order(self) -> None:
        assert raise_reorders(reference) is False


@pytest.mark.parametrize(
    ("name", "cap", "steps"),
    [
        ("lru_cap_signed_byte", 129, [("newcomers", {"count": 2, "reach": "count"})]),
        ("key_truncated_255", 8, [("long_ids", {"length": 255, "count": 2, "char": "k"})]),
        ("stats_sessions_first_chunk", 65, [("newcomers", {"count": 65, "reach": "count"})]),
        (
            "lru_slot_chunk_growth",
            65,
            [
                ("newcomers", {"count": 63, "reach": "count"}),
                ("hits_cycling", {"k": 1, "times": 1, "oldest": True, "reverse": False}),
                ("newcomers", {"count": 2, "reach": "count"}),
                ("finish", {}),
            ],
        ),
        (
            "lru_compaction_every_1024",
            4,
            [
                ("newcomers", {"count": 4, "reach": "count"}),
                ("hits_cycling", {"k": 1, "times": 1020, "oldest": True, "reverse": False}),
                ("finish", {}),
            ],
        ),
    ],
)
def test_a_bug_past_a_threshold_fails_its_clause(
    name: str, cap: int, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    """Below its threshold the subject passes; the step that crosses it fails its clause."""
    machine = _machine(_zoo(name), cap)
    (clause,) = load_entry(name).kills

    def run() -> None:
        for method, arguments in steps:
            getattr(machine, method)(**arguments)
            if method != "finish":
                machine.check_at_rest()

    _fails(clause, run)


def test_a_raise_that_rebuilds_the_order_is_blamed_on_admit_6() -> None:
    subject = _zoo("admit_raise_rebuilds_order")
    assert raise_reorders(subject) is True
    machine = _machine(subject, 4, RaisingMachine)
    machine.newcomers(count=4, reach="count")
    machine.hits_cycling(k=2, times=2, oldest=True, reverse=False)

    class Drawn:
        def draw(self, strategy: object, label: str = "") -> int:
            return 5

    machine.raise_max_sessions(data=Drawn(), touch_first=False, fill=False)
    _fails("ADMIT-6", machine.finish)
