"""A new user's first hour: the README's set-up command on a fresh environment, then
``sessionstate init`` and the command it prints, all through the console script.

These run the installed ``sessionstate`` executable, never ``python -m``: the console
script does not put the current directory on ``sys.path``, so only it shows whether a
subject written next to the user is found.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SUBJECT = """\
from sessionstate.conformance import Subject
from sessionstate.reference import resolve_session_state_config


def resolver(*, enable, max_sessions):  # a hook of its own: the reference's alone is refused
    return resolve_session_state_config(enable=enable, max_sessions=max_sessions)


subject = Subject(name="next-to-me", config_resolver=resolver)
"""

# A user's backend for the journey: names the template imports, each the user's own code.
MY_BACKEND = """\
from sessionstate import reference


class SessionStateManager(reference.SessionStateManager):
    pass


def device_bytes(value, seen):
    return reference.device_bytes(value, seen)


def resolve_session_state_config(*, enable, max_sessions):
    return reference.resolve_session_state_config(enable=enable, max_sessions=max_sessions)
"""


def readme_setup_commands() -> list[str]:
    """The fenced commands of the README's Set-up section, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def clean_env(bin_dir: Path | None = None) -> dict[str, str]:
    """The caller's environment without anything that would make a subject importable or
    pick the suite's subject or profile behind the command's back."""
    env = {**os.environ}
    for name in ("PYTHONPATH", "PYTHONHOME", "SESSIONSTATE_SUBJECT", "SESSIONSTATE_PROFILE"):
        env.pop(name, None)
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(bin_dir.parent)
    return env


def installed_script() -> Path:
    """The ``sessionstate`` console script of the environment running these tests."""
    script = Path(sys.executable).parent / "sessionstate"
    if not script.exists():
        pytest.fail(f"no console script at {script}: install the project (pip install .)")
    return script


#: Seconds a command may go without printing anything before it counts as stuck: installing
#: torch or a pytest test between two dots on a loaded machine stays far below it.
STALL_SECONDS = 600
#: Seconds a command may take in all, however steadily it prints: only a runaway reaches it.
TOTAL_SECONDS = 3600


def sh(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``command``; bounded by its progress, not by a race against the clock: it fails
    only after ``STALL_SECONDS`` without a byte of output (or ``TOTAL_SECONDS`` in all), so a
    slow machine that installs and checks at a fraction of the speed still gets through."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=out, stderr=err,
        )  # fmt: skip
        started = last = time.monotonic()
        seen = 0
        while process.poll() is None:
            time.sleep(1)
            size = os.fstat(out.fileno()).st_size + os.fstat(err.fileno()).st_size
            now = time.monotonic()
            if size != seen:
                seen, last = size, now
            if now - last > STALL_SECONDS or now - started > TOTAL_SECONDS:
                process.kill()
                process.wait()
                how = "in all" if now - last <= STALL_SECONDS else "without output"
                pytest.fail(f"{command!r}: stopped after {now - started:.0f} s ({how})")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            command, process.returncode, out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )  # fmt: skip


def working_tree_copy(destination: Path) -> Path:
    """The files of this checkout that git does not ignore, as they are in its working
    tree, in ``destination``.

    A clean clone of the work in front of the developer, as if it were committed: ``git
    clone`` would test the last commit, not the change being made, and copying the whole
    folder would carry ignored build outputs (``build/``, ``*.egg-info``, ``.nox/``) that
    ``pip install .`` could pick up. In CI, a fresh clone, the two are the same.
    """
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout of the project: its files are copied from there")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree stays deleted
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def test_readme_has_exactly_two_setup_commands() -> None:
    """One installs and runs the main job, one runs the tests."""
    commands = readme_setup_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands), commands
    assert commands[0].endswith("sessionstate check"), commands[0]
    assert "nox -s tests" in commands[1], commands[1]


def test_readme_setup_then_init_and_its_check_in_a_fresh_venv(tmp_path: Path) -> None:
    """The README's first command in a fresh venv on a clean copy of the tree (the reference
    passes every clause: the project's own false-positive check of the reference), then
    ``sessionstate init`` in an empty folder and the exact command it prints: refused
    unedited (exit 2, one line naming the file to edit), then, once the subject imports
    the user's own code as the README says, conformant (exit 0). In a fresh venv pip takes
    the newest releases the floors allow: this is CI's run of the newest dependencies (the
    oldest are ``nox -s lowest``'s)."""
    source = working_tree_copy(tmp_path / "sessionstate")
    venv.create(tmp_path / "venv", with_pip=True)
    env = clean_env(tmp_path / "venv" / "bin")

    setup = readme_setup_commands()[0]
    installed = sh(setup, source, env)
    assert installed.returncode == 0, f"{setup}\n{installed.stdout[-3000:]}{installed.stderr}"
    # The bundled reference at the default profile, every clause passed or skipped: nothing
    # failed, errored, xfailed or unchecked (the verdict line counts every outcome there is).
    assert re.search(r"^verdict: CONFORMANT \(\d+ passed(, \d+ skipped)?\) in ", installed.stdout,
                     re.M), installed.stdout[-3000:]  # fmt: skip

    project = tmp_path / "empty"
    project.mkdir()
    init = sh("sessionstate init", project, env)
    assert init.returncode == 0, init.stdout + init.stderr
    printed = re.search(r"run: (sessionstate check .+)$", init.stdout, re.M)
    assert printed, init.stdout
    unedited = sh(printed.group(1), project, env)
    assert unedited.returncode == 2, unedited.stdout[-3000:] + unedited.stderr
    assert unedited.stderr.count("\n") == 1, unedited.stderr
    assert "edit conformance_subject.py" in unedited.stderr, unedited.stderr

    # The edit the README and the template ask for: import YOUR manager, accounting and
    # config resolver (here a subclass and wrappers of the reference: code of the user's).
    (project / "my_backend.py").write_text(MY_BACKEND, encoding="utf-8")
    subject_file = project / "conformance_subject.py"
    template = subject_file.read_text(encoding="utf-8")
    assert "from sessionstate.reference import (" in template, template
    edited = template.replace("from sessionstate.reference import (", "from my_backend import (")
    subject_file.write_text(edited, encoding="utf-8")
    # The printed command at the quick profile: the default profile's depth on the reference
    # ran above; here the path is what is under test (the subject found next to the user).
    check = sh(f"{printed.group(1)} --profile quick", project, env)
    assert check.returncode == 0, f"{printed.group(1)}\n{check.stdout[-3000:]}{check.stderr}"
    assert "verdict: CONFORMANT" in check.stdout
    own = "hooks: own manager_factory, config_resolver, accounting"
    assert own in check.stdout, check.stdout[-3000:]


def test_console_script_imports_a_subject_from_the_current_directory(tmp_path: Path) -> None:
    """``sessionstate check mod:subject`` and ``pytest --pyargs ... --sessionstate-subject``,
    run as the installed scripts with no PYTHONPATH, find ``mod.py`` in the current folder."""
    (tmp_path / "next_to_me.py").write_text(SUBJECT, encoding="utf-8")
    env = clean_env()
    check = subprocess.run(
        [str(installed_script()), "check", "next_to_me:subject", "--clause", "ENV-1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    assert "subject: next-to-me (next_to_me:subject)" in check.stdout

    pytest_script = Path(sys.executable).parent / "pytest"
    assert pytest_script.exists(), pytest_script
    plain = subprocess.run(
        [str(pytest_script), "-q", "-p", "no:cacheprovider", "--pyargs",
         "sessionstate.conformance", "--sessionstate-subject", "next_to_me:subject",
         "--sessionstate-clause", "ENV-1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr
    assert "passed" in plain.stdout
