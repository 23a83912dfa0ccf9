"""The deadline of threads a test starts itself (the LOCK checks), told blocked from slow.

``run_threads_within`` runs a test's workers, each in a daemon thread of its own, under
one deadline for all; the watchdog's timer watches only the main thread, so past the
deadline the threads left are watched here the same way: all sat still is ``Hang`` for
the test's clause, any still computing is waited for and then ``TooSlow``. ``InFlight``
names the call each thread is in.

Light (standard library only).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from sessionstate.conformance._harness.supervision.deadline import (
    BLOCKED_SECONDS,
    CONFIRM_FACTOR,
    DEFAULT_SECONDS,
    STILL_CPU_PER_TICK,
    TICK_SECONDS,
    Hang,
    TooSlow,
    load_factor,
)

__all__ = ["InFlight", "run_threads_within"]


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
    (one deadline for all), the threads left are watched: once every one of them has
    sat still (frame unmoved, no CPU) for ``BLOCKED_SECONDS``, ``Hang`` fails ``clause``
    naming the calls in progress; while any still computes they are waited for, up to
    ``CONFIRM_FACTOR`` deadlines times ``load_factor()``, and then ``TooSlow`` is
    raised: a loaded machine is not a deadlock. Blocked threads raise ``Hang`` for
    ``clause``: like a sequential call's hang, it ends the test at once, unshrunk (every
    replay of a deadlock would cost the deadline again). A stuck thread cannot be interrupted:
    it is abandoned (a daemon, it never blocks the interpreter's exit) and holds only
    the subject's own lock.
    """
    __tracebackhide__ = True
    seconds = DEFAULT_SECONDS if seconds is None else seconds
    confirm = max(seconds, CONFIRM_FACTOR * seconds * load_factor())
    barrier = threading.Barrier(len(workers))
    errors: list[tuple[str, BaseException]] = []

    def wrap(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                barrier.wait(confirm)  # starting threads on a loaded machine is slow too
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
    started = time.monotonic()
    _join_all(threads, seconds)
    if any(thread.is_alive() for thread in threads):
        _confirm_blocked(threads, started, confirm, inflight, min(seconds, BLOCKED_SECONDS))
    stuck = [thread.name for thread in threads if thread.is_alive()]
    if stuck:
        pending = "; ".join(inflight.pending()) or ", ".join(stuck)
        raise Hang(
            clause,
            pending,
            f"{pending} did not return within {float(seconds)} s (deadlock?) [{clause}]",
        )
    return errors


def _join_all(threads: Sequence[threading.Thread], seconds: float) -> None:
    # One deadline for the whole group, not ``seconds`` per thread.
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _confirm_blocked(
    threads: Sequence[threading.Thread],
    started: float,
    confirm: float,
    inflight: InFlight,
    needed: float,
) -> None:
    """Return once the threads left have all ended, or all sat still for ``needed``
    seconds (blocked: the caller fails the clause); ``TooSlow`` if any is still computing
    ``confirm`` seconds after ``started``."""
    __tracebackhide__ = True
    seen = _thread_states(threads)
    still_since = time.monotonic()
    while True:
        time.sleep(TICK_SECONDS)
        now = time.monotonic()
        if not any(thread.is_alive() for thread in threads):
            return
        states = _thread_states(threads)
        if _progressed(seen, states):
            still_since = now
        seen = states
        if now - still_since >= needed:
            return
        if now - started >= confirm:
            pending = "; ".join(inflight.pending()) or ", ".join(
                t.name for t in threads if t.is_alive()
            )
            raise TooSlow(
                pending,
                f"too slow to judge: {pending} still running after {now - started:.1f} s "
                f"(still computing, not blocked; load {load_factor():.1f}x the cores)",
            )


#: Per thread: (innermost frame, its instruction, the thread's CPU seconds).
_State = tuple[FrameType | None, int, float]


def _thread_states(threads: Sequence[threading.Thread]) -> dict[int, _State]:
    frames = sys._current_frames()
    states: dict[int, _State] = {}
    for thread in threads:
        if thread.ident is None or not thread.is_alive():
            continue
        frame = frames.get(thread.ident)
        states[thread.ident] = (frame, frame.f_lasti if frame else -1, _thread_cpu(thread))
    return states


def _progressed(before: dict[int, _State], after: dict[int, _State]) -> bool:
    """Whether any thread moved (another frame or instruction) or used CPU between two looks."""
    for ident, (frame, lasti, cpu) in after.items():
        old = before.get(ident)
        if old is None or old[0] is not frame or old[1] != lasti:
            return True
        if cpu - old[2] > STILL_CPU_PER_TICK:
            return True
    return False


def _thread_cpu(thread: threading.Thread) -> float:
    """The thread's CPU seconds; the process's where the platform cannot tell them apart."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
    except (AttributeError, OSError, OverflowError):
        return time.process_time()
