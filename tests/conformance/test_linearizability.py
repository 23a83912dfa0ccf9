"""The linearizability checker (``conformance/_model/linearizability.py``) on hand-written histories:
known linearizable ones are accepted with a valid order, known non-linearizable ones are
rejected naming the call no order explains, and an exhausted budget is never a pass."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from sessionstate.conformance._model.linearizability import (
    REFUSED,
    VALUE_ERROR,
    Call,
    LruModel,
    Recorder,
    Step,
    call_text,
    linearize,
)


def call(thread: str, text: str, result: Any, invoked: int, returned: int) -> Call:
    """``call("A", "get a", "s0", 0, 1)``: a completed call in hand-written shorthand."""
    method, *args = text.split()
    methods = {"get": "get_or_create_session", "drop": "drop_session"}
    return Call(thread, methods.get(method, method), tuple(args), result, invoked, returned)


def sequential(*texts_and_results: tuple[str, Any]) -> list[Call]:
    """Calls one after another on one thread, stamped 0-1, 2-3, ..."""
    return [call("A", t, r, 2 * i, 2 * i + 1) for i, (t, r) in enumerate(texts_and_results)]


def assert_valid_order(calls: Sequence[Call], order: Sequence[int]) -> None:
    """``order`` places every call once and never puts a call before one that returned earlier."""
    assert sorted(order) == list(range(len(calls)))
    position = {index: n for n, index in enumerate(order)}
    for a in range(len(calls)):
        for b in range(len(calls)):
            if calls[a].returned < calls[b].invoked:
                assert position[a] < position[b], (a, b, order)


class TestLinearizable:
    def test_sequential_history_matching_the_model(self) -> None:
        """A one-thread history the model accepts is linearizable in its own order."""
        calls = sequential(
            ("get a", "s0"), ("get a", "s0"), ("get b", "s1"), ("in a", True), ("len", 2),
            ("drop a", True), ("drop a", False), ("stats", (1, 1, 2, 0)),
        )  # fmt: skip
        verdict = linearize(calls, LruModel(2))
        assert (verdict.outcome, verdict.order) == ("linearizable", tuple(range(8)))

    def test_read_inside_a_write_sees_it(self) -> None:
        """``'a' in m`` wholly inside ``get('a')``'s interval may go after it."""
        calls = [call("A", "get a", "s0", 0, 3), call("B", "in a", True, 1, 2)]
        verdict = linearize(calls, LruModel(2))
        assert (verdict.outcome, verdict.order) == ("linearizable", (0, 1))

    def test_overlapping_drop_and_read_may_go_either_way(self) -> None:
        """A read overlapping a drop may still see the session."""
        calls = [
            call("A", "get a", "s0", 0, 1),
            call("A", "drop a", True, 2, 5),
            call("B", "in a", True, 3, 4),
        ]
        verdict = linearize(calls, LruModel(2))
        assert (verdict.outcome, verdict.order) == ("linearizable", (0, 2, 1))

    def test_concurrent_misses_on_two_keys_evict_the_first_placed(self) -> None:
        """With max_sessions=1, two overlapping misses: whichever goes first is evicted."""
        calls = [
            call("A", "get a", "s0", 0, 3),
            call("B", "get b", "s1", 1, 2),
            call("A", "in a", True, 4, 5),
            call("A", "stats", (1, 0, 2, 1), 6, 7),
        ]
        verdict = linearize(calls, LruModel(1))
        assert verdict.linearizable
        assert verdict.order == (1, 0, 2, 3)

    def test_every_order_respects_real_time(self) -> None:
        """The witness order of a 3-thread history never reorders non-overlapping calls."""
        calls = [
            call("A", "get a", "s0", 0, 2),
            call("B", "get b", "s1", 1, 4),
            call("C", "len", 1, 3, 5),
            call("A", "get a", "s0", 6, 9),
            call("B", "drop b", True, 7, 8),
            call("C", "len", 1, 10, 11),
        ]
        verdict = linearize(calls, LruModel(2))
        assert verdict.linearizable
        assert_valid_order(calls, verdict.order)

    def test_empty_history(self) -> None:
        assert linearize([], LruModel(2)).outcome == "linearizable"


class TestNotLinearizable:
    def test_stale_read_after_the_write_returned(self) -> None:
        """``'a' in m`` invoked after ``get('a')`` returned must see it."""
        calls = [call("A", "get a", "s0", 0, 1), call("B", "in a", False, 2, 3)]
        verdict = linearize(calls, LruModel(2))
        assert (verdict.outcome, verdict.order, verdict.rejected) == (
            "not linearizable",
            (0,),
            [(1, True)],
        )

    def test_two_new_sessions_for_one_key(self) -> None:
        """Two overlapping misses on one key both returning new sessions: a lost miss."""
        calls = [call("A", "get a", "s0", 0, 2), call("B", "get a", "s1", 1, 3)]
        verdict = linearize(calls, LruModel(2))
        assert verdict.outcome == "not linearizable"
        assert verdict.rejected == [(1, "s0")]

    def test_evicted_session_cannot_come_back(self) -> None:
        """With max_sessions=1, 'a' was evicted by 'b': a later get('a') must be new."""
        calls = sequential(("get a", "s0"), ("get b", "s1"), ("get a", "s0"))
        verdict = linearize(calls, LruModel(1))
        assert (verdict.outcome, verdict.rejected) == ("not linearizable", [(2, "a new session")])

    def test_len_over_the_cap(self) -> None:
        """No order lets len() exceed max_sessions."""
        calls = [
            call("A", "get a", "s0", 0, 3),
            call("B", "get b", "s1", 1, 4),
            call("C", "len", 2, 2, 5),
        ]
        assert linearize(calls, LruModel(1)).outcome == "not linearizable"

    def test_counters_that_no_order_produces(self) -> None:
        """stats() counting two misses after one miss and one hit."""
        calls = sequential(("get a", "s0"), ("get a", "s0"), ("stats", (1, 0, 2, 0)))
        verdict = linearize(calls, LruModel(2))
        assert verdict.rejected == [(2, (1, 1, 1, 0))]

    def test_drop_true_twice(self) -> None:
        """Two overlapping drops of one session cannot both succeed."""
        calls = [
            call("A", "get a", "s0", 0, 1),
            call("A", "drop a", True, 2, 4),
            call("B", "drop a", True, 3, 5),
        ]
        assert linearize(calls, LruModel(2)).outcome == "not linearizable"

    def test_memo_decides_a_wide_history_within_budget(self) -> None:
        """Eight commuting reads and one impossible one: 8! orders, but few configurations."""
        calls = [call(f"T{i}", "len", 0, i, 20 + i) for i in range(8)]
        calls.append(call("X", "in a", True, 8, 30))
        verdict = linearize(calls, LruModel(2), budget=2_000)
        assert verdict.outcome == "not linearizable"
        assert verdict.steps == 9 * 2**8 - 8 * 2**7  # one step per (placed set, candidate)


class TestBudget:
    def test_out_of_budget_is_inconclusive_never_a_pass(self) -> None:
        calls = [call(f"T{i}", "len", 0, i, 20 + i) for i in range(8)]
        calls.append(call("X", "in a", True, 8, 30))
        verdict = linearize(calls, LruModel(2), budget=100)
        assert (verdict.outcome, verdict.linearizable, verdict.steps) == (
            "inconclusive",
            False,
            101,
        )


class TestExplain:
    def test_names_the_prefix_the_rejected_call_and_the_history(self) -> None:
        calls = [call("A", "get a", "s0", 0, 1), call("B", "in a", False, 2, 3)]
        assert linearize(calls, LruModel(2)).explain() == (
            "not linearizable after 2 model steps; longest explained prefix: #0\n"
            "  then #1 'a' in manager returned False, but the model expected True\n"
            "history (thread [invoked, returned] call -> result):\n"
            "  #0 A [0, 1] get_or_create_session('a') -> 's0'\n"
            "  #1 B [2, 3] 'a' in manager -> False"
        )


class TestLruModel:
    def test_hit_refreshes_and_miss_evicts_least_recent(self) -> None:
        model = LruModel(2)
        state = model.initial()
        for c in sequential(("get a", "s0"), ("get b", "s1"), ("get a", "s0"), ("get c", "s2")):
            step = model.step(state, c)
            assert step.ok, c
            state = step.state
        assert state.table == (("a", "s0"), ("c", "s2"))
        assert (state.hits, state.misses, state.evictions) == (1, 3, 1)

    def test_drop_keeps_counters_and_order(self) -> None:
        model = LruModel(3)
        state = model.initial()
        for c in sequential(("get a", "s0"), ("get b", "s1"), ("get c", "s2"), ("drop b", True)):
            state = model.step(state, c).state
        assert state.table == (("a", "s0"), ("c", "s2"))
        assert (state.hits, state.misses, state.evictions) == (0, 3, 0)

    @pytest.mark.parametrize(
        ("text", "result", "expected"),
        [("len", 1, Step(True, None, 1)), ("in b", True, Step(False, None, False))],
    )
    def test_reads_change_nothing(self, text: str, result: Any, expected: Step) -> None:
        model = LruModel(2)
        state = model.step(model.initial(), call("A", "get a", "s0", 0, 1)).state
        step = model.step(state, call("A", text, result, 2, 3))
        assert (step.ok, step.state, step.expected) == (expected.ok, state, expected.expected)


class TestRecorder:
    def test_labels_sessions_by_identity_and_stamps_in_order(self) -> None:
        recorder = Recorder()
        first, second = object(), object()
        for session in (first, first, second):
            recorder.call("get_or_create_session", ("k",), lambda s=session: s)
        recorder.call("len", (), lambda: 2)
        assert [(c.result, c.invoked, c.returned) for c in recorder.calls] == [
            ("s0", 0, 1),
            ("s0", 2, 3),
            ("s1", 4, 5),
            (2, 6, 7),
        ]
        assert {c.thread for c in recorder.calls} == {threading.current_thread().name}

    def test_an_exception_propagates_and_records_nothing(self) -> None:
        recorder = Recorder()
        with pytest.raises(KeyError):
            recorder.call("drop_session", ("k",), lambda: {}["k"])
        assert recorder.calls == []

    def test_call_text_is_python(self) -> None:
        assert [call_text(m, a) for m, a in [("len", ()), ("in", ("a",)), ("stats", ())]] == [
            "len(manager)",
            "'a' in manager",
            "stats()",
        ]


class TestAdmission:
    """``LruModel(evict_when_full=False)``: a refusal is accepted only on a full table."""

    def test_refusal_on_a_full_table(self) -> None:
        calls = sequential(("get a", "s0"), ("get b", REFUSED), ("in b", False), ("len", 1))
        assert linearize(calls, LruModel(1, evict_when_full=False)).linearizable

    def test_refusal_with_room_is_rejected(self) -> None:
        verdict = linearize(sequential(("get a", REFUSED)), LruModel(1, evict_when_full=False))
        assert verdict.outcome == "not linearizable"
        assert verdict.rejected == [(0, "a new session")]

    def test_two_newcomers_in_one_slot_are_rejected(self) -> None:
        """Two overlapping misses both admitted into the last free slot."""
        calls = [call("A", "get a", "s0", 0, 3), call("B", "get b", "s1", 1, 2)]
        verdict = linearize(calls, LruModel(1, evict_when_full=False))
        assert verdict.outcome == "not linearizable"

    def test_overlapping_drop_makes_room(self) -> None:
        """A miss overlapping a drop of the one resident session may be admitted."""
        calls = [call("S", "get a", "s0", 0, 1), call("A", "get b", "s1", 2, 5),
                 call("B", "drop a", True, 3, 4)]  # fmt: skip
        assert linearize(calls, LruModel(1, evict_when_full=False)).linearizable

    def test_a_refusal_is_no_session_label(self) -> None:
        """The recorder keeps REFUSED as it is: it is not a session to label."""
        recorder = Recorder()
        recorder.call("get_or_create_session", ("a",), lambda: REFUSED)
        assert recorder.calls[0].result is REFUSED


class TestRaise:
    """``raise_max_sessions(n)``: True and the cap set when ``n`` is above it, False for a
    positive ``n`` at or below it, ``VALUE_ERROR`` for ``n <= 0``; ``max_sessions`` reads
    the cap in force."""

    def test_a_raise_admits_more_and_reads_back(self) -> None:
        calls = sequential(
            ("get a", "s0"), ("get b", "s1"), ("raise_max_sessions 3", True),
            ("get c", "s2"), ("len", 3), ("max_sessions", 3), ("get d", REFUSED),
        )  # fmt: skip
        calls[2] = Call("A", "raise_max_sessions", (3,), True, 4, 5)  # an int n
        assert linearize(calls, LruModel(2, evict_when_full=False)).linearizable
        assert [c.text() for c in calls[2::3]] == ["raise_max_sessions(3)", "manager.max_sessions"]

    @pytest.mark.parametrize(
        ("n", "result"), [(2, False), (1, False), (0, VALUE_ERROR), (-1, VALUE_ERROR), (5, True)]
    )
    def test_each_value_around_the_cap(self, n: int, result: Any) -> None:
        calls = [Call("A", "raise_max_sessions", (n,), result, 0, 1)]
        assert linearize(calls, LruModel(2)).linearizable
        wrong = [Call("A", "raise_max_sessions", (n,), not result, 0, 1)]
        verdict = linearize(wrong, LruModel(2))
        assert (verdict.outcome, verdict.rejected) == ("not linearizable", [(0, result)])

    def test_a_refused_value_changes_nothing(self) -> None:
        calls = [
            Call("A", "raise_max_sessions", (0,), VALUE_ERROR, 0, 1),
            Call("A", "raise_max_sessions", (2,), False, 2, 3),
            Call("A", "max_sessions", (), 2, 4, 5),
        ]
        assert linearize(calls, LruModel(2)).linearizable

    def test_the_cap_evicts_after_a_raise(self) -> None:
        """Cap 1 raised to 2: a third session evicts only the first."""
        calls = sequential(
            ("get a", "s0"), ("raise_max_sessions 2", True), ("get b", "s1"), ("get c", "s2"),
            ("in b", True), ("stats", (2, 0, 3, 1)),
        )  # fmt: skip
        calls[1] = Call("A", "raise_max_sessions", (2,), True, 2, 3)
        assert linearize(calls, LruModel(1)).linearizable
        calls[1] = Call("A", "raise_max_sessions", (2,), False, 2, 3)
        assert linearize(calls, LruModel(1)).outcome == "not linearizable"

    def test_two_overlapping_raises_to_one_value_are_not_both_true(self) -> None:
        calls = [
            Call("A", "raise_max_sessions", (3,), True, 0, 3),
            Call("B", "raise_max_sessions", (3,), True, 1, 2),
        ]
        assert linearize(calls, LruModel(2)).outcome == "not linearizable"

    def test_overlapping_raises_may_land_in_either_order_but_the_cap_only_rises(self) -> None:
        both = [
            Call("A", "raise_max_sessions", (4,), True, 0, 3),
            Call("B", "raise_max_sessions", (3,), True, 1, 2),
        ]
        assert linearize([*both, Call("S", "max_sessions", (), 4, 4, 5)], LruModel(2)).linearizable
        lower = linearize([*both, Call("S", "max_sessions", (), 3, 4, 5)], LruModel(2))
        assert lower.outcome == "not linearizable"

    def test_stale_raises_keep_what_they_reported(self) -> None:
        """The model a machine asks once the spec's failed: the named raises' results are
        taken as reported, so the lower cap may land last; others are judged as ever."""
        both = [
            Call("A", "raise_max_sessions", (4,), True, 0, 3),
            Call("B", "raise_max_sessions", (3,), True, 1, 2),
            Call("S", "max_sessions", (), 3, 4, 5),
        ]
        assert linearize(both, LruModel(2, stale_raises={0, 1})).linearizable
        assert linearize(both, LruModel(2, stale_raises={0})).outcome == "not linearizable"
        rejected = [Call("A", "raise_max_sessions", (0,), False, 0, 1)]
        assert not linearize(rejected, LruModel(2, stale_raises={0})).linearizable
