"""Calling a subject's accounting from the ACCT tests, and hand-computed cases.

Shared by ``suite/test_acct.py`` and ``suite/test_acct_host.py``: the checked
call (a new dict of device name -> int, ACCT-4/ACCT-5), the deadline that turns
a walk that never ends into a clause failure (ACCT-9), and ``Case``, a program
with the bytes each of its calls must return, written out by hand.
"""

from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from sessionstate.conformance._harness.watchdog import blame
from sessionstate.conformance.checks import calling, check, check_bytes

__all__ = ["Case", "accounting_of", "checked", "count", "run_case", "within_deadline"]


def accounting_of(subject: Any) -> Any:
    """The subject's ``device_bytes``; skips the test when the subject has none."""
    if subject.accounting is None:
        pytest.skip(f"subject {subject.name!r} has no accounting")
    return subject.accounting


def checked(result: Any, call: str) -> Any:
    """``result`` once checked to be a dict of device name -> int (ACCT-4, ACCT-5)."""
    check(isinstance(result, dict), "ACCT-5", f"{call} returned {result!r}, not a new dict")
    for device, nbytes in result.items():
        check(isinstance(device, str), "ACCT-4", f"{call} has key {device!r}, not a device name")
        check(type(nbytes) is int, "ACCT-4", f"{call} has {device!r}: {nbytes!r}, not an int")
    return result


def count(accounting: Any, value: object, seen: set[Any], clause: str, call: str) -> Any:
    """``accounting(value, seen)``; a raise fails ``clause``, a malformed result ACCT-4/5."""
    with calling(clause, call):
        result = accounting(value, seen)
    return checked(result, call)


@dataclass(frozen=True)
class Case:
    """A hand-computed case: a program, the values of successive calls sharing one
    ``seen``, and the bytes each call must return."""

    id: str
    program: str
    calls: tuple[str, ...]
    expected: tuple[dict[str, int], ...]

    def build(self) -> list[tuple[str, object]]:
        names: dict[str, Any] = {"torch": torch, "np": np, "deque": deque}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sparse CSR/CSC are "beta" on this torch
            exec(self.program, names)
            return [(text, eval(text, names)) for text in self.calls]


def within_deadline(
    accounting: Any, value: object, seen: set[Any], clause: str, call: str, when: str
) -> Any:
    """``accounting(value, seen)``, where a walk that never ends fails ``clause`` (ACCT-9),
    not LOCK-3, when the plugin's watchdog interrupts it (``watchdog.DEFAULT_SECONDS``)."""
    with calling(clause, call), blame(clause, call, why=f", after {when}"):
        result = accounting(value, seen)  # RecursionError included: a failure too
    return checked(result, call)


def run_case(accounting: Any, case: Case, clause: str, counting: str | None = None) -> None:
    """Run ``case``: any raise or hang fails ``clause``, a wrong count ``counting`` (or ``clause``)."""
    seen: set[Any] = set()
    for (text, value), expected in zip(case.build(), case.expected, strict=True):
        call = f"device_bytes({text}, seen)"
        observed = within_deadline(accounting, value, seen, clause, call, case.program)
        check_bytes(observed, expected, counting or clause, call, case.program)
