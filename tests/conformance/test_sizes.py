"""``conformance.sizes``: the one boundary rule every drawn size follows. Its values are
the thresholds real backends have (64/65 sessions, 128/129, 255/256/257 characters,
1,024 lookups, 4,096), it stays within its bounds, and it shrinks to ``low``."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from sessionstate.conformance.sizes import COUNT_BOUND, DEFAULT_CAP, LENGTH_BOUND, boundaries, sizes


def test_the_boundaries_are_powers_of_two_their_neighbours_and_the_default_cap() -> None:
    assert boundaries(0, 20) == (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17)
    found = boundaries(0, COUNT_BOUND)
    for n in (63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4095, 4096):
        assert n in found
    assert found[-1] == COUNT_BOUND and list(found) == sorted(set(found))
    assert boundaries(60, 70) == (63, 64, 65)
    assert boundaries(0, LENGTH_BOUND)[-2:] == (LENGTH_BOUND - 1, LENGTH_BOUND)
    assert DEFAULT_CAP == 64


@settings(max_examples=300, database=None)
@given(st.data())
def test_a_size_stays_within_its_bounds(data: st.DataObject) -> None:
    low = data.draw(st.integers(0, 300))
    high = data.draw(st.integers(low, 5000))
    assert low <= data.draw(sizes(low, high)) <= high


def test_a_size_shrinks_to_low_and_reaches_the_far_boundaries() -> None:
    assert find(sizes(3, 100), lambda n: True) == 3
    assert find(sizes(0, COUNT_BOUND), lambda n: n > 1000) == 1023
    for threshold in (65, 257, 4096):
        assert find(sizes(0, COUNT_BOUND), lambda n, t=threshold: n == t) == threshold  # type: ignore[misc]


def test_bounds_the_wrong_way_round_are_refused() -> None:
    with pytest.raises(ValueError, match="low is above high"):
        sizes(5, 4)
