"""Byte accounting: what a value pins in memory, per device, each storage counted once.

Contract (SPEC ``ACCT-*``):

* A tensor counts its **whole storage** (``untyped_storage().nbytes()``), not
  ``numel * element_size``: a narrow slice of a large buffer keeps the whole
  allocation alive.
* Tensors sharing one storage (views, slices, ``expand``, ``as_strided``,
  transposes, ``view(dtype)``) count once per ``seen`` set.
* **Memory is counted, not storage objects.** A storage with memory counts the
  bytes of its address range on its device not already counted in ``seen``:
  live allocations never overlap, so aliases of one allocation (views share one
  storage; ``torch.from_dlpack(t)`` and ``torch.from_numpy(a)`` are second
  storages over the same memory) count once. Every ``meta`` storage and every
  zero-size storage has data pointer 0 (pytorch PR #54710), so keying by
  ``(device, data_ptr)`` -- as upstream does -- counts the first meta storage and
  silently drops the rest: meta storages are told apart by identity (on this
  PyTorch a storage's Python object is preserved), and zero-size ones count 0.
* Bytes are keyed by ``str(tensor.device)`` and never summed across devices:
  host and device memory are different resources.
* NumPy arrays count under ``"cpu"``: a view counts the buffer of the array that
  owns the memory. Memory that NumPy and torch share (``tensor.numpy()``,
  ``torch.from_numpy``) counts once; see :class:`_HostSpans` for how.
* Mappings (values), sequences and deques are walked to any depth (sets and
  other objects count nothing); ``str``,
  ``bytes`` and ``bytearray`` are not. Cycles terminate. Sparse tensors count
  their component tensors instead of raising.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, TypeAlias

import numpy as np
import torch

__all__ = ["SeenStorages", "device_bytes", "merge_bytes"]

#: What ``device_bytes`` has already counted. Its elements are private to this
#: module: callers only create one (``set()``) and pass it along.
SeenStorages: TypeAlias = set[object]

_NOT_WALKED = (str, bytes, bytearray, memoryview)


def merge_bytes(into: dict[str, int], other: Mapping[str, int]) -> dict[str, int]:
    """Add ``other`` into ``into`` device by device, in place; return ``into``."""
    for device, nbytes in other.items():
        into[device] = into.get(device, 0) + nbytes  # ACCT-5: per device, in place
    return into


def device_bytes(value: object, seen: SeenStorages) -> dict[str, int]:
    """Bytes pinned by ``value``, keyed by device name.

    Every storage counted is added to ``seen`` (mutated in place) and storages
    already in ``seen`` are skipped, so one ``seen`` shared across calls counts
    each storage once overall. Returns a new dict; never raises on a value a
    session can hold.
    """
    totals: dict[str, int] = {}  # ACCT-5: a new dict per call; only ``seen`` is shared
    _Walk(seen, totals).visit(value)
    return totals


class _Walk:
    """One accounting pass: the shared ``seen``, the running totals, and the
    containers already entered (so cycles and shared sub-containers are walked
    once per pass)."""

    __slots__ = ("_spans", "entered", "seen", "totals")

    def __init__(self, seen: SeenStorages, totals: dict[str, int]) -> None:
        self.seen = seen
        self.totals = totals
        self.entered: set[int] = set()
        # The address ranges this seen keeps, once it keeps any (``spans()``).
        self._spans: _HostSpans | None = _HostSpans.find(seen)

    def visit(self, value: object) -> None:
        if isinstance(value, torch.Tensor):
            self.tensor(value)
        elif isinstance(value, np.ndarray):
            self.array(value)
        elif isinstance(value, _NOT_WALKED):  # ACCT-8: str, bytes and friends are not walked
            return
        elif isinstance(value, Mapping):  # ACCT-8: containers are walked to any depth
            if self.enter(value):
                self.items(value.values())
        elif isinstance(value, Sequence) and self.enter(value):  # lists, tuples, deques...
            self.items(value)

    def items(self, values: Iterable[object]) -> None:
        # Hot path: sessions hold long lists of tensors; dispatch those inline.
        tensor, visit = self.tensor, self.visit
        for item in values:
            if isinstance(item, torch.Tensor):
                tensor(item)
            else:
                visit(item)

    def enter(self, container: object) -> bool:
        # ACCT-9: each container is entered once per pass, so cycles terminate. The
        # container is alive for the whole pass, so its id is stable here.
        key = id(container)
        if key in self.entered:
            return False
        self.entered.add(key)
        return True

    def add(self, device: str, nbytes: int) -> None:
        self.totals[device] = self.totals.get(device, 0) + nbytes

    def tensor(self, tensor: torch.Tensor) -> None:
        try:
            storage = tensor.untyped_storage()
        except (NotImplementedError, RuntimeError):
            # ACCT-9: sparse layouts have no storage of their own (upstream lets this
            # NotImplementedError escape, breaking stats() for every session);
            # their memory is their component tensors.
            parts = _sparse_components(tensor)
            for part in parts:
                self.tensor(part)
            if not parts and tensor not in self.seen:
                # ACCT-12: opaque layouts (mkldnn) expose no storage: count their
                # elements, once per tensor object, rather than nothing.
                self.seen.add(tensor)
                device = str(tensor.device)
                nbytes = tensor.numel() * tensor.element_size()
                self.totals[device] = self.totals.get(device, 0) + nbytes
            return
        seen = self.seen
        if storage in seen:  # ACCT-2, ACCT-5: views share one storage, counted once per seen
            return
        nbytes = storage.nbytes()  # ACCT-1: the whole storage, not numel() * element_size()
        device = str(tensor.device)  # ACCT-4: keyed by device, never summed across devices
        if nbytes and (self._spans is not None or not storage.resizable()) and device != "meta":
            # ACCT-7: memory, not storage objects, is what is counted: two storages over one
            # allocation (torch.from_numpy of an array, torch.from_dlpack of a tensor,
            # a storage torch only borrows) are one range of addresses. Live
            # allocations never overlap on a device, so the union of the ranges is
            # exact. Only memory torch did not allocate can be shared that way, so
            # ranges are kept from the first such storage (or NumPy array) a seen
            # meets; until then storage identity is the same count, and cheaper.
            start = _address(storage)
            if start is not None:
                nbytes = self.spans().cover(device, start, nbytes)
        # ACCT-3: meta storages have no memory and all sit at address 0: told apart by identity.
        seen.add(storage)  # also pins it: its address cannot be reused while seen lives
        totals = self.totals
        totals[device] = totals.get(device, 0) + nbytes

    def spans(self) -> _HostSpans:
        if self._spans is None:
            self._spans = _HostSpans.of(self.seen)
        return self._spans

    def array(self, array: np.ndarray) -> None:
        owner = array
        # ACCT-6: a view counts the buffer of the array that owns the memory.
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if isinstance(owner.base, torch.Tensor):
            # ACCT-7: ``tensor.numpy()``: the memory is that tensor's storage.
            self.tensor(owner.base)
            return
        if owner.nbytes == 0:
            return
        start = int(owner.__array_interface__["data"][0])
        spans = self.spans()
        # Pin the owner as ``seen`` pins counted storages: once freed, its
        # address could be reused by a new array that would then count 0.
        spans.owners.append(owner)
        # ACCT-6, ACCT-7: under "cpu", bytes another value already holds alive count once.
        self.add("cpu", spans.cover("cpu", start, owner.nbytes))


def _address(storage: torch.UntypedStorage) -> int | None:
    """Where ``storage``'s memory starts; None where torch gives no address (the storage
    of a jagged nested tensor), which is then told apart by identity."""
    try:
        return int(storage.data_ptr())
    except RuntimeError:
        return None


def _sparse_components(tensor: torch.Tensor) -> tuple[torch.Tensor, ...]:
    layout = tensor.layout
    if layout is torch.sparse_coo:
        return (tensor._indices(), tensor._values())
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        return (tensor.crow_indices(), tensor.col_indices(), tensor.values())
    if layout in (torch.sparse_csc, torch.sparse_bsc):
        return (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    return ()


class _HostSpans:
    """The address ranges already counted in one ``seen`` set, per device.

    Storages and NumPy buffers are memory that may overlap: ``torch.from_numpy(
    owner[1:])`` is a storage over the tail of ``owner``'s buffer, and
    ``torch.from_dlpack(t)`` a second storage over ``t``'s. Live allocations never
    overlap, so the exact count is the length of the union of the address ranges.
    The ranges live in one object stored *inside* ``seen`` (so they share its
    lifetime); the weak map only finds that object again from the set, and
    membership in ``seen`` confirms the match even if CPython reuses the id of a
    dead set.
    """

    __slots__ = ("__weakref__", "owners", "ranges")

    _by_seen: ClassVar[weakref.WeakValueDictionary[int, _HostSpans]] = weakref.WeakValueDictionary()

    def __init__(self) -> None:
        # device -> (starts, stops): sorted, disjoint, non-adjacent ranges
        self.ranges: dict[str, tuple[list[int], list[int]]] = {}
        self.owners: list[np.ndarray] = []  # NumPy owners counted, kept alive

    @classmethod
    def find(cls, seen: SeenStorages) -> _HostSpans | None:
        """The ranges ``seen`` keeps, if it keeps any yet."""
        spans = cls._by_seen.get(id(seen))
        return spans if spans is not None and spans in seen else None

    @classmethod
    def of(cls, seen: SeenStorages) -> _HostSpans:
        """The ranges ``seen`` keeps, made on first use from the storages it already
        counted by identity, so that memory counted before counts once after too."""
        spans = cls.find(seen)
        if spans is None:
            spans = cls()
            for item in list(seen):
                if isinstance(item, torch.UntypedStorage):
                    device, start = str(item.device), _address(item)
                    if item.nbytes() and device != "meta" and start is not None:
                        spans.cover(device, start, item.nbytes())
            seen.add(spans)
            cls._by_seen[id(seen)] = spans
        return spans

    def cover(self, device: str, start: int, nbytes: int) -> int:
        """Mark ``[start, start + nbytes)`` counted on ``device``; return the bytes newly
        covered."""
        ranges = self.ranges.get(device)
        if ranges is None:
            self.ranges[device] = ([start], [start + nbytes])
            return nbytes
        starts, stops = ranges
        stop = start + nbytes
        lo = bisect_left(stops, start)  # first range that ends at or after start
        hi = bisect_right(starts, stop)  # ranges from lo to hi touch the new one
        overlap = 0
        for s, e in zip(starts[lo:hi], stops[lo:hi], strict=True):
            overlap += max(0, min(e, stop) - max(s, start))
        if lo < hi:
            start = min(start, starts[lo])
            stop = max(stop, stops[hi - 1])
        starts[lo:hi] = [start]
        stops[lo:hi] = [stop]
        return nbytes - overlap
