"""``sessionstate explain CLAUSE``: where a clause lives, in one screen.

For one clause it prints the SPEC text, then every place a reader changing the
clause must look at:

* the suite's tests that can fail it: the tests tagged with it, as pytest collects
  them (so exactly the tests whose failure a report puts under the clause), grouped
  into the ones aimed at it, the state machines that check it on every step, and
  the others that check it on the way;
* the lines of the suite's model and machines (``conformance/_model``,
  ``conformance/_machine``) that name it: its oracle, its checks, its blame rules;
* the zoo subjects that plant a bug in it (``fixtures/zoo``), each with its bug;
* the lines of the reference implementation tagged with it (``# LRU-3: ...``
  comments in ``reference/``).

Clause ranges in the suite's text (``ADMIT-1..4``) count for every clause in them.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.subject import _did_you_mean

__all__ = [
    "Mention",
    "clause_tests",
    "explain",
    "explain_group",
    "mentions",
    "reference_tags",
    "resolve",
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


def mentions(clause_id: str, folders: Iterable[Path]) -> list[Mention]:
    """Every line of the ``.py`` files under ``folders`` that names ``clause_id``."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
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
    """(module, bug) for every zoo subject whose planted bug fails ``clause_id``."""
    from sessionstate.fixtures.zoo import ZOO

    return [(f"fixtures/zoo/{e.name}.py", e.bug) for e in ZOO if clause_id in e.kills]


class _Collector:
    """A pytest plugin object that records each collected test's clause tags, in order."""

    def __init__(self) -> None:
        self.tags: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        from sessionstate.conformance.plugin import item_clauses

        for item in items:
            self.tags[item.nodeid] = list(item_clauses(item))


def test_tags() -> dict[str, list[str]]:
    """Node id -> the clauses the suite's test is tagged with, first tag first
    (collection only, once per process)."""
    if not _TAGS:
        collector = _Collector()
        args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--pyargs",
                "sessionstate.conformance.suite"]  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main(args, plugins=[collector])
        _TAGS.update(collector.tags)
    return _TAGS


_TAGS: dict[str, list[str]] = {}


def clause_tests() -> dict[str, list[str]]:
    """Clause id -> node ids of the suite's tests tagged with it."""
    by_clause: dict[str, list[str]] = {}
    for nodeid, tags in test_tags().items():
        for cid in tags:
            by_clause.setdefault(cid, []).append(nodeid)
    return by_clause


def _short(nodeid: str) -> str:
    return nodeid.split("suite/", 1)[-1]


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
        function, _, case = _short(nodeid).partition("[")
        cases.setdefault(function, [])
        if case:
            cases[function].append(case.rstrip("]"))
    return [f"{f}[{', '.join(c)}]" if c else f for f, c in cases.items()]


def resolve(name: str) -> tuple[str | None, list[str]]:
    """``(clause id, [])`` for a clause id, ``(None, its clause ids)`` for a group id, in
    any case and with surrounding spaces (``lru-3``, `` LRU ``); ``(None, [])`` otherwise."""
    clauses = all_clauses()
    wanted = name.strip().upper()
    if wanted in clauses:
        return wanted, []
    return None, [cid for cid, c in clauses.items() if c.group == wanted]


def explain_group(group: str, members: list[str]) -> int:
    """Print a group's clauses, one line each, and how to explain one of them."""
    clauses = all_clauses()
    print(f"{group}: {len(members)} clauses")
    for cid in members:
        clause = clauses[cid]
        requires = f"  [requires {', '.join(sorted(clause.requires))}]" if clause.requires else ""
        print(f"  {cid:<9} {clause.level:<6} {clause.title}{requires}")
    print(
        f"\n'sessionstate explain {members[0]}' shows one of them, its tests and its zoo subjects"
    )
    return 0


def explain(name: str) -> int:
    """Print where the clause ``name`` lives, or a group's clauses; ids in any case. 2
    with a one-line error for an unknown id."""
    clauses = all_clauses()
    clause_id, members = resolve(name)
    if members:
        return explain_group(name.strip().upper(), members)
    if clause_id is None:
        groups = sorted({c.group for c in clauses.values()})
        hint = _did_you_mean(name.strip().upper(), [*clauses, *groups])
        print(f"sessionstate explain: error: unknown clause or group {name!r}{hint}; "
              "'sessionstate spec' lists them", file=sys.stderr)  # fmt: skip
        return 2
    clause = clauses[clause_id]
    print(f"{clause.id} · {clause.level} · {clause.title}")
    if clause.requires:
        print(f"Requires: {', '.join(sorted(clause.requires))}")
    print()
    print(clause.text)
    tests = clause_tests().get(clause_id, [])
    print(f"\nTests that can fail it ({len(tests)}, in conformance/suite/):")
    for title, group in _test_groups(clause_id, tests):
        if group:
            print(f"  {title}:")
            for line in _grouped(group):
                print(f"    {line}")
    suite = [_CONFORMANCE / "_model", _CONFORMANCE / "_machine"]
    _section("Model and machine lines that name it", mentions(clause_id, suite))
    zoo = zoo_subjects(clause_id)
    print(f"\nZoo subjects that plant a bug in it ({len(zoo)}):")
    for path, bug in zoo:
        print(f"  {path}  {bug}")
    _section("Reference lines tagged with it", reference_tags(clause_id))
    return 0


def _section(title: str, found: list[Mention]) -> None:
    print(f"\n{title} ({len(found)}):")
    for mention in found:
        print(f"  {mention}")
