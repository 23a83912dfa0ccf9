"""Every dotted name a shipped docstring or comment gives for our own code resolves.

A docstring that says "the model lives in ``conformance.allocations``" is a map; when the
module moves and the words stay, the map lies. This test reads the docstrings (module, class,
function) and comments of every shipped source file, finds each dotted name rooted at one of
our packages (``sessionstate``, ``conformance``, ``reference``, ``fixtures``, and the private
``_model``, ``_machine``, ``_harness``, ``_report``, ``suite``, ``zoo``) and imports it, as
Hypothesis' documentation tests do. File names (``memory.py``) are not dotted names.
JUnit class names (``sessionstate.ACCT``) name a clause group and are skipped by the rule below.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["reference", "conformance", "fixtures", "src/sessionstate"]

#: Where each root a docstring may start from lives.
PACKAGES = {
    "sessionstate": "sessionstate",
    "conformance": "sessionstate.conformance",
    "reference": "sessionstate.reference",
    "fixtures": "sessionstate.fixtures",
    "_model": "sessionstate.conformance._model",
    "_machine": "sessionstate.conformance._machine",
    "_harness": "sessionstate.conformance._harness",
    "_report": "sessionstate.conformance._report",
    "suite": "sessionstate.conformance.suite",
    "zoo": "sessionstate.fixtures.zoo",
}
_NAME = re.compile(r"(?<![\w./<-])(" + "|".join(PACKAGES) + r")((?:\.[A-Za-z_]\w*)+)")
#: A file name, or a JUnit class name ``sessionstate.<GROUP>`` (an upper-case clause group).
_NOT_A_NAME = re.compile(
    r"\.(py|json|toml|md|txt|yml|yaml|html|xml|expectations)$|^sessionstate\.[A-Z]+$"
)


def _prose(source: str) -> list[str]:
    """The docstrings and comments of one module's source."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append(docstring)
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    found += [token.string for token in tokens if token.type == tokenize.COMMENT]
    return found


def _names() -> dict[str, str]:
    """Each dotted name found, with the first file that gives it."""
    names: dict[str, str] = {}
    for root in SOURCES:
        for path in sorted((ROOT / root).rglob("*.py")):
            for text in _prose(path.read_text(encoding="utf-8")):
                for match in _NAME.finditer(text):
                    name = match.group(0).rstrip(".")
                    if not _NOT_A_NAME.search(name):
                        names.setdefault(name, str(path.relative_to(ROOT)))
    return names


def resolve(name: str) -> object:
    """What ``name`` names: its root's package, then the longest importable module, then
    attributes; raises ImportError or AttributeError when nothing answers to it."""
    root, _, rest = name.partition(".")
    parts = f"{PACKAGES[root]}.{rest}".split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(name)


NAMES = _names()


def test_the_scan_finds_names() -> None:
    """The scan is not vacuous: the source cites many of its own modules."""
    assert len(NAMES) > 20
    assert "conformance._harness.watchdog" in NAMES


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_docstring_name_resolves(name: str) -> None:
    try:
        resolve(name)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"{NAMES[name]} cites {name}, which does not resolve: {error}")


@pytest.mark.parametrize(
    "stale", ["conformance.allocations", "conformance.linearizability", "_harness.target"]
)
def test_a_moved_module_is_caught(stale: str) -> None:
    with pytest.raises((ImportError, AttributeError)):
        resolve(stale)
