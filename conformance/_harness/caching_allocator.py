"""The simulated CUDA devices' caching allocator: a freed block goes to the next allocation of
its size, at once.

Contract: a GPU's caching allocator keeps the memory of a freed storage and hands it to the
next allocation of the same size on the same device, so a new storage can have the address of
one freed a moment before. The simulated devices (``_harness.devices``) do the same with the
host memory behind them:

* ``release(storage)``, called as a simulated storage is freed (its last tensor and its last
  Python reference gone), keeps its memory, by device and size;
* ``reuse(storage)``, called on a new simulated storage, gives it the block of its device and
  size freed last, with the new storage's contents copied into it: the new storage then has
  the freed one's address, and the memory it was made in is returned to the host.

A block is kept by one storage at a time, so live allocations keep distinct addresses. Only
resizable storages with memory take part: a borrowed storage's memory is its owner's (a
CuPy array's is CuPy's pool's), and a zero-size storage has none. At most ``CACHED_BYTES``
are kept; past that, the blocks freed longest ago go back to the host. Neither call waits:
one that finds the cache in use (by another thread, or by this thread's own call that a
finalizer interrupted) leaves it alone, the freed block going back to the host or the new
storage keeping the memory it was made in, as an allocator under contention may do. Tests
that need the reuse free and allocate on one thread.
"""

from __future__ import annotations

import os
import threading

import torch

__all__ = ["CACHED_BYTES", "cached_bytes", "release", "reuse"]

#: The most bytes the freed blocks kept may take, all devices together.
CACHED_BYTES = 64 * 2**20

#: (device name, nbytes) -> the blocks freed on that device of that size, oldest first. The
#: keys are in the order their blocks were last freed, so the first is the one freed longest ago.
_free: dict[tuple[str, int], list[torch.UntypedStorage]] = {}
_kept = [0]  # the bytes the blocks in ``_free`` take
_lock = threading.Lock()


def _new_lock() -> None:
    # A child forked while another thread held the lock would never see it released.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)


def cached_bytes() -> int:
    """The bytes of the freed blocks kept now."""
    return _kept[0]


def release(storage: torch.UntypedStorage) -> None:
    """Keep the memory of ``storage``, being freed, for the next allocation of its size on
    ``storage.device``; ``storage`` is left with none (0 bytes)."""
    nbytes = storage.nbytes()
    if not nbytes or nbytes > CACHED_BYTES or not storage.resizable():
        return
    key = (str(storage.device), nbytes)
    block = torch.UntypedStorage(0)  # type: ignore[no-untyped-call]
    block._swap_data_ptr_(storage)  # type: ignore[attr-defined]  # the memory, not a copy
    if not _lock.acquire(blocking=False):
        return  # in use: the block goes back to the host with ``block``
    try:
        blocks = _free.pop(key, [])
        blocks.append(block)
        _free[key] = blocks  # last in the order: freed most recently
        _kept[0] += nbytes
        while _kept[0] > CACHED_BYTES:
            oldest = next(iter(_free))
            _kept[0] -= oldest[1]
            del _free[oldest][0]
            if not _free[oldest]:
                del _free[oldest]
    finally:
        _lock.release()


def reuse(storage: torch.UntypedStorage) -> None:
    """Move ``storage`` (new, on a simulated device) into the block of its device and size
    freed last, if one is kept; its contents are unchanged."""
    nbytes = storage.nbytes()
    if not nbytes or not storage.resizable() or not _lock.acquire(blocking=False):
        return
    try:
        key = (str(storage.device), nbytes)
        blocks = _free.get(key)
        if not blocks:
            return
        block = blocks.pop()  # the last freed, as a caching allocator's best fit is
        if not blocks:
            del _free[key]
        _kept[0] -= nbytes
    finally:
        _lock.release()
    storage._swap_data_ptr_(block)  # type: ignore[attr-defined]  # the freed block's address
    storage.copy_(block)  # the contents it was made with, which ``block`` now holds
