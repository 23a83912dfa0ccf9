"""A run that selects clauses (or one test) imports only the suite modules holding its
tests, and selects exactly the tests a full collection would have kept."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sessionstate.conformance._report.clause_index import load
from sessionstate.conformance.clauses import all_clauses

_PROBE = """
import json, sys, pytest
from pathlib import Path
from sessionstate.conformance._harness.short_ids import SUITE_DIR

class Probe:
    def pytest_collection_finish(self, session):
        files = [Path(getattr(m, "__file__", None) or "/") for m in list(sys.modules.values())]
        imported = sorted({f.name for f in files if f.parent == SUITE_DIR and f.name.startswith("test_")})
        ids = [item.nodeid.rpartition("/")[2] for item in session.items]
        print("PROBE " + json.dumps({"imported": imported, "ids": ids}))

args = ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-p", "no:xdist",
        "-q", "--collect-only", *sys.argv[1:]]
sys.exit(pytest.main(args, plugins=[Probe()]))
"""


def _collect(*args: str) -> dict[str, list[str]]:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("PROBE ")]
    found: dict[str, list[str]] = json.loads(line.removeprefix("PROBE "))
    return found


def _expected(selection: list[str]) -> list[str]:
    known = all_clauses()
    chosen = {c for c in known if c in selection or known[c].group in selection}
    return sorted(test for test, tags in load().items() if set(tags) & chosen)


@pytest.mark.parametrize("selection", [["ENV-4"], ["LRU"], ["ACCT-3", "OBJ-9"]])
def test_a_clause_selection_imports_only_its_modules(selection: list[str]) -> None:
    args = [arg for cid in selection for arg in ("--sessionstate-clause", cid)]
    found = _collect(*args)
    expected = _expected(selection)
    assert sorted(found["ids"]) == expected
    assert set(found["imported"]) == {test.partition("::")[0] for test in expected}


def test_a_reproduction_imports_only_its_module() -> None:
    test_id = "test_env.py::test_resolution_matches_oracle[ENV-4]"
    assert test_id in load()
    found = _collect("--sessionstate-reproduce", test_id)
    assert found["ids"] == [test_id]
    assert found["imported"] == ["test_env.py"]


def test_without_a_selection_every_module_is_collected() -> None:
    found = _collect("--sessionstate-profile", "quick")
    assert sorted(found["ids"]) == sorted(load())
    assert set(found["imported"]) == {test.partition("::")[0] for test in load()}


def test_each_module_is_known_by_the_clauses_its_tests_check() -> None:
    """What ``_harness.collection`` narrows by: the clause index, module by module."""
    from sessionstate.conformance._harness.collection import _clauses_by_module

    modules = _clauses_by_module()
    assert {"ENV-1", "ENV-4"} <= modules["test_env.py"]
    assert not any(cid.startswith("ENV-") for cid in modules["test_lru.py"])
    assert set(modules) == {test.partition("::")[0] for test in load()}
