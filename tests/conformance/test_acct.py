"""ACCT's machine helpers (``conformance._machine.acct``): a long walk cut by ACCT-17's
time budget is not checked, never failed; the same shortfall in less time fails ACCT-14."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sessionstate.conformance._machine import acct
from sessionstate.conformance._machine.acct import timed_walk
from sessionstate.conformance.checks import ClauseFailure, check_bytes

CALL = "device_bytes([EndsWith(t, 65_536)], set())"


def _counts_nothing_after(seconds: float) -> Any:
    def accounting(value: object, seen: set[Any]) -> dict[str, int]:
        time.sleep(seconds)
        return {}

    return accounting


def test_a_walk_short_of_the_end_after_the_budget_is_not_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(acct, "CONTAINER_SECONDS", 0.2)
    with pytest.raises(pytest.skip.Exception, match=r"too slow to judge: .* took 0\.\d s"):
        timed_walk(_counts_nothing_after(0.25), [], set(), {"cpu": 4}, "ACCT-14", CALL, "the last")


def test_the_same_shortfall_in_less_time_fails_the_clause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(acct, "CONTAINER_SECONDS", 5.0)
    observed = timed_walk(
        _counts_nothing_after(0), [], set(), {"cpu": 4}, "ACCT-14", CALL, "the last"
    )
    with pytest.raises(ClauseFailure, match=r"ACCT-14"):
        check_bytes(observed, {"cpu": 4}, "ACCT-14", CALL)


def test_a_complete_walk_is_returned_however_long_it_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(acct, "CONTAINER_SECONDS", 0.01)

    def accounting(value: object, seen: set[Any]) -> dict[str, int]:
        time.sleep(0.05)
        return {"cpu": 4}

    assert timed_walk(accounting, [], set(), {"cpu": 4}, "ACCT-14", CALL, "the last") == {"cpu": 4}
