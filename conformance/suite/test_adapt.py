"""ADAPT-*: model adapters against their bespoke state classes (SPEC.md, "ADAPT: model adapters").

One differential state machine run per ``AdapterSpec`` in ``subject.adapters``,
the test id naming the spec. The oracle is the bespoke state class itself,
and the suite's own walk of object graphs for memory
(``sessionstate.conformance.adapters``), never the subject's accounting.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstate.conformance import AdapterSpec, UsageError
from sessionstate.conformance._machine.adapt import AdapterMachine
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.plugin import load_configured_subject
from sessionstate.conformance.subject import typed_specs

MUST_CLAUSES = tuple(f"ADAPT-{n}" for n in range(1, 8))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``spec`` by the subject's adapters (one ``None`` when it has none)."""
    if "spec" not in metafunc.fixturenames:
        return
    subject = load_configured_subject(metafunc.config)
    try:
        specs = typed_specs(subject, "adapters", AdapterSpec)
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    metafunc.parametrize("spec", specs or [None], ids=[s.name for s in specs] or ["none"])


def _spec(subject: Any, spec: AdapterSpec | None) -> AdapterSpec:
    if spec is None:
        pytest.skip(f"subject {subject.name!r} has no adapters")
    return spec


@pytest.mark.clause(*MUST_CLAUSES)
@given(data=st.data())
def test_adapter_matches_bespoke(
    subject: Any, spec: AdapterSpec | None, data: st.DataObject
) -> None:
    """Fresh and held adapters are bit-equal to the bespoke state through every sequence."""
    adapter = _spec(subject, spec)
    run_steps(lambda: AdapterMachine(subject, adapter), data)


@pytest.mark.clause("ADAPT-8")
@given(data=st.data())
def test_session_bytes_match_bespoke(
    subject: Any, spec: AdapterSpec | None, data: st.DataObject
) -> None:
    """After every call, the session reaches as many bytes per device as the bespoke state."""
    adapter = _spec(subject, spec)
    run_steps(lambda: AdapterMachine(subject, adapter, parity=True), data)
