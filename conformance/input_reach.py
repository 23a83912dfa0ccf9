"""How much of the input space the ENV and KEY strategies reach, counted over drawn values.

A clause rests on a Python rule only where the inputs exercise it: ENV-3 on ``int()``
reading non-ASCII digits only if drawn values hold some, KEY-2 on code-point equality
only if drawn ids differ invisibly. ``max_value_reach`` and ``id_reach`` draw from the
suite's own strategies (``env_values.max_values``, ``strategies.lookalike_ids``) with
Hypothesis' derandomised search, so the counts are the same on every run of the same
code, and count the values exercising each rule (``_model.python_rules``).
``bench/reachability.py`` publishes them; ``tests/conformance/test_input_reach.py``
holds them above floors.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants

from sessionstate.conformance._model.python_rules import id_families, max_value_rules
from sessionstate.conformance.env_values import max_values
from sessionstate.conformance.strategies import lookalike_ids

__all__ = ["ID_FAMILIES", "MAX_RULES", "id_reach", "max_value_reach", "no_local_constants"]

#: The int() rules of a MAX_SESSIONS value, in the order tables show them.
MAX_RULES = (
    "non-ASCII digit", "mixed scripts", "underscore", "sign", "ASCII whitespace",
    "non-ASCII whitespace", "whitespace int() rejects", "inner whitespace", "non-Nd numeric",
    "empty or blank", "zero or negative", "beyond 2**63", "past the digit limit", "rejected",
)  # fmt: skip
#: The KEY families of a group of ids, in the order tables show them.
ID_FAMILIES = (
    "NFC vs NFD", "whitespace only", "case only", "str subclass",
    "equal, printed differently", "falsy", "quote or backslash", "control character",
)  # fmt: skip

_SEARCH = {
    "database": None,
    "derandomize": True,
    "deadline": None,
    "suppress_health_check": list(HealthCheck),
}


@contextmanager
def no_local_constants() -> Iterator[None]:
    """Derandomized draws that depend on nothing but the code drawn: Hypothesis mixes in
    constants from every imported module outside site-packages (its "local constants"),
    so the same seed draws other values in an editable install than in an installed one,
    and in a pytest-xdist worker after other tests imported other modules. Inside, that
    pool is empty, as in an installed package with no local module imported."""
    get, empty = providers._get_local_constants, Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = get
        providers.CONSTANTS_CACHE.cache.clear()


def max_value_reach(examples: int) -> Counter[str]:
    """Over ``examples`` drawn MAX_SESSIONS values: ``"values"`` (set ones) and per rule."""
    counts: Counter[str] = Counter()

    @settings(max_examples=examples, **_SEARCH)  # type: ignore[arg-type]
    @given(max_values())
    def draw(value: str | None) -> None:
        if value is not None:
            counts["values"] += 1
            counts.update(max_value_rules(value))

    with no_local_constants():
        draw()
    return counts


def id_reach(examples: int) -> Counter[str]:
    """Over ``examples`` drawn groups of ids: ``"groups"`` and per family (any pair in it)."""
    counts: Counter[str] = Counter()

    @settings(max_examples=examples, **_SEARCH)  # type: ignore[arg-type]
    @given(lookalike_ids())
    def draw(ids: list[object]) -> None:
        counts["groups"] += 1
        counts.update(set().union(*(id_families(a, b) for a, b in itertools.combinations(ids, 2))))

    with no_local_constants():
        draw()
    return counts
