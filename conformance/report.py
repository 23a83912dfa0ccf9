"""Human-readable renderings of a results JSON: the terminal table and Markdown."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown", "summary_lines"]

_MARK = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "xfailed": "XFAIL",
    "unchecked": "UNCHECKED",
    "skipped": "skip",
}


def _header(results: dict[str, Any]) -> list[str]:
    env = results["environment"]
    devices = ", ".join(
        d["name"] + (" (simulated)" if d["simulated"] else "") for d in env["devices"]
    )
    return [
        f"subject: {results['subject']} ({results['target']})",
        f"suite: sessionstate {results['suite_version']}, profile {results['profile']}"
        + (f", seed {results['seed']}" if results.get("seed") is not None else ""),
        f"torch {env['torch']}, numpy {env['numpy']}, hypothesis {env['hypothesis']}",
        f"devices: {devices}",
        f"capabilities: {', '.join(results['capabilities']) or '(none)'}",
    ]


def _counts(results: dict[str, Any]) -> str:
    tally: dict[str, int] = {}
    for clause in results["clauses"].values():
        tally[clause["outcome"]] = tally.get(clause["outcome"], 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(tally.items()))


def _verdict_word(results: dict[str, Any]) -> str:
    """The verdict as the exit status has it: under ``--strict`` an expectation that
    matched nothing fails the run (exit 1), whatever the clauses' verdict says."""
    unmatched = len(results["unmatched_expectations"])
    if results["strict"] and unmatched and results["verdict"] != "non-conformant":
        entries = "expectation" if unmatched == 1 else "expectations"
        return f"FAILED (--strict: {unmatched} {entries} matched no test or clause)"
    return str(results["verdict"]).upper()


def summary_lines(results: dict[str, Any]) -> list[str]:
    """One row per clause (id, level, outcome, tests, seconds), then the verdict."""
    lines = ["", "=" * 78, *_header(results), "-" * 78]
    lines.append(f"{'clause':<10} {'level':<7} {'outcome':<9} {'tests':>5} {'seconds':>8}  note")
    for cid, clause in results["clauses"].items():
        note = clause["message"] if clause["outcome"] != "passed" else ""
        lines.append(
            f"{cid:<10} {clause['level']:<7} {_MARK[clause['outcome']]:<9} "
            f"{len(clause['tests']):>5} {clause['seconds']:>8.2f}  {note[:90]}"
        )
    lines.append("-" * 78)
    should = [
        cid
        for cid, c in results["clauses"].items()
        if c["level"] == "SHOULD" and c["outcome"] in ("failed", "error")
    ]
    if should and not results["strict"]:
        lines.append(
            f"warning: SHOULD clauses failed: {', '.join(should)} (--strict fails on them)"
        )
    for entry in results["unmatched_expectations"]:
        lines.append(f"warning: expectation {entry} matched no test or clause")
    lines.append(
        f"verdict: {_verdict_word(results)} ({_counts(results)}) in {results['seconds']:.1f} s"
    )
    return lines


def markdown(results: dict[str, Any]) -> str:
    """The summary as a Markdown document, e.g. for a CI job summary."""
    icon = {
        "passed": "✅",
        "failed": "❌",
        "error": "💥",
        "xfailed": "⚠️",
        "unchecked": "❔",
        "skipped": "⏭️",
    }
    out = [f"## sessionstate conformance: `{results['subject']}` is {results['verdict']}", ""]
    out += [f"- {line}" for line in _header(results)]
    out += [
        "",
        "| clause | level | outcome | tests | seconds | note |",
        "|---|---|---|---|---|---|",
    ]
    for cid, clause in results["clauses"].items():
        note = clause["message"].replace("|", "\\|") if clause["outcome"] != "passed" else ""
        out.append(
            f"| {cid} | {clause['level']} | {icon[clause['outcome']]} {clause['outcome']} "
            f"| {len(clause['tests'])} | {clause['seconds']:.2f} | {note[:200]} |"
        )
    out += ["", f"**{_counts(results)}** in {results['seconds']:.1f} s", ""]
    return "\n".join(out)
