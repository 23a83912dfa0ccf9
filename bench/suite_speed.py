"""Suite throughput against the reference at the default profile.

Measures, in one run: the whole suite's wall time in one process and with xdist
on 2 workers, side by side in interleaved rounds so the speed-up is a
same-machine ratio, for three ways of running it: ``pytest -q`` (the figure
kept since the first benchmark), ``pytest`` with its header and summary, and
``sessionstate check`` (the main job). Also one timeline of a 2-worker run
(bench/timeline.py), the start-up every process pays, and stateful steps per
second (bench/instrument.py). Writes bench/results-suite.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from instrument import Instrument

HERE = Path(__file__).parent
PYTEST = [sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
          "-p", "no:cacheprovider"]  # fmt: skip
CHECK = [sys.executable, "-m", "sessionstate", "check"]
SUITE = [*PYTEST[3:], "-q"]

#: name -> (one-process command, 2-worker command)
INVOCATIONS = {
    "pytest -q": ([*PYTEST, "-q", "-p", "no:xdist"], [*PYTEST, "-q", "-n", "2"]),
    "pytest": ([*PYTEST, "-p", "no:xdist"], [*PYTEST, "-n", "2"]),
    "sessionstate check": (CHECK, [*CHECK, "-n", "2"]),
}
ROUNDS = 5  # interleaved rounds per invocation; --rounds N to change


def wall(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, cwd=HERE,
                   env={**os.environ, **(env or {})})  # fmt: skip
    return time.monotonic() - started


def timeline() -> list[dict[str, float | str]]:
    """Per-process phase times of one 2-worker ``pytest -q`` run."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "timeline.jsonl"
        env = {"SESSIONSTATE_TIMELINE": str(path), "SESSIONSTATE_TIMELINE_T0": repr(time.time()),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}  # fmt: skip
        total = wall([*INVOCATIONS["pytest -q"][1], "-p", "timeline"], env)
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines.sort(key=lambda line: str(line["process"]))
    return [*lines, {"process": "(exit)", "unconfigured": round(total, 3)}]


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in INVOCATIONS}
    for _ in range(args.rounds):  # interleaved, so drift hits every pair; speed-ups are per round
        for name, (serial, xdist2) in INVOCATIONS.items():
            rounds[name].append({"serial": wall(serial), "xdist2": wall(xdist2)})
    invocations = {}
    for name, pairs in rounds.items():
        speedups = [r["serial"] / r["xdist2"] for r in pairs]
        invocations[name] = {
            "rounds": pairs,
            "serial_seconds": statistics.median(r["serial"] for r in pairs),
            "xdist2_seconds": statistics.median(r["xdist2"] for r in pairs),
            "xdist_speedup": statistics.median(speedups),
            "xdist_speedup_range": [min(speedups), max(speedups)],
        }
    # What every process pays before its first test: interpreter, pytest, Hypothesis,
    # torch and the collected suite. Two workers pay it twice, in parallel, so with a
    # suite of S + T seconds the 2-worker speed-up is at most (S + T) / (S + T / 2).
    startup = statistics.median(wall([*PYTEST, "-q", "--collect-only"]) for _ in range(3))
    quiet = invocations["pytest -q"]
    serial = quiet["serial_seconds"]
    results = {
        **quiet,  # the headline figures, comparable with earlier runs
        "invocations": invocations,
        "startup_seconds": startup,
        "xdist_speedup_bound": serial / (startup + (serial - startup) / 2),
        "timeline": timeline(),
        **steps_per_second(),
    }
    (HERE / "results-suite.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
