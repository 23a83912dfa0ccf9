"""Time to the first failure of two snapshots of the project, measured side by side.

``python bench/side_by_side.py OLD_TREE NEW_TREE [--seeds 1] [--only NAME ...]``

For every zoo subject both snapshots hold (same name, same target, same declared
clauses), ``detect_one.py`` runs it once against each tree per seed, the two runs of a pair
side by side on the two cores, so that whatever else loads the machine falls on both alike
(the machines are shared: a median taken on another day is no baseline). Each tree is a
``git archive`` of a commit (``tree_import``). Prints, per tree, the median over subjects
of the seconds from process start to the first clause failure, and the ratio new/old;
``--out FILE`` keeps every run as JSON.

``--suite PROFILE`` times whole runs of the suite against the reference instead
(``time_suite.py``), the two trees side by side, ``--seeds`` pairs: the median wall and CPU
seconds of each tree and the ratios new/old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from detection import run_one

HERE = Path(__file__).parent


def _zoo(tree: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The snapshot's zoo: name -> (target, declared clauses)."""
    code = (
        "import json, sys, tree_import\nfrom pathlib import Path\n"
        "tree_import.install(Path(sys.argv[1]))\n"
        "from sessionstate.fixtures.zoo import ZOO\n"
        "print(json.dumps({e.name: [e.target, sorted(e.kills)] for e in ZOO}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, tree], capture_output=True, text=True, cwd=HERE, check=True
    )
    return {
        name: (target, tuple(kills)) for name, (target, kills) in json.loads(out.stdout).items()
    }


def _time_suite(tree: str, profile: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(HERE / "time_suite.py"), profile],
        capture_output=True, text=True, timeout=1800, cwd=HERE,
        env={**os.environ, "SESSIONSTATE_TREE": tree},
    )  # fmt: skip
    run: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if run["exit"] != 0:
        raise SystemExit(f"{tree}: the suite exited {run['exit']} on the reference")
    return run


def suite_times(old: str, new: str, profile: str, pairs: int) -> None:
    """Print the median wall and CPU seconds of whole runs of each tree, side by side."""
    jobs = [tree for _ in range(pairs) for tree in (old, new)]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda tree: _time_suite(tree, profile), jobs))
    for measure in ("wall_seconds", "cpu_seconds"):
        medians = {
            tree: statistics.median(
                r[measure] for t, r in zip(jobs, runs, strict=True) if t == tree
            )
            for tree in (old, new)
        }
        print(
            f"{profile} {measure}: old {medians[old]:.2f}, new {medians[new]:.2f}, "
            f"ratio new/old {medians[new] / medians[old]:.3f} ({pairs} pairs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--out", default=None)
    parser.add_argument("--suite", default=None, metavar="PROFILE")
    args = parser.parse_args()
    if args.suite:
        suite_times(args.old, args.new, args.suite, args.seeds)
        return
    old, new = _zoo(args.old), _zoo(args.new)
    names = [n for n in new if n in old and old[n] == new[n] and (not args.only or n in args.only)]
    jobs = [
        (tree, name, seed)
        for name in names
        for seed in range(1, args.seeds + 1)
        for tree in (args.old, args.new)  # a pair: side by side on the two workers
    ]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda j: run_one(new[j[1]][0], j[2], list(new[j[1]][1]), j[0]), jobs))
    seconds: dict[str, dict[str, list[float]]] = {args.old: {}, args.new: {}}
    for (tree, name, _seed), run in zip(jobs, runs, strict=True):
        first = run.get("first_failure")
        if first:
            seconds[tree].setdefault(name, []).append(first["seconds"])
    both = [n for n in names if n in seconds[args.old] and n in seconds[args.new]]
    medians = {
        tree: statistics.median(statistics.median(seconds[tree][n]) for n in both)
        for tree in seconds
    }
    print(f"{len(both)} subjects found by both trees ({len(names)} in both zoos)")
    print(f"old {args.old}: median {medians[args.old]:.3f} s to the first failure")
    print(f"new {args.new}: median {medians[args.new]:.3f} s to the first failure")
    print(f"ratio new/old: {medians[args.new] / medians[args.old]:.3f}")
    if args.out:
        records = [
            {"tree": j[0], "name": j[1], "seed": j[2], **r} for j, r in zip(jobs, runs, strict=True)
        ]
        Path(args.out).write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
