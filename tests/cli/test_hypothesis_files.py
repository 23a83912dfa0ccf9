"""What a run of the suite leaves behind: no ``.hypothesis/`` in the current directory, and
one line, not a silent override, for a ``--hypothesis-profile`` it does not use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SUBJECT = """
    from sessionstate.conformance import Subject
    from sessionstate.reference import resolve_session_state_config

    def resolver(*, enable, max_sessions):  # its own hook: the reference's alone is refused
        return resolve_session_state_config(enable=enable, max_sessions=max_sessions)

    subject = Subject(name="local", config_resolver=resolver)
"""


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(cwd), **env}
    for name in ("SESSIONSTATE_SUBJECT", "SESSIONSTATE_PROFILE", "HYPOTHESIS_STORAGE_DIRECTORY"):
        if name not in env:
            environ.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd, env=environ,
        timeout=300,
    )  # fmt: skip


def test_explain_and_check_leave_no_hypothesis_folder_here(tmp_path, write_module) -> None:
    """Hypothesis' caches go to the user's cache folder (here XDG_CACHE_HOME), not to
    ``.hypothesis/`` in the current directory, which holds the subject's module."""
    module = write_module("local_subject", SUBJECT)
    cache = tmp_path / "cache"
    explain = _run(["sessionstate", "explain", "ENV-1"], tmp_path, XDG_CACHE_HOME=str(cache))
    assert explain.returncode == 0, explain.stderr
    check = _run(
        ["sessionstate", "check", f"{module}:subject", "--clause", "ENV-1"],
        tmp_path, XDG_CACHE_HOME=str(cache),
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    assert not (tmp_path / ".hypothesis").exists()
    assert (cache / "sessionstate" / "hypothesis").is_dir()


def test_a_storage_directory_the_user_sets_is_kept(tmp_path, write_module) -> None:
    module = write_module("local_subject", SUBJECT)
    mine = tmp_path / "mine"
    check = _run(
        ["sessionstate", "check", f"{module}:subject", "--clause", "ENV-1"],
        tmp_path, HYPOTHESIS_STORAGE_DIRECTORY=str(mine), XDG_CACHE_HOME=str(tmp_path / "c"),
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    assert mine.is_dir()
    assert not (tmp_path / "c").exists()
    assert not (tmp_path / ".hypothesis").exists()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_an_ignored_hypothesis_profile_is_said_once(tmp_path, workers: list[str]) -> None:
    """The suite runs under its own profile; the user's --hypothesis-profile gets one line."""
    result = _run(
        ["sessionstate", "check", "--clause", "ENV-1", *workers, "--",
         "--hypothesis-profile", "default"],
        tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    said = [line for line in result.stderr.splitlines() if "--hypothesis-profile" in line]
    assert said == [
        "sessionstate: --hypothesis-profile default does not apply to the conformance tests, "
        "which run under the suite's profile 'ci'; choose it with 'sessionstate check "
        "--profile' or '--sessionstate-profile'"
    ], result.stderr
    assert "profile ci" in result.stdout


def test_a_run_of_other_tests_keeps_its_hypothesis_profile(tmp_path) -> None:
    """No notice, and Hypothesis' files where Hypothesis puts them, when the suite is not run."""
    (tmp_path / "conftest.py").write_text(
        "from hypothesis import settings\nsettings.register_profile('mine', max_examples=3)\n"
    )
    (tmp_path / "test_mine.py").write_text(
        "from hypothesis import given, settings, strategies as st\n"
        "@given(st.integers())\n"
        "def test_profile(n):\n"
        "    assert settings.default.max_examples == 3\n"
    )
    result = _run(
        ["pytest", "-q", "-p", "no:cacheprovider", "test_mine.py", "--hypothesis-profile", "mine"],
        tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "sessionstate:" not in result.stdout + result.stderr


def test_the_default_fuzz_database_is_one_per_subject() -> None:
    """A failure stored for one subject is never replayed against another by default."""
    from sessionstate.conformance._harness.profiles import default_fuzz_database

    mine, theirs = default_fuzz_database("mypkg.conf:subject"), default_fuzz_database("b:subject")
    assert mine != theirs and mine.parent == theirs.parent == default_fuzz_database()
    assert mine == default_fuzz_database("mypkg.conf:subject")  # the same subject's, every run
    assert mine.name.startswith("mypkg.conf_subject-")
    odd = default_fuzz_database("../../x:y")  # a name, never a path out of the storage
    assert odd.parent == default_fuzz_database() and "/" not in odd.name
