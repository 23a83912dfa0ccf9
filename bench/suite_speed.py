"""Suite throughput against the reference at the default profile.

Measures, in one run: the whole suite's wall time in one process and with
xdist on 2 workers (side by side, so the speed-up is a same-machine ratio), and
stateful steps per second (steps counted by bench/instrument.py).
Writes bench/results-suite.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from instrument import Instrument

HERE = Path(__file__).parent
SUITE = ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-q"]


def wall(extra: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", *SUITE, *extra], check=True,
                   capture_output=True, cwd=HERE)  # fmt: skip
    return time.monotonic() - started


def steps_per_second() -> dict[str, float]:
    instrument = Instrument()
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(SUITE, plugins=[instrument])
    seconds = time.monotonic() - started
    return {
        "steps": instrument.steps,
        "seconds": seconds,
        "steps_per_second": instrument.steps / seconds,
    }


def main() -> None:
    rounds = []
    for _ in range(5):  # interleaved, so drift hits both; the speed-up is taken per round
        rounds.append({"serial": wall(["-p", "no:xdist"]), "xdist2": wall(["-n", "2"])})
    speedups = [r["serial"] / r["xdist2"] for r in rounds]
    # What every process pays before its first test: interpreter, pytest, Hypothesis,
    # torch and the collected suite. Two workers pay it twice, in parallel, so with a
    # suite of S + T seconds the 2-worker speed-up is at most (S + T) / (S + T / 2).
    startup = statistics.median(wall(["--collect-only"]) for _ in range(3))
    serial = statistics.median(r["serial"] for r in rounds)
    results = {
        "rounds": rounds,
        "serial_seconds": serial,
        "xdist2_seconds": statistics.median(r["xdist2"] for r in rounds),
        "xdist_speedup": statistics.median(speedups),
        "xdist_speedup_range": [min(speedups), max(speedups)],
        "startup_seconds": startup,
        "xdist_speedup_bound": serial / (startup + (serial - startup) / 2),
        **steps_per_second(),
    }
    (HERE / "results-suite.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
