"""Every dtype this torch has, in families, and the bytes one storage of it takes.

The suite makes allocations of any of these (``_harness.devices.allocate``) and
the memory model (``memory.py``) prices them from this table, which is written
down here and never asked of torch (the model stays independent of what it
judges): ``KINDS`` maps a dtype's name to its family, its bytes per storage
element, how many values one byte packs along the last dimension (torch's 4-bit
and 2-bit quantized storages, ``quint4x2`` and ``quint2x4``, pack each row on its
own), how the model fills a new allocation of it, and the dtype of the same item
size a ``view(dtype)`` derivation may take.

``torch_dtype_names()`` lists what torch itself has (the ``torch.dtype``
attributes of the ``torch`` module); ``tests/conformance`` checks that every one
is in ``KINDS`` or in ``NOT_DRAWN`` with the reason, so a torch that adds a
dtype fails a test until the table prices it. SPEC ACCT-1 says a tensor counts
``untyped_storage().nbytes()`` whatever its dtype; these are the sizes that
makes for the allocations the model creates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import torch

__all__ = [
    "FAMILIES",
    "KINDS",
    "NOT_DRAWN",
    "QUANTIZED_DEVICES",
    "DtypeKind",
    "dtypes_on",
    "families_on",
    "left_out_on",
    "make_tensor",
    "source_of",
    "storage_nbytes",
    "torch_dtype_names",
]


@dataclass(frozen=True)
class DtypeKind:
    """One dtype as the model knows it.

    ``make`` is how a new allocation is filled: ``"full"`` (``torch.full``),
    ``"raw"`` (``torch.empty``, then the bytes set through a ``uint8``/``int16``
    view: torch has no fill kernel for these) or ``"quantized"``
    (``torch.quantize_per_tensor`` of a float32 tensor, scale 1, zero point 0).
    ``partner`` is a dtype of the same item size for ``view(dtype)``, or ``None``
    where no such view is drawn (quantized storages; nothing else is 16 bytes).
    """

    name: str
    family: str
    itemsize: int
    per_byte: int = 1
    make: str = "full"
    partner: str | None = None


def _kinds(
    family: str, itemsize: int, names: str, partner: str | None, make: str = "full"
) -> dict[str, DtypeKind]:
    return {n: DtypeKind(n, family, itemsize, 1, make, partner) for n in names.split()}


#: name -> kind. The first family is the one values shrink to; the first dtype of each
#: family likewise. Partners: ``view(partner)`` of the same item size is legal at any
#: stride; the old pairs (float32 <-> int32, ...) are kept as they were. Read-only.
KINDS: Mapping[str, DtypeKind] = MappingProxyType(
    {
        **_kinds("float", 8, "float64", "int64"),
        **_kinds("float", 4, "float32", "int32"),
        **_kinds("float", 2, "float16", "int16"),
        **_kinds("float", 2, "bfloat16", "int16"),
        **_kinds("signed int", 8, "int64", "float64"),
        **_kinds("signed int", 4, "int32", "float32"),
        **_kinds("signed int", 2, "int16", "float16"),
        **_kinds("signed int", 1, "int8", "uint8"),
        **_kinds("unsigned int", 1, "uint8", "int8"),
        **_kinds("unsigned int", 2, "uint16", "int16"),
        **_kinds("unsigned int", 4, "uint32", "int32"),
        **_kinds("unsigned int", 8, "uint64", "int64"),
        **_kinds("bool", 1, "bool", "int8"),
        **_kinds("complex", 8, "complex64", "int64"),
        **_kinds("complex", 4, "complex32", "int32"),
        **_kinds("complex", 16, "complex128", None),
        **_kinds("float8", 1, "float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz", "uint8"),
        **_kinds("float8", 1, "float8_e8m0fnu", "uint8"),
        **_kinds("float4", 1, "float4_e2m1fn_x2", "uint8", "raw"),
        **_kinds("sub-byte int", 1, "int1 int2 int3 int4 int5 int6 int7", "uint8", "raw"),
        **_kinds("sub-byte int", 1, "uint1 uint2 uint3 uint4 uint5 uint6 uint7", "uint8", "raw"),
        **_kinds("bits", 1, "bits8 bits1x8 bits2x4 bits4x2", "uint8", "raw"),
        **_kinds("bits", 2, "bits16", "int16", "raw"),
        **_kinds("quantized", 1, "qint8 quint8", None, "quantized"),
        **_kinds("quantized", 4, "qint32", None, "quantized"),
        "quint4x2": DtypeKind("quint4x2", "packed quantized", 1, 2, "quantized"),
        "quint2x4": DtypeKind("quint2x4", "packed quantized", 1, 4, "quantized"),
    }
)

#: The families, in the order the strategies draw (and shrink) them.
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(k.family for k in KINDS.values()))

#: Where quantized allocations are made: ``torch.quantize_per_tensor`` of a meta tensor
#: returns a float32 meta tensor (not quantized), a simulated CUDA device is host memory
#: behind a subclass that torch's quantized kernels do not dispatch through, and torch
#: has no CUDA kernel for the packed 4-bit and 2-bit storages. So on CPU only.
QUANTIZED_DEVICES = ("cpu",)

#: torch dtypes never drawn, with the reason. Empty on torch 2.13: every dtype it has
#: can be made on CPU (bits and sub-byte ints through ``torch.empty``).
NOT_DRAWN: Mapping[str, str] = MappingProxyType({})


def torch_dtype_names() -> set[str]:
    """The names of every dtype the ``torch`` module has (aliases folded: ``float``
    is ``float32``)."""
    return {
        str(value).removeprefix("torch.")
        for value in vars(torch).values()
        if isinstance(value, torch.dtype)
    }


def dtypes_on(device: str) -> dict[str, tuple[str, ...]]:
    """family -> the dtypes the model allocates on ``device``: quantized ones on CPU only;
    on a real accelerator only those a ``make_tensor`` there succeeds for (the others
    are ``left_out_on(device)``). ``cpu`` and ``meta`` make every other dtype, and a
    simulated CUDA device is host memory (``tests/conformance`` checks all three)."""
    return _probed(device)[0]


def left_out_on(device: str) -> dict[str, str]:
    """dtype -> why torch could not make it on ``device``, a real accelerator (empty
    elsewhere): the suite's CPU machines cannot try a GPU's kernels ahead of time."""
    return dict(_probed(device)[1])


@cache
def _probed(device: str) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """``dtypes_on(device)``, and the dtypes left out with the reason, probed once."""
    quantized_too = device in QUANTIZED_DEVICES
    probe = device not in ("cpu", "meta") and torch.cuda.is_available()
    found: dict[str, list[str]] = {}
    left_out: dict[str, str] = {}
    for name, kind in KINDS.items():
        if "quantized" in kind.family and not quantized_too:
            continue
        if probe:
            try:
                make_tensor(device, (2, 3), name, 1)
            except Exception as error:  # a kernel this device lacks: left out, with the reason
                left_out[name] = f"{type(error).__name__}: {error}"
                continue
        found.setdefault(kind.family, []).append(name)
    return {family: tuple(names) for family, names in found.items()}, left_out


def families_on(device: str) -> tuple[str, ...]:
    """The families the model allocates on ``device``, in ``FAMILIES`` order."""
    return tuple(dtypes_on(device))


def storage_nbytes(shape: tuple[int, ...], name: str) -> int:
    """Bytes of the storage a new contiguous ``shape`` of dtype ``name`` allocates: its
    elements times their size, rows packed ``per_byte`` values a byte."""
    kind = KINDS[name]
    last = shape[-1] if shape else 1
    return math.prod(shape[:-1]) * math.ceil(last / kind.per_byte) * kind.itemsize


def _carrier(kind: DtypeKind) -> torch.dtype:
    """The dtype of the same item size through which a raw allocation's bytes are set."""
    return torch.uint8 if kind.itemsize == 1 else torch.int16


def make_tensor(device: str, shape: tuple[int, ...], name: str, fill: int) -> torch.Tensor:
    """A new allocation of ``shape`` and dtype ``name`` on ``device`` (a real device),
    every element ``fill`` (every byte ``fill`` for raw dtypes)."""
    kind = KINDS[name]
    dtype = getattr(torch, name)
    with warnings.catch_warnings():
        # Quantized creation is deprecated and complex32 experimental; both still make
        # tensors a session can hold, which is all the model needs of them.
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        warnings.filterwarnings("ignore", "ComplexHalf support", UserWarning)
        return _made(kind, dtype, device, shape, fill)


def _made(
    kind: DtypeKind, dtype: torch.dtype, device: str, shape: tuple[int, ...], fill: int
) -> torch.Tensor:
    if kind.make == "quantized":
        values = torch.full(shape, float(fill), device=device)
        return torch.quantize_per_tensor(values, 1.0, 0, dtype)
    if kind.make == "raw":
        tensor = torch.empty(shape, dtype=dtype, device=device)
        if device != "meta":
            tensor.view(_carrier(kind)).fill_(fill)
        return tensor
    return torch.full(shape, fill, dtype=dtype, device=device)


def source_of(device: str, shape: tuple[int, ...], name: str, fill: int) -> str:
    """Python that makes an allocation equal to ``make_tensor``'s, for failure messages."""
    kind = KINDS[name]
    head = f"torch.full({shape!r}, {fill}, " if fill else f"torch.zeros({shape!r}, "
    if kind.make == "quantized":
        head = f"torch.full({shape!r}, {float(fill)}, " if fill else f"torch.zeros({shape!r}, "
        return f"torch.quantize_per_tensor({head}device={device!r}), 1.0, 0, torch.{name})"
    if kind.make == "raw":
        carrier = str(_carrier(kind)).removeprefix("torch.")
        return f"{head}dtype=torch.{carrier}, device={device!r}).view(torch.{name})"
    return f"{head}dtype=torch.{name}, device={device!r})"
