"""``sessionstate explain CLAUSE``: where a clause lives, in one screen.

For one clause it prints the SPEC text, then every place a reader changing the
clause must look at:

* the suite's tests that can fail it: the tests tagged with it, as pytest collects
  them (so exactly the tests whose failure a report puts under the clause), grouped
  into the ones aimed at it, the state machines that check it on every step, and
  the others that check it on the way;
* the lines of the suite's model and machines (``conformance/_model``,
  ``conformance/_machine``) that name it: its oracle, its checks, its blame rules;
* the lines of the public models and the worked fixtures that name it
  (``conformance/specs.py``, ``conformance/adapters.py``, ``fixtures/*.py``): the
  models a spec declares and the bespoke states adapters are compared with;
* the zoo subjects that plant a bug in it (``fixtures/zoo``), each with its bug;
* the lines of the reference implementation tagged with it (``# LRU-3: ...``
  comments in ``reference/``).

Everything is read from the source and SPEC as text: the tests' tags from the stored
clause index (``clause_index.py``), the zoo's ``KILLS`` and ``BUG`` from each module's
syntax tree. Nothing is imported beyond the standard library and the SPEC parser, so
an answer takes milliseconds, not a pytest collection.

Clause ranges in the suite's text (``ADMIT-1..4``) count for every clause in them.
An id is matched case-insensitively; a group id (``LRU``) lists the group's clauses.
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sessionstate.conformance._harness.short_ids import short_id
from sessionstate.conformance._report import clause_index
from sessionstate.conformance.clauses import all_clauses

__all__ = [
    "Mention",
    "clause_tests",
    "explain",
    "mentions",
    "public_models",
    "reference_tags",
    "test_tags",
    "zoo_subjects",
]

#: ``LRU-3`` or a range ``ADMIT-1..4``.
_CLAUSE = re.compile(r"\b([A-Z]+)-(\d+)(?:\.\.(\d+))?\b")

_CONFORMANCE = Path(__file__).resolve().parent.parent
#: ``conformance/``, ``reference/`` and ``fixtures/`` sit side by side here, installed
#: (``sessionstate/``) or in a checkout: paths are shown relative to it.
_ROOT = _CONFORMANCE.parent


@dataclass(frozen=True)
class Mention:
    """A line of source that names a clause."""

    path: str  # e.g. conformance/_machine/manager.py
    line: int
    text: str

    def __str__(self) -> str:
        text = self.text if len(self.text) <= 88 else self.text[:85] + "..."
        return f"{self.path}:{self.line}  {text}"


def _ids(text: str) -> set[str]:
    """The clause ids ``text`` names, ranges expanded."""
    found: set[str] = set()
    for prefix, first, last in _CLAUSE.findall(text):
        stop = int(last) if last else int(first)
        found.update(f"{prefix}-{n}" for n in range(int(first), stop + 1))
    return found


def _shown(path: Path) -> str:
    try:
        return path.relative_to(_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def mentions(clause_id: str, places: Iterable[Path]) -> list[Mention]:
    """Every line that names ``clause_id`` in ``places``: ``.py`` files, and the ``.py``
    files under folders."""
    found = []
    for place in places:
        for path in sorted(place.rglob("*.py")) if place.is_dir() else [place]:
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, 1):
                if clause_id in _ids(line):
                    found.append(Mention(_shown(path), number, line.strip()))
    return found


def _comments(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("rb") as source:
        for token in tokenize.tokenize(source.readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string


def reference_tags(clause_id: str) -> list[Mention]:
    """The reference's lines tagged with ``clause_id`` by a comment."""
    folder = _ROOT / "reference"
    found = []
    for path in sorted(folder.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, comment in _comments(path):
            if clause_id in _ids(comment):
                found.append(Mention(_shown(path), number, lines[number - 1].strip()))
    return found


def zoo_subjects(clause_id: str) -> list[tuple[str, str]]:
    """(module, bug) for every zoo subject whose planted bug fails ``clause_id``, read
    from each module's ``KILLS`` and ``BUG`` assignments without importing it."""
    found = []
    for path in sorted((_ROOT / "fixtures" / "zoo").glob("[!_]*.py")):
        kills, bug = _zoo_facts(path)
        if clause_id in kills:
            found.append((_shown(path), bug))
    return found


def _zoo_facts(path: Path) -> tuple[tuple[str, ...], str]:
    """A zoo module's ``KILLS`` and ``BUG``, which are literals by the zoo's rules."""
    values: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in ("KILLS", "BUG"):
                    values[target.id] = ast.literal_eval(node.value)
    kills, bug = values.get("KILLS", ()), values.get("BUG", "")
    return tuple(str(k) for k in kills) if isinstance(kills, tuple) else (), str(bug)


def test_tags() -> dict[str, list[str]]:
    """Node id (from the suite's folder on) -> the clauses the suite's test is tagged
    with, first tag first, from the stored clause index."""
    if not _TAGS:
        _TAGS.update(clause_index.load())
    return _TAGS


_TAGS: dict[str, list[str]] = {}


def public_models() -> list[Path]:
    """The public model modules and the worked fixtures (the zoo excluded)."""
    conformance = [_CONFORMANCE / "specs.py", _CONFORMANCE / "adapters.py"]
    return conformance + sorted((_ROOT / "fixtures").glob("[!_]*.py"))


def clause_tests() -> dict[str, list[str]]:
    """Clause id -> node ids of the suite's tests tagged with it."""
    by_clause: dict[str, list[str]] = {}
    for nodeid, tags in test_tags().items():
        for cid in tags:
            by_clause.setdefault(cid, []).append(nodeid)
    return by_clause


def _aimed_at(clause_id: str, nodeid: str) -> bool:
    """A case named after the clause (``[LRU-4-3]``, ``[ACCT-1]``), or a test not named
    after one whose first tag, the clause it was written for, is this one."""
    case = nodeid.partition("[")[2]
    if _CLAUSE.match(case):
        return case == f"{clause_id}]" or case.startswith(f"{clause_id}-")
    tags = test_tags().get(nodeid, [])
    return bool(tags) and tags[0] == clause_id


def _test_groups(clause_id: str, tests: list[str]) -> list[tuple[str, list[str]]]:
    machines = [t for t in tests if t.split("::")[-1].split("[")[0].endswith("_machine")]
    aimed = [t for t in tests if t not in machines and _aimed_at(clause_id, t)]
    others = [t for t in tests if t not in aimed and t not in machines]
    return [
        ("aimed at it", aimed),
        ("state machines that check it after every step", machines),
        ("tests that check it on the way", others),
    ]


def _grouped(nodeids: list[str]) -> list[str]:
    """One line per test function: its parametrized cases listed after it."""
    cases: dict[str, list[str]] = {}
    for nodeid in nodeids:
        function, _, case = short_id(nodeid).partition("[")
        cases.setdefault(function, [])
        if case:
            cases[function].append(case.rstrip("]"))
    return [f"{f}[{', '.join(c)}]" if c else f for f, c in cases.items()]


def explain(clause_id: str) -> int:
    """Print where ``clause_id`` lives (any case), or a group's clauses for a group id;
    2 with a one-line error for an unknown id."""
    clauses = all_clauses()
    wanted = clause_id.strip().upper()
    groups = dict.fromkeys(cid.split("-")[0] for cid in clauses)
    if wanted in groups:
        members = [c for c in clauses.values() if c.id.split("-")[0] == wanted]
        print(f"{wanted}: {len(members)} clauses (sessionstate explain {members[0].id} for one)")
        for member in members:
            print(f"  {member.id} · {member.level} · {member.title}")
        return 0
    if wanted not in clauses:
        close = difflib.get_close_matches(wanted, [*clauses, *groups], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"sessionstate explain: error: unknown clause {clause_id!r}{hint}", file=sys.stderr)
        return 2
    clause = clauses[wanted]
    print(f"{clause.id} · {clause.level} · {clause.title}")
    if clause.requires:
        print(f"Requires: {', '.join(sorted(clause.requires))}")
    print()
    print(clause.text)
    tests = clause_tests().get(clause.id, [])
    print(f"\nTests that can fail it ({len(tests)}, in conformance/suite/):")
    for title, group in _test_groups(clause.id, tests):
        if group:
            print(f"  {title}:")
            for line in _grouped(group):
                print(f"    {line}")
    suite = [_CONFORMANCE / "_model", _CONFORMANCE / "_machine"]
    _section("Model and machine lines that name it", mentions(clause.id, suite))
    _section("Public models and worked fixtures that name it", mentions(clause.id, public_models()))
    zoo = zoo_subjects(clause.id)
    print(f"\nZoo subjects that plant a bug in it ({len(zoo)}):")
    for path, bug in zoo:
        print(f"  {path}  {bug}")
    _section("Reference lines tagged with it", reference_tags(clause.id))
    return 0


def _section(title: str, found: list[Mention]) -> None:
    print(f"\n{title} ({len(found)}):")
    for mention in found:
        print(f"  {mention}")
