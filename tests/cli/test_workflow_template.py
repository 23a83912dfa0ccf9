"""The workflow ``sessionstate init`` writes: every ``run:`` step run here, offline.

The steps run as written, with bash as GitHub Actions runs them. Only ``pip`` is not the
real one: a stand-in first on ``PATH`` records each install and succeeds, because the
installs need the network (PyTorch's index, a git repository) and must not change the
environment running these tests. The commands they would install are already here: the
check step runs this environment's ``sessionstate`` console script, the local install of
this tree. The ``uses:`` steps (checkout, setup-python, cache, upload) are GitHub's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="the [test] extra installs PyYAML")

FAKE_PIP = """#!/bin/sh
printf '%s\\n' "$*" >> "$PIP_LOG"
"""

#: What GitHub would make of the job's expressions on a push.
ON_PUSH = {"PROFILE": "ci"}


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # GitHub Actions' default shell for run steps: bash --noprofile --norc -eo pipefail {0}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository after ``sessionstate init``: the subject and the workflow, nothing else."""
    root = tmp_path / "repo"
    root.mkdir()
    script = Path(sys.executable).parent / "sessionstate"
    assert script.exists(), f"no console script at {script}: install the project"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    init = subprocess.run([str(script), "init"], cwd=root, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    return root


def _job(root: Path) -> dict[str, object]:
    workflow = yaml.safe_load((root / ".github/workflows/sessionstate.yml").read_text())
    return workflow["jobs"]["conformance"]


def _steps(root: Path) -> dict[str, dict[str, str]]:
    return {step["name"]: step for step in _job(root)["steps"] if "run" in step}


def _env(root: Path, tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The job's env as a push would see it, on this machine, with the stand-in pip."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    pip = bin_dir / "pip"
    pip.write_text(FAKE_PIP)
    pip.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SESSIONSTATE_"))}
    for name, value in _job(root)["env"].items():
        env[name] = ON_PUSH.get(name, str(value))
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env["PATH"]])
    env.update(PATH=path, PIP_LOG=str(tmp_path / "pip.log"), **overrides)
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "step-summary.md")
    return env


def _pip_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


def test_every_run_step_succeeds_and_writes_the_job_summary(project: Path, tmp_path: Path) -> None:
    """torch from the CPU index, sessionstate from the one variable, no project install in
    a repository that is not a Python project, a conformant check, and its summary."""
    steps = _steps(project)
    assert list(steps) == [
        "Install torch (CPU build)",
        "Install sessionstate",
        "Install this repository's project",
        "Run the conformance suite",
        "Job summary",
    ]
    # The untouched template is refused (every hook the reference's): bring one's own.
    subject = project / "conformance_subject.py"
    source = subject.read_text()
    edited = source.replace(
        "config_resolver=resolve_session_state_config,", "config_resolver=my_resolver,"
    ).replace(
        "subject = Subject(",
        "def my_resolver(*, enable, max_sessions):\n"
        "    return resolve_session_state_config(enable=enable, max_sessions=max_sessions)\n\n\n"
        "subject = Subject(",
    )
    assert edited != source
    subject.write_text(edited)
    env = _env(project, tmp_path, SESSIONSTATE_REQUIREMENT="/wheels/sessionstate.whl")
    for name, step in steps.items():
        result = _bash(step["run"], project, env)
        assert result.returncode == 0, (
            f"{name}: {step['run']}\n{result.stdout[-3000:]}{result.stderr}"
        )
    assert _pip_calls(tmp_path) == [
        "install torch --index-url https://download.pytorch.org/whl/cpu",
        "install /wheels/sessionstate.whl",
    ]
    assert not (project / ".hypothesis").exists()
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "## sessionstate conformance: my-backend is conformant" in summary
    assert (project / "reports" / "junit.xml").is_file()
    assert (project / "reports" / "sessionstate.json").is_file()


def test_summary_publishing_and_upload_run_even_after_a_failure(
    project: Path, tmp_path: Path
) -> None:
    """The last three steps run after a failure too (the check run is not published for a
    pull request from a fork, whose token cannot write checks); with no summary file (the
    suite never ran) the summary step still succeeds and writes nothing."""
    job = _job(project)
    summary, publish, upload = job["steps"][-3:]
    assert summary["if"] == upload["if"] == "always()"
    assert publish["if"].startswith("always() && (github.event_name != 'pull_request'")
    assert publish["uses"].startswith("mikepenz/action-junit-report@")
    assert publish["with"]["report_paths"] == "reports/junit.xml"
    assert upload["uses"].startswith("actions/upload-artifact@")
    env = _env(project, tmp_path)
    result = _bash(_steps(project)["Job summary"]["run"], project, env)
    assert result.returncode == 0, result.stderr
    assert not Path(env["GITHUB_STEP_SUMMARY"]).exists()


@pytest.mark.parametrize(
    ("requirement", "error"),
    [
        (
            "sessionstate @ git+https://github.com/OWNER/REPO@v1",
            "::error::set SESSIONSTATE_REQUIREMENT",
        ),
        (
            "sessionstate @ file:///home/me/sessionstate",
            "::error::SESSIONSTATE_REQUIREMENT names a path",
        ),
    ],
    ids=["placeholder", "local-path"],
)
def test_an_unreachable_requirement_fails_with_what_to_set(
    project: Path, tmp_path: Path, requirement: str, error: str
) -> None:
    """A placeholder, or a path on the machine that ran ``init``, stops the install step
    with one error naming the variable, before pip runs."""
    env = _env(project, tmp_path, SESSIONSTATE_REQUIREMENT=requirement)
    result = _bash(_steps(project)["Install sessionstate"]["run"], project, env)
    assert result.returncode == 1
    assert result.stdout.startswith(error)
    assert _pip_calls(tmp_path) == []


def test_init_fills_the_requirement_from_this_install(project: Path, tmp_path: Path) -> None:
    """This environment's sessionstate is a local directory (the tree installed, editable
    or not): ``init`` writes its ``file://`` URL, which the install step refuses."""
    requirement = _job(project)["env"]["SESSIONSTATE_REQUIREMENT"]
    assert requirement.startswith("sessionstate @ file:///")
    env = _env(project, tmp_path)
    result = _bash(_steps(project)["Install sessionstate"]["run"], project, env)
    assert result.returncode == 1
    assert result.stdout.startswith("::error::SESSIONSTATE_REQUIREMENT names a path")


def test_the_workflow_is_what_github_runs_well(project: Path) -> None:
    """Least permissions, one run per ref, a time bound, manual runs, pip's cache, and an
    example database saved under a new key every run and restored by prefix: an exact key
    (one per commit) is never saved again, so nightly runs on one commit lost what they found."""
    workflow = yaml.safe_load((project / ".github/workflows/sessionstate.yml").read_text())
    # PyYAML reads the key `on` as True (YAML 1.1).
    assert set(workflow[True]) == {"push", "pull_request", "workflow_dispatch", "schedule"}
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["group"] == "${{ github.workflow }}-${{ github.ref }}"
    job = _job(project)
    assert job["permissions"] == {"contents": "read", "checks": "write"}
    assert isinstance(job["timeout-minutes"], int)
    uses = {step["uses"].split("@")[0]: step for step in job["steps"] if "uses" in step}
    assert uses["actions/setup-python"]["with"]["cache"] == "pip"
    cache = uses["actions/cache"]["with"]
    assert "github.sha" not in cache["key"]
    assert "${{ github.run_id }}" in cache["key"]
    restore = cache["restore-keys"].splitlines()
    assert restore[0] == "hypothesis-${{ github.ref_name }}-"
    assert cache["key"].startswith(restore[0])


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py"])
def test_a_python_project_is_installed(project: Path, tmp_path: Path, marker: str) -> None:
    """With a pyproject.toml or setup.py the repository's own project is pip-installed."""
    (project / marker).write_text("")
    result = _bash(
        _steps(project)["Install this repository's project"]["run"],
        project,
        _env(project, tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert _pip_calls(tmp_path) == ["install ."]


def _tool(name: str) -> str:
    """The console script of a [test] extra tool, in this environment; fails under CI
    when missing (CI installs the extra), else skips naming it."""
    script = Path(sys.executable).parent / name
    if not script.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no {name} at {script}: the [test] extra installs it")
        pytest.skip(f"no {name} at {script}: install the [test] extra")
    return str(script)


def test_the_workflow_validates_against_githubs_schema(project: Path) -> None:
    """check-jsonschema's vendored GitHub workflow schema (no network)."""
    workflow = project / ".github/workflows/sessionstate.yml"
    result = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    """The same command refuses a workflow with a misspelt key."""
    workflow = tmp_path / "bad.yml"
    workflow.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    result = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr


def test_actionlint_finds_nothing(project: Path) -> None:
    """actionlint: expressions, action inputs, deprecated action runtimes, job settings."""
    workflow = project / ".github/workflows/sessionstate.yml"
    result = subprocess.run(
        [_tool("actionlint"), "-no-color", str(workflow)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_can_fail(project: Path) -> None:
    """The same command fails on a workflow with an unknown expression context."""
    workflow = project / ".github/workflows/sessionstate.yml"
    text = workflow.read_text().replace("github.run_id", "github.run_idd", 1)
    workflow.write_text(text)
    result = subprocess.run(
        [_tool("actionlint"), "-no-color", str(workflow)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "run_idd" in result.stdout
