"""Long runs say what they check at once and how far they got; failures read plainly.

``sessionstate check`` prints its header (subject, profile, devices, database,
capabilities) before the first test and a line per finished clause group; a failing case
names the subject in one line, not every field of it; the LRU table's message is words;
a failure the subject's code raised shows where in that code.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis.vendor.pretty import pretty

from sessionstate.conformance import Subject
from sessionstate.conformance._harness.progress import GroupProgress, group_of
from sessionstate.conformance._machine.manager import _absent_ids_message
from sessionstate.conformance._report.terminal import start_lines, table_lines
from sessionstate.conformance.checks import ClauseFailure, calling

ZOO = "sessionstate.fixtures.zoo.lru_hit_no_refresh:subject"


def test_check_prints_its_header_first_and_a_line_per_group(run_cli: Any) -> None:
    result = run_cli("check", ZOO, "--clause", "ENV", "--profile", "quick")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"sessionstate check: lru_hit_no_refresh ({ZOO})", lines[:6]
    assert lines[1].startswith("  profile quick, derandomized; each test cut off after ")
    assert lines[2].startswith("  devices: cpu, meta")
    assert lines[3] == "  database: (none)"
    assert lines[4] == "  capabilities: admission, require_session, threadsafe"
    done = [line for line in lines if re.match(r"[A-Z]+ done: ", line)]
    env = [line for line in done if line.startswith("ENV done: ")]
    assert len(env) == 1, done
    assert re.match(r"ENV done: \d+ tests; \d+/\d+ groups, \d+:\d\d elapsed", env[0]), env
    table = lines.index("=" * 78)
    assert all(lines.index(line) < table for line in done)


def test_group_progress_counts_and_estimates() -> None:
    stream = io.StringIO()
    progress = GroupProgress(stream, started=time.monotonic() - 30)
    collected = {"s/test_lru.py::a": ["LRU-1"], "s/test_lru.py::b": ["LRU-3"],
                 "s/test_env.py::c": ["ENV-1"]}  # fmt: skip
    assert progress.update(collected, [{"nodeid": "s/test_lru.py::a", "outcome": "passed"}]) == []
    lines = progress.update(collected, [{"nodeid": "s/test_lru.py::a", "outcome": "passed"},
                                        {"nodeid": "s/test_lru.py::b", "outcome": "failed"}])  # fmt: skip
    assert len(lines) == 1
    assert re.fullmatch(r"LRU done: 2 tests, 1 failed; 1/2 groups, \d+:\d\d elapsed, "
                        r"about \d+:\d\d left", lines[0]), lines  # fmt: skip
    assert stream.getvalue().startswith("\n")  # off pytest's line of dots
    records = [{"nodeid": n, "outcome": "passed"} for n in collected]
    last = progress.update(collected, records)
    assert len(last) == 1 and last[0].startswith("ENV done: 1 test; 2/2 groups")
    assert "left" not in last[0]
    assert progress.update(collected, records) == []  # each group once
    assert group_of("conformance/suite/test_admit.py::test_x[ADMIT-1]") == "ADMIT"


def test_start_lines_name_what_is_checked() -> None:
    facts = {"subject": "mine\x1b[2J", "capabilities": ["threadsafe"],
             "environment": {"devices": [{"name": "cpu", "simulated": False},
                                         {"name": "cuda:0", "simulated": True}],
                             "devices_left_out": ["meta"]}}  # fmt: skip
    lines = start_lines(facts, "pkg.mod:subject", "ci", 7, "redis://127.0.0.1:6379/0", 300.0)
    assert lines == [
        "sessionstate check: mine\\x1b[2J (pkg.mod:subject)",
        "  profile ci, seed 7; each test cut off after 300 s",
        "  devices: cpu, cuda:0 (simulated) (left out: meta)",
        "  database: redis://127.0.0.1:6379/0",
        "  capabilities: threadsafe",
    ]


def test_a_failing_case_names_the_subject_in_one_line() -> None:
    from sessionstate.fixtures.lingbot_like import subject as lingbot
    from sessionstate.fixtures.state_object_specs import subject as objects
    from sessionstate.fixtures.zoo.lru_hit_no_refresh import subject

    shown = pretty(subject)
    assert shown == (
        "Subject('lru_hit_no_refresh', "
        "manager_factory=sessionstate.fixtures.zoo.lru_hit_no_refresh.HitNoRefresh)"
    )
    assert pretty(Subject(name="bare")) == "Subject('bare')"
    assert "\n" not in pretty(lingbot.adapters[0])
    assert pretty(lingbot.adapters[0]).startswith("AdapterSpec('")
    spec = objects.state_objects[0]
    assert pretty(spec) == f"StateObjectSpec({spec.name!r})"


def test_the_lru_table_message_is_words() -> None:
    assert _absent_ids_message(["a"], []) == (
        "the manager still holds session 'a' ('in manager' is True), but should not hold "
        "it: by the spec it was evicted, dropped or never created"
    )
    two = _absent_ids_message(["a", 7], [])
    assert "sessions" not in two and "'a', 7" in two and "were evicted" in two
    assert _absent_ids_message([], ["b"]) == (
        "the manager does not hold session 'b' ('in manager' is False), which it should"
    )


def _subject_helper() -> None:
    raise KeyError("deep inside")


def _subject_call() -> None:
    _subject_helper()


def test_a_failure_the_subject_raised_shows_where() -> None:
    """These functions live outside the suite, the standard library and the libraries the
    suite runs on: to the suite they are the subject's code."""
    with pytest.raises(ClauseFailure) as caught, calling("STATS-1", "manager.stats()"):
        _subject_call()
    first, heading, *frames = str(caught.value).splitlines()
    assert first == "manager.stats() raised KeyError('deep inside') [STATS-1]"
    assert heading == "  raised in the subject's code (innermost last):"
    name = Path(__file__).name
    assert frames[-4].startswith('    File "') and name in frames[-4]
    assert frames[-4].endswith(", in _subject_call")
    assert frames[-3] == "      _subject_helper()"
    assert frames[-2].endswith(", in _subject_helper")
    assert frames[-1] == '      raise KeyError("deep inside")'


def test_library_frames_are_not_shown() -> None:
    import json

    with pytest.raises(ClauseFailure) as caught, calling("STATS-1", "json.loads('')"):
        json.loads("")
    assert "json.loads('') raised JSONDecodeError" in str(caught.value)
    assert "decoder.py" not in str(caught.value) and "__init__.py" not in str(caught.value)


def test_the_seconds_column_says_what_it_sums() -> None:
    clause = {"level": "MUST", "outcome": "passed", "tests": ["t"], "seconds": 30.0, "message": ""}
    results = {
        "subject": "s", "target": "m:s", "suite_version": "3", "profile": "ci", "seed": None,
        "environment": {"torch": "x", "numpy": "y", "hypothesis": "z", "devices": []},
        "capabilities": [], "clauses": {"LRU-1": clause, "LRU-3": dict(clause)},
        "seconds": 40.0, "strict": False, "unmatched_expectations": [], "verdict": "conformant",
    }  # fmt: skip
    lines = table_lines(results)
    assert any(" test s  note" in line for line in lines)
    assert any("sums to 60.0 s, more than the run's 40.0 s of wall time" in line for line in lines)
    results["seconds"] = 90.0
    assert not any("wall time" in line for line in table_lines(results))


def test_the_header_states_the_run_bound_and_a_reason_is_said_once() -> None:
    """The header names the whole run's bound beside each test's, and the notes under the
    table say each reason once, with every clause it stopped (a slow call that left twenty
    clauses unchecked was printed twenty times)."""
    from sessionstate.conformance._report.terminal import _unchecked_in_full

    facts = {"subject": "s", "capabilities": [],
             "environment": {"devices": [{"name": "cpu", "simulated": False}]}}  # fmt: skip
    lines = start_lines(facts, "m:s", "quick", None, None, 120.0, 600.0)
    assert lines[1] == (
        "  profile quick, derandomized; each test cut off after 120 s, the run after 600 s"
    )
    slow = "not checked to the end: stopped for time: stats() took 6.1 s a call"
    clause = {"level": "MUST", "outcome": "unchecked", "message": slow}
    other = {"level": "MUST", "outcome": "unchecked", "message": "not checked: no CUDA"}
    results = {"clauses": {"STATS-1": clause, "STATS-2": clause, "LRU-1": clause, "ACCT-4": other}}
    notes = [line for line in _unchecked_in_full(results) if line.startswith("  ") and ": " in line]
    assert sum(slow in line for line in notes) == 1, notes
    assert any(
        line.endswith(f": {slow}") and "STATS-1" in line and "LRU-1" in line for line in notes
    )
    assert "  ACCT-4: not checked: no CUDA" in notes
