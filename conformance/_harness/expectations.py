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
from dataclasses import dataclass
from pathlib import Path

from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.subject import UsageError

__all__ = ["Expectation", "parse_expectations"]

_CLAUSE_ID = re.compile(r"^[A-Z]+-\d+$")


@dataclass(frozen=True)
class Expectation:
    target: str
    kind: str  # "xfail" or "skip"
    reason: str
    line: int

    @property
    def is_clause(self) -> bool:
        return bool(_CLAUSE_ID.match(self.target))

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


def parse_expectations(path: str | Path) -> list[Expectation]:
    """Parse an expectations file; ``UsageError`` names the file and line of any problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read expectations file {str(path)!r}: {error.strerror}") from None
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if raw.lstrip().startswith("#") else raw.strip()
        if not line:
            continue
        parts = line.split(None, 2)
        where = f"{path}:{number}"
        if len(parts) < 3 or not parts[2].strip():
            raise UsageError(
                f"{where}: expected 'CLAUSE-OR-TEST-ID xfail|skip reason', got {raw.strip()!r}"
            )
        target, kind, reason = parts
        if kind not in ("xfail", "skip"):
            raise UsageError(f"{where}: kind must be 'xfail' or 'skip', got {kind!r}")
        if _CLAUSE_ID.match(target) and target not in all_clauses():
            raise UsageError(f"{where}: unknown clause id {target!r}")
        entries.append(Expectation(target, kind, reason.strip(), number))
    return entries
