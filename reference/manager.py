"""``SessionStateManager``: session id -> ``SessionState``, with a count-based LRU.

The manager is the single authority for session lifecycle. It evicts by
session count in LRU order (matching the per-model caches it replaces, e.g.
DreamZero's 64-session cap), drops finished sessions explicitly, and reports
bytes per device. A byte budget is recorded for observability only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager

from .accounting import SeenStorages, merge_bytes
from .config import DEFAULT_MAX_SESSIONS, resolve_session_state_config
from .errors import SessionAdmissionError
from .session import SessionState

# SessionState and resolve_session_state_config are re-exported: upstream defines them in its
# manager module, and code importing them from there runs here with the package name changed.
__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "SessionState",
    "SessionStateManager",
    "resolve_session_state_config",
]

LockFactory = Callable[[], AbstractContextManager[object]]


def _key(session_id: object) -> str:
    # Falsy ids (None, "", 0) all mean the one "default" session (SPEC KEY-1).
    return str(session_id or "default")


def _check_positive(max_sessions: int) -> int:
    if max_sessions <= 0:
        raise ValueError(f"max_sessions must be positive, got {max_sessions}")
    return max_sessions


class SessionStateManager:
    """Maps session ids to ``SessionState`` objects and arbitrates the LRU.

    Every method that touches the table does so inside ``with lock:``, and
    never re-enters it (the default ``threading.Lock`` is not reentrant).
    ``lock_factory`` is called once; ``contextlib.nullcontext`` suits a
    single-threaded owner. With ``evict_when_full=False`` a miss at capacity
    raises ``SessionAdmissionError`` instead of evicting.
    """

    def __init__(
        self,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        byte_budget: int | None = None,
        lock_factory: LockFactory = threading.Lock,
        *,
        evict_when_full: bool = True,
    ) -> None:
        self.max_sessions = _check_positive(max_sessions)
        # Recorded, not enforced: which device pool a budget applies to is for
        # whoever enforces it to decide, from nbytes_by_device().
        self.byte_budget = byte_budget
        self.evict_when_full = evict_when_full
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = lock_factory()

    def get_or_create_session(self, session_id: object) -> SessionState:
        """The session for ``session_id``, created on a miss; now most recent.

        A miss beyond ``max_sessions`` removes least-recently-used entries from
        the table only: an evicted session is not reset, so a holder (an
        adapter mid-generation) keeps a working object. The newcomer is never
        the victim.
        """
        # Plain non-empty strings are their own key: skip the call on the hot path.
        key = session_id if type(session_id) is str and session_id else _key(session_id)
        sessions = self._sessions
        with self._lock:
            # `in` then `[]` are two opcodes; `.get()` is a method call (bench/hotpaths.py).
            if key in sessions:
                self.hits += 1
                sessions.move_to_end(key)
                return sessions[key]
            # The miss path stays inline too: a helper call costs ~0.07x the floor.
            if not self.evict_when_full and len(sessions) >= self.max_sessions:
                # A refused miss changes nothing, counters included (SPEC ADMIT-2, ADMIT-3).
                raise SessionAdmissionError(key, self.max_sessions)
            self.misses += 1
            session = sessions[key] = SessionState()
            while len(sessions) > self.max_sessions:
                sessions.popitem(last=False)
                self.evictions += 1
            return session

    def drop_session(self, session_id: object) -> bool:
        """End a session: remove it, reset it (holders see it cleared), return True.

        Absent ids (never created, already dropped, or evicted by the LRU)
        return False and touch nothing. Counters and the others' order stay.
        """
        with self._lock:
            session = self._sessions.pop(_key(session_id), None)
        if session is None:
            return False
        # Outside the lock: resetting frees memory and may run object code.
        session.reset()
        return True

    def raise_max_sessions(self, max_sessions: int) -> bool:
        """Raise the cap; True only when ``max_sessions`` exceeds the current one.

        A lower or equal value changes nothing: shrinking a live bound would
        strand sessions that are mid-rollout.
        """
        _check_positive(max_sessions)
        with self._lock:
            if max_sessions <= self.max_sessions:
                return False
            self.max_sessions = max_sessions
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        key = _key(session_id)
        with self._lock:
            return key in self._sessions

    def nbytes_by_device(self) -> dict[str, int]:
        """Bytes held by the sessions in the table, per device."""
        with self._lock:
            return self._nbytes_by_device_locked()

    def _nbytes_by_device_locked(self) -> dict[str, int]:
        # One ``seen`` across all sessions: a conditioning tensor shared by
        # several sessions is held once by the process, so it counts once.
        seen: SeenStorages = set()
        totals: dict[str, int] = {}
        for session in self._sessions.values():
            merge_bytes(totals, session.nbytes_by_device(seen))
        return totals

    def stats(self) -> dict[str, int]:
        """Counters, then ``nbytes:<device>`` per device in sorted order.

        ``total_nbytes`` sums the devices for callers that want one number;
        a budget should read the per-device keys.
        """
        with self._lock:
            by_device = self._nbytes_by_device_locked()
            stats = {
                "sessions": len(self._sessions),
                "max_sessions": self.max_sessions,
                "total_nbytes": sum(by_device.values()),
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
            }
        for device in sorted(by_device):
            stats[f"nbytes:{device}"] = by_device[device]
        return stats
