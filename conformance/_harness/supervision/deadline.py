"""What bounds one call into subject code, and what a call past it is (``watchdog``).

The numbers: a call's deadline (``DEFAULT_SECONDS``, ``SESSIONSTATE_CALL_TIMEOUT``), the
tick the watchdog samples the stack at, how long a call must sit still to read as blocked,
how long a call still computing is waited for (``CONFIRM_FACTOR`` deadlines times
``load_factor()``), and how long a call of a function found too slow may run before it is
cut (``SLOW_CALL_SECONDS``). The verdicts: ``Hang`` (a clause failed: the call waits and
never returns), ``TooSlow`` and ``OutOfTime`` (no clause failed: too slow to judge).
All three are ``BaseException``: Hypothesis neither shrinks nor replays an example that
raised one, and ``except Exception`` in subject or suite code does not swallow it. Which
clause a hang fails: LOCK-3, or the clause of the innermost ``blame`` block.

Light (standard library only).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = [
    "BLOCKED_SECONDS",
    "CONFIRM_FACTOR",
    "DEFAULT_BLAME",
    "DEFAULT_SECONDS",
    "REPEAT_SECONDS",
    "SLOW_CALL_SECONDS",
    "STILL_CPU_PER_TICK",
    "TICK_SECONDS",
    "TIMEOUT_ENV",
    "Blame",
    "Hang",
    "OutOfTime",
    "TooSlow",
    "blame",
    "blamed",
    "deadline_from",
    "load_factor",
]

#: Generous for calls that take microseconds, short enough for CI; a slow
#: machine only ever makes a correct subject slower, never wrong.
DEFAULT_SECONDS = 5.0
#: How often the watchdog looks at the stack: a hang is reported at most one tick late.
TICK_SECONDS = 0.25
#: Overrides ``DEFAULT_SECONDS``; ``0`` turns the watchdog off (e.g. to step through a debugger).
TIMEOUT_ENV = "SESSIONSTATE_CALL_TIMEOUT"
#: The deadline of a function that already hung in this process: a deadlock on
#: ``threading.Lock`` is deterministic, and every machine test that calls it would
#: otherwise cost the full deadline again.
REPEAT_SECONDS = 1.0
#: How long a call must sit still (its frame unmoved, the process using no CPU) before a
#: deadline reads it as blocked; never more than the deadline itself.
BLOCKED_SECONDS = 2.0
#: CPU seconds the process may use per tick and still count as still: the handler's own
#: cost is tens of microseconds; a computing thread gets milliseconds per tick even at a
#: load of a hundred per core.
STILL_CPU_PER_TICK = 0.005
#: The confirmation bound, in deadlines (times ``load_factor()``): how long a call that is
#: still computing is waited for before it is "too slow to judge".
CONFIRM_FACTOR = 6.0
#: A call this long in a test that ended too slow to judge marks its function slow for the
#: rest of the process: each later call of it that runs this long is cut then, so a subject
#: whose calls take seconds gets its verdict in seconds a test, not in each test's whole
#: share of the run's bound. Not scaled by the load: a call that takes this long has cost
#: a test its verdict once, and cutting it only ever leaves a clause unchecked, never failed.
SLOW_CALL_SECONDS = 1.0


class TooSlow(BaseException):
    """A call into subject code (or a test's threads) kept running, not blocked, past the
    confirmation bound: no clause is shown broken, and none was checked to the end.

    ``call`` names the call, e.g. ``"stats()"``; the message says what was seen. A
    ``BaseException`` for the reasons ``Hang`` is one.
    """

    def __init__(self, call: str, message: str) -> None:
        super().__init__(message)
        self.call = call


class OutOfTime(TooSlow):
    """A test's budget (its share of the run's bound) ran out with subject code running."""


def load_factor() -> float:
    """How much slower than an idle machine a call may run here now: the 1-minute load
    average per usable core, at least 1 (1 where the platform has no load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1.0, load / max(1, cores or 1))


class Hang(BaseException):
    """A call into subject code ran past its deadline; raised into it by ``Watchdog``.

    ``clause`` is the clause the hang breaks (LOCK-3 unless a ``blame`` block
    says otherwise) and ``call`` the call that did not return, e.g. ``"stats()"``.
    """

    def __init__(self, clause: str, call: str, message: str) -> None:
        super().__init__(message)
        self.clause = clause
        self.call = call


def deadline_from(value: str | None) -> float | None:
    """The per-call deadline a setting asks for: unset or empty gives ``DEFAULT_SECONDS``
    (read now), ``0`` gives ``None`` (unbounded); ``ValueError`` for anything else
    that is not a non-negative number of seconds."""
    if value is None or not value.strip():
        return DEFAULT_SECONDS
    seconds = float(value)
    if not seconds >= 0 or seconds == float("inf"):  # NaN compares false
        raise ValueError(f"{value!r} is not a number of seconds >= 0")
    return seconds or None


# Which clause a hang fails ------------------------------------------------------------


@dataclass(frozen=True)
class Blame:
    """A clause a hang fails, the call it names, and why (``blame``)."""

    clause: str
    call: str | None
    why: str


DEFAULT_BLAME = Blame("LOCK-3", None, " (deadlock?)")
_blamed: list[Blame] = []  # innermost last; only the main thread's blocks count


@contextmanager
def blame(clause: str, call: str | None = None, why: str = " (deadlock?)") -> Iterator[None]:
    """A hang inside this block fails ``clause`` and names ``call`` (default: the function
    the watchdog found stuck) with ``why`` after the deadline; so does a call still running
    after the deadline times ``load_factor()``, since the block's clause is that the call
    ends (a loaded machine slows a call that ends, so the deadline is scaled). Outside any
    block a blocked call fails LOCK-3, "with lock_factory=threading.Lock every method
    returns", and one still running at the confirmation bound is ``TooSlow``."""
    if threading.current_thread() is not threading.main_thread():
        yield  # the watchdog only ever interrupts the main thread
        return
    _blamed.append(Blame(clause, call, why))
    try:
        yield
    finally:
        _blamed.pop()


def blamed() -> Blame | None:
    """The innermost ``blame`` block the main thread is in, or ``None``."""
    return _blamed[-1] if _blamed else None
