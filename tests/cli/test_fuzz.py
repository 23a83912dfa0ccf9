"""``sessionstate fuzz``: HypoFuzz finds a zoo bug, stores it, and ``check --database``
replays it; against the reference it finds nothing and counts what it ran; misuse is one
line and exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstate.conformance._harness.fuzz import _skipped_groups, group_counts

from .conftest import Run, one_line_error, reuse_failures

pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")

ZOO = "sessionstate.fixtures.zoo.lru_mru_eviction:subject"


def _table_row(stdout: str, clause: str) -> str:
    rows = [line for line in stdout.splitlines() if line.startswith(f"{clause} ")]
    assert rows, stdout[-3000:]
    return rows[0]


#: A pytest plugin for ``check``: writes each Hypothesis test's database key (as the run
#: keys it, aligned with HypoFuzz's) to ``$KEYS_OUT``.
KEYS_PLUGIN = """
import json, os
import pytest
from hypothesis.internal.reflection import function_digest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    keys = {}
    for item in items:
        inner = getattr(getattr(getattr(item, "obj", None), "hypothesis", None), "inner_test", None)
        if inner is not None:
            keys[item.nodeid] = function_digest(inner).hex()
    with open(os.environ["KEYS_OUT"], "w") as out:
        json.dump(keys, out)
"""


def seed_fuzz_corpus(run_cli: Run, tmp_path: Path, db: Path) -> None:
    """Have ``check --database`` find the zoo bug and store it, then copy each stored failure
    into HypoFuzz's corpus for that test, so that the fuzzer's first replay is the failing
    case: the test pins that ``fuzz`` runs it, reports it and stores it where ``check``
    finds it, not how lucky a search is against the clock on a loaded machine."""
    from hypofuzz.database.database import corpus_key
    from hypothesis.database import DirectoryBasedExampleDatabase

    (tmp_path / "fuzz_keys.py").write_text(KEYS_PLUGIN, encoding="utf-8")
    keys_out = tmp_path / "keys.json"
    db.mkdir()  # check reads a database it is given; it never makes one
    os.environ["KEYS_OUT"] = str(keys_out)
    try:
        found = run_cli("check", ZOO, "--database", str(db), "--clause", "LRU-4", "--",
                        "-p", "fuzz_keys")  # fmt: skip
    finally:
        del os.environ["KEYS_OUT"]
    assert found.returncode == 1, found.stdout[-3000:] + found.stderr[-3000:]
    database = DirectoryBasedExampleDatabase(str(db))
    seeded = 0
    for key in json.loads(keys_out.read_text(encoding="utf-8")).values():
        for value in database.fetch(bytes.fromhex(key)):
            database.save(bytes.fromhex(key) + corpus_key, value)
            seeded += 1
    assert seeded, "check stored no failing case to seed the fuzzer with"


def test_fuzz_finds_a_zoo_bug_and_check_replays_it(run_cli: Run, tmp_path: Path) -> None:
    db = tmp_path / "db"
    seed_fuzz_corpus(run_cli, tmp_path, db)
    fuzz = run_cli("fuzz", ZOO, "--seconds", "120", "-n", "2", "--database", str(db),
                   "--clause", "LRU")  # fmt: skip
    assert fuzz.returncode == 1, fuzz.stdout[-3000:] + fuzz.stderr[-3000:]
    assert "FAIL" in _table_row(fuzz.stdout, "LRU-4")
    assert f"database: {db}" in fuzz.stdout
    found = re.search(r"sessionstate fuzz: (\S+::\S+) failed after", fuzz.stdout)
    assert found, fuzz.stdout[-3000:]
    test = found.group(1)

    def check(database: Path) -> subprocess.CompletedProcess[str]:
        return run_cli("check", ZOO, "--database", str(database), "--clause", "LRU", "--",
                       "-k", test.split("::")[1], "--hypothesis-show-statistics")  # fmt: skip

    replay = check(db)
    assert replay.returncode == 1, replay.stdout[-3000:] + replay.stderr[-3000:]
    assert "FAIL" in _table_row(replay.stdout, "LRU-4")
    # The failing case came out of the database, not out of a new search.
    assert reuse_failures(replay.stdout, test) == 1, replay.stdout[-4000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    control = check(empty)
    assert reuse_failures(control.stdout, test) is None, control.stdout[-4000:]


def test_fuzzing_the_reference_finds_nothing_and_counts(run_cli: Run, tmp_path: Path) -> None:
    """40 s, not less: HypoFuzz's start-up (collecting the suite, torch) takes 5 s on an idle
    machine and several times that on a loaded CI one, before the first example."""
    db = tmp_path / "db"
    # 25 s in all, the quick pass included (--seconds bounds the whole run).
    result = run_cli("fuzz", "--seconds", "25", "-n", "1", "--database", str(db),
                     "--clause", "LRU")  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "no failure in" in result.stdout
    counts = re.search(r"^  LRU +([\d,]+)$", result.stdout, flags=re.MULTILINE)
    assert counts, result.stdout
    assert int(counts.group(1).replace(",", "")) > 0
    assert "fuzzing:" in result.stdout  # progress lines (not a terminal: plain lines)
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["fuzz", "no_such_module:subject", "--seconds", "5"], "no_such_module"),
        (["fuzz", "--seconds", "0"], "--seconds 0"),
        (["fuzz", "--seconds", "-3"], "--seconds -3"),
        (["fuzz", "-n", "0", "--seconds", "5"], "-n 0"),
        (["fuzz", "--clause", "NOPE", "--seconds", "5"], "NOPE"),
        (["fuzz", "--database", "ftp://host/db", "--seconds", "5"], "unknown scheme 'ftp'"),
        (["fuzz", "--database", "redis://127.0.0.1:notaport", "--seconds", "5"], "port"),
        (["check", "--database", "{tmp}/missing", "--clause", "LRU"], "no such directory"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_misuse_is_one_line(run_cli: Run, tmp_path: Path, args: list[str], says: str) -> None:
    stderr = one_line_error(run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in args)))
    assert says in stderr
    assert not (tmp_path / "missing").exists()  # check never makes a database


def test_missing_extra_names_it(tmp_path: Path) -> None:
    """Without HypoFuzz (a package shadowing it that fails to import, and no entry point
    of it loaded, as when it is not installed), one line names the extra to install."""
    fake = tmp_path / "hypofuzz"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HYPOTHESIS_NO_PLUGINS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "sessionstate", "fuzz", "--seconds", "5"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip
    stderr = one_line_error(result)
    # sessionstate is not on the package registry: name the extra, not a command that fails.
    assert "install sessionstate with its [fuzz] extra" in stderr
    assert "docs/fuzzing.md" in stderr and "pip install 'sessionstate[fuzz]'" not in stderr


def test_examples_count_under_every_group_their_test_checks() -> None:
    """``--clause LRU`` selects tests of ``test_drop.py`` that check LRU clauses; their
    examples are LRU's too (as the check's table counts them), not "no test of it"."""
    counts = {
        "x/conformance/suite/test_drop.py::test_drop_of_evicted_id_leaves_holders_data": 5,
        "test_stats.py::test_not_in_the_index": 2,
    }
    assert group_counts(counts, ["LRU"]) == {"LRU": 5, "DROP": 5, "STATS": 2}


def test_a_group_the_quick_pass_skipped_whole_is_not_applicable(tmp_path: Path) -> None:
    """A group whose every clause the quick pass skipped (a capability the subject lacks)
    reads "not applicable" in the summary, not "no test of it started yet"; a group with
    one clause run, or an unreadable report, is not."""
    report = tmp_path / "quick.json"
    report.write_text(json.dumps({"clauses": {
        "LOST-1": {"outcome": "skipped"}, "LOST-2": {"outcome": "skipped"},
        "LRU-1": {"outcome": "passed"}, "LRU-2": {"outcome": "skipped"},
    }}), encoding="utf-8")  # fmt: skip
    assert _skipped_groups(report) == {"LOST"}
    report.write_text("[1, 2]", encoding="utf-8")
    assert _skipped_groups(report) == set()
    assert _skipped_groups(tmp_path / "missing.json") == set()
