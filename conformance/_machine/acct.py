"""Calling a subject's accounting from the ACCT tests, hand-computed cases, and the
ACCT blame rules.

The accounting surface, shared by the ACCT tests (``suite/test_acct.py``,
``test_acct_host.py``, ``test_acct_values.py``): the checked
call (a new dict of device name -> int, ACCT-4/ACCT-5), the deadline that turns
a walk that never ends into a clause failure (ACCT-9), ``Case``, a program
with the bytes each of its calls must return, written out by hand, and the home of
the rules that name the clause a wrong total of leaf values breaks (a composed total,
ACCT-10 or ACCT-11, is ``_machine.composed_bytes``'s): ``blame_views`` and
``expect_bytes`` over the memory model's values (``_model.memory``),
``blame_host`` and ``check_host_call`` over host memory NumPy and torch share
(``_model.host``).
"""

from __future__ import annotations

import array
import mmap
import pickle
import struct
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._harness.supervision.deadline import blame
from sessionstate.conformance._model.host import Shared, new_bytes
from sessionstate.conformance._model.memory import Held, definitions, expected_bytes
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.checks import calling, check, check_bytes, nonzero

__all__ = [
    "BLAMABLE",
    "CONTAINER_SECONDS",
    "HOSTILE_NAMES",
    "OTHER_ITEMS",
    "POINTER_BYTES",
    "Case",
    "Endless",
    "EndsWith",
    "LockProbe",
    "accounting_of",
    "blame_host",
    "blame_views",
    "check_host_call",
    "checked",
    "count",
    "expect_bytes",
    "run_case",
    "timed_walk",
    "within_deadline",
]

#: ACCT-17's budget for the code of ACCT-14's containers, in all, per ``device_bytes`` call:
#: a walk that took this long may have been ended by it, which is no failure.
CONTAINER_SECONDS = 1.0


def accounting_of(subject: Any) -> Any:
    """The subject's ``device_bytes``; skips the test when the subject has none."""
    if subject.accounting is None:
        own_outcomes.skip(f"subject {subject.name!r} has no accounting")
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
        names: dict[str, Any] = {"torch": torch, "np": np, "deque": deque, **HOSTILE_NAMES}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sparse CSR/CSC are "beta" on this torch
            exec(self.program, names)
            return [(text, eval(text, names)) for text in self.calls]


def within_deadline(
    accounting: Any, value: object, seen: set[Any], clause: str, call: str, when: str
) -> Any:
    """``accounting(value, seen)``, where a walk that never ends fails ``clause`` (ACCT-9),
    not LOCK-3, when the plugin's watchdog interrupts it (``deadline.DEFAULT_SECONDS``)."""
    with calling(clause, call), blame(clause, call, why=f", after {when}"):
        result = accounting(value, seen)  # RecursionError included: a failure too
    return checked(result, call)


def timed_walk(
    accounting: Any,
    value: object,
    seen: set[Any],
    expected: Mapping[str, int],
    clause: str,
    call: str,
    when: str,
) -> Any:
    """``within_deadline``, for a walk that is to count ``expected``: short of it after
    ``CONTAINER_SECONDS`` or more, ACCT-17's time budget may have ended a container's walk
    first (a long one, an endless sibling, a loaded machine), so the test is not checked,
    never failed."""
    from sessionstate.conformance._harness.applicability import NOT_CHECKED

    started = time.monotonic()
    observed = within_deadline(accounting, value, seen, clause, call, when)
    took = time.monotonic() - started
    if observed != dict(expected) and took >= CONTAINER_SECONDS:
        own_outcomes.skip(
            f"{NOT_CHECKED}: too slow to judge: {call} took {took:.1f} s, and ACCT-17's "
            f"{CONTAINER_SECONDS:g} s a call for containers' own code may end a walk first"
        )
    return observed


def run_case(accounting: Any, case: Case, clause: str, counting: str | None = None) -> None:
    """Run ``case``: any raise or hang fails ``clause``, a wrong count ``counting`` (or ``clause``)."""
    seen: set[Any] = set()
    for (text, value), expected in zip(case.build(), case.expected, strict=True):
        call = f"device_bytes({text}, seen)"
        observed = timed_walk(accounting, value, seen, expected, clause, call, case.program)
        check_bytes(observed, expected, counting or clause, call, case.program)


# --- Hostile values (ACCT-13..16): containers with code of their own ---------

#: ACCT-14's bound: items taken from each Mapping or Sequence other than ACCT-13's
#: built-in containers (and 16 times as many from all of them, per call).
OTHER_ITEMS = 65_536
#: One element of a NumPy object array: a pointer (ACCT-15 counts the owner's buffer).
POINTER_BYTES = struct.calcsize("P")


class Walked(AssertionError):
    """Raised by a value whose own code ACCT-13 says is never called."""


class ListOwnIter(list):  # type: ignore[type-arg]
    """A list subclass whose own iteration raises (ACCT-13: never called)."""

    def __iter__(self) -> Iterator[Any]:
        raise Walked("ListOwnIter.__iter__ was called")


class TupleOwnIter(tuple):  # type: ignore[type-arg]
    """A tuple subclass whose own iteration raises (ACCT-13: never called)."""

    def __iter__(self) -> Iterator[Any]:
        raise Walked("TupleOwnIter.__iter__ was called")


class DictOwnValues(dict):  # type: ignore[type-arg]
    """A dict subclass whose own iteration and ``values()`` raise (ACCT-13)."""

    def __iter__(self) -> Iterator[Any]:
        raise Walked("DictOwnValues.__iter__ was called")

    def values(self) -> Any:
        raise Walked("DictOwnValues.values was called")


class DequeOwnIter(deque):  # type: ignore[type-arg]
    """A deque subclass whose own iteration raises (ACCT-13: never called)."""

    def __iter__(self) -> Iterator[Any]:
        raise Walked("DequeOwnIter.__iter__ was called")


class EndsWith(Sequence[object]):
    """A Sequence of ``length`` items, ``None`` but the last, which is ``item``: only a walk
    that takes all of them reaches ``item`` (ACCT-14's bounds, from below)."""

    def __init__(self, item: object, length: int) -> None:
        self.item, self.length = item, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int):
            raise TypeError(f"EndsWith indices are ints, not {type(index).__name__}")
        if not -self.length <= index < self.length:
            raise IndexError(index)
        return self.item if index % self.length == self.length - 1 else None

    def __repr__(self) -> str:
        return f"EndsWith({self.item!r}, {self.length})"


class Endless(Sequence[object]):
    """A Sequence whose ``__getitem__`` never raises ``IndexError``: every index is
    ``item``. ``served`` counts the calls, so a test sees how far a walk went; past
    ``stop`` calls it raises, so a walk with no bound still returns (and is seen)."""

    def __init__(self, item: object, length: int = 1, stop: int = 2 * OTHER_ITEMS) -> None:
        self.item, self.length, self.stop, self.served = item, length, stop, 0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        self.served += 1
        if self.served > self.stop:
            raise Walked(f"Endless: {self.served} items read, the bound is {OTHER_ITEMS}")
        return self.item

    def __repr__(self) -> str:
        return f"Endless({self.item!r})"


class RaisingAt(Sequence[object]):
    """A Sequence of ``items`` that raises ``ValueError`` at index ``len(items)``, which
    its ``__len__`` says is still inside it."""

    def __init__(self, *items: object) -> None:
        self.contents = items

    def __len__(self) -> int:
        return len(self.contents) + 1

    def __getitem__(self, index: Any) -> Any:
        if index == len(self.contents):
            raise ValueError("RaisingAt: this item cannot be read")
        return self.contents[index]


class RaisingMapping(Mapping[str, object]):
    """A Mapping whose ``__iter__`` raises; ``len`` and ``[key]`` work."""

    def __init__(self, **items: object) -> None:
        self.contents = items

    def __getitem__(self, key: str) -> object:
        return self.contents[key]

    def __len__(self) -> int:
        return len(self.contents)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("RaisingMapping: iteration is broken")


class RaisingLen(Mapping[str, object]):
    """A Mapping whose ``__len__`` raises; iteration works."""

    def __init__(self, **items: object) -> None:
        self.contents = items

    def __getitem__(self, key: str) -> object:
        return self.contents[key]

    def __len__(self) -> int:
        raise RuntimeError("RaisingLen: no length")

    def __iter__(self) -> Iterator[str]:
        return iter(self.contents)


def object_array(*items: object) -> np.ndarray:
    """A 1-D NumPy array of dtype object holding ``items`` (``np.array`` would unpack
    tensors into numbers)."""
    made = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        made[i] = item
    return made


def anonymous_mmap(nbytes: int) -> mmap.mmap:
    """An anonymous ``mmap`` of ``nbytes``: a buffer exporter other than ``array.array``."""
    return mmap.mmap(-1, nbytes)


#: What ``Case`` programs may name besides torch, np and deque.
HOSTILE_NAMES: dict[str, Any] = {
    "array": array,
    "Endless": Endless,
    "RaisingAt": RaisingAt,
    "RaisingMapping": RaisingMapping,
    "RaisingLen": RaisingLen,
    "ListOwnIter": ListOwnIter,
    "TupleOwnIter": TupleOwnIter,
    "DictOwnValues": DictOwnValues,
    "DequeOwnIter": DequeOwnIter,
    "object_array": object_array,
    "anonymous_mmap": anonymous_mmap,
    "PickleBuffer": pickle.PickleBuffer,
}


class LockProbe(Mapping[str, object]):
    """A Mapping that records, each time its own code runs, whether the manager's lock
    is held (``is_held()``, ACCT-16): a walk reads a Mapping's values through that code
    (ACCT-8)."""

    def __init__(self, is_held: Callable[[], bool], **items: object) -> None:
        self.is_held, self.contents = is_held, items
        self.held: list[bool] = []

    def _record(self) -> None:
        self.held.append(bool(self.is_held()))

    def __getitem__(self, key: str) -> object:
        self._record()
        return self.contents[key]

    def __len__(self) -> int:
        self._record()
        return len(self.contents)

    def __iter__(self) -> Iterator[str]:
        self._record()
        return iter(self.contents)

    def __repr__(self) -> str:
        return f"LockProbe({self.contents!r})"


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
