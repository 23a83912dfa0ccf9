"""The stored clause index is what collecting the suite finds, and ``explain`` built on it
lists every place a clause lives, each place real.

The index is collected in a subprocess (a pytest run inside this one would share its
plugins and its imports). Regenerate a stale index with
``python -m sessionstate.conformance._report.clause_index``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstate.conformance._report import clause_index, explain
from sessionstate.conformance.clauses import all_clauses
from sessionstate.fixtures.zoo import ZOO

_ROOT = Path(explain.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def collected() -> dict[str, list[str]]:
    """Short node id -> tags, as a fresh collection of the suite finds them."""
    code = (
        "import json, sys\n"
        "from sessionstate.conformance._report.clause_index import build\n"
        "sys.stdout.write(json.dumps(build()))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    tags: dict[str, list[str]] = json.loads(run.stdout)
    return tags


def test_the_stored_index_is_what_collection_finds(collected: dict[str, list[str]]) -> None:
    stored = clause_index.load()
    missing = sorted(set(collected) - set(stored))
    extra = sorted(set(stored) - set(collected))
    changed = sorted(k for k in set(stored) & set(collected) if stored[k] != collected[k])
    assert (missing, extra, changed) == ([], [], []), (
        "the clause index is stale: run `python -m sessionstate.conformance._report.clause_index`"
    )


@pytest.mark.parametrize("clause_id", sorted(all_clauses()))
def test_every_tagged_test_is_listed(clause_id: str, collected: dict[str, list[str]]) -> None:
    tagged = sorted(nodeid for nodeid, tags in collected.items() if clause_id in tags)
    assert sorted(explain.clause_tests().get(clause_id, [])) == tagged


@pytest.mark.parametrize("clause_id", sorted(all_clauses()))
def test_every_listed_place_exists_and_names_the_clause(clause_id: str) -> None:
    places = [
        *explain.mentions(
            clause_id, [_ROOT / "conformance/_model", _ROOT / "conformance/_machine"]
        ),
        *explain.mentions(clause_id, explain.public_models()),
        *explain.reference_tags(clause_id),
    ]
    for place in places:
        lines = (_ROOT / place.path).read_text(encoding="utf-8").splitlines()
        assert lines[place.line - 1].strip() == place.text, place
        assert clause_id in explain._ids(place.text), place
    imported = sorted((f"fixtures/zoo/{e.name}.py", e.bug) for e in ZOO if clause_id in e.kills)
    assert sorted(explain.zoo_subjects(clause_id)) == imported
    for path, _ in explain.zoo_subjects(clause_id):
        assert (_ROOT / path).is_file()


def test_the_models_of_obj9_and_the_oracle_of_adapt6_are_listed() -> None:
    """The places the old, collection-based explain missed."""
    obj9 = {m.path for m in explain.mentions("OBJ-9", explain.public_models())}
    assert {"conformance/specs.py", "fixtures/state_object_specs.py"} <= obj9
    adapt6 = {m.path for m in explain.mentions("ADAPT-6", explain.public_models())}
    assert {"conformance/adapters.py", "fixtures/dreamzero_like.py"} <= adapt6


def test_explain_imports_neither_pytest_nor_torch(tmp_path: Path) -> None:
    """What makes it answer in well under a second from a cold start."""
    code = (
        "import sys, contextlib, io\n"
        "from sessionstate.conformance._report.explain import explain\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert explain('ACCT-3') == 0\n"
        "heavy = {'torch', 'pytest', 'hypothesis', 'numpy'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
