"""Every zoo subject is caught, by the command an implementer runs, for the clause it breaks.

Each run is a separate ``sessionstate check`` process selecting only the groups
of the clauses the subject must fail, so the test is xdist-friendly and a run
stays short. SHOULD-only subjects run with ``--strict``, which is what makes a
SHOULD failure decide the verdict.
"""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance.clauses import all_clauses
from sessionstate.fixtures.zoo import ZOO, ZooEntry

REFERENCE = "sessionstate.fixtures.reference_subject:subject"
BASELINE = "sessionstate.fixtures.zoo._kit:baseline"


def _should_only(entry: ZooEntry) -> bool:
    return all(all_clauses()[cid].level == "SHOULD" for cid in entry.kills)


@pytest.mark.parametrize("entry", ZOO, ids=[entry.name for entry in ZOO])
def test_zoo_subject_fails_its_clauses(entry: ZooEntry, run_check: Any) -> None:
    """The verdict is non-conformant and every clause in KILLS is reported failed."""
    run = run_check(entry.target, entry.groups, strict=_should_only(entry))
    assert run.report["verdict"] == "non-conformant", f"{entry.bug}\n{run.describe()}"
    assert run.returncode == 1, run.describe()
    assert run.outcomes(entry.kills) == dict.fromkeys(entry.kills, "failed"), (
        f"{entry.name}: {entry.bug}\n{run.describe()}"
    )


def _clean_pass(target: str, run_check: Any) -> None:
    run = run_check(target)
    bad = {cid: o for cid, o in run.outcomes().items() if o not in ("passed", "skipped")}
    assert (run.report["verdict"], bad) == ("conformant", {}), run.describe()
    assert run.returncode == 0, run.describe()
    assert run.report["unmatched_expectations"] == []


def test_reference_passes_every_clause(run_check: Any) -> None:
    """The reference, with no expectations file, passes: no clause failed, errored or xfailed."""
    _clean_pass(REFERENCE, run_check)


def test_kit_baseline_passes_every_clause(run_check: Any) -> None:
    """The zoo's scaffolding without a planted bug passes, so each failure is the planted bug."""
    _clean_pass(BASELINE, run_check)
