"""ACCT-17 (SPEC.md, "ACCT: byte accounting and aliasing"): a value whose inspection raises
counts nothing and the walk goes on; the code of containers walked by their own iteration
(ACCT-14) gets a time budget per call.

The hostile values are the ones that broke ``stats()`` for every session when one session
held one: a tensor subclass whose ``__torch_function__`` raises, an object whose
``__getattribute__`` raises, one whose ``__class__`` claims ``torch.Tensor``. The slow
container is a Sequence whose ``__getitem__`` sleeps a millisecond: without a time budget,
its items take seconds per thousand, and 65,536 of them over a minute.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from sessionstate.conformance._harness.supervision.deadline import load_factor
from sessionstate.conformance._machine.acct import (
    CONTAINER_SECONDS,
    accounting_of,
    within_deadline,
)
from sessionstate.conformance.checks import check, check_bytes

#: What a walk may take beside ACCT-17's budget for containers' own code (``CONTAINER_SECONDS``).
WITHIN_S = 3.0


class RaisingTorchFunction(torch.Tensor):
    """A tensor subclass every torch operation on which raises."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError("RaisingTorchFunction: no operation allowed")


class RaisingAttributes:
    """An object every attribute read of which raises, ``__class__`` included."""

    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(f"RaisingAttributes: no {name}")


class ClaimsToBeATensor:
    """An object whose ``__class__`` says ``torch.Tensor``: ``isinstance`` believes it."""

    __class__ = torch.Tensor  # type: ignore[assignment]


def _hostile(kind: str) -> object:
    if kind == "torch-function-raises":
        return torch.zeros(4).as_subclass(RaisingTorchFunction)
    return RaisingAttributes() if kind == "getattribute-raises" else ClaimsToBeATensor()


@pytest.mark.clause("ACCT-17")
@pytest.mark.parametrize(
    "kind", ["torch-function-raises", "getattribute-raises", "claims-to-be-a-tensor"]
)
def test_a_value_whose_inspection_raises_counts_nothing(subject: Any, kind: str) -> None:
    """Between two plain tensors, the hostile value counts nothing and they count."""
    accounting = accounting_of(subject)
    value = [torch.zeros(8), _hostile(kind), torch.zeros(2)]
    call = f"device_bytes([torch.zeros(8), <{kind}>, torch.zeros(2)], set())"
    observed = within_deadline(accounting, value, set(), "ACCT-17", call, f"a {kind} value")
    check_bytes(observed, {"cpu": 40}, "ACCT-17", call)


class SlowSequence(Sequence[object]):
    """``length`` items, each ``None`` after a millisecond's sleep, then ``tail``."""

    def __init__(self, length: int, tail: object) -> None:
        self.length, self.tail = length, tail

    def __len__(self) -> int:
        return self.length + 1

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        if not 0 <= index <= self.length:
            raise IndexError(index)
        if index == self.length:
            return self.tail
        time.sleep(0.001)
        return None


@pytest.mark.clause("ACCT-17")
def test_a_slow_container_is_walked_within_the_time_budget(subject: Any) -> None:
    """8,000 slow items (8 s read to the end) and a tensor beside them: the call returns
    within the budget, and the tensor beside counts."""
    accounting = accounting_of(subject)
    value = [SlowSequence(8_000, None), torch.zeros(4)]
    call = "device_bytes([SlowSequence(8,000 items, 1 ms each), torch.zeros(4)], set())"
    started = time.monotonic()
    observed = within_deadline(accounting, value, set(), "ACCT-17", call, "a slow Sequence")
    took = time.monotonic() - started
    # Scaled by the machine's load, never up to the 8 s of sleeps a walk to the end takes.
    limit = min(WITHIN_S * load_factor(), 7.0)
    check(
        took < limit,
        "ACCT-17",
        f"{call} took {took:.1f} s: the containers' own code gets {CONTAINER_SECONDS:g} s per call",
    )
    check_bytes(observed, {"cpu": 16}, "ACCT-17", call)
