"""Helpers to run the ``sessionstate`` command in a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli(tmp_path: Path) -> Run:
    """``run_cli("check", ...)`` runs ``python -m sessionstate`` with tmp_path importable."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        env.pop("SESSIONSTATE_SUBJECT", None)
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
