"""The clause registry, parsed from the shipped SPEC.md (the single source of truth)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

__all__ = ["LEVELS", "PREFIXES", "Clause", "all_clauses", "clause", "spec_text"]

LEVELS = ("MUST", "SHOULD")
#: Clause groups in the order SPEC.md gives them (``tests/conformance/test_spec_meta.py``
#: checks it): reports and the compliance matrix list groups in this order.
PREFIXES = (
    "KEY",
    "LRU",
    "RESET",
    "DROP",
    "ACCT",
    "STATS",
    "ENV",
    "LOCK",
    "ADMIT",
    "OBJ",
    "ADAPT",
    "LOST",
)

_HEADING = re.compile(r"^### ([A-Z]+-\d+) · (MUST|SHOULD) · (.+)$")
_REQUIRES = re.compile(r"^Requires: ([a-z_, ]+)$")


@dataclass(frozen=True)
class Clause:
    """One numbered requirement of the spec."""

    id: str
    level: str
    title: str
    text: str
    requires: frozenset[str] = frozenset()

    @property
    def group(self) -> str:
        return self.id.split("-")[0]

    @property
    def number(self) -> int:
        return int(self.id.split("-")[1])


def spec_text() -> str:
    """The SPEC.md shipped with this version of the suite."""
    return files("sessionstate.conformance").joinpath("SPEC.md").read_text(encoding="utf-8")


@cache
def all_clauses() -> dict[str, Clause]:
    """Every clause by id, in spec order."""
    clauses: dict[str, Clause] = {}
    current: list[str] = []
    header: tuple[str, str, str] | None = None

    def flush() -> None:
        if header is None:
            return
        requires: frozenset[str] = frozenset()
        body = []
        for line in current:
            match = _REQUIRES.match(line)
            if match:
                requires = frozenset(part.strip() for part in match.group(1).split(","))
            else:
                body.append(line)
        clause_id, level, title = header
        clauses[clause_id] = Clause(clause_id, level, title, "\n".join(body).strip(), requires)

    for line in spec_text().splitlines():
        match = _HEADING.match(line)
        if match or line.startswith("## "):
            flush()
            header = match.groups() if match else None  # type: ignore[assignment]
            current = []
        else:
            current.append(line)
    flush()
    return clauses


def clause(clause_id: str) -> Clause:
    """The clause with this id; ``KeyError`` names the id when it is unknown."""
    try:
        return all_clauses()[clause_id]
    except KeyError:
        raise KeyError(f"unknown clause id {clause_id!r}") from None
