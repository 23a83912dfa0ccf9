"""Unit tests of ``sessionstate.reference.base`` (contract section 2, the defaults)."""

from __future__ import annotations

import pytest
import torch

from sessionstate.reference import SeenStorages, StateObject, device_bytes


class _Box(StateObject[torch.Tensor, "list[torch.Tensor]"]):
    """The smallest concrete StateObject: a list of committed tensors, logging resets."""

    def __init__(self) -> None:
        self.items: list[torch.Tensor] | None = None
        self.commits: list[torch.Tensor | None] = []
        self.resets = 0

    def allocate(self, *, size: int = 0) -> None:
        self.items = [torch.zeros(size)] if size else []

    def commit(self, payload: torch.Tensor | None = None) -> None:
        self.commits.append(payload)
        if payload is not None and self.items is not None:
            self.items.append(payload)

    def view(self, *, include_staged: bool = True) -> list[torch.Tensor]:
        staged = [self._staged] if include_staged and self._staged is not None else []
        return list(self.items or []) + staged

    def reset(self) -> None:
        self.resets += 1
        self.items = None

    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        return device_bytes(self.items or [], seen)

    @property
    def resident(self) -> bool:
        return self.items is not None


class _Recomputable(_Box):
    """Rebuilt from its own source box (upstream's shape: a derived object)."""

    recompute_cost = 3

    def __init__(self) -> None:
        super().__init__()
        self.recompute_source = _Box()


class TestStateObject:
    def test_is_abstract(self) -> None:
        """StateObject itself cannot be instantiated."""
        with pytest.raises(TypeError):
            StateObject()  # type: ignore[abstract]

    def test_class_defaults(self) -> None:
        """recompute_source is None and recompute_cost is 0 by default."""
        assert StateObject.recompute_source is None
        assert StateObject.recompute_cost == 0
        assert _Recomputable.recompute_cost == 3

    def test_stage_records_and_is_inert(self) -> None:
        """stage() is visible in a staged view only, and neither commits nor counts."""
        box, payload = _Box(), torch.zeros(4)
        box.allocate()
        box.stage(payload)
        assert box.commits == []
        assert box.view() == [payload]
        assert box.view(include_staged=False) == []
        assert box.nbytes_by_device(set()) == {}
        assert box.nbytes == 0

    def test_discard_keeps_committed(self) -> None:
        """discard() drops the staged payload and leaves committed bytes."""
        box = _Box()
        box.allocate(size=2)
        box.stage(torch.zeros(9))
        box.discard()
        assert box.view() == box.view(include_staged=False)
        assert box.nbytes == 8
        assert box.resident

    def test_discard_with_nothing_staged(self) -> None:
        """discard() with nothing staged is harmless."""
        box = _Box()
        box.discard()
        assert box.view() == []

    def test_append_is_commit(self) -> None:
        """append(payload) calls commit(payload)."""
        box, payload = _Box(), torch.zeros(1)
        box.allocate()
        box.append(payload)
        assert box.commits == [payload]
        assert box.nbytes == 4

    def test_evict_returns_bytes_and_resets(self) -> None:
        """evict() reads nbytes, resets once, and returns the bytes read."""
        box = _Box()
        box.allocate(size=3)
        box.append(torch.zeros(2))
        assert box.evict() == 20
        assert box.evict(policy="lru") == 0
        assert box.resets == 2
        assert not box.resident

    def test_nbytes_sums_devices(self) -> None:
        """nbytes is the sum over devices of nbytes_by_device(set())."""
        box = _Box()
        box.allocate(size=1)
        box.append(torch.empty(2, device="meta"))
        assert box.nbytes_by_device(set()) == {"cpu": 4, "meta": 8}
        assert box.nbytes == 12

    def test_nbytes_uses_fresh_seen(self) -> None:
        """nbytes ignores what a caller's seen already holds."""
        box, payload = _Box(), torch.zeros(5)
        box.allocate()
        box.append(payload)
        seen: SeenStorages = set()
        device_bytes(payload, seen)
        assert box.nbytes_by_device(seen) == {}
        assert box.nbytes == 20

    def test_recomputable_needs_source(self) -> None:
        """Without a recompute_source an object is never recomputable."""
        box = _Box()
        box.allocate()
        assert not box.recomputable

    def test_recomputable_follows_the_sources_residency(self) -> None:
        """With a source, recomputable follows the source's resident, not the box's own
        (OBJ-10, upstream's contract): an evicted box is rebuildable while its source is
        there, and no box is once its source is gone."""
        box = _Recomputable()
        source = box.recompute_source
        assert source is not None
        assert box.recomputable is False
        source.allocate()
        assert box.recomputable is True
        box.allocate()
        assert box.recomputable is True
        box.evict()
        assert box.recomputable is True
        source.reset()
        assert box.recomputable is False
