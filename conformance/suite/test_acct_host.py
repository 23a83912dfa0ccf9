"""ACCT-* for host memory, borrowed and opaque storages (SPEC.md, "ACCT: byte accounting").

NumPy owners and their views (ACCT-6); memory NumPy and torch share, counted as
the union of the host byte ranges its values hold alive (ACCT-7); storages torch
only borrows off the host, told apart by identity like any other (ACCT-3); and
opaque (mkldnn) tensors, which have no storage (ACCT-12). Expected bytes come
from the suite's memory model (``_model/memory.py``), from a set of byte offsets
per NumPy owner (ACCT-7, ``_model/host.py``), or are written out by hand; never
from an accounting implementation. Which clause a wrong ACCT-7 count breaks is
decided in ``_machine/acct.py``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import (
    available_devices,
    borrow,
    borrowing_available,
    is_simulated,
)
from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._machine.acct import (
    Case,
    accounting_of,
    check_host_call,
    count,
    run_case,
)
from sessionstate.conformance._model.host import (
    FROM_NUMPY_SUFFIXES,
    ITEMSIZE,
    HostProgram,
    Shared,
    from_numpy,
    new_bytes,
    numpy_view,
    one_owner,
    owner_value,
)
from sessionstate.conformance._model.memory import Held, definitions, expected_bytes
from sessionstate.conformance.checks import check_bytes, check_equal, focused_on, per_clause
from sessionstate.conformance.strategies import allocations, values_from

_numpy_pools = st.shared(st.lists(allocations(numpy=True), min_size=1, max_size=3), key="ACCT-6")
_numpy_views = st.lists(values_from(_numpy_pools), min_size=1, max_size=5)


@pytest.mark.clause("ACCT-6")
@given(views=_numpy_views)
def test_numpy_views_count_their_owner_once(subject: Any, views: list[Held]) -> None:
    """NumPy views count their owner's buffer once, under "cpu"."""
    accounting = accounting_of(subject)
    call = f"device_bytes({views!r}, set())"
    observed = count(accounting, [h.value for h in views], set(), "ACCT-6", call)
    expected = expected_bytes(views)
    check_bytes(observed, expected, "ACCT-6", call, definitions(views))


_T = "t = torch.zeros(6, dtype=torch.float32)"  # 24 bytes
_OWNER = "owner = np.zeros(10, dtype=np.float32)"  # 40 bytes
SHARED_MEMORY_CASES = [
    Case("numpy-of-tensor", _T, ("t.numpy()",), ({"cpu": 24},)),
    Case("tensor-and-its-numpy", _T, ("[t, t.numpy()]",), ({"cpu": 24},)),
    Case("numpy-view-then-tensor", _T, ("[t.numpy()[2:], t]",), ({"cpu": 24},)),
    Case("from-numpy-after-owner", _OWNER, ("[owner, torch.from_numpy(owner)]",), ({"cpu": 40},)),
    Case("from-numpy-before-owner", _OWNER, ("[torch.from_numpy(owner), owner]",), ({"cpu": 40},)),
    Case("offset-after-owner", _OWNER, ("[owner, torch.from_numpy(owner[1:])]",), ({"cpu": 40},)),
    Case("offset-before-owner", _OWNER, ("[torch.from_numpy(owner[1:]), owner]",), ({"cpu": 40},)),
    Case(
        "overlapping-offsets",
        _OWNER,
        ("[torch.from_numpy(owner[2:5]), torch.from_numpy(owner[4:]), owner[::3], owner]",),
        ({"cpu": 40},),
    ),
    Case("owner-then-offset", _OWNER, ("owner", "torch.from_numpy(owner[1:])"), ({"cpu": 40}, {})),
    Case("tensor-then-numpy", _T, ("t", "t.numpy()[1:]"), ({"cpu": 24}, {})),
    Case("numpy-then-tensor", _T, ("t.numpy()", "t"), ({"cpu": 24}, {})),
    # torch.from_dlpack(t) is a second storage object over t's memory.
    Case("tensor-and-its-dlpack", _T, ("[t, torch.from_dlpack(t)]",), ({"cpu": 24},)),
    # ... the bytes of what it was made from (16 of t's 24), like torch.from_numpy(x).
    Case(
        "dlpack-slice-then-tensor", _T, ("torch.from_dlpack(t[2:])", "t"), ({"cpu": 16}, {"cpu": 8})
    ),
]


@pytest.mark.clause("ACCT-7")
@pytest.mark.parametrize("case", SHARED_MEMORY_CASES, ids=lambda c: c.id)
def test_memory_shared_by_numpy_and_torch_counts_once(subject: Any, case: Case) -> None:
    """tensor.numpy() and torch.from_numpy(array), with or without an offset, alias their source."""
    run_case(accounting_of(subject), case, "ACCT-7")


# --- ACCT-7 as a property: the union of host byte ranges -------------------


@st.composite
def _shared_values(draw: st.DrawFn, owners: list[np.ndarray]) -> Shared:
    k = draw(st.integers(0, len(owners) - 1))
    i = draw(st.integers(0, owners[k].size - 1))
    j = draw(st.integers(i + 1, owners[k].size))
    # "owner", a NumPy "view", or torch.from_numpy(...) with one of FROM_NUMPY_SUFFIXES.
    kind = draw(st.sampled_from(["owner", "view", *FROM_NUMPY_SUFFIXES]))
    if kind == "owner":
        return owner_value(owners, k)
    if kind == "view":
        return numpy_view(owners, k, i, j, draw(st.sampled_from([1, 2])))
    return from_numpy(owners, k, i, j, kind)


@st.composite
def _host_programs(draw: st.DrawFn) -> HostProgram:
    """A few owners of a few dozen bytes; values over them, split into calls."""
    shapes = st.tuples(st.sampled_from(sorted(ITEMSIZE)), st.integers(2, 12))
    owners = [
        np.zeros(n, dtype=dtype) for dtype, n in draw(st.lists(shapes, min_size=1, max_size=3))
    ]
    values = draw(st.lists(_shared_values(owners), min_size=1, max_size=8))
    cuts = sorted(draw(st.sets(st.integers(1, len(values) - 1))) if len(values) > 1 else ())
    bounds = [0, *cuts, len(values)]
    return HostProgram(owners, [values[lo:hi] for lo, hi in pairwise(bounds)])


def _fn(i: int, j: int) -> tuple[str, int, int]:
    return ("from_numpy", i, j)


_A0 = ("owner", 0, 16)


@per_clause("ACCT-7", "ACCT-6", "ACCT-4", "ACCT-5")
@given(program=_host_programs())
# Touching ranges are not overlapping ones: [0, 4) and [4, 8) hold 8 bytes.
@example(program=one_owner([_fn(0, 4), _fn(4, 8)], [_fn(2, 6), _A0]))
# One range merged into several, into an inner one, into one that is not the last.
@example(program=one_owner([_fn(0, 2), _fn(4, 6), _fn(8, 10), _fn(1, 9), _A0]))
@example(program=one_owner([_fn(0, 2), _fn(4, 6), _fn(8, 12), _fn(9, 10)], [_A0]))
@example(program=one_owner([_fn(0, 2), _fn(8, 12), _fn(1, 4), _A0]))
def test_shared_host_memory_counts_its_union_once(
    subject: Any, focus: str, program: HostProgram
) -> None:
    """Owners, NumPy views, from_numpy slices and their .numpy(): the bytes of the union of
    the host ranges they hold, in one call and across calls sharing one seen."""
    accounting = accounting_of(subject)
    with focused_on(focus):
        everything = [v for values in program.calls for v in values]
        call = f"device_bytes({everything!r}, set())"
        expected = new_bytes(everything, set())
        check_host_call(accounting, everything, set(), expected, call, program.definitions())
        seen: set[Any] = set()
        counted: set[tuple[int, int]] = set()
        done: list[str] = []
        for values in program.calls:
            call = f"device_bytes({values!r}, seen)"
            when = "; ".join([program.definitions(), *done])
            check_host_call(accounting, values, seen, new_bytes(values, counted), call, when)
            done.append(call)


# --- ACCT-3: storages torch only borrows, off the host ---------------------


@per_clause("ACCT-3", "ACCT-4")
def test_borrowed_storages_off_the_host_count_by_identity(subject: Any, focus: str) -> None:
    """Non-resizable storages on meta or cuda (torch.from_dlpack of a CuPy array) are
    told apart by identity like any other: two at data pointer 0 both count, and none is
    merged with the host ranges NumPy and torch share."""
    if not borrowing_available():
        own_outcomes.skip("torch._C._construct_storage_from_data_pointer is missing on this torch")
    accounting = accounting_of(subject)
    devices = ["meta", *[d for d in available_devices() if is_simulated(d)]]
    borrowed = [borrow(device, numel) for device in devices for numel in (4, 2)]
    host = np.zeros(5, dtype=np.float32)  # 20 bytes, borrowed by torch on the host
    values = [torch.from_numpy(host), *[h.value for h in borrowed]]
    call = f"device_bytes([torch.from_numpy(host), *{borrowed!r}], set())"
    expected = {"cpu": 20, **expected_bytes(borrowed)}
    when = f"host = np.zeros(5, dtype=np.float32); {definitions(borrowed)}"
    with focused_on(focus):
        observed = count(accounting, values, set(), "ACCT-3", call)
        if focus == "ACCT-4":  # the devices the bytes are keyed by, whatever the counts
            keys = sorted(d for d, n in observed.items() if n)
            check_equal(keys, sorted(expected), "ACCT-4", f"the devices of {call}", when)
        else:
            check_bytes(observed, expected, "ACCT-3", call, when)


# --- ACCT-12: opaque tensors ----------------------------------------------

# t: 5 * 4 = 20 bytes; m: 2 * 3 * 4 = 24 bytes; c: 7 * 4 = 28 bytes. Sizes differ, so
# that no sum collides with a wrong combination (20 ^ 24 = 12, 20 | 24 = 28).
_M = "t = torch.zeros(5); m = torch.zeros(2, 3).to_mkldnn()"
OPAQUE_CASES = [
    Case("dense-then-opaque-twice", _M, ("[t, m, m]",), ({"cpu": 44},)),
    Case("opaque-across-calls", _M, ("m", "[m, t]", "[t, m]"), ({"cpu": 24}, {"cpu": 20}, {})),
    Case(
        "two-opaque-objects",
        _M + "; c = torch.zeros(7).to_mkldnn(); d = m.to_dense().to_mkldnn()",
        ("{'m': m, 'c': [c, m], 'd': (d, t)}",),
        ({"cpu": 96},),
    ),
]


@pytest.mark.clause("ACCT-12", "ACCT-9")
@pytest.mark.parametrize("case", OPAQUE_CASES, ids=lambda c: c.id)
def test_opaque_tensors_count_their_elements_once(subject: Any, case: Case) -> None:
    """An mkldnn tensor (no storage) counts numel() * element_size() under its device once
    per tensor object (ACCT-12), and never makes accounting raise (ACCT-9)."""
    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]  # untyped in torch
        own_outcomes.skip(
            "torch.backends.mkldnn.is_available() is False: no opaque layout to build"
        )
    run_case(accounting_of(subject), case, "ACCT-9", counting="ACCT-12")
