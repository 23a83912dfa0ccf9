"""Contents unchecked never read as conformance (OBJ-9), and a declared ``contents`` kind
checks them: the suite's ``LogModel`` passes a correct append log and catches a planted
bug that corrupts what it holds."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance import StateObjectSpec, Subject
from sessionstate.conformance._harness.applicability import (
    CONTENTS_NOT_CHECKED,
    capability_reason,
    clause_list,
    declared_skip,
)
from sessionstate.conformance._harness.expectations import Expectation
from sessionstate.conformance._harness.results import TestRecord, aggregate, verdict
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.suite import test_obj as obj_suite
from sessionstate.fixtures import state_object_specs as specs
from sessionstate.reference import LatentBuffer

OBJ_9_SKIP = f"Skipped: {CONTENTS_NOT_CHECKED} of spec 'Pages': OBJ-9 needs its model= or ..."


def _records() -> list[TestRecord]:
    """What a run of a spec without a model records: the machine passed, OBJ-9 skipped."""
    return [
        TestRecord("test_obj.py::test_state_object[Pages]", ["OBJ-1", "OBJ-2"], "passed"),
        TestRecord(
            "test_obj.py::test_state_object[Pages-no-model]", ["OBJ-9"], "skipped", [], OBJ_9_SKIP
        ),
    ]


def test_contents_not_checked_are_unchecked_and_incomplete() -> None:
    """Not "CONFORMANT (9 passed, 1 skipped)": OBJ-9 is unchecked, the verdict incomplete."""
    results = aggregate(_records(), selected=["OBJ-1", "OBJ-2", "OBJ-9"])
    assert results["OBJ-9"].outcome == "unchecked"
    assert "contents of spec 'Pages'" in results["OBJ-9"].message
    assert verdict(results) == "incomplete"


def test_an_expectations_entry_accepts_it_with_its_reason() -> None:
    entry = Expectation("OBJ-9", "skip", "pages are checked by our own tests", 1)
    results = aggregate(_records(), [entry], selected=["OBJ-1", "OBJ-2", "OBJ-9"])
    assert results["OBJ-9"].outcome == "skipped"
    assert results["OBJ-9"].message == "expected: pages are checked by our own tests"
    assert verdict(results) == "conformant"


def test_a_must_clause_skipped_for_an_undeclared_reason_is_unchecked() -> None:
    """Every test of a clause skipped by this machine (no CUDA) is no pass, nor a skip
    the subject declared; a missing capability is."""
    cuda = TestRecord("a::real_cuda", ["ACCT-4"], "skipped", message="Skipped: no CUDA device")
    capability = TestRecord(
        "a::threads",
        ["LOCK-4"],
        "skipped",
        message="Skipped: LOCK-4 needs capability 'threadsafe', which subject 's' does not declare",
    )
    hook = TestRecord(
        "a::env", ["ENV-1"], "skipped", message="Skipped: subject 's' has no config_resolver"
    )
    results = aggregate([cuda, capability, hook], selected=["ACCT-4", "LOCK-4", "ENV-1"])
    assert results["ACCT-4"].outcome == "unchecked"
    assert "no CUDA device" in results["ACCT-4"].message
    assert results["LOCK-4"].outcome == results["ENV-1"].outcome == "skipped"


class _CorruptingLog(LatentBuffer[Any]):
    """A planted bug: every commit after the first overwrites the first item."""

    def commit(self, payload: Any = None) -> None:
        items = self._require()
        if payload is not None and items:
            items[0] = payload
            return
        super().commit(payload)


def _spec(factory: Any) -> StateObjectSpec:
    return StateObjectSpec(
        "Log", factory, specs.LATENT_BUFFER.allocate, specs.latent_items, contents="log"
    )


def test_the_log_kind_passes_a_correct_append_log() -> None:
    """No false positive: the reference's LatentBuffer is an append log (and a ring)."""
    spec = _spec(LatentBuffer)
    subject = Subject(name="log", state_objects=[spec])
    obj_suite.test_state_object(subject, spec)
    obj_suite.test_a_run_of_writes_matches_the_model(subject, spec)


def test_the_log_kind_catches_corrupted_contents() -> None:
    spec = _spec(_CorruptingLog)
    subject = Subject(name="corrupting", state_objects=[spec])
    with pytest.raises(ClauseFailure) as failure:
        obj_suite.test_a_run_of_writes_matches_the_model(subject, spec)
    assert failure.value.clause == "OBJ-9"


def test_a_skip_reason_names_every_clause_of_the_test_that_needs_it() -> None:
    """The clause table shows a test's skip reason on each of its clauses' rows, so the
    reason names them all (it named the first: "OBJ-5 ... has no state_objects, which OBJ-1
    needs"), compactly, and stays a reason the subject declared."""
    assert clause_list(f"OBJ-{n}" for n in (3, 1, 2, 4, 10)) == "OBJ-1..4, OBJ-10"
    assert (
        clause_list(["ADMIT-8", "ADMIT-1", "LOCK-6", "ADMIT-2"])
        == "ADMIT-1, ADMIT-2, ADMIT-8, LOCK-6"
    )
    many = capability_reason(clause_list(["LOST-1", "LOST-4"]), "require_session", "s")
    one = capability_reason("LOCK-4", "threadsafe", "s")
    assert (
        many
        == "LOST-1, LOST-4 need capability 'require_session', which subject 's' does not declare"
    )
    assert one.startswith("LOCK-4 needs capability 'threadsafe'")
    assert declared_skip(f"Skipped: {many}") and declared_skip(one)
    assert not declared_skip("Skipped: LOCK-4 needs a GPU")
