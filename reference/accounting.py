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
  other objects count nothing); ``str``, ``bytes``, ``bytearray`` and ``range``
  are values, not walked. Cycles terminate. Sparse tensors count their
  component tensors instead of raising.
* The walk is iterative (ACCT-13): an explicit stack, so no nesting depth
  raises ``RecursionError``. ``dict``, ``list``, ``tuple`` and ``deque`` (and
  their subclasses) are read through the built-in class's own iteration, in C,
  so no code of the value runs and the walk is bounded by memory. Any other
  Mapping or Sequence runs its own code: those yield at most
  ``OTHER_ITEMS_PER_CONTAINER`` items each and ``OTHER_ITEMS_PER_CALL`` in all
  per call, and an error from one ends its walk, keeping what it gave (ACCT-14); their
  code gets ``OTHER_SECONDS_PER_CALL`` seconds in all per call (ACCT-17).
* A value whose inspection raises (a tensor subclass whose ``__torch_function__``
  raises, an object whose ``__getattribute__`` raises or that claims to be a
  ``torch.Tensor``) counts nothing, and the walk goes on (ACCT-17).
* Objects exporting a byte buffer (``array.array``, ``mmap``, the exporter of a
  ``memoryview``) count that buffer under ``"cpu"``, by address range like NumPy
  owners; NumPy object arrays count their pointer buffer and have their
  elements walked (ACCT-15).
"""

from __future__ import annotations

import array as _array
import time
import weakref
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import ClassVar, TypeAlias

import numpy as np
import torch

__all__ = [
    "OTHER_ITEMS_PER_CALL",
    "OTHER_ITEMS_PER_CONTAINER",
    "OTHER_SECONDS_PER_CALL",
    "SeenStorages",
    "device_bytes",
    "merge_bytes",
]

#: What ``device_bytes`` has already counted. Its elements are private to this
#: module: callers only create one (``set()``) and pass it along.
SeenStorages: TypeAlias = set[object]

#: How many items one Mapping or Sequence other than the built-in containers
#: yields at most, and how many all of them yield at most in one ``device_bytes``
#: call (ACCT-14): their iteration is their own code, which may be endless
#: (``__getitem__`` that never raises ``IndexError``) or virtual (a lazy sequence
#: of 10**12 items). Per container, so that one endless container does not starve
#: its siblings; per call, so that nesting them cannot multiply the bound.
OTHER_ITEMS_PER_CONTAINER = 65_536
OTHER_ITEMS_PER_CALL = 16 * OTHER_ITEMS_PER_CONTAINER
#: Seconds the code of those containers gets in all, per call (ACCT-17): a Sequence whose
#: ``__getitem__`` takes a millisecond would take its 65,536 items over a minute. Far above
#: what the item bounds take at a normal pace (a million items in about half a second).
OTHER_SECONDS_PER_CALL = 1.0
#: Items taken between two looks at the clock.
_CLOCK_EVERY = 64

#: Values never walked (ACCT-8): text and byte strings are values, as is ``range``
#: (a Sequence of ints it computes, holding no state).
_NOT_WALKED = (str, bytes, bytearray, range)
#: Containers read through the built-in class's own iteration (ACCT-13).
_BUILT_IN = (dict, list, tuple, deque)
#: Types checked first and skipped at once: the commonest values that count nothing.
_VALUES = frozenset({type(None), bool, int, float, complex, str})
#: Buffer exporters that are values, not state memory (ACCT-8): byte strings and
#: NumPy scalars (numbers).
_VALUE_BUFFERS = (bytes, bytearray, np.generic)
#: Types seen not to export a buffer: ``memoryview()`` raises for them every time.
_NOT_EXPORTERS: set[type] = set()
#: What ``seen`` holds for a buffer counted by identity (it has no single address).
_BUFFER = "buffer"


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
    session can hold, and always returns: the walk is iterative (any depth), a
    built-in container is read through its built-in iteration (no code of the
    value's own runs), and other containers yield at most
    :data:`OTHER_ITEMS_PER_CONTAINER` items each and :data:`OTHER_ITEMS_PER_CALL` in
    all, within :data:`OTHER_SECONDS_PER_CALL` seconds, an error ending that container's
    walk. A value whose inspection raises counts nothing.
    """
    totals: dict[str, int] = {}  # ACCT-5: a new dict per call; only ``seen`` is shared
    _Walk(seen, totals).run(value)
    return totals


class _Walk:
    """One accounting pass: the shared ``seen``, the running totals, the containers
    already entered (so cycles and shared sub-containers are walked once per pass),
    and what is left of the budget for containers other than the built-in ones."""

    __slots__ = ("_spans", "budget", "entered", "seconds", "seen", "stack", "totals")

    def __init__(self, seen: SeenStorages, totals: dict[str, int]) -> None:
        self.seen = seen
        self.totals = totals
        self.entered: set[int] = set()
        # ACCT-13: an explicit stack of values still to visit, never the call stack.
        self.stack: list[object] = []
        self.budget = OTHER_ITEMS_PER_CALL
        self.seconds = OTHER_SECONDS_PER_CALL  # left for containers' own code (ACCT-17)
        # The address ranges this seen keeps, once it keeps any (``spans()``).
        self._spans: _HostSpans | None = _HostSpans.find(seen)

    def run(self, value: object) -> None:
        """Count ``value`` and everything it holds, one value at a time off the stack."""
        stack = self.stack
        stack.append(value)
        pop, tensor, visit = stack.pop, self.tensor, self.visit
        while stack:
            item = pop()
            try:
                # Hot path: sessions hold long lists of tensors; dispatch those inline.
                if isinstance(item, torch.Tensor):
                    tensor(item)
                else:
                    visit(item)
            except Exception:  # ACCT-17: a value whose inspection raises counts nothing
                continue

    def visit(self, value: object) -> None:
        cls = type(value)
        if cls in _VALUES:  # the common scalars, without an isinstance chain
            return
        if isinstance(value, np.ndarray):
            self.array(value)
        elif isinstance(value, _NOT_WALKED):  # ACCT-8: str, bytes and friends are not walked
            return
        elif isinstance(value, _BUILT_IN):
            if self.enter(value):  # ACCT-8: containers are walked to any depth
                self.built_in(value)
        elif isinstance(value, (memoryview, _array.array)):
            self.exported(value)
        elif isinstance(value, Mapping):
            if self.enter(value):
                self.other(value, values=True)
        elif isinstance(value, Sequence):
            if self.enter(value):
                self.other(value, values=False)
        else:
            self.exported(value)

    def built_in(self, value: object) -> None:
        # ACCT-13: the built-in iteration of the built-in class: an overridden __iter__
        # or values() of a subclass never runs. A dict or a deque is copied in one C
        # step first: another thread changing it (the walk holds no lock, ACCT-16)
        # would make iterating it raise. Lists and tuples iterate safely as they are.
        if isinstance(value, dict):
            self.stack.extend(dict.values(value))
            return
        if isinstance(value, deque):
            self.stack.extend(deque.__iter__(value))
            return
        if type(value) is list or type(value) is tuple:
            items: Iterable[object] = value
        elif isinstance(value, list):
            items = list.__iter__(value)
        else:
            items = tuple.__iter__(value)  # type: ignore[arg-type]
        # Hot path: sessions hold long lists of tensors; count those without the stack.
        tensor, push = self.tensor, self.stack.append
        for item in items:
            try:
                if isinstance(item, torch.Tensor):
                    tensor(item)
                else:
                    push(item)
            except Exception:  # ACCT-17: a value whose inspection raises counts nothing
                continue

    def other(self, value: Mapping[object, object] | Sequence[object], *, values: bool) -> None:
        # ACCT-14: another Mapping or Sequence runs its own code, which may never end
        # (a Sequence that never raises IndexError) or raise: at most the budget of
        # items each and in all, and an error ends this container, keeping what it gave.
        # ACCT-17: and that code gets a time budget per call, all containers together.
        limit = min(self.budget, OTHER_ITEMS_PER_CONTAINER)
        if limit <= 0 or self.seconds <= 0:
            return
        taken: list[object] = []
        started = time.monotonic()
        deadline = started + self.seconds
        try:
            items = value.values() if values else value  # type: ignore[union-attr]
            for item in islice(items, limit):
                taken.append(item)
                if not len(taken) % _CLOCK_EVERY and time.monotonic() > deadline:
                    break
        except Exception:  # ACCT-9: what could be counted is counted; stats() never raises
            pass
        self.seconds -= time.monotonic() - started
        self.budget -= len(taken)
        self.stack.extend(taken)

    def exported(self, value: object) -> None:
        """ACCT-15: an object exporting a byte buffer (``array.array``, ``mmap``, the
        exporter behind a ``memoryview``) counts that buffer under ``"cpu"``."""
        if isinstance(value, memoryview):
            try:
                value = value.obj  # the exporter's whole buffer, not the view's slice
            except ValueError:  # released: it holds nothing alive
                return
        if isinstance(value, np.ndarray):
            self.array(value)  # a memoryview of an array: the array's owner, ACCT-6
            return
        cls = type(value)
        if cls in _NOT_EXPORTERS or isinstance(value, _VALUE_BUFFERS):
            return  # ACCT-8: bytes, bytearray and NumPy scalars are values
        try:
            with memoryview(value) as view:  # type: ignore[arg-type]
                nbytes = view.nbytes
                start = _buffer_address(view) if nbytes else None
        except TypeError:
            _NOT_EXPORTERS.add(cls)  # the buffer slot is the type's: never, every time
            return
        except (ValueError, BufferError):  # released, or refused just now
            return
        if not nbytes:
            return
        spans = self.spans()
        if start is None:  # a buffer with no single address: told apart by identity
            key = (_BUFFER, id(value))
            if key in self.seen:
                return
            self.seen.add(key)
            spans.owners.append(value)  # pinned while seen lives: its id stays its own
            self.add("cpu", nbytes)
            return
        spans.owners.append(value)  # pinned while seen lives, as NumPy owners are
        covered = spans.cover("cpu", start, nbytes)  # ACCT-7: shared memory counts once
        if covered:
            self.add("cpu", covered)

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
        if tensor.is_nested:
            # ACCT-9: a nested tensor counts the storages it is built from, as a sparse
            # one does: a jagged one's untyped_storage() is a placeholder of its values'
            # size (no address, not values()'s storage), so counting it would count the
            # values twice beside n.values() and the offsets never.
            try:
                components = _nested_components(tensor)
            except (AttributeError, NotImplementedError, RuntimeError):
                components = []  # a nested layout this torch builds otherwise: its storage below
            for part in components:
                self.tensor(part)
            if components:
                return
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
        seen.add(storage)  # ACCT-5: also pins it, so its address is not reused while seen lives
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
        if owner.dtype.kind == "O" and self.enter(owner):
            # ACCT-15: an object array holds references, like a list: its elements
            # are walked, all of them (the owner's, as its buffer is what counts).
            self.stack.extend(owner.ravel(order="K").tolist())


def _buffer_address(view: memoryview) -> int | None:
    """Where the bytes of a contiguous buffer start; None for a strided one. The NumPy
    array is dropped before this returns, so ``view`` can be released."""
    if not view.contiguous:
        return None
    return int(np.frombuffer(view, dtype=np.uint8).__array_interface__["data"][0])


def _address(storage: torch.UntypedStorage) -> int | None:
    """Where ``storage``'s memory starts; None where torch gives no address (the storage
    of a jagged nested tensor), which is then told apart by identity."""
    try:
        return int(storage.data_ptr())
    except RuntimeError:
        return None


def _nested_components(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The tensors a nested tensor is built from (ACCT-9): a jagged one's inner tensors
    (values, offsets, lengths when set, the zero-byte seqlen tensors); a strided one's
    buffer and its size, stride and offset metadata (host tensors)."""
    if tensor.layout is torch.jagged:
        names, _ = tensor.__tensor_flatten__()  # type: ignore[attr-defined]
        inner = (getattr(tensor, name) for name in names)
        return [part for part in inner if isinstance(part, torch.Tensor)]
    buffer = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    with torch.no_grad():
        buffer.set_(tensor.untyped_storage())  # the buffer as a plain tensor over it
    return [
        buffer,
        tensor._nested_tensor_size(),
        tensor._nested_tensor_strides(),
        tensor._nested_tensor_storage_offsets(),
    ]


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
        self.owners: list[object] = []  # NumPy owners and buffer exporters counted, kept alive

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
