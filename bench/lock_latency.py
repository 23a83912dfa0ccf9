"""Another thread's ``get_or_create_session`` latency while ``stats()`` counts a big value.

Side by side, in one run: the reference as it is, and the reference as it was at
``--before`` (a git revision; default: the last one that counted bytes under the
lock, recursively). One session holds a 1M-element list of ints ending in a tensor
(``attrs['history']``); a counting thread calls ``stats()`` ``--calls`` times while
the main thread calls ``get_or_create_session`` over 8 resident ids in a loop and
times each call. Reported per version: how long each ``stats()`` took, and the
calls' latency (p50, p99, max) with their count, and the calls over 1 ms with the
time spent in them (a p99 hides a stall: one call waits through it while, without
one, thousands of calls run in that time). Wall time (``perf_counter``):
latency is what a serving thread waits, the lock and the GIL included.

Run: ``python bench/lock_latency.py [--before REV] [--calls N] [--size N]``; prints
a Markdown table (BENCHMARKS.md, "Lock held while counting"). Needs ``git`` and
the repository: the old ``reference/`` is read with ``git show``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import sessionstate.reference as current

ROOT = Path(__file__).resolve().parent.parent
#: The last revision whose manager counted bytes under its lock, recursively.
DEFAULT_BEFORE = "139d6bc"
_MODULES = ("errors", "config", "accounting", "base", "attrs", "objects", "session", "manager")


def load_reference(revision: str, into: Path) -> ModuleType:
    """``reference/`` at ``revision`` as an importable package named ``reference_<rev>``."""
    name = f"reference_{revision}"
    package = into / name
    package.mkdir()
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", revision, "reference/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for path in listing:
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (package / Path(path).name).write_text(text)
    spec = importlib.util.spec_from_file_location(name, package / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def measure(reference: ModuleType, calls: int, size: int) -> dict[str, Any]:
    """Latency of get_or_create_session while another thread runs ``stats()``."""
    manager = reference.SessionStateManager(max_sessions=64)
    ids = [f"s{i}" for i in range(8)]
    for session_id in ids:
        manager.get_or_create_session(session_id)
    history: list[object] = [*range(size), torch.zeros(4)]
    manager.get_or_create_session("big").attrs["history"] = history
    stats_s: list[float] = []
    done = threading.Event()

    def count() -> None:
        for _ in range(calls):
            start = time.perf_counter()
            manager.stats()
            stats_s.append(time.perf_counter() - start)
        done.set()

    latencies: list[float] = []
    counter = threading.Thread(target=count, name="stats")
    counter.start()
    i = 0
    while not done.is_set():
        start = time.perf_counter()
        manager.get_or_create_session(ids[i % len(ids)])
        latencies.append(time.perf_counter() - start)
        i += 1
    counter.join()
    latencies.sort()
    return {
        "stats_s": statistics.median(stats_s),
        "calls": len(latencies),
        "p50_us": latencies[len(latencies) // 2] * 1e6,
        "p99_us": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e6,
        "max_us": latencies[-1] * 1e6,
        # p99 hides a stall: one call waits through it while thousands run around it.
        "over_1ms": sum(1 for x in latencies if x > 1e-3),
        "blocked_s": sum(x for x in latencies if x > 1e-3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git revision to compare")
    parser.add_argument("--calls", type=int, default=3, help="stats() calls per version")
    parser.add_argument("--size", type=int, default=1_000_000, help="elements in the list")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        before = load_reference(args.before, Path(scratch))
        rows = [
            (f"before ({args.before})", measure(before, args.calls, args.size)),
            ("after (this tree)", measure(current, args.calls, args.size)),
        ]
    print(
        f"{args.size:,}-element list, {args.calls} stats() calls per version, torch {torch.__version__}\n"
    )
    print(
        "| reference | stats() s (median) | get_or_create calls | p50 µs | p99 µs | max µs "
        "| calls over 1 ms | waited in them, s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, row in rows:
        print(
            f"| {label} | {row['stats_s']:.2f} | {row['calls']:,} | {row['p50_us']:.1f} "
            f"| {row['p99_us']:.1f} | {row['max_us']:,.0f} | {row['over_1ms']} "
            f"| {row['blocked_s']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
