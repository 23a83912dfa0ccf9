"""``conformance._machine.stateful``: ``run_steps`` runs a machine's program inside a
``@given`` test with Hypothesis' own engine, so its programs get Hypothesis' swarm testing
(each program enables a random subset of the rules: long runs of one kind of step), and
calls a machine's ``finish()`` after a program that passed, never after one that failed."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from sessionstate.conformance._machine.stateful import run_steps

RULES = ("hit", "miss", "drop", "raise_cap", "contains")


def _recording_machine(programs: list[list[str]], finished: list[int]) -> type[Any]:
    class Recording(RuleBasedStateMachine):
        """Five rules, always valid, each recording its name."""

        def __init__(self) -> None:
            super().__init__()
            self.steps: list[str] = []
            programs.append(self.steps)

        @rule()
        def hit(self) -> None:
            self.steps.append("hit")

        @rule()
        def miss(self) -> None:
            self.steps.append("miss")

        @rule()
        def drop(self) -> None:
            self.steps.append("drop")

        @rule()
        def raise_cap(self) -> None:
            self.steps.append("raise_cap")

        @rule()
        def contains(self) -> None:
            self.steps.append("contains")

        def finish(self) -> None:
            finished.append(len(self.steps))

    return Recording


def test_programs_enable_a_subset_of_the_rules() -> None:
    """Swarm testing: many programs of 30 steps use only some of five always-valid rules,
    and some run one rule many times in a row (uniform choice would make both rare)."""
    programs: list[list[str]] = []
    machine = _recording_machine(programs, [])

    @settings(max_examples=200, stateful_step_count=30, database=None, derandomize=True)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        run_steps(machine, data)

    run()
    long = [p for p in programs if len(p) >= 20]
    assert len(long) >= 50
    subsets = [p for p in long if len(set(p)) <= 3]
    assert len(subsets) >= len(long) // 5, (len(subsets), len(long))

    def longest_run(steps: list[str]) -> int:
        best = run_length = 1
        for before, after in itertools.pairwise(steps):
            run_length = run_length + 1 if before == after else 1
            best = max(best, run_length)
        return best

    assert max(longest_run(p) for p in long) >= 10


def test_finish_runs_after_a_program_that_passed_only() -> None:
    programs: list[list[str]] = []
    finished: list[int] = []
    base = _recording_machine(programs, finished)

    class FailsOnDrop(base):  # type: ignore[misc, valid-type]
        @rule()
        def drop(self) -> None:
            raise AssertionError("drop failed")

    @settings(max_examples=30, stateful_step_count=10, database=None, derandomize=True)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        run_steps(FailsOnDrop, data)

    with pytest.raises(AssertionError, match="drop failed"):
        run()
    passed = [len(p) for p in programs if "drop" not in p]
    assert finished and set(finished) <= set(passed)
    assert len(finished) <= len(programs) - sum(1 for p in programs if "drop" in p)
