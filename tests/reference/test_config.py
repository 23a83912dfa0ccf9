"""Unit tests of ``sessionstate.reference.config`` (contract section 5)."""

from __future__ import annotations

import logging

import pytest

from sessionstate.reference import resolve_session_state_config
from sessionstate.reference.config import ENABLE_ENV, MAX_SESSIONS_ENV

_TRUE = ["1", "true", "TRUE", "True", "yes", "YES", "on", "On", " on ", "\ttrue\n"]
_FALSE = ["0", "false", "FALSE", "False", "no", "No", "off", "OFF", " off ", "\n0\t"]
_IGNORED_FLAGS = ["", " ", "2", "enable", "y", "t", "tru e", "+1", "1.0", "none"]
_POSITIVE = [("7", 7), (" 7 ", 7), ("+5", 5), ("1_000", 1000), ("\t12\n", 12), ("007", 7)]
_NOT_POSITIVE = ["0", "-1", " -5 ", "-0", "+0", "-1_000"]
_REJECTED = ["5.0", "0x10", "", "abc", " ", "1e3", "_1", "1__0", "seven"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test with both variables unset."""
    monkeypatch.delenv(ENABLE_ENV, raising=False)
    monkeypatch.delenv(MAX_SESSIONS_ENV, raising=False)


class TestResolveSessionStateConfig:
    def test_variable_names(self) -> None:
        """The two variables have the documented names."""
        assert ENABLE_ENV == "OMNI_DIFFUSION_SESSION_STATE_MANAGER"
        assert MAX_SESSIONS_ENV == "OMNI_DIFFUSION_SESSION_STATE_MANAGER_MAX_SESSIONS"

    @pytest.mark.parametrize(
        ("enable", "max_sessions", "expected"),
        [
            (None, None, (False, 64)),
            (True, None, (True, 64)),
            (False, 0, (False, 64)),
            (True, 5, (True, 5)),
            (None, 1, (False, 1)),
        ],
    )
    def test_unset_passes_arguments(
        self, enable: bool | None, max_sessions: int | None, expected: tuple[bool, int]
    ) -> None:
        """Without environment the arguments decide; None and 0 sessions give 64."""
        assert resolve_session_state_config(enable, max_sessions) == expected

    def test_defaults(self) -> None:
        """No arguments give (False, 64)."""
        assert resolve_session_state_config() == (False, 64)

    def test_result_types(self) -> None:
        """The result is exactly (bool(enable), int(max_sessions))."""
        enabled, sessions = resolve_session_state_config(1, 3)  # type: ignore[arg-type]
        assert (enabled, type(enabled), sessions, type(sessions)) == (True, bool, 3, int)

    @pytest.mark.parametrize("raw", _TRUE)
    @pytest.mark.parametrize("argument", [None, False, True])
    def test_true_spellings_win(
        self, monkeypatch: pytest.MonkeyPatch, raw: str, argument: bool | None
    ) -> None:
        """A recognised true value forces True over any argument."""
        monkeypatch.setenv(ENABLE_ENV, raw)
        assert resolve_session_state_config(argument, 3) == (True, 3)

    @pytest.mark.parametrize("raw", _FALSE)
    @pytest.mark.parametrize("argument", [None, False, True])
    def test_false_spellings_win(
        self, monkeypatch: pytest.MonkeyPatch, raw: str, argument: bool | None
    ) -> None:
        """A recognised false value forces False over any argument."""
        monkeypatch.setenv(ENABLE_ENV, raw)
        assert resolve_session_state_config(argument, 3) == (False, 3)

    @pytest.mark.parametrize("raw", _IGNORED_FLAGS)
    @pytest.mark.parametrize("argument", [False, True])
    def test_other_flags_ignored_silently(
        self,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
        raw: str,
        argument: bool,
    ) -> None:
        """Any other enable value, the empty string included, leaves the argument and logs nothing."""
        monkeypatch.setenv(ENABLE_ENV, raw)
        with caplog.at_level(logging.DEBUG):
            assert resolve_session_state_config(argument, None) == (argument, 64)
        assert caplog.records == []

    @pytest.mark.parametrize(("raw", "parsed"), _POSITIVE)
    @pytest.mark.parametrize("argument", [None, 0, 3, 2000])
    def test_positive_max_wins(
        self, monkeypatch: pytest.MonkeyPatch, raw: str, parsed: int, argument: int | None
    ) -> None:
        """A positive int() of the variable wins over the argument, larger or smaller."""
        monkeypatch.setenv(MAX_SESSIONS_ENV, raw)
        assert resolve_session_state_config(True, argument) == (True, parsed)

    @pytest.mark.parametrize("raw", _NOT_POSITIVE)
    @pytest.mark.parametrize(("argument", "expected"), [(None, 64), (0, 64), (3, 3)])
    def test_not_positive_max_ignored_silently(
        self,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
        raw: str,
        argument: int | None,
        expected: int,
    ) -> None:
        """Zero and negative values leave the argument and log nothing."""
        monkeypatch.setenv(MAX_SESSIONS_ENV, raw)
        with caplog.at_level(logging.DEBUG):
            assert resolve_session_state_config(None, argument) == (False, expected)
        assert caplog.records == []

    @pytest.mark.parametrize("raw", _REJECTED)
    @pytest.mark.parametrize(("argument", "expected"), [(None, 64), (9, 9)])
    def test_rejected_max_warns_once(
        self,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
        raw: str,
        argument: int | None,
        expected: int,
    ) -> None:
        """A value int() rejects logs exactly one warning showing it with %r, and is ignored."""
        monkeypatch.setenv(MAX_SESSIONS_ENV, raw)
        with caplog.at_level(logging.DEBUG):
            assert resolve_session_state_config(None, argument) == (False, expected)
        assert [(r.name, r.levelno) for r in caplog.records] == [
            ("sessionstate.reference.config", logging.WARNING)
        ]
        assert caplog.records[0].getMessage() == f"Ignoring non-integer {MAX_SESSIONS_ENV}={raw!r}."

    def test_both_variables(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The two variables apply independently in one call."""
        monkeypatch.setenv(ENABLE_ENV, "off")
        monkeypatch.setenv(MAX_SESSIONS_ENV, "2")
        assert resolve_session_state_config(True, 50) == (False, 2)

    def test_old_names_not_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The retired ..._SESSION_MEMORY_MANAGER variables have no effect."""
        monkeypatch.setenv("OMNI_DIFFUSION_SESSION_MEMORY_MANAGER", "1")
        monkeypatch.setenv("OMNI_DIFFUSION_SESSION_MEMORY_MANAGER_MAX_SESSIONS", "9")
        assert resolve_session_state_config() == (False, 64)
