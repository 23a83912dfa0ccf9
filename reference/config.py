"""``resolve_session_state_config``: config values, overridden by environment variables.

Precedence (SPEC ``ENV-*``): a *set and recognised* environment variable wins
over the value passed in, in both directions, so a deployed config can be
flipped for an A/B test without editing it. Unrecognised values are ignored.
"""

from __future__ import annotations

import logging
import os

__all__ = ["DEFAULT_MAX_SESSIONS", "ENABLE_ENV", "MAX_SESSIONS_ENV", "resolve_session_state_config"]

#: DreamZero's own session cap, so an adapted model evicts exactly as before.
DEFAULT_MAX_SESSIONS = 64

logger = logging.getLogger(__name__)

ENABLE_ENV = "OMNI_DIFFUSION_SESSION_STATE_MANAGER"
MAX_SESSIONS_ENV = "OMNI_DIFFUSION_SESSION_STATE_MANAGER_MAX_SESSIONS"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def resolve_session_state_config(
    enable: bool | None = None, max_sessions: int | None = None
) -> tuple[bool, int]:
    """Return ``(enabled, max_sessions)`` after applying the environment.

    * ``OMNI_DIFFUSION_SESSION_STATE_MANAGER``: stripped, lower-cased;
      ``1/true/yes/on`` force True, ``0/false/no/off`` force False; any other
      value (the empty string too) is ignored silently.
    * ``OMNI_DIFFUSION_SESSION_STATE_MANAGER_MAX_SESSIONS``: parsed with
      ``int()`` (whitespace, a sign, underscores allowed); a positive value
      wins; zero or negative is ignored silently; a value ``int()`` rejects is
      ignored with one warning showing it with ``%r``.
    * ``None`` or ``0`` for ``max_sessions`` means the default, 64.
    """
    raw_enable = os.environ.get(ENABLE_ENV)
    if raw_enable is not None:
        flag = raw_enable.strip().lower()
        # ENV-1: a recognised value wins over the argument, both ways; ENV-2: any
        # other value falls through, silently.
        if flag in _TRUE:
            enable = True
        elif flag in _FALSE:
            enable = False
    raw_max = os.environ.get(MAX_SESSIONS_ENV)
    if raw_max is not None:
        try:
            parsed = int(raw_max)  # ENV-3: int() accepts " 7 ", "+5" and "1_000"
        except ValueError:
            # ENV-5: one warning, the raw value quoted with %r; the argument stands.
            logger.warning("Ignoring non-integer %s=%r.", MAX_SESSIONS_ENV, raw_max)
        else:
            if parsed > 0:  # ENV-3, ENV-4: only a positive value wins; others are ignored
                max_sessions = parsed
    return bool(enable), int(max_sessions or DEFAULT_MAX_SESSIONS)  # ENV-6: None and 0 give 64
