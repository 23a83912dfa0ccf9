"""The implementer's path: ``init``, an unedited ``check``, and the ``report`` matrix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


def _results(subject: str, outcomes: dict[str, str]) -> dict[str, object]:
    levels = {cid: "MUST" for cid in outcomes}
    return {
        "subject": subject,
        "verdict": "non-conformant" if "failed" in outcomes.values() else "conformant",
        "clauses": {cid: {"outcome": o, "level": levels[cid]} for cid, o in outcomes.items()},
    }


def test_init_then_check_refuses_the_untouched_template(run_cli, tmp_path: Path) -> None:
    """Unedited, the template's every hook is the reference's: checking it would test the
    reference under "my-backend", so the check exits 2 with one line naming the file to
    edit. With one hook of the user's own it runs, and its header says whose each hook is."""
    init = run_cli("init", "project")
    assert init.returncode == 0, init.stderr
    project = tmp_path / "project"
    assert (project / "conformance_subject.py").is_file()
    workflow = (project / ".github/workflows/sessionstate.yml").read_text()
    assert "sessionstate check conformance_subject:subject" in workflow
    assert "GITHUB_STEP_SUMMARY" in workflow and "actions/cache" in workflow
    shutil.move(str(project / "conformance_subject.py"), tmp_path / "conformance_subject.py")
    untouched = run_cli("check", "conformance_subject:subject", "--report-json", "r/results.json")
    assert untouched.returncode == 2, untouched.stdout[-3000:] + untouched.stderr
    (line,) = untouched.stderr.strip().splitlines()
    assert "subject 'my-backend' brings no hook of its own" in line
    assert "edit conformance_subject.py" in line
    assert not (tmp_path / "r/results.json").exists()

    source = (tmp_path / "conformance_subject.py").read_text()
    own = "config_resolver=my_resolver,"
    edited = source.replace("config_resolver=resolve_session_state_config,", own)
    assert edited != source
    edited = edited.replace(
        "subject = Subject(",
        "def my_resolver(*, enable, max_sessions):\n"
        "    return resolve_session_state_config(enable=enable, max_sessions=max_sessions)\n\n\n"
        "subject = Subject(",
    )
    (tmp_path / "conformance_subject.py").write_text(edited)
    check = run_cli(
        "check", "conformance_subject:subject", "--clause", "ENV", "--junitxml", "r/junit.xml",
        "--markdown", "r/summary.md", "--report-json", "r/results.json",
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    assert "hooks: own config_resolver; the reference's manager_factory, accounting" in check.stdout
    results = json.loads((tmp_path / "r/results.json").read_text())
    assert results["verdict"] == "conformant"
    assert results["hooks"] == {
        "own": ["config_resolver"],
        "reference": ["manager_factory", "accounting"],
    }
    assert "<testsuite" in (tmp_path / "r/junit.xml").read_text()
    summary = (tmp_path / "r/summary.md").read_text()
    assert "is conformant" in summary and "hooks: own config\\_resolver" in summary


def test_init_refuses_to_overwrite_without_force(run_cli, tmp_path: Path) -> None:
    """A second init exits 2 with one line; --force overwrites."""
    assert run_cli("init").returncode == 0
    (tmp_path / "conformance_subject.py").write_text("# mine\n")
    again = run_cli("init")
    assert again.returncode == 2
    assert again.stderr.strip().endswith("already exists; pass --force to overwrite")
    assert (tmp_path / "conformance_subject.py").read_text() == "# mine\n"
    assert run_cli("init", "--force").returncode == 0
    assert "Subject(" in (tmp_path / "conformance_subject.py").read_text()


def test_report_matrix_markdown_and_html(run_cli, tmp_path: Path) -> None:
    """Two results files become one row each, a cell per clause group."""
    (tmp_path / "a.json").write_text(
        json.dumps(_results("alpha", {"LRU-1": "passed", "LRU-2": "passed", "ENV-1": "passed"}))
    )
    (tmp_path / "b.json").write_text(
        json.dumps(_results("beta", {"LRU-1": "failed", "LRU-2": "passed", "ENV-1": "skipped"}))
    )
    result = run_cli("report", "a.json", "b.json", "--markdown", "m.md", "--html", "m.html")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "| subject | verdict | LRU | ENV |",
        "|---|---|---|---|",
        "| alpha | conformant | ✅ 2/2 | ✅ 1/1 |",
        "| beta | non-conformant | ❌ 1/2 | ⏭️ 1 skipped |",
    ]
    assert (tmp_path / "m.md").read_text() == result.stdout
    page = (tmp_path / "m.html").read_text()
    assert page.count('<td class="cell pass"') == 2 and page.count('<td class="cell fail"') == 1
    assert page.count('<td class="cell skipped"') == 1
    assert "<script" not in page


def test_report_matrix_counts_only_what_ran(run_cli, tmp_path: Path) -> None:
    """Skipped clauses are not counted as checked; unchecked ones are never a pass."""
    outcomes = {f"LRU-{i}": "skipped" for i in range(3, 9)}
    outcomes |= {"LRU-1": "passed", "LRU-2": "passed", "KEY-1": "unchecked", "KEY-2": "passed"}
    (tmp_path / "a.json").write_text(json.dumps(_results("alpha", outcomes)))
    result = run_cli("report", "a.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "| alpha | conformant | ❔ 1/2 | ✅ 2/2 +6 skipped |"


def test_report_marks_an_interrupted_run_incomplete(run_cli, tmp_path: Path) -> None:
    """A run cut short is not shown as conformant, even by a results file that says so."""
    cut = {**_results("alpha", {"LRU-1": "passed"}), "interrupted": True}
    (tmp_path / "a.json").write_text(json.dumps(cut))
    result = run_cli("report", "a.json", "--html", "m.html")
    assert result.stdout.splitlines()[-1] == "| alpha | incomplete | ✅ 1/1 |"
    page = (tmp_path / "m.html").read_text()
    assert '<span class="verdict incomplete">incomplete</span>' in page and "interrupted" in page


@pytest.mark.parametrize("content", ["not json", "{}", "[1, 2]"])
def test_report_rejects_bad_files_with_one_line(run_cli, tmp_path: Path, content: str) -> None:
    """A file that is not a results JSON is a usage error, exit 2."""
    (tmp_path / "bad.json").write_text(content)
    result = run_cli("report", "bad.json")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "bad.json" in result.stderr
