"""Bound every call into subject code, so a deadlock fails a clause instead of hanging CI.

A subject that re-enters a non-reentrant lock (SPEC LOCK-3) never returns. One
mechanism bounds every call the suite makes into subject code: ``Watchdog``, a
sampling timer the plugin arms around each conformance test's call phase. Every
``tick`` seconds ``SIGALRM`` interrupts the main thread; the handler finds the
outermost frame of subject code on the interrupted stack (code that is neither
the suite's, the standard library's nor the test machinery's) and, once the same
frame has been there for ``seconds``, raises ``Hang`` from the handler::

    stats() did not return within 5.0 s (deadlock?) [LOCK-3: StatsReentrantManager.stats,
    called at conformance/_machine/manager.py:297]

A thread blocked in ``threading.Lock.acquire()`` wakes up to run the handler,
so the exception unwinds the subject's own frames: its ``with lock:`` blocks
exit and release the lock, and the next test starts from a clean state. ``Hang``
is a ``BaseException``: Hypothesis neither shrinks nor replays an example that
raised it (each attempt would cost another deadline), and ``except Exception``
in subject or suite code does not swallow it. Where no ``SIGALRM`` exists (Windows),
off the main thread, or when something else owns ``SIGALRM``, calls are unbounded
and the report header says so (``unavailable``).

The timer cannot interrupt C code that holds the GIL (an extension spinning
without returning to the interpreter): the handler runs at the next bytecode.

``run_threads_within`` bounds the multi-threaded LOCK checks: there the subject
runs in threads of the test's own, which the timer does not watch.
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType, TracebackType
from typing import Any

from sessionstate.conformance.checks import check

__all__ = [
    "DEFAULT_SECONDS",
    "REPEAT_SECONDS",
    "TICK_SECONDS",
    "TIMEOUT_ENV",
    "Hang",
    "InFlight",
    "Watchdog",
    "blame",
    "deadline_from",
    "run_threads_within",
    "unavailable",
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


def unavailable() -> str | None:
    """Why a ``Watchdog`` armed here and now would not bound anything, or ``None``."""
    if not hasattr(signal, "SIGALRM") or not hasattr(signal, "setitimer"):
        return "no SIGALRM on this platform"
    if threading.current_thread() is not threading.main_thread():
        return "tests run off the main thread"
    handler = signal.getsignal(signal.SIGALRM)
    if handler not in (signal.SIG_DFL, signal.SIG_IGN, None) and not _ours(handler):
        return f"SIGALRM is handled by {getattr(handler, '__qualname__', handler)!r}"
    return None


def _ours(handler: object) -> bool:
    return isinstance(getattr(handler, "__self__", None), Watchdog)


@dataclass(frozen=True)
class _Blame:
    clause: str
    call: str | None
    why: str


_DEFAULT_BLAME = _Blame("LOCK-3", None, " (deadlock?)")
_blamed: list[_Blame] = []  # innermost last; only the main thread's blocks count


@contextmanager
def blame(clause: str, call: str | None = None, why: str = " (deadlock?)") -> Iterator[None]:
    """A hang inside this block fails ``clause`` and names ``call`` (default: the function
    the watchdog found stuck) with ``why`` after the deadline; outside any block a hang
    fails LOCK-3, "with lock_factory=threading.Lock every method returns"."""
    if threading.current_thread() is not threading.main_thread():
        yield  # the watchdog only ever interrupts the main thread
        return
    _blamed.append(_Blame(clause, call, why))
    try:
        yield
    finally:
        _blamed.pop()


# Which code is the subject's ------------------------------------------------------

_SUITE, _NEUTRAL, _SUBJECT = 0, 1, 2

#: The installed ``conformance`` package (this module is in its ``_harness``).
_CONFORMANCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Paths are shown relative to this: ``conformance/_machine/manager.py`` installed or not.
_SHOWN_FROM = os.path.dirname(_CONFORMANCE_DIR) + os.sep
#: The top-level package's own modules (the command line), not its subpackages.
_TOP_DIR = os.path.dirname(os.path.abspath(sys.modules[__name__.split(".")[0]].__file__ or ""))
#: Libraries the suite runs on or calls itself: their frames are never the subject's call.
#: (Subject code calling into them stays inside the subject's outermost frame anyway.)
_LIBRARIES = (
    "_pytest", "pytest", "pluggy", "xdist", "execnet", "hypothesis", "_hypothesis_pytestplugin",
    "_hypothesis_globals", "_hypothesis_ftz_detector", "sortedcontainers", "attr", "coverage",
    "iniconfig", "packaging", "typing_extensions", "exceptiongroup", "torch", "numpy",
    # torch's own dependencies, which it imports lazily: the first jagged nested tensor
    # imports torch.distributed.tensor and with it sympy (seconds on a loaded machine).
    "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "filelock", "fsspec",
)  # fmt: skip
_kinds: dict[str, int] = {}


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")})


_STDLIB = _stdlib_dirs()


def _library_roots() -> Iterator[str]:
    for name in _LIBRARIES:
        module = sys.modules.get(name)  # a library's frame runs only once it is imported
        path = getattr(module, "__file__", None)
        if path:
            path = os.path.abspath(path)
            is_package = os.path.basename(path).startswith("__init__.")
            yield os.path.dirname(path) + os.sep if is_package else path


def _kind_of(filename: str) -> int:
    kind = _kinds.get(filename)
    if kind is None:
        kind = _kinds[filename] = _classify(filename)
    return kind


def _classify(filename: str) -> int:
    if filename.startswith("<"):
        return _NEUTRAL  # <frozen importlib._bootstrap>, exec'd strings
    path = os.path.abspath(filename)
    if path.startswith(_CONFORMANCE_DIR + os.sep):
        return _SUITE
    if os.path.dirname(path) == _TOP_DIR and os.path.basename(path) != "__init__.py":
        return _SUITE  # the command line (sessionstate/cli.py); reference/ and fixtures/ are not
    for root in _STDLIB:
        rest = path[len(root) :].split(os.sep) if path.startswith(root) else None
        if rest is not None and "site-packages" not in rest and "dist-packages" not in rest:
            return _NEUTRAL
    for root in _library_roots():
        if path == root or (root.endswith(os.sep) and path.startswith(root)):
            return _NEUTRAL
    return _SUBJECT


def _where(frame: FrameType) -> str:
    path = os.path.abspath(frame.f_code.co_filename)
    shown = path[len(_SHOWN_FROM) :] if path.startswith(_SHOWN_FROM) else os.path.basename(path)
    return f"{shown.replace(os.sep, '/')}:{frame.f_lineno}"


#: Code of the subject functions that hung in this process (see ``REPEAT_SECONDS``).
_hung: set[CodeType] = set()


# The watchdog ------------------------------------------------------------------------


class Watchdog:
    """While entered (``with Watchdog(seconds):``), no call into subject code made inside
    the block runs longer than ``seconds`` (default ``DEFAULT_SECONDS``, read at entry):
    the first that does gets ``Hang`` raised into it, kept as ``fired``.

    Frames already on the stack when the block is entered (the test runner, or a test
    of the suite's own that enters it) never count as subject code. Entered where
    ``unavailable()`` names a reason, it does nothing (``active`` is false). After a
    hang, further calls in the same block get one tick each: the block has failed,
    and its remaining calls must not cost a deadline apiece.
    """

    def __init__(self, seconds: float | None = None, tick: float = TICK_SECONDS) -> None:
        self.seconds = DEFAULT_SECONDS if seconds is None else seconds
        self.tick = min(tick, self.seconds)
        self.active = False
        self.fired: Hang | None = None
        self._outer: set[int] = set()
        self._watched: tuple[FrameType, float] | None = None
        self._previous: tuple[Any, tuple[float, float]] | None = None

    def __enter__(self) -> Watchdog:
        if unavailable() is not None:
            return self
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            self._outer.add(id(frame))  # alive for as long as the block: they enclose it
            frame = frame.f_back
        timer = signal.getitimer(signal.ITIMER_REAL)
        self._previous = (signal.signal(signal.SIGALRM, self._on_tick), timer)
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, self.tick, self.tick)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self.active:
            return
        self.active = False
        handler, timer = self._previous  # type: ignore[misc]
        signal.setitimer(signal.ITIMER_REAL, 0)  # first: no tick after the handler is gone
        signal.signal(signal.SIGALRM, handler)
        if timer != (0.0, 0.0):
            signal.setitimer(signal.ITIMER_REAL, *timer)  # an enclosing watchdog's
        self._outer.clear()
        self._watched = None

    def _on_tick(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # the report shows where the subject was, not this handler
        if not self.active:
            return
        call = None  # the outermost subject frame below the block
        while frame is not None and id(frame) not in self._outer:
            if _kind_of(frame.f_code.co_filename) == _SUBJECT:
                call = frame
            frame = frame.f_back
        if call is None or frame is None:  # no subject code running; or not in the block
            self._watched = None
            return
        now = time.monotonic()
        if self._watched is None or self._watched[0] is not call:
            self._watched = (call, now)
            return
        if self.fired is not None:
            limit, note = self.tick, ""  # the block failed: its other calls get one tick
        elif call.f_code in _hung:
            limit, note = min(self.seconds, REPEAT_SECONDS), "; it hung before"
        else:
            limit, note = self.seconds, ""
        if now - self._watched[1] >= limit - 1e-3:  # ticks are not exact
            hang = self._hang(call, limit, note)
            _hung.add(call.f_code)
            self.fired = self.fired or hang
            raise hang

    def _hang(self, frame: FrameType, limit: float, note: str) -> Hang:
        found = _blamed[-1] if _blamed else _DEFAULT_BLAME
        code = frame.f_code
        call = found.call or f"{code.co_name}()"
        where = note
        if found.call is None:  # name the function and the suite's line that called it
            caller = frame.f_back
            while caller is not None and _kind_of(caller.f_code.co_filename) != _SUITE:
                if id(caller) in self._outer:
                    break  # called straight from the code that entered the block
                caller = caller.f_back
            caller = caller or frame.f_back
            called = f", called at {_where(caller)}" if caller is not None else ""
            where = f": {getattr(code, 'co_qualname', code.co_name)}{called}{note}"
        elif note:
            where = f":{note[1:]}"
        message = (
            f"{call} did not return within {float(limit)} s{found.why} [{found.clause}{where}]"
        )
        return Hang(found.clause, call, message)


# Threads of the test's own: LOCK-4 and LOCK-5 ----------------------------------------


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
    (one deadline for all), ``clause`` fails naming the calls in progress. A
    stuck thread cannot be interrupted: it is abandoned (a daemon, it never
    blocks the interpreter's exit) and holds only the subject's own lock.
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
