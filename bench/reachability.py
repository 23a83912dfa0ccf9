"""How often the manager machines are in the states the byte and order clauses are about.

A clause can only fail in a state that reaches its statement: ACCT-11's "evicted
sessions are not counted" needs an evicted session that holds bytes, STATS-2's
"total_nbytes is their sum" with sharing needs two table sessions sharing a
storage, DROP-3's "the order of the others" needs an eviction after a drop. This
runs each machine against the reference under each profile and counts, over all
at-rest checks, how many were in each state. It also counts, over drawn inputs, how
many exercise each Python rule the ENV and KEY clauses rest on
(``conformance.input_reach``: MAX_SESSIONS values per ``int()`` rule, groups of ids
per KEY family). Writes bench/results-reachability.json (rendered into
BENCHMARKS.md by render.py).

    python bench/reachability.py [--profiles quick ci] [--examples 1000] [--inputs-only]

It also draws the ACCT strategies, derandomized, and counts the share of drawn
values in each dtype family (``strategies.allocations``), of each layout a fast
path could miss (``values_from``: aliases, subclasses, offsets, strides), and of
nested values holding each container kind (``nested_containers``), walked by
ACCT-8 or counting nothing. ``tests/conformance/test_value_reach.py`` holds floors
for these shares.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, run_state_machine_as_test

from sessionstate.conformance._harness.devices import allocate
from sessionstate.conformance._harness.profiles import load_profile
from sessionstate.conformance._machine.manager import (
    ContentsMachine,
    CrowdedMachine,
    ManagerMachine,
    OrderMachine,
)
from sessionstate.conformance._model.dtypes import FAMILIES, KINDS
from sessionstate.conformance._model.manager import SessionModel
from sessionstate.conformance.input_reach import ID_FAMILIES, MAX_RULES, id_reach, max_value_reach
from sessionstate.conformance.strategies import (
    CONTAINER_KINDS,
    VALUE_KINDS,
    allocations,
    container_kinds,
    nested_containers,
    scalars,
    value_kinds,
    values_from,
)
from sessionstate.fixtures.reference_subject import subject

HERE = Path(__file__).resolve().parent

#: state name -> what it means, in the order the table shows them.
STATES = {
    "evicted holds bytes": "an evicted session (a holder keeps it) holds non-zero bytes",
    "table shares a storage": "two sessions in the table hold one allocation",
    "two meta storages": "the table holds two distinct non-empty meta allocations",
    "eviction after a drop": "a session was evicted after a successful drop",
    "evicted id dropped": "drop_session of an id whose session was evicted",
}


def _labels(session: SessionModel) -> set[str]:
    return {h.allocation.label for h in session.held() if h.allocation.nbytes}


def observe(machine: Any, counts: Counter[str]) -> None:
    """Count the states ``machine`` (at rest) is in."""
    model = machine.model
    counts["at-rest checks"] += 1
    if any(s.fate.startswith("evicted") and _labels(s) for s in model.sessions):
        counts["evicted holds bytes"] += 1
    table = list(model.table.values())
    if any(_labels(a) & _labels(b) for i, a in enumerate(table) for b in table[i + 1 :]):
        counts["table shares a storage"] += 1
    metas = {
        h.allocation.label
        for s in table
        for h in s.held()
        if h.allocation.device == "meta" and h.allocation.nbytes
    }
    if len(metas) >= 2:
        counts["two meta storages"] += 1
    if _evicted_after_drop(machine.trace):
        counts["eviction after a drop"] += 1
    if any(s.fate == "evicted, then its id dropped" for s in model.sessions):
        counts["evicted id dropped"] += 1


def _evicted_after_drop(trace: list[Any]) -> bool:
    """Whether the trace shows an eviction after the first successful drop."""
    evictions, at_drop = 0, None
    for call, _, seen in trace:
        if call == "counters":
            evictions = seen["evictions"]
            if at_drop is not None and evictions > at_drop:
                return True
        elif call == "drop_session" and seen and at_drop is None:
            at_drop = evictions
    return False


def instrumented(base: type[ContentsMachine], counts: Counter[str]) -> type[ContentsMachine]:
    """``base`` with one more invariant (rules are inherited untouched)."""

    class Counting(base):  # type: ignore[valid-type, misc]
        @invariant()
        def count_states(self) -> None:
            observe(self, counts)

    Counting.__name__ = base.__name__
    return Counting


def measure(profile: str) -> dict[str, dict[str, int]]:
    load_profile(profile)
    results = {}
    for base in (ContentsMachine, CrowdedMachine):
        counts: Counter[str] = Counter()
        machine = instrumented(base, counts)
        run_state_machine_as_test(lambda m=machine: m(subject))  # type: ignore[misc]
        results[base.__name__] = dict(counts)
    return results


def measure_inputs(examples: int) -> dict[str, Any]:
    """The ENV and KEY input reach over ``examples`` draws each, rules in table order."""
    values, ids = max_value_reach(examples), id_reach(examples)
    return {
        "examples": examples,
        "MAX_SESSIONS values": {"total": values["values"], **{r: values[r] for r in MAX_RULES}},
        "groups of ids": {"total": ids["groups"], **{f: ids[f] for f in ID_FAMILIES}},
    }


#: The step counts and example counts of the profiles, for ``reach_runs.program_reach``.
PROFILE_SIZES = {
    "quick": {"max_examples": 15, "stateful_step_count": 20},
    "ci": {"max_examples": 60, "stateful_step_count": 30},
}
HISTORIES_PER_KIND = 100


def measure_runs(profiles: list[str]) -> dict[str, Any]:
    """Long runs of hits then evictions per LRU program, and a hit beside a miss at
    capacity per threaded history (``reach_runs``): [reached, total] each."""
    import reach_runs

    programs = {
        profile: {
            machine.__name__: list(
                reach_runs.program_reach(machine, subject, **PROFILE_SIZES[profile])
            )
            for machine in (ManagerMachine, OrderMachine)
        }
        for profile in profiles
        if profile in PROFILE_SIZES
    }
    histories = {
        kind: list(reach_runs.history_reach(subject, kind, HISTORIES_PER_KIND))
        for kind in reach_runs.HISTORIES
    }
    return {"programs": programs, "histories": histories}


#: Values drawn per strategy for the shares, derandomized (the same values every run).
VALUE_DRAWS = 1000


def _drawn(strategy: st.SearchStrategy[Any], draws: int) -> list[Any]:
    """``draws`` values of ``strategy``, the same every run."""
    out: list[Any] = []

    @settings(max_examples=draws, derandomize=True, database=None, phases=[Phase.generate])
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out


def value_shares(draws: int = VALUE_DRAWS) -> dict[str, dict[str, float]]:
    """Share of drawn values per dtype family, layout and container kind (see module doc)."""
    roots = _drawn(allocations(), draws)
    families = Counter(KINDS[str(h.value.dtype).removeprefix("torch.")].family for h in roots)
    views = _drawn(values_from(allocations().map(lambda h: [h])), draws)
    layouts = Counter(k for h in views for k in value_kinds(h))
    leaves = st.one_of(st.sampled_from([allocate("cpu", (2,)), 1, "s"]), scalars())
    nested = _drawn(nested_containers(leaves), draws)
    containers = Counter(k.__name__ for n in nested for k in container_kinds(n.value))
    return {
        "dtype family": {f: families[f] / len(roots) for f in FAMILIES},
        "layout": {k: layouts[k] / len(views) for k in VALUE_KINDS},
        "container kind": {
            k.__name__: containers[k.__name__] / len(nested) for k in CONTAINER_KINDS
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["quick", "ci"])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument(
        "--inputs-only", action="store_true", help="measure the inputs, keep the machines' figures"
    )
    args = parser.parse_args()
    results = HERE / "results-reachability.json"
    if args.inputs_only and results.exists():
        data = json.loads(results.read_text())
        data["inputs"] = measure_inputs(args.examples)
    else:
        data = {
            "states": STATES,
            "profiles": {p: measure(p) for p in args.profiles},
            "runs": measure_runs(args.profiles),
            "inputs": measure_inputs(args.examples),
            "values": {"draws": VALUE_DRAWS, "shares": value_shares()},
        }
    results.write_text(json.dumps(data, indent=2) + "\n")
    for profile, machines in data["profiles"].items():
        for name, counts in machines.items():
            print(profile, name, counts)
    print(data["inputs"])
    for what, shares in data.get("values", {}).get("shares", {}).items():
        print(what, {k: f"{v:.0%}" for k, v in shares.items()})


if __name__ == "__main__":
    main()
