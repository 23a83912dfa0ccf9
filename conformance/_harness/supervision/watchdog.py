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

A thread blocked in ``threading.Lock.acquire()`` wakes up to run the handler, so the
exception unwinds the subject's own frames: its ``with lock:`` blocks release the lock, and
the next test starts from a clean state. What each verdict is, and the numbers, are in
``deadline``; the wait channel in ``wait_channel``; threads a test starts itself are bounded
by ``thread_deadline``. Where no ``SIGALRM`` exists (Windows), off the main thread, or when
something else owns ``SIGALRM``, calls are unbounded and the report header says so
(``unavailable``). The timer cannot interrupt C code that holds the GIL: the handler runs
at the next bytecode.

A test may also have a budget (``Watchdog(budget=...)``: its share of the run's bound,
``bounds.run_bound``): once it is spent, the next tick in subject code raises ``OutOfTime``
(a ``TooSlow``), naming the call in flight and the subject function most often seen running.
A function whose calls took ``SLOW_CALL_SECONDS`` or more in a test that ended too slow to
judge (``learn``) is cut after that long in every later test, with the same reason.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import CodeType, FrameType, TracebackType
from typing import Any

from sessionstate.conformance._harness.supervision.deadline import (
    BLOCKED_SECONDS,
    CONFIRM_FACTOR,
    DEFAULT_BLAME,
    DEFAULT_SECONDS,
    REPEAT_SECONDS,
    SLOW_CALL_SECONDS,
    STILL_CPU_PER_TICK,
    TICK_SECONDS,
    Hang,
    OutOfTime,
    TooSlow,
    blamed,
    load_factor,
)
from sessionstate.conformance._harness.supervision.frames import (
    CONFORMANCE_DIR,
    SUBJECT,
    SUITE,
    kind_of,
)
from sessionstate.conformance._harness.supervision.wait_channel import Probe, Watched

__all__ = ["Watchdog", "unavailable"]


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


#: Code of the subject functions judged too slow in this process, with what was seen of
#: them (``"stats() took 6.1 s a call"``): the next call of one is "too slow to judge"
#: after ``SLOW_CALL_SECONDS``, not at the confirmation bound, and every
#: test it stops gives the same reason, so the report says it once.
_slow: dict[CodeType, str] = {}


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
        self._watched: Watched | None = None
        #: Seconds each ended call of a subject function took, as the ticks saw it, for the
        #: calls of ``SLOW_CALL_SECONDS`` or more (the only ones ``learn`` marks).
        self._took: dict[CodeType, list[float]] = {}
        #: The call a verdict was raised into, and how long it had run by then.
        self._cut: tuple[CodeType, float] | None = None
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
        Probe.start()
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
            self._ended(self._watched)
            self._watched = None
            return
        name = f"{call.f_code.co_name}()"
        self.samples[name] = self.samples.get(name, 0) + 1
        now, cpu = time.monotonic(), time.process_time()
        spent = self.budget is not None and now - self._entered > self.budget
        watched = self._watched
        if spent and self.slow is None and not self.failing:
            self.slow = OutOfTime(name, self._out_of_time(call, now))
            ran = now - watched.started if watched is not None and watched.call is call else 0.0
            self._cut = self._cut or (call.f_code, ran + self.tick)
            raise self.slow
        if watched is None or watched.call is not call:
            self._ended(watched)
            self._watched = Watched(call, now, inner, inner.f_lasti, cpu, now, now)
            return
        self._observe(watched, inner, now, cpu)
        verdict = self._judge(watched, now)
        if verdict is not None:
            self._cut = self._cut or (call.f_code, now - watched.started + self.tick)
            raise verdict

    def _ended(self, watched: Watched | None) -> None:
        """Keep how long a call the ticks saw took (from its first tick to its last, plus
        the tick it may have run before the first); none once a verdict was raised."""
        if watched is not None and self._cut is None:
            took = watched.seen - watched.started + self.tick
            if took >= SLOW_CALL_SECONDS:
                self._took.setdefault(watched.call.f_code, []).append(took)

    def learn(self) -> list[str]:
        """The test ended too slow to judge: mark the subject functions whose calls took
        ``SLOW_CALL_SECONDS`` or more slow for the rest of the process
        (``_slow``), the call the verdict cut included, so their later calls are cut at
        once. A function's reason is its mean over the calls that ended, else the cut
        call's time so far ("took over"). Returns the reasons it added."""
        cut = dict([self._cut]) if self._cut is not None else {}
        learned = []
        for code in sorted({*self._took, *cut}, key=lambda c: c.co_name):
            if code in _slow or code in _hung:
                continue
            ended = self._took.get(code, [])
            name = f"{code.co_name}()"
            if ended:
                _slow[code] = f"{name} took {sum(ended) / len(ended):.1f} s a call"
            elif cut.get(code, 0.0) >= SLOW_CALL_SECONDS:
                _slow[code] = f"{name} took over {cut[code]:.1f} s a call"
            else:
                continue
            learned.append(_slow[code])
        return learned

    def _observe(self, watched: Watched, inner: FrameType, now: float, cpu: float) -> None:
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
            Probe.ask(watched)  # read the wait channel while this thread waits again

    def _blocked_needed(self, watched: Watched) -> float:
        return min(self._deadline(watched), BLOCKED_SECONDS)

    def _deadline(self, watched: Watched) -> float:
        if self.fired is not None or self.slow is not None:
            return self.tick  # the block failed: its other calls get one tick
        if watched.call.f_code in _hung:
            return min(self.seconds, REPEAT_SECONDS)
        return self.seconds

    def _judge(self, watched: Watched, now: float) -> BaseException | None:
        """``Hang``, ``TooSlow`` or ``None`` (wait on) for the call in flight."""
        elapsed, still = now - watched.started, now - watched.still_since
        deadline = self._deadline(watched)
        needed = self._blocked_needed(watched) - 1e-3
        blocked = still >= needed
        if Probe.running():  # Linux: the kernel says where the thread waits
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
        if (
            blamed() is not None
        ):  # the block's clause is that the call ends: the deadline, scaled to load
            limit = round(deadline * self.load, 1) if self.fired is None else deadline
            if elapsed < limit - 1e-3:
                return None
            hang = self._hang(watched.call, limit, "")
            self.fired = self.fired or hang
            return hang
        name = f"{code.co_name}()"
        qualname = getattr(code, "co_qualname", code.co_name)
        if code in _slow:  # known slow: cut at once, with the reason it was first given
            if elapsed < min(deadline, SLOW_CALL_SECONDS) - 1e-3:
                return None
            slow = TooSlow(name, f"too slow to judge: {_slow[code]} [{qualname}]")
            self.slow = self.slow or slow
            return slow
        confirm = max(deadline, self.confirm or 0.0)
        if elapsed < confirm - 1e-3:
            return None
        _slow[code] = f"{name} took over {elapsed:.1f} s a call"
        waiting = blocked and watched.channel not in (None, "running") and not on_a_lock
        how = f"blocked in {watched.channel}, not on a lock" if waiting else "still computing"
        slow = TooSlow(
            name,
            f"too slow to judge: {name} still running after {elapsed:.1f} s ({how}; "
            f"load {load_factor():.1f}x the cores) [{qualname}"
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
        found = blamed() or DEFAULT_BLAME
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
