"""The one failure template every clause check uses.

``stats()["nbytes:cpu"]=320, but should be 256 [ACCT-2: after put('frames', ...)]``
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from .clauses import clause as lookup_clause

__all__ = [
    "ClauseFailure",
    "calling",
    "check",
    "check_bytes",
    "check_equal",
    "clauses_of",
    "focused_on",
]


class ClauseFailure(AssertionError):
    """A subject broke a clause; ``clause`` is its id, for per-clause reports."""

    def __init__(self, clause: str, message: str) -> None:
        super().__init__(message)
        self.clause = clause


def check(condition: object, clause: str, message: str) -> None:
    """Fail ``clause`` with ``message`` unless ``condition`` holds."""
    __tracebackhide__ = True
    if not condition:
        lookup_clause(clause)  # an unknown id is a suite bug, caught loudly here
        raise ClauseFailure(clause, f"{message} [{clause}]")


def check_equal(observed: object, expected: object, clause: str, what: str, when: str = "") -> None:
    """Fail ``clause`` unless ``observed == expected``, in the suite's one template."""
    __tracebackhide__ = True
    if observed != expected:
        lookup_clause(clause)
        where = f": {when}" if when else ""
        raise ClauseFailure(
            clause, f"{what}={observed!r}, but should be {expected!r} [{clause}{where}]"
        )


def _nonzero(by_device: Mapping[str, int]) -> dict[str, int]:
    # A device with zero bytes may be present or absent (SPEC ACCT, free).
    return {device: n for device, n in sorted(by_device.items()) if n}


def check_bytes(
    observed: Mapping[str, int], expected: Mapping[str, int], clause: str, what: str, when: str = ""
) -> None:
    """``check_equal`` for per-device byte dicts, zero devices ignored."""
    __tracebackhide__ = True
    check_equal(_nonzero(observed), _nonzero(expected), clause, what, when)


def clauses_of(error: BaseException) -> Iterable[str]:
    """Clause ids carried by ``error`` or, for an exception group, by its members."""
    if isinstance(error, ClauseFailure):
        yield error.clause
    for inner in getattr(error, "exceptions", ()):
        yield from clauses_of(inner)


@contextmanager
def calling(clause: str, call: str) -> Iterator[None]:
    """Turn an unexpected exception from subject code into a failure of ``clause``.

    ``with calling("LRU-1", "get_or_create_session('a')"): ...`` reports
    ``get_or_create_session('a') raised KeyError('a') [LRU-1]``. Clause
    failures raised inside pass through unchanged.
    """
    __tracebackhide__ = True
    try:
        yield
    except ClauseFailure:
        raise
    except Exception as error:
        lookup_clause(clause)
        raise ClauseFailure(clause, f"{call} raised {error!r} [{clause}]") from error


@contextmanager
def focused_on(clause: str) -> Iterator[None]:
    """In a test of one clause, a failure of another ends the example quietly.

    For tests whose examples are independent (an oracle over drawn inputs): one
    such test per clause, each tagged with its clause alone, checks every clause
    to the end even when the subject breaks another one on some inputs, so an
    expected failure of ENV-1 leaves ENV-2..6 checked, not unchecked.
    """
    try:
        yield
    except ClauseFailure as error:
        if error.clause != clause:
            return
        raise
