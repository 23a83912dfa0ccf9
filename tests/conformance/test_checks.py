"""The failure template, and focused tests that check one clause whatever else breaks."""

from __future__ import annotations

import pytest
from _pytest.outcomes import Skipped
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance.checks import ClauseFailure, check, check_bytes, focused_on


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


def test_a_focused_test_drops_examples_that_break_another_clause() -> None:
    """Examples breaking ENV-1 are dropped; the ENV-3 check runs on all the others."""
    checked = []

    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        check(n % 2 == 0, "ENV-1", "odd")  # the subject's other bug
        checked.append(n)
        check(True, "ENV-3", "never fails")

    with focused_on("ENV-3"):
        run()
    assert checked and all(n % 2 == 0 for n in checked)


def test_a_failure_of_the_focused_clause_still_fails() -> None:
    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        check(n < 5, "ENV-3", f"{n} is too large")

    with pytest.raises(ClauseFailure) as info, focused_on("ENV-3"):
        run()
    assert info.value.clause == "ENV-3"


def test_a_focused_test_no_example_got_through_is_not_checked_never_passed() -> None:
    @_quiet
    @given(st.integers(0, 9))
    def run(n: int) -> None:
        check(False, "ENV-1", "always broken")

    stopped = "not checked: every example stopped at ENV-1 first"
    with pytest.raises(Skipped, match=stopped), focused_on("ENV-3"):
        run()


def test_a_focused_plain_test_stopped_by_another_clause_is_not_checked() -> None:
    stopped = "not checked: every example stopped at ACCT-3 first"
    with pytest.raises(Skipped, match=stopped), focused_on("ACCT-4"):
        check(False, "ACCT-3", "meta storages collide")


def test_outside_a_focus_every_failure_raises() -> None:
    with pytest.raises(ClauseFailure):
        check(False, "ENV-1", "broken")
