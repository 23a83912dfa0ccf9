"""A fork by subject code never makes a second runner of the suite.

The suite runs its tests in one process (the supervisor's child, an xdist worker, a plain
pytest run). When subject code forks there (``os.fork``, multiprocessing's fork start
method), the copy is that process in the middle of a test: back from the subject's call it
would go on running the suite, recording and reporting into the same run, and fork again
at the next call (a factory that forked at every call made 1,011 processes in 110 s).

So while a test of the suite runs (``armed``), a copy forked by subject code the suite
called (a subject frame inside a suite frame on the forking stack) gets a profile function
(``sys.setprofile``) that ends it (``os._exit(0)``, nothing flushed, nothing reported) the
moment control returns from subject code into the suite's own: until then it is the
subject's process, free to run a multiprocessing target, exec a helper or exit as it
likes. Forks outside a test (a tool's worker processes) are left alone. A HypoFuzz worker
of ``sessionstate fuzz`` runs the suite's tests outside pytest's call phase, and nothing
but them: it is armed for its whole life (``arm_for_good``).

Light (standard library only); ``install`` is called once per process by the plugin.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from sessionstate.conformance._harness.supervision.frames import SUBJECT, SUITE, kind_of

__all__ = ["arm_for_good", "armed", "install"]

_STATE = {"installed": False, "armed": 0}


def install() -> None:
    """Watch this process's forks (once; a no-op where ``os.register_at_fork`` is missing)."""
    if _STATE["installed"] or not hasattr(os, "register_at_fork"):
        return
    os.register_at_fork(after_in_child=_forked)
    _STATE["installed"] = True


@contextlib.contextmanager
def armed() -> Iterator[None]:
    """Inside: a fork is the subject's, and its copy never returns into the suite."""
    _STATE["armed"] += 1
    try:
        yield
    finally:
        _STATE["armed"] -= 1


def arm_for_good() -> None:
    """Watch forks and stay armed for the rest of this process: for a process that only
    runs the suite's tests (a HypoFuzz worker), where every fork is the subject's. Once."""
    install()
    if not _STATE.get("for_good"):
        _STATE["for_good"] = 1
        _STATE["armed"] += 1


def _forked() -> None:
    if _STATE["armed"] and _the_subjects(sys._getframe(1)):
        sys.setprofile(_leave_on_return_to_the_suite)


def _the_subjects(frame: FrameType | None) -> bool:
    """Whether the fork was made by subject code the suite called: walking out from the
    call that forked, a subject frame comes before a frame of the suite. A tool's own fork
    (HypoFuzz starting a worker from a process that loaded the profile) has no suite frame
    outside it, and its copy is left alone."""
    subject = False
    while frame is not None:
        kind = kind_of(frame.f_code.co_filename)
        if kind == SUITE:
            return subject
        subject = subject or kind == SUBJECT
        frame = frame.f_back
    return False


def _leave_on_return_to_the_suite(frame: FrameType, event: str, arg: Any) -> None:
    if event != "return":
        return
    caller = frame.f_back
    if caller is None:
        return
    if kind_of(caller.f_code.co_filename) == SUITE and kind_of(frame.f_code.co_filename) != SUITE:
        os._exit(0)
