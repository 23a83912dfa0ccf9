"""Expectations keep their reasons in every report, and go stale visibly: an expected failure
that passes is ``xpassed`` (XPASS), a warning, and exit 2 under ``--strict``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from sessionstate.cli import main
from sessionstate.conformance._report.junit import to_junit_xml
from sessionstate.conformance._report.matrix import to_html
from sessionstate.conformance._report.terminal import markdown, table_lines

from .test_check import ARGUMENT_WINS

REASON = "the argument wins in our deployment, issue 42"
#: The ENV oracle's ENV-1 test, which the argument-wins subject fails.
ENV_1_TEST = "test_env.py::test_resolution_matches_oracle[ENV-1]"
REPORTS = ["--report-json", "r.json", "--junitxml", "j.xml", "--markdown", "r.md"]


def _case(tmp_path: Path, cid: str) -> ET.Element:
    root = ET.parse(tmp_path / "j.xml").getroot()
    return next(c for c in root.iter("testcase") if c.get("name") == cid)


def test_an_expected_failure_carries_its_reason_everywhere(
    run_cli, write_module, tmp_path: Path
) -> None:
    """A test-level xfail entry: the reason is in the table, the JSON (clause and test),
    the JUnit message and the Markdown, and the run is conformant."""
    module = write_module("argwins", ARGUMENT_WINS)
    (tmp_path / "expect.txt").write_text(f"{ENV_1_TEST}  xfail  {REASON}\n")
    done = run_cli(
        "check", f"{module}:subject", "--clause", "ENV-1", "--expectations", "expect.txt",
        *REPORTS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    clause = report["clauses"]["ENV-1"]
    assert clause["outcome"] == "xfailed"
    assert clause["message"].startswith(f"expected: {REASON} (it failed: result=")
    (record,) = [t for t in report["tests"] if t["nodeid"].endswith(ENV_1_TEST)]
    assert record["outcome"] == "xfailed" and REASON in record["message"]
    row = next(line for line in done.stdout.splitlines() if line.startswith("ENV-1 "))
    assert "XFAIL" in row and REASON[:30] in row
    skipped = _case(tmp_path, "ENV-1").find("skipped")
    assert skipped is not None and REASON in (skipped.get("message") or "")
    assert REASON in (tmp_path / "r.md").read_text()


def test_an_expected_failure_that_passes_is_xpassed(run_cli, tmp_path: Path) -> None:
    """The reference passes ENV-1: an xfail entry for it is stale. A warning naming it,
    exit 0; under --strict exit 2 (no clause failed) and the verdict line says so."""
    (tmp_path / "expect.txt").write_text(f"ENV-1  xfail  {REASON}\n")
    args = ["check", "--clause", "ENV-1", "--expectations", "expect.txt", *REPORTS]
    done = run_cli(*args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    clause = json.loads((tmp_path / "r.json").read_text())["clauses"]["ENV-1"]
    assert clause["outcome"] == "xpassed"
    assert clause["message"] == f"expected to fail ({REASON}), but passed: remove the expectation"
    row = next(line for line in done.stdout.splitlines() if line.startswith("ENV-1 "))
    assert "XPASS" in row
    assert "warning: expected to fail, but passed (XPASS): ENV-1" in done.stdout
    assert "verdict: CONFORMANT" in done.stdout
    case = _case(tmp_path, "ENV-1")
    assert case.find("failure") is None and REASON in (case.findtext("system-out") or "")
    assert "xpassed" in (tmp_path / "r.md").read_text()

    strict = run_cli(*args, "--strict")
    assert strict.returncode == 2, strict.stdout[-3000:] + strict.stderr
    verdicts = [line for line in strict.stdout.splitlines() if line.startswith("verdict: ")]
    assert verdicts[0].startswith(
        "verdict: STALE EXPECTATIONS (--strict: 1 expected failure passed)"
    )
    failure = _case(tmp_path, "ENV-1").find("failure")
    assert failure is not None and failure.get("type") == "xpassed (--strict)"


def _results(outcome: str, message: str) -> dict[str, Any]:
    return {
        "subject": "alpha",
        "target": "pkg.alpha:subject",
        "suite_version": "0.1.0",
        "profile": "ci",
        "seed": None,
        "verdict": "conformant",
        "strict": False,
        "seconds": 1.0,
        "date": "2026-03-04T05:06:07+00:00",
        "unmatched_expectations": [],
        "environment": {
            "torch": "2.13.0",
            "numpy": "2.4.6",
            "hypothesis": "6.170.17",
            "devices": [{"name": "cpu", "simulated": False}],
        },
        "capabilities": [],
        "clauses": {
            "ENV-1": {
                "level": "MUST",
                "outcome": outcome,
                "tests": ["test_env.py::t"],
                "message": message,
                "seconds": 0.5,
            }
        },
        "tests": [{"nodeid": "test_env.py::t", "outcome": outcome, "message": message}],
    }


def test_every_renderer_shows_xpassed_and_the_reason(tmp_path: Path) -> None:
    """Terminal, Markdown, JUnit and the HTML matrix each name the outcome and the note, and
    ``sessionstate report`` accepts the outcome."""
    note = f"expected to fail ({REASON}), but passed: remove the expectation"
    results = _results("xpassed", note)
    table = "\n".join(table_lines(results))
    assert "XPASS" in table and "warning: expected to fail, but passed (XPASS): ENV-1" in table
    assert "xpassed" in markdown(results) and REASON in markdown(results)
    assert REASON in to_junit_xml(results)
    page = to_html([results])
    assert 'class="badge xpassed"' in page and REASON in page
    (tmp_path / "a.json").write_text(json.dumps(results), encoding="utf-8")
    html = tmp_path / "m.html"
    assert main(["report", str(tmp_path / "a.json"), "--html", str(html)]) == 0
    assert "xpassed" in html.read_text(encoding="utf-8")


def test_every_renderer_shows_an_xfail_reason() -> None:
    results = _results("xfailed", f"expected: {REASON}")
    assert REASON in "\n".join(table_lines(results))
    assert REASON in markdown(results)
    assert f'message="xfailed: expected: {REASON}"' in to_junit_xml(results).replace("&#x27;", "'")
    assert REASON in to_html([results])
