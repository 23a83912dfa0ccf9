"""Calling a subject's accounting from the ACCT tests, hand-computed cases, and the
ACCT blame rules.

Shared by ``suite/test_acct.py`` and ``suite/test_acct_host.py``: the checked
call (a new dict of device name -> int, ACCT-4/ACCT-5), the deadline that turns
a walk that never ends into a clause failure (ACCT-9), ``Case``, a program
with the bytes each of its calls must return, written out by hand, and the one
home of the rules that name the clause a wrong total breaks: ``blame_views`` and
``expect_bytes`` over the memory model's values (``_model.memory``),
``blame_host`` and ``check_host_call`` over host memory NumPy and torch share
(``_model.host``).
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
from sessionstate.conformance._model.host import Shared, new_bytes
from sessionstate.conformance._model.memory import Held, definitions, expected_bytes
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import calling, check, check_bytes, nonzero

__all__ = [
    "BLAMABLE",
    "Case",
    "accounting_of",
    "blame_host",
    "blame_views",
    "check_host_call",
    "checked",
    "count",
    "expect_bytes",
    "run_case",
    "within_deadline",
]


def accounting_of(subject: Any) -> Any:
    """The subject's ``device_bytes``; skips the test when the subject has none."""
    if subject.accounting is None:
        pytest.skip(f"subject {subject.name!r} has no accounting")
    return subject.accounting


def checked(result: Any, call: str) -> Any:
    """``result`` once checked to be a dict of device name -> int (ACCT-4, ACCT-5)."""
    check(
        isinstance(result, dict), "ACCT-5", f"{call} returned {short_repr(result)}, not a new dict"
    )
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


# --- Blame: the most specific clause a wrong total breaks -------------------

#: The clauses ``blame_views`` names for torch values (ACCT-6 only for a NumPy value).
#: A test that blames a more specific clause must be tagged with it too: a failure
#: counts only against the clauses its test is tagged with.
BLAMABLE = ("ACCT-1", "ACCT-2", "ACCT-3", "ACCT-4")


def blame_views(accounting: Any, helds: list[Held], clause: str) -> str:
    """The most specific clause a wrong total of ``helds`` breaks.

    A value counted wrong on its own breaks ACCT-4 (device keys), ACCT-6 (a
    NumPy array) or ACCT-1 (whole storage); views of one allocation counted
    wrong together break ACCT-2; distinct allocations counted wrong together
    break ACCT-3 (e.g. two meta storages keyed by data pointer 0); only then
    is the clause under test to blame. An accounting that raises on the way
    leaves ``clause`` to blame.
    """
    try:
        for held in helds:
            alone = nonzero(accounting(held.value, set()))
            if alone != expected_bytes([held]):
                if isinstance(held.value, np.ndarray):
                    return "ACCT-6"
                return "ACCT-4" if set(alone) != set(expected_bytes([held])) else "ACCT-1"
        by_allocation: dict[int, list[Held]] = {}
        for held in helds:
            by_allocation.setdefault(id(held.allocation), []).append(held)
        for views in by_allocation.values():
            observed = nonzero(accounting([h.value for h in views], set()))
            if observed != expected_bytes(views) and not isinstance(views[0].value, np.ndarray):
                return "ACCT-2"
        roots = [views[0] for views in by_allocation.values()]
        together = [h.allocation.root for h in roots]
        if nonzero(accounting(together, set())) != expected_bytes(roots):
            return "ACCT-3"
    except Exception:
        return clause
    return clause


def expect_bytes(
    accounting: Any,
    observed: dict[str, int],
    expected: dict[str, int],
    helds: list[Held],
    clause: str,
    call: str,
    involved: list[Held] | None = None,
) -> None:
    """Check ``observed``; on a mismatch, blame by the values ``involved`` (default ``helds``)."""
    __tracebackhide__ = True
    if nonzero(observed) != nonzero(expected):
        clause = blame_views(accounting, involved or helds, clause)
    check_bytes(observed, expected, clause, call, definitions(involved or helds))


def blame_host(accounting: Any, values: list[Shared]) -> str:
    """ACCT-6 if the NumPy owners and views among ``values`` alone count wrong, else ACCT-7."""
    numpy = [v for v in values if v.numpy]
    try:
        alone = {k: n for k, n in accounting([v.value for v in numpy], set()).items() if n}
    except Exception:
        return "ACCT-7"
    return "ACCT-6" if alone != new_bytes(numpy, set()) else "ACCT-7"


def check_host_call(
    accounting: Any,
    values: list[Shared],
    seen: set[Any],
    expected: dict[str, int],
    call: str,
    when: str,
) -> None:
    """``accounting(values, seen)`` must count ``expected``; a wrong count fails
    ``blame_host``'s clause (a raise or a malformed result fails ACCT-7, ACCT-4/5)."""
    __tracebackhide__ = True
    observed = count(accounting, [v.value for v in values], seen, "ACCT-7", call)
    if {k: n for k, n in observed.items() if n} != expected:
        check_bytes(observed, expected, blame_host(accounting, values), call, when)
