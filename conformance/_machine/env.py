"""Calling a subject's ``config_resolver`` under a given environment, and the ENV blame rules.

``resolve`` sets (or removes) the two variables through ``pytest.MonkeyPatch`` for the
one call and collects the warnings it logs through any logger, with no function-scoped fixture: the ENV
property is a top-level ``@given`` test, and a fixture such as ``monkeypatch`` or
``caplog`` would be shared by all of its examples. ``clause_for`` names the most
specific clause a wrong result breaks, from the inputs and the oracle
(``_model.env``); ``silence_clause`` the one an unexpected warning breaks.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._model.env import ENABLE, MAX, parsed_max, recognised_flag

__all__ = ["clause_for", "describe_call", "resolve", "resolver_of", "silence_clause"]


def resolver_of(subject: Any) -> Any:
    """The subject's ``config_resolver``; skips the test when the subject has none."""
    if subject.config_resolver is None:
        own_outcomes.skip(f"subject {subject.name!r} has no config_resolver")
    return subject.config_resolver


def _message(record: logging.LogRecord) -> str:
    """The record's message, or its raw ``msg`` where the arguments do not fit it."""
    try:
        return record.getMessage()
    except Exception:
        return str(record.msg)


def resolve(
    resolver: Any,
    env_enable: str | None,
    env_max: str | None,
    enable: Any,
    max_sessions: Any,
) -> tuple[Any, list[str]]:
    """``resolver(enable=..., max_sessions=...)`` with ``ENABLE`` and ``MAX`` set to
    ``env_enable`` and ``env_max`` (unset for ``None``), and the warnings it logged.

    The environment is restored afterwards. A warning is a record of level WARNING or
    above that any logger handles during the call, whatever its handlers and whether
    it propagates: ``logging.Logger.callHandlers``, through which every logger hands a
    record to its handlers (and its ancestors'), is wrapped for the call, so a logger
    set up as vLLM sets up its own (a handler of its own, ``propagate=False``) is heard
    as well as one that reaches the root. As ``caplog.at_level(logging.WARNING)``
    does, the root logger is at WARNING for the call, so a warning of a logger left
    at its default level is emitted whatever level the caller's logging is at.
    """
    root = logging.getLogger()
    level = root.level
    messages: list[str] = []
    handed_on = logging.Logger.callHandlers

    def call_handlers(logger: logging.Logger, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            messages.append(_message(record))
        handed_on(logger, record)

    with pytest.MonkeyPatch.context() as patch:
        for name, value in ((ENABLE, env_enable), (MAX, env_max)):
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        patch.setattr(logging.Logger, "callHandlers", call_handlers)
        root.setLevel(logging.WARNING)
        try:
            result = resolver(enable=enable, max_sessions=max_sessions)
        finally:
            root.setLevel(level)
    return result, messages


def describe_call(
    env_enable: str | None, env_max: str | None, enable: Any, max_sessions: Any
) -> str:
    """The call, as a failure message shows it."""
    return (
        f"with {ENABLE}={env_enable!r}, {MAX}={env_max!r}: "
        f"resolve_session_state_config(enable={enable!r}, max_sessions={max_sessions!r})"
    )


def clause_for(
    env_enable: str | None,
    env_max: str | None,
    expected: tuple[bool, int],
    result: Any,
) -> str:
    """The most specific clause a result other than ``expected`` breaks.

    Not a pair: ENV-6. A wrong flag: ENV-1 if the enable value is recognised, ENV-2
    if it is set but not, else ENV-6. A wrong cap: by what ``int()`` makes of the
    MAX_SESSIONS value, ENV-3 (positive), ENV-4 (zero or negative), ENV-5
    (rejected), or ENV-6 when it is unset.
    """
    if not isinstance(result, tuple) or len(result) != 2:
        return "ENV-6"
    if result[0] != expected[0]:
        if recognised_flag(env_enable) is not None:
            return "ENV-1"
        return "ENV-2" if env_enable is not None else "ENV-6"
    if env_max is None:
        return "ENV-6"
    parsed = parsed_max(env_max)
    if parsed is None:
        return "ENV-5"
    return "ENV-3" if parsed > 0 else "ENV-4"


def silence_clause(env_max: str | None) -> str:
    """The clause a warning breaks where none is expected: ENV-2 when MAX_SESSIONS is
    unset (only the enable value could have caused it), else ENV-4."""
    return "ENV-2" if env_max is None else "ENV-4"
