"""Hostile values held as session state, against the reference manager (ACCT-13..17).

One table: each case builds a value a session keeps in ``attrs``, the bytes
``stats()`` must report for it, and what must still hold of it afterwards
(nothing is consumed, resized or released by being counted). Every ``stats()`` runs
on a worker thread joined with a generous bound: the endless values below never end
if walked naively, so the bound is about the mechanism (a bounded walk), not speed.
The values are written here, not imported.
"""

from __future__ import annotations

import array
import mmap
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from sessionstate.reference import SessionStateManager

#: Seconds a stats() may take before the case fails: far beyond any bounded walk here
#: (the slowest, a 1M-element list, takes about a second on a loaded 2-core machine).
BOUND_S = 120.0


class Endless(Sequence[object]):
    """A Sequence whose ``__getitem__`` never raises IndexError: walked to its end, it
    never returns."""

    def __init__(self, item: object) -> None:
        self.item = item

    def __getitem__(self, index: Any) -> Any:
        return self.item

    def __len__(self) -> int:
        return 1


class RaisingMapping(Mapping[str, object]):
    """A Mapping whose iteration raises."""

    def __init__(self, item: object) -> None:
        self.item = item

    def __getitem__(self, key: str) -> object:
        return self.item

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("this mapping cannot be iterated")


def _deep(levels: int, leaf: object) -> object:
    value = leaf
    for depth in range(levels):
        value = [value] if depth % 2 else {"k": value}
    return value


def _object_array(*items: object) -> np.ndarray:
    made = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        made[i] = item
    return made


@dataclass(frozen=True)
class Hostile:
    """A value for ``attrs['value']``, its bytes, and a check that it is intact after."""

    id: str
    build: Callable[[], object]
    nbytes_cpu: int
    intact: Callable[[Any], bool] = lambda value: True


_MB4 = 1 << 20  # float32 elements in 4 MiB

CASES = [
    Hostile("deep-100k", lambda: _deep(100_000, torch.zeros(4)), 16),
    Hostile(
        "list-1M",
        lambda: [*range(1_000_000), torch.zeros(2)],
        8,
        lambda v: len(v) == 1_000_001,
    ),
    Hostile("range-10**12", lambda: [range(10**12), torch.zeros(1)], 4),
    Hostile("endless-sequence", lambda: Endless(torch.zeros(8)), 32),
    Hostile("endless-of-endless", lambda: Endless(Endless(torch.zeros(2))), 8),
    Hostile(
        "array-8MB",
        lambda: array.array("d", bytes(8 << 20)),
        8 << 20,
        lambda v: len(v) == 1 << 20,
    ),
    Hostile(
        "array-still-resizable",
        lambda: array.array("b", bytes(16)),
        16,
        # Counting must release every export: a buffer still exported cannot grow.
        lambda v: v.append(1) is None and len(v) == 17,
    ),
    Hostile("mmap", lambda: mmap.mmap(-1, 1 << 16), 1 << 16, lambda v: not v.closed),
    Hostile(
        "object-array-of-tensors",
        lambda: _object_array(torch.zeros(_MB4), torch.zeros(_MB4)),
        16 + (8 << 20),
        lambda v: v.shape == (2,),
    ),
    Hostile("raising-mapping", lambda: [RaisingMapping(torch.zeros(1)), torch.zeros(3)], 12),
    Hostile("bytes-are-values", lambda: [b"x" * 1000, bytearray(1000), torch.zeros(1)], 4),
    # ACCT-17: values whose inspection raises count nothing, the rest counts; a slow
    # Sequence (1 ms an item, a minute to read whole) stops at the time budget.
    Hostile("torch-function-raises", lambda: [_raising_tensor(), torch.zeros(2)], 8),
    Hostile("getattribute-raises", lambda: [_RaisingAttributes(), torch.zeros(2)], 8),
    Hostile("claims-to-be-a-tensor", lambda: [_ClaimsToBeATensor(), torch.zeros(2)], 8),
    # Three minutes to read to the item bounds: past BOUND_S without the budget.
    Hostile(
        "slow-sequences", lambda: [*(_SlowSequence(60_000) for _ in range(3)), torch.zeros(2)], 8
    ),
]


class _RaisingTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError("no operation allowed")


def _raising_tensor() -> torch.Tensor:
    return torch.zeros(4).as_subclass(_RaisingTorchFunction)


class _RaisingAttributes:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class _ClaimsToBeATensor:
    __class__ = torch.Tensor  # type: ignore[assignment]


class _SlowSequence(Sequence[object]):
    """``length`` items, each after a millisecond's sleep."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        if not 0 <= index < self.length:
            raise IndexError(index)
        time.sleep(0.001)
        return None


def _stats_within_bound(manager: SessionStateManager) -> dict[str, int]:
    """``manager.stats()`` on a worker thread; fails if it has not returned within BOUND_S."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["stats"] = manager.stats()
        except BaseException as error:  # reported below, on the test's thread
            result["error"] = error

    worker = threading.Thread(target=run, name="stats", daemon=True)
    worker.start()
    worker.join(BOUND_S)
    assert not worker.is_alive(), f"stats() still running after {BOUND_S} s"
    assert "error" not in result, f"stats() raised {result.get('error')!r}"
    stats: dict[str, int] = result["stats"]
    return stats


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_stats_counts_hostile_value_and_returns(case: Hostile) -> None:
    """stats() returns, counts the value's bytes under cpu, and leaves the value intact."""
    manager = SessionStateManager(max_sessions=2)
    value = case.build()
    manager.get_or_create_session("hostile").attrs["value"] = value
    stats = _stats_within_bound(manager)
    assert (stats["sessions"], stats.get("nbytes:cpu", 0)) == (1, case.nbytes_cpu)
    assert stats["total_nbytes"] == case.nbytes_cpu
    assert case.intact(value)
    assert manager.get_or_create_session("hostile").attrs["value"] is value


class _WaitsForAnotherThread(Mapping[str, object]):
    """A Mapping whose iteration waits until another thread has created a session: it
    returns at once when the walk does not hold the manager's lock, and only after
    ``BOUND_S`` when it does (the other thread would be waiting for that lock)."""

    def __init__(self, manager: SessionStateManager, item: object) -> None:
        self.manager, self.item = manager, item
        self.served = threading.Event()

    def _other_thread(self) -> None:
        self.manager.get_or_create_session("other")
        self.served.set()

    def __getitem__(self, key: str) -> object:
        return self.item

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        threading.Thread(target=self._other_thread, name="other", daemon=True).start()
        self.served.wait(BOUND_S)
        return iter(["k"])


def test_another_thread_is_served_while_stats_walks() -> None:
    """ACCT-16: while stats() walks a session's values, get_or_create_session in another
    thread completes (it waits for no walk)."""
    manager = SessionStateManager(max_sessions=4)
    probe = _WaitsForAnotherThread(manager, torch.zeros(2))
    manager.get_or_create_session("walked").attrs["probe"] = probe
    stats = _stats_within_bound(manager)
    assert probe.served.is_set(), f"the other thread was not served within {BOUND_S} s"
    assert (stats["sessions"], stats["nbytes:cpu"], "other" in manager) == (1, 8, True)


#: Caps that would turn eviction off (nan, inf) or cap by accident (a bool), and the
#: error each is refused with (STATS-6).
CAPS = [
    ("nan", float("nan"), ValueError),
    ("inf", float("inf"), ValueError),
    ("-inf", float("-inf"), ValueError),
    ("2.5", 2.5, ValueError),
    ("True", True, TypeError),
    ("False", False, TypeError),
]


@pytest.mark.parametrize(("cap", "error"), [c[1:] for c in CAPS], ids=[c[0] for c in CAPS])
def test_a_cap_that_disables_eviction_is_refused(cap: Any, error: type[Exception]) -> None:
    """The constructor refuses it; raise_max_sessions refuses it and keeps the cap; a
    manager with the cap it keeps still evicts."""
    with pytest.raises(error, match="max_sessions must be"):
        SessionStateManager(max_sessions=cap)
    manager = SessionStateManager(max_sessions=2)
    with pytest.raises(error, match="max_sessions must be"):
        manager.raise_max_sessions(cap)
    for session_id in "abc":
        manager.get_or_create_session(session_id)
    assert (manager.max_sessions, len(manager), manager.evictions) == (2, 2, 1)
