"""Values that hold others as fields: which ACCT-8 walks, and which count nothing.

A namedtuple is a tuple, so its items are walked like any tuple's (ACCT-8); a
dataclass, an attrs class and an ``nn.Module`` are other objects, whose fields,
parameters and buffers count nothing, whatever they hold (SPEC ACCT-8, amended
in version 3: none of them is a Mapping or a Sequence, and upstream's
accounting walks only those). The strategies wrap drawn values in these, and
failure messages spell them with these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

__all__ = ["AttrsRecord", "DataRecord", "ModuleHolder", "NamedPair", "SlotsRecord"]


class NamedPair(NamedTuple):
    """A namedtuple: a tuple, walked (ACCT-8)."""

    first: Any
    second: Any = None


@dataclass
class DataRecord:
    """A dataclass: an other object, counting nothing (ACCT-8)."""

    value: Any


@dataclass(frozen=True, slots=True)
class SlotsRecord:
    """A frozen dataclass with slots (no ``__dict__``): an other object too."""

    value: Any


def _attrs_record() -> type | None:
    # attrs is no dependency of this package: the kind is drawn where it is installed.
    try:
        import attrs
    except ImportError:
        return None

    @attrs.define
    class AttrsRecord:
        """An attrs class (slotted, as ``attrs.define`` makes it): an other object."""

        value: Any

    return AttrsRecord


#: An attrs class holding ``value``, or ``None`` where attrs is not installed.
AttrsRecord: type | None = _attrs_record()


class ModuleHolder(torch.nn.Module):
    """An ``nn.Module`` holding ``value``: a tensor as a registered buffer and as an
    ``nn.Parameter`` over the same storage, anything else as a plain attribute. A
    Module is no Mapping or Sequence (nor are ModuleList, ModuleDict, ParameterList
    and ParameterDict): it counts nothing (ACCT-8)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        if isinstance(value, torch.Tensor):
            self.register_buffer("held", value)
            self.weight = torch.nn.Parameter(value, requires_grad=False)
            self.layers = torch.nn.ModuleList([torch.nn.Module()])

    def __repr__(self) -> str:
        return f"ModuleHolder({self.value!r})"
