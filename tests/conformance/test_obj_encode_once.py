"""Encode-once objects in upstream's shape against the OBJ machine (OBJ-1's
``resident_from="commit"``): no false positive, and the bugs around it still caught.

Upstream's ``Cosmos3UNDKV`` (vllm-omni #7302) is not resident between ``allocate()`` and
its first commit, and its ``view()`` refuses with ``RuntimeError`` there. The machine
used to read ``held(obj)`` (``view(include_staged=False)``) whenever the object was
*allocated*, and scored that allowed refusal as an OBJ-1 failure, leaving OBJ-2..10
unchecked. It reads only while the object is *expected resident* now.

One table, each row an object written here in upstream's shape (or with one bug), the
spec it is declared with, and what the OBJ tests must say: every test passes, or the
first failure names exactly one clause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import strategies as st

from sessionstate.conformance import ObjectModel, StateObjectSpec, Subject
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.suite import test_obj as obj_suite
from sessionstate.fixtures import cosmos3_like
from sessionstate.reference import SeenStorages, StateObject, device_bytes

KV = tuple[Any, Any]


class UpstreamShapedKV(StateObject[KV, KV]):
    """Encode-once K/V as upstream's ``Cosmos3UNDKV`` behaves: resident exactly while a
    pair is committed, ``allocate()`` optional, ``view()`` refusing until then."""

    def __init__(self) -> None:
        self._kv: KV | None = None

    def allocate(self) -> None:
        self._kv = None

    def commit(self, payload: KV | None = None) -> None:
        value = self._staged if payload is None else payload
        if value is None:
            raise RuntimeError("commit requires a K/V payload")
        self._kv = value
        self.discard()

    def view(self, *, include_staged: bool = True) -> KV:
        if include_staged and self._staged is not None:
            return self._staged
        if self._kv is None:
            raise RuntimeError("not resident")
        return self._kv

    def reset(self) -> None:
        self._kv = None
        self.discard()

    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        return {} if self._kv is None else device_bytes(self._kv, seen)

    @property
    def resident(self) -> bool:
        return self._kv is not None


class NeedsAllocate(UpstreamShapedKV):
    """Refuses a commit before ``allocate()`` (the other reading OBJ-1 leaves open)."""

    def __init__(self) -> None:
        super().__init__()
        self._allocated = False

    def allocate(self) -> None:
        super().allocate()
        self._allocated = True

    def commit(self, payload: KV | None = None) -> None:
        if not self._allocated:
            raise RuntimeError("commit before allocate()")
        super().commit(payload)

    def reset(self) -> None:
        super().reset()
        self._allocated = False


class RefusesCommittedView(UpstreamShapedKV):
    """Bug: ``view(include_staged=False)`` refuses even once a pair is committed."""

    def view(self, *, include_staged: bool = True) -> KV:
        if not include_staged:
            raise RuntimeError("not resident")
        return super().view(include_staged=include_staged)


class ResidentAtAllocate(UpstreamShapedKV):
    """Bug: resident from ``allocate()``, though declared resident from the first commit."""

    def allocate(self) -> None:
        self._kv = ()  # type: ignore[assignment]


class KVModel(ObjectModel):
    """What an upstream-shaped K/V holds: the committed pair, or nothing."""

    def __init__(self) -> None:
        self.kv: KV | None = None

    def allocate(self) -> None:
        self.kv = None

    def commit(self, payload: KV | None = None) -> None:
        value = self.staged if payload is None else payload
        if value is None:
            raise RuntimeError("nothing to commit")
        self.kv, self.staged = value, None

    def view(self, *, include_staged: bool = True) -> KV:
        if include_staged and self.staged is not None:
            return self.staged  # type: ignore[no-any-return]
        if self.kv is None:
            raise RuntimeError("not resident")
        return self.kv

    def reset(self) -> None:
        self.kv, self.staged = None, None


def _spec(factory: type[StateObject[Any, Any]], **fields: Any) -> StateObjectSpec:
    return StateObjectSpec(
        name=factory.__name__,
        factory=factory,
        allocate={},
        payloads=lambda tensors: st.tuples(tensors, tensors),
        resident_from="commit",
        **fields,
    )


@dataclass(frozen=True)
class Case:
    id: str
    spec: StateObjectSpec
    fails: str | None  # the one clause the first failure names, or None: every test passes


CASES = [
    Case("upstream-shaped", _spec(UpstreamShapedKV), None),
    Case("upstream-shaped-with-model", _spec(UpstreamShapedKV, model=KVModel), None),
    Case("refuses-commit-before-allocate", _spec(NeedsAllocate), None),
    Case("worked-example-UndKV", cosmos3_like.UND_KV_SPEC, None),
    Case("refuses-committed-view", _spec(RefusesCommittedView), "OBJ-2"),
    Case("resident-at-allocate", _spec(ResidentAtAllocate), "OBJ-1"),
]


def _run_every_obj_test(spec: StateObjectSpec) -> None:
    subject = Subject(name="encode-once", state_objects=(spec,))
    obj_suite.test_state_object(subject, spec)
    obj_suite.test_evict_of_a_holding_object(subject, spec)
    obj_suite.test_every_misuse_raises_type_error(subject, spec)
    if spec.model is not None:
        obj_suite.test_a_run_of_writes_matches_the_model(subject, spec)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_encode_once_objects(case: Case) -> None:
    if case.fails is None:
        _run_every_obj_test(case.spec)
        return
    with pytest.raises(ClauseFailure) as failure:
        _run_every_obj_test(case.spec)
    assert failure.value.clause == case.fails, str(failure.value)
