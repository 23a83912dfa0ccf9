"""Render bench/results-*.json into BENCHMARKS.md and bench/scaling.png."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent


def _load(name: str) -> Any:
    path = HERE / f"results-{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def hotpaths_section(data: dict[str, Any]) -> list[str]:
    def row(label: str, r: dict[str, float], target: str) -> str:
        return (f"| {label} | {r['ratio_median']:.2f}x | {r['ratio_q1']:.2f} to {r['ratio_q3']:.2f} "
                f"| {r['subject_us']:.2f} | {r['floor_us']:.2f} | {target} |")  # fmt: skip

    acct = data["accounting"]
    out = [
        "## Reference hot paths", "",
        f"torch {data['torch']}. Ratio = reference CPU time / floor CPU time in the same round;",
        "median and interquartile range over interleaved rounds. Hit and miss floors: `call` is the",
        "floor's dict work in a function called with the key, as the manager's method is called;",
        "`inline` writes it into the timed loop, so the reference also pays one Python call more.", "",
        "| path | ratio | IQR | reference µs | floor µs | target |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for path, label, target in (("hit", "hit: get_or_create_session (resident id)", "≤ 1.3x"),
                                ("miss_evict", "miss with eviction", "≤ 1.5x")):  # fmt: skip
        shapes = data[path] if "call" in data[path] else {"inline": data[path]}
        out += [row(f"{label}, {shape} floor", r, target) for shape, r in shapes.items()]
    for r in acct["rows"]:
        out.append(row(f"device_bytes, N={r['n']}", r, "≤ 1.5x"))
    s = data["stats"]
    out += [
        "", f"Accounting scaling exponent (log-log fit of time over N): **{acct['exponent']:.3f}** "
        "(target 1.00 ± 0.05). Curve: `bench/scaling.png`.", "",
        f"`stats()` over 64 sessions x 100 tensors holds the lock **{s['lock_held_ms']:.2f} ms** "
        f"({s['per_tensor_ns']:.0f} ns per tensor); `stats()` / `nbytes_by_device()` = "
        f"{s['ratio_median']:.2f}x.", "",
    ]  # fmt: skip
    return out


def suite_section(data: dict[str, Any]) -> list[str]:
    out = [
        "## Suite speed (reference, default profile, 2 cores)", "",
        f"- whole suite, one process: **{data['serial_seconds']:.1f} s** (target < 60 s)",
        f"- with xdist, 2 workers: {data['xdist2_seconds']:.1f} s, speed-up "
        f"**{data['xdist_speedup']:.2f}x** (target ≥ 1.6x)"
        + (f", median of {len(data['rounds'])} interleaved rounds (range "
           f"{data['xdist_speedup_range'][0]:.2f} to {data['xdist_speedup_range'][1]:.2f})"
           if "xdist_speedup_range" in data else ""),
        *([f"- start-up each process pays before its first test (`--collect-only`): "
           f"{data['startup_seconds']:.1f} s; with two workers paying it in parallel, the "
           f"speed-up cannot exceed (S + T) / (S + T/2) = **{data['xdist_speedup_bound']:.2f}x** "
           "for this suite"] if "startup_seconds" in data else []),
        f"- stateful throughput: {data['steps']} steps in {data['seconds']:.1f} s = "
        f"**{data['steps_per_second']:.0f} steps/s**", "",
    ]  # fmt: skip
    if "invocations" in data:
        out += [
            "By invocation (median of interleaved rounds; `pytest` prints the header and summary, "
            "`sessionstate check` validates the subject and writes the JSON it summarises):", "",
            "| invocation | one process | 2 workers | speed-up | range |",
            "|---|---|---|---|---|",
            *(f"| `{name}` | {r['serial_seconds']:.1f} s | {r['xdist2_seconds']:.1f} s | "
              f"{r['xdist_speedup']:.2f}x | {r['xdist_speedup_range'][0]:.2f} to "
              f"{r['xdist_speedup_range'][1]:.2f} |" for name, r in data["invocations"].items()),
            "",
        ]  # fmt: skip
    if "timeline" in data:
        out += [
            "One 2-worker `pytest -q` run, seconds from launch (bench/timeline.py):", "",
            "| process | configured | collected | tests start | tests end | unconfigured "
            "| in tests | CPU |",
            "|---|---|---|---|---|---|---|---|",
            *("| " + " | ".join([str(row["process"])] + [_seconds(row.get(key)) for key in (
                "configured", "collected", "tests_start", "tests_end", "unconfigured",
                "test_seconds", "cpu_seconds")]) + " |" for row in data["timeline"]),
            "",
        ]  # fmt: skip
    return out


def reachability_section(data: dict[str, Any]) -> list[str]:
    """How often each machine's at-rest checks were in each state a clause is about."""
    states = data["states"]
    lines = ["", "## Reachability of the byte and order states", "",
             "Share of at-rest checks of the contents machines, run against the reference, "
             "in each state (`python bench/reachability.py`):", ""]  # fmt: skip
    head = "| profile | machine | at-rest checks | " + " | ".join(states) + " |"
    lines += [head, "|---" * (len(states) + 3) + "|"]
    for profile, machines in data["profiles"].items():
        for name, counts in machines.items():
            total = counts.get("at-rest checks", 0)
            cells = [f"{counts.get(k, 0)} ({100 * counts.get(k, 0) / max(total, 1):.0f} %)"
                     for k in states]  # fmt: skip
            lines.append(f"| {profile} | {name} | {total} | " + " | ".join(cells) + " |")
    lines += ["", *[f"- *{k}*: {v}" for k, v in states.items()]]
    if "inputs" in data:
        lines += inputs_section(data["inputs"])
    return lines


def inputs_section(inputs: dict[str, Any]) -> list[str]:
    """How many drawn ENV and KEY inputs exercise each Python rule their clauses rest on."""
    lines = ["", "### Reach of the ENV and KEY inputs", "",
             f"Of {inputs['examples']} derandomised draws of each strategy, how many exercise "
             "each rule (`conformance/input_reach.py`; `tests/conformance/test_input_reach.py` "
             "holds each share above a floor):"]  # fmt: skip
    for kind in ("MAX_SESSIONS values", "groups of ids"):
        counts = dict(inputs[kind])
        total = counts.pop("total")
        lines += ["", f"| {kind} ({total}) | " + " | ".join(counts) + " |",
                  "|---" * (len(counts) + 1) + "|",
                  "| share | " + " | ".join(f"{100 * n / max(total, 1):.1f} %"
                                            for n in counts.values()) + " |"]  # fmt: skip
    return lines


def runs_section(runs: dict[str, Any]) -> list[str]:
    """How often LRU programs hold long runs of hits then evictions, and threaded histories
    a hit beside a miss at capacity or (admission control) newcomers racing for one slot
    (bench/reach_runs.py)."""

    def share(pair: list[int]) -> str:
        return f"{pair[0]}/{pair[1]} ({100 * pair[0] / max(pair[1], 1):.0f} %)"

    lines = ["", "## Reachability of long runs and races at capacity", "",
             "LRU programs (against the reference) holding 16 hits on at most 3 sessions, then "
             "2 evictions; threaded histories in which a hit and a miss on a full table overlap, "
             "and (admission control) in which a miss takes the last free slot while a refused "
             "miss on another id overlaps it (`python bench/reachability.py`, "
             "`bench/reach_runs.py`):", "",
             "| profile | machine | programs reaching |", "|---|---|---|"]  # fmt: skip
    for profile, machines in runs.get("programs", {}).items():
        lines += [f"| {profile} | {name} | {share(pair)} |" for name, pair in machines.items()]
    lines += ["", "| histories | a hit beside a miss at capacity | newcomers racing for one slot |",
              "|---|---|---|"]  # fmt: skip
    for kind, (hit_beside_miss, racing, total) in runs.get("histories", {}).items():
        newcomers = share([racing, total]) if kind.startswith("LOCK-6") else ""  # admission
        lines.append(f"| {kind} | {share([hit_beside_miss, total])} | {newcomers} |")
    return lines


def value_reach_section(values: dict[str, Any]) -> list[str]:
    """The share of values the ACCT strategies draw in each dtype family, layout and
    container kind."""
    lines = ["", "## Reach of the ACCT value strategies", "",
             f"Share of {values['draws']} values drawn (derandomized) by each strategy in each "
             "kind (`python bench/reachability.py`; floors in "
             "`tests/conformance/test_value_reach.py`):", ""]  # fmt: skip
    for what, shares in values["shares"].items():
        lines += [f"| {what} | share |", "|---|---|"]
        lines += [f"| {kind} | {100 * share:.1f} % |" for kind, share in shares.items()]
        lines.append("")
    return lines[:-1]


def thresholds_section(data: dict[str, Any]) -> list[str]:
    """The share of runs crossing each size threshold (bench/threshold_reach.py)."""
    profiles = [p for p in ("quick", "ci") if p in data]
    runs = data.get("runs", {})
    lines = [
        "",
        "## Reach of the size thresholds",
        "",
        "The share of runs of the large-world machines (`test_large_world_machine` and "
        "`test_raising_machine`, half of each profile's programs each, `programs()`, on the reference, one random "
        "seed a run) that cross each threshold real backends have (`python "
        "bench/threshold_reach.py`; the derandomized quick run is held to cross every one by "
        "`tests/conformance/test_reach.py`):",
        "",
        "| threshold | " + " | ".join(f"{p} ({runs.get(p, '?')} runs)" for p in profiles) + " |",
        "|---|" + "---|" * len(profiles),
    ]
    for name in data[profiles[0]]:
        cells = [f"{data[p][name] * 100:.0f} %" for p in profiles]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if "address reuse" in data:
        reuse = ", ".join(
            f"{case} {share * 100:.0f} %" for case, share in data["address reuse"].items()
        )
        lines += [
            "",
            "A reused address (ACCT-5 across a free): every run makes `test_acct_reuse.py`'s "
            "explicit cases, where the next allocation of a freed block's size got its address "
            f"in this share of tries: {reuse}.",
        ]
    if "seconds" in data:
        per_run = ", ".join(f"{p} {data['seconds'][p]:.1f} s" for p in profiles)
        lines += ["", f"CPU time a run, both machines: {per_run}."]
    return [*lines, ""]


def _seconds(value: Any) -> str:
    return "" if value is None else f"{value:.2f}"


def detection_section(runs: list[dict[str, Any]]) -> list[str]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_name.setdefault(run["name"], []).append(run)
    scope = runs[0].get("scope", "groups")
    out = [
        f"## Detection (zoo bugs, random seeds, default profile, `--clause` = the bug's {scope})", "",
        "| subject | kills | found | median s to 1st failure: from process start / searching "
        "| median stateful steps | max shrunk steps |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    found_all = 0
    medians, searches, shrunk_max = [], [], 0
    for name, group in sorted(by_name.items()):
        found = sum(r["found"] for r in group)
        found_all += found
        firsts = [r["first_failure"] for r in group if r.get("first_failure")]
        sec = _median([f["seconds"] for f in firsts])
        search = _median([f.get("search_seconds", f["seconds"]) for f in firsts])
        steps = _median([f["steps"] for f in firsts])
        shrunk = max((r.get("shrunk_steps", 0) for r in group), default=0)
        if firsts:  # a run found its bug without a timed first failure: no time to median
            medians.append(sec)
            searches.append(search)
        shrunk_max = max(shrunk_max, shrunk)
        out.append(f"| {name} | {', '.join(group[0]['kills'])} | {found}/{len(group)} "
                   f"| {sec:.2f} / {search:.2f} | {steps:.0f} | {shrunk} |")  # fmt: skip
    seeds = len({r["seed"] for r in runs})
    missed = [f"{r['name']} (seed {r['seed']})" for r in runs if not r["found"]]
    named = sum(r.get("named", r["found"]) for r in runs)
    reruns = sorted({r["name"] for r in runs if r.get("rerun")})
    out[2:2] = [
        f"**{found_all}/{len(runs)}** runs found their bug ({len(by_name)} subjects x {seeds} seeds)"
        f"{'; missed: ' + ', '.join(missed) if missed else ''}. Median over subjects of the "
        f"median time to the first failure: {statistics.median(medians):.2f} s from process start "
        f"(torch import and collection included), {statistics.median(searches):.2f} s of search "
        f"after collection; longest shrunk program {shrunk_max} steps. In {named}/{len(runs)} runs "
        "the first failure named a clause the bug declares (the others failed another clause "
        "first: a run stops at its first failing test).", "",
    ]  # fmt: skip
    if reruns:
        out[4:4] = [
            f"Rows re-run with the suite as it is now, after the first run missed one of their "
            f"seeds: {', '.join(reruns)} (see \"Misses found and closed\" below).", "",
        ]  # fmt: skip
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def plot(data: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["accounting"]["rows"]
    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(n, [r["subject_us"] for r in rows], "o-", label="reference device_bytes")
    ax.loglog(n, [r["floor_us"] for r in rows], "s--", label="floor (flat loop)")
    ax.set_xlabel("tensors (about 4 per storage)")
    ax.set_ylabel("µs per call")
    ax.set_title(f"Accounting scaling, exponent {data['accounting']['exponent']:.3f}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "scaling.png", dpi=100)


def main() -> None:
    lines = ["# Benchmarks", "", "Regenerate: `nox -s bench` (hot paths, suite speed) and "
             "`nox -s detection`; `nox -s mutation` writes MUTATION.md.", ""]  # fmt: skip
    hot, suite, detection = _load("hotpaths"), _load("suite"), _load("detection")
    if hot:
        lines += hotpaths_section(hot)
        plot(hot)
    if suite:
        lines += suite_section(suite)
    if detection:
        lines += detection_section(detection)
    reachability = _load("reachability")
    if reachability:
        lines += reachability_section(reachability)
        if "runs" in reachability:
            lines += runs_section(reachability["runs"])
        if "values" in reachability:
            lines += value_reach_section(reachability["values"])
    thresholds = _load("thresholds")
    if thresholds:
        lines += thresholds_section(thresholds)
    notes = HERE / "history.md"  # hand-written: before/after figures and what changed them
    if notes.exists():
        lines += ["", notes.read_text(encoding="utf-8").strip()]
    (ROOT / "BENCHMARKS.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
