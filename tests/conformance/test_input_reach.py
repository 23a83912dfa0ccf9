"""The ENV and KEY strategies reach every Python rule their clauses rest on, often enough.

Counts come from Hypothesis' derandomised search (``conformance.input_reach``), so
they are the same on every run of the same code; the floors are about half the
shares measured when they were set (``bench/reachability.py`` publishes them).
"""

from __future__ import annotations

from sessionstate.conformance.input_reach import (
    ID_FAMILIES,
    MAX_RULES,
    id_reach,
    max_value_reach,
)

#: Share of set MAX_SESSIONS values exercising each int() rule, at least.
MAX_FLOORS = {
    "non-ASCII digit": 0.15, "mixed scripts": 0.06, "underscore": 0.2, "sign": 0.15,
    "ASCII whitespace": 0.2, "non-ASCII whitespace": 0.3, "whitespace int() rejects": 0.013,
    "inner whitespace": 0.013, "non-Nd numeric": 0.01, "empty or blank": 0.05,
    "zero or negative": 0.09, "beyond 2**63": 0.05, "past the digit limit": 0.01,
    "rejected": 0.3,
}  # fmt: skip
#: Share of drawn groups of ids exercising each KEY family, at least.
ID_FLOORS = {
    "NFC vs NFD": 0.035, "whitespace only": 0.07, "case only": 0.013, "str subclass": 0.25,
    "equal, printed differently": 0.05, "falsy": 0.008, "quote or backslash": 0.12,
    "control character": 0.17,
}  # fmt: skip
#: Values drawn per measurement: with 300, values past the digit limit were drawn by luck
#: (none once the draws stopped depending on the process's imports).
EXAMPLES = 1000


def test_max_values_reach_each_int_rule() -> None:
    """Every int() rule of ``MAX_RULES`` in at least its floor's share of set values."""
    counts = max_value_reach(EXAMPLES)
    shares = {rule: counts[rule] / counts["values"] for rule in MAX_RULES}
    assert {r: s for r, s in shares.items() if s < MAX_FLOORS[r]} == {}, shares


def test_ids_reach_each_key_family() -> None:
    """Every family of ``ID_FAMILIES`` in at least its floor's share of drawn groups."""
    counts = id_reach(EXAMPLES)
    shares = {family: counts[family] / counts["groups"] for family in ID_FAMILIES}
    assert {f: s for f, s in shares.items() if s < ID_FLOORS[f]} == {}, shares
