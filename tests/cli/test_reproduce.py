"""A failure's summary prints the command that replays it, and that command does."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import hypothesis
import pytest

#: A zoo subject whose state machines fail LRU-3; triage: the ci search, no shrinking.
BROKEN = "sessionstate.fixtures.zoo.lru_hit_no_refresh:subject"


def _commands(stdout: str) -> list[list[str]]:
    """The ready commands printed under the summary, as argument lists."""
    lines = stdout.split("reproduce a failure (runs that test alone, replaying its failing case):")
    assert len(lines) == 2, stdout[-3000:]
    commands = []
    for line in lines[1].splitlines():
        if line.startswith("  sessionstate check "):
            commands.append(shlex.split(line)[2:])
    return commands


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """One failing check of LRU-3: its output and its JSON report."""
    import os
    import subprocess
    import sys

    where = tmp_path_factory.mktemp("failing")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", BROKEN, "--clause", "LRU-3",
         "--profile", "triage", "--report-json", "r.json"],
        capture_output=True, text=True, cwd=where, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout, json.loads((where / "r.json").read_text(encoding="utf-8"))


def test_each_failure_gets_a_ready_command(failing_run: tuple[str, dict]) -> None:
    """No "decorate your test function" hint pointing into site-packages: a command,
    in the failure's text and under the summary, one per failed clause, each with the
    blob of the failed test it runs."""
    stdout, report = failing_run
    assert "as a decorator on your test function" not in stdout
    assert f"Reproduce this failure alone: sessionstate check {BROKEN} --profile triage" in stdout
    failed = {t["nodeid"]: t for t in report["tests"] if t["outcome"] == "failed"}
    clauses = [c for c, r in report["clauses"].items() if r["outcome"] in ("failed", "error")]
    commands = _commands(stdout)
    assert 0 < len(commands) <= len(clauses), (commands, clauses)
    assert "see the JSON" not in stdout
    for command in commands:
        record = failed[command[command.index("--reproduce") + 1]]
        if record["reproduce"]:
            assert command[command.index("--blob") + 1] == record["reproduce"]
    assert any("--blob" in c for c in commands), "no failing test left a blob"


def test_the_command_replays_the_failure_alone(
    failing_run: tuple[str, dict], run_cli, tmp_path: Path
) -> None:
    """The printed command runs one test, on the blob's case, and fails the same clause."""
    stdout, report = failing_run
    command = next(c for c in _commands(stdout) if "--blob" in c)
    test_id = command[command.index("--reproduce") + 1]
    original = next(t for t in report["tests"] if t["nodeid"].endswith(test_id))
    done = run_cli("check", *command, "--report-json", "again.json")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert [t["nodeid"] for t in again["tests"]] == [original["nodeid"]]
    assert again["tests"][0]["failed_clauses"] == original["failed_clauses"] == ["LRU-3"]
    assert again["clauses"]["LRU-3"]["outcome"] == "failed"
    # Its other clauses were checked by this one test only: never reported as passed.
    assert "passed" not in {c["outcome"] for c in again["clauses"].values()}
    # The shrunk program, as Hypothesis prints it for the machine the test runs.
    assert f"Failing test case: {test_id.rsplit('::', 1)[1]}(" in done.stdout
    # Its steps: a single get_or_create_session, or the LRU machines' runs of hits and
    # bursts of misses (get_or_create_session_repeatedly / _newcomers).
    assert "state = " in done.stdout
    assert re.search(r"^E .*\bstate\.get_or_create_session\w*\(", done.stdout, re.M)


def test_a_fixed_subject_passes_the_case(failing_run: tuple[str, dict], run_cli) -> None:
    """Replayed against the reference, the case passes: exit 3 (one test is no verdict)."""
    stdout, _ = failing_run
    command = next(c for c in _commands(stdout) if "--blob" in c)
    command[0] = "sessionstate.fixtures.reference_subject:subject"
    done = run_cli("check", *command)
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "passed on that case" in done.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--blob", "6.1.0:AAAA"], "--blob replays a failing case of one test"),
        (["--reproduce", "test_lru.py::test_manager_machine", "--blob", "nonsense"],
         "is not of the form 'HYPOTHESIS_VERSION:BLOB'"),
        (["--reproduce", "test_lru.py::test_manager_machine", "--blob", "0.0.1:AAAA"],
         "--blob was made by Hypothesis 0.0.1"),
        # The right version, data cut short: it said the header, "no tests ran", pytest's
        # ERROR line and "the suite did not run".
        (["--reproduce", "test_lru.py::test_manager_machine", "--blob",
          f"{hypothesis.__version__}:AXicZZZZnotbase64"],
         "is not a failing case Hypothesis can read"),
        (["--reproduce", "test_lru.py::test_manager_machine", "--blob",
          f"{hypothesis.__version__}:Ag=="], "is not a failing case Hypothesis can read"),
        (["--reproduce", "test_lru.py::test_manager_machin"], "did you mean 'test_manager_machine'"),
        (["--reproduce", "lru.py::test_x"], "is not a test of the suite"),
        (["--reproduce", "test_lru.py::test_manager_machine", "-n", "2"],
         "--reproduce runs one test in one process"),
    ],
)  # fmt: skip
def test_misuse_is_one_line(run_cli, args: list[str], needle: str) -> None:
    done = run_cli("check", *args)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert needle in done.stderr
    assert done.stdout == ""


# The pieces of ``_harness.reproduce``, on their own -------------------------------------


def test_a_blob_is_version_colon_ascii() -> None:
    from sessionstate.conformance._harness.reproduce import parse_blob

    assert parse_blob("6.170.17:AXic") == ("6.170.17", b"AXic")
    for bad in ["", "6.170.17", ":AXic", "6.170.17:", "6.170.17:AX\u00e9"]:
        with pytest.raises(ValueError, match="HYPOTHESIS_VERSION:BLOB"):
            parse_blob(bad)


def test_the_command_replays_one_test_and_quotes_what_a_shell_would_split() -> None:
    from sessionstate.conformance._harness.reproduce import command

    nodeid = "site-packages/sessionstate/conformance/suite/test_lru.py::test_x[a b]"
    assert command("pkg:s", nodeid, "6.1:AA", profile="quick", expectations="e f.txt") == (
        "sessionstate check pkg:s --profile quick --expectations 'e f.txt' "
        "--reproduce 'test_lru.py::test_x[a b]' --blob 6.1:AA"
    )
    assert command("pkg:s", "test_lru.py::t", seed=3) == (
        "sessionstate check pkg:s --reproduce test_lru.py::t --seed 3"
    )


def test_the_blob_is_read_from_hypothesis_note_and_the_note_rewritten() -> None:
    from sessionstate.conformance._harness.reproduce import blob_from_notes

    error = AssertionError("boom")
    error.add_note("unrelated")
    error.add_note(
        "You can reproduce this test case by temporarily adding "
        "@reproduce_failure('6.170.17', b'AXicY2A=') as a decorator on your test function"
    )
    assert blob_from_notes(error, lambda blob: f"run: {blob}") == "6.170.17:AXicY2A="
    assert error.__notes__ == ["unrelated", "run: 6.170.17:AXicY2A="]
    assert blob_from_notes(AssertionError("no notes")) == ""
