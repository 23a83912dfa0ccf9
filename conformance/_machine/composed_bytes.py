"""Checks of composed byte counts (ACCT-10, ACCT-11) that stay about composition.

A session's count is its objects' and attrs' bytes through one ``seen``; the
manager's is every table session's through one ``seen``. Both are built on the
subject's leaf accounting, whose own clauses (ACCT-1..9) are checked directly. A
subject whose leaf accounting is wrong on some value (upstream keys storages by
``(device, data_ptr)``, so two distinct meta storages collide: ACCT-3) would fail
every composed check that holds such a value, though it composes correctly, and
ACCT-10 and ACCT-11 would read as failed for a bug of ACCT-3's.

So when the composed count differs from the suite's expectation, it is compared
with the subject's own accounting of exactly the values that must be counted, in
one call with a fresh ``seen``: equal means the composition is right and the
difference is the leaf accounting's, for its own clauses to report; otherwise the
composed clause fails, against the suite's expectation, as before. Without an
``accounting`` hook there is nothing to compare with, and the check is strict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessionstate.conformance._model.memory import Held, expected_bytes
from sessionstate.conformance.checks import calling, check_bytes, nonzero

__all__ = ["check_composed_bytes"]


def check_composed_bytes(
    subject: Any,
    observed: Mapping[str, int],
    held: Iterable[Held],
    clause: str,
    what: str,
    when: str,
) -> None:
    """``observed`` must be the bytes of ``held`` (each allocation once), or, where the
    subject's leaf accounting disagrees with that, exactly what it gives for ``held``."""
    __tracebackhide__ = True
    held = list(held)
    expected = expected_bytes(held)
    if nonzero(observed) != nonzero(expected) and subject.accounting is not None:
        values = [h.value for h in held]
        with calling(clause, "accounting(<the values counted>, set())"):
            own = dict(subject.accounting(values, set()))
        if nonzero(own) != nonzero(expected) and nonzero(observed) == nonzero(own):
            return  # composed right over a leaf count the ACCT-1..9 tests judge
    check_bytes(observed, expected, clause, what, when)
