"""Unit tests of ``sessionstate.reference.manager`` (contract sections 4 and 6)."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType

import numpy as np
import pytest
import torch

from sessionstate.reference import (
    DEFAULT_MAX_SESSIONS,
    LatentBuffer,
    SessionAdmissionError,
    SessionState,
    SessionStateManager,
)


def _counters(manager: SessionStateManager) -> tuple[int, int, int]:
    return (manager.hits, manager.misses, manager.evictions)


def _eviction_order(manager: SessionStateManager, ids: list[str]) -> list[str]:
    """Which of ``ids`` each of ``max_sessions`` newcomers evicts, oldest first (destructive)."""
    order: list[str] = []
    for probe in range(manager.max_sessions):
        manager.get_or_create_session(f"probe{probe}")
        order += [i for i in ids if i not in order and i not in manager]
    return order


def _filled(*ids: str, max_sessions: int = 4, **kwargs: bool) -> SessionStateManager:
    manager = SessionStateManager(max_sessions=max_sessions, **kwargs)
    for session_id in ids:
        manager.get_or_create_session(session_id)
    return manager


class _StrictLock:
    """A non-reentrant lock that raises on re-entry and counts acquisitions."""

    def __init__(self) -> None:
        self.held = False
        self.entries = 0

    def __enter__(self) -> None:
        if self.held:
            raise AssertionError("lock re-entered")
        self.held = True
        self.entries += 1

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.held = False


class _StatsOnReset(LatentBuffer):
    """A buffer whose reset() reads the manager, as an adapter's cleanup might."""

    def __init__(self, manager: SessionStateManager) -> None:
        super().__init__()
        self.manager = manager
        self.seen_stats: dict[str, int] = {}

    def reset(self) -> None:
        super().reset()
        self.seen_stats = self.manager.stats()


class TestDefaultMaxSessions:
    def test_value(self) -> None:
        """The default cap is DreamZero's 64."""
        assert DEFAULT_MAX_SESSIONS == 64
        assert SessionStateManager().max_sessions == 64


class TestSessionStateManagerConstruction:
    def test_defaults(self) -> None:
        """Arguments are stored and counters start at zero; an empty manager is falsy."""
        manager = SessionStateManager()
        assert (manager.byte_budget, manager.evict_when_full) == (None, True)
        assert _counters(manager) == (0, 0, 0)
        assert (len(manager), bool(manager)) == (0, False)

    def test_byte_budget_recorded_not_enforced(self) -> None:
        """A byte budget far below what is held evicts nothing."""
        manager = SessionStateManager(max_sessions=2, byte_budget=1)
        manager.get_or_create_session("a").attrs["x"] = torch.zeros(100)
        manager.get_or_create_session("b").attrs["x"] = torch.zeros(100)
        assert (manager.byte_budget, len(manager), manager.evictions) == (1, 2, 0)
        assert manager.nbytes_by_device() == {"cpu": 800}

    @pytest.mark.parametrize("bad", [0, -1, -64])
    def test_max_sessions_must_be_positive(self, bad: int) -> None:
        """max_sessions <= 0 raises ValueError."""
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            SessionStateManager(max_sessions=bad)

    def test_lock_factory_called_once(self) -> None:
        """The factory is called exactly once, however much the manager is used."""
        calls: list[_StrictLock] = []

        def factory() -> _StrictLock:
            calls.append(_StrictLock())
            return calls[-1]

        manager = SessionStateManager(max_sessions=1, lock_factory=factory)
        for session_id in ("a", "a", "b"):
            manager.get_or_create_session(session_id)
        manager.drop_session("b")
        manager.stats()
        assert len(calls) == 1
        assert calls[0].entries == 5

    def test_nullcontext_factory(self) -> None:
        """contextlib.nullcontext is a valid factory for a single-threaded owner."""
        manager = SessionStateManager(max_sessions=1, lock_factory=contextlib.nullcontext)
        manager.get_or_create_session("a")
        manager.get_or_create_session("b")
        assert manager.drop_session("b") is True
        assert (_counters(manager), manager.stats()["sessions"]) == ((0, 2, 1), 0)


_CALLS: dict[str, Callable[[SessionStateManager], object]] = {
    "hit": lambda m: m.get_or_create_session("a"),
    "miss_evicting": lambda m: m.get_or_create_session("new"),
    "drop_present": lambda m: m.drop_session("a"),
    "drop_absent": lambda m: m.drop_session("zz"),
    "len": len,
    "contains": lambda m: "a" in m,
    "nbytes_by_device": lambda m: m.nbytes_by_device(),
    "stats": lambda m: m.stats(),
    "raise_max_sessions": lambda m: m.raise_max_sessions(9),
    "keep_max_sessions": lambda m: m.raise_max_sessions(1),
}


class TestSessionStateManagerLocking:
    @pytest.mark.parametrize("call", sorted(_CALLS))
    def test_every_method_locks_once(self, call: str) -> None:
        """Each table access enters the strict lock exactly once and never re-enters it."""
        lock = _StrictLock()
        manager = SessionStateManager(max_sessions=2, lock_factory=lambda: lock)
        for session_id in ("a", "b"):
            manager.get_or_create_session(session_id).attrs["t"] = torch.zeros(1)
        before = lock.entries
        _CALLS[call](manager)
        assert (lock.entries - before, lock.held) == (1, False)

    def test_drop_resets_outside_lock(self) -> None:
        """A reset that reads the manager does not re-enter a non-reentrant lock."""
        manager = SessionStateManager(lock_factory=_StrictLock)
        session = manager.get_or_create_session("a")
        probe = session.put("frames", _StatsOnReset(manager))
        assert manager.drop_session("a") is True
        assert probe.seen_stats["sessions"] == 0

    def test_default_lock_never_reentered(self) -> None:
        """With the default threading.Lock every method returns (no self-deadlock)."""
        manager = SessionStateManager(max_sessions=1)
        manager.get_or_create_session("a").put("frames", _StatsOnReset(manager))
        results = [_CALLS[name](manager) for name in sorted(_CALLS)]
        assert len(results) == len(_CALLS)

    def test_concurrent_conservation(self) -> None:
        """Threads hammering a few ids keep the counters conserved and the cap held."""
        manager = SessionStateManager(max_sessions=3)
        drops = [0] * 4

        def work(worker: int) -> None:
            for step in range(300):
                session_id = (worker * 7 + step) % 5
                if step % 4 == 3:
                    drops[worker] += manager.drop_session(session_id)
                else:
                    manager.get_or_create_session(session_id)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert manager.hits + manager.misses == 4 * 225
        assert manager.misses == len(manager) + manager.evictions + sum(drops)
        assert len(manager) <= 3


class TestSessionStateManagerKeys:
    @pytest.mark.parametrize("falsy", [None, "", 0, False, 0.0, "default"])
    def test_falsy_ids_are_default(self, falsy: object) -> None:
        """Every falsy id names the one session "default"."""
        manager = SessionStateManager()
        default = manager.get_or_create_session(None)
        assert manager.get_or_create_session(falsy) is default
        assert falsy in manager and "default" in manager
        assert (_counters(manager), len(manager)) == ((1, 1, 0), 1)

    def test_ids_are_stringified(self) -> None:
        """7 and "7" are one session; other objects key by str()."""
        manager = SessionStateManager()
        seven = manager.get_or_create_session(7)
        assert manager.get_or_create_session("7") is seven
        manager.get_or_create_session(("a", 1))
        assert "('a', 1)" in manager and 7 in manager and "07" not in manager
        assert manager.drop_session("7") is True
        assert 7 not in manager
        assert _counters(manager) == (1, 2, 0)


class TestSessionStateManagerLru:
    def test_hit_returns_same_session(self) -> None:
        """A hit returns the same object and counts one hit."""
        manager = SessionStateManager()
        first = manager.get_or_create_session("a")
        assert isinstance(first, SessionState)
        assert (first.names(), first.attrs) == ([], {})
        assert manager.get_or_create_session("a") is first
        assert _counters(manager) == (1, 1, 0)

    def test_lru_order(self) -> None:
        """A hit refreshes recency, so the least recently used goes first."""
        manager = _filled("a", "b", "c", max_sessions=3)
        manager.get_or_create_session("a")
        manager.get_or_create_session("d")
        assert ("b" in manager, len(manager)) == (False, 3)
        assert _counters(manager) == (1, 4, 1)
        assert _eviction_order(manager, ["a", "c", "d"]) == ["c", "a", "d"]

    def test_newcomer_never_victim(self) -> None:
        """With room for one, each newcomer evicts the previous session."""
        manager = SessionStateManager(max_sessions=1)
        for session_id in ("a", "b", "c"):
            newcomer = manager.get_or_create_session(session_id)
            assert session_id in manager and len(manager) == 1
            assert manager.get_or_create_session(session_id) is newcomer
        assert _counters(manager) == (3, 3, 2)

    def test_evicted_session_intact_for_holder(self) -> None:
        """Eviction removes the entry only; a later request is a new empty session."""
        manager = SessionStateManager(max_sessions=1)
        held = manager.get_or_create_session("a")
        frames = held.get_or_create("frames", LatentBuffer, LatentBuffer)
        frames.allocate()
        frames.append(torch.zeros(2))
        held.attrs["call_count"] = 5
        manager.get_or_create_session("b")
        assert (frames.resident, frames.nbytes, held.attrs) == (True, 8, {"call_count": 5})
        assert held.get("frames") is frames
        again = manager.get_or_create_session("a")
        assert again is not held
        assert (again.names(), again.attrs) == ([], {})
        assert _counters(manager) == (0, 3, 2)

    def test_evicted_not_counted(self) -> None:
        """Bytes of evicted sessions leave the manager's totals."""
        manager = SessionStateManager(max_sessions=1)
        manager.get_or_create_session("a").attrs["x"] = torch.zeros(4)
        manager.get_or_create_session("b").attrs["x"] = torch.zeros(1)
        assert manager.nbytes_by_device() == {"cpu": 4}


class TestSessionStateManagerDrop:
    def test_drop_absent(self) -> None:
        """Dropping an unknown id returns False and changes nothing."""
        manager = _filled("a", "b")
        assert manager.drop_session("zz") is False
        assert (_counters(manager), len(manager)) == ((0, 2, 0), 2)

    def test_drop_present(self) -> None:
        """Dropping resets the session in place, removes it, and returns True once."""
        manager = _filled("a")
        held = manager.get_or_create_session("b")
        frames = held.put("frames", LatentBuffer())
        frames.allocate()
        held.attrs["x"] = 1
        assert manager.drop_session("b") is True
        assert ("b" in manager, frames.resident, held.attrs, held.names()) == (
            False,
            False,
            {},
            ["frames"],
        )
        assert manager.drop_session("b") is False
        assert _counters(manager) == (0, 2, 0)

    def test_drop_keeps_order_of_others(self) -> None:
        """Dropping leaves the recency order of the other sessions as it was."""
        manager = _filled("a", "b", "c", "d")
        manager.get_or_create_session("a")
        manager.drop_session("c")
        assert _eviction_order(manager, ["a", "b", "d"]) == ["b", "d", "a"]

    def test_drop_then_request_is_miss(self) -> None:
        """A dropped id comes back as a new session through a miss."""
        manager = _filled("a")
        old = manager.get_or_create_session("a")
        manager.drop_session("a")
        assert manager.get_or_create_session("a") is not old
        assert _counters(manager) == (1, 2, 0)

    def test_drop_evicted(self) -> None:
        """Dropping an id the LRU evicted returns False and leaves the holder's data."""
        manager = SessionStateManager(max_sessions=1)
        held = manager.get_or_create_session("a")
        held.attrs["x"] = torch.zeros(3)
        manager.get_or_create_session("b")
        assert manager.drop_session("a") is False
        assert list(held.attrs) == ["x"]
        assert (_counters(manager), len(manager)) == ((0, 2, 1), 1)


class TestSessionStateManagerObservers:
    def test_observers_touch_nothing(self) -> None:
        """len, in, stats and nbytes_by_device change neither counters nor order."""
        manager = _filled("a", "b", "c", "d")
        for _ in range(3):
            assert (len(manager), "a" in manager, "zz" in manager) == (4, True, False)
            manager.stats()
            manager.nbytes_by_device()
        assert _counters(manager) == (0, 4, 0)
        assert _eviction_order(manager, ["a", "b", "c", "d"]) == ["a", "b", "c", "d"]

    def test_cross_session_dedup(self) -> None:
        """A storage shared by sessions counts once; distinct ones add up."""
        manager, shared = SessionStateManager(), torch.zeros(16)
        for session_id in ("a", "b", "c"):
            session = manager.get_or_create_session(session_id)
            session.attrs["prompt"] = shared[1:] if session_id == "b" else shared
            session.attrs["own"] = torch.zeros(1)
        assert manager.nbytes_by_device() == {"cpu": 64 + 3 * 4}

    def test_stats_keys_and_values(self, fake_cuda: Callable[[int, str], torch.Tensor]) -> None:
        """stats() lists counters then nbytes per device, sorted, summing to total_nbytes."""
        manager, fake = SessionStateManager(max_sessions=2), fake_cuda(4, "cuda:1")
        manager.get_or_create_session("x")
        a = manager.get_or_create_session("a")
        a.attrs.update(meta=torch.empty(3, device="meta"), host=torch.zeros(2), gpu=fake)
        manager.get_or_create_session("a")
        manager.get_or_create_session("b").attrs["host"] = torch.zeros(1)
        assert list(manager.stats().items()) == [
            ("sessions", 2),
            ("max_sessions", 2),
            ("total_nbytes", 12 + 12 + 16),
            ("hits", 1),
            ("misses", 3),
            ("evictions", 1),
            ("nbytes:cpu", 12),
            ("nbytes:cuda:1", 16),
            ("nbytes:meta", 12),
        ]

    def test_stats_empty(self) -> None:
        """An empty manager has no per-device keys."""
        assert SessionStateManager(max_sessions=5).stats() == {
            "sessions": 0,
            "max_sessions": 5,
            "total_nbytes": 0,
            "hits": 0,
            "misses": 0,
            "evictions": 0,
        }

    def test_conservation(self) -> None:
        """misses == len + evictions + successful drops after every step of a mixed history."""
        manager, drops, rng = SessionStateManager(max_sessions=3), 0, random.Random(0)
        for _ in range(200):
            session_id = rng.randrange(5)
            if rng.random() < 0.3:
                drops += manager.drop_session(session_id)
            else:
                manager.get_or_create_session(session_id)
            assert manager.misses == len(manager) + manager.evictions + drops
        assert (drops > 0, manager.evictions > 0, manager.hits > 0) == (True, True, True)


class TestSessionStateManagerAdmission:
    def test_refusal_changes_nothing(self) -> None:
        """A refused miss raises and leaves sessions and every counter as they were."""
        manager = _filled("a", "b", max_sessions=2, evict_when_full=False)
        with pytest.raises(SessionAdmissionError, match="cannot admit session 'x'") as caught:
            manager.get_or_create_session("x")
        assert (caught.value.session_id, caught.value.max_sessions) == ("x", 2)
        assert ("a" in manager, "b" in manager, "x" in manager) == (True, True, False)
        assert (_counters(manager), len(manager)) == ((0, 2, 0), 2)

    def test_refusal_normalises_key(self) -> None:
        """The refused id is reported by its key."""
        manager = _filled("a", max_sessions=1, evict_when_full=False)
        with pytest.raises(SessionAdmissionError, match="cannot admit session 'default'"):
            manager.get_or_create_session(None)

    def test_hits_still_served(self) -> None:
        """At capacity a known id is still a hit."""
        manager = _filled("a", "b", max_sessions=2, evict_when_full=False)
        held = manager.get_or_create_session("b")
        assert manager.get_or_create_session("b") is held
        assert _counters(manager) == (2, 2, 0)

    def test_admits_after_drop(self) -> None:
        """Dropping a session makes room for a new one."""
        manager = _filled("a", "b", max_sessions=2, evict_when_full=False)
        manager.drop_session("a")
        manager.get_or_create_session("x")
        assert ("x" in manager, _counters(manager)) == (True, (0, 3, 0))


class TestSessionStateManagerRaiseMaxSessions:
    def test_raise(self) -> None:
        """A higher cap is taken, returns True, and lets more sessions in."""
        manager = _filled("a", "b", max_sessions=2, evict_when_full=False)
        assert manager.raise_max_sessions(3) is True
        manager.get_or_create_session("c")
        assert (manager.max_sessions, manager.stats()["max_sessions"], len(manager)) == (3, 3, 3)

    @pytest.mark.parametrize("cap", [2, 1])
    def test_equal_or_lower(self, cap: int) -> None:
        """An equal or lower cap returns False and changes nothing."""
        manager = _filled("a", "b", max_sessions=2)
        assert manager.raise_max_sessions(cap) is False
        assert (manager.max_sessions, len(manager), manager.evictions) == (2, 2, 0)

    @pytest.mark.parametrize("cap", [0, -3])
    def test_not_positive(self, cap: int) -> None:
        """A cap <= 0 raises ValueError and changes nothing."""
        manager = _filled("a", max_sessions=2)
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            manager.raise_max_sessions(cap)
        assert manager.max_sessions == 2


class TestCapsAreFinitePositiveWholeNumbers:
    @pytest.mark.parametrize(
        ("bad", "error"),
        [
            (True, TypeError),
            (False, TypeError),
            (float("nan"), ValueError),
            (float("inf"), ValueError),
            (float("-inf"), ValueError),
            (2.5, ValueError),
            ("4", TypeError),
            (None, TypeError),
        ],
        ids=repr,
    )
    def test_rejected_at_construction_and_when_raised(
        self, bad: object, error: type[Exception]
    ) -> None:
        """STATS-6: nan or inf would turn eviction off; a bool is a cap by accident."""
        with pytest.raises(error, match="max_sessions must be"):
            SessionStateManager(max_sessions=bad)  # type: ignore[arg-type]
        manager = SessionStateManager(max_sessions=2)
        with pytest.raises(error, match="max_sessions must be"):
            manager.raise_max_sessions(bad)  # type: ignore[arg-type]
        assert manager.max_sessions == 2

    @pytest.mark.parametrize("good", [3, 3.0, np.int64(3)], ids=repr)
    def test_whole_numbers_are_stored_as_given(self, good: int) -> None:
        """An integral float and a NumPy integer are whole numbers: stored as given
        (STATS-1), and the cap holds."""
        manager = SessionStateManager(max_sessions=good)
        assert manager.max_sessions is good
        for session_id in "abcde":
            manager.get_or_create_session(session_id)
        assert (len(manager), manager.evictions) == (3, 2)


class _Probe(Mapping[str, object]):
    """A Mapping that records whether ``lock`` is held whenever its own code runs."""

    def __init__(self, lock: _StrictLock, value: object) -> None:
        self.lock, self.value, self.held = lock, value, list[bool]()

    def __getitem__(self, key: str) -> object:
        self.held.append(self.lock.held)
        return self.value

    def __len__(self) -> int:
        self.held.append(self.lock.held)
        return 1

    def __iter__(self) -> Iterator[str]:
        self.held.append(self.lock.held)
        return iter(["k"])


class TestCountingOutsideTheLock:
    @pytest.mark.parametrize("call", ["nbytes_by_device", "stats"])
    def test_values_are_walked_with_the_lock_released(self, call: str) -> None:
        """ACCT-16: the table is read under the lock, the sessions counted after it."""
        lock = _StrictLock()
        manager = SessionStateManager(max_sessions=2, lock_factory=lambda: lock)
        probe = _Probe(lock, torch.zeros(4))
        manager.get_or_create_session("a").attrs["probe"] = probe
        result = getattr(manager, call)()
        assert (result.get("cpu", result.get("nbytes:cpu")), lock.entries) == (16, 2)
        assert probe.held and not any(probe.held)

    def test_stats_counts_the_sessions_of_its_snapshot(self) -> None:
        """A session dropped while stats() walks is still among the sessions counted (it
        was in the table when the counters were read), with what it holds when walked:
        a drop resets it, so nothing."""
        manager = SessionStateManager(max_sessions=4)
        held = torch.zeros(8)

        class DropsWhileWalked(Mapping[str, object]):
            def __getitem__(self, key: str) -> object:
                manager.drop_session("b")  # another thread, as far as the lock knows
                return held

            def __len__(self) -> int:
                return 1

            def __iter__(self) -> Iterator[str]:
                return iter(["k"])

        manager.get_or_create_session("a").attrs["x"] = DropsWhileWalked()
        manager.get_or_create_session("b").attrs["y"] = torch.zeros(2)
        stats = manager.stats()
        assert (stats["sessions"], stats["nbytes:cpu"]) == (2, 32)
        assert (len(manager), manager.nbytes_by_device()) == (1, {"cpu": 32})
