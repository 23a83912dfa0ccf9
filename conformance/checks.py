"""The one failure template every clause check uses.

A value the subject returned is quoted by ``short_repr``: whole when small, else its
first entries and how many more (a ``stats()`` of a million keys is not printed whole).

``stats()["nbytes:cpu"]=320, but should be 256 [ACCT-2: after put('frames', ...)]``
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn

from sessionstate.conformance._harness.applicability import NOT_CHECKED
from sessionstate.conformance._harness.supervision.frames import SUBJECT, kind_of
from sessionstate.conformance._harness.supervision.own_outcomes import SubjectOutcome, foreign
from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.clauses import clause as lookup_clause

if TYPE_CHECKING:
    import pytest

__all__ = [
    "ClauseFailure",
    "Lazy",
    "calling",
    "check",
    "check_bytes",
    "check_equal",
    "clauses_of",
    "focused_on",
    "forget_derailments",
    "nonzero",
    "not_checked_reason",
    "per_clause",
    "subject_frames",
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
        _fail(clause, f"{message} [{clause}]")


def check_equal(observed: object, expected: object, clause: str, what: str, when: str = "") -> None:
    """Fail ``clause`` unless ``observed == expected``, in the suite's one template."""
    __tracebackhide__ = True
    if observed != expected:
        where = f": {when}" if when else ""
        _fail(
            clause,
            f"{what}={short_repr(observed)}, but should be {short_repr(expected)} "
            f"[{clause}{where}]",
        )


def nonzero(by_device: Mapping[str, int]) -> dict[str, int]:
    """``by_device`` without its zero devices: a device with zero bytes may be present or
    absent (SPEC ACCT), so byte dicts are compared this way."""
    return {device: n for device, n in sorted(by_device.items()) if n}


def check_bytes(
    observed: Mapping[str, int], expected: Mapping[str, int], clause: str, what: str, when: str = ""
) -> None:
    """``check_equal`` for per-device byte dicts, zero devices ignored.

    The message shows what the subject returned, as it returned it (``{'meta': 0}``
    stays ``{'meta': 0}``): a normalised value would hide what the implementer must
    look for.
    """
    __tracebackhide__ = True
    if nonzero(observed) != nonzero(expected):
        where = f": {when}" if when else ""
        shown = dict(observed) if isinstance(observed, Mapping) else observed
        _fail(
            clause,
            f"{what}={short_repr(shown)}, but should be {short_repr(nonzero(expected))} "
            f"[{clause}{where}]",
        )


def clauses_of(error: BaseException) -> Iterable[str]:
    """Clause ids carried by ``error`` or, for an exception group, by its members."""
    if isinstance(error, ClauseFailure):
        yield error.clause
    for inner in getattr(error, "exceptions", ()):
        yield from clauses_of(inner)


class Lazy:
    """Text made only when shown: a call's words for ``calling`` or a message, from a step
    that makes thousands of calls and fails on at most one."""

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __str__(self) -> str:
        return self.make()


class calling:
    """Turn an unexpected exception from subject code into a failure of ``clause``.

    ``with calling("LRU-1", "get_or_create_session('a')"): ...`` reports
    ``get_or_create_session('a') raised KeyError('a') [LRU-1]``; ``call`` is anything
    whose ``str()`` is the call (built only on failure). Clause failures raised inside
    pass through unchanged, and so does anything else that is not an ``Exception``, but
    for pytest's outcomes (``pytest.skip``, ``.xfail``, ``.exit``) and a
    ``KeyboardInterrupt`` the suite did not raise: those become ``SubjectOutcome``, naming
    the call, and the test is not checked to the end (``own_outcomes``).

    A class rather than a ``@contextmanager`` generator: the bulk steps enter one per
    call into the subject, thousands a step, and a generator costs five times as much.
    """

    __slots__ = ("call", "clause")

    def __init__(self, clause: str, call: object) -> None:
        self.clause = clause
        self.call = call

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
        __tracebackhide__ = True
        if error is None or isinstance(error, ClauseFailure):
            return  # nothing raised, or it goes on as it is
        outcome = foreign(error)
        if outcome is not None:  # pytest.skip, .xfail, .exit, a KeyboardInterrupt: not ours
            raise SubjectOutcome(f"{self.call} raised {outcome}") from error
        if not isinstance(error, Exception):
            return
        clause = self.clause
        frames = subject_frames(error)
        try:
            _fail(clause, f"{self.call} raised {short_repr(error)} [{clause}]{frames}")
        except ClauseFailure as failure:
            raise failure from error


#: At most this many of the subject's frames follow a failure its code raised.
SUBJECT_FRAMES = 4


def subject_frames(error: BaseException) -> str:
    """Where in the subject's own code ``error`` was raised, as lines to follow a failure's
    first line (reports keep the first line; pytest's output shows these): the innermost
    ``SUBJECT_FRAMES`` frames of the traceback that are neither the suite's, the standard
    library's nor a library the suite runs on (``_harness.supervision.frames``), innermost last, each
    with its source line. ``""`` when none is the subject's."""
    import linecache
    import traceback

    frames = [
        f for f in traceback.extract_tb(error.__traceback__) if kind_of(f.filename) == SUBJECT
    ]
    if not frames:
        return ""
    lines = ["", "  raised in the subject's code (innermost last):"]
    for frame in frames[-SUBJECT_FRAMES:]:
        lines.append(f'    File "{frame.filename}", line {frame.lineno}, in {frame.name}')
        source = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
        if source:
            lines.append(f"      {source}")
    return "\n".join(lines)


class _Focus:
    """The clauses a focused block checks."""

    def __init__(self, clauses: frozenset[str]) -> None:
        self.clauses = clauses


_FOCUS: ContextVar[_Focus | None] = ContextVar("sessionstate_focus", default=None)

#: The first other clause that stopped a focused example since ``forget_derailments()``
#: (the plugin calls it before every test): what "not checked" names when no example of
#: a focused test got through.
_DERAILED: list[tuple[str, str]] = []


def _fail(clause: str, message: str) -> NoReturn:
    """Raise ``ClauseFailure``, or, inside ``focused_on`` for other clauses, drop the example.

    ``hypothesis.reject()`` marks the current example invalid: the search goes on
    with the next one, as for a failed ``assume``.
    """
    __tracebackhide__ = True
    lookup_clause(clause)  # an unknown id is a suite bug, caught loudly here
    focus = _FOCUS.get()
    if focus is not None and clause not in focus.clauses:
        if not _DERAILED:
            _DERAILED.append((clause, message))
        from hypothesis import currently_in_test_context, reject

        if currently_in_test_context():
            reject()
        raise Derailed(clause)  # a plain test: nothing else to try
    raise ClauseFailure(clause, message)


class Derailed(Exception):
    """A focused plain test stopped at another clause (the plugin skips it as not checked)."""


@contextmanager
def focused_on(*clauses: str) -> Iterator[None]:
    """Check only ``clauses`` in this block, whatever else the subject breaks.

    Put it around the body of a ``@given`` test (one example) or of a plain test. A
    failure of another clause does not fail the test: that example is dropped
    (``hypothesis.reject``) and the search goes on, so ``clauses`` are checked to the
    end on every example that reaches them. One such test per clause (``per_clause``),
    each tagged with its clause alone, keeps an expected failure of one clause from
    leaving the others unchecked. If no example got through, the plugin reports the
    test skipped as *not checked*, naming the clause that stopped the first one
    (``not_checked_reason``): never a vacuous pass.
    """
    token = _FOCUS.set(_Focus(frozenset(clauses)))
    try:
        yield
    finally:
        _FOCUS.reset(token)


def forget_derailments() -> None:
    """Start a test with no derailment recorded (see ``not_checked_reason``)."""
    _DERAILED.clear()


def not_checked_reason(error: BaseException) -> str | None:
    """Why a focused test that ended in ``error`` checked nothing, or ``None`` if it did.

    ``error`` is Hypothesis' ``Unsatisfiable`` (every example dropped) or ``Derailed``
    (a plain test's only run dropped), after at least one derailment.
    """
    from hypothesis.errors import Unsatisfiable

    if not _DERAILED or not isinstance(error, Unsatisfiable | Derailed):
        return None
    clause, message = _DERAILED[0]
    return f"{NOT_CHECKED}: every example stopped at {clause} first: {message}"


def per_clause(*clauses: str) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize("focus", ...)``: one case per clause, tagged with it alone.

    The test runs its checks inside ``with focused_on(focus):``; see there.
    """
    import pytest

    cases = [pytest.param(c, marks=pytest.mark.clause(c), id=c) for c in clauses]
    return pytest.mark.parametrize("focus", cases)


def item_clauses(item: Any) -> list[str]:
    """The clause ids a collected test is tagged with (its ``clause`` marks), in order."""
    ids: list[str] = []
    for mark in item.iter_markers("clause"):
        ids.extend(mark.args)
    return ids
