"""Shared helpers for the reference unit tests: simulated CUDA tensors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

FakeCuda = Callable[[int, str], torch.Tensor]


@pytest.fixture
def fake_cuda() -> FakeCuda:
    """A factory of FakeTensors that report a CUDA device over a meta storage.

    They allocate nothing, so device naming can be tested without a GPU
    (built the way ``sessionstate.conformance.allocations`` builds them).
    """
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    def make(numel: int, device: str) -> torch.Tensor:
        meta = torch.empty(numel, device="meta")
        return FakeTensor(FakeTensorMode(allow_non_fake_inputs=True), meta, torch.device(device))

    return make
