"""Every code block of README.md and docs/*.md runs as written, and every dotted
``sessionstate.`` name the docs mention resolves, as does every dotted name of ours that a
shipped docstring or comment gives.

* ``python`` blocks run, each in a fresh interpreter in an empty folder.
* ``bash`` blocks run with bash in an empty folder, this environment's console scripts
  first on ``PATH``; every ``sessionstate`` command line in any block, run or not, is
  also parsed by the command's own parser, so a wrong option fails here.
* A block the line above marks ``<!-- docs-test: skip: REASON -->`` is not run (a
  ``pip install`` from the network, a whole-suite run, a placeholder package); the
  reason is required.
* ``<!-- docs-test: with my_model -->``: the block imports the reader's own package,
  ``my_model.state``; a small stand-in built from the project's fixtures is put beside it.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shlex
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!-- docs-test: (?P<what>skip|with)(?::? ?(?P<rest>.*?))? -->$")

#: The stand-in for the reader's own ``my_model.state``.
MY_MODEL = '''\
"""Stand-in for the reader's own module: real StateObjects and adapters of the project."""
from sessionstate.fixtures.rollout_example import RolloutState as MyState
from sessionstate.fixtures.rollout_example import RolloutStateAdapter as MyStateAdapter
from sessionstate.reference import LatentBuffer


class PagedKV(LatentBuffer):
    def allocate(self, *, pages):
        super().allocate(maxlen=pages)
'''


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    text: str
    mark: str  # "", "skip", "with"
    reason: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        mark = _MARK.match(lines[index - 1]) if index else None
        found.append(
            Block(
                path, index + 1, opening.group(1), "\n".join(lines[index + 1 : end]) + "\n",
                mark.group("what") if mark else "", (mark.group("rest") or "") if mark else "",
            )
        )  # fmt: skip
        index = end + 1
    return found


ALL = [block for path in DOCUMENTS for block in blocks(path)]
CODE = [block for block in ALL if block.language in ("python", "bash")]
RUN = [block for block in CODE if block.mark != "skip"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SESSIONSTATE_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_the_documents_have_code_blocks() -> None:
    assert len(CODE) >= 15, [block.id for block in CODE]
    assert len(RUN) >= 6, [block.id for block in RUN]


def test_every_skip_says_why() -> None:
    """A skipped block names its reason; a mark stands right above a block."""
    for block in ALL:
        if block.mark == "skip":
            assert len(block.reason.strip()) >= 10, f"{block.id}: skip without a reason"
    marks = sum(
        1 for path in DOCUMENTS for line in path.read_text().splitlines() if "docs-test:" in line
    )
    assert marks == sum(1 for block in ALL if block.mark), "a docs-test mark above no block"


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.id)
def test_the_block_runs(block: Block, tmp_path: Path) -> None:
    if block.mark == "with":
        assert block.reason == "my_model", f"{block.id}: unknown stand-in {block.reason!r}"
        (tmp_path / "my_model").mkdir()
        (tmp_path / "my_model" / "__init__.py").write_text("")
        (tmp_path / "my_model" / "state.py").write_text(MY_MODEL)
    if block.language == "python":
        script = tmp_path / "block.py"
        script.write_text(block.text)
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", block.text]
    env = _env()
    env["PYTHONPATH"] = str(tmp_path)  # the reader's own package, where there is one
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, (
        f"{block.id}\n{block.text}\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
    )


def _commands(text: str) -> list[list[str]]:
    """The ``sessionstate`` command lines of a shell block, as argument lists."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value prefixes
        if words and words[0] == "sessionstate":
            found.append(words[1:])
    return found


SESSIONSTATE_LINES = [
    pytest.param(words, id=f"{block.id}:{' '.join(words)[:40]}")
    for block in CODE
    if block.language == "bash"
    for words in _commands(block.text)
]


@pytest.mark.parametrize("words", SESSIONSTATE_LINES)
def test_every_sessionstate_line_parses(words: list[str]) -> None:
    """The command's own parser accepts the line (options, subcommands, values)."""
    from sessionstate.cli import _build_parser, _split_passthrough

    own, _ = _split_passthrough(words)
    try:
        _build_parser().parse_args(own)
    except SystemExit as exit:
        pytest.fail(f"sessionstate {' '.join(words)}: rejected by the parser ({exit.code})")


# Not a file name (``workflows/sessionstate.yml``), nor a JUnit ``classname="sessionstate.ACCT"``,
# which names a clause group.
_DOTTED = re.compile(r'(?<!classname=")(?<![/\w.-])sessionstate(?:\.[A-Za-z_][A-Za-z0-9_]*)+')


#: Our modules that import a third party the tests do not install, and what they need:
#: a name in them is checked against the module's source (its top-level definitions).
NEEDS_ELSEWHERE = {"sessionstate.fixtures.vllm_omni": "vllm_omni"}


def _resolve(name: str) -> object:
    """The object ``name`` names: the longest importable module, then attributes."""
    for module in NEEDS_ELSEWHERE:
        if name == module or name.startswith(f"{module}."):
            return _defined_in_source(module, name.removeprefix(module).split(".")[1:])
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(name)


def _defined_in_source(module: str, attributes: list[str]) -> str:
    """``module``'s file, when it exists and defines ``attributes[0]`` at its top level."""
    spec = find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    defined = {
        target.id
        for node in tree.body
        for target in (
            node.targets if isinstance(node, ast.Assign)
            else [node.target] if isinstance(node, ast.AnnAssign)
            else [ast.Name(node.name)] if isinstance(node, ast.FunctionDef | ast.ClassDef)
            else []
        )
        if isinstance(target, ast.Name)
    }  # fmt: skip
    if attributes and attributes[0] not in defined:
        raise AttributeError(f"{module} defines no {attributes[0]!r}")
    return spec.origin


DOTTED = sorted(
    {
        match.group(0).rstrip(".")
        for path in [*DOCUMENTS, ROOT / "CONTRIBUTING.md"]
        for match in _DOTTED.finditer(path.read_text())
    }
)


@pytest.mark.parametrize("name", DOTTED)
def test_every_dotted_name_resolves(name: str) -> None:
    """``sessionstate.x.y`` in the docs imports, or is an attribute of what does."""
    _resolve(name)


def test_a_wrong_name_is_caught() -> None:
    with pytest.raises((ImportError, AttributeError)):
        _resolve("sessionstate.conformance._model.objects.ObjectModel")
    with pytest.raises(AttributeError):
        _resolve("sessionstate.fixtures.vllm_omni.no_such_subject")
    assert _resolve("sessionstate.fixtures.vllm_omni.unguarded")


# Docstrings and comments -------------------------------------------------------------
# Every dotted name a shipped docstring or comment gives for our own code resolves, so a
# module that moves cannot leave a map behind that lies ("the model lives in
# ``conformance.allocations``"). Names rooted at our packages (``sessionstate``,
# ``conformance``, ``reference``, ``fixtures``, and the private ``_model``, ``_machine``,
# ``_harness``, ``_report``, ``suite``, ``zoo``) are imported; file names (``memory.py``) and
# JUnit class names (``sessionstate.ACCT``, a clause group) are not dotted names.

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
    """What a docstring's ``name`` names: its root's package, then ``_resolve``."""
    root, _, rest = name.partition(".")
    return _resolve(f"{PACKAGES[root]}.{rest}")


NAMES = _names()


def test_the_scan_finds_names() -> None:
    """The scan is not vacuous: the source cites many of its own modules."""
    assert len(NAMES) > 20
    assert "conformance._harness.supervision.watchdog" in NAMES


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
