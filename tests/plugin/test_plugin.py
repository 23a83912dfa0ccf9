"""The pytest plugin: loading paths, lightness at import, and the installed wheel.

zarr's plugin was dead for months because its entry point named the wrong
module (zarr PR #4094), so the wheel is built and its plugin run from outside
the source tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-q"]


def _pytest(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=300,
    )  # fmt: skip


def test_plugin_import_is_light() -> None:
    """Loading the plugin imports neither torch, numpy, hypothesis nor a subject."""
    code = (
        "import sys, sessionstate.conformance.plugin\n"
        "heavy = [m for m in ('torch', 'numpy', 'hypothesis', 'sessionstate.reference',"
        " 'sessionstate.fixtures.reference_subject') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pyargs_with_subject_option_and_header(tmp_path: Path) -> None:
    """`pytest --pyargs sessionstate.conformance --sessionstate-subject T` prints what is under test."""
    result = _pytest(
        *SUITE[:-1], "--sessionstate-subject", "sessionstate.fixtures.reference_subject:subject",
        "--sessionstate-clause", "ENV", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "subject 'reference' from sessionstate.fixtures.reference_subject:subject" in result.stdout
    )
    assert "cuda:0 (simulated)" in result.stdout or "cuda:0," in result.stdout


def test_subject_from_environment_variable(tmp_path: Path) -> None:
    """SESSIONSTATE_SUBJECT chooses the subject when no option is given."""
    result = _pytest(
        *SUITE, "--sessionstate-clause", "ENV", cwd=tmp_path,
        env={"SESSIONSTATE_SUBJECT": "no_such_pkg:subject"},
    )  # fmt: skip
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "cannot import module 'no_such_pkg'" in result.stderr


def test_works_without_autoload_via_dash_p(tmp_path: Path) -> None:
    """Under PYTEST_DISABLE_PLUGIN_AUTOLOAD, `-p sessionstate.conformance.plugin` loads it once."""
    result = _pytest(
        *SUITE, "-p", "sessionstate.conformance.plugin", "--sessionstate-clause", "ENV",
        cwd=tmp_path, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" in result.stdout


def test_dash_p_with_autoload_does_not_register_twice(tmp_path: Path) -> None:
    """The entry point is named after the module, so an explicit -p is harmless."""
    result = _pytest(*SUITE, "-p", "sessionstate.conformance.plugin", "--sessionstate-clause", "ENV",
                     cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_installed_wheel_runs_the_plugin(tmp_path: Path) -> None:
    """A built wheel ships SPEC.md, py.typed and a working pytest11 entry point."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheels.glob("sessionstate-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    for shipped in ("conformance/SPEC.md", "reference/py.typed", "conformance/suite/test_env.py"):
        assert (target / "sessionstate" / shipped).is_file(), shipped
    assert not (target / "tests").exists()
    env = {"PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import sessionstate.conformance as c; print(c.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, **env}, check=True,
    ).stdout  # fmt: skip
    assert where.startswith(str(target)), where
    result = _pytest(*SUITE, "--sessionstate-clause", "ENV", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 passed" in result.stdout  # the ENV oracle once per clause, and ENV-6's two


FREEZE_PROBE = """
import gc
import pytest

@pytest.mark.clause("KEY-1")
def test_marked():
    print("frozen", gc.get_freeze_count() > 0)

{extra}
"""


@pytest.mark.parametrize(
    ("extra", "frozen"),
    [("", True), ("def test_callers_own():\n    pass", False)],
    ids=["conformance-only", "mixed-with-callers-tests"],
)
def test_gc_freeze_only_in_conformance_only_runs(tmp_path: Path, extra: str, frozen: bool) -> None:
    """Startup objects leave cyclic GC only when every collected test is a conformance test."""
    (tmp_path / "test_probe.py").write_text(FREEZE_PROBE.format(extra=extra), encoding="utf-8")
    out = _pytest("-s", "-q", "-p", "no:cacheprovider", "test_probe.py", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"frozen {frozen}" in out.stdout


CONTROLLER_PROBE = """
import gc

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        print("controller frozen", gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize(
    ("folder", "frozen"), [("conformance/suite", True), ("tests", False)], ids=["suite", "other"]
)
def test_xdist_controller_freezes_only_for_suite_ids(
    tmp_path: Path, folder: str, frozen: bool
) -> None:
    """The controller runs no test; it freezes when every collected id is a suite test's."""
    (tmp_path / "conftest.py").write_text(CONTROLLER_PROBE, encoding="utf-8")
    (tmp_path / folder).mkdir(parents=True)
    probe = FREEZE_PROBE.format(extra="")
    (tmp_path / folder / "test_probe.py").write_text(probe, encoding="utf-8")
    out = _pytest("-s", "-q", "-p", "no:cacheprovider", "-n", "2", folder, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"controller frozen {frozen}" in out.stdout


UNRELATED = """
from hypothesis import settings

def test_own_settings():
    print("profile", settings._current_profile)
"""


def test_a_run_of_other_tests_keeps_its_settings_and_header(tmp_path: Path) -> None:
    """Installed for every pytest run: a project's own tests get neither our Hypothesis
    profile nor our report header."""
    (tmp_path / "test_theirs.py").write_text(UNRELATED, encoding="utf-8")
    env = {"SESSIONSTATE_SUBJECT": "", "SESSIONSTATE_PROFILE": ""}
    out = _pytest("-s", "-p", "no:cacheprovider", "test_theirs.py", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    # Hypothesis' own: "default", or "ci" where CI is set.
    assert "profile default" in out.stdout or "profile ci" in out.stdout
    header = out.stdout.split("collected")[0]
    assert "plugins:" in header  # the header was printed, without our lines
    assert "subject" not in header


_PATCH_PROBE = """
import sys

def pytest_unconfigure(config):
    print("PATCHING", "hypothesis.extra._patching" in sys.modules)
"""


def test_a_failing_suite_test_writes_no_hypothesis_patch(tmp_path: Path) -> None:
    """Hypothesis would write a patch adding ``@example`` to the suite's own test function,
    importing libcst and black to do it (about 0.5 s at each failure): the suite's tests
    are not the user's to patch."""
    (tmp_path / "patch_probe.py").write_text(_PATCH_PROBE, encoding="utf-8")
    result = _pytest(
        *SUITE, "-s", "-p", "patch_probe",
        "--sessionstate-subject", "sessionstate.fixtures.zoo.env_ascii_int:subject",
        "--sessionstate-clause", "ENV-4", "--sessionstate-profile", "quick",
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "PATCHING False" in result.stdout, result.stdout[-3000:]
    assert not (tmp_path / ".hypothesis" / "patches").exists()
