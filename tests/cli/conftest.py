"""Helpers to run the ``sessionstate`` command in a separate process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


#: Read by ``hypothesis.entry_points.run``: set, ``import hypothesis`` loads no plugin.
NO_PLUGINS_ENV = "HYPOTHESIS_NO_PLUGINS"
#: anyio's pytest plugin imports trio at load; no command test uses it.
LEAN_ADDOPTS = "-p no:anyio"


@pytest.fixture
def run_cli(tmp_path: Path) -> Run:
    """``run_cli("check", ...)`` runs ``python -m sessionstate`` with tmp_path importable.

    Without Hypothesis' plugins (``HYPOTHESIS_NO_PLUGINS``) nor anyio's pytest plugin
    (``LEAN_ADDOPTS``): HypoFuzz's entry point and anyio's import trio and more, ~22 % of a
    pytest process's start-up, and no command but ``fuzz`` needs them. ``fuzz`` keeps them
    (``hypothesis fuzz`` is that plugin's command), as does ``plugins=True``.
    """

    def run(*args: str, plugins: bool = False) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        env.pop("SESSIONSTATE_SUBJECT", None)
        if plugins or "fuzz" in args[:1]:
            env.pop(NO_PLUGINS_ENV, None)
        else:
            env[NO_PLUGINS_ENV] = "1"
            env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {LEAN_ADDOPTS}".strip()
        return subprocess.run(
            [sys.executable, "-m", "sessionstate", *args],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
        )  # fmt: skip

    return run


@pytest.fixture
def write_module(tmp_path: Path) -> Callable[[str, str], str]:
    """Write ``tmp_path/<name>.py`` and return its module name."""

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name

    return write


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one-line usage error of a run that must exit 2 without a traceback."""
    stderr = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], stderr[-2000:])
    assert "Traceback" not in stderr + result.stdout
    assert len(stderr.splitlines()) == 1, stderr
    return stderr


def reuse_failures(stdout: str, test: str) -> int | None:
    """Failing cases of ``test``'s reuse phase in ``--hypothesis-show-statistics`` output
    (None: the test had no reuse phase, i.e. nothing stored to replay)."""
    block = stdout.split(f"{test}:", 1)
    if len(block) < 2:
        return None
    stats = block[1].split("\n\n  - Stopped because", 1)[0]
    reuse = re.search(r"during reuse phase.*?(\d+) failing", stats, flags=re.DOTALL)
    return int(reuse.group(1)) if reuse else None
