"""The failures a run's summary offers to reproduce, in the order a CI log is read.

Under the clause table, ``sessionstate check`` prints one ready command per failed clause:
every failed MUST clause first, then SHOULD, each in spec order, with the first failing
test that names it (a test named by several clauses is printed once, under all of them).
A clause whose failure an expectations file expects is not a failure, and is not listed;
nothing is cut, so no line points at a report that was not asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["failures_to_reproduce"]

#: Clause outcomes that are failures of the run (an expected one is "xfailed").
_FAILED = ("failed", "error")
#: The order levels are read in; a level not here comes last.
_LEVELS = ("MUST", "SHOULD")


def _level_rank(level: str) -> int:
    return _LEVELS.index(level) if level in _LEVELS else len(_LEVELS)


def _first_test(records: Sequence[Mapping[str, Any]], clause: str) -> Mapping[str, Any] | None:
    """The first failed test whose failure names ``clause`` (or, when its failure names no
    clause, one of whose clauses it is)."""
    for record in records:
        if record.get("outcome") != "failed":
            continue
        named = record.get("failed_clauses") or record.get("clauses") or []
        if clause in named:
            return record
    return None


def failures_to_reproduce(
    results: Mapping[str, Any],
) -> list[tuple[list[str], str, Mapping[str, Any]]]:
    """``(clauses, level, test record)`` for each failed test to offer, in reading order:
    the failed clauses of ``results`` (the JSON results), MUST first, then SHOULD, each
    with the first failed test that names it; ``level`` is the highest of ``clauses``."""
    clauses: Mapping[str, Mapping[str, Any]] = results.get("clauses", {})
    failed = [cid for cid, result in clauses.items() if result.get("outcome") in _FAILED]
    spec_order = {cid: n for n, cid in enumerate(clauses)}
    failed.sort(key=lambda cid: (_level_rank(str(clauses[cid].get("level"))), spec_order[cid]))
    offered: dict[str, tuple[list[str], str, Mapping[str, Any]]] = {}
    for cid in failed:
        record = _first_test(results.get("tests", []), cid)
        if record is None:
            continue
        nodeid = str(record["nodeid"])
        if nodeid in offered:
            offered[nodeid][0].append(cid)
        else:
            offered[nodeid] = ([cid], str(clauses[cid].get("level")), record)
    return list(offered.values())
