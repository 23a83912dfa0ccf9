"""``sessionstate fuzz`` first runs every selected test once at the quick profile, and
fuzzes in as many processes as there are usable CPUs unless told otherwise: what ``check``
finds in seconds is never left to the fuzzer's luck, and no clause group goes unexercised.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from sessionstate.cli import _build_parser
from sessionstate.conformance._harness.fuzz import FuzzOptions, _failed_tests, usable_cores

from .conftest import Run

pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")

ZOO = "sessionstate.fixtures.zoo.lru_hit_no_refresh:subject"


def test_processes_default_to_the_usable_cores() -> None:
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cores() == expected
    assert FuzzOptions().workers == expected
    args = _build_parser().parse_args(["fuzz"])
    assert args.workers is None  # resolved to usable_cores() by the command
    assert _build_parser().parse_args(["fuzz", "-n", "3"]).workers == 3


def test_the_quick_pass_can_be_left_out() -> None:
    assert _build_parser().parse_args(["fuzz"]).quick_pass is True
    assert _build_parser().parse_args(["fuzz", "--no-quick-pass"]).quick_pass is False


def test_the_failed_test_named_is_one_with_a_case_to_replay(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    tests = [
        {"nodeid": "s/test_lru.py::test_program[LRU-3-2]", "outcome": "failed", "reproduce": ""},
        {"nodeid": "s/test_lru.py::test_order_machine", "outcome": "failed", "reproduce": "x"},
        {"nodeid": "s/test_lru.py::test_ok", "outcome": "passed", "reproduce": ""},
    ]
    report.write_text(json.dumps({"tests": tests}), encoding="utf-8")
    assert _failed_tests(report) == [
        "s/test_lru.py::test_order_machine", "s/test_lru.py::test_program[LRU-3-2]",
    ]  # fmt: skip
    assert _failed_tests(tmp_path / "missing.json") == []


def test_the_quick_pass_finds_what_check_finds_before_fuzzing(run_cli: Run, tmp_path: Path) -> None:
    """lru_hit_no_refresh took HypoFuzz 97 s with -n 2; the quick pass, which is
    derandomized, finds it every time, before HypoFuzz starts (no 'fuzzing:' line), and
    reports it as the check does, with its failing cases saved for a replay."""
    db = tmp_path / "db"
    fuzz = run_cli("fuzz", ZOO, "--clause", "LRU-3", "--seconds", "600", "-n", "1",
                   "--database", str(db))  # fmt: skip
    out = fuzz.stdout
    assert fuzz.returncode == 1, out[-3000:] + fuzz.stderr[-3000:]
    assert "quick pass: every selected test once at the quick profile" in out
    assert "fuzzing:" not in out  # HypoFuzz never started
    row = [line for line in out.splitlines() if line.startswith("LRU-3 ")]
    assert row and "FAIL" in row[0], out[-3000:]
    found = re.search(r"sessionstate fuzz: (\S+::\S+) failed after \d+ s, in the quick pass", out)
    assert found, out[-3000:]
    assert "machine" in found.group(1)  # a Hypothesis test, whose case the database holds
    assert any(db.iterdir()), "the quick pass saved nothing in the database"


def test_seconds_bound_the_whole_run_quick_pass_included(run_cli: Run, tmp_path: Path) -> None:
    """``--seconds 1`` ends within seconds: the quick pass is inside the bound (it ran past
    60 s when only HypoFuzz's time was counted), cut short it is incomplete (exit 3), and
    the line says which bound cut it."""
    started = time.monotonic()
    fuzz = run_cli("fuzz", "sessionstate.fixtures.reference_subject:subject", "--clause", "KEY-1",
                   "--seconds", "1", "-n", "1", "--database", str(tmp_path / "db"))  # fmt: skip
    assert fuzz.returncode == 3, fuzz.stdout[-3000:] + fuzz.stderr[-3000:]
    assert time.monotonic() - started < 45
    assert "cut off by --seconds 1, which bounds the whole run" in fuzz.stderr
