"""Concrete ``StateObject`` classes known upstream: a latent/frame ring, encode-once
K/V, and never-evictable fixed-size state."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

# typing_extensions (a dependency of torch) for the PEP 696 default: a bare
# ``LatentBuffer`` stays ``LatentBuffer[Any]`` for code written before it was generic.
from typing_extensions import TypeVar

from .accounting import SeenStorages, device_bytes
from .base import StateObject

__all__ = ["EncodeOnceKV", "FixedState", "LatentBuffer"]

#: What a ``LatentBuffer`` holds: ``LatentBuffer[torch.Tensor]`` as upstream writes it.
T = TypeVar("T", default=Any)


class LatentBuffer(StateObject[T, list[T]]):
    """Append-only buffer, or a ring of ``maxlen`` items once allocated so; generic in
    its item type (``LatentBuffer[torch.Tensor]()``, as upstream's).

    DreamZero keeps its frame ring (``maxlen`` = frames per chunk) and its
    accumulated video latents (unbounded) in these. ``append``/``extend``
    before ``allocate`` raise ``RuntimeError``; ``commit(None)`` is a no-op;
    ``view()`` returns a new list; bytes are the accounting of the items.
    """

    def __init__(self) -> None:
        self._items: deque[T] | None = None

    # OBJ-7: keyword-only sizing: a typo or a positional argument raises TypeError.
    def allocate(self, *, maxlen: int | None = None) -> None:
        self._items = deque(maxlen=maxlen)  # OBJ-1: resident and empty, even if already allocated

    @property
    def maxlen(self) -> int | None:
        return None if self._items is None else self._items.maxlen

    def _require(self) -> deque[T]:
        if self._items is None:
            raise RuntimeError("LatentBuffer used before allocate()")
        return self._items

    def commit(self, payload: T | None = None) -> None:
        if payload is not None:
            self._require().append(payload)

    def append(self, payload: T) -> None:
        self._require().append(payload)

    def extend(self, payloads: Iterable[T]) -> None:
        self._require().extend(payloads)

    # OBJ-7: include_staged is keyword-only: view(False) raises TypeError.
    def view(self, *, include_staged: bool = True) -> list[T]:
        items = list(self._items or ())
        # OBJ-3, OBJ-9: the staged item is shown last by default, never stored or counted.
        if include_staged and self._staged is not None:
            items.append(self._staged)
        return items

    def reset(self) -> None:
        self._items = None  # OBJ-1: non-resident, holding no bytes
        self._staged = None

    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        # OBJ-2, OBJ-4: the accounting of the committed items, through the shared seen.
        return device_bytes(list(self._items or ()), seen)

    @property
    def resident(self) -> bool:
        return self._items is not None  # OBJ-1: from allocate() until reset() or evict()

    def __len__(self) -> int:
        return len(self._items or ())


class EncodeOnceKV(StateObject[Mapping[str, Any], dict[str, Any]]):
    """K/V of a conditioning encoder, written once and reread every forward.

    ``view()`` is the live ``{"is_init", "k", "v"}`` dict the model mutates in
    place; bytes are those of ``k`` and ``v``.
    """

    def __init__(self) -> None:
        self._cache: dict[str, Any] | None = None

    def allocate(self) -> None:
        self._cache = {"is_init": False, "k": None, "v": None}

    def _require(self) -> dict[str, Any]:
        if self._cache is None:
            raise RuntimeError("EncodeOnceKV used before allocate()")
        return self._cache

    def commit(self, payload: Mapping[str, Any] | None = None) -> None:
        if payload is None:
            payload, self._staged = self._staged, None
        if payload is None:
            return
        cache = self._require()
        cache["k"] = payload["k"]
        cache["v"] = payload["v"]
        cache["is_init"] = True

    def view(self, *, include_staged: bool = True) -> dict[str, Any]:
        # The live dict (not a copy): the model writes k/v into it in place.
        return self._require()

    def reset(self) -> None:
        self._cache = None
        self._staged = None

    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        if self._cache is None:
            return {}
        return device_bytes([self._cache["k"], self._cache["v"]], seen)

    @property
    def resident(self) -> bool:
        return self._cache is not None


class FixedState(StateObject[Mapping[str, torch.Tensor], dict[str, torch.Tensor]]):
    """Named zero-filled buffers of fixed shape, e.g. a recurrent state.

    ``allocate(shapes=...)`` names at least one buffer (empty ``shapes`` is a
    ``ValueError``). ``commit`` copies into the buffers in place, keeping their
    identity (a compiled graph may hold them), and rejects missing or extra
    names and shape mismatches with ``ValueError``. ``snapshot()`` returns a
    copy of every buffer, unaffected by later commits; ``restore(snapshot)``
    copies one back in place, checked as ``commit`` is (a rollout rewound to a
    saved step). Never evictable: dropping a recurrent state cannot be undone
    by recomputation.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, torch.Tensor] | None = None

    def allocate(
        self,
        *,
        shapes: Mapping[str, Sequence[int]],
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> None:
        if not shapes:
            raise ValueError("FixedState.allocate: shapes is empty; name at least one buffer")
        self._buffers = {
            name: torch.zeros(tuple(shape), dtype=dtype, device=device)
            for name, shape in shapes.items()
        }

    def _require(self) -> dict[str, torch.Tensor]:
        if self._buffers is None:
            raise RuntimeError("FixedState used before allocate()")
        return self._buffers

    def commit(self, payload: Mapping[str, torch.Tensor] | None = None) -> None:
        if payload is None:
            payload, self._staged = self._staged, None
        if payload is None:
            return
        self._copy_in(payload, "commit")

    def snapshot(self) -> dict[str, torch.Tensor]:
        """A copy of every buffer (``clone``), which later commits leave as it is."""
        return {name: buffer.clone() for name, buffer in self._require().items()}

    def restore(self, snapshot: Mapping[str, torch.Tensor]) -> None:
        """Copy ``snapshot`` (from ``snapshot()``, or any payload ``commit`` takes) back
        into the buffers in place: the same names and shapes, else ``ValueError``."""
        self._copy_in(snapshot, "restore")

    def _copy_in(self, payload: Mapping[str, torch.Tensor], method: str) -> None:
        buffers = self._require()
        # OBJ-9: validate every name and shape before copying anything: copy_ would
        # broadcast a (1,) payload silently, and a partial copy would change the state.
        if set(payload) != set(buffers):
            raise ValueError(
                f"FixedState.{method}: names {sorted(payload)} do not match {sorted(buffers)}"
            )
        for name, value in payload.items():
            if tuple(value.shape) != tuple(buffers[name].shape):
                raise ValueError(
                    f"FixedState.{method}: {name!r} has shape {tuple(value.shape)}, "
                    f"expected {tuple(buffers[name].shape)}"
                )
        for name, value in payload.items():
            buffers[name].copy_(value)

    def view(self, *, include_staged: bool = True) -> dict[str, torch.Tensor]:
        return dict(self._require())

    def reset(self) -> None:
        self._buffers = None
        self._staged = None

    def evict(self, policy: object = None) -> int:
        # OBJ-6: never evictable: raise before touching anything, so it stays resident.
        raise RuntimeError("FixedState is never evictable: its state cannot be recomputed")

    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        return device_bytes(self._buffers or {}, seen)

    @property
    def resident(self) -> bool:
        return self._buffers is not None
