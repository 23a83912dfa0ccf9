"""The clause index: which of the suite's tests carries which clause tags.

A test's tags exist only once pytest has collected the suite (parametrized cases carry
their own marks, machines add tags per subject), and collecting imports torch and the
whole suite: seconds of work to answer a question the source already settles. So the
answer is stored beside this module, as ``clause_index.json``, made by collecting the
suite against the bundled reference subject (the default target), and ``explain`` reads
it in milliseconds:

* ``python -m sessionstate.conformance._report.clause_index`` rewrites it;
* ``tests/conformance/test_clause_index.py`` collects the suite and fails while the
  stored index differs from what collection finds, so it cannot go stale unnoticed.

Node ids are stored from the suite's folder on (``test_lru.py::test_program[LRU-4-3]``),
so the index is the same in a checkout and in an installed wheel.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from sessionstate.conformance._harness.short_ids import short_id

__all__ = ["INDEX_PATH", "build", "load", "write"]

INDEX_PATH = Path(__file__).resolve().with_name("clause_index.json")

#: The index's layout; a reader refuses another.
_FORMAT = 1


class _Collector:
    """A pytest plugin object recording each collected test's clause tags, in order."""

    def __init__(self) -> None:
        self.tags: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        from sessionstate.conformance.checks import item_clauses

        for item in items:
            self.tags[short_id(item.nodeid)] = list(item_clauses(item))


def build() -> dict[str, list[str]]:
    """Collect the suite (against the default subject) and return node id -> tags,
    first tag first. Imports pytest, torch and the suite: for the index's writer and its
    freshness test, never for ``explain``."""
    import pytest

    collector = _Collector()
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            "--pyargs", "sessionstate.conformance.suite"]  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        status = pytest.main(args, plugins=[collector])
    if status != 0:
        raise RuntimeError(f"collecting the suite failed (pytest exit {int(status)})")
    return dict(sorted(collector.tags.items()))


def write(path: Path = INDEX_PATH) -> dict[str, list[str]]:
    """Build the index and store it at ``path``; returns what was stored."""
    tags = build()
    # One test a line, so that a change to the suite reads as a short diff.
    rows = [f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(v)}" for k, v in tags.items()]
    body = ",\n".join(rows)
    text = f'{{"format": {_FORMAT}, "tests": {{\n{body}\n}}}}\n'
    path.write_text(text, encoding="utf-8")
    return tags


def load(path: Path = INDEX_PATH) -> dict[str, list[str]]:
    """The stored index: short node id -> the clauses the test is tagged with."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a clause index of format {_FORMAT}")
    tests = payload["tests"]
    assert isinstance(tests, dict)
    return {str(k): [str(c) for c in v] for k, v in tests.items()}


if __name__ == "__main__":
    written = write()
    print(f"{INDEX_PATH}: {len(written)} tests", file=sys.stderr)
