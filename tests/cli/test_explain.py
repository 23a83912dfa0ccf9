"""`sessionstate explain ID` answers "where is clause X": its tests, model and machine
lines, zoo subjects and reference lines, each list checked against an independent source."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sessionstate.fixtures.zoo import ZOO


def _section(stdout: str, title: str) -> list[str]:
    """The indented lines under the heading that starts with ``title``."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        body.append(line.strip())
    return body


@pytest.fixture(scope="module")
def lru4(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """``explain LRU-4``'s output, and a real run of the LRU and DROP groups' report."""
    import subprocess
    import sys

    where = tmp_path_factory.mktemp("explain")
    explain = subprocess.run(
        [sys.executable, "-m", "sessionstate", "explain", "LRU-4"],
        capture_output=True, text=True, cwd=where, timeout=300,
    )  # fmt: skip
    assert explain.returncode == 0, explain.stderr
    check = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "--clause", "LRU", "--clause", "DROP",
         "--clause", "STATS", "--profile", "quick", "--report-json", "r.json"],
        capture_output=True, text=True, cwd=where, timeout=600,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-2000:]
    return explain.stdout, json.loads((where / "r.json").read_text(encoding="utf-8"))


def test_tests_are_exactly_those_a_report_puts_under_the_clause(
    lru4: tuple[str, dict[str, Any]],
) -> None:
    """Every test whose result the report counts for LRU-4, and no other, grouped by
    function with its cases."""
    stdout, report = lru4
    listed = set()
    for line in _section(stdout, "Tests that can fail it"):
        function, _, cases = line.partition("[")
        if not function.startswith("test_"):
            continue  # a group heading
        if cases:
            listed |= {f"{function}[{case}]" for case in cases.rstrip("]").split(", ")}
        else:
            listed.add(function)
    ran = {t["nodeid"].split("suite/", 1)[-1] for t in report["tests"] if "LRU-4" in t["clauses"]}
    assert listed == ran
    count = re.search(r"Tests that can fail it \((\d+),", stdout)
    assert count and int(count.group(1)) == len(ran)


def test_the_programs_aimed_at_it_come_first(lru4: tuple[str, dict[str, Any]]) -> None:
    stdout, _ = lru4
    body = _section(stdout, "Tests that can fail it")
    machines = body.index("state machines that check it after every step:")
    assert body[:machines] == ["aimed at it:", "test_lru.py::test_program[LRU-4-3, LRU-4-4]"]
    # A DROP-4 test (its first tag) with an explicit LRU-4 check: listed, on the way.
    on_the_way = body[body.index("tests that check it on the way:") :]
    assert "test_drop.py::test_drop_of_evicted_id_leaves_holders_data" in on_the_way


def test_zoo_subjects_are_those_whose_bug_kills_it(lru4: tuple[str, dict[str, Any]]) -> None:
    stdout, _ = lru4
    listed = {line.split()[0] for line in _section(stdout, "Zoo subjects")}
    assert listed == {f"fixtures/zoo/{e.name}.py" for e in ZOO if "LRU-4" in e.kills}
    assert listed  # the zoo has LRU-4 bugs


def test_model_machine_and_reference_lines_are_real_lines_naming_it(
    lru4: tuple[str, dict[str, Any]],
) -> None:
    """Each listed line exists at that number and names LRU-4 (or a range holding it)."""
    stdout, _ = lru4
    root = Path(__file__).resolve().parents[2]
    model = _section(stdout, "Model and machine lines")
    reference = _section(stdout, "Reference lines")
    assert any(line.startswith("conformance/_machine/manager.py:") for line in model)
    assert any(line.startswith("conformance/_model/manager.py:") for line in model)
    assert reference, "the reference's eviction is tagged LRU-4"
    for line in model + reference:
        location, _, text = line.partition("  ")
        path, _, number = location.rpartition(":")
        source = (root / path).read_text(encoding="utf-8").splitlines()[int(number) - 1]
        assert source.strip().startswith(text.removesuffix("...").strip())
        assert re.search(r"LRU-4\b|LRU-[1-3]\.\.[4-9]", source), line


def test_ids_in_any_case_and_groups(tmp_path: Path) -> None:
    """``lru-4`` is LRU-4; ``lru`` lists the group's clauses; an unknown id is one line."""
    import subprocess
    import sys

    def explain(arg: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "sessionstate", "explain", arg]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)

    lower, upper = explain("lru-4"), explain("LRU-4")
    assert lower.returncode == 0 and lower.stdout == upper.stdout
    group = explain("lru")
    assert group.returncode == 0, group.stderr
    listed = [line.split()[0] for line in group.stdout.splitlines()[1:]]
    assert listed == [f"LRU-{n}" for n in range(1, len(listed) + 1)] and len(listed) >= 8
    unknown = explain("LRU-44")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1 and "did you mean 'LRU-4'?" in unknown.stderr
