"""Only the suite decides that a test is skipped, expected to fail or interrupted.

Subject code can raise pytest's own outcomes: ``pytest.skip`` (a helper that skips without
a GPU, ``pytest.importorskip`` on an optional path), ``pytest.xfail``, ``pytest.exit``, or
``KeyboardInterrupt`` with no signal behind it. Taken as they come, they would make a test
skipped or expected to fail (a CONFORMANT verdict forged by the code under test, worded as
the suite's own skips are, if it likes), end the run as if interrupted, or fail clauses.

So the suite tells its own outcomes from the subject's by identity, never by a message: it
raises them through ``mine`` (which marks the exception object), and a SIGINT reaching the
process raises a marked ``KeyboardInterrupt`` (``install_sigint``). Any other outcome
exception is the subject's (``foreign``): ``checks.calling`` turns one raised in a call it
watches into ``SubjectOutcome``, naming the call, and ``guard.Guard`` makes the test
skipped as not checked (its clauses UNCHECKED, the verdict incomplete, exit 3).

Light (standard library only): pytest's outcome classes are looked up in ``sys.modules``,
where they are whenever one can have been raised.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any, NoReturn, TypeVar

__all__ = [
    "SubjectOutcome",
    "foreign",
    "install_sigint",
    "mine",
    "skip",
]

_MARK = "_sessionstate_own_outcome"
E = TypeVar("E", bound=BaseException)


class SubjectOutcome(BaseException):
    """Subject code raised one of pytest's outcomes (or ``KeyboardInterrupt`` with no
    signal) in a call the suite made: the test is not checked to the end. A
    ``BaseException``, so that neither Hypothesis nor ``calling`` takes it for a failure."""


def mine(error: E) -> E:
    """Mark ``error`` as raised by the suite itself, and return it."""
    setattr(error, _MARK, True)
    return error


def skip(reason: str) -> NoReturn:
    """``pytest.skip(reason)``, marked as the suite's."""
    import pytest

    raise mine(pytest.skip.Exception(reason))


def foreign(error: BaseException) -> str | None:
    """What ``error`` is, as a call (``pytest.skip('...')``), when it is one of pytest's
    outcomes or a ``KeyboardInterrupt`` the suite did not raise; else ``None``."""
    if getattr(error, _MARK, False):
        return None
    if isinstance(error, KeyboardInterrupt):
        return "KeyboardInterrupt (no signal came)"
    outcomes: Any = sys.modules.get("_pytest.outcomes")
    if outcomes is None:
        return None
    message = str(getattr(error, "msg", None) or "")
    if isinstance(error, outcomes.Skipped):
        return f"pytest.skip({message!r})"
    if isinstance(error, outcomes.XFailed):
        return f"pytest.xfail({message!r})"
    if isinstance(error, outcomes.Exit):
        code = getattr(error, "returncode", None)
        return f"pytest.exit({message!r}, returncode={code!r})"
    return None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    raise mine(KeyboardInterrupt())


def install_sigint() -> None:
    """Have a SIGINT raise the suite's own ``KeyboardInterrupt``, where the default handler
    is in place (on the main thread: another handler is the caller's and stays)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
