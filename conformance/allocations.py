"""The suite's own model of memory: allocations, and values derived from them.

Expected byte counts come from here and never from any accounting code (the
subject's or the reference's): every value the suite hands a subject was made
by this module, which records the one allocation it pins. Each allocation is
one storage (or one NumPy owner buffer) of known size on a known device, and
its size is computed from the shape and a hand-written table of item sizes,
not asked of torch. So the expected bytes of any collection of values are the
sizes of the distinct allocations behind them, per device (SPEC ACCT-1..6).

Devices: ``cpu`` and ``meta`` always (every meta storage and every zero-size
storage has data pointer 0, which is what catches address-keyed dedup,
ACCT-3); ``cuda:N`` for real GPUs; without a GPU, ``cuda:0``/``cuda:1`` are
*simulated* by FakeTensors over meta storages, which report a CUDA device
while allocating nothing.

Derived values are made only by operations that always return a view (never
``reshape``, which copies a non-contiguous input), so a derivation applied to
a derived value still shares the root's storage; ``expr`` spells the chain as
valid Python over the allocation's label, e.g. ``buf3.t().unsqueeze(0)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import torch

__all__ = [
    "DTYPES",
    "NUMPY_DTYPES",
    "Allocation",
    "Derive",
    "Held",
    "allocate",
    "available_devices",
    "borrow",
    "borrowing_available",
    "definitions",
    "derivations",
    "expected_bytes",
    "is_simulated",
    "simulated_cuda_available",
]

#: Item sizes in bytes, written down rather than asked of torch (the model is independent).
_ITEMSIZE = {
    "float64": 8,
    "int64": 8,
    "float32": 4,
    "int32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int16": 2,
    "uint8": 1,
    "int8": 1,
}
#: For ``view(dtype)``: a dtype of the same item size, so the view is legal at any stride.
_PARTNER = {
    "float64": "int64",
    "int64": "float64",
    "float32": "int32",
    "int32": "float32",
    "float16": "int16",
    "bfloat16": "int16",
    "int16": "float16",
    "uint8": "int8",
    "int8": "uint8",
}
DTYPES = tuple(_ITEMSIZE)
NUMPY_DTYPES = tuple(d for d in DTYPES if d != "bfloat16")

_labels = itertools.count()


@dataclass(eq=False)
class Allocation:
    """One storage the suite created: its device, its exact size, its root value.

    ``source`` is the Python that makes an equal allocation, for failure messages.
    """

    label: str
    device: str
    nbytes: int
    root: torch.Tensor | np.ndarray = field(repr=False)
    simulated: bool = False
    source: str = ""

    def __repr__(self) -> str:
        return self.label


@dataclass(eq=False)
class Held:
    """A value handed to the subject, and the allocation it pins.

    ``expr`` is valid Python that rebuilds ``value`` from the allocation's label.
    """

    value: torch.Tensor | np.ndarray
    allocation: Allocation
    expr: str

    def __repr__(self) -> str:
        return self.expr


@cache
def _fake_mode() -> object:
    # One mode for the process: a mode per tensor costs ~8 ms each.
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _fake(meta: torch.Tensor, device: str) -> torch.Tensor:
    from torch._subclasses.fake_tensor import FakeTensor

    return FakeTensor(_fake_mode(), meta, torch.device(device))


@cache
def simulated_cuda_available() -> bool:
    """Whether FakeTensors can stand in for CUDA tensors on this torch."""
    try:
        fake = _fake(torch.empty(2, device="meta"), "cuda:1")
        view = fake.view(-1)
    except Exception:
        return False
    return str(view.device) == "cuda:1" and view.untyped_storage() is fake.untyped_storage()


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
    """Whether ``device`` is a FakeTensor stand-in for a CUDA device here."""
    return device.startswith("cuda") and not torch.cuda.is_available()


def allocate(
    device: str,
    shape: tuple[int, ...],
    dtype: str = "float32",
    numpy: bool = False,
    fill: int = 0,
) -> Held:
    """A new allocation on ``device`` (a NumPy owner array on ``cpu`` when ``numpy``),
    every element ``fill``.

    Any dimension may be 0: zero-size storages have data pointer 0 too (ACCT-3).
    The strategies draw ``fill`` (0 to 100, exact in every dtype here), so that two
    payloads of one shape and dtype differ in content: an object that returns the
    wrong one of them, or keeps the wrong end of a ring, is then seen bit for bit
    (OBJ-9, ADAPT). Meta and simulated CUDA tensors have no values to tell apart.
    """
    shape = tuple(int(n) for n in shape)
    nbytes = math.prod(shape) * _ITEMSIZE[dtype]
    label = f"{'arr' if numpy else 'buf'}{next(_labels)}"
    if numpy:
        array = np.full(shape, fill, dtype=dtype)
        source = _spelled("np", shape, fill, f"dtype={dtype!r}")
        return Held(array, Allocation(label, "cpu", nbytes, array, source=source), label)
    torch_dtype = getattr(torch, dtype)
    simulated = is_simulated(device)
    if simulated:
        tensor = _fake(torch.empty(shape, dtype=torch_dtype, device="meta"), device)
    else:
        tensor = torch.full(shape, fill, dtype=torch_dtype, device=device)
    source = _spelled("torch", shape, fill, f"dtype=torch.{dtype}, device={device!r}")
    return Held(tensor, Allocation(label, device, nbytes, tensor, simulated, source), label)


def _spelled(module: str, shape: tuple[int, ...], fill: int, keywords: str) -> str:
    """The replayable line that makes an allocation: ``zeros`` once the fill shrank to 0
    (the shortest), ``full`` otherwise."""
    head = f"{module}.full({shape!r}, {fill}, " if fill else f"{module}.zeros({shape!r}, "
    return f"{head}{keywords})"


@cache
def borrowing_available() -> bool:
    """Whether this torch can build a storage over memory it did not allocate, on ``meta``."""
    return hasattr(torch._C, "_construct_storage_from_data_pointer")


def borrow(device: str, numel: int) -> Held:
    """A float32 tensor over a storage torch only borrows, on ``meta`` or a simulated ``cuda:N``.

    Like a CUDA tensor imported with ``torch.from_dlpack`` (from CuPy or JAX), its
    storage is not resizable; being on ``meta``, it has data pointer 0 and no memory
    behind it. Needs ``borrowing_available()``; ``cuda:N`` only where simulated.
    """
    nbytes = numel * _ITEMSIZE["float32"]
    make = torch._C._construct_storage_from_data_pointer
    storage = make(0, torch.device("meta"), nbytes)
    # set_ resizes a non-empty meta tensor's storage, which a borrowed one refuses.
    tensor = torch.empty(0, device="meta").set_(storage, 0, (0,), (1,)).as_strided((numel,), (1,))
    label = f"brw{next(_labels)}"
    if device == "meta":
        make_expr = (
            f"torch._C._construct_storage_from_data_pointer(0, torch.device('meta'), {nbytes})"
        )
        source = f"torch.empty(0, device='meta').set_({make_expr}, 0, (0,), (1,))"
        source += f".as_strided(({numel},), (1,))"
        return Held(tensor, Allocation(label, device, nbytes, tensor, source=source), label)
    if not is_simulated(device):
        raise ValueError(f"borrow({device!r}): only meta and simulated cuda devices")
    fake = _fake(tensor, device)
    # The real-GPU equivalent (under ``cupy.cuda.Device(N)``), for failure messages.
    source = f"torch.from_dlpack(cupy.zeros({numel}, dtype=cupy.float32))"
    return Held(fake, Allocation(label, device, nbytes, fake, True, source), label)


Derive = Callable[[Held], Held]


def _derive(suffix: str, fn: Callable[[Any], Any]) -> Derive:
    """A derivation appending ``suffix`` (``.t()``, ``[1:]``) to the expression."""

    def derive(held: Held) -> Held:
        return Held(fn(held.value), held.allocation, f"{held.expr}{suffix}")

    derive.__name__ = suffix
    return derive


def _dtype_name(value: torch.Tensor | np.ndarray) -> str:
    return str(value.dtype).removeprefix("torch.")


def _slices(value: torch.Tensor | np.ndarray) -> list[Derive]:
    views: list[Derive] = []
    if value.ndim >= 1:
        views.append(_derive("[1:]", lambda v: v[1:]))
        views.append(_derive("[::2]", lambda v: v[::2]))
    return views


def _numpy_views(array: np.ndarray) -> list[Derive]:
    partner = _PARTNER[_dtype_name(array)]
    views = [
        _derive(".T", lambda a: a.T),
        _derive("[None]", lambda a: a[None]),
        _derive(f".view({partner!r})", lambda a: a.view(partner)),
    ]
    if array.flags.c_contiguous:  # reshape is a view only for a contiguous input
        views.append(_derive(".reshape(-1)", lambda a: a.reshape(-1)))
    return views


def _torch_views(tensor: torch.Tensor) -> list[Derive]:
    shape, ndim = tuple(tensor.shape), tensor.ndim
    partner = _PARTNER[_dtype_name(tensor)]
    expanded = ", ".join(str(n) for n in (2, *shape))
    views = [
        _derive(".unsqueeze(0)", lambda t: t.unsqueeze(0)),
        _derive(
            f".unsqueeze(0).expand({expanded})",
            lambda t: t.unsqueeze(0).expand(2, *shape),
        ),
        _derive(
            f".view(torch.{partner})",
            lambda t: t.view(getattr(torch, partner)),
        ),
    ]
    if tensor.is_contiguous():  # view(-1) needs it; reshape would silently copy instead
        views.append(_derive(".view(-1)", lambda t: t.view(-1)))
    if ndim == 2:
        views.append(_derive(".t()", lambda t: t.t()))
    if ndim >= 3:
        order = tuple(reversed(range(ndim)))
        views.append(_derive(f".permute{order}", lambda t: t.permute(*order)))
    if tensor.numel() > 0:
        views.append(_derive(".as_strided((1,), (1,))", lambda t: t.as_strided((1,), (1,))))
    if ndim >= 1 and shape[0] > 1:
        views.append(_derive(".narrow(0, 1, 1)", lambda t: t.narrow(0, 1, 1)))
    if ndim >= 1 and shape[0] > 0:
        views.append(_derive(".select(0, 0)", lambda t: t.select(0, 0)))
    return views


def derivations(held: Held) -> list[Derive]:
    """Ways to derive a new value that shares ``held``'s storage (MUST-level aliasing).

    Each ``derive(held) -> Held`` applies to ``held`` itself (the list depends
    on its shape and layout) and uses only operations that always return a
    view, so chains of derivations stay on the root allocation. Only what every
    conforming subject must dedup: torch views, and NumPy views of a NumPy
    owner. Memory shared between NumPy and torch is a SHOULD clause (ACCT-7)
    and is checked on its own.
    """
    if isinstance(held.value, np.ndarray):
        return _numpy_views(held.value) + _slices(held.value)
    if held.allocation.simulated:  # indexing a FakeTensor reaches for a real CUDA runtime
        return _torch_views(held.value)
    return _torch_views(held.value) + _slices(held.value)


def expected_bytes(held: Iterable[Held], counted: set[str] | None = None) -> dict[str, int]:
    """Bytes of the distinct allocations behind ``held``, per device.

    ``counted`` models a shared ``seen`` set: labels in it are skipped, and the
    labels counted now are added to it. Zero-byte devices are left out.
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


def definitions(held: Iterable[Held]) -> str:
    """``buf3 = torch.zeros(...); arr4 = np.full(...)`` for the allocations behind ``held``."""
    seen: dict[str, Allocation] = {}
    for item in held:
        seen.setdefault(item.allocation.label, item.allocation)
    return "; ".join(f"{a.label} = {a.source}" for a in seen.values())
