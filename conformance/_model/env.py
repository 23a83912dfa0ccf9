"""The ENV oracle: how configuration resolves, written from SPEC.md ("ENV: configuration
resolution"), independent of any implementation.

``resolve_session_state_config(enable, max_sessions)`` reads two environment variables.
``ENABLE``, stripped and lower-cased, is a recognised flag (``TRUE`` or ``FALSE``
spellings, ENV-1) that overrides ``enable``, or anything else, ignored (ENV-2).
``MAX`` is parsed with ``int()``: a positive value overrides ``max_sessions`` (ENV-3),
any other number is ignored (ENV-4), and a value ``int()`` rejects is ignored with
exactly one warning (ENV-5). What is left unset defaults to ``(False, 64)`` (ENV-6).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "ENABLE",
    "FALSE",
    "LEGACY",
    "MAX",
    "TRUE",
    "oracle",
    "parsed_max",
    "recognised_flag",
]

ENABLE = "OMNI_DIFFUSION_SESSION_STATE_MANAGER"
MAX = "OMNI_DIFFUSION_SESSION_STATE_MANAGER_MAX_SESSIONS"
#: The old names, which have no effect (ENV-6).
LEGACY = (
    "OMNI_DIFFUSION_SESSION_MEMORY_MANAGER",
    "OMNI_DIFFUSION_SESSION_MEMORY_MANAGER_MAX_SESSIONS",
)
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
DEFAULT_MAX_SESSIONS = 64


def recognised_flag(env_enable: str | None) -> bool | None:
    """What ``ENABLE``'s value says (ENV-1), or ``None`` when unset or unrecognised (ENV-2)."""
    if env_enable is None:
        return None
    flag = env_enable.strip().lower()
    return True if flag in TRUE else False if flag in FALSE else None


def parsed_max(env_max: str) -> int | None:
    """``int(env_max)``, or ``None`` when ``int()`` rejects it (ENV-5)."""
    try:
        return int(env_max)
    except ValueError:
        return None


def oracle(
    env_enable: str | None, env_max: str | None, enable: bool | None, max_sessions: int | None
) -> tuple[tuple[bool, int], bool]:
    """(expected result, whether exactly one warning is expected)."""
    flag = recognised_flag(env_enable)
    enable = enable if flag is None else flag
    warn = False
    if env_max is not None:
        parsed = parsed_max(env_max)
        if parsed is None:
            warn = True
        else:
            max_sessions = parsed if parsed > 0 else max_sessions
    return (bool(enable), int(max_sessions or DEFAULT_MAX_SESSIONS)), warn
