"""Errors a pipeline sees when the manager refuses or has lost a session."""

from __future__ import annotations

__all__ = ["SessionAdmissionError", "SessionStateLostError"]


class SessionAdmissionError(RuntimeError):
    """A new session was refused because the manager is full and may not evict."""

    def __init__(self, session_id: str, max_sessions: int) -> None:
        super().__init__(
            # ADMIT-1: always single quotes, as the contract words it, whatever the id holds.
            f"cannot admit session '{session_id}': {max_sessions} sessions are resident "
            "and evict_when_full=False (drop a finished session or raise_max_sessions())"
        )
        self.session_id = session_id
        self.max_sessions = max_sessions


class SessionStateLostError(RuntimeError):
    """A continuation found its session's state gone (evicted or dropped)."""
