"""Every option of the suite, written once: ``OPTIONS``.

A row names the option, its type, the command line's default, its help, and which
commands take it: ``check`` and ``fuzz`` (the ``sessionstate`` command, argparse) and
``pytest`` (the plugin's ``--sessionstate-NAME``). Both parsers are generated from the
table (``add_command_options``, ``add_pytest_options``), and what ``check`` hands the
pytest process it starts is generated from it too (``forwarded``): an option is never
spelt twice. ``tests/plugin/test_options.py`` compares both parsers with the table.

Stdlib only: ``sessionstate --help`` must not import pytest, Hypothesis or torch.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OPTIONS",
    "Option",
    "add_command_options",
    "add_pytest_options",
    "command_values",
    "env_var",
    "flag",
    "forwarded",
    "options_of",
]

Command = Literal["check", "fuzz", "pytest"]
#: How a value is read. ``text``: as given; ``int``, ``float``: converted; ``whole``: an
#: int, "'x' is not a whole number" otherwise; ``flag``: present or not; ``off``: a flag
#: that turns the option off; ``append``: repeatable; ``names``: a comma-separated list
#: (empty names kept, for validation to refuse: ',,,' must not mean every device).
Kind = Literal["text", "int", "float", "whole", "flag", "off", "append", "names"]

#: The plugin's options are ``--sessionstate-NAME``.
PYTEST_PREFIX = "--sessionstate-"


@dataclass(frozen=True)
class Option:
    """One option. ``flags``: its spelling on the ``sessionstate`` command line (default
    ``--NAME``; a name without dashes is a positional argument); ``dest``: the attribute
    it fills there (default NAME with ``_``), which is also the field of ``CheckOptions``
    or ``FuzzOptions`` it sets. ``env``: the variable the plugin reads when the option is
    not given. ``notes``: what one command adds to ``help``. ``forward``: ``check`` hands
    its value to the pytest process under the plugin's spelling. ``hidden``: for
    ``check``'s supervisor only, left out of ``pytest --help``."""

    name: str
    help: str
    commands: tuple[Command, ...]
    kind: Kind = "text"
    metavar: str | None = None
    flags: tuple[str, ...] = ()
    dest: str | None = None
    default: Any = None
    env: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)
    forward: bool = False
    hidden: bool = False

    @property
    def command_flags(self) -> tuple[str, ...]:
        return self.flags or (f"--{self.name}",)

    @property
    def attribute(self) -> str:
        return self.dest or self.name.replace("-", "_")

    @property
    def pytest_flag(self) -> str:
        return PYTEST_PREFIX + self.name

    def help_for(self, command: Command) -> str:
        """The help text ``command`` shows for it."""
        text = self.help + self.notes.get(command, "")
        if command == "pytest" and self.env:
            text += f" (env {self.env})"
        return text


_SUBJECT_HELP = (
    "pkg.module:attr naming a Subject, a callable returning one, or a manager class "
    "(default: the bundled reference)"
)

OPTIONS: tuple[Option, ...] = (
    Option(
        "subject",
        _SUBJECT_HELP,
        ("check", "fuzz", "pytest"),
        metavar="TARGET",
        flags=("target",),
        dest="target",
        env="SESSIONSTATE_SUBJECT",
        forward=True,
    ),
    Option(
        "profile",
        "the Hypothesis profile: quick, ci (default), deep or triage (no shrinking)",
        ("check", "pytest"),
        env="SESSIONSTATE_PROFILE",
        forward=True,
    ),
    Option(
        "report-json",
        "write the per-test and per-clause results as JSON",
        ("check", "pytest"),
        metavar="PATH",
    ),
    Option(
        "junitxml",
        "write JUnit XML with one testcase per clause, in a suite named after the subject",
        ("check", "pytest"),
        metavar="PATH",
        notes={"pytest": " (pytest's own --junitxml has one testcase per test)"},
    ),
    Option("markdown", "write the summary as Markdown", ("check",), metavar="PATH"),
    Option(
        "expectations",
        "known failures: lines 'CLAUSE-OR-TEST-ID xfail|skip reason'",
        ("check", "pytest"),
        metavar="FILE",
        forward=True,
    ),
    Option(
        "strict",
        "SHOULD failures fail the run (exit 1)",
        ("check", "fuzz", "pytest"),
        kind="flag",
        forward=True,
        notes={
            "check": ", stale expectations too (exit 2: an entry that matched nothing, an "
            "expected failure that passed)",
            "pytest": ", unmatched expectations too",
        },
    ),
    Option(
        "exitfirst",
        "stop at the first failure",
        ("check",),
        kind="flag",
        flags=("-x", "--exitfirst"),
    ),
    Option(
        "workers",
        "run in N processes (pytest-xdist), at most 4 per CPU; 0: none, 'auto': one per CPU",
        ("check",),
        metavar="N",
        flags=("-n",),
    ),
    Option(
        "fuzz-workers",
        "fuzz in N processes (default: the CPUs this process may use)",
        ("fuzz",),
        kind="whole",
        metavar="N",
        flags=("-n",),
        dest="workers",
    ),
    Option(
        "seed",
        "run randomized (not derandomized) with this Hypothesis seed",
        ("check", "pytest"),
        kind="int",
        forward=True,
    ),
    Option(
        "clause",
        "only the tests of this clause or group (repeatable): LRU-3, ACCT",
        ("check", "fuzz", "pytest"),
        kind="append",
        metavar="ID",
        dest="clauses",
        forward=True,
    ),
    Option(
        "devices",
        "allocate only on these devices, comma-separated, e.g. cpu,meta for code "
        "that cannot take a simulated CUDA tensor (cpu is always kept); wins over "
        "Subject.devices; the devices left out are named in the header and the report",
        ("check", "pytest"),
        metavar="LIST",
        forward=True,
        kind="names",
    ),
    Option(
        "reproduce",
        "run only this test, e.g. test_lru.py::test_manager_machine (an id as "
        "a failure's summary prints it, with the whole command)",
        ("check", "pytest"),
        metavar="TEST_ID",
        forward=True,
    ),
    Option(
        "blob",
        "with --reproduce: replay this failing case (Hypothesis' "
        "@reproduce_failure(VERSION, BLOB))",
        ("check", "pytest"),
        metavar="VERSION:BLOB",
        forward=True,
    ),
    Option(
        "database",
        "the Hypothesis example database: a directory or redis://HOST:PORT[/DB]",
        ("check", "fuzz", "pytest"),
        metavar="PATH|URL",
        forward=True,
        notes={
            "check": "; every failure stored there is replayed first (a directory "
            "'sessionstate fuzz' wrote), randomized with --seed, 0 when not given",
            "pytest": "; the run is randomized and replays every failure stored there first",
            "fuzz": " (a directory is made if missing); default: a directory in "
            "sessionstate's Hypothesis storage, printed at the start",
        },
    ),
    Option("list-clauses", "list the clauses and exit", ("check",), kind="flag"),
    Option(
        "seconds",
        "fuzz for N seconds after the quick pass when nothing was found (default 600)",
        ("fuzz",),
        kind="float",
        metavar="N",
        default=600.0,
    ),
    Option(
        "no-quick-pass",
        "start HypoFuzz at once, without running every selected test at the quick profile first",
        ("fuzz",),
        kind="off",
        dest="quick_pass",
    ),
    Option("dashboard", "serve HypoFuzz's live dashboard while fuzzing", ("fuzz",), kind="flag"),
    Option("port", "the dashboard's port (default 9999)", ("fuzz",), kind="whole", default=9999),
    Option(
        "call-timeout",
        "seconds any call into the subject may take before it fails LOCK-3 "
        "as a hang (default 5; 0: unbounded)",
        ("pytest",),
        metavar="SECONDS",
        env="SESSIONSTATE_CALL_TIMEOUT",
    ),
    Option(
        "no-summary",
        "do not print the clause table at the end of the run",
        ("pytest",),
        kind="flag",
    ),
    # For `sessionstate check`'s supervisor (supervisor.py, child.py): not in --help.
    Option("journal", "the folder of the run's journal", ("pytest",), metavar="DIR", hidden=True),
    Option(
        "test-timeout",
        "the wall-clock bound of one test, in seconds",
        ("pytest",),
        kind="float",
        hidden=True,
    ),
    Option(
        "skip-ids",
        "a JSON list of the node ids a resumed run leaves out",
        ("pytest",),
        metavar="FILE",
        hidden=True,
    ),
    Option(
        "run-deadline",
        "time.time() by which the tests are to have stopped",
        ("pytest",),
        kind="float",
        hidden=True,
    ),
    Option("run-timeout", "the run's bound in seconds", ("pytest",), kind="float", hidden=True),
)

_BY_NAME = {option.name: option for option in OPTIONS}


def options_of(command: Command) -> Iterator[Option]:
    """The rows ``command`` takes, in table order."""
    return (option for option in OPTIONS if command in option.commands)


def flag(name: str) -> str:
    """The plugin's spelling of option ``name`` (a ``KeyError`` for a name not in the table,
    so a typo cannot read an option that does not exist)."""
    option = _BY_NAME[name]
    if "pytest" not in option.commands:
        raise KeyError(f"{name!r} is not a pytest option")
    return option.pytest_flag


def env_var(name: str) -> str:
    """The variable the plugin reads for option ``name`` when it is not given."""
    variable = _BY_NAME[name].env
    if variable is None:
        raise KeyError(f"{name!r} is read from no variable")
    return variable


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",")]


def _argparse_keywords(option: Option, command: Command) -> dict[str, Any]:
    keywords: dict[str, Any] = {"help": option.help_for(command), "default": option.default}
    if option.metavar:
        keywords["metavar"] = option.metavar
    if option.kind in ("flag", "off"):
        keywords["action"] = "store_true" if option.kind == "flag" else "store_false"
        keywords["default"] = option.kind == "off"
        keywords.pop("metavar", None)
    elif option.kind == "append":
        keywords.update(action="append", default=[])
    else:
        keywords["type"] = {"int": int, "float": float, "whole": _whole, "names": _names}.get(
            option.kind
        )
    return keywords


def add_command_options(parser: argparse.ArgumentParser, command: Command) -> None:
    """Add ``command``'s rows to its argparse parser."""
    for option in options_of(command):
        keywords = _argparse_keywords(option, command)
        if option.command_flags[0].startswith("-"):
            parser.add_argument(*option.command_flags, dest=option.attribute, **keywords)
        else:  # a positional argument, optional
            keywords.pop("metavar", None)
            parser.add_argument(option.attribute, nargs="?", **keywords)


def add_pytest_options(group: Any) -> None:
    """Add the ``pytest`` rows to the plugin's option group (a ``pytest.OptionGroup``).

    The plugin's defaults are "not given" (``None``, ``False``, ``[]``): the variable named
    by ``env``, then the suite's own default, apply after (see ``plugin``)."""
    for option in options_of("pytest"):
        keywords: dict[str, Any] = {"default": None}
        keywords["help"] = argparse.SUPPRESS if option.hidden else option.help_for("pytest")
        if option.metavar:
            keywords["metavar"] = option.metavar
        if option.kind == "flag":
            keywords.update(action="store_true", default=False)
            keywords.pop("metavar", None)
        elif option.kind == "append":
            keywords.update(action="append", default=[])
        elif option.kind in ("int", "float"):
            keywords["type"] = int if option.kind == "int" else float
        group.addoption(option.pytest_flag, **keywords)


def forwarded(values: object) -> list[str]:
    """The plugin's arguments for the ``forward`` rows ``check`` takes, read from
    ``values`` (a ``CheckOptions``): a value not given (``None``, ``False``, ``[]``) is
    left out; a list of names is joined with commas, a repeatable option repeated."""
    args: list[str] = []
    for option in options_of("check"):
        if not option.forward:
            continue
        value = getattr(values, option.attribute)
        if value is None or value is False or value == []:
            continue
        if option.kind == "flag":
            args.append(option.pytest_flag)
        elif option.kind == "append":
            for item in value:
                args += [option.pytest_flag, str(item)]
        elif option.kind == "names":
            args += [option.pytest_flag, ",".join(value)]
        else:
            args += [option.pytest_flag, str(value)]
    return args


def command_values(args: argparse.Namespace, command: Command) -> dict[str, Any]:
    """The values ``command``'s rows parsed into ``args``, by attribute."""
    return {option.attribute: getattr(args, option.attribute) for option in options_of(command)}
