"""The LRU machines and the LOCK histories reach what lazily-kept recency and racing
admission get wrong (``bench/reach_runs.py``; the shares are published in BENCHMARKS.md).

The program counts are derandomized, so they are exact for this code; the floors sit
well under them, so a change of strategy that loses the reach fails here rather than
letting a lazily-deleted heap's bugs pass silently. The history counts depend on thread
timing; their floors sit far under the shares measured on a loaded machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sessionstate.conformance._machine.manager import ManagerMachine, OrderMachine
from sessionstate.fixtures.reference_subject import subject

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import reach_runs
import threshold_reach

G, C = "get_or_create_session", "counters"


def _counters(evictions: int) -> tuple[str, None, dict[str, int]]:
    return (C, None, {"hits": 0, "misses": 0, "evictions": evictions})


class TestLongRunThenEvictions:
    def test_sixteen_hits_on_three_sessions_then_two_evictions(self) -> None:
        run = [(G, k, True) for k in "abc" * 5 + "a"]
        trace = [_counters(0), *run, (G, "d", False), _counters(1), (G, "e", False), _counters(2)]
        assert reach_runs.long_run_then_evictions(trace)

    def test_fifteen_hits_are_not_a_long_run(self) -> None:
        run = [(G, "a", True)] * 15
        trace = [*run, (G, "d", False), _counters(1), (G, "e", False), _counters(2)]
        assert not reach_runs.long_run_then_evictions(trace)

    def test_four_sessions_are_not_few(self) -> None:
        run = [(G, k, True) for k in "abcd" * 4]
        trace = [*run, (G, "e", False), _counters(2)]
        assert not reach_runs.long_run_then_evictions(trace)

    def test_one_eviction_after_the_run_is_not_a_burst(self) -> None:
        trace = [*[(G, "a", True)] * 16, (G, "d", False), _counters(1)]
        assert not reach_runs.long_run_then_evictions(trace)

    def test_evictions_before_the_run_do_not_count(self) -> None:
        trace = [_counters(5), *[(G, "a", True)] * 16, (G, "d", False), _counters(6)]
        assert not reach_runs.long_run_then_evictions(trace)


@pytest.mark.parametrize(
    ("machine", "profile", "floor"),
    [
        (ManagerMachine, {"max_examples": 60, "stateful_step_count": 30}, 0.25),
        (OrderMachine, {"max_examples": 60, "stateful_step_count": 30}, 0.15),
        (OrderMachine, {"max_examples": 15, "stateful_step_count": 20}, 0.1),
    ],
)
def test_lru_programs_reach_long_runs_then_evictions(
    machine: type[ManagerMachine], profile: dict[str, int], floor: float
) -> None:
    """At the ci (and, for the order machine, quick) profile's sizes, a share of programs
    holds 16 hits on at most 3 sessions followed by 2 evictions."""
    reached, programs = reach_runs.program_reach(machine, subject, **profile)
    assert programs >= profile["max_examples"]
    assert reached / programs >= floor, (reached, programs)


@pytest.mark.parametrize(
    ("kind", "floor"), [("LOCK-5 at capacity", 0.4), ("LOCK-6 admission", 0.4)]
)
def test_histories_overlap_a_hit_and_a_miss_at_capacity(kind: str, floor: float) -> None:
    """Threaded histories at capacity put a hit and a miss on a full table side by side."""
    reached, _, histories = reach_runs.history_reach(subject, kind, 20)
    assert reached / histories >= floor, (reached, histories)


def test_admission_histories_race_two_newcomers_for_one_slot() -> None:
    """Most LOCK-6 histories hold a miss taking the last free slot beside a refused miss on
    another id: where a room check made outside the lock admits both."""
    _, racing, histories = reach_runs.history_reach(subject, "LOCK-6 admission", 20)
    assert racing / histories >= 0.6, (racing, histories)


class TestThresholds:
    """``bench/threshold_reach.py``: which size thresholds a program's trace crossed."""

    def test_a_65th_session_is_a_miss_with_64_resident(self) -> None:
        trace = [("len", None, 64), (G, "x", False)]
        assert "65th session" in threshold_reach.crossed(trace, [64])
        assert "65th session" not in threshold_reach.crossed(
            [("len", None, 63), (G, "x", False)], [64]
        )

    def test_a_cap_above_128_counts_only_once_the_table_holds_129(self) -> None:
        assert "cap above 128 in use" in threshold_reach.crossed([("len", None, 129)], [1, 129])
        assert "cap above 128 in use" not in threshold_reach.crossed([("len", None, 128)], [200])

    def test_a_256_character_prefix_needs_two_distinct_ids(self) -> None:
        one, two = "k" * 256 + "1", "k" * 256 + "2"
        assert "256-character prefix" in threshold_reach.crossed(
            [(G, one, False), (G, two, False)], [2]
        )
        assert "256-character prefix" not in threshold_reach.crossed(
            [(G, one, False), (G, one, True)], [2]
        )

    def test_1024_lookups_then_an_eviction(self) -> None:
        lookups = [(G, "a", True)] * 1025
        assert "1,024 lookups" in threshold_reach.crossed([*lookups, _counters(1)], [1])
        assert "1,024 lookups" not in threshold_reach.crossed([_counters(1), *lookups], [1])

    def test_a_raise_then_an_eviction(self) -> None:
        trace = [("raise_max_sessions", 5, True), _counters(1)]
        assert "raise then eviction" in threshold_reach.crossed(trace, [4, 5])
        assert "raise then eviction" not in threshold_reach.crossed(trace[:1], [4, 5])


def test_the_quick_run_crosses_every_threshold() -> None:
    """The large-world machines at the quick profile's sizes, derandomized as the suite runs
    them, cross every threshold; BENCHMARKS.md publishes the shares over random seeds."""
    found = threshold_reach.run_reach(subject, threshold_reach.PROFILES["quick"], None)
    assert found == set(threshold_reach.THRESHOLDS)
