"""Detection benchmark: every zoo bug, over several random seeds, at the default profile.

For each (subject, seed): was a declared clause failed, how many stateful steps
and seconds until the first clause failure, and how long is the shrunk program.
Writes bench/results-detection.json; render.py turns it into BENCHMARKS.md.
``python bench/detection.py [--seeds 10] [--jobs 2] [--only NAME] [--scope clauses|groups]``

``--tree PATH`` imports ``sessionstate`` from a snapshot of the project (e.g.
``git archive HEAD | tar -x -C PATH``), so edits made while it runs do not leak in.
``--scope clauses`` (the default) runs the tests of the clauses the bug declares, as
``sessionstate check --clause ID`` would; ``groups`` runs its whole clause groups
(about 2.5x the time: 98 bugs x 10 seeds then take over an hour on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def run_one(target: str, seed: int, groups: list[str], tree: str | None) -> dict[str, object]:
    env = {**os.environ, **({"SESSIONSTATE_TREE": tree} if tree else {})}
    out = subprocess.run(
        [sys.executable, str(HERE / "detect_one.py"), target, str(seed), *groups],
        capture_output=True, text=True, timeout=900, cwd=HERE, env=env,
    )  # fmt: skip
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"target": target, "seed": seed, "error": out.stderr[-500:]}
    return json.loads(lines[-1])


def selection(entry: Any, scope: str) -> list[str]:
    """The ``--sessionstate-clause`` values for one run."""
    return sorted(entry.kills if scope == "clauses" else entry.groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--tree", default=None, help="import sessionstate from this snapshot")
    parser.add_argument("--scope", choices=("clauses", "groups"), default="clauses")
    parser.add_argument("--out", default=str(HERE / "results-detection.json"))
    args = parser.parse_args()
    if args.tree:  # the zoo listed is the snapshot's too
        import tree_import

        tree_import.install(Path(args.tree))
    from sessionstate.fixtures.zoo import ZOO

    entries = [e for e in ZOO if not args.only or e.name in args.only]
    jobs = [(e, seed) for e in entries for seed in range(1, args.seeds + 1)]
    table = []
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = pool.map(
            lambda job: run_one(job[0].target, job[1], selection(job[0], args.scope), args.tree),
            jobs,
        )
        for (entry, _seed), run in zip(jobs, runs, strict=True):
            run["name"] = entry.name
            run["kills"] = list(entry.kills)
            # One planted bug in code that otherwise passes every clause (tests/zoo checks the
            # bug-free kit): any clause failure is the bug found. Whether the first failure
            # named a clause the bug declares is kept apart, as "named".
            run["found"] = bool(run.get("failed"))
            run["named"] = bool(set(entry.kills) & set(run.get("failed", [])))
            run["scope"] = args.scope
            table.append(run)
            verdict = "found" if run["found"] else "MISSED"
            print(f"{entry.name:<40} seed {run['seed']:>2}: {verdict}", flush=True)
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
