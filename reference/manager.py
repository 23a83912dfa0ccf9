"""``SessionStateManager``: session id -> ``SessionState``, with a count-based LRU.

The manager is the single authority for session lifecycle. It evicts by
session count in LRU order (matching the per-model caches it replaces, e.g.
DreamZero's 64-session cap), drops finished sessions explicitly, and reports
bytes per device. A byte budget is recorded for observability only.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager

from .accounting import SeenStorages, merge_bytes
from .config import DEFAULT_MAX_SESSIONS, resolve_session_state_config
from .errors import SessionAdmissionError, SessionStateLostError, admission_refused
from .session import SessionState

# SessionState, the two errors and resolve_session_state_config are re-exported: upstream
# defines them in its manager module (#7302), and code importing them from there runs here
# with the package name changed.
__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "SessionAdmissionError",
    "SessionState",
    "SessionStateLostError",
    "SessionStateManager",
    "resolve_session_state_config",
]

LockFactory = Callable[[], AbstractContextManager[object]]


def _key(session_id: object) -> str:
    # KEY-1: falsy ids (None, "", 0) all mean the one "default" session;
    # KEY-2: any other id is keyed by str(), so 7 and "7" are one session.
    return str(session_id or "default")


def _check_positive(max_sessions: int) -> int:
    """``max_sessions``, as given, if it is a positive whole number; else ``TypeError`` (a
    bool, or not a number) or ``ValueError`` (not positive, not finite, not whole)."""
    value: object = max_sessions
    # STATS-6: True is 1 only by accident, and nan or inf compare so that the cap is
    # never exceeded (len > nan is False): eviction would silently stop.
    if isinstance(value, bool):
        raise TypeError(f"max_sessions must be an int, got bool {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"max_sessions must be a finite whole number, got {value!r}")
    elif not isinstance(value, int):
        try:
            operator.index(value)  # type: ignore[arg-type]  # NumPy integers and the like
        except TypeError:
            kind = type(value).__name__
            raise TypeError(f"max_sessions must be an int, got {kind} {value!r}") from None
    if max_sessions <= 0:  # LRU-8, ADMIT-7: checked before anything is stored or changed
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
        # The 4th positional parameter, as upstream's (#7302).
        evict_when_full: bool = True,  # ADMIT-10: LRU eviction unless the owner opts out
    ) -> None:
        self.max_sessions = _check_positive(max_sessions)  # STATS-1: stored as given
        # Recorded, not enforced: which device pool a budget applies to is for
        # whoever enforces it to decide, from nbytes_by_device().
        self.byte_budget = byte_budget
        # ADMIT-11: a public attribute, read afresh at every miss below.
        self.evict_when_full = evict_when_full
        # STATS-1: counters start at zero.
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = lock_factory()  # LOCK-1: called once; used only as `with self._lock:`

    def get_or_create_session(self, session_id: object) -> SessionState:
        """The session for ``session_id``, created on a miss; now most recent.

        A miss beyond ``max_sessions`` removes least-recently-used entries from
        the table only: an evicted session is not reset, so a holder (an
        adapter mid-generation) keeps a working object. The newcomer is never
        the victim.
        """
        # KEY-3: plain non-empty strings are their own key (as _key gives): skip the call on
        # the hot path; every other method goes through _key.
        key = session_id if type(session_id) is str and session_id else _key(session_id)
        sessions = self._sessions
        # LOCK-2, LOCK-4, LOCK-5: one critical section per call: lookup, counters and
        # eviction happen as one atomic step, so concurrent calls linearize.
        with self._lock:
            # `in` then `[]` are two opcodes; `.get()` is a method call (bench/hotpaths.py).
            # LRU-1, ADMIT-4: a hit is served before any admission check, full or not.
            if key in sessions:
                self.hits += 1
                sessions.move_to_end(key)  # LRU-3: a hit makes the session most recent
                return sessions[key]
            # The miss path stays inline too: a helper call costs ~0.07x the floor.
            # ADMIT-1, ADMIT-8, ADMIT-11: the flag and the cap in force are read at every miss.
            # LOCK-6: read under the lock that guards the insert below, never before it.
            if not self.evict_when_full and len(sessions) >= self.max_sessions:
                # A refused miss changes nothing, counters included (ADMIT-2, ADMIT-3, ADMIT-9).
                raise admission_refused(key, self.max_sessions)
            self.misses += 1
            # LRU-2, LRU-6: every miss, an evicted id's too, gets a new, empty SessionState.
            session = sessions[key] = SessionState()
            # LRU-4, LRU-7, ADMIT-10: evict from the LRU end until within the cap; the
            # newcomer is at the other end, so it is never the victim.
            while len(sessions) > self.max_sessions:
                sessions.popitem(last=False)  # LRU-5: the table entry only; nothing is reset
                self.evictions += 1  # STATS-5: one per removal keeps conservation exact
            return session

    def require_session(self, session_id: object) -> SessionState:
        """The resident session for ``session_id``, never a new one.

        A continuation's lookup: a resident session counts one hit and becomes the most
        recently used, as a hit of ``get_or_create_session`` does. An absent one (never
        created, dropped, or evicted) raises ``SessionStateLostError`` naming the key,
        and changes no counter, no order and no table entry. Lookup and hit are one
        critical section, so no drop or eviction can fall between them: checking
        ``session_id in manager`` and then calling ``get_or_create_session`` would
        silently recreate a session lost in between (#7302's pipeline, #6443).
        """
        key = _key(session_id)  # LOST-1: the same key as every other method (KEY-3)
        # LOST-4: the check and the hit in one critical section.
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                # LOST-2, LOST-3: raise before touching anything; the key is in the message.
                raise SessionStateLostError(
                    f"session '{key}' has no state: it was never created, or it was dropped "
                    "or evicted; a continuation cannot rebuild it (start a new rollout)"
                )
            self.hits += 1  # LOST-1: one hit, as get_or_create_session counts it
            self._sessions.move_to_end(key)  # LOST-1: now the most recently used
            return session

    def drop_session(self, session_id: object) -> bool:
        """End a session: remove it, reset it (holders see it cleared), return True.

        Absent ids (never created, already dropped, or evicted by the LRU)
        return False and touch nothing. Counters and the others' order stay.
        """
        with self._lock:
            # DROP-3, ADMIT-5: a pop keeps the others' order, counts nothing, frees a slot.
            session = self._sessions.pop(_key(session_id), None)
        if session is None:  # DROP-1, DROP-4: an absent id (an evicted one too) is left alone
            return False
        # Outside the lock: resetting frees memory and may run object code.
        session.reset()  # DROP-2: holders see the same object, cleared
        return True

    def raise_max_sessions(self, max_sessions: int) -> bool:
        """Raise the cap; True only when ``max_sessions`` exceeds the current one.

        A lower or equal value changes nothing: shrinking a live bound would
        strand sessions that are mid-rollout.
        """
        _check_positive(max_sessions)
        # ADMIT-12: compare and write under one hold of the lock, never re-entered.
        with self._lock:
            if max_sessions <= self.max_sessions:  # ADMIT-6: the cap only ever rises
                return False
            self.max_sessions = max_sessions
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        key = _key(session_id)
        with self._lock:
            return key in self._sessions  # STATS-4: a pure read: no hit counted, order kept

    def nbytes_by_device(self) -> dict[str, int]:
        """Bytes held by the sessions in the table, per device.

        The table is read under the lock, in one short step; the sessions are then
        counted with the lock released (ACCT-16), so a long walk never stalls
        ``get_or_create_session`` in another thread.
        """
        with self._lock:
            sessions = self._table_snapshot()
        return _count_sessions(sessions)

    def _table_snapshot(self) -> list[SessionState]:
        # ACCT-16: a copy of the table's sessions, taken under the lock: cheap (a
        # pointer per session), whereas counting what they hold is unbounded.
        return list(self._sessions.values())

    def stats(self) -> dict[str, int]:
        """Counters, then ``nbytes:<device>`` per device in sorted order.

        ``total_nbytes`` sums the devices for callers that want one number;
        a budget should read the per-device keys. The counters, ``sessions`` and
        the set of sessions counted are one instant of the table (one hold of the
        lock); their bytes are counted after the lock is released, as they are
        then (ACCT-16).
        """
        with self._lock:
            # STATS-3, LOCK-3: the table is read here, once; nbytes_by_device() would
            # re-enter the lock.
            sessions = self._table_snapshot()
            # STATS-2: the documented keys in the documented order.
            stats = {
                "sessions": len(self._sessions),
                "max_sessions": self.max_sessions,
                "total_nbytes": 0,
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
            }
        by_device = _count_sessions(sessions)  # ACCT-16: outside the lock
        stats["total_nbytes"] = sum(by_device.values())
        for device in sorted(by_device):  # STATS-2: then one key per device, sorted
            stats[f"nbytes:{device}"] = by_device[device]
        return stats


def _count_sessions(sessions: list[SessionState]) -> dict[str, int]:
    """The bytes of ``sessions`` per device, counted with one ``seen``."""
    # ACCT-11: one ``seen`` across all sessions: a conditioning tensor shared by
    # several sessions is held once by the process, so it counts once.
    seen: SeenStorages = set()
    totals: dict[str, int] = {}
    for session in sessions:
        merge_bytes(totals, session.nbytes_by_device(seen))
    return totals
