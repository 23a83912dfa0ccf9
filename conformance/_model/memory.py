"""The suite's own model of memory: allocations, and values derived from them.

Expected byte counts come from here and never from any accounting code (the
subject's or the reference's): every value the suite hands a subject was made
by ``_harness.devices.allocate``, which records the one ``Allocation`` it pins.
Each allocation is one storage (or one NumPy owner buffer) of known size on a
known device, and its size is computed from the shape and a hand-written table
of item sizes (``dtypes.py``), not asked of torch. So the expected bytes of any
collection of values are the sizes of the distinct allocations behind them, per
device (SPEC ACCT-1..6): ``expected_bytes``.

Derived values are made only by operations that always return a view (never
``reshape``, which copies a non-contiguous input), so a derivation applied to
a derived value still shares the root's storage; ``expr`` spells the chain as
valid Python over the allocation's label, e.g. ``buf3.t().unsqueeze(0)``.

A pure oracle: it makes no allocation and keeps no state; the devices and the
allocations on them are the harness's (``_harness.devices``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from sessionstate.conformance._model.aliases import alias_steps
from sessionstate.conformance._model.dtypes import KINDS

__all__ = [
    "ALL_DTYPES",
    "DTYPES",
    "NUMPY_DTYPES",
    "Allocation",
    "Derive",
    "Held",
    "aliases",
    "definitions",
    "derivations",
    "expected_bytes",
]

#: The dtypes every group draws (and NumPy has, but bfloat16): what the OBJ, ADAPT and
#: manager machines use. The ACCT strategies draw from ``ALL_DTYPES``: every dtype torch
#: has, priced by the hand-written table in ``dtypes.py``.
DTYPES = ("float64", "int64", "float32", "int32", "float16", "bfloat16", "int16", "uint8", "int8")
NUMPY_DTYPES = tuple(d for d in DTYPES if d != "bfloat16")
ALL_DTYPES = tuple(KINDS)


@dataclass(eq=False)
class Allocation:
    """One storage the suite created: its device, its exact size, its root value.

    ``source`` is the Python that makes an equal allocation, for failure messages;
    ``simulated``: on host memory standing in for a CUDA device (``_harness.devices``).
    """

    label: str
    device: str
    nbytes: int
    root: torch.Tensor | np.ndarray = field(repr=False)
    simulated: bool = False
    source: str = ""

    def __repr__(self) -> str:
        return self.label

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis' pretty printer shows ``repr``, not the dataclass's fields: torch's
        own repr of a tensor raises for some dtypes (``float4_e2m1fn_x2``, ``bits8``),
        and under HypoFuzz, which records every case's arguments, that was a failure of
        the case (on the reference: ``fuzz`` exit 1, "did not fail again when replayed")."""
        printer.text(repr(self))

    def to_json(self) -> str:
        """What Hypothesis' observability records for this argument (it tries
        ``to_json()`` before walking a dataclass's fields into the tensor): ``repr``."""
        return repr(self)


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

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """``repr``, for Hypothesis' pretty printer (see ``Allocation._repr_pretty_``)."""
        printer.text(repr(self))

    def to_json(self) -> str:
        """``repr``, for Hypothesis' observability (see ``Allocation.to_json``)."""
        return repr(self)


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
    partner = KINDS[_dtype_name(array)].partner
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
    partner = KINDS[_dtype_name(tensor)].partner
    expanded = ", ".join(str(n) for n in (2, *shape))
    views = [
        _derive(".unsqueeze(0)", lambda t: t.unsqueeze(0)),
        _derive(
            f".unsqueeze(0).expand({expanded})",
            lambda t: t.unsqueeze(0).expand(2, *shape),
        ),
    ]
    if partner is not None:  # quantized and complex128 storages: no view(dtype) drawn
        views.append(_derive(f".view(torch.{partner})", lambda t: t.view(getattr(torch, partner))))
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
    return _torch_views(held.value) + _slices(held.value)


def aliases(held: Held) -> list[Derive]:
    """Aliases of ``held`` that are no views (``aliases.py``): ``detach()``, a tensor
    subclass with and without ``__torch_function__``, an ``nn.Parameter``. None for a
    NumPy array or a value on a simulated CUDA device (``Allocation.simulated``: such a
    tensor is itself a subclass, and re-classing it would lose its device)."""
    value = held.value
    if not isinstance(value, torch.Tensor) or held.allocation.simulated:
        return []
    return [_wrapped(prefix, suffix, fn) for prefix, suffix, fn in alias_steps]


def _wrapped(prefix: str, suffix: str, fn: Callable[[Any], Any]) -> Derive:
    def derive(held: Held) -> Held:
        return Held(fn(held.value), held.allocation, f"{prefix}{held.expr}{suffix}")

    derive.__name__ = f"{prefix}{suffix}"
    return derive


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
