"""ENV-*: configuration resolution (SPEC.md, "ENV: configuration resolution").

The oracle below is written from the spec, independent of any implementation.
Environment changes go through ``monkeypatch`` only.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sessionstate.conformance.checks import check, check_equal, focused_on, per_clause

ENABLE = "OMNI_DIFFUSION_SESSION_STATE_MANAGER"
MAX = "OMNI_DIFFUSION_SESSION_STATE_MANAGER_MAX_SESSIONS"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

enable_values = st.one_of(
    st.none(),
    st.sampled_from(_TRUE + _FALSE).flatmap(
        lambda v: st.sampled_from([v, v.upper(), v.title(), f"  {v}\t", f"\n{v} "])
    ),
    st.sampled_from(["", " ", "2", "y", "n", "enable", "tru", "-1", "none"]),
)
max_values = st.one_of(
    st.none(),
    st.integers(-3, 200).map(str),
    st.sampled_from([" 7 ", "+5", "1_000", "-0", "0", "5.0", "0x10", "", "abc", "1e3", "7 7"]),
)
enable_args = st.sampled_from([None, True, False])
max_args = st.sampled_from([None, 0, 1, 5, 64, 300])


def _resolver(subject: Any) -> Any:
    if subject.config_resolver is None:
        pytest.skip(f"subject {subject.name!r} has no config_resolver")
    return subject.config_resolver


def oracle(
    env_enable: str | None, env_max: str | None, enable: bool | None, max_sessions: int | None
) -> tuple[tuple[bool, int], bool]:
    """(expected result, whether exactly one warning is expected)."""
    if env_enable is not None:
        flag = env_enable.strip().lower()
        enable = True if flag in _TRUE else False if flag in _FALSE else enable
    warn = False
    if env_max is not None:
        try:
            parsed = int(env_max)
        except ValueError:
            warn = True
        else:
            max_sessions = parsed if parsed > 0 else max_sessions
    return (bool(enable), int(max_sessions or 64)), warn


def _resolve(
    resolver: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    env_enable: str | None,
    env_max: str | None,
    enable: Any,
    max_sessions: Any,
) -> tuple[Any, list[str]]:
    for name, value in ((ENABLE, env_enable), (MAX, env_max)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        result = resolver(enable=enable, max_sessions=max_sessions)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return result, warnings


def _call(env_enable: str | None, env_max: str | None, enable: Any, max_sessions: Any) -> str:
    return (
        f"with {ENABLE}={env_enable!r}, {MAX}={env_max!r}: "
        f"resolve_session_state_config(enable={enable!r}, max_sessions={max_sessions!r})"
    )


ORACLE_CLAUSES = ("ENV-1", "ENV-2", "ENV-3", "ENV-4", "ENV-5", "ENV-6")


@per_clause(*ORACLE_CLAUSES)
def test_resolution_matches_oracle(
    subject: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, focus: str
) -> None:
    """Every (env enable, env max, enable, max_sessions) combination resolves as the spec says.

    One run per clause (``focus``): inputs on which the subject breaks another
    clause say nothing about this one and are dropped, so each clause is checked
    to the end whatever else the subject gets wrong.
    """
    resolver = _resolver(subject)

    # The ENV-3/ENV-4 boundary and ENV-2's empty string in every run, not only when drawn
    # (the detection benchmark once went 100 examples without an empty enable value).
    # And each clause's basic statement, so that one run per clause catches a one-point bug
    # at the quick profile: case and whitespace (ENV-1), int() spellings (ENV-3), a value
    # int() rejects (ENV-5).
    @example("TRUE", None, False, None)
    @example(" Off\t", None, True, None)
    @example(None, " 7 ", None, 5)
    @example(None, "1_000", None, None)
    @example(None, "5.0", None, 5)
    @example("", None, True, None)
    @example(None, "1", None, 5)
    @example(None, "0", None, 5)
    @example(None, "-1", None, 5)
    @given(enable_values, max_values, enable_args, max_args)
    def run(env_enable: str | None, env_max: str | None, enable: Any, max_sessions: Any) -> None:
        with monkeypatch.context() as patch:
            result, warnings = _resolve(
                resolver, patch, caplog, env_enable, env_max, enable, max_sessions
            )
        expected, warn = oracle(env_enable, env_max, enable, max_sessions)
        when = _call(env_enable, env_max, enable, max_sessions)
        clause = _clause_for(env_enable, env_max, enable, expected, result)
        check_equal(
            tuple(result) if isinstance(result, tuple) else result, expected, clause, "result", when
        )
        if warn:
            check_equal(len(warnings), 1, "ENV-5", "number of warnings", when)
            check(
                repr(env_max) in warnings[0],
                "ENV-5",
                f"warning {warnings[0]!r} does not show the raw value as {env_max!r}, {when}",
            )
        else:
            check_equal(warnings, [], "ENV-2" if env_max is None else "ENV-4", "warnings", when)

    with focused_on(focus):
        run()


def _clause_for(
    env_enable: str | None,
    env_max: str | None,
    enable: Any,
    expected: tuple[bool, int],
    result: Any,
) -> str:
    # Name the most specific clause a wrong result breaks.
    if not isinstance(result, tuple) or len(result) != 2:
        return "ENV-6"
    if result[0] != expected[0]:
        recognised = env_enable is not None and env_enable.strip().lower() in _TRUE + _FALSE
        return "ENV-1" if recognised else "ENV-2" if env_enable is not None else "ENV-6"
    if env_max is None:
        return "ENV-6"
    try:
        parsed = int(env_max)
    except ValueError:
        return "ENV-5"
    return "ENV-3" if parsed > 0 else "ENV-4"


@pytest.mark.clause("ENV-6")
@pytest.mark.parametrize(
    "legacy",
    ["OMNI_DIFFUSION_SESSION_MEMORY_MANAGER", "OMNI_DIFFUSION_SESSION_MEMORY_MANAGER_MAX_SESSIONS"],
)
def test_legacy_names_are_not_read(
    subject: Any, monkeypatch: pytest.MonkeyPatch, legacy: str
) -> None:
    """The old ..._SESSION_MEMORY_MANAGER variables have no effect."""
    resolver = _resolver(subject)
    monkeypatch.delenv(ENABLE, raising=False)
    monkeypatch.delenv(MAX, raising=False)
    monkeypatch.setenv(legacy, "1" if legacy.endswith("MANAGER") else "9")
    check_equal(
        tuple(resolver(enable=None, max_sessions=None)),
        (False, 64),
        "ENV-6",
        "resolve_session_state_config()",
        f"with {legacy}=set",
    )
