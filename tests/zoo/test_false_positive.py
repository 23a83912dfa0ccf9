"""A correct implementation of a different design passes every clause (no false positives).

``sessionstate.fixtures.alternative_manager`` shares no code with the reference
manager: a linked-list LRU over a plain dict, an RLock by default, its own
sessions, buffers (with a StateObjectSpec), accounting and config resolver. If the suite had quietly
learnt the reference's internals, this is where it would show.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from sessionstate.conformance.clauses import all_clauses
from sessionstate.fixtures import alternative_manager
from sessionstate.fixtures.alternative_manager import AlternativeManager

TARGET = "sessionstate.fixtures.alternative_manager:subject"
#: Every group but ADAPT, which needs a model adapter spec the alternative does
#: not bring (its AltBuffer spec runs the OBJ clauses). LOST runs on its own
#: ``require_session``, a second design beside the reference's.
CORE_GROUPS = ("KEY", "LRU", "RESET", "DROP", "ACCT", "STATS", "ENV", "LOCK", "OBJ", "ADMIT")
CORE_GROUPS += ("LOST",)


def test_alternative_passes_every_clause(run_check: Any) -> None:
    """Verdict conformant, even with --strict, and every core clause actually passed."""
    run = run_check(TARGET, strict=True)
    core = [cid for cid, c in all_clauses().items() if c.group in CORE_GROUPS]
    outcomes = run.outcomes()
    assert run.report["verdict"] == "conformant", run.describe()
    assert {cid: outcomes[cid] for cid in core} == dict.fromkeys(core, "passed"), run.describe()
    assert [o for o in outcomes.values() if o not in ("passed", "skipped")] == [], run.describe()
    assert run.returncode == 0, run.describe()


def test_alternative_is_a_different_design() -> None:
    """What makes the check meaningful: no OrderedDict table, an RLock, no reference imports
    and no models borrowed from our specs."""
    manager = AlternativeManager(max_sessions=2)
    assert not any(isinstance(v, OrderedDict) for v in vars(manager).values())
    assert type(manager._guard).__name__ == "RLock"
    source = Path(alternative_manager.__file__).read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if "sessionstate.reference" in line]
    # StateObject is the abstract interface its buffer implements; nothing else.
    assert imports == ["from sessionstate.reference import StateObject"]
    # Its buffer's OBJ-9 model is its own too, not one of our specs' models.
    assert "state_object_specs" not in source


def test_warning_through_a_non_propagating_logger_passes(run_check: Any) -> None:
    """A resolver that logs ENV-5's warning through a logger with a handler of its own and
    ``propagate=False`` (as vLLM's loggers are) passes every ENV clause."""
    run = run_check("sessionstate.fixtures.own_logger_resolver:subject", ["ENV"])
    assert run.report["verdict"] == "conformant", run.describe()
    env = {cid: o for cid, o in run.outcomes().items() if cid.startswith("ENV-")}
    assert env == {f"ENV-{n}": "passed" for n in range(1, 7)}, run.describe()


def test_a_port_keying_storages_by_address_passes_accounting(run_check: Any) -> None:
    """``sessionstate.fixtures.address_keyed`` (docs/implementers.md) keys a storage by
    ``(device, data_ptr)``, as a C or C++ port does: exact on real hardware, so on the
    simulated CUDA devices, which behave as a real allocator, it passes every ACCT clause."""
    run = run_check("sessionstate.fixtures.address_keyed:subject", ["ACCT"], strict=True)
    acct = {cid: o for cid, o in run.outcomes().items() if cid.startswith("ACCT-")}
    assert run.report["verdict"] == "conformant", run.describe()
    assert acct == {cid: "passed" for cid in all_clauses() if cid.startswith("ACCT-")}, (
        run.describe()
    )
    assert run.returncode == 0, run.describe()
