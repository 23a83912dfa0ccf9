"""ACCT-5 across a free: a storage freed between two calls sharing one ``seen``, and new ones
of its size allocated in its place (SPEC.md, "ACCT: byte accounting and aliasing").

An allocator gives the memory of a freed block to the next allocation of its size at once: a
GPU's caching allocator always (the simulated ``cuda:N`` devices do as one,
``_harness/caching_allocator.py``), the host's often (glibc's, for blocks of about one to a
few tens of kilobytes, as the state of its heap allows). So a new storage may have the address
of one freed a moment before, and an accounting whose ``seen`` holds addresses, or tokens that
do not keep their storage alive, takes it for the one already counted. A ``seen`` that keeps
what it counted alive never lets its address be reused: the new storages count either way.
Expected bytes come from the suite's memory model (``_model/memory.py``), never from an
accounting implementation.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.acct import (
    accounting_of,
    blame_views,
    count,
    expect_bytes,
)
from sessionstate.conformance._model.memory import DTYPES, Held, definitions, expected_bytes
from sessionstate.conformance.checks import check_bytes, focused_on, nonzero
from sessionstate.conformance.sizes import LENGTH_BOUND, sizes
from sessionstate.conformance.strategies import devices

#: Sizes (float32 elements: 4 KiB and 1 KiB) whose freed block the host's allocator gave to
#: the next allocation of the size in nearly every try measured; a GPU's gives any size.
REUSED_NUMELS = {"cpu": (1024, 256)}


def _address(held: Held) -> int:
    value = held.value
    return int(value.untyped_storage().data_ptr()) if isinstance(value, torch.Tensor) else 0


def _examples(test: Any) -> Any:
    """``test`` with the plain statement on cpu and on every cuda device, in every run:
    free one allocation, allocate one of its size, count it with the same ``seen``."""
    for device in ("cpu", *(d for d in available_devices() if d.startswith("cuda"))):
        for numel in REUSED_NUMELS.get(device, (1024,)):
            test = example(device=device, numel=numel, dtype="float32", again=1)(test)
    return test


@pytest.mark.clause("ACCT-5")
@_examples
@given(
    device=devices(),
    numel=sizes(1, LENGTH_BOUND),
    dtype=st.sampled_from(DTYPES),
    again=st.integers(1, 4),
)
def test_a_storage_allocated_after_a_free_counts(
    subject: Any, device: str, numel: int, dtype: str, again: int
) -> None:
    """Count an allocation with ``seen``, drop every reference the suite holds to it, make
    ``again`` allocations of its size and dtype on its device (one of them often at its
    address), and count them with the same ``seen``: each counts its whole storage."""
    accounting = accounting_of(subject)
    with focused_on("ACCT-5"):
        seen: set[Any] = set()
        freed = allocate(device, (numel,), dtype)
        call1 = f"device_bytes({freed!r}, seen)"
        observed = count(accounting, freed.value, seen, "ACCT-5", call1)
        expect_bytes(accounting, observed, expected_bytes([freed]), [freed], "ACCT-5", call1)
        address, label = _address(freed), freed.expr
        program = f"{definitions([freed])}; {call1}; del {label}"
        del freed  # the suite's every reference: only what the subject kept holds it now
        after = [allocate(device, (numel,), dtype, fill=1) for _ in range(again)]
        reused = [h.expr for h in after if address and _address(h) == address]
        program += f"; {definitions(after)}"
        program += f" ({', '.join(reused)} at {label}'s address)" if reused else ""
        call2 = f"device_bytes({after!r}, seen)"
        observed = count(accounting, [h.value for h in after], seen, "ACCT-5", call2)
        expected = expected_bytes(after)
        if nonzero(observed) != expected:
            # One counted wrong alone breaks ACCT-1 or ACCT-4; with a live twin of the freed
            # one, in a new seen, ACCT-3 (storages at data pointer 0 confused: no free needed).
            twin = allocate(device, (numel,), dtype, fill=2)
            clause = blame_views(accounting, [*after, twin], "ACCT-5")
            check_bytes(observed, expected, clause, call2, program)
