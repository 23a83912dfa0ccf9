"""Run the suite once against one subject with one seed; print a JSON line of what happened.

``python bench/detect_one.py TARGET SEED SELECTION [SELECTION ...]``, where each SELECTION is a
clause id or group as ``--clause`` takes them. Used by detection.py: one process per run, so every
run starts cold, as in an implementer's CI.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

if os.environ.get("SESSIONSTATE_TREE"):
    # detection.py --tree: import sessionstate from a snapshot, not the working tree.
    import tree_import

    tree_import.install(Path(os.environ["SESSIONSTATE_TREE"]))

import pytest
from instrument import Instrument


def main(target: str, seed: int, groups: list[str]) -> dict[str, object]:
    instrument = Instrument()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "r.json"
        args = [
            "--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-q", "-x",
            "--sessionstate-subject", target, "--sessionstate-seed", str(seed),
            f"--hypothesis-seed={seed}", "--sessionstate-report-json", str(report),
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
        ]  # fmt: skip
        for group in groups:
            args += ["--sessionstate-clause", group]
        started = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main(args, plugins=[instrument])
        wall = time.monotonic() - started
        results = json.loads(report.read_text())
    failed = sorted(c for c, r in results["clauses"].items() if r["outcome"] in ("failed", "error"))
    return {
        "target": target,
        "seed": seed,
        "failed": failed,
        "first_failure": instrument.first_failure,
        "shrunk_steps": max(instrument.shrunk_steps, default=0),
        "wall_seconds": round(wall, 3),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])))
