"""Bad input to ``sessionstate``: one line on stderr, exit 2, before any test runs, and
nothing the user had on disk lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import one_line_error

SENTINEL = '{"verdict": "conformant", "note": "an earlier, complete report"}\n'


def _ran_no_test(result: subprocess.CompletedProcess[str]) -> None:
    """Nothing but the error: no pytest output, no summary table."""
    assert result.stdout.strip() == "", result.stdout[-2000:]


SUBJECT_MODULE = """
    import torch

    from sessionstate.conformance import Subject
    from sessionstate.reference import SessionStateManager


    def raising_factory(**kwargs):
        raise RuntimeError("factory boom")


    class Half:
        '''A manager missing most of its methods.'''

        def __init__(self, max_sessions, byte_budget=None):
            self.max_sessions = max_sessions

        def get_or_create_session(self, session_id):
            return None


    def raising_buffer():
        raise ValueError("buffer boom")


    factory_raises = Subject(name="factory-raises", manager_factory=raising_factory)
    not_a_manager = Subject(name="not-a-manager", manager_factory=lambda **kw: object())
    half_manager = Subject(name="half", manager_factory=Half)
    buffer_raises = Subject(
        name="buffer-raises", manager_factory=SessionStateManager, buffer_factory=raising_buffer
    )
    buffer_not_an_object = Subject(
        name="buffer-list", manager_factory=SessionStateManager, buffer_factory=list
    )
    accounting_not_callable = Subject(name="acct", accounting={"cpu": 0})
    resolver_not_callable = Subject(name="env", config_resolver="enabled")
"""


class TestTargets:
    def test_syntax_error_in_the_subject_module(self, run_cli, write_module) -> None:
        """A module that does not compile is a usage error naming the file and line."""
        module = write_module("broken", "import os\ndef f(:\n    pass\n")
        error = one_line_error(run_cli("check", f"{module}:subject"))
        assert "SyntaxError" in error and "broken.py" in error and "line 2" in error

    def test_module_that_raises_on_import(self, run_cli, write_module) -> None:
        module = write_module("explodes", "raise KeyError('no config')\n")
        error = one_line_error(run_cli("check", f"{module}:subject"))
        assert "cannot import module 'explodes'" in error and "KeyError" in error

    def test_target_callable_that_raises(self, run_cli, write_module) -> None:
        """A subject callable that raises names the exception and where it was raised."""
        module = write_module("raises", "def subject():\n    raise RuntimeError('boom')\n")
        error = one_line_error(run_cli("check", f"{module}:subject"))
        assert "raises:subject" in error and "RuntimeError: boom" in error
        assert "raises.py:2" in error


class TestSubjectValidation:
    @pytest.mark.parametrize(
        ("attr", "needles"),
        [
            (
                "factory_raises",
                ["manager_factory(max_sessions=2, byte_budget=None) raised RuntimeError",
                 "factory boom"],
            ),
            ("not_a_manager", ["returned a object", "get_or_create_session"]),
            ("half_manager", ["returned a Half", "drop_session", "stats", "__len__"]),
            ("buffer_raises", ["buffer_factory() raised ValueError: buffer boom"]),
            ("buffer_not_an_object", ["buffer_factory() returned a list", "nbytes_by_device"]),
            ("accounting_not_callable", ["accounting is a dict, not callable"]),
            ("resolver_not_callable", ["config_resolver is a str, not callable"]),
        ],
    )  # fmt: skip
    def test_checked_once_before_any_test(
        self, run_cli, write_module, attr: str, needles: list[str]
    ) -> None:
        """A subject whose hooks cannot work is one line and exit 2, not a failure per test."""
        module = write_module("subjects", SUBJECT_MODULE)
        result = run_cli("check", f"{module}:{attr}", "--clause", "KEY", "--clause", "RESET")
        error = one_line_error(result)
        _ran_no_test(result)
        for needle in needles:
            assert needle in error, error

    def test_a_hanging_factory_is_stopped(self, run_cli, write_module, monkeypatch) -> None:
        """A factory that never returns is bounded by the call deadline."""
        monkeypatch.setenv("SESSIONSTATE_CALL_TIMEOUT", "1")
        module = write_module(
            "hangs",
            """
            import threading
            from sessionstate.conformance import Subject

            def factory(**kwargs):
                threading.Event().wait()

            subject = Subject(name="hangs", manager_factory=factory)
            """,
        )
        error = one_line_error(run_cli("check", f"{module}:subject"))
        assert "did not return within 1.0 s" in error


class TestReportPaths:
    @pytest.mark.parametrize("option", ["--report-json", "--junitxml", "--markdown"])
    def test_unwritable_path_is_found_before_the_run(
        self, run_cli, tmp_path: Path, option: str
    ) -> None:
        """A report path under a regular file fails at once; the other reports are untouched."""
        (tmp_path / "blocker").write_text("a file, not a directory\n")
        (tmp_path / "r.json").write_text(SENTINEL)
        args = ["check", "--clause", "ENV", option, "blocker/out.file"]
        if option != "--report-json":
            args += ["--report-json", "r.json"]
        result = run_cli(*args)
        error = one_line_error(result)
        _ran_no_test(result)
        assert "blocker/out.file" in error and option in error
        assert (tmp_path / "r.json").read_text() == SENTINEL
        assert (tmp_path / "blocker").read_text() == "a file, not a directory\n"

    def test_path_that_is_a_directory(self, run_cli, tmp_path: Path) -> None:
        (tmp_path / "out").mkdir()
        error = one_line_error(run_cli("check", "--markdown", "out"))
        assert "--markdown 'out' is a directory" in error

    def test_two_reports_on_one_path(self, run_cli, tmp_path: Path) -> None:
        """One report must not overwrite another, nor the expectations file."""
        (tmp_path / "expect.txt").write_text("ENV-1 xfail reason\n")
        error = one_line_error(run_cli("check", "--report-json", "x.out", "--markdown", "x.out"))
        assert "--report-json and --markdown both name 'x.out'" in error
        error = one_line_error(
            run_cli("check", "--expectations", "expect.txt", "--markdown", "expect.txt")
        )
        assert "--markdown 'expect.txt' is the --expectations file" in error
        assert (tmp_path / "expect.txt").read_text() == "ENV-1 xfail reason\n"

    def test_missing_directories_are_created(self, run_cli, tmp_path: Path) -> None:
        """Every report's parent directories are made, as --report-json's always were."""
        result = run_cli(
            "check", "--clause", "ENV-1", "--report-json", "a/b/r.json", "--markdown", "c/d/r.md",
            "--junitxml", "e/f/j.xml",
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        assert json.loads((tmp_path / "a/b/r.json").read_text())["verdict"] == "conformant"
        assert "ENV-1" in (tmp_path / "c/d/r.md").read_text()
        assert "<testsuite" in (tmp_path / "e/f/j.xml").read_text()
        assert not list(tmp_path.rglob(".*.tmp")), "a temporary file was left behind"


class TestOptions:
    def test_workers_without_xdist(self, run_cli, tmp_path: Path) -> None:
        """-n without pytest-xdist installed says what to install."""
        shadow = tmp_path / "xdist"
        shadow.mkdir()
        (shadow / "__init__.py").write_text("raise ImportError('No module named xdist')\n")
        result = run_cli("check", "-n", "2", "--clause", "ENV")
        error = one_line_error(result)
        _ran_no_test(result)
        assert "-n 2 needs pytest-xdist" in error and "pip install pytest-xdist" in error

    def test_workers_not_a_number(self, run_cli) -> None:
        error = one_line_error(run_cli("check", "-n", "two"))
        assert "-n: 'two' is not a number of processes" in error

    def test_internal_profile_is_not_offered(self, run_cli) -> None:
        """The bench's `mutation` profile is neither in the help nor among the choices."""
        helped = run_cli("check", "--help")
        assert helped.returncode == 0
        assert "mutation" not in helped.stdout
        error = one_line_error(run_cli("check", "--profile", "fast"))
        assert "quick, ci, deep, triage" in error and "mutation" not in error

    def test_bare_command_prints_usage_and_exits_2(self, run_cli) -> None:
        result = run_cli()
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith("usage: sessionstate")
        assert "a command is required" in result.stderr


@pytest.mark.parametrize("command", [["explain", "ACCT-3"], ["spec"]])
def test_a_reader_that_went_away_is_exit_141_and_no_traceback(command: list[str]) -> None:
    """``sessionstate explain ACCT-3 | head -1``: the pipe closes under the writer."""
    import os
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        run = subprocess.run(
            [sys.executable, "-m", "sessionstate", *command],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 141, run.stderr


def test_an_uncollectable_suite_is_one_line_and_exit_2(run_cli: Any, write_module: Any) -> None:
    """A suite module that cannot be imported (as with a torch or Hypothesis too old or too
    new for it): no table of unchecked clauses and no verdict, one line naming the module
    and the error, exit 2."""
    write_module(
        "break_env",
        """
        import sys
        sys.modules["sessionstate.conformance._machine.env"] = None  # test_env.py cannot import
        """,
    )
    result = run_cli("check", "--profile", "quick", "--", "-p", "break_env")
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("sessionstate check: error: the suite could not be collected: ")
    assert (
        "test_env.py: ModuleNotFoundError: import of sessionstate.conformance._machine.env" in error
    )
    assert "verdict:" not in result.stdout and "UNCHECKED" not in result.stdout
