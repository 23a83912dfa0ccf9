"""The OBJ group against known objects: the reference specs pass, every OBJ zoo object fails
the one clause it names, and ``StateObjectSpec`` rejects malformed specs."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find
from hypothesis import strategies as st

from sessionstate.conformance import StateObjectSpec, Subject, UsageError
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.clauses import all_clauses
from sessionstate.conformance.suite import test_obj as obj_suite
from sessionstate.fixtures import state_object_specs as specs
from sessionstate.fixtures.zoo import ZOO, module_names
from sessionstate.reference import LatentBuffer

OBJ_ZOO = [name for name in module_names() if name.startswith("obj_")]
OBJ_IDS = [cid for cid in all_clauses() if cid.startswith("OBJ-")]


def _zoo(name: str) -> Any:
    return importlib.import_module(f"sessionstate.fixtures.zoo.{name}")


@cache
def _failure(name: str) -> ClauseFailure:
    """The ClauseFailure that ends the OBJ machine, or else the run-of-writes OBJ-9 test
    (which a full ring needs: the machine rarely fills one) or the OBJ-10 test that
    releases a source (the machine never does), on zoo subject ``name``."""
    subject = _zoo(name).subject
    with pytest.raises(ClauseFailure) as failure:
        for spec in subject.state_objects:
            obj_suite.test_state_object(subject, spec)
            if spec.model:
                obj_suite.test_a_run_of_writes_matches_the_model(subject, spec)
            obj_suite.test_recomputable_follows_its_source(subject, spec)
    return failure.value


class TestStateObjectSpec:
    def test_default_held_is_the_view_without_staged(self) -> None:
        """``held`` defaults to ``view(include_staged=False)``: the staged item is left out."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.append("committed")
        buffer.stage("staged")
        spec = StateObjectSpec("b", LatentBuffer, {}, st.none())
        assert spec.held(buffer) == ["committed"]

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"name": ""}, "name"),
            ({"factory": None}, "factory"),
            ({"held": 3}, "held"),
            ({"allocate": [("maxlen", 2)]}, "allocate"),
            ({"payloads": [1, 2]}, "payloads"),
        ],
    )
    def test_malformed_fields_are_usage_errors(self, fields: dict[str, Any], named: str) -> None:
        """A bad field raises UsageError naming it, when the spec is built."""
        good: dict[str, Any] = {
            "name": "b",
            "factory": LatentBuffer,
            "allocate": {},
            "payloads": st.none(),
        }
        with pytest.raises(UsageError, match=named):
            StateObjectSpec(**{**good, **fields})

    def test_callable_payloads_get_the_suites_tensors(self) -> None:
        """A callable ``payloads`` is called with the suite's tensor strategy."""
        spec = StateObjectSpec("b", LatentBuffer, {}, lambda tensors: st.lists(tensors, max_size=1))
        drawn = find(spec.payload_strategy(st.just("tensor")), lambda v: len(v) == 1)
        assert drawn == ["tensor"]

    def test_callable_payloads_must_return_a_strategy(self) -> None:
        """``payloads(tensors)`` returning a non-strategy is a usage error naming the type."""
        spec = StateObjectSpec("b", LatentBuffer, {}, lambda tensors: [tensors])
        with pytest.raises(UsageError, match="returned list, not a strategy"):
            spec.payload_strategy(st.just(1))

    def test_allocate_mapping_is_copied_per_draw(self) -> None:
        """Each allocation gets a fresh dict, so an object that pops from it spoils nothing."""
        shared = {"maxlen": 2}
        spec = StateObjectSpec("b", LatentBuffer, shared, st.none())
        drawn = find(spec.allocate_kwargs(), lambda kwargs: True)
        assert drawn == {"maxlen": 2}
        assert drawn is not shared


@pytest.mark.parametrize(
    "spec",
    [*specs.REFERENCE_SPECS, specs.STAGED_KV, specs.DERIVED_LATENTS],
    ids=lambda spec: spec.name,
)
def test_reference_and_example_specs_pass(spec: StateObjectSpec) -> None:
    """The shipped specs (reference objects and the worked example) pass every OBJ clause."""
    obj_suite.test_state_object(specs.subject, spec)


def test_subject_without_state_objects_skips_with_its_name() -> None:
    """No specs: the OBJ test skips with a reason naming the subject."""
    with pytest.raises(pytest.skip.Exception, match="subject 'bare' has no state_objects"):
        obj_suite.test_state_object(Subject(name="bare"), None)


class TestZoo:
    def test_there_are_obj_zoo_subjects_for_the_named_bugs(self) -> None:
        """At least the five bugs of the issue, each planted in its own module."""
        assert {
            "obj_counts_staged",
            "obj_ignores_seen",
            "obj_evict_returns_zero",
            "obj_reset_stays_resident",
            "obj_allocate_swallows_keywords",
        } <= set(OBJ_ZOO)

    @pytest.mark.parametrize("name", OBJ_ZOO)
    def test_zoo_module_names_one_obj_clause(self, name: str) -> None:
        """KILLS is one OBJ clause, BUG one sentence naming it, and the subject brings specs."""
        module = _zoo(name)
        (clause,) = module.KILLS
        assert clause in OBJ_IDS
        assert module.BUG.endswith(f"({clause}).") and module.BUG.count(". ") == 0
        assert module.subject.state_objects

    def test_tests_zoo_runs_every_obj_subject_in_its_own_process(self) -> None:
        """tests/zoo runs each ZOO entry as a separate ``sessionstate check --clause OBJ``."""
        entries = {entry.name: entry for entry in ZOO}
        assert {name: entries[name].groups for name in OBJ_ZOO} == dict.fromkeys(OBJ_ZOO, ("OBJ",))

    @pytest.mark.parametrize("name", OBJ_ZOO)
    def test_zoo_object_fails_its_clause(self, name: str) -> None:
        """The machine stops at a ClauseFailure of exactly the clause in KILLS."""
        failure = _failure(name)
        assert failure.clause == _zoo(name).KILLS[0], str(failure)

    def test_failure_reads_as_one_template_and_a_program(self) -> None:
        """``what=observed, but should be expected [CLAUSE: when]``, then a replayable program
        whose payload tensors are spelled as the suite made them."""
        failure = _failure("obj_evict_returns_zero")
        message = str(failure)
        assert re.fullmatch(
            r"evict\(\)=0, but should be (\d+) \[OBJ-6: with \1 bytes held\]", message
        )
        program = "\n".join(getattr(failure, "__notes__", []))
        assert "state.start(data=data(...))" in program and "state.evict()" in program
        assert re.search(r"buf\d+ = torch\.zeros\(\(\d", program), program
        assert re.search(r"payload = \{'k': buf\d+", program), program


def test_reference_subject_passes_obj_in_its_own_process(tmp_path: Path) -> None:
    """The bundled reference, run as an implementer would (plain pytest), passes every OBJ
    clause. At the quick profile: the default profile's depth on the reference, every
    clause, is tests/cli/test_first_contact.py's run of the README's command."""
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite",
        "-q", "-p", "no:cacheprovider", "--sessionstate-profile", "quick",
        "--sessionstate-subject", "sessionstate.fixtures.reference_subject:subject",
        "--sessionstate-clause", "OBJ", "--sessionstate-report-json", str(report),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    clauses = json.loads(report.read_text(encoding="utf-8"))["clauses"]
    assert {cid: clauses[cid]["outcome"] for cid in OBJ_IDS} == dict.fromkeys(OBJ_IDS, "passed")
    assert len(clauses["OBJ-1"]["tests"]) == len(specs.REFERENCE_SPECS)


class ResidentOnceEncoded(specs.EncodeOnceKV):
    """An encode-once K/V that is resident only once its K/V are committed, as Cosmos3's is:
    its adapter rebuilds it through get_or_create until the first encode."""

    @property
    def resident(self) -> bool:
        return self._cache is not None and bool(self._cache["is_init"])


class TestEncodeOnceLifecycle:
    def _spec(self, resident_from: str) -> StateObjectSpec:
        from dataclasses import replace

        return replace(
            specs.ENCODE_ONCE_KV,
            name=f"ResidentOnceEncoded-{resident_from}",
            factory=ResidentOnceEncoded,
            resident_from=resident_from,
            model=None,  # the model's residency is the reference object's
        )

    def test_declared_lifecycle_passes_every_other_clause(self) -> None:
        """Declared resident_from='commit', OBJ-1..8 and OBJ-10 run to the end and pass."""
        spec = self._spec("commit")
        obj_suite.test_state_object(Subject(name="encode-once", state_objects=[spec]), spec)

    def test_undeclared_it_fails_obj_1_for_its_residency(self) -> None:
        spec = self._spec("allocate")
        with pytest.raises(ClauseFailure) as failure:
            obj_suite.test_state_object(Subject(name="encode-once", state_objects=[spec]), spec)
        assert failure.value.clause == "OBJ-1"
        assert "resident=False, but should be True" in str(failure.value)

    def test_an_object_resident_at_allocate_fails_the_commit_lifecycle(self) -> None:
        spec = replace_factory(self._spec("commit"), specs.EncodeOnceKV)
        with pytest.raises(ClauseFailure) as failure:
            obj_suite.test_state_object(Subject(name="encode-once", state_objects=[spec]), spec)
        assert failure.value.clause == "OBJ-1"
        assert "resident_from='commit' and nothing committed" in str(failure.value)

    def test_a_held_that_refuses_a_non_resident_object_reports_the_residency(self) -> None:
        """The residency problem is named, not "held(...) raised"."""
        from dataclasses import replace

        def held(obj: ResidentOnceEncoded) -> object:
            if not obj.resident:
                raise RuntimeError("not resident")
            return obj.view(include_staged=False)

        spec = replace(self._spec("allocate"), held=held)
        with pytest.raises(ClauseFailure) as failure:
            obj_suite.test_state_object(Subject(name="encode-once", state_objects=[spec]), spec)
        assert failure.value.clause == "OBJ-1"
        assert "resident=False, but should be True" in str(failure.value)

    def test_an_unknown_lifecycle_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match="resident_from must be one of 'allocate', 'commit'"):
            self._spec("first-forward")


def replace_factory(spec: StateObjectSpec, factory: Any) -> StateObjectSpec:
    from dataclasses import replace

    return replace(spec, factory=factory)


def test_a_per_spec_failure_names_its_spec() -> None:
    """The OBJ-6/7/9 tests run once per spec; a failure says which one."""
    subject = _zoo("obj_allocate_positional").subject
    (spec,) = subject.state_objects
    with pytest.raises(ClauseFailure) as failure:
        obj_suite.test_every_misuse_raises_type_error(subject, spec)
    assert failure.value.clause == "OBJ-7"
    assert str(failure.value).startswith("spec 'PositionalMaxlen': ")
