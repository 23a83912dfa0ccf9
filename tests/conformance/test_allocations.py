"""The suite's memory model (``conformance/allocations.py``) and its strategies
(``conformance/strategies.py``): sizes agree with hand-computed numbers, every
derivation is a view of the root, and every repr is Python that rebuilds the value."""

from __future__ import annotations

import re
from collections import OrderedDict, UserList, deque
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

from sessionstate.conformance import allocations, strategies
from sessionstate.conformance.allocations import (
    Held,
    allocate,
    available_devices,
    borrow,
    borrowing_available,
    definitions,
    derivations,
    expected_bytes,
    is_simulated,
)
from sessionstate.conformance.strategies import (
    Nested,
    derived_values,
    devices,
    nested_containers,
    scalars,
)

CUDA1 = "cuda:1" if "cuda:1" in available_devices() else None


@pytest.mark.parametrize(
    ("device", "shape", "dtype", "numpy", "expected"),
    [
        ("cpu", (3, 4), "float32", False, {"cpu": 48}),
        ("meta", (2, 5), "float16", False, {"meta": 20}),
        ("cpu", (3,), "int64", False, {"cpu": 24}),
        ("meta", (2, 2, 2), "bfloat16", False, {"meta": 16}),
        ("cpu", (), "uint8", False, {"cpu": 1}),
        ("cpu", (0, 7), "float32", False, {}),
        ("meta", (4, 0), "float64", False, {}),
        ("cpu", (2, 3), "float32", True, {"cpu": 24}),
        ("cpu", (5,), "int16", True, {"cpu": 10}),
    ],
)
def test_expected_bytes_of_one_allocation(
    device: str, shape: tuple[int, ...], dtype: str, numpy: bool, expected: dict[str, int]
) -> None:
    """One allocation counts its hand-computed size under its device."""
    held = allocate(device, shape, dtype, numpy=numpy)
    assert expected_bytes([held]) == expected
    assert held.allocation.nbytes == sum(expected.values())


@pytest.mark.skipif(CUDA1 is None, reason="no real or simulated cuda:1 on this torch")
def test_cuda_allocation_reports_its_device() -> None:
    """A (possibly simulated) cuda:1 allocation is a cuda:1 tensor of the modelled size."""
    held = allocate("cuda:1", (4,), "bfloat16")
    assert str(held.value.device) == "cuda:1"
    assert expected_bytes([held]) == {"cuda:1": 8}
    assert held.allocation.simulated == is_simulated("cuda:1")


def test_expected_bytes_counts_each_allocation_once() -> None:
    """Views of one allocation count once; ``counted`` carries across calls like ``seen``."""
    a, b = allocate("cpu", (3, 4)), allocate("cpu", (3,), "int64")
    views = [d(a) for d in derivations(a)]
    assert expected_bytes([a, *views, b, b]) == {"cpu": 72}
    counted: set[str] = set()
    assert expected_bytes([views[0]], counted) == {"cpu": 48}
    assert expected_bytes([a, b], counted) == {"cpu": 24}
    assert expected_bytes([b, *views], counted) == {}
    assert counted == {a.allocation.label, b.allocation.label}


def test_model_sizes_agree_with_torch_and_numpy() -> None:
    """The hand-written item sizes agree with what torch and NumPy allocate."""
    for dtype in allocations.DTYPES:
        held = allocate("cpu", (2, 3), dtype)
        assert held.value.untyped_storage().nbytes() == held.allocation.nbytes, dtype
    for dtype in allocations.NUMPY_DTYPES:
        held = allocate("cpu", (2, 3), dtype, numpy=True)
        assert held.value.nbytes == held.allocation.nbytes, dtype


@pytest.mark.parametrize(
    ("dtype", "numpy", "label"),
    [
        ("float32", False, ".view(torch.int32)"),
        ("float16", False, ".view(torch.int16)"),
        ("int64", False, ".view(torch.float64)"),
        ("float32", True, ".view('int32')"),
        ("int64", True, ".view('float64')"),
    ],
)
def test_dtype_views_are_labelled_by_their_dtype(dtype: str, numpy: bool, label: str) -> None:
    """``view(dtype)`` derivations name the dtype they produce, of the same item size."""
    held = allocate("cpu", (2, 2), dtype, numpy=numpy)
    (derive,) = [
        d
        for d in derivations(held)
        if d.__name__.startswith(".view(") and d.__name__ != ".view(-1)"
    ]
    derived = derive(held)
    assert derived.expr == held.expr + label
    assert str(derived.value.dtype).removeprefix("torch.") == re.sub(r"\W|view|torch", "", label)


def test_expand_expression_is_python() -> None:
    """The expand derivation spells the concrete shape."""
    held = allocate("cpu", (3, 4))
    (derive,) = [d for d in derivations(held) if "expand" in d.__name__]
    assert derive(held).expr == f"{held.expr}.unsqueeze(0).expand(2, 3, 4)"


def _owner(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.untyped_storage()
    while isinstance(value.base, np.ndarray):
        value = value.base
    return value


def _layout(value: Any) -> tuple[Any, ...]:
    if isinstance(value, torch.Tensor):
        return (
            tuple(value.shape),
            value.stride(),
            value.storage_offset(),
            value.dtype,
            value.device,
        )
    return (value.shape, value.strides, value.__array_interface__["data"][0], value.dtype)


def _namespace(helds: list[Held]) -> dict[str, Any]:
    names: dict[str, Any] = {"torch": torch, "np": np, "deque": deque, "UserList": UserList}
    names.update(OrderedDict=OrderedDict, SimpleNamespace=SimpleNamespace)
    names.update({h.allocation.label: h.allocation.root for h in helds})
    return names


any_allocation = st.one_of(strategies.allocations(), strategies.allocations(numpy=True))


@settings(max_examples=200, deadline=None)
@given(any_allocation.flatmap(lambda root: st.tuples(st.just(root), derived_values(root, 4))))
def test_derivation_chains_stay_views_of_the_root(pair: tuple[Held, Held]) -> None:
    """Any chain of derivations shares the root's storage, and its expr rebuilds it exactly."""
    root, derived = pair
    assert derived.allocation is root.allocation
    assert _owner(derived.value) is _owner(root.value)
    rebuilt = eval(derived.expr, _namespace([root]))
    assert _layout(rebuilt) == _layout(derived.value)
    assert _owner(rebuilt) is _owner(root.value)


@pytest.mark.skipif(not borrowing_available(), reason="no borrowed storages on this torch")
@pytest.mark.parametrize(
    "device", [d for d in available_devices() if d == "meta" or is_simulated(d)]
)
def test_borrowed_storages_are_not_resizable_at_address_zero(device: str) -> None:
    """``borrow`` makes what torch.from_dlpack does off the host: a storage torch cannot
    resize, here at data pointer 0, of the modelled size, on the asked device."""
    held = borrow(device, 3)
    storage = held.value.untyped_storage()
    assert (str(held.value.device), tuple(held.value.shape)) == (device, (3,))
    assert (storage.resizable(), storage.nbytes()) == (False, 12)
    assert expected_bytes([held, borrow(device, 2)]) == {device: 20}
    if device == "meta":
        assert storage.data_ptr() == 0
        rebuilt = eval(held.allocation.source, {"torch": torch})
        assert rebuilt.untyped_storage().resizable() is False


def test_borrow_refuses_a_real_device() -> None:
    """Only meta and simulated devices: nothing real is behind a borrowed storage."""
    with pytest.raises(ValueError, match="only meta and simulated"):
        borrow("cpu", 2)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_zero_size_allocations_are_drawable(device: str) -> None:
    """Zero-size storages (data pointer 0, like meta) come out of the strategy on cpu and meta."""
    held = find(strategies.allocations(on=st.just(device)), lambda h: h.allocation.nbytes == 0)
    assert held.value.untyped_storage().data_ptr() == 0
    assert expected_bytes([held]) == {}


def test_devices_are_the_available_ones() -> None:
    """``devices()`` draws every available device and nothing else."""
    drawn = set()
    find(devices(), lambda d: drawn.add(d) or drawn == set(available_devices()))
    assert drawn == set(available_devices())


def test_definitions_rebuild_equal_allocations() -> None:
    """``definitions`` is Python that makes allocations of the same shape, dtype and device."""
    helds = [
        allocate("cpu", (2, 3), "int64"),
        allocate("meta", (0,)),
        allocate("cpu", (4,), numpy=True),
    ]
    names: dict[str, Any] = {"torch": torch, "np": np}
    exec(definitions([*helds, helds[0]]), names)
    for held in helds:
        rebuilt = names[held.allocation.label]
        assert (rebuilt.shape, rebuilt.dtype) == (held.value.shape, held.value.dtype)
        assert str(getattr(rebuilt, "device", "cpu")) == held.allocation.device


def _signature(value: object) -> object:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return ("value", id(_owner(value)), _layout(value))
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(_signature(v)) for v in value))
    if isinstance(value, SimpleNamespace):
        return ("namespace", _signature(value.x))
    if isinstance(value, Mapping):
        items = [(_signature(k), _signature(v)) for k, v in value.items()]
        return (type(value).__name__, items)
    if isinstance(value, (list, tuple, deque, UserList)):
        return (type(value).__name__, [_signature(v) for v in value])
    return ("scalar", type(value).__name__, repr(value))


def _walked(value: object) -> list[object]:
    """Tensors and arrays at walked positions (ACCT-8), written out independently."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return [value]
    if isinstance(value, Mapping) and not isinstance(value, SimpleNamespace):
        return [x for v in value.values() for x in _walked(v)]
    if isinstance(value, (list, tuple, deque, UserList)):
        return [x for v in value for x in _walked(v)]
    return []


def _pool_and_nested() -> st.SearchStrategy[tuple[list[Held], Nested]]:
    def nested(pool: list[Held]) -> st.SearchStrategy[tuple[list[Held], Nested]]:
        leaves = st.one_of(st.sampled_from(pool).flatmap(derived_values), scalars())
        return st.tuples(st.just(pool), nested_containers(leaves))

    return st.lists(any_allocation, min_size=1, max_size=3).flatmap(nested)


@settings(max_examples=200, deadline=None)
@given(_pool_and_nested())
def test_nested_containers_read_as_python(drawn: tuple[list[Held], Nested]) -> None:
    """A nested value's expr rebuilds it, and ``counted`` is exactly what ACCT-8 walks."""
    pool, nested = drawn
    rebuilt = eval(nested.expr, _namespace(pool))
    assert _signature(rebuilt) == _signature(nested.value)
    assert [id(v) for v in _walked(nested.value)] == [id(h.value) for h in nested.counted]


def test_nested_containers_cover_every_container_kind() -> None:
    """Each container kind, counted or not, is drawn."""
    kinds = {
        "[",
        "(",
        "{",
        "deque(",
        "UserList(",
        "OrderedDict(",
        "dict.fromkeys(",
        "SimpleNamespace(",
    }
    seen: set[str] = set()
    leaves = st.sampled_from([allocate("cpu", (2,)), 1, "s"])

    def covers(n: Nested) -> bool:
        seen.update(k for k in kinds if n.expr.startswith(k))
        return seen == kinds

    find(nested_containers(leaves), covers, settings=settings(max_examples=2000, database=None))


def test_model_is_independent_of_the_reference() -> None:
    """The model never imports an implementation it is used to judge."""
    for module in (allocations, strategies):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert "reference" not in re.sub(r'""".*?"""', "", source, flags=re.S), module.__name__
