"""Errors a pipeline sees when the manager refuses or has lost a session.

Both take the message as their one positional argument, as upstream's do (vllm-omni
#7302: code raising ``SessionAdmissionError(f"cannot admit ... {sid!r}")`` runs here),
so both survive a pickle round-trip (a worker process hands them to its parent).
"""

from __future__ import annotations

__all__ = ["SessionAdmissionError", "SessionStateLostError", "admission_refused"]


class SessionAdmissionError(RuntimeError):
    """A new session was refused because the manager is full and may not evict.

    ``SessionAdmissionError(message)``; the manager also sets the optional keywords
    ``session_id`` (the normalised key refused) and ``max_sessions`` (the cap in force),
    ``None`` when the raiser gave none.
    """

    def __init__(
        self, message: str, *, session_id: str | None = None, max_sessions: int | None = None
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.max_sessions = max_sessions


class SessionStateLostError(RuntimeError):
    """A continuation found its session's state gone (evicted or dropped)."""


def admission_refused(key: str, max_sessions: int) -> SessionAdmissionError:
    """The manager's refusal of ``key`` at ``max_sessions``, worded as upstream words it."""
    return SessionAdmissionError(
        # ADMIT-1: `cannot admit session {key!r}`, upstream's form, whatever the id holds.
        f"cannot admit session {key!r}: {max_sessions} sessions are resident "
        "and evict_when_full=False (drop a finished session or raise_max_sessions())",
        session_id=key,
        max_sessions=max_sessions,
    )
