"""OBJ-*: custom StateObjects (SPEC.md, "OBJ: custom StateObjects").

One state machine (``StateObjectMachine`` in ``sessionstate.conformance._machine.obj``)
per ``StateObjectSpec`` in ``subject.state_objects``, the test id naming the spec. The
machine's own model is small on purpose (is the object resident, what may be staged,
which session holds it); everything else is read back through the spec's ``held(obj)``
and priced by the suite's ``MemoryModel``, never by the object's own code. What the
object holds is compared with the spec's own plain model, when it declares one (OBJ-9,
``conformance.specs.ObjectModel``). The focused OBJ-6, OBJ-7, OBJ-9 and OBJ-10 tests run once per spec too
(``each_spec``, ``model_spec``), a failure naming its spec.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstate.conformance._harness.applicability import CONTENTS_NOT_CHECKED
from sessionstate.conformance._harness.run_state import load_configured_subject
from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._machine.obj import (
    MISUSES,
    StateObjectMachine,
    naming_spec,
    spec_params,
)
from sessionstate.conformance._machine.object_accounting import accounting_clauses, tagged
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.sizes import sizes
from sessionstate.conformance.specs import StateObjectSpec
from sessionstate.conformance.subject import UsageError, typed_specs


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``spec`` by the subject's specs (``spec_params``, clause marks per item),
    and ``each_spec`` (every spec) and ``model_spec`` (the specs with a model) by name:
    their tests carry their own clause marks. An empty list is one ``None``, which skips.
    The tests of ``spec`` and ``model_spec`` check an object's bytes after every step, and
    blame a wrong count on the subject's accounting when it is its (``object_accounting``):
    where the subject has the hook, their items carry its clauses too (``tagged``)."""
    names = {"spec", "each_spec", "model_spec"} & set(metafunc.fixturenames)
    if not names:
        return
    subject = load_configured_subject(metafunc.config)
    try:
        specs = typed_specs(subject, "state_objects", StateObjectSpec)
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    also = accounting_clauses(subject)  # the machine may blame the subject's accounting
    if "spec" in names:
        metafunc.parametrize("spec", tagged(spec_params(specs), also))
    for name in names - {"spec"}:
        chosen = [s for s in specs if s.oracle()] if name == "model_spec" else list(specs)
        params = [pytest.param(s, id=s.name) for s in chosen] or [pytest.param(None, id="none")]
        metafunc.parametrize(name, tagged(params, also) if name == "model_spec" else params)


def _spec(
    subject: Any, spec: StateObjectSpec | None, what: str = "state_objects"
) -> StateObjectSpec:
    if spec is None:
        own_outcomes.skip(f"subject {subject.name!r} has no {what}")
    return spec


@given(data=st.data())
def test_state_object(subject: Any, spec: StateObjectSpec | None, data: st.DataObject) -> None:
    """The object follows the StateObject contract through every sequence of its methods
    (tagged per spec by ``pytest_generate_tests``)."""
    checked = _spec(subject, spec)
    run_steps(lambda: StateObjectMachine(subject, checked), data)


@pytest.mark.clause("OBJ-6")
@given(data=st.data())
def test_evict_of_a_holding_object(
    subject: Any, each_spec: StateObjectSpec | None, data: st.DataObject
) -> None:
    """OBJ-6 in every example rather than when the machine's search evicts a non-empty
    object (one detection-benchmark seed never did): allocate, commit, evict."""
    spec = _spec(subject, each_spec)
    with naming_spec(spec):
        machine = StateObjectMachine(subject, spec)
        machine.allocate(data)
        machine.write("commit", data)
        if machine.allocated:
            machine.evict()


@pytest.mark.clause("OBJ-7")
@given(data=st.data(), allocated=st.booleans())
def test_every_misuse_raises_type_error(
    subject: Any, each_spec: StateObjectSpec | None, data: st.DataObject, allocated: bool
) -> None:
    """OBJ-7 in every example rather than when the machine draws a misuse: each of an
    unknown keyword, a positional sizing argument and a positional ``view`` flag, on a
    fresh object and on an allocated one."""
    spec = _spec(subject, each_spec)
    with naming_spec(spec):
        machine = StateObjectMachine(subject, spec)
        if allocated:
            machine.allocate(data)
        for misuse in MISUSES:
            machine.allocate_or_view_wrongly(data, misuse)


@pytest.mark.clause("OBJ-10")
@given(data=st.data(), evicted=st.booleans())
def test_recomputable_follows_its_source(
    subject: Any, each_spec: StateObjectSpec | None, data: st.DataObject, evicted: bool
) -> None:
    """OBJ-10 both ways round: allocate and commit (and, half the time, evict the object
    itself: rebuildable still, its source being there), then reset the object's
    ``recompute_source``: from then on it is not recomputable. The machine never
    releases a source, so an object that ignores its source's residency needs this."""
    spec = _spec(subject, each_spec)
    with naming_spec(spec):
        machine = StateObjectMachine(subject, spec)
        machine.allocate(data)
        machine.write("commit", data)
        machine.check_object()
        if evicted and spec.evictable and machine.allocated:
            machine.evict()
            machine.check_object()
        machine.release_source()


#: Three to seventeen writes in a row, as many as the boundary rule draws (3..7, 8, 9, 15..17):
#: past a ring's ``maxlen`` and past twice it.
writes = sizes(3, 17).flatmap(
    lambda n: st.lists(st.sampled_from(["commit", "append"]), min_size=n, max_size=n)
)


@pytest.mark.clause("OBJ-9")
@given(data=st.data(), methods=writes)
def test_a_run_of_writes_matches_the_model(
    subject: Any, model_spec: StateObjectSpec | None, data: st.DataObject, methods: list[str]
) -> None:
    """OBJ-9 where rings and caches go wrong: allocate, then three to seventeen commits and
    appends in a row, every observation checked after each. The machine's search rarely
    writes past ``maxlen`` (once in all of a ``ci`` run's 60 programs, measured), so a
    ring that drops the wrong end needs this test to be seen."""
    if model_spec is None:  # the subject has specs (else OBJ is not applicable), none modelled
        own_outcomes.skip(
            f"{CONTENTS_NOT_CHECKED}: no spec of subject {subject.name!r} declares a model= or "
            "a contents= kind"
        )
    spec = model_spec
    with naming_spec(spec):
        machine = StateObjectMachine(subject, spec)
        machine.allocate(data)
        for method in methods:
            machine.write(method, data)
            machine.check_object()
