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

Slowness is not a deadlock. Past the deadline the watchdog raises ``Hang`` only when the
evidence is a thread that waits: the interrupted frame has not moved and the process has
used no CPU for ``BLOCKED_SECONDS`` (on Linux, also that the thread waits on a lock: its
wait channel is a futex). A call that is still computing (its frame moves, or the process
uses CPU: a loaded machine, a slow subject) is waited for up to the confirmation bound
(``CONFIRM_FACTOR`` times the deadline, times the machine's load per core, ``load_factor``);
one that returns by then is no failure at all, one still running then gets ``TooSlow``
raised into it: the test is "too slow to judge", its clauses unchecked, never failed. Inside
a ``blame`` block (a clause whose rule is that the call ends, e.g. ACCT-14's walk of an
endless sequence) a call still running at the deadline times ``load_factor()`` fails the
block's clause.

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
runs in threads of the test's own, which the timer does not watch; past its deadline it
tells blocked threads (``Hang``, for the test's clause) from threads still running
(waited for, then ``TooSlow``) the same way.

A test may also have a budget (``Watchdog(budget=...)``: its share of the run's bound,
``bounds.run_bound``): once it is spent, the next tick in subject code raises ``OutOfTime``
(a ``TooSlow``), naming the call in flight and the subject function most often seen running.
"""

from __future__ import annotations

import os
import platform
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Any

from sessionstate.conformance._harness.frames import CONFORMANCE_DIR, SUBJECT, SUITE, kind_of

__all__ = [
    "BLOCKED_SECONDS",
    "CONFIRM_FACTOR",
    "DEFAULT_SECONDS",
    "REPEAT_SECONDS",
    "TICK_SECONDS",
    "TIMEOUT_ENV",
    "Hang",
    "InFlight",
    "OutOfTime",
    "TooSlow",
    "Watchdog",
    "blame",
    "deadline_from",
    "load_factor",
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
    the watchdog found stuck) with ``why`` after the deadline; so does a call still running
    after the deadline times ``load_factor()``, since the block's clause is that the call
    ends (a loaded machine slows a call that ends, so the deadline is scaled). Outside any
    block a blocked call fails LOCK-3, "with lock_factory=threading.Lock every method
    returns", and one still running at the confirmation bound is ``TooSlow``."""
    if threading.current_thread() is not threading.main_thread():
        yield  # the watchdog only ever interrupts the main thread
        return
    _blamed.append(_Blame(clause, call, why))
    try:
        yield
    finally:
        _blamed.pop()


# Which code is the subject's ------------------------------------------------------

#: Paths are shown relative to this: ``conformance/_machine/manager.py`` installed or not.
_SHOWN_FROM = os.path.dirname(CONFORMANCE_DIR) + os.sep


def _where(frame: FrameType) -> str:
    path = os.path.abspath(frame.f_code.co_filename)
    shown = path[len(_SHOWN_FROM) :] if path.startswith(_SHOWN_FROM) else os.path.basename(path)
    return f"{shown.replace(os.sep, '/')}:{frame.f_lineno}"


#: Code of the subject functions that hung in this process (see ``REPEAT_SECONDS``).
_hung: set[CodeType] = set()


# The watchdog ------------------------------------------------------------------------


#: Code of the subject functions judged too slow in this process: the next call of one
#: is "too slow to judge" at the deadline, not at the confirmation bound.
_slow: set[CodeType] = set()


@dataclass
class _Watched:
    """What the ticks have seen of the subject call in flight."""

    call: FrameType
    started: float
    #: The innermost frame and its instruction at the last tick (has it moved?).
    inner: FrameType
    lasti: int
    #: The process's CPU time and the time at the last tick.
    cpu: float
    seen: float
    #: Since when the call has sat still (frame unmoved, no CPU).
    still_since: float
    #: The main thread's wait channel, as the probe last read it (``None``: not yet), and
    #: since when every read has found it waiting on a futex (``None``: the last did not).
    channel: str | None = None
    futex_since: float | None = None
    asked: bool = False


class Watchdog:
    """While entered (``with Watchdog(seconds):``), no call into subject code made inside
    the block stays blocked longer than ``seconds`` (default ``DEFAULT_SECONDS``, read at
    entry): the first that does gets ``Hang`` raised into it, kept as ``fired``. A call
    still computing is waited for up to ``confirm`` seconds (default: ``CONFIRM_FACTOR``
    deadlines times ``load_factor()`` at entry), then gets ``TooSlow`` (kept as ``slow``),
    or ``Hang`` inside a ``blame`` block. With ``budget`` (seconds from entry), the first
    tick in subject code after it raises ``OutOfTime``.

    Frames already on the stack when the block is entered (the test runner, or a test
    of the suite's own that enters it) never count as subject code. Entered where
    ``unavailable()`` names a reason, it does nothing (``active`` is false). After a
    hang, further calls in the same block get one tick each: the block has failed,
    and its remaining calls must not cost a deadline apiece.
    """

    def __init__(
        self,
        seconds: float | None = None,
        tick: float = TICK_SECONDS,
        confirm: float | None = None,
        budget: float | None = None,
    ) -> None:
        self.seconds = DEFAULT_SECONDS if seconds is None else seconds
        self.tick = min(tick, self.seconds)
        self.confirm = confirm
        self.budget = budget
        self.active = False
        self.fired: Hang | None = None
        self.slow: TooSlow | None = None
        #: Set once the test has seen a failure: its budget no longer stops it, so the
        #: failure is shrunk and reported (the test's own bound still holds).
        self.failing = False
        #: Ticks that found each subject function outermost (a sampling profile).
        self.samples: dict[str, int] = {}
        self._outer: set[int] = set()
        self._watched: _Watched | None = None
        self._previous: tuple[Any, tuple[float, float]] | None = None
        self._entered = 0.0
        self.load = 1.0

    def __enter__(self) -> Watchdog:
        if unavailable() is not None:
            return self
        self.load = load_factor()
        if self.confirm is None:
            self.confirm = max(self.seconds, CONFIRM_FACTOR * self.seconds * self.load)
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            self._outer.add(id(frame))  # alive for as long as the block: they enclose it
            frame = frame.f_back
        _Probe.start()
        timer = signal.getitimer(signal.ITIMER_REAL)
        self._previous = (signal.signal(signal.SIGALRM, self._on_tick), timer)
        self.active = True
        self._entered = time.monotonic()
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

    def busiest(self) -> str:
        """The subject function most ticks found running (``""``: none), e.g.
        ``"stats() (62 % of 40 samples)"``."""
        if not self.samples:
            return ""
        name, count = max(self.samples.items(), key=lambda item: item[1])
        total = sum(self.samples.values())
        return f"{name} ({count * 100 // total} % of {total} samples)"

    def _on_tick(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # the report shows where the subject was, not this handler
        if not self.active:
            return
        inner = frame
        call = None  # the outermost subject frame below the block
        while frame is not None and id(frame) not in self._outer:
            if kind_of(frame.f_code.co_filename) == SUBJECT:
                call = frame
            frame = frame.f_back
        if call is None or frame is None or inner is None:  # no subject code; not in the block
            self._watched = None
            return
        name = f"{call.f_code.co_name}()"
        self.samples[name] = self.samples.get(name, 0) + 1
        now, cpu = time.monotonic(), time.process_time()
        spent = self.budget is not None and now - self._entered > self.budget
        if spent and self.slow is None and not self.failing:
            self.slow = OutOfTime(name, self._out_of_time(call, now))
            raise self.slow
        watched = self._watched
        if watched is None or watched.call is not call:
            self._watched = _Watched(call, now, inner, inner.f_lasti, cpu, now, now)
            return
        self._observe(watched, inner, now, cpu)
        verdict = self._judge(watched, now)
        if verdict is not None:
            raise verdict

    def _observe(self, watched: _Watched, inner: FrameType, now: float, cpu: float) -> None:
        """Update what the ticks have seen: has the call moved, or used CPU, since the last?"""
        gap = now - watched.seen
        # A tight loop is interrupted at the same instruction every time, so only the CPU
        # used (by every thread: a helper the call waits for counts) tells it from a wait.
        busy = cpu - watched.cpu > STILL_CPU_PER_TICK * max(1.0, gap / self.tick)
        if busy:
            watched.still_since = now
        watched.inner, watched.lasti, watched.cpu, watched.seen = inner, inner.f_lasti, cpu, now
        if not watched.asked:
            watched.asked = True
            _Probe.ask(watched)  # read the wait channel while this thread waits again

    def _blocked_needed(self, watched: _Watched) -> float:
        return min(self._deadline(watched), BLOCKED_SECONDS)

    def _deadline(self, watched: _Watched) -> float:
        if self.fired is not None or self.slow is not None:
            return self.tick  # the block failed: its other calls get one tick
        if watched.call.f_code in _hung:
            return min(self.seconds, REPEAT_SECONDS)
        return self.seconds

    def _judge(self, watched: _Watched, now: float) -> BaseException | None:
        """``Hang``, ``TooSlow`` or ``None`` (wait on) for the call in flight."""
        elapsed, still = now - watched.started, now - watched.still_since
        deadline = self._deadline(watched)
        needed = self._blocked_needed(watched) - 1e-3
        blocked = still >= needed
        if _Probe.running():  # Linux: the kernel says where the thread waits
            futex = watched.futex_since
            on_a_lock = futex is not None and now - futex >= min(needed, still)
        else:
            on_a_lock = True  # no more evidence to be had than the frame and the CPU
        code = watched.call.f_code
        if elapsed >= deadline - 1e-3 and blocked and on_a_lock:  # ticks are not exact
            note = "; it hung before" if code in _hung and self.fired is None else ""
            hang = self._hang(watched.call, deadline, note)
            _hung.add(code)
            self.fired = self.fired or hang
            return hang
        if _blamed:  # the block's clause is that the call ends: the deadline, scaled to load
            limit = round(deadline * self.load, 1) if self.fired is None else deadline
            if elapsed < limit - 1e-3:
                return None
            hang = self._hang(watched.call, limit, "")
            self.fired = self.fired or hang
            return hang
        confirm = max(deadline, self.confirm or 0.0)
        if code in _slow:
            confirm = deadline
        if elapsed < confirm - 1e-3:
            return None
        _slow.add(code)
        waiting = blocked and watched.channel not in (None, "running") and not on_a_lock
        how = f"blocked in {watched.channel}, not on a lock" if waiting else "still computing"
        name = f"{code.co_name}()"
        slow = TooSlow(
            name,
            f"too slow to judge: {name} still running after {elapsed:.1f} s ({how}; "
            f"load {load_factor():.1f}x the cores) [{getattr(code, 'co_qualname', code.co_name)}"
            f", called at {_where(watched.call.f_back) if watched.call.f_back else '?'}]",
        )
        self.slow = self.slow or slow
        return slow

    def _out_of_time(self, call: FrameType, now: float) -> str:
        name = f"{call.f_code.co_name}()"
        busiest = self.busiest()
        return (
            f"stopped for time: the test's share of the run's bound ({self.budget:g} s) ran out "
            f"after {now - self._entered:.1f} s, in {name}"
            + (f"; most time in {busiest}" if busiest else "")
        )

    def _hang(self, frame: FrameType, limit: float, note: str) -> Hang:
        found = _blamed[-1] if _blamed else _DEFAULT_BLAME
        code = frame.f_code
        call = found.call or f"{code.co_name}()"
        where = note
        if found.call is None:  # name the function and the suite's line that called it
            caller = frame.f_back
            while caller is not None and kind_of(caller.f_code.co_filename) != SUITE:
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


class _Probe:
    """Reads the main thread's wait channel (Linux ``/proc``) from a thread of its own, while
    the main thread waits: ``futex`` for a lock, ``hrtimer_nanosleep`` for a sleep, ...

    A daemon thread started once per process, outside any signal handler; the handler
    only puts a request on a ``SimpleQueue`` (whose ``put`` is safe there)."""

    _requests: queue.SimpleQueue[_Watched] = queue.SimpleQueue()
    _thread: threading.Thread | None = None

    @classmethod
    def start(cls) -> None:
        if cls._thread is not None or not _proc_task(threading.main_thread()).exists():
            return
        cls._thread = threading.Thread(target=cls._serve, name="watchdog probe", daemon=True)
        cls._thread.start()

    @classmethod
    def running(cls) -> bool:
        return cls._thread is not None

    @classmethod
    def ask(cls, watched: _Watched) -> None:
        if cls._thread is not None:
            cls._requests.put(watched)

    @classmethod
    def _serve(cls) -> None:
        task = _proc_task(threading.main_thread())
        while True:
            watched = cls._requests.get()
            asked = time.monotonic()
            time.sleep(0.02)  # the handler has returned: the main thread waits again
            channel = _wait_channel(task)
            # "running" includes waiting for a CPU on a loaded machine: no evidence either way.
            if channel is not None and "futex" in channel:
                watched.futex_since = watched.futex_since or asked
            elif channel not in (None, "running"):
                watched.futex_since = None
            if channel != "running":
                watched.channel = channel
            watched.asked = False


def _proc_task(thread: threading.Thread) -> Path:
    return Path(f"/proc/self/task/{thread.native_id}")


#: ``futex`` system call numbers by machine, for kernels whose ``wchan`` reads ``0``.
_FUTEX_CALLS = {"x86_64": {202}, "aarch64": {98}, "arm64": {98}, "i686": {240}, "i386": {240}}


def _wait_channel(task: Path) -> str | None:
    """Where the thread ``task`` sleeps in the kernel (``None``: not known, or running)."""
    try:
        channel = (task / "wchan").read_text(encoding="ascii").strip()
        if channel and channel != "0":
            return channel
        first = (task / "syscall").read_text(encoding="ascii").split()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if not first.isdigit():
        return "running" if first == "running" else None
    if int(first) in _FUTEX_CALLS.get(platform.machine(), set()):
        return "futex"
    return f"system call {first}"


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
