"""ENV-5's warning is heard wherever the subject's logger sends it (``_machine.env.resolve``)."""

from __future__ import annotations

import logging

from sessionstate.conformance._machine.env import resolve
from sessionstate.fixtures import own_logger_resolver
from sessionstate.fixtures.own_logger_resolver import HANDLED


def test_warning_of_a_non_propagating_logger_is_heard() -> None:
    """A logger with a handler of its own and ``propagate=False`` (vLLM's set-up) logs the
    warning: it is counted once, and its own handler still gets it."""
    before = len(HANDLED.messages)
    result, warnings = resolve(own_logger_resolver.resolve, None, "5.0", None, 3)
    assert result == (False, 3)
    assert warnings == ["MAX_SESSIONS='5.0' is not an integer; ignored"]
    assert HANDLED.messages[before:] == warnings


def test_a_propagating_warning_counts_once() -> None:
    """A record handed up through two loggers' handlers is one warning."""
    parent = logging.getLogger("sessionstate.tests.parent")
    child = logging.getLogger("sessionstate.tests.parent.child")
    parent.addHandler(logging.NullHandler())
    child.addHandler(logging.NullHandler())

    def resolver(enable: object, max_sessions: object) -> tuple[bool, int]:
        child.warning("one")
        return False, 64

    try:
        assert resolve(resolver, None, None, None, None)[1] == ["one"]
    finally:
        parent.handlers.clear()
        child.handlers.clear()


def test_records_below_warning_and_after_the_call_are_not_counted() -> None:
    """Only WARNING and above, and only during the call; ``callHandlers`` is restored."""
    handed_on = logging.Logger.callHandlers
    noisy = logging.getLogger("sessionstate.tests.noisy")

    def resolver(enable: object, max_sessions: object) -> tuple[bool, int]:
        noisy.info("not a warning")
        return False, 64

    assert resolve(resolver, None, None, None, None)[1] == []
    assert logging.Logger.callHandlers is handed_on
