"""The reliability table (tests/reliability/README.md) names tests that exist, and every
file of tests/reliability: a case whose test was renamed or removed fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "reliability" / "README.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _named() -> list[tuple[str, str]]:
    return NAMED.findall(TABLE.read_text(encoding="utf-8"))


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_every_test_the_table_names_exists() -> None:
    named = _named()
    assert len(named) >= 20
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (ROOT / path).is_file() or name not in _tests_in(ROOT / path)
    ]
    assert missing == []


def test_every_file_of_the_folder_is_named() -> None:
    files = {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "reliability").glob("test_*.py")}
    assert files - {path for path, _ in _named()} == set()


def test_a_renamed_test_would_be_missed() -> None:
    """The check is not vacuous: a name that is no test of its file is found missing."""
    assert "test_no_such_case" not in _tests_in(ROOT / "tests/reliability/test_forks.py")
    assert "test_a_fuzz_worker_is_armed_for_good" in _tests_in(
        ROOT / "tests/reliability/test_forks.py"
    )
