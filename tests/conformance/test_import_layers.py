"""Imports point down the layers, and no modules import each other in a circle.

The conformance package is built in tiers; a module may import its own tier or any tier
below it, never one above (``LAYERS``, bottom first). Every import counts, function-local
ones too: a local import hides a dependency from the import system, not from a reader.

* **models** (``_model``): pure oracles, the plain expected behaviour; they import nothing
  else of the suite.
* **definitions**: the public vocabulary a subject and a test are written in (clauses,
  checks, ``Subject``, specs, strategies) and the few private leaves it is made of.
* **harness** (``_harness``, ``_report``): running a check (processes, bounds, watchdog,
  profiles, expectations) and reporting it.
* **machines** (``_machine``): each clause group's state machines and blame rules.
* **suite**: the test modules pytest collects.
* **entry points**: the pytest plugin, the command line and the package's own namespace.

``sessionstate`` itself (its ``__version__``) and ``sessionstate.reference``, the subject
side (the suite's test doubles subclass its ABC), sit below them all;
``sessionstate.fixtures`` is above them all and nothing here imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {
    "sessionstate.conformance": ROOT / "conformance",
    "sessionstate.reference": ROOT / "reference",
    "sessionstate": ROOT / "src" / "sessionstate",
}

C = "sessionstate.conformance"
#: Bottom first. A module belongs to the most specific prefix listed (a module, then its
#: package); ``LEAVES`` are the private modules the definitions tier is made of.
LEAVES = (
    f"{C}._report.text",  # short_repr and the escaping every message uses
    f"{C}._harness.applicability",  # which hooks each clause needs: the words of a skip
    f"{C}._harness.supervision.frames",  # whose code a traceback frame is: suite, library or subject
    f"{C}._harness.supervision.own_outcomes",  # the skips the suite raises, told from the subject's
    f"{C}._harness.suite_buffer",  # the buffer a subject without buffer_factory is given
    f"{C}._harness.devices",  # the devices and allocations the strategies draw values on
    f"{C}._harness.caching_allocator",  # the simulated devices' reuse of freed blocks
)
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("package root", ("sessionstate",)),  # its __version__; every subpackage is named below
    ("reference", ("sessionstate.reference",)),
    ("models", (f"{C}._model",)),
    (
        "definitions",
        (
            *(f"{C}.{name}" for name in ("clauses", "checks", "subject", "specs", "adapters")),
            *(f"{C}.{name}" for name in ("strategies", "env_values", "input_reach", "sizes")),
            *LEAVES,
        ),
    ),
    ("harness", (f"{C}._harness", f"{C}._report")),
    ("machines", (f"{C}._machine",)),
    ("suite", (f"{C}.suite",)),
    (
        "entry points",
        (C, f"{C}.plugin", "sessionstate.cli", "sessionstate.__main__", "sessionstate"),
    ),
]


def _module_name(path: Path) -> str:
    for package, folder in PACKAGE_DIRS.items():
        if path.is_relative_to(folder):
            parts = [*package.split("."), *path.relative_to(folder).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in PACKAGE_DIRS.values():
        for path in folder.rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.setdefault(_module_name(path), path)
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The modules of ours that ``name`` imports anywhere in its source."""
    imported: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # ``from package import module`` imports the module; a name imports its module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                       for alias in node.names]  # fmt: skip
        else:
            continue
        imported.update(t for t in targets if t in MODULES and t != name)
    return imported


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def tier(name: str) -> int:
    """The index in ``LAYERS`` of the most specific prefix that names ``name``."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            names_it = name == prefix or name.startswith(prefix + ".")
            if names_it and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    assert best is not None, f"{name} is in no layer of LAYERS"
    return best[1]


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        tier(name)
    assert len(GRAPH) > 80 and sum(map(len, GRAPH.values())) > 200


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name: str) -> None:
    upward = sorted(
        f"{target} ({LAYERS[tier(target)][0]})"
        for target in GRAPH[name]
        if tier(target) > tier(name)
    )
    assert not upward, f"{name} ({LAYERS[tier(name)][0]}) imports upward: {', '.join(upward)}"


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    # A package's __init__ re-exporting its modules is not a circle of behaviour.
    cycles = [c for c in _cycles() if not any(m == C or m.endswith(".__init__") for m in c)]
    assert cycles == [], cycles


def test_the_rule_sees_an_upward_import() -> None:
    """A machine importing the plugin is reported; the check is not vacuous."""
    assert tier(f"{C}._machine.lru") < tier(f"{C}.plugin")
    assert tier(f"{C}._model.memory") < tier(f"{C}.checks") < tier(f"{C}._harness.runner")
    assert tier(f"{C}._harness.supervision.frames") == tier(f"{C}.checks")
