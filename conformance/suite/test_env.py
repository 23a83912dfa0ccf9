"""ENV-*: configuration resolution (SPEC.md, "ENV: configuration resolution").

The oracle is the suite's own (``_model/env.py``), written from the spec,
independent of any implementation; the clause a wrong result breaks is named by
``_machine/env.py``. Environment changes go through ``pytest.MonkeyPatch`` only.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given

from sessionstate.conformance._machine.env import (
    clause_for,
    describe_call,
    resolve,
    resolver_of,
    silence_clause,
)
from sessionstate.conformance._model.env import ENABLE, LEGACY, MAX, oracle
from sessionstate.conformance.checks import check, check_equal, focused_on, per_clause
from sessionstate.conformance.env_values import (
    enable_arguments,
    enable_values,
    max_arguments,
    max_values,
)


def _case(env_enable: str | None, env_max: str | None, enable: Any, max_sessions: Any) -> example:
    """``@example`` of one (env enable, env max, enable, max_sessions) combination."""
    return example(env_enable=env_enable, env_max=env_max, enable=enable, max_sessions=max_sessions)


ORACLE_CLAUSES = ("ENV-1", "ENV-2", "ENV-3", "ENV-4", "ENV-5", "ENV-6")


# The ENV-3/ENV-4 boundary and ENV-2's empty string in every run, not only when drawn
# (the detection benchmark once went 100 examples without an empty enable value).
# And each clause's basic statement, so that one run per clause catches a one-point bug
# at the quick profile: case and whitespace (ENV-1), int() spellings (ENV-3), a value
# int() rejects (ENV-5); and the Python rules beyond ASCII that SPEC names: a digit of
# another decimal system and an ideographic space int() reads (ENV-3), a control
# character str.strip() removes but int() does not (ENV-5), letters that only
# case-folding or NFKC make a spelling (ENV-2), arguments 0, True and past 2**63 (ENV-6).
# And the near misses other readings take for a setting: a number int() reads that
# ENV-1 does not spell, and an abbreviation strtobool and YAML 1.1 read (ENV-2); leading
# zeros base 10 reads (ENV-3) and a base-prefixed literal it rejects (ENV-5), which
# int(x, 0) reads the other way round.
@per_clause(*ORACLE_CLAUSES)
@_case("2", None, False, None)
@_case("01", None, False, None)
@_case("y", None, False, None)
@_case(None, "010", None, 5)
@_case(None, "0x40", None, 5)
@_case(None, None, None, 0)
@_case(None, None, True, True)
@_case(None, " \u0663\u3000", None, 5)
@_case(None, "\x1c7", None, 5)
@_case("ye\u017f", None, False, None)
@_case("\uff34\uff32\uff35\uff25", None, False, None)
@_case(None, None, None, 2**64)
@_case("TRUE", None, False, None)
@_case(" Off\t", None, True, None)
@_case(None, " 7 ", None, 5)
@_case(None, "1_000", None, None)
@_case(None, "5.0", None, 5)
@_case("", None, True, None)
@_case(None, "1", None, 5)
@_case(None, "0", None, 5)
@_case(None, "-1", None, 5)
@given(
    env_enable=enable_values(),
    env_max=max_values(),
    enable=enable_arguments(),
    max_sessions=max_arguments(),
)
def test_resolution_matches_oracle(
    subject: Any,
    focus: str,
    env_enable: str | None,
    env_max: str | None,
    enable: Any,
    max_sessions: Any,
) -> None:
    """Every (env enable, env max, enable, max_sessions) combination resolves as the spec says.

    One run per clause (``focus``): inputs on which the subject breaks another
    clause say nothing about this one and are dropped, so each clause is checked
    to the end whatever else the subject gets wrong.
    """
    resolver = resolver_of(subject)
    with focused_on(focus):
        result, warnings = resolve(resolver, env_enable, env_max, enable, max_sessions)
        expected, warn = oracle(env_enable, env_max, enable, max_sessions)
        when = describe_call(env_enable, env_max, enable, max_sessions)
        clause = clause_for(env_enable, env_max, expected, result)
        check_equal(
            tuple(result) if isinstance(result, tuple) else result, expected, clause, "result", when
        )
        # Equal is not enough: True == 1, so a cap passed on unconverted would pass.
        types = tuple(map(type, result)) if isinstance(result, tuple) else type(result)
        check_equal(types, (bool, int), "ENV-6", "the types of the result", when)
        if warn:
            check_equal(len(warnings), 1, "ENV-5", "number of warnings", when)
            check(
                repr(env_max) in warnings[0],
                "ENV-5",
                f"warning {warnings[0]!r} does not show the raw value as {env_max!r}, {when}",
            )
        else:
            check_equal(warnings, [], silence_clause(env_max), "warnings", when)


@pytest.mark.clause("ENV-6")
@pytest.mark.parametrize("legacy", LEGACY)
def test_legacy_names_are_not_read(
    subject: Any, monkeypatch: pytest.MonkeyPatch, legacy: str
) -> None:
    """The old ..._SESSION_MEMORY_MANAGER variables have no effect."""
    resolver = resolver_of(subject)
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
