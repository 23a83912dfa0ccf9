"""OBJ-9 and OBJ-10 pieces: the model mirror, the recomputable check, how specs without a
model are reported, and the shipped models themselves (exact values, no reference code)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import find

from sessionstate.conformance import StateObjectSpec, UsageError
from sessionstate.conformance._machine.obj import OBJ_CLAUSES, spec_params
from sessionstate.conformance._machine.object_mirror import ModelMirror, check_recomputable
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.conformance.specs import LogModel
from sessionstate.fixtures import state_object_specs as specs
from sessionstate.fixtures.state_object_specs import (
    EncodeOnceKVModel,
    FixedStateModel,
    LatentBufferModel,
    StagedKVModel,
)


class Buffer(LatentBufferModel):
    """A stand-in object: the model itself, with one behaviour changed per test."""


class CommittedByDefault(Buffer):
    def view(self, *, include_staged: bool = False) -> list[Any]:
        return super().view(include_staged=include_staged)


def _mirror(**extra: Any) -> ModelMirror:
    mirror = ModelMirror(LatentBufferModel, extra)
    mirror.call("allocate", (), {})
    return mirror


class TestModelMirror:
    def test_without_a_model_every_check_is_inert(self) -> None:
        """No model: calls go nowhere and nothing is judged, whatever the object does."""
        mirror = ModelMirror(None, {})
        mirror.call("commit", (1,), {})
        mirror.check_outcome("commit(1)", ValueError("x"))
        mirror.check_observations(object(), "after commit(1)")
        assert (mirror.model, mirror.raised) == (None, None)

    def test_the_object_must_raise_what_the_model_raises(self) -> None:
        """Model raised RuntimeError: the same type passes, nothing or another type fails."""
        mirror = ModelMirror(LatentBufferModel, {})
        mirror.call("append", ("x",), {})  # before allocate(): the model refuses
        mirror.check_outcome("append('x')", RuntimeError("no"))
        with pytest.raises(ClauseFailure) as failure:
            mirror.check_outcome("append('x')", None)
        assert str(failure.value) == (
            "exception from append('x')=nothing, but should be RuntimeError [OBJ-9: as its model]"
        )
        with pytest.raises(ClauseFailure, match=r"=KeyError\('k'\), but should be RuntimeError"):
            mirror.check_outcome("append('x')", KeyError("k"))

    def test_the_object_must_not_raise_where_the_model_does_not(self) -> None:
        mirror = _mirror()
        with pytest.raises(ClauseFailure, match=r"=ValueError\('v'\), but should be nothing"):
            mirror.check_outcome("allocate()", ValueError("v"))

    def test_view_with_the_default_is_observed(self) -> None:
        """A view() defaulting to include_staged=False differs only in the argless view."""
        mirror, obj = _mirror(), CommittedByDefault()
        obj.allocate()
        for target in (mirror.model, obj):
            target.append("a")
            target.stage("b")
        with pytest.raises(ClauseFailure) as failure:
            mirror.check_observations(obj, "after stage('b')")
        assert str(failure.value) == (
            "len(view())=1, but should be 2 [OBJ-9: after stage('b'), as its model]"
        )

    def test_extra_observations_and_exceptions_are_shown(self) -> None:
        """A spec's own observation is compared; a raise shows the exception."""

        class NoLen(Buffer):
            def __len__(self) -> int:
                raise TypeError("no len")

        mirror, obj = _mirror(**{"len(obj)": len}), NoLen()
        obj.allocate()
        with pytest.raises(ClauseFailure) as failure:
            mirror.check_observations(obj, "after allocate()")
        assert str(failure.value) == (
            "len(obj)=Raised(TypeError('no len')), but should be 0 "
            "[OBJ-9: after allocate(), as its model]"
        )

    def test_tensors_compare_bit_for_bit(self) -> None:
        """Equal shapes and dtypes are not enough: every value counts."""
        mirror, obj = _mirror(), Buffer()
        obj.allocate()
        mirror.model.append(torch.tensor([1.0, 2.0]))
        obj.append(torch.tensor([1.0, 2.5]))
        with pytest.raises(ClauseFailure, match=r"^view\(\)\[0\]\[1\]=2\.5, but should be 2\.0"):
            mirror.check_observations(obj, "after append(...)")

    def test_renew_starts_a_fresh_model(self) -> None:
        mirror = _mirror()
        mirror.renew()
        assert mirror.model.items is None


class _Source:
    def __init__(self, resident: object) -> None:
        self.resident = resident


class _Recomputable:
    """Upstream's rule: recomputable while the source is resident (OBJ-10)."""

    recompute_source: object = None
    recompute_cost: object = 2
    resident = True

    @property
    def recomputable(self) -> object:
        source = self.recompute_source
        return source is not None and getattr(source, "resident", None) is True


class _IgnoresSource(_Recomputable):
    recomputable = True


class _ReadsOwnResidency(_Recomputable):
    @property
    def recomputable(self) -> object:
        return self.recompute_source is not None and self.resident


class _IntFlag(_Recomputable):
    recomputable = 1


@dataclass(frozen=True)
class RecomputableCase:
    id: str
    obj: type[_Recomputable]
    source: object  # None, or whether the source is resident
    own: bool  # the object's own residency
    error: str | None  # the failure message, None when OBJ-10 holds


RECOMPUTABLE_CASES = [
    RecomputableCase("no-source", _Recomputable, None, True, None),
    RecomputableCase("source-resident", _Recomputable, True, True, None),
    RecomputableCase("evicted-but-rebuildable", _Recomputable, True, False, None),
    RecomputableCase("source-released", _Recomputable, False, True, None),
    RecomputableCase(
        "ignores-the-source",
        _IgnoresSource,
        False,
        True,
        "recomputable=True, but should be False [OBJ-10: recompute_source=<_Source>, "
        "recompute_source.resident=False, after reset()]",
    ),
    RecomputableCase(
        "reads-its-own-residency",
        _ReadsOwnResidency,
        True,
        False,
        "recomputable=False, but should be True [OBJ-10: recompute_source=<_Source>, "
        "recompute_source.resident=True, after reset()]",
    ),
]


class TestCheckRecomputable:
    @pytest.mark.parametrize("case", RECOMPUTABLE_CASES, ids=[c.id for c in RECOMPUTABLE_CASES])
    def test_follows_the_sources_residency(self, case: RecomputableCase) -> None:
        obj = case.obj()
        obj.recompute_source = None if case.source is None else _Source(case.source)
        obj.resident = case.own
        if case.error is None:
            check_recomputable(obj, "after reset()")
            return
        with pytest.raises(ClauseFailure) as failure:
            check_recomputable(obj, "after reset()")
        assert str(failure.value) == case.error

    def test_a_source_without_resident_fails(self) -> None:
        obj = _Recomputable()
        obj.recompute_source = "frames"
        with pytest.raises(ClauseFailure, match=r"recompute_source\.resident after reset\(\)"):
            check_recomputable(obj, "after reset()")

    def test_an_int_is_not_a_bool(self) -> None:
        obj = _IntFlag()
        obj.recompute_source = _Source(True)
        with pytest.raises(ClauseFailure, match=r"^type\(recomputable\)=<class 'int'>"):
            check_recomputable(obj, "after allocate()")

    @pytest.mark.parametrize("cost", [-1, 1.5, True])
    def test_cost_is_an_int_at_least_zero(self, cost: object) -> None:
        obj = _Recomputable()
        obj.recompute_cost = cost
        with pytest.raises(ClauseFailure) as failure:
            check_recomputable(obj, "after allocate()")
        assert str(failure.value) == f"recompute_cost={cost!r}, but should be an int >= 0 [OBJ-10]"


class TestSpecParams:
    def test_a_spec_with_a_model_carries_obj_9(self) -> None:
        (param,) = spec_params([specs.LATENT_BUFFER])
        assert _clauses(param) == [*OBJ_CLAUSES, "OBJ-9"] and not _skips(param)

    def test_a_spec_without_a_model_leaves_obj_9_not_checked_naming_it(self) -> None:
        """A skipped item whose reason says *not checked*: OBJ-9 is then unchecked, never
        passed nor merely skipped (``results``)."""
        bare = StateObjectSpec("Bare", specs.LatentBuffer, {}, specs.latent_items)
        checked, skipped = spec_params([bare])
        assert (checked.id, _clauses(checked), _skips(checked)) == ("Bare", list(OBJ_CLAUSES), [])
        assert (skipped.id, _clauses(skipped)) == ("Bare-no-model", ["OBJ-9"])
        assert _skips(skipped) == [
            "not checked: contents of spec 'Bare': OBJ-9 needs its model= or a contents= kind"
        ]

    def test_a_contents_kind_is_a_model(self) -> None:
        """``contents="log"``: the suite's own model checks OBJ-9, no skipped item."""
        log = StateObjectSpec("Log", specs.LatentBuffer, {}, specs.latent_items, contents="log")
        (param,) = spec_params([log])
        assert _clauses(param) == [*OBJ_CLAUSES, "OBJ-9"] and not _skips(param)
        assert log.oracle() is LogModel

    def test_no_specs_is_one_item_for_every_clause(self) -> None:
        (param,) = spec_params([])
        assert param.values == (None,) and _clauses(param) == [*OBJ_CLAUSES, "OBJ-9"]


def _clauses(param: Any) -> list[str]:
    return [cid for mark in param.marks if mark.name == "clause" for cid in mark.args]


def _skips(param: Any) -> list[str]:
    return [mark.kwargs["reason"] for mark in param.marks if mark.name == "skip"]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"model": 3}, "model"),
        ({"observations": {"n": 1}}, "observations"),
        ({"contents": "ring"}, "contents must be one of 'log'"),
        ({"contents": "log", "model": LatentBufferModel}, "a model or a contents kind, not both"),
    ],
)
def test_malformed_model_fields_are_usage_errors(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        StateObjectSpec("b", specs.LatentBuffer, {}, specs.latent_items, **fields)


class TestShippedModels:
    def test_latent_buffer_ring_drops_the_oldest_and_shows_staged_last(self) -> None:
        model = LatentBufferModel()
        assert (model.view(), len(model), model.maxlen) == ([], 0, None)
        with pytest.raises(RuntimeError):
            model.append("a")
        model.allocate(maxlen=2)
        for item in ("a", "b", None, "c"):
            model.commit(item)  # commit(None) is a no-op
        model.stage("d")
        assert (model.view(), model.view(include_staged=False), len(model)) == (
            ["b", "c", "d"],
            ["b", "c"],
            2,
        )
        model.reset()
        assert (model.view(), model.maxlen) == ([], None)

    def test_encode_once_kv_is_initialised_by_its_first_pair(self) -> None:
        model = EncodeOnceKVModel()
        model.allocate()
        assert model.view() == {"is_init": False, "k": None, "v": None}
        model.stage({"k": 1, "v": 2})
        assert model.view() == {"is_init": False, "k": None, "v": None}
        model.commit()
        assert model.view(include_staged=False) == {"is_init": True, "k": 1, "v": 2}
        model.commit()  # nothing staged: a no-op
        assert model.view()["k"] == 1

    def test_fixed_state_rejects_mismatches_and_changes_nothing(self) -> None:
        model = FixedStateModel()
        model.allocate(shapes={"h": (4,)}, dtype=torch.float16)
        for bad in ({}, {"h": torch.ones(4), "z": torch.ones(1)}, {"h": torch.ones(1)}):
            with pytest.raises(ValueError):
                model.commit(bad)
        assert torch.equal(model.view()["h"], torch.zeros(4, dtype=torch.float16))
        model.commit({"h": torch.full((4,), -2.5)})
        assert torch.equal(model.view()["h"], torch.full((4,), -2.5, dtype=torch.float16))
        with pytest.raises(RuntimeError):
            model.evict()

    def test_staged_kv_shows_staged_and_refuses_an_empty_commit(self) -> None:
        model = StagedKVModel()
        model.allocate()
        with pytest.raises(RuntimeError):
            model.commit()
        model.stage({"k": 1, "v": 2})
        assert (model.view(), model.view(include_staged=False)) == ({"k": 1, "v": 2}, {})
        model.commit()
        assert model.view(include_staged=False) == {"k": 1, "v": 2}

    @pytest.mark.parametrize("shapes", [specs.RECURRENT_SHAPES, *specs.MISMATCHED_SHAPES], ids=repr)
    def test_fixed_state_payloads_include_every_mismatch(self, shapes: dict[str, Any]) -> None:
        """The payload strategy reaches valid payloads and each kind the model rejects."""
        found = find(
            specs.FIXED_STATE.payload_strategy(None),  # type: ignore[arg-type]
            lambda p: {k: tuple(v.shape) for k, v in p.items()} == shapes,
        )
        assert {k: tuple(v.shape) for k, v in found.items()} == shapes
