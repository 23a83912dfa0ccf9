"""Run subject code under a deadline, so a deadlock fails a clause instead of hanging CI.

A subject that re-enters a non-reentrant lock (SPEC LOCK-3) or deadlocks its
own threads never returns. The suite therefore calls subject code in daemon
threads and waits a bounded time: a call still running at the deadline
becomes a ``ClauseFailure`` naming the clause and the call, e.g.
``stats() did not return within 5.0 s (deadlock?) [LOCK-3]``. The stuck
thread is a daemon, so it is abandoned (it cannot be killed) and never blocks
the interpreter's exit; it holds only the subject's own lock.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from .checks import check

__all__ = ["DEFAULT_SECONDS", "Abandoned", "InFlight", "call_within", "run_threads_within"]

T = TypeVar("T")

#: Generous for calls that take microseconds, short enough for CI; a slow
#: machine only ever makes a correct subject slower, never wrong.
DEFAULT_SECONDS = 5.0


class InFlight:
    """The subject call each thread is in, so a timeout can name what did not return."""

    def __init__(self) -> None:
        self._calls: dict[int, str] = {}
        self._names: dict[int, str] = {}

    @contextmanager
    def call(self, text: str) -> Iterator[None]:
        """Mark ``text`` (e.g. ``"stats()"``) as in progress on this thread."""
        me = threading.get_ident()
        self._names[me] = threading.current_thread().name
        self._calls[me] = text
        try:
            yield
        finally:
            del self._calls[me]

    def pending(self) -> list[str]:
        """``"<thread>: <call>"`` for every call still in progress."""
        return [f"{self._names[ident]}: {text}" for ident, text in sorted(self._calls.items())]


def _outcome_box(fn: Callable[[], T]) -> tuple[Callable[[], None], dict[str, object]]:
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as error:  # re-raised in the caller's thread
            box["error"] = error

    return target, box


class Abandoned(BaseException):
    """Raised into a call that ran past its deadline, to stop it (``interrupt=True``)."""


def call_within(
    clause: str,
    call: str,
    fn: Callable[[], T],
    seconds: float | None = None,
    *,
    why: str = " (deadlock?)",
    interrupt: bool = False,
) -> T:
    """``fn()`` run in a daemon thread: its result, or its exception re-raised here.

    If it has not returned after ``seconds`` (default ``DEFAULT_SECONDS``, read
    at call time), fail ``clause`` with ``"<call> did not return within
    <seconds> s<why>"``. With ``interrupt``, first raise ``Abandoned`` into the
    thread, so that a runaway computation (a walk that never ends) stops at its
    next bytecode instead of running on beside the suite; a thread blocked on a
    lock cannot be interrupted this way, which is why it is not the default.
    """
    __tracebackhide__ = True
    seconds = DEFAULT_SECONDS if seconds is None else seconds
    target, box = _outcome_box(fn)
    thread = threading.Thread(target=target, name=f"watchdog:{call}", daemon=True)
    thread.start()
    thread.join(seconds)
    if interrupt and thread.is_alive():
        ident = ctypes.c_ulong(thread.ident or 0)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ident, ctypes.py_object(Abandoned))
    check(not thread.is_alive(), clause, f"{call} did not return within {float(seconds)} s{why}")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def run_threads_within(
    clause: str,
    workers: Sequence[Callable[[], None]],
    inflight: InFlight,
    seconds: float | None = None,
    name: str = "thread",
) -> list[tuple[str, BaseException]]:
    """Run each worker in its own daemon thread, all released together by a barrier.

    Threads are named ``"<name> 0"``, ``"<name> 1"``, ...

    Returns ``(thread name, exception)`` for every worker that raised, so the
    caller can report what escaped. Workers mark their subject calls with
    ``inflight.call(...)``; if any thread is still running after ``seconds``
    (one deadline for all), ``clause`` fails naming the calls in progress.
    """
    __tracebackhide__ = True
    seconds = DEFAULT_SECONDS if seconds is None else seconds
    barrier = threading.Barrier(len(workers))
    errors: list[tuple[str, BaseException]] = []

    def wrap(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                barrier.wait(seconds)
                work()
            except BaseException as error:
                errors.append((threading.current_thread().name, error))

        return run

    threads = [
        threading.Thread(target=wrap(work), name=f"{name} {i}", daemon=True)
        for i, work in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    _join_all(threads, seconds)
    stuck = [thread.name for thread in threads if thread.is_alive()]
    check(
        not stuck,
        clause,
        f"{'; '.join(inflight.pending()) or ', '.join(stuck)} did not return within "
        f"{float(seconds)} s (deadlock?)",
    )
    return errors


def _join_all(threads: Sequence[threading.Thread], seconds: float) -> None:
    # One deadline for the whole group, not ``seconds`` per thread.
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
