"""How often a run of the large-world machines crosses each size threshold real backends have.

A backend changes behaviour at its own constants; a bug that lives past one passes every
program that stays below it. For each threshold the share of *runs* that cross it: a run
is what one profile runs of ``test_large_world_machine`` and ``test_raising_machine``
(``programs(max_examples)`` programs of each, ``stateful_step_count`` steps), on the
reference, with a fresh random seed per run (the profiles derandomize, so one seed is one
run; the share says how likely a run at another seed, or a subject that steers the search
elsewhere, is to cross it). Thresholds, read from each program's trace:

* ``65th session``: a miss while the table holds 64 or more sessions;
* ``cap above 128 in use``: a cap of 129 or more with 129 or more sessions resident;
* ``256-character prefix``: two distinct ids sharing their first 256 characters;
* ``1,024 lookups``: 1,025 or more ``get_or_create_session`` calls, an eviction after the
  1,024th;
* ``raise then eviction``: a raise that returned True, then an eviction;
* ``a reused address`` (``address_reuse``): how often a freed block's address goes to the
  next allocation of its size, per device, in ``test_acct_reuse.py``'s explicit cases, which
  every run makes.

``tests/conformance/test_reach.py`` holds a floor under the quick shares;
``python bench/threshold_reach.py`` writes ``bench/results-thresholds.json``, which
``bench/render.py`` renders into BENCHMARKS.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hypothesis.core
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from sessionstate.conformance._machine.bulk import LargeWorldMachine, RaisingMachine, programs
from sessionstate.conformance._model.manager import Observation

__all__ = ["THRESHOLDS", "crossed", "measure", "run_reach"]

HERE = Path(__file__).resolve().parent
THRESHOLDS = (
    "65th session",
    "cap above 128 in use",
    "256-character prefix",
    "1,024 lookups",
    "raise then eviction",
)
PROFILES = {
    "quick": {"max_examples": 15, "stateful_step_count": 20},
    "ci": {"max_examples": 60, "stateful_step_count": 30},
}


def crossed(trace: Sequence[Observation], caps: Sequence[int]) -> set[str]:
    """The thresholds one program's ``trace`` crossed; ``caps`` are the caps it was run at
    (the first, then each raised one)."""
    found: set[str] = set()
    size, gets, evictions, largest = 0, 0, 0, 0
    after_lookups: int | None = None
    after_raise: int | None = None
    prefixes: dict[str, str] = {}
    for call, session_id, seen in trace:
        if call == "len" and isinstance(seen, int):
            size = seen
            largest = max(largest, seen)
        elif call == "get_or_create_session":
            gets += 1
            if not seen and size >= 64:
                found.add("65th session")
            if gets == 1025 and after_lookups is None:
                after_lookups = evictions
            if isinstance(session_id, str) and len(session_id) > 256:
                head = session_id[:256]
                if prefixes.setdefault(head, session_id) != session_id:
                    found.add("256-character prefix")
        elif call == "raise_max_sessions" and seen is True and after_raise is None:
            after_raise = evictions
        elif call == "counters" and isinstance(seen, dict):
            evictions = seen["evictions"]
            if after_lookups is not None and evictions > after_lookups:
                found.add("1,024 lookups")
            if after_raise is not None and evictions > after_raise:
                found.add("raise then eviction")
    if max(caps) >= 129 and largest >= 129:
        found.add("cap above 128 in use")
    return found


def run_reach(subject: Any, profile: dict[str, int], seed: int | None) -> set[str]:
    """The thresholds one run crosses: every program of both machines at ``seed`` (None:
    derandomized, as the suite's profiles run)."""
    found: set[str] = set()
    for machine in (LargeWorldMachine, RaisingMachine):

        class Recording(machine):  # type: ignore[valid-type, misc]
            def teardown(self) -> None:
                caps = [self.model.lru.initial_max_sessions, self.model.max_sessions]
                found.update(crossed(self.trace, caps))
                super().teardown()

        Recording.__name__ = machine.__name__
        sizes = {**profile, "max_examples": programs(profile["max_examples"])}  # as the tests
        chosen = settings(database=None, deadline=None, derandomize=seed is None, **sizes)
        hypothesis.core.global_force_seed = seed  # what --hypothesis-seed sets
        try:
            run_state_machine_as_test(lambda: Recording(subject), settings=chosen)
        finally:
            hypothesis.core.global_force_seed = None
    return found


def measure(subject: Any, profile: str, runs: int) -> tuple[dict[str, float], float]:
    """The share of ``runs`` runs at ``profile`` that cross each threshold, and the CPU
    seconds a run took."""
    counts: Counter[str] = Counter()
    started = time.process_time()
    for seed in range(runs):
        counts.update(run_reach(subject, PROFILES[profile], seed))
    seconds = (time.process_time() - started) / runs
    return {name: counts[name] / runs for name in THRESHOLDS}, seconds


def address_reuse(tries: int = 100) -> dict[str, float]:
    """Per device, the share of frees whose address the next allocation of the same size got,
    as ``test_acct_reuse.py``'s explicit cases make them (1 and 4 KiB on cpu, 4 KiB on each
    simulated CUDA device): the threshold "a reused address" those cases cross in every run."""
    import torch

    from sessionstate.conformance._harness.devices import allocate, available_devices

    shares: dict[str, float] = {}
    cases = [("cpu", 256), ("cpu", 1024)]
    cases += [(d, 1024) for d in available_devices() if d.startswith("cuda")]
    for device, numel in cases:
        reused = 0
        for _ in range(tries):
            freed = allocate(device, (numel,), "float32")
            assert isinstance(freed.value, torch.Tensor)
            address = freed.value.untyped_storage().data_ptr()
            del freed
            after = allocate(device, (numel,), "float32", fill=1)
            assert isinstance(after.value, torch.Tensor)
            reused += after.value.untyped_storage().data_ptr() == address
        shares[f"{device}, {numel * 4} B"] = reused / tries
    return shares


def main(argv: Sequence[str]) -> None:
    """``python bench/threshold_reach.py [QUICK_RUNS [CI_RUNS]]`` (40 and 10 by default)."""
    from sessionstate.fixtures.reference_subject import subject

    runs = {"quick": int(argv[0]) if argv else 40, "ci": int(argv[1]) if len(argv) > 1 else 10}
    results: dict[str, Any] = {"runs": runs, "seconds": {}}
    for profile, count in runs.items():
        results[profile], results["seconds"][profile] = measure(subject, profile, count)
    results["address reuse"] = address_reuse()
    (HERE / "results-thresholds.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
