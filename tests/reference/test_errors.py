"""Unit tests of ``sessionstate.reference.errors`` (contract section 6)."""

from __future__ import annotations

import pytest

from sessionstate.reference import SessionAdmissionError, SessionStateLostError


class TestSessionAdmissionError:
    def test_is_runtime_error(self) -> None:
        """The error subclasses RuntimeError so generic handlers still see it."""
        assert issubclass(SessionAdmissionError, RuntimeError)

    def test_message_and_fields(self) -> None:
        """The message names the session and cap; both are kept as attributes."""
        error = SessionAdmissionError("x", 2)
        assert (error.session_id, error.max_sessions) == ("x", 2)
        assert str(error) == (
            "cannot admit session 'x': 2 sessions are resident and evict_when_full=False "
            "(drop a finished session or raise_max_sessions())"
        )

    def test_id_always_in_single_quotes(self) -> None:
        """The id appears as "cannot admit session '<id>'" even when it holds a quote."""
        with pytest.raises(RuntimeError, match=r"^cannot admit session 'it's': 1 ") as caught:
            raise SessionAdmissionError("it's", 1)
        assert isinstance(caught.value, SessionAdmissionError)


class TestSessionStateLostError:
    def test_is_runtime_error(self) -> None:
        """A lost session is a RuntimeError with the caller's message."""
        error = SessionStateLostError("session 'a' was evicted")
        assert isinstance(error, RuntimeError)
        assert str(error) == "session 'a' was evicted"
