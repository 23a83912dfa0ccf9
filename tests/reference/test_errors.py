"""Unit tests of ``sessionstate.reference.errors`` (contract section 6)."""

from __future__ import annotations

import pytest

from sessionstate.reference import SessionAdmissionError, SessionStateLostError
from sessionstate.reference.errors import admission_refused


class TestSessionAdmissionError:
    def test_is_runtime_error(self) -> None:
        """The error subclasses RuntimeError so generic handlers still see it."""
        assert issubclass(SessionAdmissionError, RuntimeError)

    def test_message_and_fields(self) -> None:
        """The message is the one positional argument (upstream's signature); the
        structured fields are optional keywords, None when not given."""
        bare = SessionAdmissionError("cannot admit session 'x'")
        assert (str(bare), bare.args, bare.session_id, bare.max_sessions) == (
            "cannot admit session 'x'",
            ("cannot admit session 'x'",),
            None,
            None,
        )
        error = SessionAdmissionError("refused", session_id="x", max_sessions=2)
        assert (error.session_id, error.max_sessions) == ("x", 2)

    def test_positional_fields_are_refused(self) -> None:
        """``(session_id, max_sessions)`` by position was this package's own signature:
        refused now, so no caller's cap is silently taken for something else."""
        with pytest.raises(TypeError):
            SessionAdmissionError("x", 2)  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("key", "shown"),
        [("x", "'x'"), ("it's", '"it\'s"'), ("a\\b\tc", "'a\\\\b\\tc'"), ("café", "'café'")],
    )
    def test_refusal_shows_the_key_as_upstream_does(self, key: str, shown: str) -> None:
        """The manager's refusal reads ``cannot admit session {key!r}`` (ADMIT-1, #7302)."""
        error = admission_refused(key, 1)
        assert str(error) == (
            f"cannot admit session {shown}: 1 sessions are resident and evict_when_full=False "
            "(drop a finished session or raise_max_sessions())"
        )
        assert (error.session_id, error.max_sessions) == (key, 1)


class TestSessionStateLostError:
    def test_is_runtime_error(self) -> None:
        """A lost session is a RuntimeError with the caller's message."""
        error = SessionStateLostError("session 'a' was evicted")
        assert isinstance(error, RuntimeError)
        assert str(error) == "session 'a' was evicted"
