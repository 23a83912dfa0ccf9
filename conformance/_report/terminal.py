"""Human-readable renderings of a results JSON: the terminal table and Markdown."""

from __future__ import annotations

from typing import Any

from sessionstate.conformance.clauses import all_clauses

__all__ = ["clip", "markdown", "ordered", "styled_table", "summary_lines", "table_lines"]

#: How much of a clause's note a table row shows (the whole note is in the JSON).
NOTE_WIDTH = 90

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
        f"devices: {devices}"
        + (
            f" (left out: {', '.join(env['devices_left_out'])})"
            if env.get("devices_left_out")
            else ""
        ),
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


def ordered(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The clauses as a reader wants them: failures first, then the clauses not checked to
    the end, then the rest; each band in spec order."""
    band = {"failed": 0, "error": 0, "unchecked": 1}
    spec = {cid: n for n, cid in enumerate(all_clauses())}
    return sorted(
        results["clauses"].items(),
        key=lambda item: (band.get(item[1]["outcome"], 2), spec.get(item[0], len(spec))),
    )


def clip(text: str, width: int = NOTE_WIDTH) -> str:
    """``text`` on one line, at most ``width`` characters: cut at a word boundary, with an
    ellipsis, when it is longer (mid-word only when its first word alone is too long)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def summary_lines(results: dict[str, Any]) -> list[str]:
    """The clause table under a rule, as ``sessionstate check`` prints it."""
    return ["", "=" * 78, *table_lines(results)]


def table_lines(results: dict[str, Any]) -> list[str]:
    """What is under test, one row per clause (id, level, outcome, tests, seconds, note),
    failures first, then the warnings and the verdict."""
    return [line for line, _ in styled_table(results)]


def styled_table(results: dict[str, Any]) -> list[tuple[str, str]]:
    """``table_lines`` with what each line is, for colouring: a row's clause outcome,
    ``"warning"``, ``"verdict"``, or ``""`` for the header and rules."""
    lines = [(line, "") for line in [*_header(results), "-" * 78]]
    head = f"{'clause':<10} {'level':<7} {'outcome':<9} {'tests':>5} {'seconds':>8}  note"
    lines.append((head, ""))
    for cid, clause in ordered(results):
        note = clause["message"] if clause["outcome"] != "passed" else ""
        row = (
            f"{cid:<10} {clause['level']:<7} {_MARK[clause['outcome']]:<9} "
            f"{len(clause['tests']):>5} {clause['seconds']:>8.2f}  {clip(note)}"
        )
        lines.append((row.rstrip(), clause["outcome"]))
    lines.append(("-" * 78, ""))
    should = [
        cid
        for cid, c in results["clauses"].items()
        if c["level"] == "SHOULD" and c["outcome"] in ("failed", "error")
    ]
    if should and not results["strict"]:
        warning = f"warning: SHOULD clauses failed: {', '.join(should)} (--strict fails on them)"
        lines.append((warning, "warning"))
    for entry in results["unmatched_expectations"]:
        lines.append((f"warning: expectation {entry} matched no test or clause", "warning"))
    interrupted = " after an interruption" if results.get("interrupted") else ""
    verdict = (
        f"verdict: {_verdict_word(results)} ({_counts(results)}) "
        f"in {results['seconds']:.1f} s{interrupted}"
    )
    lines.append((verdict, "verdict"))
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
    for cid, clause in ordered(results):
        note = clause["message"] if clause["outcome"] != "passed" else ""
        note = clip(note, 200).replace("|", "\\|")
        out.append(
            f"| {cid} | {clause['level']} | {icon[clause['outcome']]} {clause['outcome']} "
            f"| {len(clause['tests'])} | {clause['seconds']:.2f} | {note} |"
        )
    out += ["", f"**{_counts(results)}** in {results['seconds']:.1f} s", ""]
    return "\n".join(out)
