"""Bit-for-bit comparison and the suite's own memory walk: the ADAPT machine's oracle, and
how the OBJ machine compares an object with its spec's model (``_machine.object_mirror``).

``bit_difference`` says where two values first differ: tensors and arrays in
dtype, shape, device or any value (NaNs at the same places are equal),
containers item by item, exceptions by type. ``reachable_memory`` finds every
tensor storage and NumPy owner buffer reachable from some roots, by storage
identity (contract section 1), without calling any accounting code.

torch and NumPy are imported when these run, not at import, so that the pytest
plugin, which imports ``sessionstate.conformance``, stays light at load.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any
from weakref import ReferenceType

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "Difference",
    "Memory",
    "Raised",
    "Shown",
    "bit_difference",
    "bytes_by_device",
    "reachable_memory",
    "show",
]


@dataclass(frozen=True, eq=False)
class Raised:
    """An exception a call raised; two compare equal when their types are equal."""

    error: Exception

    def __repr__(self) -> str:
        return f"Raised({self.error!r})"


@dataclass(frozen=True)
class Difference:
    """Where two values first differ, and what each side has there."""

    path: str
    observed: str
    expected: str

    def __str__(self) -> str:
        return f"{self.path} is {self.observed}, not {self.expected}"


def bit_difference(observed: object, expected: object, path: str = "value") -> Difference | None:
    """The first difference between ``observed`` and ``expected``, or ``None``.

    Same types; tensors and arrays equal in dtype, shape, device and every
    value, NaNs at the same places counting as equal; mappings, lists, tuples
    and deques compared item by item; ``Raised`` equal by exception type;
    objects with no ``==`` of their own (so ``==`` is identity) field by field,
    through ``__dict__`` and ``__slots__``: two sides' copies of one stand-in
    object are never the same object; anything else by ``==`` (NaN floats equal).
    """
    return _difference(observed, expected, path, frozenset())


def _difference(
    observed: object, expected: object, path: str, comparing: frozenset[tuple[int, int]]
) -> Difference | None:
    """``bit_difference``, inside objects compared field by field: ``comparing`` holds the
    ``id`` pairs of those being compared further up this one comparison."""
    import numpy as np
    import torch

    if type(observed) is not type(expected):
        return Difference(f"type({path})", type(observed).__name__, type(expected).__name__)
    if isinstance(expected, Raised):
        assert isinstance(observed, Raised)
        same = type(observed.error) is type(expected.error)
        return None if same else Difference(path, repr(observed), repr(expected))
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, np.ndarray):
        return _array_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, Mapping):
        return _mapping_difference(observed, expected, path, comparing)  # type: ignore[arg-type]
    if isinstance(expected, (list, tuple, deque)):
        return _sequence_difference(observed, expected, path, comparing)  # type: ignore[arg-type]
    if isinstance(expected, float) and math.isnan(expected) and math.isnan(observed):  # type: ignore[arg-type]
        return None
    if type(expected).__eq__ is object.__eq__ and _fields(expected) is not None:
        return _object_difference(observed, expected, path, comparing)
    try:
        equal = bool(observed == expected)
    except Exception:
        equal = False
    return None if equal else Difference(path, show(observed), show(expected))


def _fields(value: object) -> dict[str, object] | None:
    """An object's fields from ``__dict__`` and ``__slots__``; None if it has neither."""
    names = [
        n for k in type(value).__mro__ for n in getattr(k, "__slots__", ()) if n != "__weakref__"
    ]
    if not hasattr(value, "__dict__") and not names:
        return None
    fields = dict(getattr(value, "__dict__", {}))
    for name in names:
        if name != "__dict__" and hasattr(value, name):
            fields[name] = getattr(value, name)
    return fields


def _object_difference(
    a: object, b: object, path: str, comparing: frozenset[tuple[int, int]]
) -> Difference | None:
    pair = (id(a), id(b))
    if pair in comparing:  # a cycle back to objects being compared: judged where it began
        return None
    ours, theirs = _fields(a) or {}, _fields(b) or {}
    if sorted(ours) != sorted(theirs):
        return Difference(f"fields of {path}", repr(sorted(ours)), repr(sorted(theirs)))
    for name in sorted(theirs):
        found = _difference(ours[name], theirs[name], f"{path}.{name}", comparing | {pair})
        if found is not None:
            return found
    return None


def _tensor_difference(a: torch.Tensor, b: torch.Tensor, path: str) -> Difference | None:
    import torch

    for attribute in ("dtype", "shape", "device", "layout"):
        if getattr(a, attribute) != getattr(b, attribute):
            return Difference(
                f"{path}.{attribute}", str(getattr(a, attribute)), str(getattr(b, attribute))
            )
    if a.device.type == "meta" or type(a).__name__ == "FakeTensor":
        return None  # no values to read
    if a.layout != torch.strided:
        a, b = a.to_dense(), b.to_dense()
    if a.is_floating_point() or a.is_complex():
        nans = a.isnan()
        if not torch.equal(nans, b.isnan()):
            return _first_unequal(nans, b.isnan(), f"isnan({path})")
        a, b = a.masked_fill(nans, 0), b.masked_fill(nans, 0)
    return None if torch.equal(a, b) else _first_unequal(a, b, path)


def _first_unequal(a: torch.Tensor, b: torch.Tensor, path: str) -> Difference:
    index = tuple(int(i) for i in (a != b).nonzero()[0]) if a.dim() else ()
    where = f"{path}[{', '.join(map(str, index))}]" if index else path
    return Difference(where, repr(a[index].item()), repr(b[index].item()))


def _array_difference(a: np.ndarray, b: np.ndarray, path: str) -> Difference | None:
    import numpy as np

    for attribute in ("dtype", "shape"):
        if getattr(a, attribute) != getattr(b, attribute):
            return Difference(
                f"{path}.{attribute}", str(getattr(a, attribute)), str(getattr(b, attribute))
            )
    same = np.asarray(a == b)
    if a.dtype.kind in "fc":
        same |= np.isnan(a) & np.isnan(b)
    if same.all():
        return None
    index = tuple(int(i) for i in np.argwhere(~same)[0]) if a.ndim else ()
    where = f"{path}[{', '.join(map(str, index))}]" if index else path
    return Difference(where, repr(a[index]), repr(b[index]))


def _mapping_difference(
    a: Mapping[Any, Any], b: Mapping[Any, Any], path: str, comparing: frozenset[tuple[int, int]]
) -> Difference | None:
    if set(a) != set(b):
        return Difference(f"{path}.keys()", repr(sorted(map(repr, a))), repr(sorted(map(repr, b))))
    for key in b:
        found = _difference(a[key], b[key], f"{path}[{key!r}]", comparing)
        if found is not None:
            return found
    return None


def _sequence_difference(
    a: Sequence[Any], b: Sequence[Any], path: str, comparing: frozenset[tuple[int, int]]
) -> Difference | None:
    if len(a) != len(b):
        return Difference(f"len({path})", str(len(a)), str(len(b)))
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        found = _difference(x, y, f"{path}[{i}]", comparing)
        if found is not None:
            return found
    return None


def show(value: object, limit: int = 300) -> str:
    """``repr(value)``, cut to ``limit`` characters for failure messages."""
    text = repr(value)
    if "\n" in text:  # a tensor's repr spans lines; a failure message should not
        text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 5]} ...>"


class Shown:
    """A value already rendered, so ``check_equal`` prints it verbatim."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


# --- the suite's own memory walk ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Memory:
    """One allocation a walk reached: a tensor storage or a NumPy owner array.

    ``owner`` keeps the allocation alive, so the walk's ``id`` keys stay valid.
    """

    owner: object
    device: str
    nbytes: int
    path: str


@cache
def _leaves() -> tuple[type, ...]:
    """Values a walk never enters: they hold no tensor or array memory of their own."""
    import numpy as np
    import torch

    return (
        str, bytes, bytearray, int, float, complex, type(None), type, range,
        ModuleType, FunctionType, MethodType, BuiltinFunctionType, ReferenceType,
        torch.dtype, torch.device, np.dtype,
    )  # fmt: skip


def reachable_memory(
    roots: Iterable[tuple[str, object]], stop: Iterable[object] = ()
) -> dict[int, Memory]:
    """Every allocation reachable from ``roots``, by storage identity, first path kept.

    Walks mappings' values, the items of lists, tuples, deques and sets, and
    other objects' ``__dict__`` and ``__slots__``; never enters an object in
    ``stop`` (a manager, a SessionState), a class, a module or a function.
    """
    import numpy as np
    import torch

    leaves = _leaves()
    stopped = {id(obj) for obj in stop}
    visited: set[int] = set()
    found: dict[int, Memory] = {}
    todo = list(roots)[::-1]
    while todo:
        path, obj = todo.pop()
        if isinstance(obj, leaves) or id(obj) in stopped or id(obj) in visited:
            continue
        visited.add(id(obj))
        if isinstance(obj, torch.Tensor):
            todo.extend(_add_tensor(found, obj, path)[::-1])
        elif isinstance(obj, np.ndarray):
            owner = obj
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            found.setdefault(id(owner), Memory(owner, "cpu", owner.nbytes, path))
        else:
            todo.extend(_children(obj, path)[::-1])
    return found


def _add_tensor(
    found: dict[int, Memory], tensor: torch.Tensor, path: str
) -> list[tuple[str, object]]:
    import torch

    # A sparse tensor has no storage of its own: its component tensors hold the memory.
    if tensor.layout == torch.sparse_coo:
        return [(f"{path}._indices()", tensor._indices()), (f"{path}._values()", tensor._values())]
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [
            (f"{path}.values()", p)
            for p in (tensor.crow_indices(), tensor.col_indices(), tensor.values())
        ]
    if tensor.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [
            (f"{path}.values()", p)
            for p in (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
        ]
    if tensor.is_nested:
        return _nested_parts(tensor, path)
    storage = tensor.untyped_storage()
    found.setdefault(id(storage), Memory(storage, str(tensor.device), storage.nbytes(), path))
    return []


def _nested_parts(tensor: torch.Tensor, path: str) -> list[tuple[str, object]]:
    """ACCT-9: a nested tensor's memory is the tensors it is built from. A jagged one
    names them in ``__tensor_flatten__``; a strided one is its buffer (its storage, as
    a plain tensor) and its size, stride and offset metadata tensors."""
    import torch

    if tensor.layout == torch.jagged:
        names = tensor.__tensor_flatten__()[0]  # type: ignore[attr-defined]
        return [(f"{path}.{name}", getattr(tensor, name)) for name in names]
    buffer = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    with torch.no_grad():
        buffer.set_(tensor.untyped_storage())
    return [
        (f"{path}.values()", buffer),
        (f"{path}._nested_tensor_size()", tensor._nested_tensor_size()),
        (f"{path}._nested_tensor_strides()", tensor._nested_tensor_strides()),
        (f"{path}._nested_tensor_storage_offsets()", tensor._nested_tensor_storage_offsets()),
    ]


def _children(obj: object, path: str) -> list[tuple[str, object]]:
    if isinstance(obj, Mapping):
        return [(f"{path}[{key!r}]", value) for key, value in list(obj.items())]
    if isinstance(obj, (list, tuple, deque, set, frozenset)):
        return [(f"{path}[{i}]", item) for i, item in enumerate(list(obj))]
    children = [(f"{path}.{k}", v) for k, v in getattr(obj, "__dict__", {}).items()]
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                children.append((f"{path}.{slot}", getattr(obj, slot)))
    return children


def bytes_by_device(found: Mapping[int, Memory]) -> dict[str, int]:
    """Total bytes of the allocations a walk found, per device."""
    totals: dict[str, int] = {}
    for memory in found.values():
        totals[memory.device] = totals.get(memory.device, 0) + memory.nbytes
    return totals
