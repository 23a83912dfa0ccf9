"""A fork by subject code never makes a second runner of the suite.

The suite runs its tests in one process (the supervisor's child, an xdist worker, a plain
pytest run). When subject code forks there (``os.fork``, multiprocessing's fork start
method), the copy is that process in the middle of a test: back from the subject's call it
would go on running the suite, recording and reporting into the same run, and fork again
at the next call (a factory that forked at every call made 1,011 processes in 110 s).

So while a test of the suite runs (``armed``), a forked copy gets a profile function
(``sys.setprofile``) that ends it (``os._exit(0)``, nothing flushed, nothing reported) the
moment control returns from subject code into the suite's own: until then it is the
subject's process, free to run a multiprocessing target, exec a helper or exit as it
likes. Forks outside a test (a tool's worker processes) are left alone.

Light (standard library only); ``install`` is called once per process by the plugin.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from sessionstate.conformance._harness.frames import SUITE, kind_of

__all__ = ["armed", "install"]

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


def _forked() -> None:
    if _STATE["armed"]:
        sys.setprofile(_leave_on_return_to_the_suite)


def _leave_on_return_to_the_suite(frame: FrameType, event: str, arg: Any) -> None:
    if event != "return":
        return
    caller = frame.f_back
    if caller is None:
        return
    if kind_of(caller.f_code.co_filename) == SUITE and kind_of(frame.f_code.co_filename) != SUITE:
        os._exit(0)
