"""A Redis example database shared by runs, against a real ``redis-server``.

What one run saves there (a fuzzing host's ``sessionstate fuzz``) the next replays (a CI
job's ``sessionstate check --database redis://...``). The server (``redis_url``, in
tests/conftest.py) is started on a free local port and stopped at teardown. Without the ``redis-server`` binary the test skips,
saying so, except in CI (``CI=true``), where .ci/run installs it and its absence fails.
"""

from __future__ import annotations

import re

import pytest

from .conftest import Run, reuse_failures

pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")
redis = pytest.importorskip("redis", reason="redis is in the [fuzz] extra")

ZOO = "sessionstate.fixtures.zoo.lru_mru_eviction:subject"


def test_a_failure_fuzzed_into_redis_is_replayed_by_check(run_cli: Run, redis_url: str) -> None:
    fuzz = run_cli("fuzz", ZOO, "--seconds", "120", "-n", "1", "--database", redis_url,
                   "--clause", "LRU")  # fmt: skip
    assert fuzz.returncode == 1, fuzz.stdout[-3000:] + fuzz.stderr[-3000:]
    assert f"database: {redis_url}" in fuzz.stdout
    found = re.search(r"sessionstate fuzz: (\S+::\S+) failed after", fuzz.stdout)
    assert found, fuzz.stdout[-3000:]
    test = found.group(1)
    replay = run_cli("check", ZOO, "--database", redis_url, "--clause", "LRU", "--",
                     "-k", test.split("::")[1], "--hypothesis-show-statistics")  # fmt: skip
    assert replay.returncode == 1, replay.stdout[-3000:] + replay.stderr[-3000:]
    # Whatever program HypoFuzz stored (drops ahead of the eviction included), the MRU
    # eviction is LRU-4's: a drop is blamed only where the same misses without it evict
    # oldest first (tests/conformance/test_manager.py).
    assert re.search(r"^LRU-4 +MUST +FAIL", replay.stdout, flags=re.MULTILINE), replay.stdout
    assert reuse_failures(replay.stdout, test) == 1, replay.stdout[-4000:]
    shown = [line for line in fuzz.stdout.splitlines() if line.startswith("sessionstate fuzz:")]
    stats = replay.stdout.split(f"{test}:", 1)[1].split("\n\n  - Stopped because", 1)[0]
    rows = [
        line
        for line in replay.stdout.splitlines()
        if line.startswith(("LRU-4 ", "DROP-1 ", "verdict"))
    ]
    print("", *shown, "check --database: " + test + stats, *rows, sep="\n")


def test_check_saves_to_redis_and_the_next_check_replays(run_cli: Run, redis_url: str) -> None:
    """Without the fuzzer: a check's own failure, saved in Redis, is the next check's first
    case (the database is Hypothesis' own, whoever wrote it)."""
    args = ("check", ZOO, "--database", redis_url, "--clause", "LRU", "--",
            "-k", "test_order_machine", "--hypothesis-show-statistics")  # fmt: skip
    first = run_cli(*args)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert reuse_failures(first.stdout, "test_lru.py::test_order_machine") is None
    second = run_cli(*args)
    assert second.returncode == 1, second.stdout[-3000:] + second.stderr[-3000:]
    assert reuse_failures(second.stdout, "test_lru.py::test_order_machine") == 1
