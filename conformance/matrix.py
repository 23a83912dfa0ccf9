"""``sessionstate report``: a compliance matrix (subjects x clause groups) from results JSONs."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clauses import PREFIXES
from .subject import UsageError

__all__ = ["Cell", "load_results", "matrix", "to_html", "to_markdown"]


@dataclass(frozen=True)
class Cell:
    """One subject's outcome for one clause group."""

    passed: int
    failed: int
    total: int

    @property
    def status(self) -> str:
        if self.total == 0 or self.passed + self.failed == 0:
            return "n/a"
        return "fail" if self.failed else "pass"

    def __str__(self) -> str:
        return "—" if self.status == "n/a" else f"{self.passed}/{self.total}"


def load_results(paths: list[str]) -> list[dict[str, Any]]:
    """Read results JSONs written by ``sessionstate check --report-json``."""
    loaded = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise UsageError(f"cannot read results file {path!r}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise UsageError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
        if not isinstance(data, dict) or "clauses" not in data or "subject" not in data:
            raise UsageError(f"{path}: not a results file of 'sessionstate check --report-json'")
        loaded.append(data)
    return loaded


def matrix(results: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str, list[Cell]]]]:
    """Group columns present in any result, and one row (subject, verdict, cells) per result."""
    groups = [
        g for g in PREFIXES if any(cid.split("-")[0] == g for r in results for cid in r["clauses"])
    ]
    rows = []
    for result in results:
        cells = []
        for group in groups:
            members = [c for cid, c in result["clauses"].items() if cid.split("-")[0] == group]
            passed = sum(c["outcome"] in ("passed", "xfailed") for c in members)
            failed = sum(c["outcome"] in ("failed", "error") for c in members)
            cells.append(Cell(passed, failed, len(members)))
        rows.append((result["subject"], result["verdict"], cells))
    return groups, rows


def to_markdown(results: list[dict[str, Any]]) -> str:
    groups, rows = matrix(results)
    out = ["| subject | verdict | " + " | ".join(groups) + " |", "|---" * (len(groups) + 2) + "|"]
    for subject, verdict, cells in rows:
        marks = [
            f"{'❌' if c.status == 'fail' else '✅' if c.status == 'pass' else ''} {c}"
            for c in cells
        ]
        out.append(f"| {subject} | {verdict} | " + " | ".join(m.strip() for m in marks) + " |")
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:.4em .8em;text-align:center}
th{background:#eee}td.subject{text-align:left;font-weight:600}
td.pass{background:#c8f0c8}td.fail{background:#f5b5b5}td.na{background:#f4f4f4;color:#888}
td.conformant{color:#176317}td.non-conformant{color:#a01010;font-weight:600}
"""


def to_html(results: list[dict[str, Any]]) -> str:
    """A self-contained page (inline CSS, no scripts) with the pass/fail grid."""
    groups, rows = matrix(results)
    head = "".join(f"<th>{html.escape(g)}</th>" for g in groups)
    body = []
    for subject, verdict, cells in rows:
        tds = "".join(
            f'<td class="{c.status.replace("/", "")}" title="{c.passed} passed, {c.failed} failed">'
            f"{html.escape(str(c))}</td>"
            for c in cells
        )
        body.append(
            f'<tr><td class="subject">{html.escape(subject)}</td>'
            f'<td class="{verdict}">{verdict}</td>{tds}</tr>'
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>sessionstate compliance</title>"
        f"<style>{_CSS}</style></head><body><h1>sessionstate compliance matrix</h1>"
        f"<table><tr><th>subject</th><th>verdict</th>{head}</tr>{''.join(body)}</table>"
        "<p>Cells: clauses passed / clauses in the group; — means not run.</p></body></html>\n"
    )
