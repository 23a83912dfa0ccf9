"""JUnit XML with one testcase per clause, written from a results JSON.

pytest's own ``--junitxml`` has one testcase per *test*, in a suite named "pytest"; a CI
dashboard reading it can neither tell two backends' files apart nor say which clause broke.
This file has one ``<testsuite>`` named after the subject and one ``<testcase>`` per clause:

- ``classname`` ``sessionstate.<GROUP>`` and ``name`` the clause id (``sessionstate.ACCT``,
  ``ACCT-3``), ``time`` the seconds of its tests;
- properties ``level``, ``title`` and one ``test`` per test id that checked it;
- ``failed`` is a ``<failure>``, ``error`` (the subject raised, or hung) an ``<error>``, each
  with the clause's note as ``message`` and its failing tests' messages as text; but a
  failed SHOULD clause is a warning (exit 0) unless the run is ``--strict``, and the file
  counts what the exit status counts: without ``--strict`` it is a ``<skipped>`` of type
  ``SHOULD clause failed (a warning; --strict fails on it)``, an ``outcome`` property and
  its failing tests' messages as ``<system-out>`` (a dashboard that turns red on any
  ``<failure>`` stays green on a conformant run);
- ``skipped``, ``xfailed`` and ``unchecked`` are ``<skipped>`` whose ``type`` and ``message``
  say which: an unchecked clause was not checked to the end, so it is never shown as passed;
- ``xpassed`` (an expected failure that passed: the expectation is stale) is a passing
  ``<testcase>`` with an ``outcome`` property and the note as ``<system-out>``; under
  ``--strict``, which fails on it, a ``<failure type="xpassed (--strict)">``;
- a passed clause is a bare ``<testcase>``.

The suite's properties carry the run: target, suite version, profile, seed, verdict,
strict, ``interrupted`` when the run was cut short, and the environment.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from sessionstate.conformance.clauses import all_clauses

__all__ = ["to_junit_xml"]

#: Characters XML 1.0 cannot hold, even escaped (a subject's message may contain them).
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

#: The ``<skipped>`` type of a failed SHOULD clause in a run without ``--strict``.
SHOULD_WARNING = "SHOULD clause failed (a warning; --strict fails on it)"


def _warning(clause: dict[str, Any], strict: bool) -> bool:
    """A failed or errored SHOULD clause of a run without ``--strict``: a warning."""
    return not strict and clause["level"] == "SHOULD" and clause["outcome"] in ("failed", "error")


#: Outcomes written as ``<skipped>``; all but a plain skip name themselves in the message.
_SKIPPED = ("skipped", "xfailed", "unchecked")


def _clean(text: object) -> str:
    """``text`` with what XML 1.0 cannot hold as visible escapes (``\\x00``, ``\\udc80``)."""
    return _ILLEGAL.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _property(parent: ET.Element, name: str, value: object) -> None:
    ET.SubElement(parent, "property", name=name, value=_clean(value))


def _failing_tests(clause: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> str:
    """One line per test of the clause that did not pass: its id, outcome and message."""
    lines = []
    for nodeid in dict.fromkeys(clause["tests"]):
        for record in records.get(nodeid, []):
            if record["outcome"] in ("failed", "xfailed"):
                message = record.get("message") or record["outcome"]
                lines.append(f"{nodeid}: {record['outcome']}: {message}")
    return "\n".join(lines)


def to_junit_xml(results: dict[str, Any]) -> str:
    """The JUnit XML document for ``results`` (a ``sessionstate check --report-json`` file)."""
    clauses: dict[str, dict[str, Any]] = results["clauses"]
    outcomes = [c["outcome"] for c in clauses.values()]
    records: dict[str, list[dict[str, Any]]] = {}
    for record in results.get("tests", []):
        records.setdefault(record["nodeid"], []).append(record)
    strict = bool(results.get("strict"))
    warned = sum(_warning(c, strict) for c in clauses.values())
    counts = {
        "tests": len(outcomes),
        "failures": sum(
            c["outcome"] == "failed" and not _warning(c, strict) for c in clauses.values()
        )
        + (outcomes.count("xpassed") if strict else 0),
        "errors": sum(
            c["outcome"] == "error" and not _warning(c, strict) for c in clauses.values()
        ),
        "skipped": sum(o in _SKIPPED for o in outcomes) + warned,
    }
    root = ET.Element("testsuites", name="sessionstate conformance")
    attributes = {
        "name": _clean(results["subject"]),
        **{k: str(v) for k, v in counts.items()},
        "time": f"{float(results.get('seconds') or 0):.3f}",
    }
    suite = ET.SubElement(root, "testsuite", attributes)
    if results.get("date"):
        suite.set("timestamp", _clean(results["date"]))
    props = ET.SubElement(suite, "properties")
    env = results.get("environment", {})
    run = [
        ("target", results.get("target")),
        ("suite_version", results.get("suite_version")),
        ("profile", results.get("profile")),
        ("seed", results.get("seed")),
        ("verdict", results.get("verdict")),
        ("strict", results.get("strict")),
        ("interrupted", results.get("interrupted")),
        ("torch", env.get("torch")),
        ("numpy", env.get("numpy")),
        ("hypothesis", env.get("hypothesis")),
        ("devices", ", ".join(d["name"] for d in env.get("devices", []))),
        ("capabilities", ", ".join(results.get("capabilities", []))),
    ]
    for name, value in run:
        if value is not None and value != "":
            _property(props, name, str(value).lower() if isinstance(value, bool) else value)
    for cid, clause in clauses.items():
        _testcase(suite, cid, clause, records, strict=strict)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n'


def _testcase(
    suite: ET.Element,
    cid: str,
    clause: dict[str, Any],
    records: dict[str, list[dict[str, Any]]],
    *,
    strict: bool = False,
) -> None:
    known = all_clauses().get(cid)
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"sessionstate.{cid.split('-')[0]}",
        name=cid,
        time=f"{float(clause.get('seconds') or 0):.3f}",
    )
    props = ET.SubElement(case, "properties")
    _property(props, "level", clause["level"])
    if known is not None:
        _property(props, "title", known.title)
    for nodeid in dict.fromkeys(clause["tests"]):
        _property(props, "test", nodeid)
    outcome, note = clause["outcome"], clause.get("message", "")
    if _warning(clause, strict):
        _property(props, "outcome", outcome)
        ET.SubElement(case, "skipped", type=SHOULD_WARNING, message=_clean(f"{outcome}: {note}"))
        ET.SubElement(case, "system-out").text = _clean(_failing_tests(clause, records) or note)
    elif outcome in ("failed", "error"):
        element = ET.SubElement(
            case,
            "failure" if outcome == "failed" else "error",
            message=_clean(note),
            type=f"{clause['level']} clause {outcome}",
        )
        element.text = _clean(_failing_tests(clause, records) or note)
    elif outcome == "xpassed":
        _property(props, "outcome", outcome)
        if strict:
            failure = ET.SubElement(
                case, "failure", message=_clean(note), type="xpassed (--strict)"
            )
            failure.text = _clean(note)
        else:
            ET.SubElement(case, "system-out").text = _clean(f"xpassed: {note}")
    elif outcome in _SKIPPED:
        message = note if outcome == "skipped" else f"{outcome}: {note}" if note else outcome
        ET.SubElement(case, "skipped", type=outcome, message=_clean(message))
