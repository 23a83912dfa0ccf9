"""The clause table and the per-clause JUnit XML, under `sessionstate check` and plain pytest.

One selection of upstream_like gives every outcome a report shows: RESET-2 and ACCT-3 fail,
ACCT-9 is xfailed by an expectation, ACCT-12 is not checked to the end (its test stops at
ACCT-9), LOST-1 is skipped for a capability, KEY-1 passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from sessionstate.conformance._report.junit import to_junit_xml
from sessionstate.conformance._report.terminal import clip, table_lines

UPSTREAM = "sessionstate.fixtures.upstream_like:subject"
SELECTION = ["ACCT-3", "ACCT-9", "ACCT-12", "LOST-1", "RESET-2", "KEY-1"]
EXPECTATIONS = "ACCT-9 xfail sparse storages are opaque upstream\n"
SUITE = ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider"]


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *SUITE, *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
    )  # fmt: skip


def _selection(flag: str) -> list[str]:
    return [arg for cid in SELECTION for arg in (flag, cid)]


def _rows(stdout: str) -> list[str]:
    """The clause ids of the table's rows, in the order printed."""
    head = stdout.index("clause     level   outcome")
    body = stdout[head:].splitlines()[1:]
    return [line.split()[0] for line in body[: body.index("-" * 78)]]


def _check_junit(path: Path, results: dict[str, Any]) -> dict[str, ET.Element]:
    """The per-clause file agrees with the results JSON, its counts with its testcases."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == results["subject"]
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == list(results["clauses"])
    assert int(suite.get("tests")) == len(cases)
    for tag, count in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(count)) == sum(case.find(tag) is not None for case in cases)
    suite_props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert suite_props["verdict"] == results["verdict"]
    assert suite_props["target"] == results["target"]
    assert suite_props["torch"] == results["environment"]["torch"]
    for case in cases:
        cid = case.get("name")
        clause = results["clauses"][cid]
        assert case.get("classname") == f"sessionstate.{cid.split('-')[0]}"
        props = case.find("properties")
        tests = [p.get("value") for p in props if p.get("name") == "test"]
        assert tests == list(dict.fromkeys(clause["tests"])), cid
        assert {p.get("name") for p in props} >= {"level", "title", "test"}
        outcome, note = clause["outcome"], clause["message"]
        verdicts = [child for child in case if child.tag != "properties"]
        if outcome == "passed":
            assert verdicts == [], cid
            continue
        if outcome in ("failed", "error") and clause["level"] == "SHOULD" and not results["strict"]:
            # A warning, as the exit status counts it: skipped, never a <failure>.
            assert [v.tag for v in verdicts] == ["skipped", "system-out"], cid
            assert verdicts[0].get("message") == f"{outcome}: {note}"
            continue
        (element,) = verdicts
        if outcome in ("failed", "error"):
            assert element.tag == ("failure" if outcome == "failed" else "error")
            assert element.get("message") == note
        else:
            assert (element.tag, element.get("type")) == ("skipped", outcome)
            assert element.get("message") == (
                note if outcome == "skipped" else f"{outcome}: {note}"
            )
    return {case.get("name"): case for case in cases}


def test_check_junitxml_has_one_testcase_per_clause(run_cli, tmp_path: Path) -> None:
    """`sessionstate check --junitxml`: a suite named after the subject, a testcase per clause,
    failures with the clause's note, unchecked and xfailed as skipped saying which; the clause
    table is printed once, failures first."""
    (tmp_path / "expect.txt").write_text(EXPECTATIONS)
    result = run_cli(
        "check", UPSTREAM, "--profile", "quick", *_selection("--clause"),
        "--expectations", "expect.txt", "--junitxml", "r/junit.xml", "--report-json", "r.json",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    cases = _check_junit(tmp_path / "r/junit.xml", results)
    assert {cid: results["clauses"][cid]["outcome"] for cid in SELECTION} == {
        "ACCT-3": "failed", "ACCT-9": "xfailed", "ACCT-12": "unchecked",
        "LOST-1": "skipped", "RESET-2": "failed", "KEY-1": "passed",
    }  # fmt: skip
    failure = cases["ACCT-3"].find("failure")
    assert failure.get("type") == "MUST clause failed"
    assert "test_acct.py::test_distinct_storages_count_separately[ACCT-3]: failed: " in failure.text
    unchecked = cases["ACCT-12"].find("skipped").get("message")
    assert unchecked.startswith("unchecked: not checked to the end: ")
    xfailed = cases["ACCT-9"].find("skipped").get("message")
    assert xfailed == "xfailed: expected: sparse storages are opaque upstream"
    assert result.stdout.count("verdict: NON-CONFORMANT") == 1
    assert "sessionstate: upstream-like is" not in result.stdout  # the plugin's copy
    assert _rows(result.stdout) == ["RESET-2", "ACCT-3", "ACCT-12", "KEY-1", "ACCT-9", "LOST-1"]


def test_plain_pytest_gets_the_table_and_both_junit_files(tmp_path: Path) -> None:
    """`pytest --pyargs ... --sessionstate-junitxml` writes the per-clause file; pytest's own
    --junitxml stays per test, its properties JSON and the call's (not the teardown's)."""
    (tmp_path / "expect.txt").write_text(EXPECTATIONS)
    result = _pytest(
        "-q", "--sessionstate-subject", UPSTREAM, "--sessionstate-profile", "quick",
        *_selection("--sessionstate-clause"), "--sessionstate-expectations", "expect.txt",
        "--sessionstate-report-json", "r.json", "--sessionstate-junitxml", "clauses.xml",
        "--junitxml=tests.xml", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    _check_junit(tmp_path / "clauses.xml", results)
    assert result.stdout.count("sessionstate: upstream-like is non-conformant") == 1
    assert result.stdout.count("verdict: NON-CONFORMANT") == 1
    assert _rows(result.stdout) == ["RESET-2", "ACCT-3", "ACCT-12", "KEY-1", "ACCT-9", "LOST-1"]
    skip_row = next(line for line in result.stdout.splitlines() if line.startswith("LOST-1 "))
    assert skip_row.endswith("LOST-1 needs capability 'require_session', which subject 'upstream-like' does not declare")  # fmt: skip
    own = ET.parse(tmp_path / "tests.xml").getroot()
    assert own.find("testsuite").get("name") == "pytest"
    case = next(
        c for c in own.iter("testcase") if c.get("name") == "test_distinct_storages_count_separately[ACCT-3]"
    )  # fmt: skip
    assert case.find("failure") is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert json.loads(props["sessionstate_clauses"]) == ["ACCT-3"]
    assert json.loads(props["sessionstate_failed_clauses"]) == ["ACCT-3"]
    assert "but should be" in props["sessionstate_message"]


def test_xdist_prints_the_table_once_in_the_controller(tmp_path: Path) -> None:
    """Under -n 2 the workers print nothing of it; the controller prints one table."""
    result = _pytest("-n", "2", "--sessionstate-clause", "KEY", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert result.stdout.count("sessionstate: reference is conformant") == 1
    assert result.stdout.count("verdict: CONFORMANT (3 passed)") == 1
    assert _rows(result.stdout) == ["KEY-1", "KEY-2", "KEY-3"]


def test_a_run_of_other_tests_prints_no_table(tmp_path: Path) -> None:
    """The plugin is installed for every pytest run; a project's own tests get no table."""
    (tmp_path / "test_mine.py").write_text("def test_one():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_mine.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sessionstate:" not in result.stdout and "verdict:" not in result.stdout


def _clause(level: str, outcome: str, note: str, cid: str) -> dict[str, Any]:
    tests = [f"t.py::{cid}"]
    return {"level": level, "outcome": outcome, "tests": tests, "message": note, "seconds": 0.0}


def _results(clauses: dict[str, tuple[str, str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "subject": "s",
        "target": "m:s",
        "suite_version": "0.1.0",
        "profile": "ci",
        "seed": None,
        "verdict": "non-conformant",
        "strict": False,
        "seconds": 1.0,
        "unmatched_expectations": [],
        "environment": {"torch": "2", "numpy": "2", "hypothesis": "6", "devices": []},
        "capabilities": [],
        "clauses": {cid: _clause(*spec, cid) for cid, spec in clauses.items()},
        "tests": [],
        **extra,
    }


def test_table_rows_failures_first_then_unchecked_then_spec_order() -> None:
    results = _results(
        {
            "KEY-1": ("MUST", "passed", ""),
            "KEY-2": ("MUST", "unchecked", "not checked to the end: x"),
            "LRU-1": ("MUST", "skipped", "not selected"),
            "LRU-2": ("MUST", "error", "KeyError: 'a'"),
            "ACCT-7": ("SHOULD", "failed", "wrong [ACCT-7]"),
            "ENV-1": ("MUST", "xfailed", "expected: known"),
        }
    )
    rows = [
        line.split()[0] for line in table_lines(results) if line[:1].isupper() and "-" in line[:7]
    ]
    assert rows == ["LRU-2", "ACCT-7", "KEY-2", "KEY-1", "LRU-1", "ENV-1"]


def test_an_unchecked_clause_says_why_in_full_under_the_table() -> None:
    why = (
        "not checked to the end: test_obj.py::test_a_run_of_writes_matches_the_model"
        "[PagedKV-no-model]: not checked: contents of spec 'PagedKV': OBJ-9 needs its model= or "
        "a contents= kind"
    )
    lines = table_lines(
        _results({"OBJ-9": ("MUST", "unchecked", why), "KEY-1": ("MUST", "passed", "")})
    )
    (row,) = [line for line in lines if line.startswith("OBJ-9")]
    assert row.endswith("…")  # the table cuts it
    assert f"  OBJ-9: {why}" in lines  # in full below it
    assert any("'CLAUSE skip REASON'" in line for line in lines)
    assert not any(
        line.startswith("not checked to the end")
        for line in table_lines(_results({"KEY-1": ("MUST", "passed", "")}))
    )


def test_long_notes_are_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    note = "device_bytes(x)={}, but should be {'meta': 40} " + "alpha beta gamma " * 8
    (row,) = [line for line in table_lines(_results({"ACCT-3": ("MUST", "failed", note)}))
              if line.startswith("ACCT-3")]  # fmt: skip
    shown = row.split("  ")[-1]
    assert shown.endswith("…") and len(shown) <= 90
    assert note.startswith(shown[:-1]) and note[len(shown) - 1] == " "  # whole words only
    assert clip("short note") == "short note"
    assert clip("x" * 200) == "x" * 89 + "…"  # one word longer than the row: cut it


def test_junit_escapes_what_xml_cannot_hold() -> None:
    """Markup, quotes and control characters in names and notes still make valid XML."""
    note = 'raised ValueError("<&>") \x1b[31mred\x1b[0m\nsecond line'
    results = _results(
        {"KEY-1": ("MUST", "failed", note), "KEY-2": ("MUST", "unchecked", "")},
        subject='<weird & "name">',
        interrupted=True,
        date="2026-01-02T03:04:05+00:00",
    )
    root = ET.fromstring(to_junit_xml(results).encode())
    suite = root.find("testsuite")
    assert suite.get("name") == '<weird & "name">'
    assert suite.get("timestamp") == "2026-01-02T03:04:05+00:00"
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "1", "1")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["interrupted"] == "true"
    failure = suite.find("testcase/failure")
    assert failure.get("message") == note.replace("\x1b", "\\x1b")
    assert suite.find("testcase[@name='KEY-2']/skipped").get("message") == "unchecked"


def test_junit_counts_a_failed_should_clause_as_the_exit_status_does() -> None:
    """Without --strict a failed SHOULD clause is a warning (exit 0): a ``<skipped>`` of the
    warning type with its tests' messages, never a ``<failure>``, which a CI check-run
    action turns red; under --strict it is a failure, as the exit status is 1."""
    clauses = {"ACCT-7": ("SHOULD", "failed", "wrong [ACCT-7]"), "KEY-1": ("MUST", "passed", "")}
    lenient = ET.fromstring(to_junit_xml(_results(clauses)).encode()).find("testsuite")
    assert (lenient.get("failures"), lenient.get("errors"), lenient.get("skipped")) == (
        "0", "0", "1",
    )  # fmt: skip
    assert lenient.find(".//failure") is None
    skipped = lenient.find("testcase[@name='ACCT-7']/skipped")
    assert skipped.get("type") == "SHOULD clause failed (a warning; --strict fails on it)"
    assert skipped.get("message") == "failed: wrong [ACCT-7]"
    strict = ET.fromstring(to_junit_xml(_results(clauses, strict=True)).encode()).find("testsuite")
    assert (strict.get("failures"), strict.get("skipped")) == ("1", "0")
    assert strict.find("testcase[@name='ACCT-7']/failure").get("type") == "SHOULD clause failed"
    must = _results({"KEY-1": ("MUST", "failed", "wrong [KEY-1]")})
    assert ET.fromstring(to_junit_xml(must).encode()).find("testsuite").get("failures") == "1"
