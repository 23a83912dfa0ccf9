"""_machine/object_accounting.py by hand: whose a StateObject's wrong byte count is.

Each case holds an object the way the OBJ machine does (values the suite allocated,
priced by its ``MemoryModel``) and hands ``check_object_bytes`` the object's own count:
a subject whose shared accounting keys devices wrong fails ACCT-4, quoting the
accounting; an object that keys its own count wrong, beside a right accounting or none,
fails the object's clause as before; an accounting wrong in its counts is quoted in the
object's clause. The tags the machine's tests get are checked here too (``tagged``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from sessionstate.conformance import StateObjectSpec, Subject
from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.obj import spec_params
from sessionstate.conformance._machine.object_accounting import (
    ACCOUNTING_CLAUSES,
    accounting_clauses,
    check_object_bytes,
    tagged,
)
from sessionstate.conformance._model.memory import Allocation
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.specs import MemoryModel
from sessionstate.fixtures import state_object_specs as specs
from sessionstate.fixtures.zoo import acct_device_keyed_shared, obj_device_type_key
from sessionstate.fixtures.zoo._kit import Accounting, ZooBuffer, accounting_subject
from sessionstate.fixtures.zoo.acct_device_type_key import DeviceTypeKey
from sessionstate.fixtures.zoo.acct_element_bytes import ElementBytes
from sessionstate.reference import device_bytes

CUDA = [d for d in available_devices() if d.startswith("cuda:")]


@pytest.fixture(autouse=True)
def _no_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MemoryModel.add`` notes each allocation for a failing example's report; there is
    no Hypothesis test here to note it in."""
    monkeypatch.setattr("hypothesis.note", lambda text: None)


@dataclass
class Holding:
    """What ``check_object_bytes`` reads of the OBJ machine: the subject, the spec, the
    object, whether it is resident, and the memory model that priced its payloads."""

    subject: Subject
    spec: StateObjectSpec
    obj: Any
    memory: MemoryModel = field(default_factory=MemoryModel)
    expects_resident: bool = True

    def commit(self, *devices: str) -> dict[str, Any]:
        """Commit ``{"latent": <on devices[0]>, "mask": <on devices[1]>, ...}``."""
        names = ["latent", "mask", "noise"]
        payload = {names[i]: self.memory.add(allocate(d, (2, 3))) for i, d in enumerate(devices)}
        self.obj.commit(payload)
        return payload

    def expected(self, attrs: Sequence[Allocation] = ()) -> dict[str, int]:
        held = self.memory.allocations_in(self.spec.held(self.obj))
        return self.memory.expected([*held, *attrs])


def _sharing(accounting: Accounting) -> Subject:
    """A zoo subject whose accounting its one StateObject (a ``LatentBuffer``) shares."""
    buffer = type("SharingBuffer", (ZooBuffer,), {"accounting": staticmethod(accounting)})
    spec = replace(specs.LATENT_BUFFER, name=buffer.__name__, factory=buffer)
    return replace(accounting_subject("sharing", accounting), state_objects=(spec,))


def _holding(subject: Subject) -> Holding:
    (spec,) = subject.state_objects
    obj = spec.factory()
    obj.allocate()
    return Holding(subject, spec, obj)


def _failure(
    holding: Holding,
    observed: Mapping[str, int],
    clause: str = "OBJ-2",
    attrs: Sequence[Allocation] = (),
) -> ClauseFailure:
    """The failure ``check_object_bytes`` raises for ``observed``, the model's bytes of what
    the object holds (and of ``attrs``) expected."""
    expected = holding.expected(list(attrs))
    with pytest.raises(ClauseFailure) as failure:
        check_object_bytes(holding, observed, expected, clause, "nbytes_by_device(set())",
                           "after commit(...)", attrs)  # fmt: skip
    return failure.value


def test_a_dict_counted_on_its_first_device_is_acct_4() -> None:
    """The zoo's shared accounting: each tensor alone is keyed right, the dict's total is
    right, but all of it is on the first tensor's device."""
    holding = _holding(acct_device_keyed_shared.subject)
    holding.commit("cpu", "meta")
    observed = holding.obj.nbytes_by_device(set())
    assert observed == {"cpu": 48}
    failure = _failure(holding, observed)
    assert failure.clause == "ACCT-4"
    assert str(failure).startswith("accounting([{'latent': buf")
    assert "={'cpu': 48}, but should be {'cpu': 24, 'meta': 24} [ACCT-4: " in str(failure)
    assert "the right total under the wrong devices" in str(failure)
    assert "nbytes_by_device(set())={'cpu': 48} is this accounting's count" in str(failure)


def test_the_session_total_is_blamed_too() -> None:
    """OBJ-4's count, the object's and the attributes', with the same accounting."""
    holding = _holding(acct_device_keyed_shared.subject)
    holding.commit("cpu", "meta")
    alias = allocate("meta", (4,))
    holding.memory.add(alias)
    observed = {"cpu": 48, "meta": 16}  # the session's: the alias is counted right alone
    failure = _failure(holding, observed, "OBJ-4", [alias.allocation])
    assert failure.clause == "ACCT-4"


@pytest.mark.skipif(not CUDA, reason="no CUDA device, real or simulated")
def test_a_tensor_keyed_by_device_type_is_acct_4() -> None:
    """The shared accounting keys by ``device.type``: a tensor counted alone shows it."""
    holding = _holding(_sharing(DeviceTypeKey()))
    holding.commit(CUDA[0])
    observed = holding.obj.nbytes_by_device(set())
    assert observed == {"cuda": 24}
    failure = _failure(holding, observed)
    assert failure.clause == "ACCT-4"
    assert str(failure).startswith("accounting(buf")
    assert f"={{'cuda': 24}}, but should be {{'{CUDA[0]}': 24}} [ACCT-4: buf" in str(failure)
    assert f"device='{CUDA[0]}') held after commit(...)" in str(failure)


@pytest.mark.skipif(not CUDA, reason="no CUDA device, real or simulated")
@pytest.mark.parametrize("accounting", [None, device_bytes], ids=["no-hook", "right-hook"])
def test_an_object_keying_its_own_count_wrong_stays_obj_2(accounting: Any) -> None:
    """``obj_device_type_key``: the object merges devices itself; the accounting, where
    there is one, counts the same values right, so the object's clause is named."""
    holding = _holding(replace(obj_device_type_key.subject, accounting=accounting))
    holding.commit(CUDA[0])
    observed = holding.obj.nbytes_by_device(set())
    assert observed == {"cuda": 24}
    failure = _failure(holding, observed)
    assert failure.clause == "OBJ-2"
    assert "accounting" not in str(failure)


def test_an_accounting_counting_wrong_is_quoted_in_the_objects_clause() -> None:
    """Keys right, count wrong (numel * element_size of a slice, ACCT-1's): not ACCT-4's;
    the object's clause fails, saying what the accounting gives for the same values."""
    holding = _holding(_sharing(ElementBytes()))
    held = holding.memory.add(allocate("cpu", (4,)))
    holding.obj.commit(held[:1])
    observed = holding.obj.nbytes_by_device(set())
    assert observed == {"cpu": 4}
    failure = _failure(holding, observed)
    assert failure.clause == "OBJ-2"
    assert str(failure).startswith("nbytes_by_device(set())={'cpu': 4}, but should be {'cpu': 16}")
    assert "the subject's accounting of the same values, accounting(" in str(failure)
    assert "gives {'cpu': 4}" in str(failure)


def test_a_right_count_passes_and_asks_nothing() -> None:
    def refuses(value: object, seen: set[Any]) -> dict[str, int]:
        raise AssertionError("the accounting is asked only about a wrong count")

    holding = _holding(replace(obj_device_type_key.subject, accounting=refuses))
    holding.commit("cpu", "meta")
    check_object_bytes(holding, holding.expected(), holding.expected(), "OBJ-2", "n", "w")


def test_an_accounting_that_raises_leaves_the_objects_clause() -> None:
    def raises(value: object, seen: set[Any]) -> dict[str, int]:
        raise RuntimeError("no")

    holding = _holding(replace(obj_device_type_key.subject, accounting=raises))
    holding.commit("cpu")
    assert _failure(holding, {"cpu": 1}).clause == "OBJ-2"


class TestTags:
    def test_the_hook_decides(self) -> None:
        assert accounting_clauses(acct_device_keyed_shared.subject) == ACCOUNTING_CLAUSES
        assert accounting_clauses(obj_device_type_key.subject) == ()

    def test_every_spec_item_that_runs_is_tagged(self) -> None:
        bare = StateObjectSpec("Bare", specs.LatentBuffer, {}, specs.latent_items)
        params = tagged(spec_params([specs.LATENT_BUFFER, bare]), ACCOUNTING_CLAUSES)
        assert {p.id: _clauses(p)[-1] for p in params} == {
            "LatentBuffer": "ACCT-4",
            "Bare": "ACCT-4",
            "Bare-no-model": "OBJ-9",  # skipped: a skip would leave ACCT-4 unchecked
        }

    def test_no_spec_and_no_clauses_change_nothing(self) -> None:
        (none,) = tagged(spec_params([]), ACCOUNTING_CLAUSES)
        assert "ACCT-4" not in _clauses(none)
        params = spec_params([specs.LATENT_BUFFER])
        assert tagged(params, ()) == params


def _clauses(param: Any) -> list[str]:
    return [cid for mark in param.marks if mark.name == "clause" for cid in mark.args]
