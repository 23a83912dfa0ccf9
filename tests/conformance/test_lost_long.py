"""``conformance._machine.lost_long``: the long ``require_session`` program's steps check each
call as it returns, stay within ``PROGRAM_CALLS``, show the order requires leave through
evictions, and blame a table that differs as ``LostMachine`` does.

The steps are run by hand here, as a program would run them, against the reference and
against the lost_ zoo subjects a sequential program can catch."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance._machine.admit_long import PROGRAM_CALLS
from sessionstate.conformance._machine.lost_long import LongLostMachine
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.sizes import COUNT_BOUND
from sessionstate.fixtures.reference_subject import subject as reference


def _zoo(name: str) -> Any:
    module = __import__(f"sessionstate.fixtures.zoo.{name}", fromlist=["subject"])
    return module.subject


def _machine(subject: Any, cap: int) -> LongLostMachine:
    machine = LongLostMachine(subject)
    machine.make_manager(max_sessions=cap)
    return machine


class TestOnTheReference:
    def test_a_table_of_129_through_every_step(self) -> None:
        machine = _machine(reference, 129)
        machine.newcomers(count=1, reach="through")
        machine.requires_cycling(k=64, times=1025, oldest=True, reverse=True)
        machine.requires_absent(count=300, never=False)  # evicted ids
        machine.drop_spread(count=20, stride=3, offset=7)
        machine.requires_absent(count=20, never=False)  # dropped ids
        machine.requires_absent(count=65, never=True)
        machine.pool_calls([("get_or_create_session", 7), ("require_session", "7"),
                            ("drop_session", None), ("require_session", "")])  # fmt: skip
        machine.finish()
        # 130 newcomers, 7 once 20 were dropped, then 129 at the end: 19 to fill, 110 victims.
        assert machine.created == 130 + 1 + 129
        assert machine.manager.hits == 1025 + 1

    def test_the_opening_is_long_whatever_the_swarm_leaves_on(self) -> None:
        machine = LongLostMachine(reference)
        machine.make_manager(max_sessions=64, opening=True)
        assert machine.calls == 64 + 1024 + 1024 + 256 and machine.created == 64 + 1024
        assert machine.manager.hits == 1024

    def test_a_program_makes_at_most_program_calls(self) -> None:
        machine = _machine(reference, 3)
        machine.newcomers(count=COUNT_BOUND, reach="count")
        machine.requires_absent(count=COUNT_BOUND, never=True)
        assert machine.calls == PROGRAM_CALLS
        machine.requires_absent(count=COUNT_BOUND, never=False)  # nothing left: no call
        assert machine.calls == PROGRAM_CALLS


@pytest.mark.parametrize(
    ("name", "clause"),
    [
        ("lost_hit_no_refresh", "LOST-1"),  # shown by the evictions, blamed by the replay
        ("lost_absent_counts_miss", "LOST-3"),
        ("lost_require_creates", "LOST-2"),
        ("lost_raises_key_error", "LOST-2"),
        ("lost_message_without_id", "LOST-2"),
    ],
)
def test_a_bug_fails_its_clause(name: str, clause: str) -> None:
    machine = _machine(_zoo(name), 65)
    machine.newcomers(count=0, reach="past room")
    with pytest.raises(ClauseFailure) as caught:
        machine.requires_cycling(k=1, times=1, oldest=True, reverse=False)
        machine.requires_absent(count=3, never=True)
        machine.finish()
    assert caught.value.clause == clause, str(caught.value)
