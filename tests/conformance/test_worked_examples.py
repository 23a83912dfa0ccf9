"""The worked examples, DreamZero-like and Cosmos3-like: both pass the ADAPT clauses, their
pipeline statements (``Op.fn``) and compared arguments (``mutates_args``) do what the
pipeline does, and each planted-bug twin fails its clause naming the operation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from sessionstate.conformance import AdapterSpec, Subject
from sessionstate.conformance._machine.adapt import AdapterMachine
from sessionstate.conformance.adapters import Call
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.fixtures import cosmos3_like, dreamzero_like
from sessionstate.fixtures.cosmos3_like import (
    COSMOS3_SPEC,
    Cosmos3LikeAdapter,
    Cosmos3Locals,
    transformer_stand_in,
)
from sessionstate.fixtures.dreamzero_like import (
    DREAMZERO_SPEC,
    DreamZeroLikeAdapter,
    DreamZeroLikeState,
    pixel_frames,
)
from sessionstate.fixtures.rollout_example import latent_chunk
from sessionstate.fixtures.zoo import (
    adapt_cosmos3_loads_wrong_branch,
    adapt_dreamzero_window_reset_drops_latents,
)
from sessionstate.reference import SessionStateManager

EXAMPLES = {
    "dreamzero_like": "sessionstate.fixtures.dreamzero_like:subject",
    "cosmos3_like": "sessionstate.fixtures.cosmos3_like:subject",
}
TWINS = {
    "adapt_dreamzero_window_reset_drops_latents": (
        "ADAPT-2",
        r"after adapter\.reset(_inference_state)?\(\.\.\.\)",
    ),
    "adapt_cosmos3_loads_wrong_branch": (
        "ADAPT-1",
        r"the arguments of (adapter\.load_into_transformer\(\.\.\.\)|denoise_step\(adapter, "
        r"\.\.\.\)) after the call",
    ),
}


def _run_suite(target: str, clause: str, tmp_path: Path, profile: str) -> tuple[int, str, Any]:
    """``sessionstate check TARGET --clause CLAUSE``, in its own process."""
    report = tmp_path / "report.json"
    command = [
        *(sys.executable, "-m", "pytest", "--pyargs", "sessionstate.conformance.suite"),
        *("-p", "no:cacheprovider", "--sessionstate-subject", target),
        *("--sessionstate-clause", clause, "--sessionstate-profile", profile),
        *("--sessionstate-report-json", str(report)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    return done.returncode, done.stdout + done.stderr, json.loads(report.read_text())


def _call(spec: AdapterSpec, name: str, *args: Any, **kwargs: Any) -> Call:
    op = next(op for op in spec.operations if op.name == name)
    return Call(op, args, kwargs)


def _set(spec: AdapterSpec, name: str, value: Any) -> Call:
    op = next(op for op in spec.operations if op.is_set and op.name == name)
    return Call(op, (value,), {})


def _run_program(spec: AdapterSpec, calls: list[Call]) -> None:
    """One forward-rule of the machine: each call on the bespoke state and fresh adapters."""
    machine = AdapterMachine(Subject(name=spec.name, adapters=(spec,)), spec, parity=True)
    machine.apply(None, calls, False)


# --- both examples conform ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_passes_adapt_in_its_own_process(name: str, tmp_path: Path) -> None:
    returncode, output, report = _run_suite(EXAMPLES[name], "ADAPT", tmp_path, "quick")
    outcomes = {cid: r["outcome"] for cid, r in report["clauses"].items()}
    assert sorted(outcomes) == [f"ADAPT-{n}" for n in range(1, 9)], output[-3000:]
    assert (returncode, set(outcomes.values())) == (0, {"passed"}), output[-3000:]


# --- DreamZero-like: the statements and the selective reset ---------------------------------


def test_dreamzero_statements_run_alike_on_both_sides() -> None:
    """A rollout as the pipeline drives it, statements included, then a window reset."""
    spec = DREAMZERO_SPEC
    calls = [
        _set(spec, "language", torch.tensor([1, 2])),
        _call(spec, "seed_encoder_stream", pixel_frames(1, 0)),
        _call(spec, "grow_encoder_out", pixel_frames(3, 1)),
        _call(spec, "grow_encoder_out", pixel_frames(5, 2)),
        _call(spec, "append_video_latents", latent_chunk((1, 2, 2, 1, 2), torch.float32, None)),
        _call(spec, "advance_start_frame", 3),
        _call(spec, "advance_start_frame", 2),
        _call(spec, "should_reset", None, 4, 4),
        _call(spec, "reset_inference_state"),
    ]
    _run_program(spec, calls)


def test_dreamzero_window_reset_keeps_what_the_pipeline_needs() -> None:
    """Latents, prompt and encoder stream survive a window reset; the window restarts."""
    manager = SessionStateManager(max_sessions=2)
    bespoke, adapter = DreamZeroLikeState(), DreamZeroLikeAdapter("s1", manager)
    for state in (bespoke, adapter):
        state.language = torch.tensor([3])
        dreamzero_like.seed_encoder_stream(state, pixel_frames(1, 0))
        dreamzero_like.grow_encoder_out(state, pixel_frames(5, 1))
        state.append_video_latents(latent_chunk((1, 1, 2, 1, 2), torch.float32, None))
        dreamzero_like.advance_start_frame(state, 4)
        state.reset_inference_state()
    fresh = DreamZeroLikeAdapter("s1", manager)
    for state in (bespoke, fresh):
        assert (state.current_start_frame, state.call_count) == (0, 0)
        assert state.get_concatenated_video_latents() is not None
        assert state.language is not None and state.vae_stream_initialized
        assert state.vae_encoder_out.shape[2] == 2  # the seed frame and one body chunk
        assert state.vae_pending_body_frames.shape[2] == 1


# --- Cosmos3-like: the locals, and what load_into_transformer writes ------------------------


def test_cosmos3_load_writes_each_branch_into_the_transformer() -> None:
    """A CFG step captures both branches; loading one writes its K/V into every slot."""
    spec = COSMOS3_SPEC
    calls = [
        _call(spec, "denoise_step", transformer_stand_in([None, None]), 0, True),
        _call(spec, "load_into_transformer", transformer_stand_in([None, None]), True),
        _call(spec, "load_into_transformer", transformer_stand_in([1, 2]), False),
        _call(spec, "capture_from_transformer", transformer_stand_in([None, 3]), True),
        _call(spec, "reset"),
        _call(spec, "capture_from_transformer", transformer_stand_in([None, 3]), True),
    ]
    _run_program(spec, calls)
    manager = SessionStateManager(max_sessions=2)
    locals_, adapter = Cosmos3Locals(), Cosmos3LikeAdapter("s1", manager)
    loaded = []
    for state in (locals_, adapter):
        cosmos3_like.denoise_step(state, transformer_stand_in([None, None]), 0, True)
        transformer = transformer_stand_in([None, None])
        state.load_into_transformer(transformer, True)
        loaded.append(transformer)
    for transformer in loaded:
        assert transformer[0] is not None
        assert torch.equal(transformer[0][0], cosmos3_like.und_kv(0, 1)[0])  # the negative prompt


def test_cosmos3_locals_need_no_class_upstream() -> None:
    """The bespoke side is two locals; the methods are the pipeline's statements on them."""
    state = Cosmos3Locals()
    assert (state.cond_cache, state.uncond_cache) == (None, None)
    cosmos3_like.denoise_step(state, transformer_stand_in([None, None]), 2, False)
    assert state.cond_cache is not None and state.uncond_cache is None
    with pytest.raises(RuntimeError, match=r"no K/V for layers \[1\]"):
        state.capture_from_transformer(transformer_stand_in([0, None]), True)


# --- the twins fail their clause, naming the operation --------------------------------------


def test_the_dreamzero_twin_fails_adapt_2_after_the_window_reset() -> None:
    spec = adapt_dreamzero_window_reset_drops_latents.subject.adapters[0]
    calls = [
        _call(spec, "append_video_latents", latent_chunk((1, 1, 2, 1, 2), torch.float32, None)),
        _call(spec, "reset", clear_video_latents=False),
    ]
    with pytest.raises(ClauseFailure) as info:
        _run_program(spec, calls)
    assert info.value.clause == "ADAPT-2"
    assert "video_latents(adapter)=None" in str(info.value)
    assert "after adapter.reset(...) on session None" in str(info.value)


def test_the_cosmos3_twin_fails_adapt_1_on_the_arguments_of_the_load() -> None:
    spec = adapt_cosmos3_loads_wrong_branch.subject.adapters[0]
    calls = [
        _call(spec, "capture_from_transformer", transformer_stand_in([0, 0]), False),
        _call(spec, "load_into_transformer", transformer_stand_in([None, None]), True),
    ]
    with pytest.raises(ClauseFailure) as info:
        _run_program(spec, calls)
    assert info.value.clause == "ADAPT-1"
    assert "the arguments of adapter.load_into_transformer(...) after the call" in str(info.value)


@pytest.mark.parametrize("name", sorted(TWINS))
def test_the_twin_is_caught_at_the_quick_profile(name: str, tmp_path: Path) -> None:
    """What an implementer runs: the clause fails, and its message names the operation.
    ``quick``'s search without its shrinking (``quick-unshrunk``): the first failing case
    found already names the clause and the operation; shrinking it took most of the run."""
    clause, operation = TWINS[name]
    target = f"sessionstate.fixtures.zoo.{name}:subject"
    returncode, output, report = _run_suite(target, clause, tmp_path, "quick-unshrunk")
    assert (returncode, report["clauses"][clause]["outcome"]) == (1, "failed"), output[-3000:]
    failure = next(line for line in output.splitlines() if f"[{clause}: " in line)
    assert re.search(operation, failure), failure
