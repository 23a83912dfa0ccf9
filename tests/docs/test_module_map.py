"""Every source module with behaviour of its own has tests a newcomer can find.

The rule (CONTRIBUTING.md, "Layout"): a module that defines a function, or a class with a
method, has a same-named test file ``tests/<area>/test_<module>.py`` that mentions it (a
*mirror*), or is a key of ``TESTED_IN`` here, which names the test files that exercise it
and why they are named otherwise. A module that defines no function and no class with a
method (constants, dataclasses without methods, re-exports) needs neither. The modules are
those of ``SOURCE_FOLDERS`` (not ``fixtures/zoo/``, not ``conformance/suite/``, not
``__init__.py`` or ``__main__.py``), each named here by its dotted path under
``sessionstate`` (``conformance._harness.exit_policy``, ``reference.manager``,
``sessionstate.cli``).

A test file *mentions* a module when its text has the module's dotted name from its package
on (``_harness.exit_policy``, so any longer import name too), its path from its folder on
(``_harness/exit_policy.py``), its bare file name where no other module has that name
(``exit_policy.py``), or an import of it from its package
(``from sessionstate.conformance._harness import exit_policy``). A bare word is not enough:
``reset``, ``host`` or ``header`` appear in tests that never touch those modules, and a
command line (``sessionstate explain``) does not say which module answers it. So a test
file that shares a module's name by accident (``tests/cli/test_database.py``, a journey
through Redis, beside ``_harness/database.py``) is no mirror of it.

``READERS`` are tests that read the source (its imports, its names, its docstrings) without
running it: a mention there does not make a test of the module. A module with behaviour that
no other test file mentions is listed in ``UNTESTED`` with what exercises it instead or what
is missing; the entry goes stale, and fails here, the day a test names the module.

Each check can fail: the second half of this file runs it on a made-up tree.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Source folder (from the repository root) -> the dotted prefix its modules are named by.
SOURCE_FOLDERS = {
    "reference": "reference",
    "conformance": "conformance",
    "conformance/_harness": "conformance._harness",
    "conformance/_harness/supervision": "conformance._harness.supervision",
    "conformance/_report": "conformance._report",
    "conformance/_machine": "conformance._machine",
    "conformance/_model": "conformance._model",
    "src/sessionstate": "sessionstate",
    "fixtures": "fixtures",
}
NOT_MODULES = frozenset({"__init__.py", "__main__.py"})

#: Test files that read the source without running it -> what they read.
READERS = {
    "tests/conformance/test_import_layers.py": "every module's imports, against the layer table",
    "tests/conformance/test_model_purity.py": "the source of _model/ with ast, for purity",
    "tests/docs/test_contributing_homes.py": "the names CONTRIBUTING.md's clause table gives",
    "tests/docs/test_api_reference.py": "the docstrings Sphinx builds the API reference from",
    "tests/docs/test_module_map.py": "this file: every module's name, in the tables below",
}

#: Module -> (the test files that exercise it, how; why none is named after it).
TESTED_IN: dict[str, tuple[tuple[str, ...], str]] = {
    "conformance._harness.profiles": (
        ("tests/cli/test_hypothesis_files.py",),
        "the private storage and the per-subject fuzz database are Hypothesis' files; the "
        "profiles themselves load for our own tests (tests/conftest.py) and every suite run",
    ),
    "conformance.clauses": (
        (
            "tests/conformance/test_spec_meta.py",
            "tests/zoo/test_clause_matrix.py",
            "tests/reference/test_clause_tags.py",
        ),
        "SPEC.md as all_clauses() and spec_text() read it: every clause has a test and a "
        "reference tag, every MUST clause a zoo subject, every marker and tag a known clause",
    ),
    "conformance.specs": (
        ("tests/conformance/test_obj_models.py",),
        "StateObjectSpec.oracle(): a contents= kind is the suite's own LogModel; the spec's "
        "own validation (test_obj_specs.py) imports it from sessionstate.conformance",
    ),
    "conformance.strategies": (
        (
            "tests/conformance/test_memory.py",
            "tests/conformance/test_value_reach.py",
            "tests/conformance/test_devices.py",
        ),
        "the value strategies: sizes against hand-computed numbers and reprs that rebuild "
        "the value, floors on what they reach, the devices they allocate on",
    ),
    "conformance.subject": (
        (
            "tests/bench/test_mutation_tools.py",
            "tests/reliability/test_run_bound.py",
            "tests/cli/test_report_text.py",
        ),
        "load_subject on a mutation worker's arguments and UsageError from the bounds and -n; "
        "Subject's field checks are asserted through `sessionstate check` (tests/cli/test_check.py)",
    ),
    "conformance._harness.applicability": (
        ("tests/conformance/test_contents_checked.py",),
        "CONTENTS_NOT_CHECKED, the skip a spec without contents gets, and the skip reasons "
        "naming every clause of a test (clause_list); the capability and hook skips are "
        "asserted in the reports of plugin runs too, which name no module",
    ),
    "conformance._harness.atomic": (
        ("tests/cli/test_report_text.py", "tests/reliability/test_reports_and_input.py"),
        "write_text_atomic to /dev/null, /dev/full and a FIFO, is_stream and write_error; a "
        "full disk under `sessionstate check`",
    ),
    "conformance._harness.supervision.bounds": (
        (
            "tests/reliability/test_run_bound.py",
            "tests/reliability/test_supervision.py",
            "tests/reliability/test_under_load.py",
        ),
        "run_bound and test_bound from the profile and the environment, and the wall-clock "
        "bound (REPORT_SECONDS) supervised runs keep",
    ),
    "conformance._harness.database": (
        ("tests/reliability/test_infrastructure.py",),
        "GuardedDatabase around a failing backend, a broken database as exit 4; "
        "tests/cli/test_database.py drives a real Redis through the command only",
    ),
    "conformance._harness.expectations": (
        (
            "tests/cli/test_expectation_ids.py",
            "tests/cli/test_report_text.py",
            "tests/conformance/test_results.py",
        ),
        "parse_expectations and Expectation: ids checked against the suite, the index, "
        "outcomes under an expectation",
    ),
    "conformance._harness.init_project": (
        ("tests/cli/test_init_requirement.py", "tests/reliability/test_reports_and_input.py"),
        "workflow_text with the detected requirement, and `sessionstate init` whose stage fails",
    ),
    "conformance._harness.progress": (
        ("tests/cli/test_long_runs.py",),
        "GroupProgress's line per finished clause group, and group_of",
    ),
    "conformance._harness.requirement": (
        ("tests/cli/test_init_requirement.py",),
        "install_source from how sessionstate was installed (PEP 610), InstallSource",
    ),
    "conformance._harness.run_results": (
        ("tests/cli/test_report_text.py",),
        "only write_junit to a full disk; the plugin's results are asserted in the reports of "
        "tests/cli/test_reports.py, which names no module",
    ),
    "conformance._harness.runner": (
        (
            "tests/plugin/test_options.py",
            "tests/cli/test_report_text.py",
            "tests/reliability/test_infrastructure.py",
        ),
        "CheckOptions as pytest's arguments (pytest_arguments), the -n and report-path checks, "
        "infrastructure_status's exit statuses",
    ),
    "conformance._harness.supervision.supervisor": (
        (
            "tests/cli/test_exit_policy.py",
            "tests/reliability/test_reports_and_input.py",
        ),
        "supervise replaced to reach the exit policy without a process; "
        "test_supervision.py's runs are supervised ones",
    ),
    "conformance._harness.under_test": (
        ("tests/reliability/test_reports_and_input.py",),
        "only environment(), called to build canned results; the facts it gathers are asserted "
        "by no test that names it",
    ),
    "conformance._report.explain": (
        (
            "tests/conformance/test_clause_index.py",
            "tests/conformance/test_spec_meta.py",
            "tests/cli/test_expectation_ids.py",
        ),
        "clause_tests and mentions against what collection finds; tests/cli/test_explain.py "
        "runs `sessionstate explain` and names no module",
    ),
    "conformance._report.junit": (
        (
            "tests/cli/test_reports.py",
            "tests/cli/test_expectation_reasons.py",
            "tests/cli/test_report_text.py",
        ),
        "to_junit_xml: a testcase per clause, expectations' reasons, subject text escaped",
    ),
    "conformance._report.matrix": (
        (
            "tests/cli/test_reports_html.py",
            "tests/cli/test_expectation_reasons.py",
            "tests/cli/test_report_text.py",
        ),
        "to_html as headless Chromium renders it, to_markdown, subject text escaped",
    ),
    "conformance._report.terminal": (
        (
            "tests/cli/test_reports.py",
            "tests/cli/test_long_runs.py",
            "tests/cli/test_report_text.py",
        ),
        "table_lines, clip, start_lines and markdown, on results built by hand",
    ),
    "conformance._report.text": (
        ("tests/cli/test_report_text.py",),
        "subject-supplied text in every output format, and the bounded short_repr",
    ),
    "conformance._machine.adapt": (
        ("tests/conformance/test_adapters.py", "tests/conformance/test_worked_examples.py"),
        "AdapterMachine in process on the rollout example, the worked examples and their "
        "planted-bug twins",
    ),
    "conformance._machine.admit": (
        ("tests/conformance/test_admission_model.py",),
        "the ADMIT machines and blame helpers by hand, on the reference and every admit_* subject",
    ),
    "conformance._machine.env": (
        ("tests/conformance/test_env_logging.py",),
        "resolve hears ENV-5's warning through the subject's own logger",
    ),
    "conformance._machine.obj": (
        ("tests/conformance/test_obj_models.py",),
        "spec_params: the clauses and skips each spec's test gets",
    ),
    "conformance._machine.object_mirror": (
        ("tests/conformance/test_obj_models.py",),
        "ModelMirror and check_recomputable by hand",
    ),
    "conformance._model.aliases": (
        ("tests/conformance/test_memory.py",),
        "PlainSubclass and TracedSubclass values, their sizes and reprs, in the memory model's tests",
    ),
    "conformance._model.bitwise": (
        ("tests/conformance/test_adapters.py",),
        "bit_difference, bytes_by_device and reachable_memory on values built by hand",
    ),
    "conformance._model.dtypes": (
        ("tests/conformance/test_memory.py", "tests/conformance/test_value_reach.py"),
        "every torch dtype priced or left out with a reason; the dtype families the strategies "
        "must reach",
    ),
    "conformance._model.records": (
        ("tests/conformance/test_memory.py",),
        "DataRecord, SlotsRecord and AttrsRecord values, their sizes and reprs",
    ),
    "sessionstate.cli": (
        (
            "tests/plugin/test_options.py",
            "tests/reliability/test_reports_and_input.py",
            "tests/cli/test_expectation_reasons.py",
        ),
        "_build_parser against the options table, main in process on hostile input and on "
        "`report`; the rest of tests/cli runs the console script, which names no module",
    ),
    "fixtures.address_keyed": (
        ("tests/zoo/test_false_positive.py",),
        "run as a subject through `sessionstate check --clause ACCT --strict`: a correct port "
        "keying storages by address passes every ACCT clause",
    ),
    "fixtures.alternative_manager": (
        (
            "tests/zoo/test_false_positive.py",
            "tests/zoo/test_trust.py",
            "tests/reliability/test_under_load.py",
        ),
        "a correct manager of another design passes every clause, under a CPU hog too, and "
        "counts through its own accounting",
    ),
    "conformance._harness.supervision.guard": (
        ("tests/reliability/test_subject_outcomes.py",),
        "Hypothesis' flaky outcomes turned into a clause failure or a not-checked skip; the "
        "per-test watchdog and budget are asserted through runs in tests/plugin/"
        "test_deadlines.py and tests/reliability",
    ),
    "conformance._harness.supervision.own_outcomes": (
        ("tests/reliability/test_subject_outcomes.py", "tests/conformance/test_checks.py"),
        "pytest.skip, .xfail, .exit and a KeyboardInterrupt raised by subject code, through "
        "check and plain pytest; calling's SubjectOutcome",
    ),
    "conformance._harness.supervision.stack_dumps": (
        ("tests/reliability/test_supervision.py",),
        "call_from_dump on faulthandler's dumps; fatal_error and call_in_flight through the "
        "crashing and hanging subjects' runs there",
    ),
    "conformance._harness.supervision.deadline": (
        ("tests/conformance/test_watchdog.py", "tests/conformance/test_lock.py"),
        "the numbers and verdicts the watchdog raises, and blame's clause, asserted through "
        "Watchdog and run_threads_within",
    ),
    "conformance._harness.supervision.thread_deadline": (
        ("tests/conformance/test_watchdog.py", "tests/conformance/test_lock_raise.py"),
        "run_threads_within: threads blocked on a lock fail the clause, threads computing are "
        "waited for, then too slow to judge",
    ),
    "conformance._harness.fuzz_worker": (
        ("tests/reliability/test_forks.py",),
        "a worker of `sessionstate fuzz` (COUNTS_ENV set) is armed against forks; its counts "
        "are read back by tests/cli/test_fuzz.py's runs",
    ),
    "conformance._harness.supervision.frames": (
        ("tests/reliability/test_forks.py",),
        "CONFORMANCE_DIR places a made-up suite test; whose code a frame is, asked by the "
        "watchdog (tests/conformance/test_watchdog.py) and the fork guard",
    ),
    "conformance._harness.supervision.census": (
        ("tests/reliability/test_forks.py",),
        "the process cap through sessionstate check: a tree of sleeping forks past it stops "
        "the run, naming it; a cap that is not a number is one line",
    ),
    "conformance._harness.search": (
        ("tests/cli/test_check.py",),
        "the header and the JSON say how a run searched: derandomized, a seed, deep's new seed "
        "each run and its database",
    ),
    "fixtures.check_vllm_omni": (
        ("tests/upstream/test_vllm_omni.py",),
        "vLLM-omni as a client: the runner's exit status and commands, and with the released "
        "wheel (nox -s upstream) each way its check must go red",
    ),
    "fixtures.cosmos3_like": (
        ("tests/conformance/test_worked_examples.py", "tests/conformance/test_obj_encode_once.py"),
        "the worked example passes ADAPT and its twin fails; its encode-once spec against OBJ",
    ),
    "fixtures.dreamzero_like": (
        ("tests/conformance/test_worked_examples.py",),
        "the worked example passes ADAPT, its pipeline does what it states, its twin fails",
    ),
    "fixtures.lingbot_like": (
        ("tests/conformance/test_adapters.py", "tests/cli/test_long_runs.py"),
        "LINGBOT_SPEC's program through the adapter machine; its spec's one-line repr",
    ),
    "fixtures.own_logger_resolver": (
        ("tests/conformance/test_env_logging.py", "tests/zoo/test_false_positive.py"),
        "a resolver warning through its own logger: ENV-5 hears it, and ENV passes",
    ),
    "fixtures.rollout_example": (
        (
            "tests/conformance/test_adapters.py",
            "tests/conformance/test_worked_examples.py",
            "tests/docs/test_code_blocks.py",
        ),
        "ROLLOUT_SPEC and its adapter through the adapter machine; the docs' stand-in",
    ),
    "fixtures.state_object_specs": (
        (
            "tests/conformance/test_obj_specs.py",
            "tests/conformance/test_obj_models.py",
            "tests/conformance/test_contents_checked.py",
        ),
        "the shipped specs pass OBJ, their models' exact values, contents left unchecked",
    ),
}

#: Module with behaviour that no test file (but READERS) mentions -> what exercises it
#: instead, or what is missing.
UNTESTED: dict[str, str] = {
    "conformance.env_values": (
        "the ENV strategies, drawn by the suite's test_env.py, which tests/zoo runs against "
        "every env_* subject; max_values' reach is measured through conformance/input_reach.py "
        "(tests/conformance/test_input_reach.py), which names input_reach only"
    ),
    "conformance._harness.supervision.child": (
        "the supervised child of every `sessionstate check` in tests/cli and tests/reliability; "
        "tests/zoo/forkserver.py imports it; no test names it"
    ),
    "conformance._harness.supervision.wait_channel": (
        "the main thread's wait channel, read on Linux while a watchdog is armed: a sleep is "
        "too slow, a futex a deadlock (tests/conformance/test_watchdog.py); no test names it"
    ),
    "conformance._harness.supervision.spawn": (
        "starts the child of every `sessionstate check`; tests/zoo/forkserver.py replaces "
        "spawn_child with a fork; no test names it"
    ),
    "conformance._harness.supervision.validation": (
        "validates `sessionstate fuzz`'s request in a child (tests/cli/test_fuzz.py's misuse "
        "cases); no test names it"
    ),
    "conformance._harness.supervision.ledger": (
        "every supervised run's records over its children: the resumed, cut-off and crashed "
        "runs of tests/reliability/test_supervision.py; no test names it"
    ),
    "conformance._harness.supervision.journal": (
        "what the supervisor of every `sessionstate check` follows, through the hanging and "
        "crashing subjects of tests/reliability/test_supervision.py; no test names it"
    ),
    "conformance._harness.recording": (
        "the plugin's records, read back from the JSON reports of every plugin and check run "
        "(tests/plugin, tests/cli); no test names it"
    ),
    "conformance._harness.run_state": (
        "the plugin's run state in config.stash, built by every plugin run (tests/plugin, "
        "tests/cli); no test names it"
    ),
    "conformance._harness.suite_buffer": (
        "the buffer a subject without buffer_factory gets, used by tests/zoo/test_trust.py's "
        "subject without one; no test names it"
    ),
    "conformance._report.header": (
        "the report header and clause table, asserted in the output of tests/plugin/"
        "test_plugin.py and test_xdist_controller.py; no test names it"
    ),
    "conformance._machine.composed_bytes": (
        "ACCT-10/ACCT-11's blame rule, run by the suite's test_acct.py and the manager "
        "machine; tests/zoo runs them against the acct_* subjects; no test names it"
    ),
    "conformance._machine.lock_capacity": (
        "threads at capacity (LOCK-5, LOCK-6), run by the suite's test_lock.py, which tests/zoo "
        "runs against the lock_* subjects; tests/conformance/test_reach.py measures its "
        "histories through bench/reach_runs.py, which names it"
    ),
    "conformance._machine.reset": (
        "the RESET machine, run by the suite's test_reset.py, which tests/zoo runs against "
        "every reset_* subject; no in-process test of it"
    ),
    "conformance._model.env": (
        "the ENV oracle, asked by the suite's test_env.py, which tests/zoo runs against every "
        "env_* subject; no hand-checked test of it, unlike _model/python_rules.py"
    ),
    "conformance._model.host": (
        "the host-memory oracle of ACCT-6 and ACCT-7, asked by the suite's test_acct_host.py, "
        "which tests/zoo runs against the acct_* subjects; no hand-checked test of it"
    ),
}


@dataclass(frozen=True)
class Module:
    """A source module: ``name`` as in ``TESTED_IN``, ``path`` from the repository root."""

    name: str
    path: str
    behaviour: bool

    @property
    def stem(self) -> str:
        return self.name.rpartition(".")[2]

    @property
    def package(self) -> str:
        """The import name of its package: ``sessionstate.conformance._harness``."""
        full = self.name if self.name.startswith("sessionstate.") else f"sessionstate.{self.name}"
        return full.rpartition(".")[0]


@dataclass(frozen=True)
class Tree:
    """The source modules by name, and each test file's text by its path from the root."""

    modules: Mapping[str, Module]
    tests: Mapping[str, str]

    @cached_property
    def stems(self) -> Counter[str]:
        return Counter(module.stem for module in self.modules.values())

    def unique(self, stem: str) -> bool:
        return self.stems[stem] == 1


def has_behaviour(source: str) -> bool:
    """Whether the module defines a function, or a class with a method (at any depth)."""
    tree = ast.parse(source)
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(tree))


def find_modules(root: Path) -> dict[str, Module]:
    modules = {}
    for folder, prefix in SOURCE_FOLDERS.items():
        for path in sorted((root / folder).glob("*.py")):
            if path.name in NOT_MODULES:
                continue
            name = f"{prefix}.{path.stem}"
            source = path.read_text(encoding="utf-8")
            modules[name] = Module(name, path.relative_to(root).as_posix(), has_behaviour(source))
    return modules


def find_tests(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((root / "tests").rglob("test_*.py"))
    }


@cache
def real_tree() -> Tree:
    return Tree(find_modules(ROOT), find_tests(ROOT))


def mentions(tree: Tree, name: str, text: str) -> bool:
    """Whether ``text`` names module ``name`` (the module docstring says how)."""
    module = tree.modules[name]
    folder = module.package.rpartition(".")[2]
    stem = re.escape(module.stem)
    forms = [
        rf"(?<!\w){re.escape(folder)}\.{stem}(?!\w)",
        rf"(?<!\w){re.escape(folder)}/{stem}\.py(?!\w)",
    ]
    if tree.unique(module.stem):
        forms.append(rf"(?<![\w/.]){stem}\.py(?!\w)")
    if any(re.search(form, text) for form in forms):
        return True
    return (module.package, module.stem) in _imported_from(text)


@cache
def _imported_from(text: str) -> frozenset[tuple[str, str]]:
    """Each ``from PACKAGE import NAME`` of ``text``, function-local ones too."""
    try:
        parsed = ast.parse(text)
    except SyntaxError:
        return frozenset()
    return frozenset(
        (node.module or "", alias.name)
        for node in ast.walk(parsed)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    )


def namesakes(tree: Tree, name: str) -> list[str]:
    """The test files named ``test_<module>.py``, whether or not they mention it."""
    stem = tree.modules[name].stem
    return [path for path in tree.tests if path.rpartition("/")[2] == f"test_{stem}.py"]


def mirrors(tree: Tree, name: str) -> list[str]:
    """The same-named test files that mention the module."""
    return [path for path in namesakes(tree, name) if mentions(tree, name, tree.tests[path])]


def mentioned_by(tree: Tree, name: str) -> list[str]:
    """The test files, other than READERS, that mention the module."""
    return [
        path
        for path, text in tree.tests.items()
        if path not in READERS and mentions(tree, name, text)
    ]


def unaccounted(
    tree: Tree, name: str, tested_in: Mapping[str, object], untested: Mapping[str, str]
) -> list[str]:
    """The module has behaviour, no mirror, and no entry in either table."""
    module = tree.modules[name]
    if not module.behaviour or mirrors(tree, name) or name in tested_in or name in untested:
        return []
    others = "".join(
        f"; {path} shares its name but never mentions it" for path in namesakes(tree, name)
    )
    return [
        f"{name} ({module.path}) has no tests/<area>/test_{module.stem}.py that mentions it "
        f"and no TESTED_IN entry{others}"
    ]


def accidental_namesakes(
    tree: Tree, name: str, tested_in: Mapping[str, object], untested: Mapping[str, str]
) -> list[str]:
    """A same-named test file that does not mention the module, which nothing else covers."""
    if not tree.modules[name].behaviour or mirrors(tree, name):
        return []
    if name in tested_in or name in untested:
        return []
    return [
        f"{path} is named after {tree.modules[name].path} but never mentions it: it is no "
        f"mirror, so {name} needs a TESTED_IN entry"
        for path in namesakes(tree, name)
    ]


def stale_tested_in(tree: Tree, name: str, untested: Mapping[str, str]) -> list[str]:
    """An entry for a module that is gone, has no behaviour, has a mirror, or is UNTESTED."""
    if name not in tree.modules:
        return [f"TESTED_IN names {name}, which is no source module"]
    module = tree.modules[name]
    problems = []
    if not module.behaviour:
        problems.append(f"TESTED_IN names {name}, which has no behaviour of its own")
    if found := mirrors(tree, name):
        problems.append(f"TESTED_IN names {name}, which {found[0]} mirrors: drop the entry")
    if name in untested:
        problems.append(f"{name} is in TESTED_IN and in UNTESTED")
    return problems


def entry_problems(tree: Tree, name: str, entry: tuple[tuple[str, ...], str]) -> list[str]:
    """The entry names test files, each one existing, no reader, and mentioning the module."""
    files, reason = entry
    problems = []
    if not files:
        problems.append(f"TESTED_IN[{name!r}] names no test file")
    if not reason.strip():
        problems.append(f"TESTED_IN[{name!r}] gives no reason")
    for path in files:
        if path not in tree.tests:
            problems.append(f"TESTED_IN[{name!r}] names {path}, which is no test file")
        elif path in READERS:
            problems.append(
                f"TESTED_IN[{name!r}] names {path}, which reads {name} without running it"
            )
        elif name in tree.modules and not mentions(tree, name, tree.tests[path]):
            problems.append(f"TESTED_IN[{name!r}] names {path}, which never mentions {name}")
    return problems


def stale_untested(tree: Tree, name: str, tested_in: Mapping[str, object]) -> list[str]:
    """An entry for a module that is gone, has no behaviour, is mirrored, listed, or now tested."""
    if name not in tree.modules:
        return [f"UNTESTED names {name}, which is no source module"]
    problems = []
    if not tree.modules[name].behaviour:
        problems.append(f"UNTESTED names {name}, which has no behaviour of its own")
    if found := mirrors(tree, name):
        problems.append(f"UNTESTED names {name}, which {found[0]} mirrors: drop the entry")
    if name in tested_in:
        problems.append(f"{name} is in UNTESTED and in TESTED_IN")
    elif found := mentioned_by(tree, name):
        problems.append(
            f"UNTESTED names {name}, which {', '.join(found)} mention: move it to TESTED_IN"
        )
    return problems


# The tree as it is.


def _behaviour_modules() -> list[str]:
    return [name for name, module in real_tree().modules.items() if module.behaviour]


@pytest.mark.parametrize("name", _behaviour_modules())
def test_every_module_with_behaviour_is_mirrored_or_listed(name: str) -> None:
    assert unaccounted(real_tree(), name, TESTED_IN, UNTESTED) == []


@pytest.mark.parametrize(
    "name", [name for name in real_tree().modules if namesakes(real_tree(), name)]
)
def test_a_same_named_test_file_mentions_its_module(name: str) -> None:
    assert accidental_namesakes(real_tree(), name, TESTED_IN, UNTESTED) == []


@pytest.mark.parametrize("name", sorted(TESTED_IN))
def test_no_tested_in_entry_is_stale(name: str) -> None:
    assert stale_tested_in(real_tree(), name, UNTESTED) == []


@pytest.mark.parametrize("name", sorted(TESTED_IN))
def test_each_file_an_entry_names_exists_and_mentions_the_module(name: str) -> None:
    assert entry_problems(real_tree(), name, TESTED_IN[name]) == []


@pytest.mark.parametrize("name", sorted(UNTESTED))
def test_no_untested_entry_is_stale(name: str) -> None:
    assert stale_untested(real_tree(), name, TESTED_IN) == []


def test_the_readers_are_test_files() -> None:
    assert [path for path in READERS if path not in real_tree().tests] == []


def test_the_scan_is_not_vacuous() -> None:
    """Every folder has modules, both kinds are found, and the known ones are told apart."""
    tree = real_tree()
    assert {module.path.rpartition("/")[0] for module in tree.modules.values()} == set(
        SOURCE_FOLDERS
    )
    assert tree.modules["reference.manager"].behaviour
    assert tree.modules["sessionstate.cli"].behaviour
    assert not tree.modules["fixtures.reference_subject"].behaviour
    assert "fixtures.zoo._kit" not in tree.modules and "sessionstate.__main__" not in tree.modules
    assert "tests/reference/test_manager.py" in mirrors(tree, "reference.manager")
    assert mirrors(tree, "conformance._harness.database") == []  # tests/cli/test_database.py
    assert len(tree.tests) > 80


# Each check on a made-up tree.

HARNESS = "conformance._harness"


def _tree(tests: Mapping[str, str], **behaviour: bool) -> Tree:
    """Modules ``conformance._harness.<name>`` (``manager`` also in reference) and ``tests``."""
    modules = {
        f"{HARNESS}.{stem}": Module(f"{HARNESS}.{stem}", f"conformance/_harness/{stem}.py", has)
        for stem, has in behaviour.items()
    }
    modules["reference.manager"] = Module("reference.manager", "reference/manager.py", True)
    return Tree(modules, tests)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("X = 1\n__all__ = ['X']\n", False),
        ("from .a import b\n", False),
        ("@dataclass\nclass A:\n    x: int = 0\n", False),
        ("def f() -> None:\n    pass\n", True),
        ("async def f() -> None:\n    pass\n", True),
        ("class A:\n    def f(self) -> None:\n        pass\n", True),
        ("if True:\n    class A:\n        @property\n        def f(self): ...\n", True),
    ],
)
def test_behaviour_is_a_function_or_a_method(source: str, expected: bool) -> None:
    assert has_behaviour(source) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from sessionstate.conformance._harness.devices import allocate", True),
        ("from sessionstate.conformance._harness import bounds, devices as d", True),
        ("def f():\n    from sessionstate.conformance._harness import devices\n", True),
        ('run([sys.executable, "-m", "sessionstate.conformance._harness.devices"])', True),
        ('"""The devices (``conformance/_harness/devices.py``)."""', True),
        ('"""The devices (``devices.py``)."""', True),
        ('"""The devices (``test_devices.py``)."""', False),
        ("run_cli('check', '--devices', 'cpu')  # the devices", False),
        ("from sessionstate.conformance._harness.devices_extra import x", False),
        ("from sessionstate.conformance._model import devices", False),
        ("from hypothesis import strategies as devices", False),
    ],
)
def test_a_mention_names_the_module_not_a_word(text: str, expected: bool) -> None:
    assert mentions(_tree({}, devices=True), f"{HARNESS}.devices", text) is expected


def test_a_bare_file_name_another_module_shares_is_no_mention() -> None:
    tree = _tree({}, manager=True)
    assert not mentions(tree, f"{HARNESS}.manager", "reference/manager.py and manager.py")
    assert mentions(tree, f"{HARNESS}.manager", "conformance/_harness/manager.py")
    assert mentions(tree, "reference.manager", "sessionstate.reference.manager.Manager")


def test_a_module_without_tests_is_reported() -> None:
    tree = _tree({"tests/cli/test_other.py": "nothing"}, devices=True, constants=False)
    assert unaccounted(tree, f"{HARNESS}.devices", {}, {}) == [
        f"{HARNESS}.devices (conformance/_harness/devices.py) has no "
        "tests/<area>/test_devices.py that mentions it and no TESTED_IN entry"
    ]
    assert unaccounted(tree, f"{HARNESS}.constants", {}, {}) == []
    listed = {f"{HARNESS}.devices": (("tests/cli/test_other.py",), "r")}
    assert unaccounted(tree, f"{HARNESS}.devices", listed, {}) == []
    assert unaccounted(tree, f"{HARNESS}.devices", {}, {f"{HARNESS}.devices": "why"}) == []


def test_a_same_named_file_that_never_mentions_the_module_is_no_mirror() -> None:
    journey = {"tests/cli/test_devices.py": "run_cli('check', '--devices', 'cpu')"}
    tree = _tree(journey, devices=True)
    name = f"{HARNESS}.devices"
    assert mirrors(tree, name) == []
    assert "tests/cli/test_devices.py shares its name" in unaccounted(tree, name, {}, {})[0]
    assert accidental_namesakes(tree, name, {}, {}) == [
        "tests/cli/test_devices.py is named after conformance/_harness/devices.py but never "
        f"mentions it: it is no mirror, so {name} needs a TESTED_IN entry"
    ]
    mirrored = _tree({**journey, "tests/conformance/test_devices.py": "devices.py"}, devices=True)
    assert mirrors(mirrored, name) == ["tests/conformance/test_devices.py"]
    assert unaccounted(mirrored, name, {}, {}) == []
    assert accidental_namesakes(mirrored, name, {}, {}) == []


def test_a_stale_tested_in_entry_is_reported() -> None:
    tree = _tree({"tests/conformance/test_devices.py": "devices.py"}, devices=True, constants=False)
    assert stale_tested_in(tree, f"{HARNESS}.gone", {}) == [
        f"TESTED_IN names {HARNESS}.gone, which is no source module"
    ]
    assert stale_tested_in(tree, f"{HARNESS}.constants", {}) == [
        f"TESTED_IN names {HARNESS}.constants, which has no behaviour of its own"
    ]
    assert stale_tested_in(tree, f"{HARNESS}.devices", {}) == [
        f"TESTED_IN names {HARNESS}.devices, which tests/conformance/test_devices.py mirrors: "
        "drop the entry"
    ]
    both = _tree({}, runner=True)
    assert stale_tested_in(both, f"{HARNESS}.runner", {f"{HARNESS}.runner": "why"}) == [
        f"{HARNESS}.runner is in TESTED_IN and in UNTESTED"
    ]


def test_a_tested_in_entry_naming_the_wrong_files_is_reported() -> None:
    reader = next(iter(READERS))
    tests = {
        "tests/cli/test_exit_policy.py": "from sessionstate.conformance._harness import runner",
        "tests/cli/test_check.py": "run_cli('check')  # sessionstate check",
        reader: "f'{C}._harness.runner'",
    }
    tree = _tree(tests, runner=True)
    name = f"{HARNESS}.runner"
    assert entry_problems(tree, name, (("tests/cli/test_exit_policy.py",), "how")) == []
    named = ("tests/cli/test_gone.py", "tests/cli/test_check.py", reader)
    assert entry_problems(tree, name, (named, " ")) == [
        f"TESTED_IN[{name!r}] gives no reason",
        f"TESTED_IN[{name!r}] names tests/cli/test_gone.py, which is no test file",
        f"TESTED_IN[{name!r}] names tests/cli/test_check.py, which never mentions {name}",
        f"TESTED_IN[{name!r}] names {reader}, which reads {name} without running it",
    ]
    assert entry_problems(tree, name, ((), "how")) == [f"TESTED_IN[{name!r}] names no test file"]


def test_a_stale_untested_entry_is_reported() -> None:
    reader = next(iter(READERS))
    tree = _tree(
        {
            "tests/conformance/test_watchdog.py": "from sessionstate.conformance._harness import frames",
            "tests/conformance/test_guard.py": "the guard (``_harness.guard``)",
            reader: "_harness/journal.py",
        },
        frames=True,
        guard=True,
        journal=True,
        constants=False,
    )
    assert stale_untested(tree, f"{HARNESS}.journal", {}) == []  # a reader's mention is none
    assert stale_untested(tree, f"{HARNESS}.frames", {}) == [
        f"UNTESTED names {HARNESS}.frames, which tests/conformance/test_watchdog.py mention: "
        "move it to TESTED_IN"
    ]
    assert stale_untested(tree, f"{HARNESS}.guard", {})[0] == (
        f"UNTESTED names {HARNESS}.guard, which tests/conformance/test_guard.py mirrors: "
        "drop the entry"
    )
    assert stale_untested(tree, f"{HARNESS}.constants", {}) == [
        f"UNTESTED names {HARNESS}.constants, which has no behaviour of its own"
    ]
    assert stale_untested(tree, f"{HARNESS}.gone", {}) == [
        f"UNTESTED names {HARNESS}.gone, which is no source module"
    ]
    assert stale_untested(tree, f"{HARNESS}.journal", {f"{HARNESS}.journal": ((), "")}) == [
        f"{HARNESS}.journal is in UNTESTED and in TESTED_IN"
    ]


def test_the_modules_are_found_where_the_rule_says(tmp_path: Path) -> None:
    files = {
        "reference/manager.py": "def get(): ...\n",
        "reference/__init__.py": "from .manager import get\n",
        "conformance/_harness/constants.py": "X = 1\n",
        "conformance/suite/test_lru.py": "def test_x(): ...\n",
        "fixtures/zoo/lru_bug.py": "def f(): ...\n",
        "src/sessionstate/__main__.py": "def main(): ...\n",
        "src/sessionstate/cli.py": "def main(): ...\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert find_modules(tmp_path) == {
        "reference.manager": Module("reference.manager", "reference/manager.py", True),
        "conformance._harness.constants": Module(
            "conformance._harness.constants", "conformance/_harness/constants.py", False
        ),
        "sessionstate.cli": Module("sessionstate.cli", "src/sessionstate/cli.py", True),
    }
