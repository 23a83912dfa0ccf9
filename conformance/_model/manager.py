"""The suite's own model of a session-state manager: its keys, its LRU table and counters
(admission policy and ``require_session`` included), and the sessions it hands out.

One domain, shared by every machine that drives a manager: the manager machine (SPEC KEY,
LRU, DROP, STATS, and what its sessions hold), admission (ADMIT), lost sessions (LOST),
the adapter machine's bespoke side (ADAPT), and the lock histories through
``_model.linearizability.LruModel`` (LOCK).

Written from SPEC.md alone: nothing here calls implementation code, the
subject's or the reference's. ``LruTable`` is the table as keys in LRU order
with its counters; ``ManagerModel`` adds which session object each key maps
to and what every session object ever created should hold, wherever it went
(in the table, evicted, dropped). Expected bytes come from
``conformance._model.memory`` over the values the model says the table holds.

``SUSPECTS`` are table semantics that break the spec in one known way each.
They never decide pass or fail: when the subject disagrees with the model,
``suspect`` replays the trace of everything observed so far on each of them,
and the first that explains all of it names the clause that was broken (a
hit that does not refresh order is LRU-3, not "a wrong victim"). ``key_clause``
names the KEY clause a grouping of ids breaks. These labels are the one place a model
names a clause: ``_machine.manager`` asks them only once its own check has found a
mismatch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionstate.conformance._model.memory import Held, expected_bytes

__all__ = [
    "NON_POSITIVE",
    "SPEC",
    "SUSPECTS",
    "BufferModel",
    "KeyFn",
    "LruTable",
    "ManagerModel",
    "Observation",
    "Outcome",
    "Semantics",
    "SessionModel",
    "grouped_key",
    "key_clause",
    "slot",
    "spec_key",
    "suspect",
]

KeyFn = Callable[[object], Hashable]


def spec_key(session_id: object) -> str:
    """The table key of ``session_id``: falsy ids are "default" (KEY-1), others ``str`` (KEY-2).

    The one key function of the suite: every machine and model names sessions by it."""
    return str(session_id) if session_id else "default"


@dataclass(frozen=True)
class Semantics:
    """How a table names and orders sessions: the spec's, or one known way to break it."""

    get_key: KeyFn = spec_key
    contains_key: KeyFn = spec_key
    drop_key: KeyFn = spec_key
    hit_refreshes: bool = True
    contains_refreshes: bool = False
    #: LOST-1: a ``require_session`` hit makes the session most recent, as a hit does.
    require_refreshes: bool = True


SPEC = Semantics()


#: (clause, semantics) in the order they are blamed when several fit. Key
#: normalisation suspects are learned from the subject itself
#: (``machine.key_suspects``): there are too many ways to group ids wrongly.
SUSPECTS: tuple[tuple[str, Semantics], ...] = (
    ("LRU-3", Semantics(hit_refreshes=False)),
    ("STATS-4", Semantics(contains_refreshes=True)),
)


def slot(session_id: object) -> tuple[type, object]:
    """A dict key for ``session_id`` itself: 0 == False, so the type is kept."""
    return type(session_id), session_id


def grouped_key(groups: Mapping[tuple[type, object], Hashable]) -> KeyFn:
    """A key function that names each id's group, from ``{(type(id), id): group}``."""

    def key(session_id: object) -> Hashable:
        return groups.get(slot(session_id), ("ungrouped", repr(session_id)))

    return key


def key_clause(ids: Sequence[object], semantics: Semantics) -> str | None:
    """The KEY clause that ``semantics`` breaks on ``ids``, if any.

    KEY-1 when a falsy id is grouped apart from "default" (or another id
    with it), KEY-2 when a non-string id is grouped unlike its ``str``,
    KEY-3 when ``in`` or ``drop_session`` group ids unlike
    ``get_or_create_session``.
    """
    get = semantics.get_key
    wrong = [(a, b) for a in ids for b in ids if (spec_key(a) == spec_key(b)) != (get(a) == get(b))]
    if any(not a or not b for a, b in wrong):
        return "KEY-1"
    if any(not isinstance(x, str) for pair in wrong for x in pair):
        return "KEY-2"
    for other in (semantics.contains_key, semantics.drop_key):
        if any(other(i) != get(i) for i in ids):
            return "KEY-3"
    return None


#: What ``raise_max_sessions(n)`` raises for ``n <= 0`` (ADMIT-7) and the constructor
#: for a non-positive cap (LRU-8), by message.
NON_POSITIVE = "max_sessions must be positive"


@dataclass(frozen=True)
class Outcome:
    """What one ``get_or_create_session`` does: a hit, an admitted miss (with the keys
    it evicted, least recent first) or, on a full refusing table, a refused miss."""

    kind: str  # "hit", "miss", "refused" or (require_session only) "lost"
    evicted: tuple[Hashable, ...] = ()

    @property
    def hit(self) -> bool:
        return self.kind == "hit"


class LruTable:
    """The manager's table: keys in LRU order, the cap, the admission policy, the counters.

    The one LRU oracle of the suite: the manager, admission and lock machines and the
    linearizability checker all ask it. Each method is one manager call and returns
    what the call should return. ``order`` maps each key to whatever its user keeps
    there (a session label, ``None``); ``drops``, ``flipped`` and
    ``initial_max_sessions`` are history the machines use to name the clause a
    difference breaks. A refused miss counts nowhere (ADMIT-3).
    """

    def __init__(
        self, max_sessions: int, semantics: Semantics = SPEC, *, evict_when_full: bool = True
    ) -> None:
        if max_sessions <= 0:
            raise ValueError(f"{NON_POSITIVE}, got {max_sessions}")
        self.max_sessions = self.initial_max_sessions = max_sessions
        self.semantics = semantics
        self.evict_when_full = evict_when_full
        self.flipped = False
        self.order: dict[Hashable, object] = {}  # insertion order == LRU order
        self.hits = self.misses = self.evictions = self.drops = 0

    def _touch(self, key: Hashable) -> None:
        self.order[key] = self.order.pop(key)

    def __len__(self) -> int:
        return len(self.order)

    @property
    def full(self) -> bool:
        return len(self.order) >= self.max_sessions

    def get_or_create_session(self, session_id: object, payload: object = None) -> Outcome:
        """LRU-1..4, ADMIT-1..4: a hit refreshes the key; a miss appends it with
        ``payload`` and evicts from the front, or is refused when full and refusing."""
        key = self.semantics.get_key(session_id)
        if key in self.order:
            self.hits += 1
            if self.semantics.hit_refreshes:
                self._touch(key)
            return Outcome("hit")
        if self.full and not self.evict_when_full:
            return Outcome("refused")  # ADMIT-2, ADMIT-3: nothing changes
        self.misses += 1
        self.order[key] = payload  # the newcomer is last, so never the victim below (LRU-4)
        victims = []
        while len(self.order) > self.max_sessions:
            victim = next(iter(self.order))
            del self.order[victim]
            victims.append(victim)
        self.evictions += len(victims)
        return Outcome("miss", tuple(victims))

    def require_session(self, session_id: object) -> Outcome:
        """LOST-1..3: a resident key is a hit (counted, made most recent); an absent one is
        ``lost`` and changes nothing, counters and order included. Never a miss."""
        key = self.semantics.get_key(session_id)
        if key not in self.order:
            return Outcome("lost")
        self.hits += 1
        if self.semantics.require_refreshes:
            self._touch(key)
        return Outcome("hit")

    def drop_session(self, session_id: object) -> bool:
        """DROP-1, DROP-2, DROP-3: remove the key; counters and others' order stay."""
        key = self.semantics.drop_key(session_id)
        if key not in self.order:
            return False
        del self.order[key]
        self.drops += 1
        return True

    def contains(self, session_id: object) -> bool:
        """KEY-3, STATS-4: a pure read (unless a suspect refreshes on it)."""
        key = self.semantics.contains_key(session_id)
        present = key in self.order
        if present and self.semantics.contains_refreshes:
            self._touch(key)
        return present

    def raise_max_sessions(self, max_sessions: int) -> bool:
        """Raise the cap only upwards (ADMIT-6); reject ``n <= 0`` (ADMIT-7)."""
        if max_sessions <= 0:
            raise ValueError(f"{NON_POSITIVE}, got {max_sessions}")
        if max_sessions <= self.max_sessions:
            return False
        self.max_sessions = max_sessions
        return True

    def set_evict_when_full(self, flag: bool) -> None:
        """Switch the policy for later misses (ADMIT-11); the table stays as it is."""
        self.evict_when_full = flag
        self.flipped = True

    def counters(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "evictions": self.evictions}

    def keys(self) -> list[Hashable]:
        """Keys, least recently used first."""
        return list(self.order)

    def describe(self) -> str:
        """The table in one line, for failure messages."""
        # The policy is shown where admission is in play: refusing, or switched live.
        shown = self.flipped or not self.evict_when_full
        policy = f", evict_when_full={self.evict_when_full}" if shown else ""
        return (
            f"LRU order (least recent first) {_abridged(self.keys())}, "
            f"max_sessions={self.max_sessions}"
            f"{policy}, {self.counters()}, drops={self.drops}"
        )

    def predict(self, call: str, session_id: object) -> object:
        """What ``call`` (a ``Observation`` kind) should observe now, applying it."""
        if call == "get_or_create_session":
            return self.get_or_create_session(session_id).hit
        if call == "drop_session":
            return self.drop_session(session_id)
        if call == "contains":
            return self.contains(session_id)
        if call == "counters":
            return self.counters()
        if call == "len":
            return len(self.order)
        if call == "raise_max_sessions":
            return self.raise_max_sessions(session_id)  # type: ignore[arg-type]
        raise ValueError(f"unknown observation {call!r}")


def _brief(key: Hashable, limit: int = 40) -> str:
    """``repr(key)``, or its start and its length when longer than ``limit``."""
    text = repr(key)
    return text if len(text) <= limit else f"{text[: limit - 10]}...({len(text)} chars)"


def _abridged(keys: list[Hashable], shown: int = 8) -> str:
    """``keys`` as a list, each ``_brief``; a long list by its ends and a count."""
    if len(keys) <= 2 * shown:
        return "[" + ", ".join(_brief(k) for k in keys) + "]"
    head = ", ".join(_brief(k) for k in keys[:shown])
    tail = ", ".join(_brief(k) for k in keys[-shown:])
    return f"[{head}, ... {len(keys) - 2 * shown} more ..., {tail}]"


#: (call, session_id, what the subject showed): ``get_or_create_session`` shows
#: whether it returned an existing session; ``counters`` and ``len`` take no id.
Observation = tuple[str, object, object]


def suspect(
    max_sessions: int,
    trace: list[Observation],
    first: Sequence[tuple[str, Semantics]] = (),
) -> str | None:
    """The clause of the first suspect (``first``, then ``SUSPECTS``) that explains
    every observation in ``trace``."""
    for clause, semantics in (*first, *SUSPECTS):
        table = LruTable(max_sessions, semantics)
        if all(table.predict(call, i) == seen for call, i, seen in trace):
            return clause
    return None


@dataclass(eq=False)
class BufferModel:
    """What one buffer the suite put into a session holds."""

    obj: Any = field(repr=False)
    where: str  # e.g. "session #2 .get('frames')"
    items: list[Held] = field(default_factory=list)
    resident: bool = True

    def append(self, value: Held) -> None:
        self.items.append(value)

    def reset(self) -> None:
        self.items = []
        self.resident = False


@dataclass(eq=False)
class SessionModel:
    """What one SessionState object holds, and where it is now."""

    number: int
    session_id: object
    obj: Any = field(repr=False)
    objects: dict[str, BufferModel] = field(default_factory=dict)
    attrs: dict[str, Held] = field(default_factory=dict)
    fate: str = "in the table"  # "evicted", "evicted, then its id dropped", "dropped"

    def put(self, name: str, obj: object) -> BufferModel:
        buffer = self.objects[name] = BufferModel(obj, f"session #{self.number}.get({name!r})")
        return buffer

    def set_attr(self, name: str, value: Held) -> None:
        self.attrs[name] = value

    def reset(self) -> None:
        """RESET-1: objects stay registered but non-resident; attrs are cleared."""
        for buffer in self.objects.values():
            buffer.reset()
        self.attrs.clear()

    def held(self) -> list[Held]:
        """Every value this session pins (its buffers' items, its attributes)."""
        items = [item for buffer in self.objects.values() for item in buffer.items]
        return items + list(self.attrs.values())

    def __repr__(self) -> str:
        return f"session #{self.number} (get_or_create_session({self.session_id!r}), {self.fate})"

    def contents(self) -> dict[str, object]:
        """The expected contents, printable beside the subject's."""
        return {
            "names": list(self.objects),
            "items": {
                n: b.items if b.resident else "non-resident" for n, b in self.objects.items()
            },
            "attrs": dict(self.attrs),
        }


class ManagerModel:
    """The spec's table, the session object each key maps to, and every session created."""

    def __init__(self, max_sessions: int) -> None:
        self.lru = LruTable(max_sessions)
        self.table: dict[Hashable, SessionModel] = {}
        self.sessions: list[SessionModel] = []  # creation order, whatever their fate
        # O(1) lookups in large worlds: sessions per key, and by the subject's object
        # (the first session given that object, should a miss hand out an old one).
        self.by_key: dict[Hashable, list[SessionModel]] = {}
        self.by_object: dict[int, SessionModel] = {}

    @property
    def max_sessions(self) -> int:
        return self.lru.max_sessions

    def lookup(self, session_id: object) -> SessionModel | None:
        """The session a hit on ``session_id`` must return (no side effect)."""
        return self.table.get(spec_key(session_id))

    def sessions_of(self, session_id: object) -> list[SessionModel]:
        """Every session ever created under ``session_id``'s key."""
        return list(self.by_key.get(spec_key(session_id), ()))

    def session_of(self, obj: object) -> SessionModel | None:
        """The first session the subject handed out as ``obj``, if any."""
        found = self.by_object.get(id(obj))
        return found if found is not None and found.obj is obj else None

    def get_or_create_session(
        self, session_id: object, obj: object
    ) -> tuple[SessionModel, list[SessionModel]]:
        """(the session returned, the sessions evicted); ``obj`` is what a miss created."""
        outcome = self.lru.get_or_create_session(session_id)
        key = spec_key(session_id)
        victims = outcome.evicted
        if not outcome.hit:
            session = self.table[key] = SessionModel(len(self.sessions), session_id, obj)
            self.sessions.append(session)
            self.by_key.setdefault(key, []).append(session)
            self.by_object.setdefault(id(obj), session)
        evicted = [self.table.pop(victim) for victim in victims]
        for session in evicted:
            session.fate = "evicted"  # LRU-5: the holder's object is left as it was
        return self.table[key], evicted

    def drop_session(self, session_id: object) -> bool:
        """DROP-1..4: a present session is removed and reset; an evicted one is left alone."""
        if not self.lru.drop_session(session_id):
            for session in self.sessions_of(session_id):
                if session.fate == "evicted":
                    session.fate = "evicted, then its id dropped"
            return False
        session = self.table.pop(spec_key(session_id))
        session.reset()
        session.fate = "dropped"
        return True

    def contains(self, session_id: object) -> bool:
        return self.lru.contains(session_id)

    def expected_bytes(self) -> dict[str, int]:
        """ACCT-11: the distinct allocations behind every session in the table, per device."""
        return expected_bytes(h for s in self.table.values() for h in s.held())

    def describe(self) -> str:
        """The model's state in one line, for failure messages."""
        return f"model: {self.lru.describe()}"
