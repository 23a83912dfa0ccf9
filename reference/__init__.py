"""The reference session state manager: correct, typed, and stricter than upstream
where upstream is wrong (see ``sessionstate.conformance`` SPEC.md)."""

from .accounting import SeenStorages, device_bytes, merge_bytes
from .attrs import SessionAttr
from .base import StateObject
from .config import resolve_session_state_config
from .errors import SessionAdmissionError, SessionStateLostError
from .manager import DEFAULT_MAX_SESSIONS, SessionStateManager
from .objects import EncodeOnceKV, FixedState, LatentBuffer
from .session import SessionState

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "EncodeOnceKV",
    "FixedState",
    "LatentBuffer",
    "SeenStorages",
    "SessionAdmissionError",
    "SessionAttr",
    "SessionState",
    "SessionStateLostError",
    "SessionStateManager",
    "StateObject",
    "device_bytes",
    "merge_bytes",
    "resolve_session_state_config",
]
