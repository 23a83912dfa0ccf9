"""Every module of ``conformance/_model`` is a pure oracle, as the layers say it is.

A model is the plain expected behaviour a check compares a subject with, so it must not
be able to judge, run or remember anything itself. For each module in the folder (found
by globbing it, so a new module is covered the day it is added), read with ``ast``:

* **imports**: nothing of ``sessionstate.conformance`` outside ``_model``, and nothing
  of ``sessionstate.fixtures``, at module level or inside a function (``import_module``
  and ``__import__`` of a constant name included);
* **clause failures**: it never names ``checks.ClauseFailure`` (so it neither raises nor
  imports it), never raises an ``AssertionError``, and defines no class deriving from
  ``AssertionError``: a model that fails is a broken model, not a failed clause;
* **state**: no module-level (or class-level) name bound to a mutable value (a list,
  dict or set display or comprehension, ``list()``, ``dict()``, ``set()``,
  ``defaultdict(...)``, ``OrderedDict(...)``, a counter, a deque, a lock), no
  assignment to an attribute of a module-level class or name, and no ``global``.
  Tuples, frozensets, read-only mappings (``MappingProxyType``), strings and numbers are
  constants. ``__all__`` is exempt: the export list, which nothing reads at run time.

Each rule is also fed a synthetic module that breaks it, so none passes vacuously.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionstate.conformance import _model
from sessionstate.conformance.checks import ClauseFailure

MODEL_DIR = Path(_model.__file__).resolve().parent
PACKAGE = "sessionstate.conformance._model"
SUITE = "sessionstate.conformance"
FIXTURES = "sessionstate.fixtures"
FAILURE = ClauseFailure.__name__
#: Calls whose result is a mutable container or a stateful object.
MUTABLE_CALLS = frozenset(
    {
        "list", "dict", "set", "bytearray",
        "defaultdict", "OrderedDict", "Counter", "ChainMap", "deque",
        "count", "cycle",
        "WeakValueDictionary", "WeakKeyDictionary", "WeakSet",
        "Lock", "RLock", "Condition", "Event", "Semaphore", "local", "ContextVar",
    }
)  # fmt: skip
_MUTABLE_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_EXEMPT = frozenset({"__all__"})

MODULES = sorted(MODEL_DIR.glob("*.py"))


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _imported(node: ast.AST, package: str) -> list[str]:
    """What an import statement (or an ``import_module``/``__import__`` call of a constant)
    names, as dotted names: ``from a import b`` names ``a.b``, relative ones resolved from
    ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        return [f"{base}.{alias.name}" for alias in node.names]
    if isinstance(node, ast.Call) and _called(node) in ("import_module", "__import__"):
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [first.value]
    return []


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _named(node: ast.expr) -> str:
    """The last part of a name or an attribute (``x.AssertionError``: ``AssertionError``)."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, _MUTABLE_DISPLAYS):
        return True
    if isinstance(value, ast.Call):
        return _called(value) in MUTABLE_CALLS
    if isinstance(value, ast.Tuple):
        return any(_mutable(item) for item in value.elts)
    return False


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run once, at import: the module's and its classes' bodies, through
    ``if``/``try``/``with``/``for`` blocks, never a function's."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.ClassDef):
            yield from _top_level(statement.body)
        elif isinstance(statement, ast.If | ast.For | ast.While | ast.With):
            yield from _top_level(statement.body)
            yield from _top_level(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try | ast.TryStar):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _top_level(block)
            for handler in statement.handlers:
                yield from _top_level(handler.body)


def _targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return [statement.target]
    return []


def _bound_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for item in target.elts for n in _bound_names(item)]
    return []


def violations(source: str, package: str = PACKAGE) -> list[str]:
    """What makes the module ``source`` (in ``package``) no pure oracle, one line each."""
    tree = ast.parse(source)
    found: list[str] = []
    globals_: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            globals_.add(statement.name)
        for target in _targets(statement):
            globals_.update(_bound_names(target))
    # (a) imports, anywhere in the module.
    for node in ast.walk(tree):
        for name in _imported(node, package):
            outside = _inside(name, SUITE) and not _inside(name, PACKAGE)
            if outside or _inside(name, FIXTURES):
                found.append(f"line {getattr(node, 'lineno', '?')}: imports {name}")
    # (b) clause failures.
    failing = {"AssertionError", FAILURE}
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    grew = True
    while grew:  # a class deriving from one of the module's own failing classes fails too
        grew = False
        for cls in classes:
            if cls.name not in failing and any(_named(b) in failing for b in cls.bases):
                failing.add(cls.name)
                grew = True
                found.append(f"line {cls.lineno}: class {cls.name} derives from AssertionError")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and _named(node) == FAILURE:
            found.append(f"line {node.lineno}: names {FAILURE}")
        elif isinstance(node, ast.alias) and node.name.rpartition(".")[2] == FAILURE:
            found.append(f"line {node.lineno}: imports {FAILURE}")
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if _named(raised) in failing:
                found.append(f"line {node.lineno}: raises {_named(raised)}")
    # (c) state: mutable values bound at import, ``global``, and writes to module names.
    for statement in _top_level(tree.body):
        names = [n for t in _targets(statement) for n in _bound_names(t)]
        if isinstance(statement, ast.AugAssign) and names:
            found.append(f"line {statement.lineno}: updates {', '.join(names)} at import")
        value = getattr(statement, "value", None)
        kept = [n for n in names if n not in _EXEMPT]
        if kept and isinstance(statement, ast.Assign | ast.AnnAssign) and _mutable(value):
            found.append(f"line {statement.lineno}: {', '.join(kept)} is mutable state")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"line {node.lineno}: global {', '.join(node.names)}")
        for target in _targets(node) if isinstance(node, ast.stmt) else []:
            if not isinstance(target, ast.Attribute):
                continue
            if isinstance(target.value, ast.Name) and target.value.id in globals_:
                found.append(f"line {node.lineno}: sets {target.value.id}.{target.attr}")
    return found


def _module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def test_the_glob_finds_the_models() -> None:
    names = {path.stem for path in MODULES}
    assert {"__init__", "memory", "manager", "dtypes", "bitwise"} <= names
    assert issubclass(ClauseFailure, AssertionError)  # what rule (b) stands on


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_model_is_a_pure_oracle(path: Path) -> None:
    found = violations(path.read_text(encoding="utf-8"), PACKAGE)
    assert not found, f"{_module_name(path)} is no pure oracle:\n" + "\n".join(found)


#: (a module that breaks one rule, what the report must say).
BROKEN = [
    ("from sessionstate.conformance.checks import check\n", "imports sessionstate.conformance.checks"),
    ("from sessionstate.conformance import strategies\n", "imports sessionstate.conformance.strategies"),
    ("import sessionstate.conformance._harness.devices\n", "imports sessionstate.conformance._harness"),
    ("from .. import checks\n", "imports sessionstate.conformance.checks"),
    ("from .._harness.devices import allocate\n", "imports sessionstate.conformance._harness.devices"),
    ("def f():\n    from sessionstate.fixtures import zoo\n", "imports sessionstate.fixtures.zoo"),
    ("def f():\n    from sessionstate import conformance\n", "imports sessionstate.conformance"),
    ("import importlib\ndef f():\n    importlib.import_module('sessionstate.conformance.plugin')\n",
     "imports sessionstate.conformance.plugin"),
    ("def f():\n    raise ClauseFailure('ACCT-1', 'no')\n", "names ClauseFailure"),
    ("from x import ClauseFailure\n", "imports ClauseFailure"),
    ("def f():\n    raise AssertionError('no')\n", "raises AssertionError"),
    ("class Wrong(AssertionError):\n    pass\n", "class Wrong derives from AssertionError"),
    ("import builtins\nclass Wrong(builtins.AssertionError):\n    pass\nclass Worse(Wrong):\n    pass\n",
     "class Worse derives from AssertionError"),
    ("SEEN = []\n", "SEEN is mutable state"),
    ("SEEN: dict[str, int] = {}\n", "SEEN is mutable state"),
    ("SEEN = {1, 2}\n", "SEEN is mutable state"),
    ("SEEN = {k: 1 for k in 'ab'}\n", "SEEN is mutable state"),
    ("SEEN = set()\n", "SEEN is mutable state"),
    ("SEEN = list()\n", "SEEN is mutable state"),
    ("SEEN = dict(a=1)\n", "SEEN is mutable state"),
    ("from collections import defaultdict\nSEEN = defaultdict(list)\n", "SEEN is mutable state"),
    ("import collections\nSEEN = collections.OrderedDict()\n", "SEEN is mutable state"),
    ("import itertools\n_labels = itertools.count()\n", "_labels is mutable state"),
    ("PAIR = ([], ())\n", "PAIR is mutable state"),
    ("try:\n    import attrs\nexcept ImportError:\n    SEEN = []\n", "SEEN is mutable state"),
    ("class Model:\n    seen = []\n", "seen is mutable state"),
    ("N = 0\nN += 1\n", "updates N at import"),
    ("N = 0\ndef f():\n    global N\n    N = 1\n", "global N"),
    ("class Model:\n    calls = 0\ndef f():\n    Model.calls += 1\n", "sets Model.calls"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "reported"), BROKEN)
def test_each_rule_reports_what_breaks_it(source: str, reported: str) -> None:
    found = violations(source, PACKAGE)
    assert any(reported in line for line in found), (source, found)


def test_constants_and_own_imports_pass() -> None:
    """What a pure model does is not reported: its own package, the reference and the
    package root, torch; tuples, frozensets, read-only mappings, strings, numbers;
    ``__all__``; local containers; instance attributes; ``assert`` for narrowing."""
    source = (
        "from types import MappingProxyType\n"
        "import torch\n"
        "import sessionstate\n"
        "from sessionstate.reference.accounting import device_bytes\n"
        "from sessionstate.conformance._model.dtypes import KINDS\n"
        "from . import memory\n"
        "from .aliases import alias_steps\n"
        "__all__ = ['Model']\n"
        "NAMES = ('a', 'b')\n"
        "KEYS = frozenset({'a', 'b'})\n"
        "TABLE = MappingProxyType({'a': 1})\n"
        "LIMIT: int = 2**63 - 1\n"
        "TEXT = 'x'.upper()\n"
        "class Model:\n"
        "    __slots__ = ('seen',)\n"
        "    def __init__(self) -> None:\n"
        "        self.seen = []\n"
        "        local = {}\n"
        "        assert isinstance(local, dict)\n"
        "def f(seen=None):\n"
        "    found = set()\n"
        "    raise ValueError('no')\n"
    )
    assert violations(source, PACKAGE) == []
