"""The host-memory model of ACCT-6 and ACCT-7: NumPy owners and the byte ranges of them
that each value holds alive.

A NumPy owner or a NumPy view of one holds the owner's whole buffer (ACCT-6);
``torch.from_numpy(a[i:j])``, its ``.numpy()`` and views of that hold bytes
``[i, j)`` of ``a`` (ACCT-7). Memory shared by NumPy and torch counts as the
union of the ranges its values hold, so the expected bytes of a call are the
(owner, byte offset) pairs its values hold that no earlier call sharing the same
``seen`` held (``new_bytes``). Item sizes are written down, not asked of NumPy:
the oracle is independent of what it checks. Programs over these values are drawn
in ``suite/test_acct_host.py``; ``one_owner`` builds one by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

__all__ = [
    "FROM_NUMPY_SUFFIXES",
    "ITEMSIZE",
    "HostProgram",
    "Shared",
    "from_numpy",
    "new_bytes",
    "numpy_view",
    "one_owner",
    "owner_value",
]

#: Item sizes written down, not asked of NumPy (the oracle is independent).
ITEMSIZE: Mapping[str, int] = MappingProxyType({"uint8": 1, "float32": 4})


class Shared:
    """A value over NumPy owner ``a<owner>``, and the owner's bytes it holds alive.

    ``numpy``: a NumPy owner or a NumPy view of one (ACCT-6 alone decides it).
    A plain class, not a dataclass: Hypothesis prints a dataclass field by field.
    """

    __slots__ = ("expr", "held", "numpy", "owner", "value")

    def __init__(self, value: object, owner: int, held: range, expr: str, numpy: bool) -> None:
        self.value, self.owner, self.held, self.expr, self.numpy = value, owner, held, expr, numpy

    def __repr__(self) -> str:
        return self.expr


class HostProgram:
    """NumPy owners and the values of successive calls sharing one ``seen``."""

    __slots__ = ("calls", "owners")

    def __init__(self, owners: list[np.ndarray], calls: list[list[Shared]]) -> None:
        self.owners, self.calls = owners, calls

    def definitions(self) -> str:
        return "; ".join(
            f"a{k} = np.zeros({a.size}, dtype={a.dtype.name!r})" for k, a in enumerate(self.owners)
        )

    def __repr__(self) -> str:
        calls = "; ".join(f"device_bytes({values!r}, seen)" for values in self.calls)
        return f"{self.definitions()}; seen = set(); {calls}"


def _whole(owner: np.ndarray) -> range:
    return range(owner.size * ITEMSIZE[owner.dtype.name])


def owner_value(owners: list[np.ndarray], k: int) -> Shared:
    """Owner ``a<k>`` itself: its whole buffer."""
    return Shared(owners[k], k, _whole(owners[k]), f"a{k}", True)


def numpy_view(owners: list[np.ndarray], k: int, i: int, j: int, step: int) -> Shared:
    """A NumPy view holds its owner's whole buffer (ACCT-6), whatever it shows."""
    a = owners[k]
    return Shared(a[i:j:step], k, _whole(a), f"a{k}[{i}:{j}:{step}]", True)


#: What ``from_numpy`` may make of ``torch.from_numpy(a[i:j])``: itself, its ``.numpy()``
#: or a view of that, each holding the same bytes.
_NUMPY_OF: Mapping[str, Any] = MappingProxyType(
    {
        "": lambda t: t,
        ".numpy()": lambda t: t.numpy(),
        ".numpy()[::2]": lambda t: t.numpy()[::2],
    }
)


FROM_NUMPY_SUFFIXES = tuple(_NUMPY_OF)


def from_numpy(owners: list[np.ndarray], k: int, i: int, j: int, numpy: str = "") -> Shared:
    """``torch.from_numpy(a[i:j])`` holds bytes ``[i, j)`` of ``a`` (its storage); so does
    its ``.numpy()`` (``numpy`` is that suffix) and any view of that (ACCT-7)."""
    itemsize = ITEMSIZE[owners[k].dtype.name]
    value = _NUMPY_OF[numpy](torch.from_numpy(owners[k][i:j]))
    expr = f"torch.from_numpy(a{k}[{i}:{j}]){numpy}"
    return Shared(value, k, range(i * itemsize, j * itemsize), expr, False)


def new_bytes(values: Iterable[Shared], counted: set[tuple[int, int]]) -> dict[str, int]:
    """The oracle: (owner, byte offset) pairs ``values`` hold that ``counted`` lacks; adds them.

    Live NumPy owners never overlap, so the union of held ranges is this set's size.
    """
    new = {(v.owner, offset) for v in values for offset in v.held} - counted
    counted |= new
    return {"cpu": len(new)} if new else {}


def one_owner(*calls: list[tuple[str, int, int]]) -> HostProgram:
    """A hand-built program over one 16-byte owner ``a0``: ranges in known address order.

    Each value is ``("from_numpy", i, j)`` (``torch.from_numpy(a0[i:j])``) or
    ``("owner", 0, 16)`` (``a0`` itself).
    """
    owners = [np.zeros(16, dtype="uint8")]
    build = {
        "from_numpy": lambda i, j: from_numpy(owners, 0, i, j),
        "owner": lambda i, j: owner_value(owners, 0),
    }
    return HostProgram(owners, [[build[kind](i, j) for kind, i, j in c] for c in calls])
