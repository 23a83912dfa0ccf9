"""Time one whole run of the suite against the bundled reference, in this process.

``python bench/time_suite.py PROFILE`` prints a JSON line: the profile, the wall seconds of
the run and the CPU seconds of this process. ``SESSIONSTATE_TREE`` imports ``sessionstate``
from a snapshot instead of the working tree, as ``detect_one.py`` does; ``side_by_side.py
--suite`` runs it for two trees at once, one per core.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

if os.environ.get("SESSIONSTATE_TREE"):
    import tree_import

    tree_import.install(Path(os.environ["SESSIONSTATE_TREE"]))

import pytest


def main(profile: str) -> dict[str, object]:
    args = [
        "--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-q",
        "--sessionstate-profile", profile, "-W", "ignore::pytest.PytestAssertRewriteWarning",
    ]  # fmt: skip
    started, cpu = time.monotonic(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(args)
    return {
        "profile": profile,
        "exit": int(code),
        "wall_seconds": round(time.monotonic() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "quick")))
