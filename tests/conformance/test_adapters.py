"""The ADAPT machinery: Op, AdapterSpec, bit-for-bit comparison, the memory walk, the
differential machine, the rollout example and the adapt_ zoo (each in its own process)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from sessionstate.conformance import AdapterSpec, Op, Subject, UsageError
from sessionstate.conformance._machine.adapt import AdapterMachine
from sessionstate.conformance._model.bitwise import (
    Raised,
    bit_difference,
    bytes_by_device,
    reachable_memory,
)
from sessionstate.conformance.adapters import POLICIES, Call, adapter_policies
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.fixtures import lingbot_like, rollout_example
from sessionstate.fixtures.lingbot_like import LINGBOT_SPEC
from sessionstate.fixtures.rollout_example import ROLLOUT_SPEC, RolloutStateAdapter
from sessionstate.fixtures.zoo import ZOO
from sessionstate.reference import SessionAttr, SessionStateManager

ADAPT_ZOO = [entry for entry in ZOO if entry.name.startswith("adapt_")]


def _op(name: str) -> Op:
    return next(op for op in ROLLOUT_SPEC.operations if op.name == name)


class _Box:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def push(self, item: Any) -> int:
        self.items.append(item)
        return len(self.items)

    def fail(self) -> None:
        raise KeyError("boom")


class TestOp:
    def test_rejects_a_value_that_is_not_a_strategy(self) -> None:
        """A constant where a strategy belongs is a usage error naming the fix."""
        with pytest.raises(UsageError, match=r"Op\('push', \.\.\.\) got 3, not a Hypothesis"):
            Op("push", 3)  # type: ignore[arg-type]

    @given(st.data())
    def test_calls_draw_from_the_strategies(self, data: st.DataObject) -> None:
        """Positional and keyword strategies become the call's args and kwargs."""
        op = Op("push", st.just(7), extra=st.just("x"))
        call = data.draw(op.calls())
        assert (call.op, call.args, call.kwargs) == (op, (7,), {"extra": "x"})

    def test_calls_strategy_is_built_once(self) -> None:
        """The machine draws every step; rebuilding (and revalidating) it would be slow."""
        op = Op("push", st.just(1))
        assert op.calls() is op.calls()

    def test_set_writes_an_attribute(self) -> None:
        box = _Box()
        assert Call(Op.set("label", st.just("a")), ("a",), {}).apply(box) is None
        assert box.label == "a"  # type: ignore[attr-defined]

    def test_apply_returns_the_result_or_the_exception(self) -> None:
        box = _Box()
        assert Call(Op("push"), (5,), {}).apply(box) == 1
        raised = Call(Op("fail"), (), {}).apply(box)
        assert isinstance(raised, Raised) and isinstance(raised.error, KeyError)

    def test_apply_hands_each_side_its_own_copy(self) -> None:
        """What one side stores (or mutates) is never the other side's object."""
        payload = torch.zeros(2)
        first, second = _Box(), _Box()
        call = Call(Op("push"), (payload,), {})
        call.apply(first)
        call.apply(second)
        first.items[0].add_(1)
        assert first.items[0] is not payload and second.items[0] is not payload
        assert torch.equal(second.items[0], torch.zeros(2))

    def test_reprs_read_as_python(self) -> None:
        assert repr(Call(Op("push"), (5,), {"tag": "a"})) == "push(5, tag='a')"
        assert repr(Call(Op.set("label", st.just(1)), (1,), {})) == "setattr('label', 1)"
        assert repr(Op.set("label", st.just(1))) == "Op.set('label', ...)"


def advance(state: Any, n: int) -> None:
    """A pipeline statement: ``state.current += n``."""
    state.current = getattr(state, "current", 0) + n


class _Counter:
    def __init__(self) -> None:
        self.current = 0


class _Transformer:
    def __init__(self) -> None:
        self.kv: list[int] = []


class _Loader:
    """Writes into the object it is given, as Cosmos3's load_into_transformer does."""

    def __init__(self, value: int = 1) -> None:
        self.value = value

    def load_into(self, transformer: _Transformer) -> None:
        transformer.kv.append(self.value)


def _loader_adapter(manager: Any, session_id: Any) -> _Loader:
    """An adapter over the manager that loads the wrong value."""
    manager.get_or_create_session(session_id)
    return _Loader(value=2)


class TestStatementsAndArguments:
    def test_a_function_op_runs_on_the_state_and_reads_as_a_statement(self) -> None:
        op = Op.fn(advance, st.integers(1, 4))
        call = Call(op, (3,), {})
        state = _Counter()
        assert call.apply(state) is None and state.current == 3
        assert repr(call) == "advance(state, 3)"
        assert call.describe("adapter") == "advance(adapter, ...)"
        assert repr(op) == "Op.fn('advance', ...)"

    def test_a_function_op_with_no_arguments_reads_as_a_call(self) -> None:
        assert repr(Call(Op.fn(_Counter.__init__), (), {})) == "__init__(state)"

    def test_fn_rejects_what_is_not_callable(self) -> None:
        with pytest.raises(UsageError, match="must be callable"):
            Op.fn("advance")  # type: ignore[arg-type]

    def test_mutated_arguments_are_compared_after_the_call(self) -> None:
        """An adapter that writes the wrong thing into its argument fails ADAPT-1."""
        spec = AdapterSpec(
            "loader",
            bespoke_factory=_Loader,
            adapter_factory=_loader_adapter,
            operations=[Op("load_into", st.builds(_Transformer), mutates_args=True)],
        )
        from sessionstate.conformance import Subject

        machine = AdapterMachine(Subject(name="loader", adapters=[spec]), spec)
        with pytest.raises(ClauseFailure) as info:
            machine.apply(None, [Call(spec.operations[0], (_Transformer(),), {})], False)
        assert info.value.clause == "ADAPT-1"
        assert "the arguments of adapter.load_into(...) after the call" in str(info.value)

    def test_plain_objects_compare_field_by_field(self) -> None:
        """Each side's copy of a stand-in object is another object: equal fields are equal."""
        a, b = _Transformer(), _Transformer()
        assert bit_difference(a, b) is None
        b.kv.append(1)
        found = bit_difference(a, b)
        assert found is not None and found.path == "len(value.kv)"
        loop_a, loop_b = _Transformer(), _Transformer()
        loop_a.kv.append(loop_a)  # type: ignore[arg-type]
        loop_b.kv.append(loop_b)  # type: ignore[arg-type]
        assert bit_difference(loop_a, loop_b) is None

    def test_a_correct_adapter_writing_into_a_plain_object_passes(self) -> None:
        spec = AdapterSpec(
            "loader",
            bespoke_factory=_Loader,
            adapter_factory=lambda manager, session_id: (
                manager.get_or_create_session(session_id),
                _Loader(),
            )[1],
            operations=[Op("load_into", st.builds(_Transformer), mutates_args=True)],
        )
        from sessionstate.conformance import Subject

        machine = AdapterMachine(Subject(name="loader", adapters=[spec]), spec)
        machine.apply(None, [Call(spec.operations[0], (_Transformer(),), {})], False)

    def test_unmutated_arguments_are_not_compared_unless_asked(self) -> None:
        spec = AdapterSpec(
            "loader",
            bespoke_factory=_Loader,
            adapter_factory=_loader_adapter,
            operations=[Op("load_into", st.builds(_Transformer))],
        )
        from sessionstate.conformance import Subject

        machine = AdapterMachine(Subject(name="loader", adapters=[spec]), spec)
        machine.apply(None, [Call(spec.operations[0], (_Transformer(),), {})], False)

    def test_the_factory_is_called_by_keyword(self) -> None:
        """Upstream's (session_id, manager) and the harness's old (manager, session_id)
        orders both work, because the harness passes both by name."""
        seen = []

        class Upstream(_Box):
            def __init__(self, session_id: Any, manager: Any) -> None:
                super().__init__()
                manager.get_or_create_session(session_id)
                seen.append((session_id, type(manager).__name__))

        spec = AdapterSpec("box", _Box, Upstream, [Op("push", st.integers())])
        from sessionstate.conformance import Subject

        machine = AdapterMachine(Subject(name="box", adapters=[spec]), spec)
        machine.apply("s1", [Call(spec.operations[0], (1,), {})], False)
        assert seen[0] == ("s1", "SessionStateManager")


class TestAdapterSpec:
    def _spec(self, **changes: Any) -> AdapterSpec:
        fields: dict[str, Any] = {
            "name": "box",
            "bespoke_factory": _Box,
            "adapter_factory": lambda manager, session_id: _Box(),
            "operations": [Op("push", st.integers())],
        }
        return AdapterSpec(**{**fields, **changes})

    @pytest.mark.parametrize(
        ("changes", "message"),
        [
            ({"operations": []}, "operations must be a non-empty sequence of Op"),
            ({"operations": ["push"]}, "operations must be a non-empty sequence of Op"),
            ({"observe": [3]}, "observe entries must be attribute names or callables"),
            ({"max_sessions": 0}, "max_sessions must be a positive int, got 0"),
        ],
    )
    def test_rejects_malformed_fields(self, changes: dict[str, Any], message: str) -> None:
        with pytest.raises(UsageError, match=message):
            self._spec(**changes)

    def test_session_pool_is_one_larger_than_the_capacity(self) -> None:
        """With one id more than fit, touching every id evicts one."""
        assert self._spec(max_sessions=3).session_ids() == (None, "s1", "s2", "s3")

    def test_observers_label_attributes_and_callables(self) -> None:
        def size(state: _Box) -> int:
            return len(state.items)

        spec = self._spec(observe=["items", size])
        box = _Box()
        box.push(1)
        labels = [(label.format("adapter"), read(box)) for label, read in spec.observers()]
        assert labels == [("adapter.items", [1]), ("size(adapter)", 1)]


class TestBitDifference:
    @pytest.mark.parametrize(
        "value",
        [
            torch.tensor([1.0, float("nan"), 3.0], dtype=torch.bfloat16),
            np.array([1.0, np.nan]),
            {"a": [torch.arange(3), (np.arange(2), None)]},
            deque([1, "x"]),
            float("nan"),
            Raised(ValueError("one")),
        ],
    )
    def test_equal_copies_have_no_difference(self, value: Any) -> None:
        """NaNs at the same places are equal; so are exceptions of one type."""
        copy = Raised(ValueError("two")) if isinstance(value, Raised) else _copy(value)
        assert bit_difference(copy, value) is None

    @pytest.mark.parametrize(
        ("observed", "expected", "found"),
        [
            (torch.zeros(2), torch.zeros(2, dtype=torch.float16), "value.dtype"),
            (torch.zeros(2), torch.zeros(3), "value.shape"),
            (torch.zeros(2, device="meta"), torch.zeros(2), "value.device"),
            (torch.tensor([1, 2]), torch.tensor([1, 5]), "value[1]"),
            (torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]), "isnan(value)[0]"),
            (np.zeros(2, np.uint8), np.zeros(2, np.int8), "value.dtype"),
            (np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]]), "value[1, 1]"),
            ([1, 2], (1, 2), "type(value)"),
            ([1, 2], [1], "len(value)"),
            ({"a": 1}, {"b": 1}, "value.keys()"),
            ({"a": [torch.zeros(1)]}, {"a": [torch.ones(1)]}, "value['a'][0][0]"),
            (Raised(KeyError()), Raised(ValueError()), "value"),
            (Raised(KeyError()), None, "type(value)"),
        ],
    )
    def test_reports_the_first_difference(self, observed: Any, expected: Any, found: str) -> None:
        difference = bit_difference(observed, expected)
        assert difference is not None and difference.path == found

    def test_a_difference_names_both_sides(self) -> None:
        difference = bit_difference(torch.tensor([1, 2]), torch.tensor([1, 5]))
        assert str(difference) == "value[1] is 2, not 5"


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


class TestReachableMemory:
    def test_views_of_one_storage_count_once(self) -> None:
        """Storage identity: a slice and a transpose of one buffer are one allocation."""
        base = torch.zeros(4, 4)
        found = reachable_memory([("x", [base[1:], {"t": base.t()}])])
        assert bytes_by_device(found) == {"cpu": 64}
        assert [m.path for m in found.values()] == ["x[0]"]

    def test_meta_storages_count_separately(self) -> None:
        """Every meta storage has data pointer 0; identity still tells them apart."""
        found = reachable_memory(
            [("x", (torch.empty(2, device="meta"), torch.empty(3, device="meta")))]
        )
        assert bytes_by_device(found) == {"meta": 20}

    def test_numpy_views_count_their_owner(self) -> None:
        owner = np.zeros((3, 4), np.uint8)
        assert bytes_by_device(reachable_memory([("x", [owner[0], owner[1:]])])) == {"cpu": 12}

    def test_objects_are_walked_and_stops_are_not_entered(self) -> None:
        """__dict__ and __slots__ are walked; a stop object (a manager) is not."""

        class Slotted:
            __slots__ = ("tensor",)

            def __init__(self) -> None:
                self.tensor = torch.zeros(1)

        box, stopped = _Box(), _Box()
        box.items = [Slotted(), stopped]
        stopped.items = [torch.zeros(100)]
        found = reachable_memory([("box", box)], stop=[stopped])
        assert [(m.path, m.nbytes) for m in found.values()] == [("box.items[0].tensor", 4)]

    def test_cycles_terminate(self) -> None:
        loop: list[Any] = [torch.zeros(2)]
        loop.append(loop)
        assert bytes_by_device(reachable_memory([("loop", loop)])) == {"cpu": 8}


class TestAdapterMachine:
    def _machine(self, adapter_factory: Any = RolloutStateAdapter) -> AdapterMachine:
        subject = rollout_example.rollout_subject("under-test", adapter_factory)
        return AdapterMachine(subject, subject.adapters[0])

    @pytest.mark.parametrize("parity", [False, True])
    def test_the_rollout_example_passes(self, parity: bool) -> None:
        """The shipped example adapter is bit-equivalent to its bespoke state."""
        run_state_machine_as_test(
            lambda: AdapterMachine(rollout_example.subject, ROLLOUT_SPEC, parity=parity),
            settings=settings(max_examples=20, stateful_step_count=10),
        )

    def test_a_stashed_tensor_fails_adapt_7_with_its_path(self) -> None:
        """The adapter's own attribute holding a tensor is named, with its bytes."""
        from sessionstate.fixtures.zoo.adapt_stashes_tensor import StashingAdapter

        machine = self._machine(StashingAdapter)
        call = Call(_op("prompt_embeds"), (torch.zeros(2, 3),), {})
        with pytest.raises(ClauseFailure) as info:
            machine.apply(None, [call], False)
        assert (info.value.clause, str(info.value)) == (
            "ADAPT-7",
            "memory the adapter holds outside its SessionState="
            "['adapter.prompt_embeds (24 bytes on cpu)'], but should be [] "
            "[ADAPT-7: after adapter.prompt_embeds = ... on session None]",
        )

    def test_an_upcast_fails_adapt_2_showing_both_values(self) -> None:
        from sessionstate.fixtures.zoo.adapt_upcasts_dtype import UpcastingAdapter

        machine = self._machine(UpcastingAdapter)
        chunk = rollout_example.latent_chunk((1, 1, 1, 1, 2), torch.float16, None)
        with pytest.raises(ClauseFailure) as info:
            machine.apply("s1", [Call(_op("append_video_latents"), (chunk,), {})], False)
        assert (info.value.clause, str(info.value)) == (
            "ADAPT-2",
            "video_latents(adapter)=tensor([[[[[-1.0000, -0.5000]]]]]), but should be "
            "tensor([[[[[-1.0000, -0.5000]]]]], dtype=torch.float16) [ADAPT-2: after "
            "adapter.append_video_latents(...) on session 's1'; value.dtype is torch.float32, "
            "not torch.float16]",
        )

    def test_a_held_adapter_survives_eviction(self) -> None:
        """Holding, evicting and calling again on the example raises nothing."""
        machine = self._machine()
        frames = rollout_example.numbered_frames((3, 2, 2, 3), 0)
        machine.apply("s1", [Call(_op("accumulate_frames"), (frames,), {})], True)
        machine.touch_other_sessions()
        assert "s1" not in machine.manager
        machine.apply_held([Call(_op("accumulate_frames"), (frames,), {})])
        assert machine.held is not None and machine.held.adapter.call_count == 2


def _run_suite(target: str, tmp_path: Path) -> tuple[int, str, dict[str, Any]]:
    """The brief's command, in its own process: the ADAPT group against ``target``."""
    report = tmp_path / "report.json"
    command = [
        *(sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite"),
        *("-p", "no:cacheprovider", "--sessionstate-subject", target),
        *("--sessionstate-clause", "ADAPT", "--sessionstate-report-json", str(report)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    return done.returncode, done.stdout + done.stderr, json.loads(report.read_text())


def _failed(report: dict[str, Any]) -> list[str]:
    return sorted(cid for cid, r in report["clauses"].items() if r["outcome"] == "failed")


def test_the_example_passes_in_its_own_process(tmp_path: Path) -> None:
    returncode, output, report = _run_suite(
        "sessionstate.fixtures.rollout_example:subject", tmp_path
    )
    outcomes = {cid: r["outcome"] for cid, r in report["clauses"].items()}
    assert (returncode, set(outcomes.values())) == (0, {"passed"}), output[-3000:]


def test_the_printed_program_for_an_adapter_that_ignores_the_id(tmp_path: Path) -> None:
    """One pinned failure: the one-line message and the shrunk program (Hypothesis 6.155)."""
    target = "sessionstate.fixtures.zoo.adapt_ignores_session_id:subject"
    _, output, _ = _run_suite(target, tmp_path)
    message = (
        "ClauseFailure: (hits, misses) counted by adapter_factory(session_id=None)=(0, 0), "
        "but should be (1, 0) [ADAPT-4: for an existing session]"
    )
    program = [
        "state = AdapterMachine()",
        "state.check_table_matches_model()",
        # Hypothesis' shrinker leaves this harmless drop in since the runs are named by
        # spec and policy (the derandomized search starts elsewhere).
        "state.drop_session(session_id=None)",
        "state.check_table_matches_model()",
        "state.apply(calls=[accumulate_frames(numbered_frames((2, 2, 3), 0))], hold=False, "
        "session_id=None)",
        "state.teardown()",
    ]
    lines = [line.removeprefix("E").strip() for line in output.splitlines()]
    start = lines.index(program[0])
    assert message in output, output[-3000:]
    assert lines[start : start + len(program)] == program, output[-3000:]


def test_zoo_modules_name_an_adapt_clause() -> None:
    """Each adapt_ module kills ADAPT clauses only and its BUG names them."""
    assert len(ADAPT_ZOO) >= 5
    for entry in ADAPT_ZOO:
        assert all(cid.startswith("ADAPT-") for cid in entry.kills), entry.name
        assert all(cid in entry.bug for cid in entry.kills), entry.name


# --- the admission policy (#7302): a refusing manager is not an ADAPT-4 defect ------------


class _Counted:
    """A bespoke state in upstream's shape: one counter a forward advances."""

    def __init__(self) -> None:
        self.steps = 0

    def step(self) -> int:
        self.steps += 1
        return self.steps


class _CountedAdapter:
    """Its adapter in upstream's shape: the constructor pins the session, so under
    ``evict_when_full=False`` building it for a newcomer at capacity raises the
    manager's ``SessionAdmissionError``, as #7302's DreamZero adapter does."""

    steps = SessionAttr(default=0, coerce=int)

    def __init__(self, session_id: object, manager: Any) -> None:
        self._session = manager.get_or_create_session(session_id)

    def step(self) -> int:
        self.steps += 1
        return self.steps


_COUNTED_SPEC = AdapterSpec(
    name="counted",
    bespoke_factory=_Counted,
    adapter_factory=_CountedAdapter,
    operations=(Op("step"),),
    observe=("steps",),
    max_sessions=2,
)


def _always_refusing(**kwargs: Any) -> SessionStateManager:
    """A pipeline that builds its manager refusing, whatever it is asked (#7302)."""
    return SessionStateManager(**{**kwargs, "evict_when_full": False})


def _always_evicting(**kwargs: Any) -> SessionStateManager:
    """A manager that evicts whatever it is asked: refusing where the bespoke LRU
    refuses is then up to it, and it does not."""
    manager = SessionStateManager(**{**kwargs, "evict_when_full": True})
    manager.evict_when_full = False  # states the refusing policy, but evicts below
    manager.__class__ = _LyingManager
    return manager


class SessionAdmissionError(RuntimeError):
    """A subject's own refusal, worded its own way (as #7302's may be)."""


class _OwnWordsManager(SessionStateManager):
    def get_or_create_session(self, session_id: object) -> Any:
        try:
            return super().get_or_create_session(session_id)
        except RuntimeError:
            raise SessionAdmissionError("model-state admission limit reached") from None


def _own_words_refusing(**kwargs: Any) -> SessionStateManager:
    return _OwnWordsManager(**{**kwargs, "evict_when_full": False})


class _SecretlyRefusing(SessionStateManager):
    """States evict_when_full=True, but refuses a newcomer when full."""

    def get_or_create_session(self, session_id: object) -> Any:
        self.evict_when_full = False
        try:
            return super().get_or_create_session(session_id)
        finally:
            self.evict_when_full = True


class _LyingManager(SessionStateManager):
    def get_or_create_session(self, session_id: object) -> Any:
        self.evict_when_full = True
        try:
            return super().get_or_create_session(session_id)
        finally:
            self.evict_when_full = False


@dataclass(frozen=True)
class PolicyCase:
    id: str
    manager_factory: Any
    policy: str
    #: The clause that fails, or None when the run passes.
    fails: str | None


POLICY_CASES = [
    # The false positive this fixes: a refusing manager read as an ADAPT-4 defect.
    PolicyCase("refusing-pipeline-asked-to-evict", _always_refusing, "evict", None),
    PolicyCase("refusing-pipeline", _always_refusing, "refuse", None),
    PolicyCase("reference-refusing", None, "refuse", None),
    PolicyCase("reference-evicting", None, "evict", None),
    # Its own SessionAdmissionError with its own message: still a refusal (the wording is ADMIT-1's).
    PolicyCase("refusal-in-own-words", _own_words_refusing, "refuse", None),
    # Refusal on one side only: the manager says it refuses but admits by evicting.
    PolicyCase("states-refusal-but-evicts", _always_evicting, "refuse", "ADAPT-4"),
    PolicyCase("states-eviction-but-refuses", _SecretlyRefusing, "evict", "ADAPT-4"),
]


def _three_forwards(machine: AdapterMachine) -> None:
    """Forwards for three sessions on a table of two, then a drop and a fourth forward."""
    step = Call(_COUNTED_SPEC.operations[0], (), {})
    for session_id in (None, "s1", "s2"):
        machine.apply(session_id, [step, step], False)
        machine.check_table_matches_model()
    machine.drop_session("s1")
    machine.apply("s2", [step], False)
    machine.check_table_matches_model()


@pytest.mark.parametrize("case", POLICY_CASES, ids=[c.id for c in POLICY_CASES])
def test_the_adapter_machine_under_each_admission_policy(case: PolicyCase) -> None:
    """A refusal on both sides is agreement; on one side only it fails ADAPT-4."""
    subject = Subject(name=case.id, manager_factory=case.manager_factory)
    machine = AdapterMachine(subject, _COUNTED_SPEC, policy=case.policy)
    if case.fails is None:
        _three_forwards(machine)
        return
    with pytest.raises(ClauseFailure) as info:
        _three_forwards(machine)
    assert info.value.clause == case.fails


def test_a_refused_forward_counts_nothing_and_the_table_stays() -> None:
    """Under "refuse", the third session is turned away on both sides; dropping makes room."""
    subject = Subject(name="refusing", manager_factory=_always_refusing)
    machine = AdapterMachine(subject, _COUNTED_SPEC, policy="refuse")
    step = Call(_COUNTED_SPEC.operations[0], (), {})
    for session_id in (None, "s1", "s2"):
        machine.apply(session_id, [step], False)
    # Per admitted forward: the miss, the machine's lookup, the fresh adapter, its lookup.
    assert (machine.manager.hits, machine.manager.misses, len(machine.manager)) == (6, 2, 2)
    assert list(machine.bespoke) == ["default", "s1"]
    machine.drop_session(None)  # how a refusing pipeline makes room
    machine.apply("s2", [step], False)
    assert list(machine.bespoke) == ["s1", "s2"] and "default" not in machine.manager


@pytest.mark.parametrize("policy", ["evict", "refuse"])
def test_a_refusing_pipeline_passes_the_machine(policy: str) -> None:
    """Generated programs on a manager that always refuses find nothing under either run."""
    subject = Subject(name="refusing", manager_factory=_always_refusing)
    run_state_machine_as_test(
        lambda: AdapterMachine(subject, _COUNTED_SPEC, policy=policy),
        settings=settings(max_examples=15, stateful_step_count=12),
    )


@dataclass(frozen=True)
class PoliciesCase:
    id: str
    policies: Any
    capabilities: frozenset[str]
    own_manager: bool
    expected: tuple[str, ...] | str  # the policies, or the UsageError's message


POLICIES_CASES = [
    PoliciesCase("reference-manager-evicts-only", None, frozenset(), False, ("evict",)),
    PoliciesCase("reference-manager-asks-both", POLICIES, frozenset(), False, POLICIES),
    PoliciesCase("admission-derives-both", None, frozenset({"admission"}), True, POLICIES),
    PoliciesCase("no-admission-evicts-only", None, frozenset(), True, ("evict",)),
    PoliciesCase("declared-refuse-only", ("refuse",), frozenset({"admission"}), True, ("refuse",)),
    PoliciesCase(
        "refuse-without-admission",
        ("refuse",),
        frozenset(),
        True,
        "AdapterSpec 'counted' runs the 'refuse' policy, but subject 'policies' does not "
        "declare the 'admission' capability",
    ),
]


@pytest.mark.parametrize("case", POLICIES_CASES, ids=[c.id for c in POLICIES_CASES])
def test_adapter_policies(case: PoliciesCase) -> None:
    spec = replace(_COUNTED_SPEC, policies=case.policies)
    factory = SessionStateManager if case.own_manager else None
    subject = Subject(name="policies", manager_factory=factory, capabilities=case.capabilities)
    if isinstance(case.expected, str):
        with pytest.raises(UsageError) as info:
            adapter_policies(subject, spec)
        assert str(info.value) == case.expected
    else:
        assert adapter_policies(subject, spec) == case.expected


@pytest.mark.parametrize("policies", [(), ("lru",), ("evict", "evict")])
def test_adapter_spec_rejects_unknown_policies(policies: tuple[str, ...]) -> None:
    with pytest.raises(UsageError, match=r"policies must be distinct entries of"):
        replace(_COUNTED_SPEC, policies=policies)


# --- the third worked adapter: Lingbot-like, all state in attrs, one session --------------


def _lingbot(name: str, *args: Any) -> Call:
    op = next(op for op in LINGBOT_SPEC.operations if op.name == name)
    return Call(op, args, {"device": torch.device("cpu"), "num_layers": 2} if not args else {})


LINGBOT_PROGRAM = [
    _lingbot("begin_request", "r1"),
    _lingbot("capture_shapes", 64, 128),
    _lingbot("init_state"),
    _lingbot("bump_end_indices", 3),
    _lingbot("keep_last_latents", lingbot_like.decoded_latents(3, 0, torch.bfloat16)),
    _lingbot("advance", 2),
    _lingbot("begin_request", "r1"),
]


@pytest.mark.parametrize("policy", ["evict", "refuse"])
def test_the_lingbot_program_keeps_everything_in_attrs(policy: str) -> None:
    """A first call and an extension through fresh adapters; the session holds no object."""
    subject = Subject(name="lingbot", adapters=(LINGBOT_SPEC,))
    machine = AdapterMachine(subject, LINGBOT_SPEC, parity=True, policy=policy)
    machine.apply(None, LINGBOT_PROGRAM, False)
    session = machine.manager.get_or_create_session(None)
    assert session.names() == []
    assert sorted(session.attrs) == [
        "current_lat_f", "current_start_frame", "frame_seqlen", "global_end_index", "h",
        "is_initialized", "last_decoded_latent", "lat_h", "lat_w", "local_end_index",
        "num_layers", "session_id", "w",
    ]  # fmt: skip
    assert session.attrs["local_end_index"][1].tolist() == [3]
    assert session.attrs["last_decoded_latent"].shape == (1, 1, 2, 1, 2)


def test_the_lingbot_example_passes_the_machine() -> None:
    """Generated programs on one session at a time (each new session evicts the last)."""
    subject = Subject(name="lingbot", adapters=(LINGBOT_SPEC,))
    run_state_machine_as_test(
        lambda: AdapterMachine(subject, LINGBOT_SPEC, policy="refuse"),
        settings=settings(max_examples=15, stateful_step_count=10, derandomize=True),
    )


def test_the_lingbot_twin_fails_adapt_3_at_the_next_forward() -> None:
    """Resetting on build wipes what the last forward wrote: the fresh adapter shows it."""
    from sessionstate.fixtures.zoo.adapt_lingbot_resets_on_build import subject as twin

    machine = AdapterMachine(twin, twin.adapters[0])
    with pytest.raises(ClauseFailure) as info:
        machine.apply("s1", LINGBOT_PROGRAM[:1], False)
    assert (info.value.clause, str(info.value)) == (
        "ADAPT-3",
        "adapter.session_id=None, but should be 'r1' [ADAPT-3: by a fresh adapter after "
        "begin_request(adapter, ...) on session 's1'; type(value) is NoneType, not str]",
    )


def test_reachable_memory_of_nested_tensors_is_their_components() -> None:
    """ACCT-9: a nested tensor's memory is what it is built from, so an adapter holding
    ``n.values()`` holds memory its session reaches through ``n`` (and none twice)."""
    import warnings

    import torch

    from sessionstate.conformance._model.bitwise import bytes_by_device, reachable_memory

    jagged = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
    found = reachable_memory([("n", jagged), ("v", jagged.values())])
    assert bytes_by_device(found) == {"cpu": 20 + 24}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # strided nested tensors are a prototype
        strided = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    found = reachable_memory([("m", strided), ("u", strided.unbind())])
    assert bytes_by_device(found) == {"cpu": 20 + 3 * 16}
