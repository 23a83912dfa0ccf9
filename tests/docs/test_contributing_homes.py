"""CONTRIBUTING.md's "Where a clause lives" table is true of the tree, for every SPEC group.

The table has one row per clause group (a row may hold several groups; each is checked)
and a column per home: the SPEC section, the suite's test files, the machine modules and
their blame rules, the model modules, the zoo subjects and the reference modules. A bare
file name is in the folder its column's heading names (blame in the machine's); a path
with a ``/`` is from the repository root. In the machine, blame and model columns every
other backticked word is a name in the file named before it (``Class.method()``), which
must resolve; elsewhere only file names and zoo globs are read.

Each check reads the tree the way ``sessionstate explain`` does (the stored clause index,
``explain.mentions``, ``explain.reference_tags``, ``explain.zoo_subjects``), and each can
fail: the second half of this file runs it on a doctored copy of the table.

The rule the section states, machines by surface and models by domain, is held here too:
a machine module whose code names a clause (a string outside a docstring) is a blame home
of it and must be in its group's row; a machine module outside the row that names the
group's clauses only in prose is listed in ``PROSE_MENTIONS`` with the reason; a model
module names no clause in code, but for ``MODEL_LABELS``.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path

import pytest

from sessionstate.conformance._report import explain
from sessionstate.conformance.clauses import all_clauses, spec_text

ROOT = Path(__file__).resolve().parents[2]
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
SECTION = "### Where a clause lives"
COLUMNS = ("group", "spec", "tests", "machine", "blame", "model", "zoo", "reference")
#: Where a bare file name of each column is.
FOLDERS = {
    "tests": "conformance/suite",
    "machine": "conformance/_machine",
    "blame": "conformance/_machine",
    "model": "conformance/_model",
    "zoo": "fixtures/zoo",
    "reference": "reference",
}
#: Columns whose backticked words other than file names are names in the file before them.
NAMED = ("machine", "blame", "model")
MACHINES = ROOT / "conformance/_machine"
MODELS = ROOT / "conformance/_model"
#: Modules of the package that are no machine of any surface.
NOT_MACHINES = {"__init__.py", "stateful.py"}

#: (machine module, group) -> why the module names some of the group's clauses in prose,
#: though the group's row does not name it: it leaves those clauses to their home.
PROSE_MENTIONS = {
    ("acct.py", "LOCK"): "within_deadline: a walk the watchdog interrupts fails ACCT-9, not LOCK-3",
    ("adapt.py", "ADMIT"): (
        "an adapter's refusal is recognised by ADMIT-1's message; a pipeline that builds a "
        "refusing manager is judged as one (ADMIT-11)"
    ),
    ("adapt.py", "DROP"): "a held adapter whose session a drop reset (DROP-2) is not modelled",
    ("admit.py", "STATS"): "it keeps the drops the subject reported, which STATS-5 counts",
    ("lock_capacity.py", "ADMIT"): "a refusal in a threaded history is ADMIT-1's to check",
    ("lost.py", "ADMIT"): "the lost error shows the key as ADMIT-1's refusal does",
    ("lost.py", "LOCK"): "its meddling lock lets a nested with (a LOCK-3 defect) through, unjudged",
}
#: (model module, group) -> why the model names some of the group's clauses in code.
MODEL_LABELS = {
    (module, group): (
        "SUSPECTS and key_clause label table semantics that each break one clause; "
        "_machine.manager asks them only once its own check has found a mismatch"
    )
    for module, group in [("manager.py", "KEY"), ("manager.py", "LRU"), ("manager.py", "STATS")]
}


# --- The table ------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the table: its groups and its cells by column."""

    groups: tuple[str, ...]
    cells: Mapping[str, str]

    @property
    def name(self) -> str:
        return ", ".join(self.groups)

    def entries(self, column: str) -> list[tuple[str, list[str]]]:
        """(root-relative file or glob, the names given after it), in the cell's order."""
        found: list[tuple[str, list[str]]] = []
        for word in re.findall(r"`([^`]+)`", self.cells[column]):
            if word.endswith(".py"):
                found.append((word if "/" in word else f"{FOLDERS[column]}/{word}", []))
            elif column in NAMED and found:
                found[-1][1].append(word)
            elif column in NAMED:
                found.append(("", [word]))
        return found

    def files(self, column: str) -> list[str]:
        return [path for path, _ in self.entries(column) if path]

    def local(self, column: str) -> set[str]:
        """The names of the column's files that are in its own folder."""
        folder = FOLDERS[column] + "/"
        return {p.removeprefix(folder) for p in self.files(column) if p.startswith(folder)}


def table(text: str) -> list[Row]:
    """The rows of the first table after ``SECTION`` in ``text``; ``ValueError`` when
    there is none, or its heading is not ``COLUMNS``."""
    after = text.split(SECTION, 1)[1] if SECTION in text else ""
    lines = [line.strip() for line in after.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        raise ValueError(f"no table after {SECTION!r}")
    body = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip("|").split("|")])
    heading = tuple(cell.split(" ")[0].lower() for cell in body[0])
    if heading != COLUMNS:
        raise ValueError(f"the table's columns are {heading}, not {COLUMNS}")
    rows = []
    for cells in body[2:]:
        if len(cells) != len(COLUMNS):
            raise ValueError(f"row {cells[0]!r} has {len(cells)} cells, not {len(COLUMNS)}")
        named = dict(zip(COLUMNS, cells, strict=True))
        groups = tuple(g.strip() for g in named["group"].split(","))
        rows.append(Row(groups, named))
    return rows


# --- What the tree says -------------------------------------------------------------


def groups() -> dict[str, list[str]]:
    """Group -> its clause ids, in SPEC order."""
    found: dict[str, list[str]] = {}
    for clause in all_clauses().values():
        found.setdefault(clause.group, []).append(clause.id)
    return found


def spec_sections() -> dict[str, str]:
    """Group -> the title of its SPEC section (``## LRU: ordering, eviction and identity``)."""
    return dict(re.findall(r"(?m)^## ([A-Z]+): (.+)$", spec_text()))


@cache
def mentioned_by(folder: Path) -> dict[str, frozenset[str]]:
    """Clause id -> the modules of ``folder`` that name it anywhere (``explain.mentions``)."""
    return {
        cid: frozenset(Path(m.path).name for m in explain.mentions(cid, [folder]))
        for cid in all_clauses()
    }


@cache
def named_in_code(path: Path) -> frozenset[str]:
    """The clause ids (and ``GROUP-*`` for an f-string ``f"GROUP-{n}"``) that a module's
    string literals name, docstrings left out: what its checks and blame rules pass."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for part, after in zip(node.values, [*node.values[1:], None], strict=True):
                if isinstance(part, ast.Constant) and isinstance(after, ast.FormattedValue):
                    found.update(f"{g}-*" for g in re.findall(r"\b([A-Z]+)-$", str(part.value)))
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if literal and id(node) not in docstrings:
            found.update(explain._ids(str(node.value)) & set(all_clauses()))
    return frozenset(found)


@cache
def killed_by_zoo() -> dict[str, frozenset[str]]:
    """Zoo module name -> the groups whose clauses its bug fails (``explain.zoo_subjects``)."""
    killers: dict[str, set[str]] = {}
    for cid in all_clauses():
        for path, _ in explain.zoo_subjects(cid):
            killers.setdefault(Path(path).name, set()).add(cid.split("-")[0])
    return {name: frozenset(killed) for name, killed in sorted(killers.items())}


@cache
def reference_tags() -> dict[str, list[tuple[str, int]]]:
    """Clause id -> (reference module, line) of each ``# GROUP-N`` tag comment of it."""
    return {
        cid: [(Path(m.path).name, m.line) for m in explain.reference_tags(cid)]
        for cid in all_clauses()
    }


def code_groups(path: Path) -> set[str]:
    return {cid.split("-")[0] for cid in named_in_code(path)}


def module_of(path: str) -> str:
    """``conformance/_machine/lock.py`` -> ``sessionstate.conformance._machine.lock``."""
    return "sessionstate." + path.removesuffix(".py").replace("/", ".")


def resolves(path: str, name: str) -> bool:
    """Whether ``name`` (``Class.method()``) is an attribute path of the module at ``path``."""
    try:
        value: object = import_module(module_of(path))
    except ImportError:
        return False
    for attribute in name.removesuffix("()").split("."):
        if not hasattr(value, attribute):
            return False
        value = getattr(value, attribute)
    return True


# --- The checks: each returns what is wrong, one line each ------------------------------

Check = Callable[[list[Row]], list[str]]


def check_rows(rows: list[Row]) -> list[str]:
    """Every SPEC group has exactly one row, and every row names known groups."""
    counts = {g: sum(g in row.groups for row in rows) for g in groups()}
    problems = [f"{g} has {n} rows" for g, n in counts.items() if n != 1]
    problems += [
        f"{row.name}: {g} is no SPEC group" for row in rows for g in row.groups if g not in counts
    ]
    return problems


def check_spec(rows: list[Row]) -> list[str]:
    """The spec cell gives each group's SPEC section title, in the row's order."""
    sections = spec_sections()
    problems = []
    for row in rows:
        titles = [t.strip() for t in row.cells["spec"].split(";")]
        expected = [sections.get(g, f"<no section {g}>") for g in row.groups]
        if titles != expected:
            problems.append(f"{row.name}: spec {titles}, but SPEC.md has {expected}")
    return problems


def check_files(rows: list[Row]) -> list[str]:
    """Every file named exists; every zoo glob matches a subject."""
    problems = []
    for row in rows:
        for column in ("tests", "machine", "blame", "model", "reference"):
            problems += [
                f"{row.name}: {column} {path} does not exist"
                for path in row.files(column)
                if not (ROOT / path).is_file()
            ]
        for pattern in row.files("zoo"):
            if not list(ROOT.glob(pattern)):
                problems.append(f"{row.name}: zoo {pattern} matches no subject")
    return problems


def check_tests(rows: list[Row]) -> list[str]:
    """Every test tagged with a clause of the group is in a test file the row names, and
    every test file the row names holds a test tagged with one of its groups."""
    tagged = explain.clause_tests()
    problems = []
    for row in rows:
        named = row.local("tests")
        holding: set[str] = set()
        for group in row.groups:
            for cid in groups().get(group, []):
                outside: dict[str, list[str]] = {}
                for nodeid in tagged.get(cid, []):
                    file = nodeid.split("::")[0]
                    holding.add(file)
                    if file not in named:
                        outside.setdefault(file, []).append(nodeid)
                problems += [
                    f"{row.name}: {cid} is tagged in {len(ids)} tests of {file} "
                    f"({ids[0]}, ...), but the row does not name {file}"
                    for file, ids in outside.items()
                ]
        problems += [
            f"{row.name}: {file} holds no test tagged with {row.name}"
            for file in sorted(named - holding)
        ]
    return problems


def check_machines(
    rows: list[Row], prose_mentions: Mapping[tuple[str, str], str] = PROSE_MENTIONS
) -> list[str]:
    """The row's machine modules are the blame homes of its groups' clauses.

    They name every clause of the group that any machine module names; any machine
    module whose code names one of them is in the row; any other module that names one
    only in prose is in ``prose_mentions``, whose every entry is still needed; and each
    module the row names names one of its groups' clauses."""
    mentions = mentioned_by(MACHINES)
    modules = sorted(p for p in MACHINES.glob("*.py") if p.name not in NOT_MACHINES)
    problems = []
    needed: set[tuple[str, str]] = set()
    for row in rows:
        homes = row.local("machine")
        for group in row.groups:
            clauses = groups().get(group, [])
            for cid in clauses:
                if mentions[cid] and not mentions[cid] & homes:
                    problems.append(
                        f"{group}: {cid} is named by {sorted(mentions[cid])}, "
                        f"none of them in the row"
                    )
            for path in modules:
                if path.name in homes:
                    continue
                if group in code_groups(path):
                    problems.append(
                        f"{group}: {path.name} names its clauses in code "
                        f"(a blame home), but the row does not name it"
                    )
                elif any(path.name in mentions[cid] for cid in clauses):
                    needed.add((path.name, group))
                    if (path.name, group) not in prose_mentions:
                        problems.append(
                            f"{group}: {path.name} names its clauses, but neither "
                            f"the row nor PROSE_MENTIONS names it"
                        )
        for home in sorted(homes):
            clauses = [cid for g in row.groups for cid in groups().get(g, [])]
            if not any(home in mentions[cid] for cid in clauses):
                problems.append(f"{row.name}: machine {home} names none of its clauses")
    problems += [
        f"PROSE_MENTIONS: {module} no longer names a clause of {group} (or the row names it)"
        for module, group in prose_mentions
        if (module, group) not in needed
    ]
    return problems


def check_blame(rows: list[Row]) -> list[str]:
    """Each machine module of the row has blame names, each in a module the row names as a
    machine, and each resolves (an attribute path, imported)."""
    problems = []
    for row in rows:
        machines = set(row.files("machine"))
        blamed = set()
        for path, names in row.entries("blame"):
            blamed.add(path)
            if path not in machines:
                problems.append(f"{row.name}: blame {path or names} is no machine of the row")
            if not names:
                problems.append(f"{row.name}: blame {path} names no function or constant")
            problems += [
                f"{row.name}: blame {name} is not in {path}"
                for name in names
                if path and not resolves(path, name)
            ]
        problems += [
            f"{row.name}: machine {path} has no blame named" for path in sorted(machines - blamed)
        ]
    return problems


def check_models(
    rows: list[Row], labels: Mapping[tuple[str, str], str] = MODEL_LABELS
) -> list[str]:
    """Every name the machine and model columns give resolves, and no model module names
    a clause in code (a model computes; a machine blames) but for ``labels``."""
    problems = []
    for row in rows:
        for column in ("machine", "model"):
            for path, names in row.entries(column):
                problems += [
                    f"{row.name}: {column} {name} is not in {path or 'any file'}"
                    for name in names
                    if not path or not resolves(path, name)
                ]
    used = set()
    for path in sorted(MODELS.glob("*.py")):
        for group in sorted(code_groups(path)):
            used.add((path.name, group))
            if (path.name, group) not in labels:
                problems.append(f"_model/{path.name} names {group} clauses in code")
    problems += [
        f"MODEL_LABELS: _model/{m} no longer names {g} clauses in code"
        for m, g in labels
        if (m, g) not in used
    ]
    return problems


def check_zoo(rows: list[Row]) -> list[str]:
    """Every zoo subject that plants a bug in a clause of the group matches one of the row's
    globs, and every subject a glob matches plants one in a clause of the row's groups."""
    problems = []
    for row in rows:
        patterns = [Path(p).name for p in row.files("zoo")]
        for subject, killed in killed_by_zoo().items():
            matched = any(fnmatch.fnmatch(subject, p) for p in patterns)
            ours = sorted(killed & set(row.groups))
            if ours and not matched:
                problems.append(f"{row.name}: {subject} kills {ours[0]}, matched by no zoo glob")
            if matched and not ours:
                problems.append(
                    f"{row.name}: {subject} matches a zoo glob, but kills only {sorted(killed)}"
                )
    return problems


def check_reference(rows: list[Row]) -> list[str]:
    """Every reference module tagged with a clause of the group (``# GROUP-N``) is named,
    and every reference module named carries a tag of the row's groups."""
    problems = []
    for row in rows:
        named = row.local("reference")
        tagged: dict[str, tuple[str, int]] = {}
        for group in row.groups:
            for cid in groups().get(group, []):
                for module, line in reference_tags()[cid]:
                    tagged.setdefault(module, (cid, line))
        problems += [
            f"{row.name}: reference/{module} is tagged {cid} (line {line}, ...), not named"
            for module, (cid, line) in tagged.items()
            if module not in named
        ]
        problems += [
            f"{row.name}: reference/{module} carries no tag of {row.name}"
            for module in sorted(named - set(tagged))
        ]
    return problems


CHECKS: list[Check] = [
    check_rows,
    check_spec,
    check_files,
    check_tests,
    check_machines,
    check_blame,
    check_models,
    check_zoo,
    check_reference,
]


# --- The table holds ------------------------------------------------------------------


@cache
def contributing() -> str:
    return CONTRIBUTING.read_text(encoding="utf-8")


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_the_table_holds(check: Check) -> None:
    problems = check(table(contributing()))
    assert problems == [], "\n".join(problems)


def test_the_table_covers_every_group() -> None:
    rows = table(contributing())
    assert sorted(g for row in rows for g in row.groups) == sorted(groups())
    assert len(groups()) == 12


def test_the_scans_are_not_vacuous() -> None:
    """What the checks read is there: every clause has tagged tests, the zoo and the
    reference's tags are found, and every machine module names clauses in code but the
    runner and ``composed_bytes`` (which is handed the clause), f-strings included,
    docstrings left out."""
    assert set(explain.clause_tests()) == set(all_clauses())
    assert len(killed_by_zoo()) > 100
    assert sum(map(len, reference_tags().values())) > 100
    for path in sorted(MACHINES.glob("*.py")):
        if path.name not in {*NOT_MACHINES, "composed_bytes.py"}:
            assert code_groups(path), path.name
    assert {"ADMIT-*", "ADMIT-11"} <= named_in_code(MACHINES / "admit.py")
    assert "OBJ-*" in named_in_code(MACHINES / "obj.py")
    assert "acct.py" in mentioned_by(MACHINES)["LOCK-3"]  # in within_deadline's docstring
    assert "LOCK" not in code_groups(MACHINES / "acct.py")


# --- Each check can fail -----------------------------------------------------------------


def doctored(old: str, new: str) -> list[Row]:
    """The table with ``old`` (found exactly once in the section) replaced by ``new``."""
    text = contributing()
    head, section = text.split(SECTION, 1)
    assert section.count(old) == 1, old
    return table(head + SECTION + section.replace(old, new))


def row_line(group: str) -> str:
    text = contributing().split(SECTION, 1)[1]
    return next(line for line in text.splitlines() if line.startswith(f"| {group} |"))


@pytest.mark.parametrize(
    ("check", "old", "new", "reported"),
    [
        pytest.param(check_rows, row_line("LOST") + "\n", "", "LOST has 0 rows", id="no-row"),
        pytest.param(
            check_rows,
            "| ENV | configuration",
            "| ENV, LOST | configuration",
            "LOST has 2 rows",
            id="two-rows",
        ),
        pytest.param(
            check_rows,
            "| ENV | configuration",
            "| ENV, NET | configuration",
            "ENV, NET: NET is no SPEC group",
            id="unknown-group",
        ),
        pytest.param(
            check_spec,
            "| admission control |",
            "| admission |",
            "ADMIT: spec ['admission'], but SPEC.md has ['admission control']",
            id="spec-title",
        ),
        pytest.param(
            check_files,
            "`test_admit.py`",
            "`test_admission.py`",
            "ADMIT: tests conformance/suite/test_admission.py does not exist",
            id="no-such-file",
        ),
        pytest.param(
            check_files,
            "`lost_*.py`",
            "`lost_x*.py`",
            "LOST: zoo fixtures/zoo/lost_x*.py matches no subject",
            id="empty-glob",
        ),
        pytest.param(
            check_tests,
            ", `test_acct.py` (STATS-2, STATS-3)",
            "",
            "KEY, LRU, DROP, STATS: STATS-2 is tagged in",
            id="test-file-missing",
        ),
        pytest.param(
            check_tests,
            "`test_env.py` |",
            "`test_env.py`, `test_lost.py` |",
            "ENV: test_lost.py holds no test tagged with ENV",
            id="test-file-extra",
        ),
        pytest.param(
            check_machines,
            ", `lock_capacity.py` (threads at capacity)",
            "",
            "LOCK: lock_capacity.py names its clauses in code (a blame home), but the row "
            "does not name it",
            id="machine-missing",
        ),
        pytest.param(
            check_machines,
            "`lock.py` (the injected lock), `lock_capacity.py` (threads at capacity)",
            "`manager.py` (the sessions it hands out)",
            "LOCK: LOCK-6 is named by ['lock.py', 'lock_capacity.py'], none of them in the row",
            id="machines-all-missing",
        ),
        pytest.param(
            check_machines,
            ", `manager.py` (the sessions it hands out)",
            "",
            "RESET: manager.py names its clauses in code (a blame home)",
            id="blame-home-missing",
        ),
        pytest.param(
            check_machines,
            "`env.py` (the config resolver)",
            "`env.py`, `reset.py`",
            "ENV: machine reset.py names none of its clauses",
            id="machine-extra",
        ),
        pytest.param(
            check_blame,
            "`judge_histories()`",
            "`judge_history()`",
            "LOCK: blame judge_history() is not in conformance/_machine/lock_capacity.py",
            id="blame-name",
        ),
        pytest.param(
            check_blame,
            "`lost.py`: `LOST_CLAUSES`",
            "`admit.py`: `LOST_CLAUSES`",
            "LOST: blame conformance/_machine/admit.py is no machine of the row",
            id="blame-module",
        ),
        pytest.param(
            check_blame,
            "; `composed_bytes.py`: `check_composed_bytes()`",
            "",
            "ACCT: machine conformance/_machine/composed_bytes.py has no blame named",
            id="blame-missing",
        ),
        pytest.param(
            check_models,
            "`LruTable.require_session`",
            "`LruTable.require`",
            "LOST: model LruTable.require is not in conformance/_model/manager.py",
            id="model-name",
        ),
        pytest.param(
            check_zoo,
            "`admit_*.py`",
            "`admit_r*.py`",
            "ADMIT: admit_default_refuses.py kills ADMIT, matched by no zoo glob",
            id="zoo-unmatched",
        ),
        pytest.param(
            check_zoo,
            "`env_*.py`",
            "`e*.py`, `lost_*.py`",
            "ENV: lost_absent_counts_miss.py matches a zoo glob, but kills only ['LOST']",
            id="zoo-foreign",
        ),
        pytest.param(
            check_reference,
            "`manager.py`, `errors.py` |",
            "`manager.py` |",
            "ADMIT: reference/errors.py is tagged ADMIT-1",
            id="reference-missing",
        ),
        pytest.param(
            check_reference,
            "| `config.py` |",
            "| `config.py`, `attrs.py` |",
            "ENV: reference/attrs.py carries no tag of ENV",
            id="reference-extra",
        ),
    ],
)
def test_a_doctored_table_is_reported(check: Check, old: str, new: str, reported: str) -> None:
    problems = check(doctored(old, new))
    assert any(reported in problem for problem in problems), problems


def test_an_unlisted_prose_mention_is_reported() -> None:
    rows = table(contributing())
    unlisted = {k: v for k, v in PROSE_MENTIONS.items() if k != ("lost.py", "LOCK")}
    assert check_machines(rows, unlisted) == [
        "LOCK: lost.py names its clauses, but neither the row nor PROSE_MENTIONS names it"
    ]
    stale = {**PROSE_MENTIONS, ("env.py", "LOST"): "no reason"}
    assert check_machines(rows, stale) == [
        "PROSE_MENTIONS: env.py no longer names a clause of LOST (or the row names it)"
    ]


def test_a_model_that_blames_is_reported() -> None:
    rows = table(contributing())
    unlisted = {k: v for k, v in MODEL_LABELS.items() if k != ("manager.py", "LRU")}
    assert check_models(rows, unlisted) == ["_model/manager.py names LRU clauses in code"]
    stale = {**MODEL_LABELS, ("env.py", "ENV"): "no reason"}
    assert check_models(rows, stale) == [
        "MODEL_LABELS: _model/env.py no longer names ENV clauses in code"
    ]


def test_a_table_without_its_columns_is_refused() -> None:
    text = contributing().replace("| group | spec (`SPEC.md`) |", "| group | section |", 1)
    with pytest.raises(ValueError, match="the table's columns are"):
        table(text)
    with pytest.raises(ValueError, match="no table after"):
        table("# Contributing\n")
