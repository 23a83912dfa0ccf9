"""``SuiteBuffer``: the buffer the suite puts into a subject's sessions when it brings none.

The manager clauses (DROP-2, RESET-1, ACCT-10, ACCT-11) need an object in a
session that holds tensors. It must count its bytes through the *subject's*
accounting: the subject's session and manager pass one ``seen`` set to every
object and to their own walk of ``attrs``, and what goes into that set is the
subject's business (storage objects, ``(device, data_ptr)`` pairs, ...). An
object with accounting of its own, such as the reference ``LatentBuffer``, would
put keys of another kind into the same set, and one tensor held by the buffer
and by an attribute would count twice: a failure of the suite, not of the
subject. So this buffer holds a plain list and asks ``accounting(items, seen)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SuiteBuffer"]


class SuiteBuffer:
    """An append-only list of payloads, resident from ``allocate()`` until ``reset()``.

    It satisfies the StateObject protocol the manager relies on (``resident``,
    ``reset``, ``evict``, ``nbytes_by_device(seen)``, ``nbytes``, ``view``,
    ``append``/``commit``, ``stage``/``discard``); before ``allocate()`` and
    after ``reset()`` it holds nothing and ``view()`` returns ``[]``.
    """

    recompute_source: object = None
    recompute_cost: int = 0

    def __init__(self, accounting: Callable[[object, set[Any]], dict[str, int]]) -> None:
        self._accounting = accounting
        self._items: list[Any] = []
        self._staged: Any = None
        self._resident = False

    def __repr__(self) -> str:
        return f"SuiteBuffer({len(self._items)} items, resident={self._resident})"

    def allocate(self) -> None:
        self._items, self._staged, self._resident = [], None, True

    def append(self, payload: Any) -> None:
        if not self._resident:
            raise RuntimeError("SuiteBuffer is not allocated; call allocate() first.")
        self._items.append(payload)

    def commit(self, payload: Any = None) -> None:
        if payload is None:
            payload, self._staged = self._staged, None
        if payload is None:
            raise RuntimeError("SuiteBuffer.commit(): nothing staged")
        self.append(payload)

    def stage(self, payload: Any) -> None:
        self._staged = payload

    def discard(self) -> None:
        self._staged = None

    def view(self, *, include_staged: bool = True) -> list[Any]:
        staged = [self._staged] if include_staged and self._staged is not None else []
        return [*self._items, *staged]

    def reset(self) -> None:
        self._items, self._staged, self._resident = [], None, False

    def evict(self, policy: object = None) -> int:
        freed = self.nbytes
        self.reset()
        return freed

    @property
    def resident(self) -> bool:
        return self._resident

    @property
    def recomputable(self) -> bool:
        return False

    def nbytes_by_device(self, seen: set[Any]) -> dict[str, int]:
        """The subject's accounting of the committed items, skipping and extending ``seen``."""
        return dict(self._accounting(list(self._items), seen)) if self._items else {}

    @property
    def nbytes(self) -> int:
        return sum(self.nbytes_by_device(set()).values())
