"""The reference's clause tags: every clause the reference implements names its line.

A comment naming a clause id (``# LRU-3: a hit makes the session most recent``) marks
the line of ``reference/`` that decides that clause, so ``sessionstate explain LRU-3``
can point a reader at it. These tests keep the tags honest: every id a comment names
is a clause of the spec, every clause is tagged somewhere, and the clauses the
reference has no line for are listed in :data:`UNTAGGED` with the reason, a list
that cannot go stale because a tagged clause may not stay in it.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from pathlib import Path

import pytest

import sessionstate.reference
from sessionstate.conformance.clauses import all_clauses

#: A clause id as a tag names it.
CLAUSE_ID = re.compile(r"\b[A-Z]+-\d+\b")

#: The reference package's folder (``reference/`` in a checkout).
REFERENCE = Path(sessionstate.reference.__file__).resolve().parent

#: Clause id -> why no line of the reference implements it.
UNTAGGED: dict[str, str] = {
    "ADAPT-1": "about model adapters' results, not in the reference",
    "ADAPT-2": "about model adapters' observed values, not in the reference",
    "ADAPT-4": "about building model adapters; the manager's part is LRU-1, LRU-2, LRU-3",
    "ADAPT-5": "about model adapters; the manager's part is LRU-5",
    "ADAPT-6": "about model adapters' first observations, not in the reference",
    "ADAPT-8": "compares an adapter with its model's bespoke state, not in the reference",
}


def clause_tags(paths: Iterable[Path]) -> dict[str, list[tuple[Path, int]]]:
    """Clause id -> the (file, line) of every comment in ``paths`` that names it.

    Only comment tokens are read, so ids in docstrings and strings are not tags.
    """
    tags: dict[str, list[tuple[Path, int]]] = {}
    for path in paths:
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                for clause_id in CLAUSE_ID.findall(token.string):
                    tags.setdefault(clause_id, []).append((path, token.start[0]))
    return tags


def reference_tags() -> dict[str, list[tuple[Path, int]]]:
    """The clause tags of ``reference/*.py``."""
    return clause_tags(sorted(REFERENCE.glob("*.py")))


def test_the_reference_has_modules() -> None:
    """The scan reads the reference itself, not an empty folder."""
    assert (REFERENCE / "manager.py").is_file()


def test_every_tag_is_a_known_clause() -> None:
    """A comment names only clauses the spec defines (a typo would point nowhere)."""
    unknown = {
        clause_id: [f"{path.name}:{line}" for path, line in places]
        for clause_id, places in reference_tags().items()
        if clause_id not in all_clauses()
    }
    assert unknown == {}


def test_every_clause_is_tagged_or_listed() -> None:
    """Each clause is tagged at least once, unless UNTAGGED says why it cannot be."""
    tagged = reference_tags()
    missing = [c for c in all_clauses() if c not in tagged and c not in UNTAGGED]
    assert missing == []


def test_untagged_is_not_stale() -> None:
    """An UNTAGGED clause exists and really has no tag; a reason is given for each."""
    tagged = reference_tags()
    assert [c for c in UNTAGGED if c not in all_clauses()] == []
    assert [c for c in UNTAGGED if c in tagged] == []
    assert all(reason.strip() for reason in UNTAGGED.values())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('x = 1  # LRU-3: a hit\n"""KEY-1 in a string"""\n', {"LRU-3": [1]}),
        ("# DROP-2, DROP-3\ny = 2  # not-a-tag X-1a\n", {"DROP-2": [1], "DROP-3": [1]}),
    ],
)
def test_clause_tags_reads_comments_only(
    tmp_path: Path, source: str, expected: dict[str, list[int]]
) -> None:
    """Ids in comments are found with their line; ids in strings are not."""
    path = tmp_path / "module.py"
    path.write_text(source, encoding="utf-8")
    found = {c: [line for _, line in places] for c, places in clause_tags([path]).items()}
    assert found == expected
