"""ACCT-1, ACCT-2 and ACCT-8 over every kind of value a session holds (SPEC.md, "ACCT: byte
accounting and aliasing"): every dtype torch has, tensor subclasses and Parameters, aliases
that are no views, and the records ACCT-8 walks (namedtuples) or not (dataclasses, attrs
classes, nn.Modules).

The properties of ``test_acct.py`` draw all of these (``strategies.allocations`` draws a
dtype family first, ``values_from`` aliases as well as views, ``nested_containers`` the
records); the cases here run each kind in every profile, so that a backend that mis-sizes
one family, or has a fast path for one shape of tensor, is caught by the smallest search
too. Expected bytes come from the memory model (``_model/memory.py``, ``_model/dtypes.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.acct import (
    BLAMABLE,
    accounting_of,
    count,
    expect_bytes,
)
from sessionstate.conformance._model.dtypes import FAMILIES, KINDS, dtypes_on
from sessionstate.conformance._model.memory import (
    Held,
    aliases,
    definitions,
    derivations,
    expected_bytes,
)
from sessionstate.conformance._model.records import (
    AttrsRecord,
    DataRecord,
    ModuleHolder,
    NamedPair,
    SlotsRecord,
)
from sessionstate.conformance.checks import check_bytes, nonzero
from sessionstate.conformance.strategies import Nested


def _values_of(device: str, dtype: str) -> list[Held]:
    """An allocation of ``dtype`` on ``device``, its first row (a view, contiguous at offset
    0), the aliases of that row that are no views, and a strided view at an offset."""
    root = allocate(device, (4, 3), dtype, fill=5)
    (row,) = [d(root) for d in derivations(root) if d.__name__ == ".select(0, 0)"]
    (tail,) = [d(root) for d in derivations(root) if d.__name__ == "[1:]"]
    return [root, row, *(d(row) for d in aliases(row)), tail]


def _devices_for(dtype: str) -> list[str]:
    """The devices the model makes ``dtype`` on (``dtypes.dtypes_on``: quantized on CPU)."""
    family = KINDS[dtype].family
    return [d for d in available_devices() if dtype in dtypes_on(d).get(family, ())]


@pytest.mark.clause(*BLAMABLE)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.replace(" ", "-"))
def test_every_dtype_counts_its_whole_storage(subject: Any, family: str) -> None:
    """Each dtype of the family, on each device it is made on: the allocation, a row of it
    and that row's aliases (detach, subclasses, Parameter) count the whole storage, alone
    (ACCT-1, ACCT-4) and all together once (ACCT-2)."""
    accounting = accounting_of(subject)
    for dtype in (name for name, kind in KINDS.items() if kind.family == family):
        for device in _devices_for(dtype):
            values = _values_of(device, dtype)
            for held in values:
                call = f"device_bytes({held!r}, set())"
                observed = count(accounting, held.value, set(), "ACCT-1", call)
                expected = expected_bytes([held])
                clause = "ACCT-4" if set(nonzero(observed)) != set(expected) else "ACCT-1"
                check_bytes(observed, expected, clause, call, definitions([held]))
            call = f"device_bytes({values!r}, set())"
            observed = count(accounting, [h.value for h in values], set(), "ACCT-2", call)
            expect_bytes(accounting, observed, expected_bytes(values), values, "ACCT-2", call)


#: Stable test ids, in the order of ``_record_cases()`` (its labels number allocations).
_RECORD_IDS = [
    "namedtuple",
    "namedtuple-in-dict",
    "dataclass",
    "slots-dataclass",
    "module",
    "module-list",
    "parameter-dict",
    "parameter-beside-dataclass",
    "attrs",
]


def _record_cases() -> list[Nested]:
    """Values in records: walked as the tuple a namedtuple is, or counting nothing."""
    # Ordinary dtypes: a failure here is about walking; sizes are the family test's.
    t, u = allocate("cpu", (4,), "float32"), allocate("cpu", (2, 3), "int64")
    a, b = t.expr, u.expr
    tv, uv = t.value, u.value
    assert isinstance(tv, torch.Tensor)
    return [
        Nested(NamedPair(tv, [uv]), [t, u], f"NamedPair({a}, [{b}])", [t, u]),
        Nested({"k": NamedPair(tv)}, [t], f"{{'k': NamedPair({a})}}", [t]),
        Nested([DataRecord(tv), uv], [u], f"[DataRecord({a}), {b}]", [t, u]),
        Nested((SlotsRecord(tv),), [], f"(SlotsRecord({a}),)", [t]),
        Nested([ModuleHolder(tv)], [], f"[ModuleHolder({a})]", [t]),
        Nested(
            torch.nn.ModuleList([ModuleHolder(tv)]),
            [],
            f"torch.nn.ModuleList([ModuleHolder({a})])",
            [t],
        ),
        Nested(
            torch.nn.ParameterDict({"w": torch.nn.Parameter(tv, requires_grad=False)}),
            [],
            f"torch.nn.ParameterDict({{'w': torch.nn.Parameter({a}, requires_grad=False)}})",
            [t],
        ),
        Nested(
            [ModuleHolder(tv).weight, DataRecord(uv)],
            [t],
            f"[ModuleHolder({a}).weight, DataRecord({b})]",
            [t, u],
        ),
    ] + (
        [Nested({"k": AttrsRecord([tv])}, [], f"{{'k': AttrsRecord([{a}])}}", [t])]
        if AttrsRecord is not None
        else []
    )


_RECORD_CASES = _record_cases()


@pytest.mark.clause("ACCT-8")
@pytest.mark.parametrize("value", _RECORD_CASES, ids=_RECORD_IDS[: len(_RECORD_CASES)])
def test_records_are_walked_only_as_the_sequences_they_are(subject: Any, value: Nested) -> None:
    """A namedtuple is walked as a tuple; dataclass, attrs and nn.Module instances count
    nothing, whatever their fields, parameters and buffers hold; a Parameter held itself
    counts."""
    accounting = accounting_of(subject)
    call = f"device_bytes({value!r}, set())"
    observed = count(accounting, value.value, set(), "ACCT-8", call)
    check_bytes(
        observed, expected_bytes(value.counted), "ACCT-8", call, definitions(value.contained)
    )
