"""The HTML compliance matrix, as headless Chromium renders it.

The page is parsed back from Chromium's DOM (``--dump-dom``), so what is asserted is what a
browser builds from it: escaping, links that land, the order a reader meets failures in.
In CI (``CI=true``) a missing Chromium fails these tests: .ci/run installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance._report.matrix import to_html
from sessionstate.conformance.clauses import all_clauses

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
HOSTILE = '<script>alert("x")</script> & co'


def _browser() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no chromium on PATH: .ci/run installs it (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium to run this check)")
    return browser


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_browser(), *FLAGS, f"--user-data-dir={page.parent / 'profile'}", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self, tag: str | None = None) -> list[Node]:
        found = [self] if tag in (None, self.tag) else []
        for child in self.children:
            if isinstance(child, Node):
                found += child.iter(tag)
        return found

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def by_id(self, ident: str) -> Node:
        (node,) = [n for n in self.iter() if n.attrs.get("id") == ident]
        return node


class _Tree(HTMLParser):
    VOID = frozenset({"meta", "br", "link", "img", "input", "hr"})

    def __init__(self) -> None:
        super().__init__()
        self.root = self.at = Node("#document", {}, None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in self.VOID:
            self.at = node

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.at = node.parent

    def handle_data(self, data: str) -> None:
        self.at.children.append(data)


def _dom(page: Path) -> Node:
    rendered = _chromium(page, "--dump-dom")
    assert "<body" in rendered.stdout, rendered.stderr[-2000:]
    tree = _Tree()
    tree.feed(rendered.stdout)
    return tree.root


def _clause(level: str, outcome: str, note: str = "", tests: int = 1) -> dict[str, Any]:
    return {
        "level": level,
        "outcome": outcome,
        "tests": [f"test_x.py::t{i}" for i in range(tests)],
        "message": note,
        "seconds": 0.5,
    }


def _run(subject: str, verdict: str, clauses: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "subject": subject,
        "target": f"pkg.{subject}:subject",
        "suite_version": "0.1.0",
        "profile": "ci",
        "seed": 1234,
        "verdict": verdict,
        "strict": False,
        "seconds": 12.5,
        "date": "2026-03-04T05:06:07+00:00",
        "unmatched_expectations": [],
        "environment": {
            "torch": "2.13.0+cpu",
            "numpy": "2.4.6",
            "hypothesis": "6.170.17",
            "devices": [{"name": "cpu", "simulated": False}],
        },
        "capabilities": ["threadsafe"],
        "clauses": clauses,
        "tests": [{"nodeid": "test_x.py::t0", "outcome": "failed", "message": "boom <b>bold</b>"}],
        **extra,
    }


def _page(tmp_path: Path) -> Path:
    ok = {f"LRU-{i}": _clause("MUST", "passed") for i in range(1, 9)}
    alpha = _run("alpha", "conformant", {**ok, "ENV-1": _clause("MUST", "passed")})
    beta = _run(
        HOSTILE,
        "non-conformant",
        {
            "LRU-1": _clause("MUST", "passed"),
            "LRU-2": _clause("MUST", "passed"),
            **{f"LRU-{i}": _clause("MUST", "skipped", "needs 'threadsafe'") for i in range(3, 9)},
            "ACCT-7": _clause("SHOULD", "failed", "counted twice <&> [ACCT-7]"),
            "ACCT-3": _clause("MUST", "failed", "device_bytes(x)={}, but should be 40 [ACCT-3]"),
            "ACCT-12": _clause("SHOULD", "unchecked", "not checked to the end: stopped at ACCT-9"),
            "ACCT-1": _clause("MUST", "passed"),
            "ENV-1": _clause("MUST", "xfailed", "expected: config wins"),
            "KEY-1": _clause("MUST", "unchecked", "not checked to the end: stopped"),
        },
    )
    cut = _run("gamma", "conformant", {"ENV-1": _clause("MUST", "passed")}, interrupted=True)
    page = tmp_path / "matrix.html"
    page.write_text(to_html([alpha, beta, cut]), encoding="utf-8")
    return page


def test_the_rendered_matrix_reads_as_a_report(tmp_path: Path) -> None:
    dom = _dom(_page(tmp_path))
    body = dom.iter("body")[0]
    # Self-contained and escaped: the hostile name is text, nothing is fetched.
    assert not dom.iter("script") and not dom.iter("link") and not dom.iter("img")
    assert HOSTILE in body.text()
    for node in dom.iter():
        for name in ("href", "src"):
            assert not node.attrs.get(name, "#").startswith(("http", "//", "file:")), node.attrs
    # Every in-page link lands somewhere.
    ids = {n.attrs["id"] for n in dom.iter() if "id" in n.attrs}
    targets = {
        n.attrs["href"][1:] for n in dom.iter("a") if n.attrs.get("href", "").startswith("#")
    }
    assert targets and targets <= ids, targets - ids
    # The matrix: rows per subject, a cell per group, skipped and unchecked never green.
    matrix = dom.iter("table")[0]
    rows = matrix.iter("tr")[1:]
    assert [r.iter("td")[0].iter("a")[0].text() for r in rows] == ["alpha", HOSTILE, "gamma"]
    beta = {a.attrs["href"].split("-", 1)[1]: a.parent for a in rows[1].iter("a")[1:]}
    assert beta["LRU"].classes() == {"cell", "pass"}
    assert "2 passed" in beta["LRU"].text() and "6 skipped" in beta["LRU"].text()
    assert beta["ACCT"].classes() == {"cell", "fail"}
    assert "2 failed" in beta["ACCT"].text() and "1 unchecked" in beta["ACCT"].text()
    assert beta["KEY"].classes() == {"cell", "unchecked"} and "1 unchecked" in beta["KEY"].text()
    assert beta["ENV"].classes() == {"cell", "xfailed"}
    absent = [td for td in rows[2].iter("td") if "cell" in td.classes()]
    assert [td.text() for td in absent] == ["—", "—", "—", "1 passed"]
    # An interrupted run is incomplete, however its JSON's verdict reads.
    assert "incomplete" in rows[2].text() and "interrupted" in rows[2].text()
    assert "conformant" not in rows[2].text().replace("non-conformant", "")
    # What failed, under the matrix: per subject, MUST clauses first, each with its note.
    glance = body.by_id("failures").parent.iter("ul")[0]
    (beta_list,) = [ul for ul in glance.iter("ul") if "glance" in ul.classes()]
    assert [a.text() for a in beta_list.iter("a")] == ["ACCT-3", "KEY-1", "ACCT-7", "ACCT-12"]
    assert "device_bytes(x)={}, but should be 40 [ACCT-3]" in beta_list.text()
    assert "alpha conformant: every clause that ran passed" in glance.text()
    # The legend names every outcome and both levels.
    legend = body.by_id("legend").text()
    for word in ("passed", "failed", "error", "unchecked", "xfailed", "skipped", "MUST", "SHOULD"):
        assert word in legend
    # Run details, side by side.
    runs = dom.iter("table")[1].text()
    for detail in ("0.1.0", "ci", "1234", "2.13.0+cpu", "12.5 s", "2026-03-04T05:06:07+00:00"):
        assert detail in runs


def test_each_subject_lists_failures_first_with_notes_and_spec_text(tmp_path: Path) -> None:
    dom = _dom(_page(tmp_path))
    section = dom.by_id("s1")
    rows = section.iter("tr")[1:]
    order = [r.iter("td")[1].text() for r in rows]
    assert order[:4] == ["ACCT-3", "ACCT-7", "KEY-1", "ACCT-12"]  # failed, then unchecked
    assert order[4:] == ["LRU-1", "LRU-2", *[f"LRU-{i}" for i in range(3, 9)], "ACCT-1", "ENV-1"]
    outcomes = [r.attrs["class"] for r in rows]
    assert outcomes[:4] == ["failed", "failed", "unchecked", "unchecked"]
    acct7 = section.by_id("s1-ACCT-7")
    assert "counted twice <&> [ACCT-7]" in acct7.text()  # the note, escaped, not markup
    assert [n.text() for n in acct7.iter("span") if "level" in n.classes()] == ["SHOULD"]
    # The clause's text is one click away: a <details> holding SPEC.md's words and its tests.
    details = section.by_id("s1-ACCT-3").iter("details")[0]
    assert details.iter("summary")[0].text() == all_clauses()["ACCT-3"].title
    assert "data pointer 0" in details.text() and "test_x.py::t0" in details.text()
    assert "boom <b>bold</b>" in details.text()
    # and the spec's own section is where a clause id links to.
    spec = dom.by_id("spec-ACCT-3")
    assert all_clauses()["ACCT-3"].title in spec.text() and "MUST" in spec.text()


def test_the_matrix_renders_to_a_screenshot(tmp_path: Path) -> None:
    """A non-empty image: the page lays out in a real browser."""
    shot = tmp_path / "shot.png"
    _chromium(_page(tmp_path), f"--screenshot={shot}", "--window-size=1200,900")
    assert shot.is_file() and shot.stat().st_size > 10_000
