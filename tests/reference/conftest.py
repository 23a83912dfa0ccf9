"""Shared helpers for the reference unit tests: simulated CUDA tensors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

FakeCuda = Callable[[int, str], torch.Tensor]


@pytest.fixture
def fake_cuda() -> FakeCuda:
    """A factory of simulated CUDA tensors: host memory reporting a ``cuda:N`` device, with
    distinct addresses and shared storages for views, as a real allocator gives
    (``sessionstate.conformance._harness.devices``), so device naming is tested without a GPU."""
    from sessionstate.conformance._harness.devices import allocate

    def make(numel: int, device: str) -> torch.Tensor:
        return allocate(device, (numel,)).value

    return make
