"""``sessionstate check``: exit statuses, reports, expectations, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import one_line_error

ARGUMENT_WINS = """
    from sessionstate.conformance import Subject
    from sessionstate.reference import resolve_session_state_config

    def resolver(enable=None, max_sessions=None):
        resolved, size = resolve_session_state_config(enable, max_sessions)
        return (bool(enable) if enable is not None else resolved), size

    subject = Subject(name="argument-wins", config_resolver=resolver)
"""


class TestVerdicts:
    def test_reference_is_conformant(self, run_cli, tmp_path: Path) -> None:
        """The bundled reference passes the ENV group with exit 0 and a JSON report."""
        result = run_cli(
            "check", "--clause", "ENV", "--report-json", "r.json", "--markdown", "r.md"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["verdict"] == "conformant"
        assert report["subject"] == "reference"
        assert {c["outcome"] for c in report["clauses"].values()} == {"passed"}
        assert sorted(report["clauses"]) == [f"ENV-{i}" for i in range(1, 7)]
        assert "| ENV-1 | MUST | ✅ passed |" in (tmp_path / "r.md").read_text()

    def test_workers_report_the_subject(self, run_cli, tmp_path: Path) -> None:
        """With -n 2 the same verdict and report; the subject's facts come from the workers."""
        result = run_cli("check", "-n", "2", "--clause", "KEY", "--report-json", "r.json")
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["verdict"] == "conformant"
        assert (report["subject"], report["capabilities"]) == (
            "reference",
            ["admission", "require_session", "threadsafe"],
        )
        assert "cpu" in [d["name"] for d in report["environment"]["devices"]]
        assert sorted(report["clauses"]) == ["KEY-1", "KEY-2", "KEY-3"]

    def test_broken_subject_fails_the_clause(self, run_cli, write_module, tmp_path: Path) -> None:
        """An env resolver where the argument wins exits 1 with ENV-1 failed."""
        module = write_module("argwins", ARGUMENT_WINS)
        result = run_cli("check", f"{module}:subject", "--clause", "ENV", "--report-json", "r.json")
        assert result.returncode == 1, result.stdout + result.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["verdict"] == "non-conformant"
        assert report["clauses"]["ENV-1"]["outcome"] == "failed"
        assert "but should be" in report["clauses"]["ENV-1"]["message"]
        assert "ENV-1      MUST    FAIL" in result.stdout

    def test_xfail_expectation_makes_it_pass(self, run_cli, write_module, tmp_path: Path) -> None:
        """A reasoned xfail entry for the failing clause turns exit 1 into exit 0."""
        module = write_module("argwins", ARGUMENT_WINS)
        (tmp_path / "expect.txt").write_text("# known\nENV-1  xfail  config wins by design\n")
        result = run_cli(
            "check", f"{module}:subject", "--clause", "ENV", "--expectations", "expect.txt",
            "--report-json", "r.json", "--junitxml", "j.xml",
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["clauses"]["ENV-1"]["outcome"] == "xfailed"
        assert report["clauses"]["ENV-1"]["message"] == "expected: config wins by design"
        assert "<testsuite" in (tmp_path / "j.xml").read_text()

    def test_unmatched_expectation_warns_and_fails_under_strict(self, run_cli, tmp_path) -> None:
        """An entry that matches nothing is a warning, and under --strict a stale expectations
        file: exit 2 (misuse), never 1, which only a clause failure gives."""
        (tmp_path / "expect.txt").write_text("LOCK-1 skip not run in this selection\n")
        result = run_cli("check", "--clause", "ENV", "--expectations", "expect.txt")
        assert result.returncode == 0
        assert "expectation LOCK-1 (line 1) matched no test or clause" in result.stdout
        strict = run_cli("check", "--clause", "ENV", "--expectations", "expect.txt", "--strict")
        assert strict.returncode == 2


class TestUsageErrors:
    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            (["no_such_module:subject"], "cannot import module 'no_such_module'"),
            (["sessionstate.fixtures.reference_subject:subjct"], "did you mean 'subject'?"),
            (["sessionstate.fixtures.reference_subject"], "not of the form 'pkg.module:attr'"),
            (["sessionstate.reference:DEFAULT_MAX_SESSIONS"], "is a int, not a Subject"),
            (["--clause", "LRU-99"], "unknown clause or group 'LRU-99'"),
            (["--profile", "fast"], "unknown profile 'fast'"),
            (["--expectations", "missing.txt"], "cannot read expectations file 'missing.txt'"),
        ],
    )
    def test_one_line_and_exit_2(self, run_cli, args: list[str], needle: str) -> None:
        """Each misuse prints one line naming the problem and exits 2, no traceback."""
        assert needle in one_line_error(run_cli("check", *args))

    def test_malformed_expectations_line(self, run_cli, tmp_path: Path) -> None:
        """A line without a reason names the file and line."""
        (tmp_path / "bad.txt").write_text("ENV-1 xfail\n")
        assert "bad.txt:1: expected 'CLAUSE-OR-TEST-ID xfail|skip reason'" in one_line_error(
            run_cli("check", "--expectations", "bad.txt")
        )

    def test_unknown_capability(self, run_cli, write_module) -> None:
        """A subject declaring an unknown capability is a usage error with a suggestion."""
        module = write_module(
            "badcap",
            """
            from sessionstate.conformance import Subject
            subject = lambda: Subject(name="x", capabilities={"threadsafety"})
            """,
        )
        error = one_line_error(run_cli("check", f"{module}:subject"))
        assert "unknown capability 'threadsafety' (did you mean 'threadsafe'?)" in error


class TestSpecCommands:
    def test_spec_lists_every_clause(self, run_cli) -> None:
        """`sessionstate spec` and `check --list-clauses` print one line per clause."""
        spec = run_cli("spec")
        assert spec.returncode == 0
        assert spec.stdout.splitlines()[0].startswith("KEY-1     MUST   ")
        assert run_cli("check", "--list-clauses").stdout == spec.stdout

    def test_explain_names_the_tests(self, run_cli) -> None:
        """`sessionstate explain ENV-5` prints the clause and the tests tagged with it."""
        result = run_cli("explain", "ENV-5")
        assert result.returncode == 0
        assert result.stdout.startswith("ENV-5 · MUST · ")
        assert "test_env.py::test_resolution_matches_oracle" in result.stdout

    def test_explain_unknown_clause(self, run_cli) -> None:
        """An unknown id is a one-line usage error with a suggestion."""
        assert "did you mean 'ENV-5'?" in one_line_error(run_cli("explain", "ENV-55"))


def test_the_header_and_json_say_what_ran(run_cli, tmp_path: Path) -> None:
    """A run that reads a database is randomized with seed 0, and says so in its header and
    JSON (never "derandomized"); the JSON names the database and the expectations file, and a
    run with neither says so too."""
    (tmp_path / "x.expectations").write_text("# none\n", encoding="utf-8")
    (tmp_path / "db").mkdir()
    done = run_cli(
        "check", "--clause", "ENV-1", "--profile", "quick", "--database", "db",
        "--expectations", "x.expectations", "--report-json", "r.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "  profile quick, seed 0;" in done.stdout and "derandomized" not in done.stdout
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert (report["seed"], report["randomized"], report["database"], report["expectations"]) == (
        0, True, str((tmp_path / "db").resolve()), "x.expectations",
    )  # fmt: skip
    plain = run_cli("check", "--clause", "ENV-1", "--profile", "quick", "--report-json", "p.json")
    assert "  profile quick, derandomized;" in plain.stdout
    report = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert (report["seed"], report["randomized"], report["database"], report["expectations"]) == (
        None, False, None, None,
    )  # fmt: skip


def test_the_deep_profile_says_it_is_randomized_and_names_its_database(  # conformance._harness.search
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deep draws a new seed each run and keeps its failures in its own database: the
    header and the JSON say both (they said "derandomized" and "(none)")."""
    monkeypatch.delenv("SESSIONSTATE_HYPOTHESIS_DB", raising=False)
    done = run_cli("check", "--clause", "ENV-1", "--profile", "deep", "--report-json", "d.json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    database = str((tmp_path / ".hypothesis" / "sessionstate").resolve())
    assert "  profile deep, randomized (a new seed each run);" in done.stdout
    assert f"  database: {database}" in done.stdout
    report = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert (report["seed"], report["randomized"], report["database"]) == (None, True, database)
