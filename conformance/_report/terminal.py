"""Human-readable renderings of a results JSON: the terminal table and Markdown.

Every string that comes from the subject or the user (its name, the target, device and
capability names, the notes quoting what its code did, expectation entries) goes
through ``text.terminal_text`` in the table and ``text.markdown_cell`` in Markdown: it
can neither forge a line (a fake verdict) nor break a table row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sessionstate.conformance._harness import search
from sessionstate.conformance._report.text import markdown_cell, terminal_text
from sessionstate.conformance.clauses import all_clauses

__all__ = [
    "clip", "markdown", "ordered", "start_lines", "styled_table", "summary_lines", "table_lines",
]  # fmt: skip

#: How much of a clause's note a table row shows (the whole note is in the JSON).
NOTE_WIDTH = 90
#: At most this many unmatched expectations are named under the table (all are in the JSON).
UNMATCHED_LINES = 20

_MARK = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "xfailed": "XFAIL",
    "xpassed": "XPASS",
    "unchecked": "UNCHECKED",
    "skipped": "skip",
}


def _header(results: dict[str, Any], escape: Callable[[object], str]) -> list[str]:
    """What was under test, each value from the run passed through ``escape``."""
    env = results["environment"]
    devices = ", ".join(
        escape(d["name"]) + (" (simulated)" if d["simulated"] else "") for d in env["devices"]
    )
    left_out = ", ".join(escape(d) for d in env.get("devices_left_out") or [])
    capabilities = ", ".join(escape(c) for c in results["capabilities"])
    seed = f", seed {escape(results['seed'])}" if results.get("seed") is not None else ""
    hooks = results.get("hooks")
    own = ", ".join(escape(h) for h in hooks["own"]) or "none" if hooks else ""
    reference = ", ".join(escape(h) for h in hooks["reference"]) if hooks else ""
    hooks_line = [f"hooks: own {own}" + (f"; the reference's {reference}" if reference else "")]
    return [
        f"subject: {escape(results['subject'])} ({escape(results['target'])})",
        f"suite: sessionstate {escape(results['suite_version'])}, profile "
        f"{escape(results['profile'])}{seed}",
        f"torch {escape(env['torch'])}, numpy {escape(env['numpy'])}, "
        f"hypothesis {escape(env['hypothesis'])}",
        f"devices: {devices}" + (f" (left out: {left_out})" if left_out else ""),
        f"capabilities: {capabilities or '(none)'}",
        *(hooks_line if hooks else []),
    ]


def start_lines(
    facts: dict[str, Any],
    target: str,
    profile: str,
    seed: int | None,
    database: str | None,
    test_seconds: float | None,
    run_seconds: float | None = None,
) -> list[str]:
    """What ``sessionstate check`` prints before its first test: the subject and target,
    the profile, the devices, the example database, the capabilities and each test's
    bound, so that a long run says at once what it is checking."""
    env = facts["environment"]
    devices = ", ".join(
        terminal_text(d["name"]) + (" (simulated)" if d["simulated"] else "")
        for d in env["devices"]
    )
    left_out = ", ".join(terminal_text(d) for d in env.get("devices_left_out") or [])
    capabilities = ", ".join(terminal_text(c) for c in facts["capabilities"])
    order = search.order(profile, seed)
    bound = f"each test cut off after {test_seconds:g} s" if test_seconds else "tests unbounded"
    if run_seconds:  # the profile's bound on the whole run: a slow subject ends within it
        bound += f", the run after {run_seconds:g} s"
    return [
        f"sessionstate check: {terminal_text(facts['subject'])} ({terminal_text(target)})",
        f"  profile {terminal_text(profile)}, {order}; {bound}",
        f"  devices: {devices}" + (f" (left out: {left_out})" if left_out else ""),
        f"  database: {terminal_text(database) if database else '(none)'}",
        f"  capabilities: {capabilities or '(none)'}",
    ]


def _one_line(text: object, width: int) -> str:
    """A subject-supplied note for the terminal: whitespace runs (newlines too) as one
    space, control characters escaped, clipped to ``width``."""
    return clip(terminal_text(" ".join(str(text).split())), width)


def _counts(results: dict[str, Any]) -> str:
    tally: dict[str, int] = {}
    for clause in results["clauses"].values():
        tally[clause["outcome"]] = tally.get(clause["outcome"], 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(tally.items()))


def _verdict_word(results: dict[str, Any]) -> str:
    """The verdict as the exit status has it (``exit_policy.decide``, the one policy): a
    reproduced case that still fails, stale expectations under ``--strict``."""
    from sessionstate.conformance._harness.exit_policy import decide

    return decide(results).word


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


def _unchecked_in_full(results: dict[str, Any]) -> list[str]:
    """The notes the table cut, of the clauses not checked to the end: why, in full, and
    what to do about it (the fix is in the note; an accepted gap is an expectation)."""
    unchecked = [(cid, c) for cid, c in ordered(results) if c["outcome"] == "unchecked"]
    if not unchecked:
        return []
    lines = ["not checked to the end, neither passed nor failed (why, in full):"]
    # One line per reason: a slow call that stopped twenty clauses' tests is named once.
    by_reason: dict[str, list[str]] = {}
    for cid, clause in unchecked:
        by_reason.setdefault(str(clause["message"]), []).append(cid)
    lines += [
        f"  {terminal_text(', '.join(cids))}: {terminal_text(reason)}"
        for reason, cids in by_reason.items()
    ]
    lines += [f"  {terminal_text(line)}" for line in _slow_calls(results)]
    lines.append(
        "  each note says what stopped the clause's tests; one you accept is an expectations "
        "line 'CLAUSE skip REASON'"
    )
    return lines


#: How a test's reason names a subject function found too slow (``watchdog._slow``).
_SLOW_CALL = re.compile(r"too slow to judge: (\S+\(\) took (?:over )?[\d.]+ s a call)")


def _slow_calls(results: dict[str, Any]) -> list[str]:
    """Each subject function found too slow to judge, once, with the number of tests it
    stopped (a test whose reason names it: the first that ran out of time in it, then each
    later test cut at its first slow call)."""
    stopped: dict[str, int] = {}
    for test in results.get("tests", []):
        for fact in dict.fromkeys(_SLOW_CALL.findall(str(test.get("message", "")))):
            stopped[fact] = stopped.get(fact, 0) + 1
    return [
        f"too slow to judge: {fact} ({count} test{'s' * (count != 1)} stopped in it)"
        for fact, count in stopped.items()
    ]


def table_lines(results: dict[str, Any]) -> list[str]:
    """What is under test, one row per clause (id, level, outcome, tests, seconds, note),
    failures first, then the warnings and the verdict."""
    return [line for line, _ in styled_table(results)]


def styled_table(results: dict[str, Any]) -> list[tuple[str, str]]:
    """``table_lines`` with what each line is, for colouring: a row's clause outcome,
    ``"warning"``, ``"verdict"``, or ``""`` for the header and rules."""
    lines = [(line, "") for line in [*_header(results, terminal_text), "-" * 78]]
    head = f"{'clause':<10} {'level':<7} {'outcome':<9} {'tests':>5} {'test s':>8}  note"
    lines.append((head, ""))
    for cid, clause in ordered(results):
        note = clause["message"] if clause["outcome"] != "passed" else ""
        row = (
            f"{terminal_text(cid):<10} {clause['level']:<7} {_MARK[clause['outcome']]:<9} "
            f"{len(clause['tests']):>5} {clause['seconds']:>8.2f}  {_one_line(note, NOTE_WIDTH)}"
        )
        lines.append((row.rstrip(), clause["outcome"]))
    lines.append(("-" * 78, ""))
    lines += [(line, "unchecked") for line in _unchecked_in_full(results)]
    summed = _summed_note(results)
    if summed:
        lines.append((summed, ""))
    should = [
        cid
        for cid, c in results["clauses"].items()
        if c["level"] == "SHOULD" and c["outcome"] in ("failed", "error")
    ]
    if should and not results["strict"] and not results.get("reproduce"):  # a reproduce fails
        failed = ", ".join(terminal_text(cid) for cid in should)
        warning = f"warning: SHOULD clauses failed: {failed} (--strict fails on them)"
        lines.append((warning, "warning"))
    from sessionstate.conformance._harness.exit_policy import xpassed_tests

    # Clauses whose expected failure passed, then tests whose did while their clause's row
    # says otherwise (a test-level entry): the same warning, naming what to remove.
    xpassed = [cid for cid, c in results["clauses"].items() if c["outcome"] == "xpassed"]
    stale = []
    if xpassed:
        stale.append((", ".join(terminal_text(c) for c in xpassed), "their expectations", "them"))
    stale += [(terminal_text(nodeid), "its expectation", "it") for nodeid in xpassed_tests(results)]
    for names, entries, what in stale:
        fails = f"--strict fails on {what}" if not results["strict"] else "so --strict fails"
        warning = (
            f"warning: expected to fail, but passed (XPASS): {names} (remove {entries}; {fails})"
        )
        lines.append((warning, "warning"))
    unmatched = results["unmatched_expectations"]
    for entry in unmatched[:UNMATCHED_LINES]:
        entry = _one_line(entry, NOTE_WIDTH)
        lines.append((f"warning: expectation {entry} matched no test or clause", "warning"))
    if len(unmatched) > UNMATCHED_LINES:
        more = len(unmatched) - UNMATCHED_LINES
        lines.append((f"warning: ... and {more:,} more expectations matched no test or clause "
                      "(all are in the JSON report's unmatched_expectations)", "warning"))  # fmt: skip
    interrupted = " after an interruption" if results.get("interrupted") else ""
    verdict = (
        f"verdict: {_verdict_word(results)} ({_counts(results)}) "
        f"in {results['seconds']:.1f} s{interrupted}"
    )
    lines.append((verdict, "verdict"))
    return lines


def _summed_note(results: dict[str, Any]) -> str:
    """What the ``test s`` column is, when its figures add up to more than the run's wall
    time (they always may: a test counts under each clause it checks, and ``-n`` runs
    tests side by side); ``""`` otherwise."""
    total = sum(float(c["seconds"]) for c in results["clauses"].values())
    wall = float(results.get("seconds") or 0)
    if total <= wall:
        return ""
    return (f"test s: the time of the tests that check each clause; a test counts under every "
            f"clause it checks (and -n, where given, runs tests side by side), so the column "
            f"sums to {total:.1f} s, more than the run's {wall:.1f} s of wall time")  # fmt: skip


def markdown(results: dict[str, Any]) -> str:
    """The summary as a Markdown document, e.g. for a CI job summary."""
    icon = {
        "passed": "✅",
        "failed": "❌",
        "error": "💥",
        "xfailed": "⚠️",
        "xpassed": "❗",
        "unchecked": "❔",
        "skipped": "⏭️",
    }
    out = [
        f"## sessionstate conformance: {markdown_cell(results['subject'])} is "
        f"{markdown_cell(results['verdict'])}",
        "",
    ]
    out += [f"- {line}" for line in _header(results, markdown_cell)]
    out += [
        "",
        "| clause | level | outcome | tests | test s | note |",
        "|---|---|---|---|---|---|",
    ]
    for cid, clause in ordered(results):
        note = clause["message"] if clause["outcome"] != "passed" else ""
        note = markdown_cell(clip(" ".join(str(note).split()), 200))
        out.append(
            f"| {markdown_cell(cid)} | {markdown_cell(clause['level'])} | "
            f"{icon[clause['outcome']]} {clause['outcome']} "
            f"| {len(clause['tests'])} | {clause['seconds']:.2f} | {note} |"
        )
    out += ["", f"**{_counts(results)}** in {results['seconds']:.1f} s", ""]
    return "\n".join(out)
