"""The suite's own model of memory: allocations, and values derived from them.

Expected byte counts come from here and never from any accounting code (the
subject's or the reference's): every value the suite hands a subject was made
by this module, which records the one allocation it pins. Each allocation is
one storage (or one NumPy owner buffer) of known size on a known device, so
the expected bytes of any collection of values are the sizes of the distinct
allocations behind them, per device.

Devices: ``cpu`` and ``meta`` always (every meta storage has data pointer 0,
which is what catches address-keyed dedup); ``cuda:N`` for real GPUs; without
a GPU, ``cuda:0``/``cuda:1`` are *simulated* by FakeTensors over meta storages,
which report a CUDA device while allocating nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import torch

__all__ = [
    "Allocation",
    "Held",
    "allocate",
    "available_devices",
    "derivations",
    "expected_bytes",
    "simulated_cuda_available",
]

_labels = itertools.count()


@dataclass(eq=False)
class Allocation:
    """One storage the suite created: its device, its exact size, its root value."""

    label: str
    device: str
    nbytes: int
    root: torch.Tensor | np.ndarray = field(repr=False)
    simulated: bool = False

    def __repr__(self) -> str:
        return self.label


@dataclass(eq=False)
class Held:
    """A value handed to the subject, and the allocation it pins."""

    value: torch.Tensor | np.ndarray
    allocation: Allocation
    expr: str

    def __repr__(self) -> str:
        return self.expr


@cache
def simulated_cuda_available() -> bool:
    """Whether FakeTensors can stand in for CUDA tensors on this torch."""
    try:
        _fake(torch.empty(2, device="meta"), "cuda:1").view(-1)
    except Exception:
        return False
    return True


@cache
def available_devices() -> tuple[str, ...]:
    """``cpu``, ``meta``, then real or simulated ``cuda:N`` devices."""
    devices = ["cpu", "meta"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    elif simulated_cuda_available():
        devices += ["cuda:0", "cuda:1"]
    return tuple(devices)


def is_simulated(device: str) -> bool:
    return device.startswith("cuda") and not torch.cuda.is_available()


def _fake(meta: torch.Tensor, device: str) -> torch.Tensor:
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    return FakeTensor(FakeTensorMode(allow_non_fake_inputs=True), meta, torch.device(device))


_DTYPES = {"float32": torch.float32, "float16": torch.float16, "int64": torch.int64}


def allocate(
    device: str, shape: tuple[int, ...], dtype: str = "float32", numpy: bool = False
) -> Held:
    """A new allocation on ``device`` (a NumPy owner array when ``numpy``)."""
    label = f"{'arr' if numpy else 'buf'}{next(_labels)}"
    if numpy:
        array = np.zeros(shape, dtype=dtype)
        alloc = Allocation(label, "cpu", array.nbytes, array)
        return Held(array, alloc, label)
    torch_dtype = _DTYPES[dtype]
    if is_simulated(device):
        tensor = _fake(torch.empty(shape, dtype=torch_dtype, device="meta"), device)
    else:
        tensor = torch.zeros(shape, dtype=torch_dtype, device=device)
    nbytes = int(np.prod(shape, dtype=np.int64)) * tensor.element_size()
    alloc = Allocation(label, device, nbytes, tensor, simulated=is_simulated(device))
    return Held(tensor, alloc, label)


Derive = Callable[[Held], Held]


def _torch_view(name: str, fn: Callable[[torch.Tensor], torch.Tensor]) -> Derive:
    def derive(held: Held) -> Held:
        return Held(fn(held.value), held.allocation, f"{held.expr}.{name}")  # type: ignore[arg-type]

    derive.__name__ = name
    return derive


def _numpy_view(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> Derive:
    def derive(held: Held) -> Held:
        return Held(fn(held.value), held.allocation, f"{held.expr}{name}")  # type: ignore[arg-type]

    derive.__name__ = name
    return derive


def _first_dim(held: Held) -> int:
    return int(held.value.shape[0]) if held.value.ndim else 0


def derivations(held: Held) -> list[Derive]:
    """Ways to derive a new value that shares ``held``'s storage (MUST-level aliasing).

    Only what every conforming subject must dedup: torch views, and NumPy views
    of a NumPy owner. Memory shared between NumPy and torch is a SHOULD clause
    (ACCT-7) and is checked on its own, outside the machines.
    """
    value = held.value
    if isinstance(value, np.ndarray):
        views = [
            _numpy_view(".T", lambda a: a.T),
            _numpy_view(".reshape(-1)", lambda a: a.reshape(-1)),
        ]
        if _first_dim(held) > 1:
            views += [_numpy_view("[1:]", lambda a: a[1:]), _numpy_view("[::2]", lambda a: a[::2])]
        return views
    views = [
        _torch_view("view(-1)", lambda t: t.reshape(-1)),
        _torch_view("t()", lambda t: t.t() if t.ndim == 2 else t),
        _torch_view("unsqueeze(0).expand(2, *s)", lambda t: t.unsqueeze(0).expand(2, *t.shape)),
        _torch_view(
            "view(int32)" if value.element_size() == 4 else "view(int16)",
            lambda t: (
                t.view(torch.int32 if t.element_size() == 4 else torch.int16)
                if t.element_size() in (2, 4)
                else t
            ),
        ),
    ]
    if value.numel() > 0:
        views.append(_torch_view("as_strided((1,), (1,))", lambda t: t.as_strided((1,), (1,))))
    if _first_dim(held) > 1:
        views += [
            _torch_view("narrow(0, 1, 1)", lambda t: t.narrow(0, 1, 1)),
            _torch_view("select(0, 0)", lambda t: t.select(0, 0)),
        ]
    return views


def expected_bytes(held: Iterable[Held], counted: set[str] | None = None) -> dict[str, int]:
    """Bytes of the distinct allocations behind ``held``, per device.

    ``counted`` models a shared ``seen`` set: labels in it are skipped, and the
    labels counted now are added to it.
    """
    counted = set() if counted is None else counted
    totals: dict[str, int] = {}
    for item in held:
        alloc = item.allocation
        if alloc.label in counted:
            continue
        counted.add(alloc.label)
        if alloc.nbytes:
            totals[alloc.device] = totals.get(alloc.device, 0) + alloc.nbytes
    return totals
