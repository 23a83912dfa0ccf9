"""The one rule for drawing a size: boundary-rich, at every scale.

Real backends change behaviour at their own constants: a slot array that grows when its
first chunk of 64 is full, a cap stored in a byte, a key buffer of 255 or 256 characters,
compaction every 1,024 lookups. A size drawn uniformly from a small range never reaches
them, and one drawn uniformly from a large range almost never lands on one. So every size
the suite draws (caps, numbers of sessions, id lengths, numbers of lookups, of objects and
of tensors) comes from :func:`sizes`, which draws a *kind* first, each alike:

* a small value, ``low`` to ``low + 4``;
* a power of two or a neighbour of one, ``2**k - 1``, ``2**k``, ``2**k + 1``;
* the spec's default cap (``DEFAULT_CAP``, ENV-6) or a neighbour of it;

then a value of that kind within ``[low, high]``. A draw shrinks to ``low``, so a failing
program shrinks to the smallest world that still fails. ``COUNT_BOUND`` and
``LENGTH_BOUND`` are the largest counts and lengths the suite draws by default.

:func:`boundaries` lists the values of the last two kinds, for a test or a benchmark to
ask whether a run reached one (bench/reach_runs.py measures it per threshold).
"""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

__all__ = [
    "COUNT_BOUND",
    "DEFAULT_CAP",
    "LENGTH_BOUND",
    "boundaries",
    "sizes",
]

#: ``int(max_sessions or 64)``: the cap a manager gets when none is configured (ENV-6).
DEFAULT_CAP = 64
#: The largest count drawn by default: sessions, lookups, objects, tensors (2**12).
COUNT_BOUND = 2**12
#: The largest length drawn by default: of a session id, of a text value (2**16).
LENGTH_BOUND = 2**16


@cache
def boundaries(low: int, high: int) -> tuple[int, ...]:
    """Powers of two and their neighbours, and ``DEFAULT_CAP`` and its neighbours, that
    lie in ``[low, high]``, ascending."""
    found = {DEFAULT_CAP - 1, DEFAULT_CAP, DEFAULT_CAP + 1}
    power = 1
    while power - 1 <= high:
        found.update((power - 1, power, power + 1))
        power *= 2
    return tuple(sorted(n for n in found if low <= n <= high))


@cache
def sizes(low: int = 0, high: int = COUNT_BOUND) -> st.SearchStrategy[int]:
    """A size in ``[low, high]`` by the boundary rule (module docstring); shrinks to ``low``.

    Cached per bounds: a machine draws sizes at every step, and Hypothesis reuses a
    strategy object it has seen."""
    if low > high:
        raise ValueError(f"sizes(low={low}, high={high}): low is above high")
    small = st.integers(low, min(high, low + 4))
    powers = boundaries(low, high)
    near_cap = tuple(n for n in (DEFAULT_CAP - 1, DEFAULT_CAP, DEFAULT_CAP + 1) if low <= n <= high)
    kinds = [small]
    if powers:
        kinds.append(st.sampled_from(powers))
    if near_cap:
        kinds.append(st.sampled_from(near_cap))
    return st.one_of(kinds)
