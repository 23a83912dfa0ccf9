"""KEY-*: key normalisation (SPEC.md, "KEY: key normalisation").

Exhaustive over small id sets: every falsy spelling of "default", pairs of
ids one ``str`` apart, and every ordered pair of the machine's ids across
``get_or_create_session``, ``in`` and ``drop_session``: KEY-1 and KEY-2 are
about which ids ``get_or_create_session`` puts together, KEY-3 about the
other methods agreeing with it. The machines of ``test_lru.py`` draw from
the same ids. And drawn groups of ids that differ invisibly (``strategies.lookalike_ids``:
Unicode normal forms, case, whitespace, ``str`` subclasses, equal numbers printed
differently), one session exactly when their keys agree.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given

from sessionstate.conformance._machine.manager import SESSION_IDS
from sessionstate.conformance._model.manager import spec_key
from sessionstate.conformance.checks import calling, check_equal, focused_on, per_clause
from sessionstate.conformance.strategies import FoldedId, ShownId, lookalike_ids

FALSY_IDS = [None, "", 0, False, 0.0, (), b""]
STRINGIFIED = [(7, "7"), (("t",), "('t',)"), (1.5, "1.5"), (True, "True"), (-3, "-3")]
#: Truthy ids whose ``str`` differ, though Python may call them equal (``1 == True ==
#: 1.0``, ``7 == 7.0``), they read alike (``b"7"``, ``" a"``) or a careless key
#: function merges them (decoding bytes, stripping or folding case).
DISTINCT = ["a", " a", "a ", "A", b"a", "b'a'", 1, True, 1.0, "1", "True", 7, 7.0, b"7", "7.0"]


def _manager(subject: Any, clause: str) -> Any:
    with calling(clause, "make_manager(max_sessions=8, byte_budget=None)"):
        return subject.make_manager(max_sessions=8, byte_budget=None)


@pytest.mark.clause("KEY-1")
@pytest.mark.parametrize("session_id", FALSY_IDS, ids=repr)
def test_falsy_id_is_default(subject: Any, session_id: object) -> None:
    """get_or_create_session of a falsy id returns the session "default"."""
    manager = _manager(subject, "KEY-1")
    call = f"get_or_create_session('default'), then ({session_id!r})"
    with calling("KEY-1", call):
        default = manager.get_or_create_session("default")
        same = manager.get_or_create_session(session_id)
        size = len(manager)
    check_equal(same is default, True, "KEY-1", "the second session is the first", call)
    check_equal(size, 1, "KEY-1", "len(manager)", f"after {call}")


@pytest.mark.clause("KEY-2")
@pytest.mark.parametrize(("session_id", "text"), STRINGIFIED, ids=repr)
def test_truthy_id_is_stringified(subject: Any, session_id: object, text: str) -> None:
    """get_or_create_session of ``session_id`` and of ``str(session_id)`` return one session."""
    manager = _manager(subject, "KEY-2")
    call = f"get_or_create_session({session_id!r}), then ({text!r})"
    with calling("KEY-2", call):
        first = manager.get_or_create_session(session_id)
        second = manager.get_or_create_session(text)
        size = len(manager)
    check_equal(second is first, True, "KEY-2", "the second session is the first", call)
    check_equal(size, 1, "KEY-2", "len(manager)", f"after {call}")


@pytest.mark.clause("KEY-2")
def test_ids_with_different_str_are_different_sessions(subject: Any) -> None:
    """Every ordered pair of ``DISTINCT``: one session exactly when their ``str`` agree."""
    for first in DISTINCT:
        for second in DISTINCT:
            manager = _manager(subject, "KEY-2")
            call = f"get_or_create_session({first!r}), then ({second!r})"
            with calling("KEY-2", call):
                same = manager.get_or_create_session(first) is manager.get_or_create_session(second)
            expected = str(first) == str(second)
            what = "the second session is the first"
            check_equal(same, expected, "KEY-2", what, f"{call}: str() gives {str(first)!r}"
                        f" and {str(second)!r}")  # fmt: skip


def _same_session(subject: Any, first: object, second: object) -> bool:
    """Whether the subject's get_or_create_session gives ``first`` and ``second`` one session."""
    manager = _manager(subject, "KEY-3")
    return bool(manager.get_or_create_session(first) is manager.get_or_create_session(second))


@pytest.mark.clause("KEY-3")
@pytest.mark.parametrize("created", SESSION_IDS, ids=repr)
def test_methods_agree_on_keys(subject: Any, created: object) -> None:
    """`in` finds and drop_session removes a session under exactly the ids
    get_or_create_session gives it. Whether those ids are the spec's is KEY-1's
    and KEY-2's business, what drop_session returns DROP-1's and DROP-2's."""
    for probe in SESSION_IDS:
        manager = _manager(subject, "KEY-3")
        when = f"after get_or_create_session({created!r})"
        with calling("KEY-3", f"{when}: {probe!r} in manager, drop_session({probe!r})"):
            same = _same_session(subject, created, probe)
            manager.get_or_create_session(created)
            present = probe in manager
            manager.drop_session(probe)
            left = len(manager)
        when += f", where get_or_create_session({probe!r}) {'is' if same else 'is not'} it"
        check_equal(present, same, "KEY-3", f"{probe!r} in manager", when)
        check_equal(
            left, 0 if same else 1, "KEY-3", "len(manager)", f"{when}, then drop({probe!r})"
        )


def _key_clause(first: object, second: object) -> str:
    """KEY-1 when a falsy id is in the pair (its key is "default"), else KEY-2."""
    return "KEY-1" if not first or not second else "KEY-2"


# Each family's basic case in every run: NFC and NFD forms of one text, a text and its
# case-folded and no-break-space-padded forms, a str subclass whose str() is other text
# and one that compares case-insensitively, numbers Python calls equal (or hashes alike).
@per_clause("KEY-1", "KEY-2", "KEY-3")
@example(ids=["caf\u00e9", "cafe\u0301"])
@example(ids=["Stra\u00dfe", "strasse", "Stra\u00dfe\u00a0"])
@example(ids=[ShownId("a", "b"), "a", "b"])
@example(ids=[FoldedId("Id"), FoldedId("ID")])
@example(ids=[1, 1.0, True, Decimal(1)])
@example(ids=[-1, -2, 0.0, -0.0])
@given(ids=lookalike_ids())
def test_lookalike_ids_key_by_str(subject: Any, focus: str, ids: list[object]) -> None:
    """Ids that differ invisibly are one session exactly when their keys (``str``, or
    "default" when falsy) agree, for ``get_or_create_session`` (KEY-1, KEY-2) and for
    ``in`` and ``drop_session`` after it (KEY-3)."""
    with focused_on(focus):
        manager = _manager(subject, "KEY-2")
        created = "get_or_create_session of " + ", then ".join(map(repr, ids))
        with calling("KEY-2", created):
            sessions = [manager.get_or_create_session(i) for i in ids]
        for (a, sa), (b, sb) in itertools.combinations(zip(ids, sessions, strict=True), 2):
            # As ascii(): keys that differ invisibly read differently.
            keys = f"keys {spec_key(a)!a} and {spec_key(b)!a}"
            check_equal(sa is sb, spec_key(a) == spec_key(b), _key_clause(a, b),
                        f"the sessions of {a!r} and {b!r} are one", f"{created}: {keys}")  # fmt: skip
        for first, probe in itertools.permutations(ids, 2):
            fresh = _manager(subject, "KEY-3")
            call = f"get_or_create_session({first!r}), then {probe!r} in manager, drop({probe!r})"
            with calling("KEY-3", call):
                fresh.get_or_create_session(first)
                same = fresh.get_or_create_session(probe) is fresh.get_or_create_session(first)
                fresh = _manager(subject, "KEY-3")
                fresh.get_or_create_session(first)
                present = probe in fresh
                fresh.drop_session(probe)
                left = len(fresh)
            when = f"{call}, where get_or_create_session({probe!r}) {'is' if same else 'is not'} it"
            check_equal(present, same, "KEY-3", f"{probe!r} in manager", when)
            check_equal(left, 0 if same else 1, "KEY-3", "len(manager)", when)
