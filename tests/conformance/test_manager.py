"""The suite's manager model (``sessionstate.conformance._model.manager``) against the spec, by hand."""

from __future__ import annotations

import pytest

from sessionstate.conformance import Subject
from sessionstate.conformance._harness.devices import allocate
from sessionstate.conformance._machine.manager import SESSION_IDS, learn_keys, replay
from sessionstate.conformance._model.manager import (
    SUSPECTS,
    KeyFn,
    LruTable,
    ManagerModel,
    Observation,
    Outcome,
    Semantics,
    grouped_key,
    key_clause,
    slot,
    spec_key,
    suspect,
)
from sessionstate.fixtures.reference_subject import subject as reference


@pytest.mark.parametrize(
    ("session_id", "key"),
    [
        (None, "default"),
        ("", "default"),
        (0, "default"),
        (False, "default"),
        (0.0, "default"),
        ((), "default"),
        ("default", "default"),
        (7, "7"),
        ("7", "7"),
        (True, "True"),
        (("t",), "('t',)"),
    ],
)
def test_spec_key(session_id: object, key: str) -> None:
    """Falsy ids are "default" (KEY-1); any other id is its str (KEY-2)."""
    assert spec_key(session_id) == key


def _table(max_sessions: int, *ids: str, semantics: Semantics | None = None) -> LruTable:
    table = LruTable(max_sessions) if semantics is None else LruTable(max_sessions, semantics)
    for session_id in ids:
        table.get_or_create_session(session_id)
    return table


class TestLruTable:
    def test_miss_then_hit(self) -> None:
        """A miss counts a miss; the same key again is a hit."""
        table = LruTable(3)
        assert table.get_or_create_session("a") == Outcome("miss")
        assert table.get_or_create_session("a") == Outcome("hit")
        assert table.counters() == {"hits": 1, "misses": 1, "evictions": 0}

    def test_miss_over_capacity_evicts_least_recent(self) -> None:
        """The least recently used key goes; a hit made "a" recent (LRU-3, LRU-4)."""
        table = _table(2, "a", "b", "a")
        assert table.get_or_create_session("c") == Outcome("miss", ("b",))
        assert table.keys() == ["a", "c"]
        assert table.counters() == {"hits": 1, "misses": 3, "evictions": 1}

    def test_newcomer_is_never_the_victim(self) -> None:
        """With one slot the predecessor goes, never the key just created."""
        table = _table(1, "a")
        assert table.get_or_create_session("b") == Outcome("miss", ("a",))
        assert table.keys() == ["b"]

    def test_a_full_refusing_table_refuses_and_changes_nothing(self) -> None:
        """ADMIT-1..4: at the cap a miss is refused, counted nowhere; hits are served."""
        table = LruTable(2, evict_when_full=False)
        assert [table.get_or_create_session(i) for i in ("a", None)] == [Outcome("miss")] * 2
        assert table.get_or_create_session("c") == Outcome("refused")
        assert table.get_or_create_session("a") == Outcome("hit")
        assert (table.keys(), table.counters()) == (
            ["default", "a"],
            {"hits": 1, "misses": 2, "evictions": 0},
        )

    def test_the_cap_only_rises_and_the_policy_is_live(self) -> None:
        """ADMIT-6, ADMIT-7, ADMIT-11."""
        table = _table(1, "a")
        assert table.raise_max_sessions(1) is False
        assert table.raise_max_sessions(2) is True
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            table.raise_max_sessions(0)
        table.set_evict_when_full(False)
        assert table.get_or_create_session("b") == Outcome("miss")
        assert table.get_or_create_session("c") == Outcome("refused")
        assert (table.flipped, table.initial_max_sessions, table.max_sessions) == (True, 1, 2)

    def test_a_non_positive_cap_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            LruTable(0)

    def test_drop_keeps_counters_and_order(self) -> None:
        """DROP-1..3: present returns True; absent False; counters and others' order stay."""
        table = _table(3, "a", "b", "c")
        assert table.drop_session("b") is True
        assert table.drop_session("b") is False
        assert table.keys() == ["a", "c"]
        assert table.counters() == {"hits": 0, "misses": 3, "evictions": 0}
        assert table.drops == 1

    def test_contains_is_pure(self) -> None:
        """STATS-4: `in` neither counts nor refreshes."""
        table = _table(2, "a", "b")
        assert table.contains(None) is False
        assert table.contains("a") is True
        assert table.keys() == ["a", "b"]
        assert table.counters() == {"hits": 0, "misses": 2, "evictions": 0}

    def test_predict_applies_the_call(self) -> None:
        """predict() is the call's result, applied to the table."""
        table = LruTable(2)
        assert table.predict("get_or_create_session", "a") is False
        assert table.predict("contains", "") is False
        assert table.predict("len", None) == 1
        assert table.predict("counters", None) == {"hits": 0, "misses": 1, "evictions": 0}
        assert table.predict("drop_session", "a") is True
        with pytest.raises(ValueError, match="unknown observation 'stats'"):
            table.predict("stats", None)


class TestSuspects:
    def test_hit_without_refresh_evicts_the_hit_session(self) -> None:
        table = _table(2, "a", "b", "a", semantics=Semantics(hit_refreshes=False))
        assert table.get_or_create_session("c") == Outcome("miss", ("a",))

    def test_suspects_are_the_order_deviations(self) -> None:
        """Key suspects are learned from the subject; the fixed ones are about order."""
        assert [clause for clause, _ in SUSPECTS] == ["LRU-3", "STATS-4"]

    def test_refreshing_contains_reorders(self) -> None:
        table = _table(2, "a", "b", semantics=Semantics(contains_refreshes=True))
        table.contains("a")
        assert table.keys() == ["b", "a"]

    def _trace(self, semantics: Semantics, calls: list[tuple[str, object]]) -> list[Observation]:
        table = LruTable(2, semantics)
        return [(call, i, table.predict(call, i)) for call, i in calls]

    def test_suspect_names_the_deviation(self) -> None:
        """The first suspect explaining a whole trace names its clause."""
        calls: list[tuple[str, object]] = [
            ("get_or_create_session", "a"),
            ("get_or_create_session", "b"),
            ("get_or_create_session", "a"),
            ("get_or_create_session", "c"),
            ("contains", "a"),
            ("contains", "b"),
        ]
        assert suspect(2, self._trace(Semantics(hit_refreshes=False), calls)) == "LRU-3"
        calls[2] = ("contains", "a")
        assert suspect(2, self._trace(Semantics(contains_refreshes=True), calls)) == "STATS-4"
        str_key = Semantics(get_key=str, contains_key=str, drop_key=str)
        key_calls = [("get_or_create_session", None), ("contains", ""), ("contains", None)]
        key_trace = self._trace(str_key, key_calls)
        assert suspect(2, key_trace) is None
        assert suspect(2, key_trace, [("KEY-1", str_key)]) == "KEY-1"

    def test_unexplained_trace_has_no_suspect(self) -> None:
        trace: list[Observation] = [("get_or_create_session", "a", True)]
        assert suspect(2, trace) is None


IDS = ("a", "default", None, "", 0, False, 7, "7")


def _grouped(groups: dict[object, int], ids: tuple[object, ...] = IDS) -> KeyFn:
    return grouped_key({slot(i): groups.get(slot(i), n) for n, i in enumerate(ids)})


class TestKeyClause:
    def test_spec_grouping_breaks_nothing(self) -> None:
        assert key_clause(IDS, Semantics()) is None

    def test_falsy_id_apart_from_default_is_key_1(self) -> None:
        """None keyed "None": a falsy id not in the "default" group."""
        key = _grouped({slot(x): 1 for x in ("default", "", 0, False)} | {slot("7"): 7, slot(7): 7})
        assert key_clause(IDS, Semantics(key, key, key)) == "KEY-1"

    def test_int_apart_from_its_str_is_key_2(self) -> None:
        key = _grouped({slot(x): 1 for x in ("default", None, "", 0, False)})
        assert key_clause(IDS, Semantics(key, key, key)) == "KEY-2"

    def test_contains_grouping_unlike_get_is_key_3(self) -> None:
        assert key_clause(IDS, Semantics(contains_key=str)) == "KEY-3"
        assert key_clause(IDS, Semantics(drop_key=repr)) == "KEY-3"

    def test_slot_keeps_equal_ids_of_different_types_apart(self) -> None:
        key = grouped_key({slot(0): "zero", slot(False): "false"})
        assert (key(0), key(False), key(0.0)) == ("zero", "false", ("ungrouped", "0.0"))


class TestManagerModel:
    def test_hit_returns_the_recorded_session(self) -> None:
        """The model records the object a miss created and expects it on every hit."""
        model = ManagerModel(2)
        created, evicted = model.get_or_create_session(None, "obj-default")
        assert (created.obj, evicted) == ("obj-default", [])
        assert model.lookup("") is created
        assert model.get_or_create_session(0, "unused") == (created, [])

    def test_eviction_keeps_the_session_intact(self) -> None:
        """LRU-5: the evicted session's contents stay; it leaves the table."""
        model = ManagerModel(1)
        first, _ = model.get_or_create_session("a", object())
        first.set_attr("x", allocate("meta", (2,)))
        second, evicted = model.get_or_create_session("b", object())
        assert evicted == [first]
        assert first.fate == "evicted" and "x" in first.attrs
        assert model.lookup("a") is None and model.lookup("b") is second

    def test_drop_resets_and_drop_of_evicted_id_does_not(self) -> None:
        """DROP-2 resets a present session; DROP-4 leaves an evicted one as it was."""
        model = ManagerModel(1)
        first, _ = model.get_or_create_session("a", object())
        buffer = first.put("frames", object())
        buffer.append(allocate("meta", (2,)))
        model.get_or_create_session("b", object())
        assert model.drop_session("a") is False
        assert first.fate == "evicted, then its id dropped" and buffer.resident
        second = model.lookup("b")
        assert second is not None
        second.set_attr("y", allocate("meta", (1,)))
        assert model.drop_session("b") is True
        assert (second.fate, second.attrs, model.lru.drops) == ("dropped", {}, 1)

    def test_expected_bytes_counts_each_allocation_once_over_the_table(self) -> None:
        """ACCT-11: shared allocations count once; evicted and reset data count nothing."""
        model = ManagerModel(2)
        shared, own, gone = allocate("cpu", (2, 3)), allocate("meta", (4,)), allocate("cpu", (5,))
        a, _ = model.get_or_create_session("a", object())
        a.put("frames", object()).append(shared)
        a.set_attr("same", shared)
        b, _ = model.get_or_create_session("b", object())
        b.set_attr("copy", shared)
        b.put("kv", object()).append(own)
        b.put("latents", object()).append(gone)
        b.objects["latents"].reset()
        assert model.expected_bytes() == {"cpu": 24, "meta": 16}
        model.get_or_create_session("c", object())  # evicts "a"
        assert model.expected_bytes() == {"cpu": 24, "meta": 16}  # b still holds shared
        model.get_or_create_session("d", object())  # evicts "b"
        assert model.expected_bytes() == {}

    def test_describe_shows_order_and_counters(self) -> None:
        model = ManagerModel(2)
        model.get_or_create_session("a", object())
        model.get_or_create_session("b", object())
        model.get_or_create_session("a", object())
        assert model.describe() == (
            "model: LRU order (least recent first) ['b', 'a'], max_sessions=2, "
            "{'hits': 1, 'misses': 2, 'evictions': 0}, drops=0"
        )

    def test_session_repr_and_contents(self) -> None:
        model = ManagerModel(1)
        session, _ = model.get_or_create_session(7, object())
        held = allocate("meta", (2,))
        session.put("frames", object()).append(held)
        session.put("kv", object()).reset()
        assert repr(session) == "session #0 (get_or_create_session(7), in the table)"
        assert session.contents() == {
            "names": ["frames", "kv"],
            "items": {"frames": [held], "kv": "non-resident"},
            "attrs": {},
        }


def test_replay_rejects_unknown_steps() -> None:
    """A corpus program naming a method the machine does not replay is a suite bug."""
    with pytest.raises(ValueError, match="'stats' is not one of"):
        replay(reference, 2, [("stats", "a")])


class _StrKeyed:
    """A manager that keys by ``str(session_id)``: None is "None", not "default"."""

    def __init__(self, max_sessions: int, byte_budget: object) -> None:
        self.table: dict[str, object] = {}

    def get_or_create_session(self, session_id: object) -> object:
        return self.table.setdefault(str(session_id), object())

    def __contains__(self, session_id: object) -> bool:
        return session_id in self.table  # not even str(): KEY-3 as well

    def drop_session(self, session_id: object) -> bool:
        return self.table.pop(str(session_id), None) is not None

    def __len__(self) -> int:
        return len(self.table)


def test_learn_keys_finds_the_reference_conforming() -> None:
    """The reference groups ids as the spec does, in every method."""
    semantics = learn_keys(reference, SESSION_IDS)
    assert semantics is not None
    assert key_clause(SESSION_IDS, semantics) is None


def test_learn_keys_names_a_str_keyed_manager_key_1() -> None:
    """Grouping learned from a str-keyed manager: falsy ids apart, so KEY-1 first."""
    semantics = learn_keys(Subject(name="str-keyed", manager_factory=_StrKeyed), SESSION_IDS)
    assert semantics is not None
    assert semantics.get_key(None) != semantics.get_key("")
    assert semantics.get_key(7) == semantics.get_key("7")
    assert semantics.contains_key(7) != semantics.get_key(7)
    assert key_clause(SESSION_IDS, semantics) == "KEY-1"


@pytest.mark.parametrize(
    ("zoo_module", "reorders"),
    [
        ("drop_reorders_table", {"present", "absent"}),  # its drops do sort the table
        ("lru_mru_eviction", set()),  # evicts the newest with or without a drop
        ("lru_hit_no_refresh", set()),
    ],
)
def test_drops_are_blamed_only_for_what_a_drop_changes(zoo_module: str, reorders: set[str]) -> None:
    """A wrong victim after a drop is the drop's only where the same misses without a drop
    evict oldest first: an MRU-evicting manager's LRU-4 bug is never put on DROP-1."""
    import importlib

    from sessionstate.conformance._machine.manager import drop_reorders

    module = importlib.import_module(f"sessionstate.fixtures.zoo.{zoo_module}")
    assert drop_reorders(module.subject) == reorders
    assert drop_reorders(reference) == frozenset()
