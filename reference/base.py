"""``StateObject``: one typed unit of per-session state (SPEC ``OBJ-*``).

A world model keeps several kinds of state between forwards -- a frame ring,
latent chunks, encode-once K/V, a recurrent fixed-size state. Each is a
``StateObject`` so the manager can ask every one the same questions: is it
resident, how many bytes does it pin on which device, and can it be evicted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

from .accounting import SeenStorages

__all__ = ["PayloadT", "StateObject", "ViewT"]

PayloadT = TypeVar("PayloadT")
ViewT = TypeVar("ViewT")


class StateObject(ABC, Generic[PayloadT, ViewT]):
    """Abstract unit of session state.

    Subclasses implement ``allocate`` (sizing parameters typed keyword-only, so
    an unknown keyword raises ``TypeError``), ``commit``, ``view``, ``reset``,
    ``nbytes_by_device`` (committed storage only; staged payloads are not
    counted) and the ``resident`` property.
    """

    #: The object this one is rebuilt from after eviction (``None``: nothing).
    recompute_source: StateObject[Any, Any] | None = None
    #: Relative cost of that rebuild, for an eviction planner.
    recompute_cost: ClassVar[int] = 0  # OBJ-10: an int >= 0

    _staged: PayloadT | None = None

    @abstractmethod
    def allocate(self, *args: Any, **kwargs: Any) -> None:
        """Size the object and initialise it to empty; it becomes resident.

        Subclasses declare their sizing parameters keyword-only, so that an
        unknown keyword raises ``TypeError`` instead of being ignored.
        """

    @abstractmethod
    def commit(self, payload: PayloadT | None = None) -> None:
        """Make ``payload`` (or, with none, whatever is staged) part of the state."""

    @abstractmethod
    def view(self, *, include_staged: bool = True) -> ViewT:
        """Read the state, with or without the staged payload."""

    @abstractmethod
    def reset(self) -> None:
        """Release everything; the object goes back to unallocated."""

    @abstractmethod
    def nbytes_by_device(self, seen: SeenStorages) -> dict[str, int]:
        """Bytes of committed storage per device, skipping and extending ``seen``."""

    @property
    @abstractmethod
    def resident(self) -> bool:
        """Whether the object currently holds allocated state."""

    def stage(self, payload: PayloadT) -> None:
        """Record ``payload`` for a later ``commit()``; otherwise inert."""
        self._staged = payload  # OBJ-3: kept aside; nbytes_by_device never counts it

    def discard(self) -> None:
        """Drop the staged payload; committed bytes are never touched."""
        self._staged = None  # OBJ-3: committed state is left as it was

    def append(self, payload: PayloadT) -> None:
        """Add ``payload`` to the state; by default the same as ``commit``."""
        self.commit(payload)

    def evict(self, policy: object = None) -> int:
        """Release the state and return the bytes it held.

        Objects that must never be evicted (a constant-size recurrent state)
        override this to raise ``RuntimeError`` and stay resident.
        """
        # OBJ-6: the bytes held before, then released: the object is left non-resident.
        freed = self.nbytes
        self.reset()
        return freed

    @property
    def nbytes(self) -> int:
        """Committed bytes summed over devices (a budget wants the per-device split)."""
        return sum(self.nbytes_by_device(set()).values())  # OBJ-5: the per-device split, summed

    @property
    def recomputable(self) -> bool:
        """Droppable and rebuildable now: a ``recompute_source`` is set and is resident.

        Derived, not declared (upstream's contract): it follows the source, so an
        evicted object whose source is still there is recomputable.
        """
        source = self.recompute_source
        return source is not None and source.resident is True  # OBJ-10: always a bool
