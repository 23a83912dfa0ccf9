"""Run ``sessionstate check`` on a target in its own process and read its JSON report.

Through the console script, as a user runs it (``verbatim=True``), or through the fork
server (``forkserver.py``): the same command line, supervisor, child entry and reports,
minus the 4-5 CPU-seconds each fresh child spends importing torch, pytest and Hypothesis.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
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


def lean_env() -> dict[str, str]:
    """The environment of every run: the caller's, without ``SESSIONSTATE_*``, lean."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    env.update(LEAN_ENV)
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {LEAN_ADDOPTS}".strip()
    return env


def console_script() -> list[str]:
    """The ``sessionstate`` console script of this environment (``python -m sessionstate``
    where it has none, as in an environment made without installing the project)."""
    script = Path(sys.executable).parent / "sessionstate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sessionstate"]


class ForkServer:
    """A ``forkserver.py`` process of this test process's own (one per xdist worker)."""

    def __init__(self) -> None:
        path = Path(__file__).with_name("forkserver.py")
        code = f"import runpy, sys; del sys.path[0]; runpy.run_path({str(path)!r}, run_name='__main__')"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=lean_env(),
        )  # fmt: skip
        self._pending = b""  # read from the server, not yet a whole line

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        """The server's next line, read unbuffered (both of a request's lines may come in
        one read); None after ``timeout`` seconds without one."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            assert chunk, f"the fork server ended (status {self.process.poll()})"
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return dict(json.loads(line))

    def run(self, argv: list[str], cwd: Path, output: Path, timeout: float) -> int:
        """``sessionstate ARGV`` in a fork; its exit status. Past ``timeout`` it gets
        SIGTERM (the check stops its child and reports), then the test fails."""
        assert self.process.stdin is not None
        request = {"argv": argv, "cwd": str(cwd), "env": lean_env(), "output": str(output)}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        started = self._reply(120)
        assert started is not None, "the fork server did not answer within 120 s"
        done = self._reply(timeout)
        if done is None:
            os.kill(started["started"], signal.SIGTERM)
            self._reply(120)
            pytest.fail(f"sessionstate {' '.join(argv)} ran over {timeout} s")
        return int(done["returncode"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def fork_server() -> Iterator[ForkServer]:
    server = ForkServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def run_check(tmp_path: Path, request: pytest.FixtureRequest) -> Check:
    """``run_check(target, clauses=(), strict=False, profile="triage", expectations=None,
    verbatim=False)``: run ``sessionstate check``; through the console script with
    ``verbatim``, else through the fork server."""

    def run(
        target: str,
        clauses: Iterable[str] = (),
        strict: bool = False,
        profile: str = "triage",
        expectations: str | None = None,
        verbatim: bool = False,
    ) -> CheckRun:
        report = tmp_path / "r.json"
        command = ["check", target]
        for clause in clauses:
            command += ["--clause", clause]
        # triage: the ci search without shrinking; BENCHMARKS.md measures shrinking.
        command += ["--report-json", str(report), "--profile", profile]
        if strict:
            command.append("--strict")
        if expectations:
            command += ["--expectations", expectations]
        report.unlink(missing_ok=True)
        # cwd=tmp_path: nothing the run writes lands in the checkout.
        if verbatim:
            done = subprocess.run(
                [*console_script(), *command], capture_output=True, text=True, cwd=tmp_path,
                env=lean_env(), timeout=TIMEOUT_S,
            )  # fmt: skip
            returncode, output = done.returncode, done.stdout + done.stderr
        else:
            server: ForkServer = request.getfixturevalue("fork_server")
            log = tmp_path / "output.txt"
            returncode = server.run(command, tmp_path, log, TIMEOUT_S)
            output = log.read_text(encoding="utf-8", errors="replace")
        assert report.exists(), f"no JSON report from {' '.join(command)}\n{output[-3000:]}"
        return CheckRun(returncode, json.loads(report.read_text(encoding="utf-8")), output)

    return run
