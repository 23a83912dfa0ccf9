"""KEY-*: key normalisation (SPEC.md, "KEY: key normalisation").

Exhaustive over small id sets: every falsy spelling of "default", pairs of
ids one ``str`` apart, and every ordered pair of the machine's ids across
``get_or_create_session``, ``in`` and ``drop_session``. The expected key
comes from ``conformance.model.spec_key``, written from the spec; the
machines of ``test_lru.py`` draw from the same ids.
"""

from __future__ import annotations

from typing import Any

import pytest

from sessionstate.conformance.checks import calling, check_equal
from sessionstate.conformance.machine import SESSION_IDS
from sessionstate.conformance.model import spec_key

FALSY_IDS = [None, "", 0, False, 0.0, (), b""]
STRINGIFIED = [(7, "7"), (("t",), "('t',)"), (1.5, "1.5"), (True, "True"), (-3, "-3")]


def _manager(subject: Any, clause: str) -> Any:
    with calling(clause, "make_manager(max_sessions=8, byte_budget=None)"):
        return subject.make_manager(max_sessions=8, byte_budget=None)


@pytest.mark.clause("KEY-1")
@pytest.mark.parametrize("session_id", FALSY_IDS, ids=repr)
def test_falsy_id_is_default(subject: Any, session_id: object) -> None:
    """A falsy id meets the session "default" through every method."""
    manager = _manager(subject, "KEY-1")
    with calling("KEY-1", f"get_or_create_session('default'), then ({session_id!r})"):
        default = manager.get_or_create_session("default")
        same = manager.get_or_create_session(session_id)
        present = session_id in manager
    check_equal(
        same is default,
        True,
        "KEY-1",
        f"get_or_create_session({session_id!r}) is get_or_create_session('default')",
    )
    check_equal(present, True, "KEY-1", f"{session_id!r} in manager", "after creating 'default'")
    with calling("KEY-1", f"drop_session({session_id!r})"):
        dropped = manager.drop_session(session_id)
        default_left = "default" in manager
    check_equal(dropped, True, "KEY-1", f"drop_session({session_id!r})", "with 'default' present")
    check_equal(default_left, False, "KEY-1", "'default' in manager", f"after drop({session_id!r})")


@pytest.mark.clause("KEY-2")
@pytest.mark.parametrize(("session_id", "text"), STRINGIFIED, ids=repr)
def test_truthy_id_is_stringified(subject: Any, session_id: object, text: str) -> None:
    """``session_id`` and ``str(session_id)`` name one session."""
    manager = _manager(subject, "KEY-2")
    call = f"get_or_create_session({session_id!r}), then ({text!r})"
    with calling("KEY-2", call):
        first = manager.get_or_create_session(session_id)
        second = manager.get_or_create_session(text)
        size = len(manager)
    check_equal(second is first, True, "KEY-2", "the second session is the first", call)
    check_equal(size, 1, "KEY-2", "len(manager)", f"after {call}")


@pytest.mark.clause("KEY-3")
@pytest.mark.parametrize("created", SESSION_IDS, ids=repr)
def test_methods_agree_on_keys(subject: Any, created: object) -> None:
    """After creating one id, `in` and drop_session find it under every id of the same key."""
    for probe in SESSION_IDS:
        same = spec_key(probe) == spec_key(created)
        manager = _manager(subject, "KEY-3")
        when = f"after get_or_create_session({created!r})"
        with calling("KEY-3", f"{when}: {probe!r} in manager, drop_session({probe!r})"):
            manager.get_or_create_session(created)
            present = probe in manager
            dropped = manager.drop_session(probe)
            left = len(manager)
        check_equal(present, same, "KEY-3", f"{probe!r} in manager", when)
        check_equal(dropped, same, "KEY-3", f"drop_session({probe!r})", when)
        check_equal(left, 0 if same else 1, "KEY-3", "len(manager)", f"{when}, drop({probe!r})")
