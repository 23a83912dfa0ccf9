"""``SessionState``: the named ``StateObject``s of one session plus its ``attrs``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .accounting import SeenStorages, device_bytes, merge_bytes
from .base import StateObject

__all__ = ["SessionState"]

AnyStateObject = StateObject[Any, Any]
M = TypeVar("M", bound=AnyStateObject)


class SessionState:
    """One session's state: named objects in insertion order, and ``attrs``.

    ``attrs`` holds session metadata that is not a ``StateObject`` (counters,
    cached conditioning tensors, a VAE encoder feature cache) and persists
    across the per-forward adapters that read and write it. Not thread-safe:
    the manager's lock guards its table, not the sessions in it.
    """

    def __init__(self) -> None:
        # RESET-4: a dict keeps insertion order, which names() lists.
        self._objects: dict[str, AnyStateObject] = {}
        self.attrs: dict[str, object] = {}

    def get(self, name: str) -> AnyStateObject | None:
        """The object stored under ``name``, or ``None``."""
        return self._objects.get(name)  # RESET-4: None when absent

    def put(self, name: str, obj: M) -> M:
        """Store ``obj`` under ``name`` (a replaced object is not reset); return it."""
        self._objects[name] = obj  # RESET-4: the replaced object is not reset
        return obj

    def names(self) -> list[str]:
        """Object names in insertion order."""
        return list(self._objects)

    def get_or_create(self, name: str, factory: Callable[[], M], cls: type[M]) -> M:
        """The stored object if it is a resident ``cls``; else ``factory()``, stored."""
        obj = self._objects.get(name)
        # RESET-3, OBJ-8: rebuild only what is missing, wrong-typed or no longer resident.
        if isinstance(obj, cls) and obj.resident:
            return obj
        created = factory()
        self._objects[name] = created
        return created

    def reset(self) -> None:
        """Reset every object (they stay registered) and clear ``attrs``.

        Every object is reset and ``attrs`` cleared even if some ``reset()``
        raises; the first error then propagates (upstream stopped at it and
        left the rest of the session, attrs included, stale).
        """
        first_error: BaseException | None = None
        for obj in self._objects.values():
            try:
                obj.reset()  # RESET-1: every object, kept registered under its name
            except Exception as error:  # RESET-2: keep going; the first error is raised last
                if first_error is None:
                    first_error = error
        self.attrs.clear()  # RESET-1: no stale attribute survives a reset
        if first_error is not None:
            raise first_error

    def nbytes_by_device(self, seen: SeenStorages | None = None) -> dict[str, int]:
        """Bytes per device of every object, then of ``attrs``, with ONE ``seen``.

        Objects and attributes differ in what the manager may do with them,
        not in whether their bytes occupy memory; one ``seen`` across both
        counts a tensor held by an object and an attribute once.
        """
        # ACCT-10, OBJ-4: one seen for objects and attrs counts a shared tensor once.
        shared: SeenStorages = set() if seen is None else seen
        totals: dict[str, int] = {}
        for obj in self._objects.values():
            merge_bytes(totals, obj.nbytes_by_device(shared))
        if self.attrs:  # empty, it holds nothing: skip the walk (stats() of 1,024 bare sessions 8x)
            merge_bytes(totals, device_bytes(self.attrs, shared))
        return totals

    @property
    def nbytes(self) -> int:
        """Bytes summed over devices."""
        return sum(self.nbytes_by_device().values())  # ACCT-10: the sum over devices
