"""ADAPT-*: model adapters against their bespoke state classes (SPEC.md, "ADAPT: model adapters").

One differential state machine run per ``AdapterSpec`` in ``subject.adapters`` and
admission policy its pipeline runs (``adapter_policies``: ``evict``, and ``refuse`` too
where the subject declares ``admission`` or the spec asks), the test id naming the spec
and the policy, and one long program of a thousand calls per spec. The oracle is the bespoke
state class itself, and the suite's own walk of object graphs for memory
(``sessionstate.conformance.adapters``), never the subject's accounting.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._harness.run_state import load_configured_subject
from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._machine.adapt import AdapterMachine, LongAdapterMachine
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.adapters import AdapterSpec, adapter_policies
from sessionstate.conformance.subject import UsageError, typed_specs

MUST_CLAUSES = tuple(f"ADAPT-{n}" for n in range(1, 8))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``spec`` and ``policy`` by the subject's adapters and the admission
    policies each runs under (one ``(None, "evict")`` when it has none).

    Memory parity (ADAPT-8) does not depend on the policy: it runs under the first only. So
    does the long program: under ``"refuse"`` its forwards drop a session to make room
    where the evicting run evicts one, the same calls again at twice a quick run's cost.
    """
    if "spec" not in metafunc.fixturenames:
        return
    subject = load_configured_subject(metafunc.config)
    try:
        specs = typed_specs(subject, "adapters", AdapterSpec)
        runs = [(spec, policy) for spec in specs for policy in adapter_policies(subject, spec)]
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    if metafunc.definition.name in ("test_session_bytes_match_bespoke", "test_long_program"):
        runs = [run for run in runs if run[1] == adapter_policies(subject, run[0])[0]]
    ids = [f"{spec.name}-{policy}" for spec, policy in runs]
    metafunc.parametrize(("spec", "policy"), runs or [(None, "evict")], ids=ids or ["none"])


def _spec(subject: Any, spec: AdapterSpec | None) -> AdapterSpec:
    if spec is None:
        own_outcomes.skip(f"subject {subject.name!r} has no adapters")
    return spec


@pytest.mark.clause(*MUST_CLAUSES)
@given(data=st.data())
def test_adapter_matches_bespoke(
    subject: Any, spec: AdapterSpec | None, policy: str, data: st.DataObject
) -> None:
    """Fresh and held adapters are bit-equal to the bespoke state through every sequence,
    the bespoke LRU evicting or refusing as the manager's policy says."""
    adapter = _spec(subject, spec)
    run_steps(lambda: AdapterMachine(subject, adapter, policy=policy), data)


@pytest.mark.clause(*MUST_CLAUSES)
# Hypothesis' first program is its simplest (no call); a quick run has one drawn program.
@settings(max_examples=max(2, settings.default.max_examples // 20))  # type: ignore[union-attr]
@given(data=st.data())
def test_long_program(
    subject: Any, spec: AdapterSpec | None, policy: str, data: st.DataObject
) -> None:
    """A thousand calls through fresh adapters, over sessions made and evicted (or dropped)
    hundreds of times, and one session through hundreds of them, each call bit-equal to the
    bespoke state."""
    adapter = _spec(subject, spec)
    run_steps(lambda: LongAdapterMachine(subject, adapter, policy=policy), data)


@pytest.mark.clause("ADAPT-8")
@given(data=st.data())
def test_session_bytes_match_bespoke(
    subject: Any, spec: AdapterSpec | None, policy: str, data: st.DataObject
) -> None:
    """After every call, the session reaches as many bytes per device as the bespoke state."""
    adapter = _spec(subject, spec)
    run_steps(lambda: AdapterMachine(subject, adapter, parity=True, policy=policy), data)
