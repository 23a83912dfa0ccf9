"""The failure template, and focused tests that check one clause whatever else breaks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from sessionstate.conformance._harness.supervision.own_outcomes import SubjectOutcome, mine
from sessionstate.conformance.checks import (
    ClauseFailure,
    Derailed,
    Lazy,
    calling,
    check,
    check_bytes,
    focused_on,
    forget_derailments,
    not_checked_reason,
)


def test_byte_failures_show_what_the_subject_returned() -> None:
    """A zero device the subject returned is printed, though it is ignored in the comparison."""
    with pytest.raises(ClauseFailure) as info:
        check_bytes({"meta": 0}, {"meta": 8, "cpu": 0}, "ACCT-3", "device_bytes(x, set())")
    assert (
        str(info.value) == "device_bytes(x, set())={'meta': 0}, but should be {'meta': 8} [ACCT-3]"
    )
    check_bytes({"meta": 0, "cpu": 4}, {"cpu": 4}, "ACCT-3", "equal but for a zero device")


def _quiet(test: object) -> object:
    return settings(max_examples=30, database=None, derandomize=True)(test)


def test_calling_turns_an_exception_into_its_clause_and_lets_the_rest_through() -> None:
    """``calling``: an Exception from subject code fails the clause, chained to it and
    naming the call (built only then); a ClauseFailure and a BaseException pass as they are."""
    made: list[str] = []
    call = Lazy(lambda: made.append("made") or "get_or_create_session('a')")
    with calling("LRU-1", call):
        pass
    assert made == []
    with pytest.raises(ClauseFailure) as info, calling("LRU-1", call):
        raise KeyError("a")
    assert str(info.value).startswith("get_or_create_session('a') raised KeyError('a') [LRU-1]")
    assert info.value.clause == "LRU-1" and isinstance(info.value.__cause__, KeyError)
    with pytest.raises(ClauseFailure) as inner, calling("LRU-1", call):
        check(False, "DROP-2", "another clause's failure")
    assert inner.value.clause == "DROP-2"
    # A KeyboardInterrupt the suite raised (a SIGINT) goes through; one subject code raised
    # with no signal, or one of pytest's outcomes, is the subject's: not checked.
    with pytest.raises(KeyboardInterrupt), calling("LRU-1", call):
        raise mine(KeyboardInterrupt())
    for raised, shown in [
        (KeyboardInterrupt(), "KeyboardInterrupt (no signal came)"),
        (pytest.skip.Exception("not applicable: no GPU"), "pytest.skip('not applicable: no GPU')"),
        (pytest.exit.Exception("stop", returncode=0), "pytest.exit('stop', returncode=0)"),
    ]:
        expected = pytest.raises(SubjectOutcome, match=re.escape(f"{call} raised {shown}"))
        with expected, calling("LRU-1", call):
            raise raised


def test_a_focused_test_drops_examples_that_break_another_clause() -> None:
    """Examples breaking ENV-1 are dropped; the ENV-3 check runs on all the others."""
    checked = []

    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        with focused_on("ENV-3"):
            check(n % 2 == 0, "ENV-1", "odd")  # the subject's other bug
            checked.append(n)
            check(True, "ENV-3", "never fails")

    forget_derailments()
    run()
    assert checked and all(n % 2 == 0 for n in checked)


def test_a_failure_of_the_focused_clause_still_fails() -> None:
    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        with focused_on("ENV-3"):
            check(n < 5, "ENV-3", f"{n} is too large")

    with pytest.raises(ClauseFailure) as info:
        run()
    assert info.value.clause == "ENV-3"


def test_a_focused_test_no_example_got_through_is_not_checked_never_passed() -> None:
    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        with focused_on("ENV-3"):
            check(False, "ENV-1", "always broken")

    forget_derailments()
    with pytest.raises(Unsatisfiable) as info:
        run()
    reason = not_checked_reason(info.value)
    assert reason is not None
    assert reason.startswith("not checked: every example stopped at ENV-1 first: always broken")


def test_a_focused_plain_test_stopped_by_another_clause_is_not_checked() -> None:
    forget_derailments()
    with pytest.raises(Derailed) as info, focused_on("ACCT-4"):
        check(False, "ACCT-3", "meta storages collide")
    reason = not_checked_reason(info.value)
    assert reason is not None and "stopped at ACCT-3 first" in reason


def test_an_error_with_no_derailment_is_not_turned_into_a_skip() -> None:
    """Unsatisfiable for any other reason (say, a strategy that filters everything out)
    stays the error it is."""
    forget_derailments()
    assert not_checked_reason(Unsatisfiable("nothing drawn")) is None


def test_outside_a_focus_every_failure_raises() -> None:
    with pytest.raises(ClauseFailure):
        check(False, "ENV-1", "broken")
