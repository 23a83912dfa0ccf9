"""vLLM-omni as a client (``sessionstate.fixtures.vllm_omni``, ``check_vllm_omni``): the
loader's errors, the runner's exit status, and, with the released wheel, that the check goes
red when it should: an expectation removed, an expectation gone stale, a correct clause
broken in a copy of vLLM-omni's code, and that the unguarded adapter's failure names the
call and both outcomes.

The wheel comes from ``nox -s upstream``, which downloads it and sets
``SESSIONSTATE_VLLM_OMNI_PATH``; elsewhere the tests that need it skip, saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sessionstate.fixtures import check_vllm_omni
from sessionstate.fixtures.check_vllm_omni import RUNS, Run, run_command

VARIABLE = "SESSIONSTATE_VLLM_OMNI_PATH"
EXPECTATIONS = Path(check_vllm_omni.__file__).with_name("vllm_omni.expectations")


def check(*args: str, path: str | None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``sessionstate check`` in a child with ``SESSIONSTATE_VLLM_OMNI_PATH`` as given."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if path is not None:
        env[VARIABLE] = path
    command = [sys.executable, "-m", "sessionstate", "check", *args, "--profile", "quick"]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


@pytest.fixture
def wheel() -> str:
    path = os.environ.get(VARIABLE)
    if not path:
        pytest.skip(f"needs vLLM-omni's wheel: nox -s upstream downloads it and sets {VARIABLE}")
    return path


@pytest.fixture
def unpacked(wheel: str, tmp_path: Path) -> Path:
    """The wheel unpacked into a folder of the test's own (a copy it may break)."""
    if Path(wheel).is_dir():
        return Path(wheel)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "wheel")
    return tmp_path / "wheel"


def lines_for(*groups: str, leave_out: str = "", add: str = "") -> str:
    """The shipped expectations' lines for ``groups``, less ``leave_out``, plus ``add``."""
    kept = [
        line
        for line in EXPECTATIONS.read_text().splitlines()
        if line.split(" ", 1)[0].split("-")[0] in groups and not line.startswith(leave_out or "#")
    ]
    return "\n".join([*kept, add]) + "\n"


# --- without the wheel ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (None, f"install vllm-omni, or set {VARIABLE}"),
        ("/nonexistent/folder", "no vllm_omni/ folder there"),
        (__file__, "not a wheel (.whl) or a folder"),
    ],
    ids=["unset", "no-folder", "not-a-wheel"],
)
def test_a_missing_vllm_omni_is_one_line_and_exit_2(path: str | None, says: str) -> None:
    done = check("sessionstate.fixtures.vllm_omni:subject", path=path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_runner_exits_with_the_first_failing_runs_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    statuses = iter([0, 3, 1, 0])
    seen: list[list[str]] = []

    def fake_run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        status = next(statuses)
        return subprocess.CompletedProcess(command, status, f"verdict: status {status}\n", "")

    monkeypatch.setattr(check_vllm_omni.subprocess, "run", fake_run)
    assert check_vllm_omni.main([]) == 3
    assert len(seen) == len(RUNS)
    assert "unguarded  ADAPT-1  exit 0  verdict: status 0" in capsys.readouterr().out


def test_every_run_is_strict_and_names_its_expectations() -> None:
    for run in RUNS:
        command = run_command(run, "quick", None)
        assert "--strict" in command
        if run.expectations:
            named = Path(command[command.index("--expectations") + 1])
            assert named.is_file(), named
    assert run_command(Run("subject", "LRU", None), "ci", None)[-2:] == ["--clause", "LRU"]


# --- with the wheel ------------------------------------------------------------------------


def test_the_release_passes_and_the_docs_table_is_its_result(wheel: str, tmp_path: Path) -> None:
    """``check_vllm_omni`` (what ``nox -s upstream`` runs) on the release: the four runs
    pass against the shipped expectations, and docs/vllm-omni.md's table is this run's
    matrix (``nox -s upstream`` rewrites it)."""
    env = {**os.environ, VARIABLE: wheel}
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate.fixtures.check_vllm_omni", "--reports",
         str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    docs = Path(__file__).resolve().parents[2] / "docs" / "vllm-omni.md"
    table = docs.read_text(encoding="utf-8").split("<!-- compatibility: begin -->\n")[1]
    table = table.split("<!-- compatibility: end -->")[0]
    assert table.strip() == (tmp_path / "matrix.md").read_text(encoding="utf-8").strip(), (
        "docs/vllm-omni.md's compatibility table is stale: run nox -s upstream"
    )


def test_the_folder_and_the_wheel_load_the_same_release(wheel: str, unpacked: Path) -> None:
    for path in (wheel, str(unpacked)):
        done = check("sessionstate.fixtures.vllm_omni:subject", "--clause", "ENV", path=path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "verdict: CONFORMANT (6 passed)" in done.stdout


def test_a_removed_expectation_turns_it_red(wheel: str, tmp_path: Path) -> None:
    expectations = tmp_path / "less.expectations"
    expectations.write_text(lines_for("RESET", "STATS", leave_out="RESET-2"))
    done = check(
        "sessionstate.fixtures.vllm_omni:subject", "--clause", "RESET", "--clause", "STATS", "--strict",
        "--expectations", str(expectations), path=wheel,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "RESET-2    SHOULD  FAIL" in done.stdout


def test_a_stale_expectation_turns_it_red(wheel: str, tmp_path: Path) -> None:
    expectations = tmp_path / "more.expectations"
    expectations.write_text(lines_for("RESET", add="LRU-1  xfail  not a defect of vLLM-omni's"))
    done = check(
        "sessionstate.fixtures.vllm_omni:subject", "--clause", "RESET", "--clause", "LRU", "--strict",
        "--expectations", str(expectations), path=wheel,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "STALE EXPECTATIONS" in done.stdout and "LRU-1" in done.stdout


def test_a_broken_clause_turns_it_red(unpacked: Path) -> None:
    manager = unpacked / "vllm_omni/experimental/world_models/session_state/manager.py"
    source = manager.read_text()
    # resolve_session_state_config: OMNI_DIFFUSION_SESSION_STATE_MANAGER=0 force-disables.
    hit = "            enable = False\n"
    assert source.count(hit) == 1, "the env override moved: update this test"
    manager.write_text(source.replace(hit, "            pass  # broken: =0 ignored\n"))
    done = check("sessionstate.fixtures.vllm_omni:subject", "--clause", "ENV", path=str(unpacked))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NON-CONFORMANT" in done.stdout and "ENV-" in done.stdout


def test_the_unguarded_call_names_itself_and_both_outcomes(wheel: str) -> None:
    done = check("sessionstate.fixtures.vllm_omni:unguarded", "--clause", "ADAPT-1", path=wheel)
    assert done.returncode == 1, done.stdout + done.stderr
    failure = next(line for line in done.stdout.splitlines() if "ClauseFailure" in line)
    assert "adapter.append_vae_encoder_chunk(...)=None" in failure
    assert "should be Raised(RuntimeError('VAE encoder stream is not seeded" in failure
    assert "[ADAPT-1: after adapter.append_vae_encoder_chunk(...)" in failure
