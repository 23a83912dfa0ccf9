"""Instrumented locks and lock factories for the LOCK clauses.

The contract lets the owner inject the manager's lock (``lock_factory``) and
says the manager only ever uses it as ``with lock:`` (SPEC LOCK-1), enters it
for every table access (LOCK-2) and never re-enters it (LOCK-3). These locks
make that observable:

* ``CountingFactory`` counts how often the manager calls its factory.
* ``RecordingLock`` is a real mutex that supports *only* ``__enter__`` and
  ``__exit__`` (no ``acquire``/``release``/``locked`` attributes), counts
  enters and exits, and notices a thread entering it while it already holds
  it. ``threading.Lock`` would deadlock there; this lock records the
  re-entry and either raises ``LockReentered`` (``reentry="raise"``, for
  LOCK-3) or lets the holder through (``reentry="allow"``, so the checks of
  other clauses are not masked by a LOCK-3 bug).

For the concurrent clauses (LOCK-4, LOCK-5), three race amplifiers: the lock
can yield the GIL after each release, ``perturbed`` makes a thread yield at
random calls inside the subject, and ``fast_switching`` shortens the switch
interval. None changes what the subject computes, only when threads switch.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any, Literal

__all__ = [
    "CountingFactory",
    "LockReentered",
    "RecordingLock",
    "Reentry",
    "fast_switching",
    "perturbed",
]

#: Frames in files under the ``conformance`` package are the suite's (whatever name
#: pytest imported them by); this module is in its ``_machine``.
_SUITE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class LockReentered(RuntimeError):
    """The thread holding a ``RecordingLock`` tried to enter it again."""


@dataclass(frozen=True)
class Reentry:
    """One re-entry: the thread, and the subject functions on the stack, outermost first."""

    thread: str
    path: tuple[str, ...]

    def describe(self) -> str:
        """``"stats -> nbytes_by_device"``: how the subject got back into the lock."""
        return " -> ".join(self.path) or "(unknown caller)"


class CountingFactory:
    """A ``lock_factory`` that counts its calls; ``make`` builds each lock, kept in ``made``."""

    def __init__(self, make: Callable[[], Any] = threading.Lock) -> None:
        self._make = make
        self.made: list[Any] = []

    @property
    def calls(self) -> int:
        return len(self.made)

    def __call__(self) -> Any:
        lock = self._make()
        self.made.append(lock)
        return lock


class RecordingLock:
    """A non-reentrant mutex usable only as ``with lock:``, that records how it is used.

    ``enters``/``exits`` count every ``__enter__``/``__exit__`` (nested ones
    included); ``reentries`` lists each time the holding thread entered again.
    With ``yield_after_release=True`` the lock gives up the GIL right after each
    release, so other threads tend to run exactly between two of the
    subject's critical sections: the window a split check-then-act leaves
    open (SPEC LOCK-4, LOCK-5).
    """

    __slots__ = (
        "_depth",
        "_mutex",
        "_owner",
        "_reentry",
        "_yield",
        "enters",
        "exits",
        "reentries",
    )

    def __init__(
        self, *, reentry: Literal["raise", "allow"] = "raise", yield_after_release: bool = False
    ) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._reentry = reentry
        self._yield = yield_after_release
        self.enters = 0
        self.exits = 0
        self.reentries: list[Reentry] = []

    @classmethod
    def factory(
        cls, *, reentry: Literal["raise", "allow"] = "raise", yield_after_release: bool = False
    ) -> Callable[[], RecordingLock]:
        """A ``lock_factory`` building ``RecordingLock(reentry=..., yield_after_release=...)``."""
        return lambda: cls(reentry=reentry, yield_after_release=yield_after_release)

    @property
    def held(self) -> bool:
        """Whether some thread is inside the lock now."""
        return self._owner is not None

    def __enter__(self) -> None:
        me = threading.get_ident()
        if self._owner == me:
            self._record_reentry()
            self._depth += 1
            self.enters += 1
            return
        self._mutex.acquire()
        self._owner, self._depth = me, 1
        self.enters += 1

    def __exit__(self, *exc_info: object) -> None:
        if self._owner != threading.get_ident():
            raise RuntimeError("RecordingLock exited by a thread that does not hold it")
        self.exits += 1
        self._depth -= 1
        if self._depth:
            return
        self._owner = None
        self._mutex.release()
        if self._yield:
            time.sleep(0)

    def _record_reentry(self) -> None:
        entry = Reentry(threading.current_thread().name, _subject_path(sys._getframe(2)))
        self.reentries.append(entry)
        if self._reentry == "raise":
            raise LockReentered(
                f"the lock was entered again by the thread holding it, via {entry.describe()}"
            )


def _subject_path(frame: FrameType | None) -> tuple[str, ...]:
    # Walk out from the caller of __enter__ to the first suite frame: the
    # functions in between are the subject's route back into its own lock.
    names: list[str] = []
    while frame is not None and len(names) < 16:
        if os.path.abspath(frame.f_code.co_filename).startswith(_SUITE_DIR):
            break
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return tuple(reversed(names))


def perturbed(work: Callable[[], None], seed: str, probability: float) -> Callable[[], None]:
    """``work``, run with the GIL given up at random call boundaries of non-suite code.

    A tiny ``sys.setswitchinterval`` only *requests* a thread switch, and the
    waiting thread's timer fires every few tens of microseconds at best: too
    rarely to land in a check-then-act window a few bytecodes wide, in a
    subject that never enters a lock (the yielding lock cannot help there).
    A profile hook yields at a random ``probability`` of the subject's
    function calls (Python and C: ``dict.get``, ``SessionState()``), which is
    where such windows open and close (SPEC LOCK-4, LOCK-5).
    """

    def run() -> None:
        rnd = random.Random(seed)
        in_suite: dict[CodeType, bool] = {}

        def hook(frame: FrameType, event: str, arg: object) -> None:
            if event != "call" and event != "c_call":
                return
            code = frame.f_code
            if code not in in_suite:
                in_suite[code] = os.path.abspath(code.co_filename).startswith(_SUITE_DIR)
            if not in_suite[code] and rnd.random() < probability:
                time.sleep(0)

        before = sys.getprofile()
        sys.setprofile(hook)
        try:
            work()
        finally:
            sys.setprofile(before)

    return run


@contextmanager
def fast_switching(interval: float = 1e-6) -> Iterator[None]:
    """Ask for a thread switch every ``interval`` seconds; the old interval is restored."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(before)
