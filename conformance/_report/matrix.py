"""``sessionstate report``: a compliance matrix (subjects x clause groups) from results JSONs.

The Markdown matrix is one row per subject. The HTML page is for reading: the matrix, a
legend, the runs side by side (suite version, profile, seed, torch, date), then per subject
every clause with failures first and their messages, each clause's spec text one click away
(a ``<details>``) and the spec's clauses at the bottom as link targets. Self-contained: inline
CSS, no scripts, nothing fetched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionstate.conformance._report.terminal import clip, ordered
from sessionstate.conformance._report.text import html_text, markdown_cell, short_repr
from sessionstate.conformance.clauses import PREFIXES, all_clauses, spec_text
from sessionstate.conformance.subject import UsageError

__all__ = [
    "OUTCOMES",
    "Cell",
    "check_results",
    "load_results",
    "matrix",
    "to_html",
    "to_markdown",
    "verdict_of",
]

#: Clause outcomes, worst first: a group's cell takes the colour of its worst clause.
OUTCOMES = ("error", "failed", "unchecked", "xpassed", "xfailed", "passed", "skipped")

_ICON = {
    "error": "💥",
    "failed": "❌",
    "unchecked": "❔",
    "xfailed": "⚠️",
    "xpassed": "❗",
    "passed": "✅",
    "skipped": "⏭️",
}

_MEANING = {
    "passed": "every test of the clause ran to the end and passed",
    "failed": "a test found the subject breaking the clause",
    "error": "a test of the clause raised or hung in the subject",
    "unchecked": "not checked to the end: a test stopped at another clause's failure, or was "
    "not applicable; neither a pass nor a failure",
    "xfailed": "failed as the subject's expectations file says it does (a known failure)",
    "xpassed": "passed, though the subject's expectations file says it fails: the expectation "
    "is stale (a warning; a failure under --strict)",
    "skipped": "not run: a capability the subject does not declare, an expectation, or not "
    "selected",
}


@dataclass(frozen=True)
class Cell:
    """One subject's clause outcomes in one clause group (``counts``: outcome -> clauses)."""

    counts: tuple[tuple[str, int], ...]
    should: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, members: list[dict[str, Any]]) -> Cell:
        counts = {o: sum(c["outcome"] == o for c in members) for o in OUTCOMES}
        should = {
            o: sum(c["outcome"] == o and c.get("level") == "SHOULD" for c in members)
            for o in OUTCOMES
        }
        return cls(tuple(counts.items()), tuple(should.items()))

    def count(self, outcome: str) -> int:
        return dict(self.counts).get(outcome, 0)

    def should_count(self, outcome: str) -> int:
        return dict(self.should).get(outcome, 0)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)

    @property
    def passed(self) -> int:
        return self.count("passed")

    @property
    def failed(self) -> int:
        return self.count("failed") + self.count("error")

    @property
    def checked(self) -> int:
        """Clauses that ran: all but the skipped ones."""
        return self.total - self.count("skipped")

    @property
    def status(self) -> str:
        """The worst outcome present, or ``n/a`` for a group this run did not report."""
        return next((o for o in OUTCOMES if self.count(o)), "n/a")

    def lines(self) -> list[str]:
        """``["1 failed (SHOULD)", "10 passed", "2 skipped"]``: every outcome present, worst
        first, naming how many of the failures and unchecked clauses are SHOULD clauses."""
        out = []
        for outcome in OUTCOMES:
            n = self.count(outcome)
            if not n:
                continue
            should = (
                self.should_count(outcome) if outcome in ("error", "failed", "unchecked") else 0
            )
            level = "" if not should else " (SHOULD)" if should == n else f" ({should} SHOULD)"
            out.append(f"{n} {outcome}{level}")
        return out

    def __str__(self) -> str:
        if self.status == "n/a":
            return "—"
        if not self.checked:
            return f"{self.total} skipped"
        skipped = self.count("skipped")
        return f"{self.passed}/{self.checked}" + (f" +{skipped} skipped" if skipped else "")


def load_results(paths: list[str]) -> list[dict[str, Any]]:
    """Read results JSONs written by ``sessionstate check --report-json``.

    ``UsageError`` (one line naming the file) for a file that cannot be read, is not
    UTF-8 JSON, or is not shaped as this version's results (``check_results``)."""
    loaded = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise UsageError(f"cannot read results file {path!r}: {error.strerror}") from None
        except UnicodeDecodeError as error:
            raise UsageError(
                f"{path}: not a results file (not UTF-8 text: byte {error.start})"
            ) from None
        except json.JSONDecodeError as error:
            raise UsageError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
        except RecursionError:
            raise UsageError(f"{path}: not a results file (nested too deeply)") from None
        problem = check_results(data)
        if problem:
            raise UsageError(
                f"{path}: not a results file of this version's 'sessionstate check "
                f"--report-json': {problem}"
            )
        loaded.append(data)
    return loaded


def check_results(data: object) -> str:
    """What keeps ``data`` from being rendered as results ("" if nothing): the keys and
    types the matrix and the page read, checked before either starts."""
    if not isinstance(data, dict):
        return f"a JSON {_json_type(data)}, not an object"
    for key, kind in (("subject", str), ("clauses", dict)):
        if key not in data:
            return f"no {key!r} key"
        if not isinstance(data[key], kind):
            return f"{key!r} is a JSON {_json_type(data[key])}"
    optional: tuple[tuple[str, type | tuple[type, ...]], ...] = (
        ("tests", list), ("environment", dict), ("capabilities", list),
        ("unmatched_expectations", list), ("seconds", (int, float)),
    )  # fmt: skip
    for key, kinds in optional:
        if data.get(key) is not None and not isinstance(data[key], kinds):
            return f"{key!r} is a JSON {_json_type(data[key])}"
    if not all(isinstance(record, dict) for record in data.get("tests") or []):
        return "'tests' holds an entry that is not an object"
    devices = (data.get("environment") or {}).get("devices") or []
    if not isinstance(devices, list) or not all(
        isinstance(d, dict) and "name" in d for d in devices
    ):
        return "'environment.devices' is not a list of devices"
    for cid, clause in data["clauses"].items():
        if not isinstance(clause, dict):
            return f"clause {cid!r} is a JSON {_json_type(clause)}"
        if clause.get("outcome") not in OUTCOMES:
            return f"clause {cid!r} has outcome {short_repr(clause.get('outcome'))}"
        if not isinstance(clause.get("tests", []), list):
            return f"clause {cid!r}: 'tests' is a JSON {_json_type(clause['tests'])}"
        if not isinstance(clause.get("seconds", 0), (int, float)):
            return f"clause {cid!r}: 'seconds' is a JSON {_json_type(clause['seconds'])}"
    return ""


def _json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def verdict_of(result: dict[str, Any]) -> str:
    """The verdict to show: an interrupted run is never ``conformant``, whatever it says."""
    verdict = str(result.get("verdict", "incomplete"))
    if result.get("interrupted") and verdict == "conformant":
        return "incomplete"
    return verdict


def _group(cid: str) -> str:
    return cid.split("-")[0]


def matrix(results: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str, list[Cell]]]]:
    """Group columns present in any result, and one row (subject, verdict, cells) per result."""
    groups = [g for g in PREFIXES if any(_group(cid) == g for r in results for cid in r["clauses"])]
    rows = []
    for result in results:
        cells = []
        for group in groups:
            members = [c for cid, c in result["clauses"].items() if _group(cid) == group]
            cells.append(Cell.of(members))
        rows.append((result["subject"], verdict_of(result), cells))
    return groups, rows


def to_markdown(results: list[dict[str, Any]]) -> str:
    """One row per subject: each group's worst outcome, then passed/checked (+ skipped)."""
    groups, rows = matrix(results)
    out = ["| subject | verdict | " + " | ".join(groups) + " |", "|---" * (len(groups) + 2) + "|"]
    for subject, verdict, cells in rows:
        marks = [f"{_ICON.get(c.status, '')} {c}".strip() for c in cells]
        out.append(
            f"| {markdown_cell(subject)} | {markdown_cell(verdict)} | " + " | ".join(marks) + " |"
        )
    return "\n".join(out) + "\n"


# -- HTML -------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;line-height:1.35;max-width:1400px}
h1{margin:0 0 .2em}h2{margin-top:1.6em;border-bottom:2px solid #ddd;padding-bottom:.2em}
a{color:#1a4f9c}code,pre,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em}
table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:.4em .8em;text-align:center}
th{background:#eee}td.subject{text-align:left;font-weight:600}
td.pass{background:#c8f0c8}td.fail{background:#f5b5b5}td.na{background:#f4f4f4;color:#888}
td.error{background:#f0a0a0}td.unchecked{background:#fde9a9}td.xfailed{background:#e2d9f3}td.xpassed{background:#d7ecf7}
td.skipped{background:#f4f4f4;color:#666}td.absent{background:#fff;color:#888}
table.matrix{font-size:.9em}table.matrix td,table.matrix th{padding:.35em .45em}
td.cell{white-space:nowrap;min-width:5.5em}
td.cell a{color:inherit;text-decoration:none;display:block}td.cell b{display:block}
td.cell span{display:block;font-size:.82em}td.cell span.lvl{font-style:italic;font-size:.75em}
td.subject .verdict{font-weight:600;font-size:.9em}
.conformant{color:#176317}.non-conformant{color:#a01010;font-weight:600}
.incomplete{color:#8a5a00;font-weight:600}
.interrupted{background:#8a5a00;color:#fff;border-radius:3px;padding:0 .35em;font-size:.8em}
.badge{display:inline-block;min-width:5.5em;border-radius:3px;padding:.05em .4em;
  font-size:.85em;font-weight:600;text-align:center;border:1px solid #999}
.badge.passed{background:#c8f0c8;border-color:#6fbf6f}
.badge.failed{background:#f5b5b5;border-color:#c55}
.badge.error{background:#f0a0a0;border-color:#a33}
.badge.unchecked{background:#fde9a9;border-color:#c9a13b;border-style:dashed}
.badge.xfailed{background:#e2d9f3;border-color:#8a72b8}
.badge.xpassed{background:#d7ecf7;border-color:#3b7fa8}
.badge.skipped{background:#f4f4f4;border-color:#bbb;color:#666}
.level{display:inline-block;border-radius:3px;padding:0 .35em;font-size:.8em;font-weight:700}
.level.MUST{background:#333;color:#fff}.level.SHOULD{border:1px solid #666;color:#444}
.legend{display:grid;grid-template-columns:repeat(auto-fill,minmax(22em,1fr));gap:.4em 1.4em;
  margin:1em 0;padding:.6em .8em;background:#fafafa;border:1px solid #ddd;font-size:.85em}
table.runs th{text-align:left}table.runs td{text-align:left}
table.clauses{width:100%;font-size:.92em}
table.clauses td,table.clauses th{text-align:left;vertical-align:top;padding:.25em .5em}
table.clauses td:nth-child(-n+3){white-space:nowrap}
div.note{margin:.25em 0 .1em;padding:.25em .5em;white-space:pre-wrap;overflow-wrap:anywhere;
  font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em;background:#f6f6f6;
  border-left:3px solid #bbb}
div.note.failed,div.note.error{background:#fde4e4;border-left-color:#c55}
div.note.unchecked{background:#fff4d0;border-left-color:#c9a13b}
div.note.xfailed{background:#efe9f8;border-left-color:#8a72b8}
div.note.xpassed{background:#e8f3fa;border-left-color:#3b7fa8}
div.note.skipped{color:#555}
tr.failed td,tr.error td{background:#fff1f1}tr.unchecked td{background:#fffaea}
details summary{cursor:pointer}details .spec{margin:.4em 0;padding:.3em .7em;
  border-left:3px solid #bbb;background:#fafafa}
ul.tests{margin:.3em 0;padding-left:1.2em;font-size:.85em}ul.tests li{overflow-wrap:anywhere}
.muted{color:#666}.counts{margin:.3em 0 .8em}
section.spec article{margin:.8em 0;padding:.2em .8em;border-left:3px solid #ddd}
section.spec article:target{border-left-color:#1a4f9c;background:#eef4ff}
p.rationale{color:#555}
ul.subjects{padding-left:1.2em}ul.subjects>li{margin:.4em 0}
ul.glance{list-style:none;padding-left:.6em;margin:.3em 0}ul.glance li{margin:.35em 0}
.glance-note{display:inline-block;margin:.1em 0 0 6.2em;font-size:.85em;color:#444;
  font-family:ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
"""

_CELL_CLASS = {"passed": "pass", "failed": "fail", "n/a": "absent"}


def _e(value: object) -> str:
    """Text for the page, whatever it holds (``text.html_text``)."""
    return html_text(value)


def _inline(text: str) -> str:
    """Escaped spec prose with its Markdown code spans, bold and italics."""
    out = []
    for n, part in enumerate(text.split("`")):
        if n % 2:  # inside a code span: no emphasis there
            out.append(f"<code>{_e(part)}</code>")
            continue
        part = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", _e(part))
        out.append(re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", part))
    return "".join(out)


def _prose(text: str) -> str:
    """A clause's text as paragraphs; its ``Rationale:`` gets a paragraph of its own."""
    paragraphs: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if not line.strip():
            paragraphs.append(("", []))
        elif line.startswith("Rationale:") or not paragraphs:
            paragraphs.append(("rationale" if line.startswith("Rationale:") else "", [line]))
        else:
            paragraphs[-1][1].append(line)
    return "".join(
        f'<p class="{kind}">{_inline(" ".join(lines))}</p>'
        if kind
        else f"<p>{_inline(' '.join(lines))}</p>"
        for kind, lines in paragraphs
        if lines
    )


def _group_titles() -> dict[str, str]:
    titles = {}
    for line in spec_text().splitlines():
        match = re.match(r"^## ([A-Z]+): (.+)$", line)
        if match:
            titles[match.group(1)] = match.group(2)
    return titles


def _verdict_html(result: dict[str, Any]) -> str:
    verdict = verdict_of(result)
    out = f'<span class="verdict {_e(verdict)}">{_e(verdict)}</span>'
    if result.get("interrupted"):
        out += ' <span class="interrupted" title="the run was cut short">interrupted</span>'
    return out


def _at_a_glance(results: list[dict[str, Any]]) -> str:
    """Per subject, its failed and unchecked clauses, MUST first, each linking to its row."""
    known = all_clauses()
    parts = []
    for index, result in enumerate(results):
        bad = [(cid, c) for cid, c in ordered(result) if c["outcome"] in _BAD]
        bad.sort(key=lambda item: (item[1].get("level") != "MUST", _BAD.index(item[1]["outcome"])))
        name = f'<a href="#s{index}">{_e(result["subject"])}</a> {_verdict_html(result)}'
        if not bad:
            parts.append(f"<li>{name}: every clause that ran passed</li>")
            continue
        items = "".join(
            f'<li><span class="badge {_e(c["outcome"])}">{_e(c["outcome"])}</span> '
            f'<a class="mono" href="#s{index}-{_e(cid)}">{_e(cid)}</a> '
            f'<span class="level {_e(c.get("level", ""))}">{_e(c.get("level", ""))}</span> '
            f"{_e(known[cid].title if cid in known else '')}"
            f'<br><span class="glance-note">{_e(clip(c.get("message") or "", 160))}</span></li>'
            for cid, c in bad
        )
        parts.append(f'<li>{name}<ul class="glance">{items}</ul></li>')
    return f'<h2 id="failures">What failed</h2><ul class="subjects">{"".join(parts)}</ul>'


_BAD = ("error", "failed", "unchecked")


def _legend() -> str:
    items = "".join(
        f'<div><span class="badge {o}">{o}</span> {_e(_MEANING[o])}</div>'
        for o in ("failed", "error", "unchecked", "xpassed", "xfailed", "skipped", "passed")
    )
    return (
        f'<div class="legend" id="legend">{items}'
        '<div><span class="level MUST">MUST</span> decides the verdict; '
        '<span class="level SHOULD">SHOULD</span> a failure is a warning (a failure under '
        "--strict)</div>"
        "<div>Verdicts: <b class='conformant'>conformant</b> every MUST clause that ran passed; "
        "<b class='non-conformant'>non-conformant</b> one failed; <b class='incomplete'>"
        "incomplete</b> one was not checked to the end, or the run was interrupted</div>"
        "<div>A matrix cell counts the group's clauses by outcome, coloured by the worst; "
        "— means the run did not report the group (not selected). Click a cell for its "
        "clauses, a clause id for its spec text.</div></div>"
    )


def _matrix_table(results: list[dict[str, Any]]) -> str:
    groups, rows = matrix(results)
    head = "".join(f'<th><a href="#spec-{_e(g)}">{_e(g)}</a></th>' for g in groups)
    body = []
    for index, (subject, _, cells) in enumerate(rows):
        tds = []
        for group, cell in zip(groups, cells, strict=True):
            css = _CELL_CLASS.get(cell.status, cell.status)
            if cell.status == "n/a":
                tds.append(f'<td class="cell {css}" title="not in this run">—</td>')
                continue
            parts = []
            for n, (outcome, count) in enumerate(c for c in cell.counts if c[1]):
                text = f"{count} {outcome}"
                parts.append(f"<b>{_e(text)}</b>" if n == 0 else f"<span>{_e(text)}</span>")
                should = cell.should_count(outcome)
                if should and outcome in ("error", "failed", "unchecked"):
                    level = "SHOULD" if should == count else f"{should} SHOULD"
                    parts.append(f'<span class="lvl">{level}</span>')
            title = f"{group}: " + ", ".join(cell.lines())
            tds.append(
                f'<td class="cell {css}" title="{_e(title)}"><a href="#s{index}-{_e(group)}">'
                f"{''.join(parts)}</a></td>"
            )
        body.append(
            f'<tr><td class="subject"><a href="#s{index}">{_e(subject)}</a>'
            f"<br>{_verdict_html(results[index])}</td>{''.join(tds)}</tr>"
        )
    return f'<table class="matrix"><tr><th>subject</th>{head}</tr>{"".join(body)}</table>'


def _runs_table(results: list[dict[str, Any]]) -> str:
    """The runs side by side: one column per subject, one row per detail."""

    def env(result: dict[str, Any], key: str) -> Any:
        return (result.get("environment") or {}).get(key)

    def devices(result: dict[str, Any]) -> str:
        found = (result.get("environment") or {}).get("devices") or []
        return ", ".join(d["name"] + (" (simulated)" if d.get("simulated") else "") for d in found)

    def seconds(result: dict[str, Any]) -> str:
        value = result.get("seconds")
        return "" if value is None else f"{float(value):.1f} s"

    def seed(result: dict[str, Any]) -> str:
        if "seed" not in result:
            return ""
        if result["seed"] is not None:
            return str(result["seed"])
        return "randomized" if result.get("randomized") else "derandomized"

    fields: list[tuple[str, Any]] = [
        ("target", lambda r: r.get("target")),
        ("date", lambda r: r.get("date")),
        ("suite version", lambda r: r.get("suite_version")),
        ("profile", lambda r: r.get("profile")),
        ("seed", seed),
        ("strict", lambda r: None if "strict" not in r else ("yes" if r["strict"] else "no")),
        ("torch", lambda r: env(r, "torch")),
        ("numpy", lambda r: env(r, "numpy")),
        ("hypothesis", lambda r: env(r, "hypothesis")),
        ("devices", devices),
        ("capabilities", lambda r: ", ".join(r.get("capabilities") or []) or "(none)"),
        ("seconds", seconds),
        ("unmatched expectations", lambda r: ", ".join(r.get("unmatched_expectations") or [])),
    ]
    head = "".join(f"<th>{_e(r['subject'])}</th>" for r in results)
    rows = [f"<tr><th>verdict</th>{''.join(f'<td>{_verdict_html(r)}</td>' for r in results)}</tr>"]
    for name, get in fields:
        values = [get(r) for r in results]
        if not any(values):
            continue
        tds = "".join(f"<td>{_e(v) if v else '<span class=muted>—</span>'}</td>" for v in values)
        rows.append(f"<tr><th>{_e(name)}</th>{tds}</tr>")
    return f'<table class="runs"><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _tests_html(clause: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> str:
    tests = list(dict.fromkeys(clause.get("tests") or []))
    if not tests:
        return '<p class="muted">no test of this clause ran</p>'
    items = []
    for nodeid in tests:
        seen = records.get(nodeid) or [{}]
        for record in seen:
            outcome = record.get("outcome", "")
            message = record.get("message") or ""
            badge = f'<span class="badge {_e(outcome)}">{_e(outcome)}</span> ' if outcome else ""
            note = f": {_e(message)}" if message and outcome != "passed" else ""
            items.append(f'<li>{badge}<span class="mono">{_e(nodeid)}</span>{note}</li>')
    return f'<p class="muted">{len(tests)} test(s):</p><ul class="tests">{"".join(items)}</ul>'


def _note(outcome: str, note: str) -> str:
    """A clause's note under its title: why it failed, was skipped, or was not checked."""
    if not note or outcome == "passed":
        return ""
    return f'<div class="note {_e(outcome)}">{_e(note)}</div>'


def _subject_section(index: int, result: dict[str, Any]) -> str:
    known = all_clauses()
    records: dict[str, list[dict[str, Any]]] = {}
    for record in result.get("tests") or []:
        records.setdefault(record.get("nodeid", ""), []).append(record)
    clauses = result["clauses"]
    counts = Cell.of(list(clauses.values())).lines()
    rows, anchored = [], set()
    for cid, clause in ordered(result):
        outcome = clause["outcome"]
        level = clause.get("level") or (known[cid].level if cid in known else "")
        group = _group(cid)
        anchor = ""
        if group not in anchored:
            anchored.add(group)
            anchor = f'<span id="s{index}-{_e(group)}"></span>'
        spec = known.get(cid)
        title = spec.title if spec else "(not in this version's spec)"
        text = _prose(spec.text) if spec and spec.text else ""
        note = clause.get("message") or ""
        rows.append(
            f'<tr class="{_e(outcome)}" id="s{index}-{_e(cid)}">'
            f'<td>{anchor}<span class="badge {_e(outcome)}">{_e(outcome)}</span></td>'
            f'<td class="mono"><a href="#spec-{_e(cid)}">{_e(cid)}</a></td>'
            f'<td><span class="level {_e(level)}">{_e(level)}</span></td>'
            f"<td><details><summary>{_e(title)}</summary>"
            f'<div class="spec">{text}</div>{_tests_html(clause, records)}</details>'
            f"{_note(outcome, note)}</td></tr>"
        )
    return (
        f'<section class="subject" id="s{index}"><h2>{_e(result["subject"])} · '
        f"{_verdict_html(result)}</h2>"
        f'<p class="counts">{_e(" · ".join(counts))} — of {len(clauses)} clauses; '
        "failures first, then clauses not checked to the end, then the rest in spec order.</p>"
        '<table class="clauses"><tr><th>outcome</th><th>clause</th><th>level</th>'
        f"<th>requirement (click for the spec text and the tests) and note</th></tr>"
        f"{''.join(rows)}</table></section>"
    )


def _spec_section(results: list[dict[str, Any]]) -> str:
    """The spec's clauses that any result reports, as link targets, grouped as in SPEC.md."""
    from sessionstate import __version__

    known = all_clauses()
    present = {cid for r in results for cid in r["clauses"]}
    titles = _group_titles()
    parts = []
    for group in PREFIXES:
        members = [c for c in known.values() if c.group == group and c.id in present]
        if not members:
            continue
        parts.append(f'<h3 id="spec-{_e(group)}">{_e(group)}: {_e(titles.get(group, ""))}</h3>')
        for c in members:
            parts.append(
                f'<article id="spec-{_e(c.id)}"><h4>{_e(c.id)} · '
                f'<span class="level {_e(c.level)}">{_e(c.level)}</span> · {_e(c.title)}</h4>'
                f"{_prose(c.text)}</article>"
            )
    versions = sorted({str(r["suite_version"]) for r in results if r.get("suite_version")})
    other = [v for v in versions if v != __version__]
    caveat = (
        f" The results were made by suite version {_e(', '.join(other))}: a clause's text may "
        "have changed since."
        if other
        else ""
    )
    return (
        '<section class="spec" id="spec"><h2>The clauses</h2>'
        f'<p class="muted">From SPEC.md of sessionstate {_e(__version__)}.{caveat}</p>'
        f"{''.join(parts)}</section>"
    )


def to_html(results: list[dict[str, Any]]) -> str:
    """A self-contained page (inline CSS, no scripts): the matrix, a legend, the runs, and
    per subject each clause's outcome, failures first, with its note and spec text."""
    subjects = "".join(_subject_section(i, r) for i, r in enumerate(results))
    names = ", ".join(str(r["subject"]) for r in results)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>sessionstate compliance: {_e(names)}</title>"
        f"<style>{_CSS}</style></head><body>"
        "<h1>sessionstate compliance matrix</h1>"
        f'<p class="muted">{len(results)} subject(s), from the results files of '
        "<code>sessionstate check --report-json</code>.</p>"
        f"{_matrix_table(results)}{_at_a_glance(results)}{_legend()}"
        f"<h2>Runs</h2>{_runs_table(results)}{subjects}{_spec_section(results)}"
        "</body></html>\n"
    )
