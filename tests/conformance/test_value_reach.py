"""Floors on the reach of the ACCT value strategies (``conformance/strategies.py``): the
share of drawn values in each dtype family, in each layout a fast path could miss, and
holding each container kind. Drawn derandomized, so the shares are the same every run;
``bench/reachability.py`` publishes them in BENCHMARKS.md."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate
from sessionstate.conformance._model.dtypes import FAMILIES, KINDS
from sessionstate.conformance.input_reach import no_local_constants
from sessionstate.conformance.strategies import (
    CONTAINER_KINDS,
    VALUE_KINDS,
    allocations,
    container_kinds,
    nested_containers,
    scalars,
    value_kinds,
    values_from,
)

DRAWS = 300
#: The nested values, drawn once for every container kind's test.
_NESTED: dict[str, list[Any]] = {}


def _drawn(strategy: st.SearchStrategy[Any], draws: int = DRAWS) -> list[Any]:
    """``draws`` values of ``strategy``, the same every run."""
    out: list[Any] = []

    @settings(max_examples=draws, derandomize=True, database=None, phases=[Phase.generate])
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    with no_local_constants():
        collect()
    return out


def _family(value: Any) -> str:
    return KINDS[str(value.dtype).removeprefix("torch.")].family


#: Allocations drawn for the family shares: the quantized families, made on CPU only,
#: are rare enough that 300 draws left one of them out (0.8 % of 1,000 draws).
FAMILY_DRAWS = 1000


def test_every_dtype_family_is_drawn() -> None:
    """Each family at least 2 % of new allocations; the quantized ones, made on CPU only,
    at least 0.4 % and 0.5 % (one device in four here; about half the measured shares)."""
    drawn = Counter(_family(h.value) for h in _drawn(allocations(), FAMILY_DRAWS))
    floors = {f: 0.02 for f in FAMILIES} | {"quantized": 0.004, "packed quantized": 0.005}
    shares = {f: drawn[f] / FAMILY_DRAWS for f in FAMILIES}
    assert {f: s for f, s in shares.items() if s < floors[f]} == {}, shares


def test_every_layout_is_drawn() -> None:
    """Aliases that are no views, subclasses, offsets, non-contiguous and stride-0 views, and
    prefixes at offset 0 (what a fast path miscounts): each at least 2 % of drawn values."""
    drawn = Counter(
        k for h in _drawn(values_from(allocations().map(lambda h: [h]))) for k in value_kinds(h)
    )
    shares = {k: drawn[k] / DRAWS for k in VALUE_KINDS}
    assert {k: s for k, s in shares.items() if s < 0.02} == {}, shares


@pytest.mark.parametrize("kind", list(CONTAINER_KINDS), ids=lambda k: k.__name__)
def test_every_container_kind_is_drawn(kind: type) -> None:
    """Each container kind, walked or counting nothing, in at least 3 % of nested values."""
    leaves = st.one_of(st.sampled_from([allocate("cpu", (2,)), 1, "s"]), scalars())
    nested = _NESTED.setdefault("values", _drawn(nested_containers(leaves)))
    share = sum(kind in container_kinds(n.value) for n in nested) / DRAWS
    assert share >= 0.03, (kind.__name__, share)
