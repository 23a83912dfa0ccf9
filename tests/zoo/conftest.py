"""Run ``sessionstate check`` on a target in its own process and read its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Detection needs neither Hypothesis' plugins (``HYPOTHESIS_NO_PLUGINS``, read by
#: ``hypothesis.entry_points.run``: HypoFuzz's is one, and imports trio, click, psutil...)
#: nor anyio's pytest plugin (which imports trio too): together they are ~22 % of the
#: instructions a pytest process spends starting up, in each of a few hundred processes.
LEAN_ENV = {"HYPOTHESIS_NO_PLUGINS": "1"}
LEAN_ADDOPTS = "-p no:anyio"
#: Generous: one zoo run takes a few seconds, a full-suite run under a minute.
TIMEOUT_S = 600


@dataclass
class CheckRun:
    """What one ``sessionstate check`` process returned and reported."""

    returncode: int
    report: dict[str, Any]
    output: str

    def outcomes(self, clause_ids: Iterable[str] | None = None) -> dict[str, str]:
        clauses = self.report["clauses"]
        wanted = clauses if clause_ids is None else clause_ids
        return {cid: clauses[cid]["outcome"] for cid in wanted}

    def describe(self) -> str:
        """The process's exit status and the tail of its output, for assertion messages."""
        return f"exit {self.returncode}; output tail:\n{self.output[-3000:]}"


Check = Callable[..., CheckRun]


@pytest.fixture
def run_check(tmp_path: Path) -> Check:
    """``run_check(target, clauses=(), strict=False, profile="triage", expectations=None)``:
    run the CLI."""

    def run(
        target: str,
        clauses: Iterable[str] = (),
        strict: bool = False,
        profile: str = "triage",
        expectations: str | None = None,
    ) -> CheckRun:
        report = tmp_path / "r.json"
        command = [sys.executable, "-m", "sessionstate", "check", target]
        for clause in clauses:
            command += ["--clause", clause]
        # triage: the ci search without shrinking; BENCHMARKS.md measures shrinking.
        command += ["--report-json", str(report), "--profile", profile]
        if strict:
            command.append("--strict")
        if expectations:
            command += ["--expectations", expectations]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
        env.update(LEAN_ENV)
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {LEAN_ADDOPTS}".strip()
        # cwd=tmp_path: nothing the run writes lands in the checkout.
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=TIMEOUT_S
        )
        output = done.stdout + done.stderr
        assert report.exists(), f"no JSON report from {' '.join(command)}\n{output[-3000:]}"
        return CheckRun(done.returncode, json.loads(report.read_text(encoding="utf-8")), output)

    return run
