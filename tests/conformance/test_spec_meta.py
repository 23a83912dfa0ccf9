"""SPEC.md and the suite agree: every clause has a test, every test names known clauses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from typing import Any

import pytest

from sessionstate.conformance.clauses import LEVELS, PREFIXES, all_clauses, spec_text

_COLLECT = """
import json
from sessionstate.conformance._report.explain import clause_tests
print(json.dumps(clause_tests()))
"""


@cache
def _clause_tests() -> dict[str, list[str]]:
    # Collect in a separate process: nesting pytest.main inside a test run
    # would share plugin state with this one.
    out = subprocess.run(
        [sys.executable, "-c", _COLLECT], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


class TestSpecFile:
    def test_clause_ids_are_numbered_from_one_without_gaps(self) -> None:
        """Within each group, clause numbers run 1, 2, 3, ... in spec order."""
        by_group: dict[str, list[int]] = {}
        for clause in all_clauses().values():
            by_group.setdefault(clause.group, []).append(clause.number)
        for group, numbers in by_group.items():
            assert numbers == list(range(1, len(numbers) + 1)), group

    def test_every_clause_has_a_known_prefix_level_and_rationale(self) -> None:
        """Prefixes and levels come from the fixed lists; each clause states a rationale."""
        for clause in all_clauses().values():
            assert clause.group in PREFIXES, clause.id
            assert clause.level in LEVELS, clause.id
            assert "Rationale:" in clause.text, clause.id

    def test_prefixes_are_the_groups_in_spec_order(self) -> None:
        """Reports list groups in PREFIXES order, which must be the spec's own."""
        in_spec = list(dict.fromkeys(c.group for c in all_clauses().values()))
        assert list(PREFIXES) == in_spec

    def test_every_heading_parses(self) -> None:
        """No clause heading is malformed (and so silently dropped by the parser)."""
        headings = [line for line in spec_text().splitlines() if line.startswith("### ")]
        assert len(headings) == len(all_clauses())


class TestClauseCoverage:
    def test_every_clause_has_a_test(self) -> None:
        """A clause nobody checks is a promise the suite does not keep."""
        untested = sorted(set(all_clauses()) - set(_clause_tests()))
        assert untested == []

    def test_every_tagged_clause_exists(self) -> None:
        """Markers name only clauses of SPEC.md (the plugin also rejects them at collection)."""
        assert sorted(set(_clause_tests()) - set(all_clauses())) == []

    @pytest.mark.parametrize("group", sorted({c.group for c in all_clauses().values()}))
    def test_group_lives_in_its_own_module(self, group: str) -> None:
        """Clause group GROUP is checked in test_<group>.py (one group, one module)."""
        module = f"test_{group.lower()}.py"
        tests = [
            t for cid, ts in _clause_tests().items() if cid.startswith(group + "-") for t in ts
        ]
        assert any(module in t for t in tests), (group, tests[:3])


def _suite_test_functions() -> list[tuple[str, object]]:
    import importlib
    import pkgutil

    import sessionstate.conformance.suite as suite

    found = []
    for info in pkgutil.iter_modules(suite.__path__):
        module = importlib.import_module(f"{suite.__name__}.{info.name}")
        found += [
            (f"{info.name}::{name}", fn)
            for name, fn in vars(module).items()
            if name.startswith("test_") and callable(fn)
        ]
    return found


def _tags(marks: list[Any]) -> set[str]:
    """Clause tags on a test function and on its parametrized cases."""
    tags = set()
    for mark in marks:
        if mark.name == "clause":
            tags |= set(mark.args)
        elif mark.name == "parametrize":
            for case in mark.args[1]:
                tags |= _tags(list(getattr(case, "marks", ())))
    return tags


def test_every_clause_a_test_checks_by_name_is_among_its_tags() -> None:
    """A clause a test can fail is one it is tagged with, so a run narrowed to that clause
    runs it, and the report counts the test as one of the clause's.

    Static half of the rule: clause ids written in the test's own body. The zoo run
    checks the other half, what tests raised at run time (tests/zoo/test_zoo.py)."""
    import inspect
    import re

    literal = re.compile(r"\"([A-Z]+-\d+)\"")
    untagged = {}
    for name, fn in _suite_test_functions():
        tags = _tags(getattr(fn, "pytestmark", []))
        extra = set(literal.findall(inspect.getsource(fn))) - tags  # type: ignore[arg-type]
        if extra:
            untagged[name] = sorted(extra)
    assert untagged == {}


def test_the_version_is_the_newest_amendment() -> None:
    """The header's version is the newest version any clause was amended or added in: an
    amendment to a version the header does not name yet would leave readers citing the
    old text under the new number."""
    text = spec_text()
    header = re.search(r"^Version (\d+)\. ", text, re.M)
    assert header, "SPEC.md states no version"
    amended = [int(n) for n in re.findall(r"[Aa]mended in\s+version\s+(\d+)", text)]
    new = [int(n) for n in re.findall(r"[Nn]ew in\s+version\s+(\d+)", text)]
    assert int(header.group(1)) == max([1, *amended, *new]), (header.group(0), amended, new)
