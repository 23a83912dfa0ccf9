"""Expectation files: known failures an implementer declares, each with a reason.

One entry a line: ``CLAUSE-OR-TEST-ID  xfail|skip  reason``. Blank lines and
``#`` comments are ignored. A ``skip`` entry for a clause skips the tests whose
clauses are all skipped; an ``xfail`` entry turns that clause's failures into
``xfailed``. A test id is matched against the end of pytest node ids
(``test_acct.py::test_name``, or just ``test_name``); without a ``[...]`` part it
matches every parametrization of the test, with one only that one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from sessionstate.conformance._report.text import short_repr
from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.subject import UsageError

__all__ = [
    "Expectation",
    "Expectations",
    "clause_skips",
    "expected_outcome",
    "first_for_test",
    "parse_expectations",
    "unmatched",
]

_CLAUSE_ID = re.compile(r"^[A-Z]+-\d+$")


@dataclass(frozen=True)
class Expectation:
    target: str
    kind: str  # "xfail" or "skip"
    reason: str
    line: int

    @cached_property
    def is_clause(self) -> bool:
        return bool(_CLAUSE_ID.match(self.target))

    @cached_property
    def test_name(self) -> str:
        """The test function a test entry names (``test_x`` of ``a.py::test_x[1]``): every
        node id it matches ends in that function (``_test_name``)."""
        return _test_name(self.target)

    def matches_test(self, nodeid: str) -> bool:
        """Whether this test entry names ``nodeid``: the end of the node id, after a
        ``::`` or a ``/``. Without ``[...]`` it names every parametrization of the test."""
        if self.is_clause:
            return False
        candidates = [nodeid]
        if "[" not in self.target:
            candidates.append(nodeid.split("[", 1)[0])
        return any(
            candidate == self.target
            or candidate.endswith("::" + self.target)
            or candidate.endswith("/" + self.target)
            for candidate in candidates
        )


def _test_name(nodeid: str) -> str:
    """The function part of a node id or test entry: after the last ``::`` or ``/``,
    before any ``[...]``."""
    return re.split(r"::|/", nodeid.split("[", 1)[0])[-1]


class Expectations(list[Expectation]):
    """The entries of an expectations file, in file order, with an index that finds a
    test's entries without going through the others: a file of 200,000 lines costs
    each of the suite's tests a lookup, not 200,000 comparisons."""

    @cached_property
    def _by_test(self) -> dict[str, list[Expectation]]:
        index: dict[str, list[Expectation]] = {}
        for entry in self:
            if not entry.is_clause:
                index.setdefault(entry.test_name, []).append(entry)
        return index

    @cached_property
    def _odd(self) -> list[Expectation]:
        """Test entries whose name has a ``]`` (``x]`` can end a node id's parameters):
        compared with every test, as before the index."""
        return [e for e in self if not e.is_clause and "]" in e.test_name]

    @cached_property
    def clause_skips(self) -> dict[str, Expectation]:
        return {e.target: e for e in self if e.is_clause and e.kind == "skip"}

    def for_test(self, nodeid: str) -> list[Expectation]:
        """The test entries that match ``nodeid``, in file order."""
        found = [*self._by_test.get(_test_name(nodeid), []), *self._odd]
        if self._odd:
            found = sorted(set(found), key=lambda e: e.line)
        return [e for e in found if e.matches_test(nodeid)]


def _indexed(expectations: Sequence[Expectation]) -> Expectations:
    return expectations if isinstance(expectations, Expectations) else Expectations(expectations)


def first_for_test(expectations: Sequence[Expectation], nodeid: str) -> Expectation | None:
    """The first test entry (in file order) that matches ``nodeid``, if any."""
    found = _indexed(expectations).for_test(nodeid)
    return found[0] if found else None


def clause_skips(expectations: Sequence[Expectation]) -> dict[str, Expectation]:
    """Clause id -> its ``skip`` entry (the last one when a clause has several)."""
    return _indexed(expectations).clause_skips


def unmatched(
    expectations: Sequence[Expectation], tests: Iterable[tuple[str, Iterable[str]]]
) -> list[Expectation]:
    """The entries that name none of ``tests`` (``(nodeid, clauses)`` pairs): a clause
    entry no test is tagged with, a test entry no node id matches. In file order."""
    index = _indexed(expectations)
    matched_tests: set[int] = set()
    tagged: set[str] = set()
    for nodeid, clauses in tests:
        matched_tests.update(id(e) for e in index.for_test(nodeid))
        tagged.update(clauses)
    return [
        e for e in index if (e.target not in tagged if e.is_clause else id(e) not in matched_tests)
    ]


def parse_expectations(path: str | Path) -> Expectations:
    """Parse an expectations file; ``UsageError`` names the file and line of any problem
    (a file that is not UTF-8 text, a binary file, a line of the wrong form). Linear in
    the file's size."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read expectations file {str(path)!r}: {error.strerror}") from None
    if b"\0" in data:
        raise UsageError(f"expectations file {str(path)!r} is binary (it holds NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        at = data.count(b"\n", 0, error.start) + 1
        raise UsageError(
            f"{path}:{at}: not UTF-8 text (byte 0x{data[error.start]:02x}); save the "
            "expectations file as UTF-8"
        ) from None
    known = all_clauses()
    entries = Expectations()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if raw.lstrip().startswith("#") else raw.strip()
        if not line:
            continue
        parts = line.split(None, 2)
        where = f"{path}:{number}"
        if len(parts) < 3 or not parts[2].strip():
            raise UsageError(
                f"{where}: expected 'CLAUSE-OR-TEST-ID xfail|skip reason', got "
                f"{short_repr(raw.strip())}"
            )
        target, kind, reason = parts
        if kind not in ("xfail", "skip"):
            raise UsageError(f"{where}: kind must be 'xfail' or 'skip', got {short_repr(kind)}")
        if _CLAUSE_ID.match(target) and target not in known:
            raise UsageError(f"{where}: unknown clause id {short_repr(target)}")
        entries.append(Expectation(target, kind, reason.strip(), number))
    return entries


#: How the plugin marks a test an entry expects to fail: ``pytest.mark.xfail(reason=...)``.
EXPECTED = "expected: "


def expected_outcome(mark_reason: str, failure: str) -> tuple[str, str]:
    """A test's outcome and note when an ``xfail`` entry named it (``mark_reason``, the
    reason the plugin gave its xfail mark): ``xfailed`` with the entry's reason (and how it
    failed) when it failed (``failure``: its first line), else ``xpassed``: the expected
    failure passed, and the entry is stale."""
    reason = mark_reason.removeprefix(EXPECTED)
    if failure:
        return "xfailed", f"{EXPECTED}{reason} (it failed: {failure})"
    return "xpassed", xpass_note(reason)


def xpass_note(reason: str) -> str:
    """The note of an expected failure that passed (XPASS), quoting the entry's reason."""
    return f"expected to fail ({reason}), but passed: remove the expectation"
