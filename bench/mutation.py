"""Run cosmic-ray over reference/ and write MUTATION.md.

Survivors are listed with their classification from bench/mutation-notes.toml
(``equivalent`` with the reason, or ``gap`` with the clause/test that now
closes it); an unclassified survivor is listed as such.
``python bench/mutation.py [--reuse]`` (``--reuse`` keeps an existing session database).
"""

from __future__ import annotations

import argparse
import ast
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSION = HERE / "mutation.sqlite"


def cosmic(*args: str) -> None:
    subprocess.run(["cosmic-ray", *args], cwd=ROOT, check=True)


def _annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found: list[ast.expr] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            found += [p.annotation for p in params if p is not None and p.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        spans += [
            ((n.lineno, n.col_offset), (n.end_lineno or 0, n.end_col_offset or 0)) for n in found
        ]
    return spans


def skip_annotation_mutants() -> int:
    """Mark mutants inside type annotations as skipped: every reference module has
    ``from __future__ import annotations``, so annotations are never evaluated and
    mutating them (``int | None`` -> ``int & None``) cannot change behaviour."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    spans: dict[Path, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
    with use_db(str(SESSION)) as db:
        for item in list(db.work_items):
            for mutation in item.mutations:
                path = ROOT / mutation.module_path
                ranges = spans.setdefault(path, _annotation_spans(path))
                start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
                if any(lo <= start and end <= hi for lo, hi in ranges):
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
                    skipped += 1
                    break
    return skipped


def survivors_and_counts() -> tuple[list[dict[str, object]], dict[str, int]]:
    con = sqlite3.connect(SESSION)
    rows = con.execute(
        "SELECT m.module_path, m.operator_name, m.occurrence, m.start_pos_row, r.test_outcome, r.diff "
        "FROM mutation_specs m JOIN work_results r ON m.job_id = r.job_id "
        "WHERE r.worker_outcome != 'SKIPPED'"
    ).fetchall()
    counts: dict[str, int] = {}
    survivors = []
    for module, operator, occurrence, row, outcome, diff in rows:
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "SURVIVED":
            key = f"{Path(module).name}:{row}:{operator}:{occurrence}"
            survivors.append({"key": key, "diff": diff})
    return survivors, counts


def write_report(survivors: list[dict[str, object]], counts: dict[str, int]) -> None:
    notes_path = HERE / "mutation-notes.toml"
    notes = tomllib.loads(notes_path.read_text()) if notes_path.exists() else {}
    total = sum(counts.values())
    killed = counts.get("KILLED", 0)
    lines = [
        "# Mutation score", "",
        "cosmic-ray over `reference/`, killed by the conformance suite alone (profile `mutation`,",
        "only the clause groups that specify the mutated module). Regenerate: `nox -s mutation`.", "",
        f"**{killed}/{total} killed ({100 * killed / max(total, 1):.1f} %)**; outcomes: {json.dumps(counts)}", "",
        "## Survivors", "",
    ]  # fmt: skip
    for survivor in sorted(survivors, key=lambda s: str(s["key"])):
        note = notes.get(str(survivor["key"]), {})
        kind = note.get("kind", "unclassified")
        lines += [f"### `{survivor['key']}`: {kind}", "", note.get("reason", "(no note yet)"), "",
                  "```diff", str(survivor["diff"]).strip(), "```", ""]  # fmt: skip
    (ROOT / "MUTATION.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    config = str(HERE / "cosmic-ray.toml")
    if not (args.reuse and SESSION.exists()):
        SESSION.unlink(missing_ok=True)
        cosmic("init", config, str(SESSION))
        print(f"skipped {skip_annotation_mutants()} mutants inside annotations")
        cosmic("baseline", config)
    cosmic("exec", config, str(SESSION))
    write_report(*survivors_and_counts())
    return 0


if __name__ == "__main__":
    sys.exit(main())
