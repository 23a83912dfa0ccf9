"""Expectation test ids as the docs write them, and the verdict line under ``--strict``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstate.conformance._harness.expectations import Expectation, parse_expectations

REPO = Path(__file__).resolve().parents[2]


def docs_expectations_example(tmp_path: Path) -> Path:
    """The expectations example of docs/implementers.md, as a file."""
    text = (REPO / "docs" / "implementers.md").read_text(encoding="utf-8")
    section = text.split("\n## Expectations files\n", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "docs/implementers.md has no expectations example"
    path = tmp_path / "docs.expectations"
    path.write_text(block.group(1), encoding="utf-8")
    return path


def _entry(target: str) -> Expectation:
    return Expectation(target, "skip", "reason", 1)


@pytest.mark.parametrize(
    ("target", "nodeid", "matches"),
    [
        ("test_acct.py::test_sparse", "conformance/suite/test_acct.py::test_sparse[coo]", True),
        ("test_acct.py::test_sparse", "conformance/suite/test_acct.py::test_sparse[csr]", True),
        ("test_acct.py::test_sparse", "conformance/suite/test_acct.py::test_sparse", True),
        ("test_sparse", "conformance/suite/test_acct.py::test_sparse[coo]", True),
        ("test_acct.py::test_sparse[coo]", "suite/test_acct.py::test_sparse[coo]", True),
        ("test_acct.py::test_sparse[coo]", "suite/test_acct.py::test_sparse[csr]", False),
        ("test_acct.py::test_sparse", "suite/test_acct.py::test_sparse_tensors[coo]", False),
        ("test_acct.py::test_sparse", "suite/other_test_acct.py::test_sparse[coo]", False),
        ("ACCT-7", "suite/test_acct.py::ACCT-7", False),
    ],
)
def test_a_test_id_without_brackets_names_every_parametrization(
    target: str, nodeid: str, matches: bool
) -> None:
    assert _entry(target).matches_test(nodeid) is matches


def test_the_docs_example_parses_and_each_entry_matches_the_suite(run_cli, tmp_path) -> None:
    """Every line of the documented example names a real clause or test of the suite: a run
    of their clauses with it matches every entry, and skips each parametrization of the
    test it names."""
    path = docs_expectations_example(tmp_path)
    entries = parse_expectations(path)
    tests = [e for e in entries if not e.is_clause]
    assert tests and len(tests) < len(entries)  # it shows both kinds
    listing = subprocess.run(
        [sys.executable, "-c", "import json; from sessionstate.conformance._report.explain import "
         "clause_tests; print(json.dumps(clause_tests()))"],
        capture_output=True, text=True, cwd=tmp_path, check=True, timeout=300,
    )  # fmt: skip
    by_clause: dict[str, list[str]] = json.loads(listing.stdout.splitlines()[-1])
    clauses = {e.target for e in entries if e.is_clause}
    named = {}
    for entry in tests:
        named[entry.reason] = [
            n for ids in by_clause.values() for n in ids if entry.matches_test(n)
        ]
        assert named[entry.reason], f"{entry.target} names no test of the suite"
        clauses |= {cid for cid, ids in by_clause.items() if set(ids) & set(named[entry.reason])}

    selection = [arg for cid in sorted(clauses) for arg in ("--clause", cid)]
    result = run_cli("check", *selection, "--expectations", str(path), "--report-json", "r.json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["unmatched_expectations"] == []
    for reason, nodeids in named.items():
        skipped = [t for t in report["tests"] if t["message"] == f"Skipped: expected: {reason}"]
        assert len(skipped) == len(set(nodeids)) > 1, (skipped, nodeids)


def test_strict_with_an_unmatched_expectation_does_not_print_conformant(run_cli, tmp_path):
    """Exit 2 (a stale expectations file; no clause failed), and the verdict line says why
    rather than CONFORMANT."""
    (tmp_path / "expect.txt").write_text("LOCK-1 skip not run in this selection\n")
    result = run_cli("check", "--clause", "ENV-1", "--expectations", "expect.txt", "--strict")
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr
    verdict = [line for line in result.stdout.splitlines() if line.startswith("verdict:")]
    assert len(verdict) == 1, result.stdout[-3000:]
    assert "CONFORMANT" not in result.stdout
    assert verdict[0].startswith(
        "verdict: STALE EXPECTATIONS (--strict: 1 expectation matched no test or clause) (1 passed)"
    ), verdict
