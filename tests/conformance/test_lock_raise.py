"""Threads raising the cap (``conformance/_machine/lock_raise.py``): the scripts, the lock
that counts per thread, the wiring checks and their order, the blame of a history that only
stale comparisons explain, and what the histories report for the reference and for a subject
with one raise bug each."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from sessionstate.conformance._harness.supervision.thread_deadline import (
    InFlight,
    run_threads_within,
)
from sessionstate.conformance._machine.lock import MAX_SESSIONS
from sessionstate.conformance._machine.lock_raise import (
    FAR_CAP,
    NON_POSITIVE,
    RAISE_KEYS,
    RAISES,
    WiredLock,
    blame_raises,
    check_wiring,
    first_failure,
    perform_raising,
    raise_scripts,
    record_raise_history,
    stale_raises,
)
from sessionstate.conformance._model.linearizability import (
    REFUSED,
    VALUE_ERROR,
    Call,
    LruModel,
    linearize,
)
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.fixtures.reference_subject import subject as reference
from sessionstate.fixtures.zoo import (
    admit_raise_checked_outside,
    admit_raise_unlocked,
    lock_raise_swaps_lock,
)


def raise_call(n: int, result: Any, invoked: int, returned: int, thread: str = "A") -> Call:
    return Call(thread, "raise_max_sessions", (n,), result, invoked, returned)


def read_cap(result: int, invoked: int, returned: int) -> Call:
    return Call("S", "max_sessions", (), result, invoked, returned)


class TestScripts:
    def test_setup_fills_the_table_and_two_raises_open_the_threads(self) -> None:
        for n in range(50):
            setup, scripts, epilogue = raise_scripts(f"seed/{n}")
            assert [m for m, _ in setup] == ["get_or_create_session"] * MAX_SESSIONS
            assert len({args for _, args in setup}) == MAX_SESSIONS
            assert 3 <= len(scripts) <= 4 and all(3 <= len(s) <= 5 for s in scripts)
            (first, (n0,)), (second, (n1,)) = scripts[0][0], scripts[1][0]
            assert (first, second) == ("raise_max_sessions", "raise_max_sessions")
            assert n0 in RAISES[1:] and n1 in RAISES + NON_POSITIVE
            raised = [a[0] for s in scripts for m, a in s if m == "raise_max_sessions"]
            assert set(raised) <= set(RAISES + NON_POSITIVE)
            assert epilogue[0] == ("max_sessions", ()) and epilogue[-1] == ("stats", ())
            assert [a for _, a in epilogue[1:-1]] == [(key,) for key in RAISE_KEYS]

    def test_one_seed_one_script_and_the_pair_often_shares_its_n(self) -> None:
        assert raise_scripts("seed/5") == raise_scripts("seed/5")
        pairs = [raise_scripts(f"seed/{n}")[1] for n in range(200)]
        same = sum(s[0][0] == s[1][0] for s in pairs)
        assert 80 <= same <= 140  # half the time by design, a few more by chance

    def test_sizes_sit_around_the_cap(self) -> None:
        assert RAISES == (MAX_SESSIONS, MAX_SESSIONS + 1, MAX_SESSIONS + 2, FAR_CAP)
        assert NON_POSITIVE == (0, -1)
        assert len(RAISE_KEYS) == MAX_SESSIONS + 3


class TestWiredLock:
    def test_counts_each_threads_enters_and_exits(self) -> None:
        lock = WiredLock(reentry="allow")
        seen: dict[str, tuple[int, int]] = {}

        def use(times: int) -> Any:
            def work() -> None:
                for _ in range(times):
                    with lock:
                        pass
                seen[threading.current_thread().name] = lock.mine()

            return work

        assert not run_threads_within("LOCK-2", [use(1), use(3)], InFlight())
        assert seen == {"thread 0": (1, 1), "thread 1": (3, 3)}
        assert (lock.enters, lock.exits, lock.mine()) == (4, 4, (0, 0))

    def test_a_nested_enter_counts_twice(self) -> None:
        lock = WiredLock(reentry="allow")
        with lock, lock:
            assert lock.mine() == (2, 0)
        assert lock.mine() == (2, 2)


class TestPerform:
    def test_a_rejected_raise_is_value_error_and_max_sessions_a_read(self) -> None:
        manager = reference.make_manager(max_sessions=2, byte_budget=None, evict_when_full=False)
        assert perform_raising(manager, "raise_max_sessions", (0,), refusing=True) is VALUE_ERROR
        assert perform_raising(manager, "raise_max_sessions", (3,), refusing=True) is True
        assert perform_raising(manager, "max_sessions", (), refusing=True) == 3
        for key in "abc":
            perform_raising(manager, "get_or_create_session", (key,), refusing=True)
        assert perform_raising(manager, "get_or_create_session", ("d",), refusing=True) is REFUSED


class TestCheckWiring:
    def test_a_table_call_outside_the_lock_fails_lock2(self) -> None:
        with pytest.raises(ClauseFailure) as caught:
            check_wiring("drop_session", ("b",), True, 0, 0, "thread 2, history 'h'")
        assert (caught.value.clause, str(caught.value)) == (
            "LOCK-2",
            "entries of the injected lock during drop_session('b')=0, but should be at least 1; "
            "thread 2, history 'h' [LOCK-2]",
        )

    def test_a_table_call_that_keeps_the_lock_fails_lock2(self) -> None:
        with pytest.raises(ClauseFailure, match=r"lock exits during len\(manager\)=0, but "):
            check_wiring("len", (), 2, 1, 0, "h")

    def test_a_raise_that_wrote_outside_the_lock_fails_admit12(self) -> None:
        with pytest.raises(ClauseFailure) as caught:
            check_wiring("raise_max_sessions", (3,), True, 0, 0, "h")
        assert caught.value.clause == "ADMIT-12"
        assert str(caught.value).startswith("entries of the injected lock during ")

    @pytest.mark.parametrize(
        ("method", "args", "result"),
        [
            ("raise_max_sessions", (2,), False),  # a False may be decided without the lock
            ("raise_max_sessions", (0,), VALUE_ERROR),
            ("max_sessions", (), 2),  # an attribute
        ],
    )
    def test_what_need_not_enter_the_lock(self, method: str, args: Any, result: Any) -> None:
        check_wiring(method, args, result, 0, 0, "h")

    def test_a_lock2_failure_comes_first_then_what_escaped(self) -> None:
        raise12, table2, raised = (
            ClauseFailure("ADMIT-12", "a"),
            ClauseFailure("LOCK-2", "b"),
            ClauseFailure("LOCK-5", "c"),
        )
        assert first_failure([raise12, table2], raised) is table2
        assert first_failure([raise12], raised) is raised
        assert first_failure([raise12], None) is raise12
        assert first_failure([], None) is None


class TestBlame:
    def test_only_raises_overlapping_a_writer_are_stale(self) -> None:
        calls = [
            raise_call(3, True, 0, 3),
            raise_call(4, True, 1, 2, "B"),
            raise_call(5, False, 4, 5),  # after both
            raise_call(0, VALUE_ERROR, 1, 2, "C"),  # never a comparison
        ]
        assert stale_raises(calls) == frozenset({0, 1})
        assert stale_raises([raise_call(3, False, 0, 3), raise_call(3, False, 1, 2)]) == set()

    def test_two_racing_raises_both_true_is_admit12(self) -> None:
        calls = [raise_call(3, True, 0, 3), raise_call(3, True, 1, 2, "B")]
        model = LruModel(2)
        assert linearize(calls, model).outcome == "not linearizable"
        assert blame_raises(calls, model) == "ADMIT-12"

    def test_the_lower_cap_landing_last_is_admit12(self) -> None:
        calls = [raise_call(4, True, 0, 3), raise_call(3, True, 1, 2, "B"), read_cap(3, 4, 5)]
        assert blame_raises(calls, LruModel(2, evict_when_full=False)) == "ADMIT-12"

    def test_a_lowered_cap_no_race_explains_is_not_admit12(self) -> None:
        calls = [raise_call(4, True, 0, 1), raise_call(3, True, 2, 3), read_cap(3, 4, 5)]
        assert linearize(calls, LruModel(2)).outcome == "not linearizable"
        assert blame_raises(calls, LruModel(2)) is None

    def test_a_wrong_table_is_not_admit12(self) -> None:
        calls = [
            raise_call(3, True, 0, 3),
            raise_call(3, True, 1, 2, "B"),
            Call("S", "len", (), 7, 4, 5),
        ]
        assert blame_raises(calls, LruModel(2)) is None


# The histories, as the suite records them.


def history_failure(subject: Any, seeds: Sequence[str], refusing: bool) -> ClauseFailure | None:
    """The first failure the histories of ``seeds`` report: a wiring one as recorded, or
    one no order explains, as the suite's judge blames it."""
    model = LruModel(MAX_SESSIONS, evict_when_full=not refusing)
    for seed in seeds:
        try:
            calls = record_raise_history(subject, seed, refusing=refusing, clause="LOCK-5")
        except ClauseFailure as failure:
            return failure
        verdict = linearize(calls, model)
        assert verdict.outcome != "inconclusive", seed
        if verdict.outcome == "not linearizable":
            return ClauseFailure(blame_raises(calls, model) or "LOCK-5", verdict.explain())
    return None


@pytest.mark.parametrize("refusing", [False, True], ids=["evicting", "refusing"])
def test_the_reference_records_linearizable_histories(refusing: bool) -> None:
    assert history_failure(reference, [f"seed/{n}" for n in range(20)], refusing) is None


@pytest.mark.parametrize("refusing", [False, True], ids=["evicting", "refusing"])
def test_a_lock_swapped_by_a_raise_fails_lock2(refusing: bool) -> None:
    failure = history_failure(lock_raise_swaps_lock.subject, ["seed/1"], refusing)
    assert failure is not None and failure.clause == "LOCK-2"
    assert re.fullmatch(
        r"entries of the injected lock during .+=0, but should be at least 1; "
        r"(thread \d|epilogue 0), history 'seed/1', max_sessions=2.* \[LOCK-2\]",
        str(failure),
    )


def test_a_raise_without_the_lock_fails_admit12() -> None:
    failure = history_failure(admit_raise_unlocked.subject, ["seed/1"], refusing=True)
    assert failure is not None and failure.clause == "ADMIT-12"
    assert re.fullmatch(
        r"entries of the injected lock during raise_max_sessions\(\d+\) \(it returned True\)"
        r"=0, but should be at least 1: it compares and writes the cap inside the lock; "
        r"thread \d, history 'seed/1', max_sessions=2, evict_when_full=False \[ADMIT-12\]",
        str(failure),
    )


@pytest.mark.parametrize("seed", ["seed/4", "seed/5", "seed/6"])
def test_two_raises_compared_outside_the_lock_fail_admit12(seed: str) -> None:
    """The opening pair shares an ``n`` above the cap: the gate holds both at the lock's
    door until both have compared, so both report True, every time."""
    assert raise_scripts(seed)[1][0][0] == raise_scripts(seed)[1][1][0]
    failure = history_failure(admit_raise_checked_outside.subject, [seed], refusing=False)
    assert failure is not None and failure.clause == "ADMIT-12"
