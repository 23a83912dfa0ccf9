"""An object's wrong byte count blamed on the subject's accounting when the count is its.

A backend counts what a StateObject holds, and its sessions' totals, with its one
accounting function: the one the subject hands the suite as ``accounting``. A device-keying
bug there (bytes keyed by ``device.type``, so ``cuda:0`` and ``cuda:1`` merge; a dict of
tensors counted under its first tensor's device) makes every object's count wrong too, and
the OBJ machine would name OBJ-2 or OBJ-4, the object's clauses, for a rule ACCT-4 states.

So when an object's count, or its session's, differs from the suite's expectation,
``check_object_bytes`` asks the subject's ``accounting`` about the same values with a fresh
``seen`` before the object's clause is named:

* a storage among them, counted alone, keyed under a device other than its own, or their
  bytes right in total but split across devices otherwise than the model says: ACCT-4
  fails, quoting the accounting's own count (``test_state_object`` and
  ``test_a_run_of_writes_matches_the_model``, which check the bytes after every step,
  carry ``ACCOUNTING_CLAUSES`` wherever the subject has the hook: ``accounting_clauses``,
  ``tagged``);
* the accounting wrong on them some other way: the object's clause fails, its message
  quoting the accounting's count of the same values, which the ACCT tests judge;
* the accounting right on them (or absent, or raising): the object is wrong, and its
  clause fails as before.

The expectation is always the suite's memory model; the accounting is only asked whose
the difference is, so no false positive can come of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pytest
import torch

from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import check_bytes, nonzero

if TYPE_CHECKING:
    from sessionstate.conformance._model.memory import Allocation

__all__ = ["ACCOUNTING_CLAUSES", "accounting_clauses", "check_object_bytes", "tagged"]

#: The clauses the OBJ machine names for the subject's accounting; the tests that run it
#: carry them too (a failure counts against its test's tags, ``tests/zoo`` checks).
ACCOUNTING_CLAUSES = ("ACCT-4",)


def accounting_clauses(subject: Any) -> tuple[str, ...]:
    """The ACCT tags of the OBJ tests that run the machine: ``ACCOUNTING_CLAUSES`` when the
    subject has an ``accounting`` hook to blame, else none."""
    return ACCOUNTING_CLAUSES if subject.accounting is not None else ()


def tagged(params: Sequence[Any], clauses: Sequence[str]) -> list[Any]:
    """``params`` (``pytest.param`` items), each that runs a spec also tagged with
    ``clauses``. An item that is skipped (a spec without a model's OBJ-9 item) or runs no
    spec (``None``: the subject has none, or none with a model) keeps its tags: a skip
    among a clause's tests leaves it unchecked, and ACCT-4 is checked whatever the specs."""
    return [
        pytest.param(*p.values, id=p.id, marks=[*p.marks, pytest.mark.clause(*clauses)])
        if clauses and p.values != (None,) and not any(m.name == "skip" for m in p.marks)
        else p
        for p in params
    ]


class _Blame(NamedTuple):
    """What the subject's accounting counted, ``what`` giving ``observed`` where the model
    says ``expected``; ``clause`` when that breaks an ACCT clause here, else ``None``."""

    clause: str | None
    what: str
    observed: Mapping[str, int]
    expected: Mapping[str, int]
    where: str


def check_object_bytes(
    machine: Any,
    observed: Mapping[str, int],
    expected: Mapping[str, int],
    clause: str,
    what: str,
    when: str,
    attrs: Sequence[Allocation] = (),
) -> None:
    """``check_bytes`` of an object's count (``clause``: OBJ-2 for the object's own, OBJ-4
    for its session's, whose attributes hold ``attrs``), naming ACCT-4 where the subject's
    accounting keys the same values wrong, and quoting it where it counts them wrong."""
    __tracebackhide__ = True
    if nonzero(observed) != nonzero(expected):
        blame = _accounting_blame(machine, expected, attrs)
        if blame is not None and blame.clause is not None:
            counted = f"; {what}={short_repr(dict(observed))} is this accounting's count"
            check_bytes(blame.observed, blame.expected, blame.clause, blame.what,
                        f"{blame.where}{when}{counted}")  # fmt: skip
        if blame is not None:
            own = short_repr(dict(blame.observed))
            when = f"{when}; the subject's accounting of the same values, {blame.what}, gives {own}"
    check_bytes(observed, expected, clause, what, when)


def _accounting_blame(
    machine: Any, expected: Mapping[str, int], attrs: Sequence[Allocation]
) -> _Blame | None:
    """What the subject's accounting says of the values behind ``expected``: ``None`` when
    it has none, raises, or agrees with the model (the object is to blame)."""
    accounting = machine.subject.accounting
    if accounting is None:
        return None
    try:
        held = machine.spec.held(machine.obj) if machine.expects_resident else None
        values = [held, *(a.root for a in attrs)] if attrs else held
        own = nonzero(dict(accounting(values, set())))
        if own == nonzero(expected):
            return None
        for allocation in machine.memory.allocations_in(values):
            wrong = _keyed_wrong(accounting, allocation)
            if wrong is not None:
                return wrong
        text = f"accounting({machine.memory.describe(values)}, set())"
    except Exception:
        return None  # a raise is the ACCT tests' to judge (ACCT-9), not a count to compare
    moved = sum(own.values()) == sum(nonzero(expected).values())
    where = "the right total under the wrong devices, of what is held " if moved else ""
    return _Blame("ACCT-4" if moved else None, text, own, expected, where)


def _keyed_wrong(accounting: Any, allocation: Allocation) -> _Blame | None:
    """ACCT-4 when ``allocation``'s storage, counted alone, is keyed under a device other
    than its own (its count aside: that is ACCT-1's)."""
    if not allocation.nbytes or not isinstance(allocation.root, (torch.Tensor, np.ndarray)):
        return None  # nothing to key, or a storage the object made, known by no tensor
    alone = nonzero(dict(accounting(allocation.root, set())))
    if not alone or set(alone) == {allocation.device}:
        return None
    made = f" = {allocation.source}" if allocation.source else ", made by the object,"
    expected = {allocation.device: allocation.nbytes}
    where = f"{allocation.label}{made} held "
    return _Blame("ACCT-4", f"accounting({allocation.label}, set())", alone, expected, where)
