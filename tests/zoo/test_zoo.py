"""Every zoo subject is caught, by the command an implementer runs, for the clause it breaks.

Each run is a separate ``sessionstate check`` process selecting only the
clauses the subject must fail, so the test is xdist-friendly and a run stays
short. SHOULD-only subjects run with ``--strict``, which is what makes a
SHOULD failure decide the verdict. The first subject of each group (its name's
prefix) runs the ``quick`` profile exactly as a user does, shrinking included; the
first of the whole zoo runs through the console script, the others through the fork
server (``conftest.run_check``), the same command without a fresh interpreter (two
interpreters' start-up, torch imported twice, are most of a run's time; the console
script's own path is walked by tests/cli).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance import Subject
from sessionstate.conformance.clauses import all_clauses
from sessionstate.fixtures import zoo
from sessionstate.fixtures.zoo import ZOO, ZooEntry

BASELINE = "sessionstate.fixtures.zoo._kit:baseline"
HEAP_BASELINE = "sessionstate.fixtures.zoo._heap_kit:heap_baseline"


def _group(entry: ZooEntry) -> str:
    return entry.name.partition("_")[0]


#: One subject per group (the first, in ZOO's order) runs ``quick`` as a user does.
VERBATIM = {next(e.name for e in ZOO if _group(e) == g) for g in {_group(e) for e in ZOO}}
#: The one subject checked through the console script.
CONSOLE_SCRIPT = ZOO[0].name


def _should_only(entry: ZooEntry) -> bool:
    return all(all_clauses()[cid].level == "SHOULD" for cid in entry.kills)


@pytest.mark.parametrize("entry", ZOO, ids=[entry.name for entry in ZOO])
def test_zoo_subject_fails_its_clauses(entry: ZooEntry, run_check: Any) -> None:
    """Caught at the quick profile, and every clause in KILLS is reported failed.

    Every clause's basic statement runs as explicit examples or fixed programs, so a
    single-bug subject is caught by the smallest search too (SPEC: every profile).
    The group's verbatim subject runs ``quick`` exactly as a user does, shrinking
    included; the others run ``quick``'s search without shrinking (``quick-unshrunk``):
    whether and as which clause the first failing case is caught, not how small its
    program gets, which took half of each run's time."""
    # Only the declared clauses' tests run: the detection benchmark covers whole groups.
    strict = _should_only(entry)
    verbatim = entry.name == CONSOLE_SCRIPT
    quick, ci = ("quick", "ci") if entry.name in VERBATIM else ("quick-unshrunk", "triage")
    run = run_check(entry.target, entry.kills, strict=strict, profile=quick, verbatim=verbatim)
    assert run.report["verdict"] == "non-conformant", f"{entry.bug}\n{run.describe()}"
    if set(run.outcomes(entry.kills).values()) != {"failed"}:
        # A program may stop at another clause first; the default profile's search is
        # what an implementer would run next.
        run = run_check(entry.target, entry.kills, strict=strict, profile=ci, verbatim=verbatim)
    assert run.report["verdict"] == "non-conformant", f"{entry.bug}\n{run.describe()}"
    assert run.returncode == 1, run.describe()
    assert run.outcomes(entry.kills) == dict.fromkeys(entry.kills, "failed"), (
        f"{entry.name}: {entry.bug}\n{run.describe()}"
    )
    assert _untagged_failures(run) == [], "a test raised a clause it is not tagged with"


def _untagged_failures(run: Any) -> list[str]:
    """Every clause a test failed must be among its tags: the tags say what a test checks,
    and a clause raised from an untagged test would be unchecked in a narrowed run."""
    return [
        f"{test['nodeid']} raised {cid}, tagged {test['clauses']}"
        for test in run.report["tests"]
        for cid in test["failed_clauses"]
        if cid not in test["clauses"]
    ]


def _clean_pass(target: str, run_check: Any) -> None:
    # quick, as every zoo subject is first run: a failure there is then the planted bug.
    run = run_check(target, verbatim=True, profile="quick")
    bad = {cid: o for cid, o in run.outcomes().items() if o not in ("passed", "skipped")}
    assert (run.report["verdict"], bad) == ("conformant", {}), run.describe()
    assert run.returncode == 0, run.describe()
    assert run.report["unmatched_expectations"] == []


def test_kit_baseline_passes_every_clause(run_check: Any) -> None:
    """The zoo's scaffolding without a planted bug passes, so each failure is the planted bug."""
    _clean_pass(BASELINE, run_check)


def test_heap_kit_baseline_passes_every_clause(run_check: Any) -> None:
    """The lazily-deleted recency heap with no bug planted passes: the LRU machines' runs
    of hits and bursts of misses, and the histories at capacity, fail no correct design
    of that kind (a false-positive check)."""
    _clean_pass(HEAP_BASELINE, run_check)


def test_every_group_has_a_subject_checked_verbatim() -> None:
    """Each group's first subject runs ``quick`` as a user does, shrinking included; the
    first of the zoo goes through the console script as well."""
    assert {_group(e) for e in ZOO} == {n.partition("_")[0] for n in VERBATIM}
    assert len(VERBATIM) == len({_group(e) for e in ZOO})
    assert CONSOLE_SCRIPT in VERBATIM


def test_registry_lists_every_zoo_module() -> None:
    """ZOO holds one entry per public module file, sorted, and no scaffolding."""
    files = sorted(p.stem for p in Path(zoo.__file__).parent.glob("*.py"))
    assert [e.name for e in ZOO] == [f for f in files if not f.startswith("_")]


@pytest.mark.parametrize("entry", ZOO, ids=[entry.name for entry in ZOO])
def test_zoo_module_is_well_formed(entry: ZooEntry) -> None:
    """A Subject named after its module, its bug stated once (BUG), and the target."""
    module = importlib.import_module(entry.target.partition(":")[0])
    assert isinstance(module.subject, Subject)
    assert module.subject.name == entry.name
    assert entry.bug == module.BUG and entry.bug.strip() and module.__doc__ is None
    assert entry.target == f"sessionstate.fixtures.zoo.{entry.name}:subject"
