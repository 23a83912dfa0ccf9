"""The mutation session's own tools: tree copies that import themselves, and the notes.

These run without cosmic-ray; they pin what the hour-long sessions rely on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import mutation  # noqa: E402

DIFF = """--- mutation diff ---
--- a/reference/base.py
+++ b/reference/base.py
@@ -91,7 +91,6 @@
         return sum(self.nbytes_by_device(set()).values())
-
-    @property
     def recomputable(self) -> bool:
         return self.recompute_source is not None and self.resident
"""


def test_a_tree_copy_imports_sessionstate_from_itself(tmp_path: Path) -> None:
    mutation.copy_tree(tmp_path)
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, 'bench'); import tree_import; "
        "tree_import.install(Path('.')); import sessionstate.reference as r; print(r.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == (tmp_path / "reference" / "__init__.py").resolve()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True)
    assert status.stdout == b""  # pristine, so mutation_test finds the mutated module by git diff


def test_a_removed_decorator_is_named_with_its_def() -> None:
    assert mutation.mutated_line(DIFF) == "@property def recomputable(self) -> bool:"
    assert mutation.mutant_line(DIFF) == ""


def test_inline_comments_do_not_count_in_a_mutated_line() -> None:
    """A clause tag added to a reference line leaves the line's notes matching it."""
    diff = (
        "--- a/reference/base.py\n+++ b/reference/base.py\n@@ -1,1 +1,1 @@\n"
        "-    recompute_cost: ClassVar[int] = 0  # OBJ-10: an int >= 0\n"
        "+    recompute_cost: ClassVar[int] = 1  # OBJ-10: an int >= 0\n"
    )
    assert mutation.mutated_line(diff) == "recompute_cost: ClassVar[int] = 0"
    assert mutation.mutant_line(diff) == "recompute_cost: ClassVar[int] = 1"


def test_notes_match_by_line_operator_and_replacement() -> None:
    note = {
        "module": "base.py",
        "lines": ["x = 0"],
        "operators": ["NumberReplacer"],
        "into": ["x = 1"],
    }
    mutant = {"module": "base.py", "line": "x = 0", "operator": "NumberReplacer", "into": "x = 1"}
    assert mutation.matches(note, mutant)
    assert not mutation.matches(note, {**mutant, "into": "x = -1"})
    assert not mutation.matches(note, {**mutant, "operator": "AddNot"})


def test_a_base_class_mutant_is_judged_on_an_object_with_a_recompute_source() -> None:
    """``StateObject.recomputable`` reads ``recompute_source.resident``, which no reference
    object has: a mutant of that read is judged by OBJ-10 on the worked example that does."""
    import mutation_test

    from sessionstate.conformance.subject import load_subject

    reference_run, *example_runs = mutation_test.commands(["base.py"])
    assert "--sessionstate-subject" not in reference_run  # the default subject, the reference
    # A SHOULD failure exits 0 without --strict (the exit policy): the mutant would survive.
    assert all("--sessionstate-strict" in run for run in (reference_run, *example_runs))
    assert reference_run[-4:] == ["--sessionstate-clause", "OBJ", "--sessionstate-clause", "RESET"]
    assert len(example_runs) == 1
    run = example_runs[0]
    assert run[-2:] == ["--sessionstate-clause", "OBJ-10"]
    subject = load_subject(run[run.index("--sessionstate-subject") + 1])
    sources = [spec.factory().recompute_source for spec in subject.state_objects]
    assert any(source is not None for source in sources)
    assert len(mutation_test.commands(["manager.py"])) == 1


@pytest.mark.parametrize("section", ["survivor", "closed"])
def test_every_note_is_complete(section: str) -> None:
    notes = tomllib.loads((REPO / "bench" / "mutation-notes.toml").read_text(encoding="utf-8"))
    for note in notes[section]:
        assert (REPO / "reference" / note["module"]).exists()
        assert note.get("line") or note.get("lines")
        assert note["operators"]
        assert note.get("reason" if section == "survivor" else "closed_by", "").strip()
        if section == "survivor":
            assert note["kind"] == "equivalent"


def test_every_clause_group_judges_some_module() -> None:
    """A group no reference module maps to never runs against a mutant: its clauses could
    kill nothing (LOST, added after the table, let require_session's mutants all survive)."""
    import mutation_test

    from sessionstate.conformance.clauses import all_clauses

    groups = {clause.partition("-")[0] for clause in all_clauses()}
    judged = {group for module in mutation_test.GROUPS.values() for group in module}
    assert groups - judged == set()
