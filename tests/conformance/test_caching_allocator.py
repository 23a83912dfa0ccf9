"""The simulated devices' caching allocator (``conformance/_harness/caching_allocator.py``):
a freed block goes to the next storage of its device and size, last freed first, contents
kept; borrowed and zero-size storages take no part; what it keeps is bounded; it never
waits. Through ``allocate`` on the simulated devices: ``test_devices.py``.

Each test uses sizes no other test here uses, so blocks another test left in the cache
(which is per process) are never the ones it looks for.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sessionstate.conformance._harness import caching_allocator
from sessionstate.conformance._harness.caching_allocator import cached_bytes, release, reuse


def _storage(nbytes: int, fill: int = 0) -> torch.UntypedStorage:
    return torch.full((nbytes,), fill, dtype=torch.uint8).untyped_storage()


def _contents(storage: torch.UntypedStorage) -> set[int]:
    return set(torch.empty(0, dtype=torch.uint8).set_(storage).tolist())


def test_a_freed_block_goes_to_the_next_storage_of_its_size() -> None:
    """The last freed first; the new storage keeps its contents; the freed one is emptied."""
    first, second = _storage(4099), _storage(4099)
    addresses = [first.data_ptr(), second.data_ptr()]
    before = cached_bytes()
    release(first)
    release(second)
    assert (first.nbytes(), second.nbytes()) == (0, 0)
    assert cached_bytes() == before + 2 * 4099
    made = [_storage(4099, fill=n) for n in (7, 8, 9)]
    for storage in made:
        reuse(storage)
    assert [s.data_ptr() for s in made[:2]] == addresses[::-1]
    assert made[2].data_ptr() not in addresses  # none is left of that size
    assert [_contents(s) for s in made] == [{7}, {8}, {9}]
    assert cached_bytes() == before


def test_only_a_block_of_the_same_size_and_device_is_reused() -> None:
    """A block is kept by ``str(storage.device)`` and ``nbytes``: another size takes none."""
    freed = _storage(4111)
    address = freed.data_ptr()
    release(freed)
    other = _storage(4112)
    reuse(other)
    assert other.data_ptr() != address
    same = _storage(4111)
    reuse(same)
    assert same.data_ptr() == address


def test_borrowed_and_empty_storages_take_no_part() -> None:
    """A storage torch does not own (``torch.from_numpy``) keeps its memory, and is given
    none; a zero-size one has none to keep."""
    owner = np.zeros(1031, dtype=np.uint8)
    borrowed = torch.from_numpy(owner).untyped_storage()
    before = cached_bytes()
    release(borrowed)
    release(_storage(0))
    assert (borrowed.nbytes(), borrowed.data_ptr()) == (1031, owner.ctypes.data)
    assert cached_bytes() == before
    freed = _storage(1031)
    release(freed)
    again = torch.from_numpy(np.zeros(1031, dtype=np.uint8)).untyped_storage()
    address = again.data_ptr()
    reuse(again)
    assert again.data_ptr() == address


def test_what_is_kept_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``CACHED_BYTES`` the blocks freed longest ago go back to the host; a block larger
    than the bound is never kept."""
    monkeypatch.setattr(caching_allocator, "CACHED_BYTES", 2 * 4133)
    for _ in range(3):
        release(_storage(4133))
    assert cached_bytes() == 2 * 4133
    release(_storage(3 * 4133))
    assert cached_bytes() == 2 * 4133
    for _ in range(2):
        reuse(_storage(4133))
    assert cached_bytes() == 0


def test_neither_call_waits_for_a_cache_in_use() -> None:
    """While the cache is in use, a freed block goes back to the host and a new storage keeps
    its own memory: a finalizer interrupting the cache's own work, or another thread, never
    blocks."""
    kept = _storage(4157)
    release(kept)
    before = cached_bytes()
    with caching_allocator._lock:
        freed = _storage(4157)
        release(freed)
        assert (freed.nbytes(), cached_bytes()) == (0, before)
        made = _storage(4157)
        address = made.data_ptr()
        reuse(made)
        assert made.data_ptr() == address
    assert cached_bytes() == before
