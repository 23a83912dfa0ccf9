"""The ``sessionstate`` commands' options and the plugin's are the one table,
``_harness.options.OPTIONS``: each parser holds exactly the table's rows for it, with the
table's help, and what ``check`` hands pytest is generated from it."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pytest.config.argparsing import Parser

from sessionstate.cli import _build_parser
from sessionstate.conformance import plugin
from sessionstate.conformance._harness.options import (
    OPTIONS,
    Command,
    flag,
    forwarded,
    options_of,
)
from sessionstate.conformance._harness.runner import CheckOptions, pytest_arguments

ROOT = Path(__file__).resolve().parents[2]


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = _build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[command]
            return found
    raise AssertionError("no subcommands")


def _command_options(command: Command) -> dict[tuple[str, ...], str | None]:
    """Spelling -> help, as ``sessionstate COMMAND``'s parser has them."""
    actions = _subparser(command)._actions
    return {tuple(a.option_strings) or (a.dest,): a.help for a in actions if a.dest != "help"}


def _table(command: Command) -> dict[tuple[str, ...], str | None]:
    return {o.command_flags: o.help_for(command) for o in options_of(command)}


@pytest.mark.parametrize("command", ["check", "fuzz"])
def test_each_command_takes_exactly_its_rows(command: Command) -> None:
    assert _command_options(command) == _table(command)


def _pytest_options() -> dict[str, dict[str, Any]]:
    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    (group,) = [g for g in parser._groups if g.name == "sessionstate"]
    return {o.names()[0]: o.attrs() for o in group.options}


def test_the_plugin_takes_exactly_the_pytest_rows() -> None:
    options = _pytest_options()
    rows = list(options_of("pytest"))
    assert sorted(options) == sorted(o.pytest_flag for o in rows)
    for row in rows:
        expected = argparse.SUPPRESS if row.hidden else row.help_for("pytest")
        assert options[row.pytest_flag]["help"] == expected, row.name


def test_no_option_is_spelt_twice_in_one_command() -> None:
    for command in ("check", "fuzz"):
        spellings = [f for o in options_of(command) for f in o.command_flags]  # type: ignore[arg-type]
        assert len(spellings) == len(set(spellings)), command
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))


def test_no_source_spells_a_plugin_option_but_the_table() -> None:
    """Every other module reads ``flag(name)``: a renamed option cannot leave one behind."""
    found = []
    for folder in ("conformance", "src/sessionstate"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "options.py" and '"--sessionstate-' in path.read_text("utf-8"):
                found.append(str(path.relative_to(ROOT)))
    assert found == []


def test_flag_refuses_a_name_not_in_the_table() -> None:
    assert flag("profile") == "--sessionstate-profile"
    with pytest.raises(KeyError):
        flag("profiles")
    with pytest.raises(KeyError):
        flag("markdown")  # a row of `check` alone


def test_check_forwards_every_given_forward_row() -> None:
    options = CheckOptions(
        target="pkg:subject", profile="quick", expectations="x.txt", strict=True, seed=3,
        clauses=["LRU", "ACCT-3"], devices=["cpu", "meta"], reproduce="test_lru.py::t",
        blob="6.0:AAA", database="db",
    )  # fmt: skip
    assert forwarded(options) == [
        "--sessionstate-subject", "pkg:subject",
        "--sessionstate-profile", "quick",
        "--sessionstate-expectations", "x.txt",
        "--sessionstate-strict",
        "--sessionstate-seed", "3",
        "--sessionstate-clause", "LRU",
        "--sessionstate-clause", "ACCT-3",
        "--sessionstate-devices", "cpu,meta",
        "--sessionstate-reproduce", "test_lru.py::t",
        "--sessionstate-blob", "6.0:AAA",
        "--sessionstate-database", "db",
    ]  # fmt: skip
    forwardable = {o.attribute for o in options_of("check") if o.forward}
    assert forwardable == {
        "target", "profile", "expectations", "strict", "seed", "clauses", "devices",
        "reproduce", "blob", "database",
    }  # fmt: skip


def test_what_check_hands_pytest_parses_back_to_its_options() -> None:
    """The forwarded arguments, parsed by the plugin's own options, give the values back."""
    options = CheckOptions(
        target="pkg:subject", profile="deep", strict=True, seed=7, clauses=["KEY"],
        devices=["cpu"], expectations="e.txt",
    )  # fmt: skip
    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    parsed = parser.parse_known_args(pytest_arguments(options, "out.json"))
    assert parsed.sessionstate_subject == "pkg:subject"
    assert parsed.sessionstate_profile == "deep"
    assert parsed.sessionstate_strict is True
    assert parsed.sessionstate_seed == 7
    assert parsed.sessionstate_clause == ["KEY"]
    assert parsed.sessionstate_devices == "cpu"
    assert parsed.sessionstate_expectations == "e.txt"
    assert parsed.sessionstate_report_json == "out.json"
    assert parsed.sessionstate_no_summary is True


def test_the_command_line_parses_into_check_options() -> None:
    args = _build_parser().parse_args(
        ["check", "pkg:s", "--clause", "LRU", "--devices", "cpu,,meta", "-x", "-n", "2"]
    )
    assert (args.target, args.clauses, args.devices) == ("pkg:s", ["LRU"], ["cpu", "", "meta"])
    assert (args.exitfirst, args.workers, args.profile) == (True, "2", None)


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from sessionstate.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['check', '--help'])\n"
        "print(json.dumps(sorted({'torch', 'pytest', 'hypothesis'} & set(sys.modules))))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
