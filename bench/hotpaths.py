"""Hot-path ratios of the reference against hand-written floors, measured side by side.

Each ratio is subject time / floor time within one round, rounds interleaved
so machine noise hits both; we report the median and the spread over rounds.
Time is the CPU time of the benchmarking thread (``time.thread_time``): on a
shared machine wall time also counts the moments another process held the core.

The hit and miss floors come in two shapes. ``inline``: the floor's dict work
written straight into the timed callable, as the issue words it. ``call``: the
same work in a function called with the key, exactly as the subject's method is
called; the difference between the two is one Python call, which every API pays.
Run: ``python bench/hotpaths.py [--quick] [--out BENCHMARKS-hotpaths.json]``
(``nox -s bench`` runs it and renders BENCHMARKS.md and the PNG).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from sessionstate.reference import LatentBuffer, SessionStateManager, device_bytes


def _time(fn: Callable[[], Any], number: int) -> float:
    start = time.thread_time()
    for _ in range(number):
        fn()
    return (time.thread_time() - start) / number


def ratio(
    subject: Callable[[], Any], floor: Callable[[], Any], number: int, rounds: int
) -> dict[str, float]:
    """Median and spread of subject/floor over interleaved rounds."""
    ratios, subject_s, floor_s = [], [], []
    for _ in range(rounds):
        f = _time(floor, number)
        s = _time(subject, number)
        ratios.append(s / f)
        subject_s.append(s)
        floor_s.append(f)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
    return {
        "ratio_median": statistics.median(ratios), "ratio_q1": q[0], "ratio_q3": q[-1],
        "subject_us": statistics.median(subject_s) * 1e6, "floor_us": statistics.median(floor_s) * 1e6,
    }  # fmt: skip


def bench_hit(number: int, rounds: int) -> dict[str, dict[str, float]]:
    manager = SessionStateManager(max_sessions=64)
    keys = [f"s{i}" for i in range(64)]
    for key in keys:
        manager.get_or_create_session(key)
    table: OrderedDict[str, object] = OrderedDict((k, object()) for k in keys)
    lock = threading.Lock()
    it = iter(range(10**12))

    def floor_inline() -> object:
        key = keys[next(it) % 64]
        with lock:
            value = table[key]
            table.move_to_end(key)
        return value

    def floor_get(key: str) -> object:
        with lock:
            value = table[key]
            table.move_to_end(key)
        return value

    def subject() -> object:
        return manager.get_or_create_session(keys[next(it) % 64])

    return {
        "inline": ratio(subject, floor_inline, number, rounds),
        "call": ratio(subject, lambda: floor_get(keys[next(it) % 64]), number, rounds),
    }


def bench_miss_evict(number: int, rounds: int) -> dict[str, dict[str, float]]:
    table: OrderedDict[str, object] = OrderedDict()
    lock = threading.Lock()
    counter = iter(range(10**12))
    fresh = [f"n{i}" for i in range(number * rounds * 4 + 10)]

    def floor_get(key: str) -> object:
        with lock:
            value = table.get(key)
            if value is None:
                value = table[key] = object()
                while len(table) > 64:
                    table.popitem(last=False)
        return value

    def floor_inline() -> object:
        key = fresh[next(counter)]
        with lock:
            value = table.get(key)
            if value is None:
                value = table[key] = object()
                while len(table) > 64:
                    table.popitem(last=False)
        return value

    results = {}
    for shape, floor in (
        ("inline", floor_inline),
        ("call", lambda: floor_get(fresh[next(counter)])),
    ):
        manager = SessionStateManager(max_sessions=64)

        def subject(manager: SessionStateManager = manager) -> object:
            return manager.get_or_create_session(fresh[next(counter)])

        results[shape] = ratio(subject, floor, number, rounds)
    return results


def make_tensors(n: int) -> list[torch.Tensor]:
    """n tensors, about four views per storage, on cpu and meta."""
    bases = [
        torch.zeros(64) if i % 2 else torch.empty(64, device="meta") for i in range(n // 4 + 1)
    ]
    views = [
        b[i % 4 :] if b.device.type == "cpu" else b.narrow(0, i % 4, 8) for i, b in enumerate(bases)
    ]
    out: list[torch.Tensor] = []
    for b, v in zip(bases, views, strict=True):
        out += [b, v, b.t() if b.ndim == 2 else b.view(-1), v]
    return out[:n]


def accounting_floor(tensors: list[torch.Tensor]) -> dict[str, int]:
    seen: set[object] = set()
    totals: dict[str, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        if storage in seen:
            continue
        seen.add(storage)
        device = str(t.device)
        totals[device] = totals.get(device, 0) + storage.nbytes()
    return totals


def bench_accounting(sizes: list[int], rounds: int) -> dict[str, Any]:
    rows = []
    for n in sizes:
        tensors = make_tensors(n)
        assert device_bytes(tensors, set()) == accounting_floor(tensors)
        number = max(1, 20000 // n)
        row = ratio(
            lambda tensors=tensors: device_bytes(tensors, set()),
            lambda tensors=tensors: accounting_floor(tensors),
            number,
            rounds,
        )
        rows.append({"n": n, **row})
    xs = np.log([r["n"] for r in rows])
    ys = np.log([r["subject_us"] for r in rows])
    exponent = float(np.polyfit(xs, ys, 1)[0])
    return {"rows": rows, "exponent": exponent}


def bench_stats(rounds: int) -> dict[str, float]:
    manager = SessionStateManager(max_sessions=64)
    shared = torch.zeros(32)
    for s in range(64):
        session = manager.get_or_create_session(s)
        frames = session.get_or_create("frames", LatentBuffer, LatentBuffer)
        frames.allocate()
        for i in range(100):
            frames.append(torch.zeros(8) if i % 10 else shared)
    held: list[float] = []

    class TimedLock:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.t0 = 0.0

        def __enter__(self) -> None:
            self.lock.acquire()
            self.t0 = time.thread_time()

        def __exit__(self, *exc: object) -> None:
            held.append(time.thread_time() - self.t0)
            self.lock.release()

    manager._lock = TimedLock()  # instrument the held time only
    by_device = ratio(manager.stats, manager.nbytes_by_device, 5, rounds)
    held.clear()
    for _ in range(rounds):
        manager.stats()
    hold = statistics.median(held)
    return {**by_device, "lock_held_ms": hold * 1e3, "per_tensor_ns": hold / 6400 * 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    parser.add_argument("--out", default="bench/results-hotpaths.json")
    args = parser.parse_args()
    rounds = 7 if args.quick else 21
    sizes = [100, 1000, 10000] if args.quick else [100, 300, 1000, 3000, 10000, 30000, 100000]
    results = {
        "hit": bench_hit(20000, rounds),
        "miss_evict": bench_miss_evict(5000, rounds),
        "accounting": bench_accounting(sizes, rounds),
        "stats": bench_stats(rounds),
        "torch": torch.__version__,
    }
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
