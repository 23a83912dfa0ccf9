"""Checking a request in a child process: the target's import and hooks cannot end or hang
the process that asks.

``sessionstate check`` and ``fuzz`` validate what they were asked (the target, its hooks,
the options) before a run starts. ``validate_in_child`` runs ``runner.validate`` in the
suite's child process (``child``, in validate-only mode) under the start-up bound: a
usage error comes back as its one line, a child that ends or hangs without an answer is
``NoAnswer`` (incomplete, not misuse).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path

from sessionstate.conformance._harness.runner import CheckOptions
from sessionstate.conformance._harness.supervision import spawn
from sessionstate.conformance._harness.supervision.bounds import STARTUP_SECONDS
from sessionstate.conformance._harness.supervision.spawn import status
from sessionstate.conformance.subject import UsageError

__all__ = ["NoAnswer", "validate_in_child"]


class NoAnswer(Exception):
    """The child validating a request ended, or ran past the start-up bound, without an
    answer: the subject's code ended or hung its process (incomplete, not misuse)."""


def validate_in_child(options: CheckOptions) -> None:
    """``runner.validate`` in a child process, so that the subject's code (importing the
    target, calling its hooks) can neither end nor hang this one: ``UsageError`` with the
    check's one line, or ``NoAnswer`` naming how the child ended."""
    with tempfile.TemporaryDirectory(prefix="sessionstate-validate-") as scratch:
        folder = Path(scratch)
        files = {
            name: folder / f"{name}.json" for name in ("spec", "usage", "infrastructure", "status")
        }
        files["journal"] = folder
        files["results"] = folder / "results.json"
        spec = {"options": asdict(options), "files": {k: str(v) for k, v in files.items()},
                "test_seconds": None, "skip_ids": None, "validate_only": True}  # fmt: skip
        files["spec"].write_text(json.dumps(spec), encoding="utf-8")
        process = spawn.spawn_child(files["spec"])
        try:
            code: int | None = process.wait(STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if files["infrastructure"].exists():
            from sessionstate.conformance._harness.database import InfrastructureError

            message = files["infrastructure"].read_text(encoding="utf-8")
            raise InfrastructureError(message, RuntimeError(message))
        if files["usage"].exists():
            raise UsageError(files["usage"].read_text(encoding="utf-8"))
        if not files["status"].exists():
            how = (
                f"ran over {STARTUP_SECONDS:g} s" if code is None else f"ended with {status(code)}"
            )
            raise NoAnswer(
                f"the process importing the target and calling its hooks {how} before it "
                "answered (the subject's code?)"
            )
