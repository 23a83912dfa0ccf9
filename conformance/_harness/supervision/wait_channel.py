"""Where the main thread waits, read from the kernel: a lock (``futex``) or not.

The watchdog (``watchdog``) tells a deadlock from a slow call by what the ticks see of the
call in flight (``Watched``): its frame, the CPU the process used, and, on Linux, the main
thread's wait channel (``/proc/self/task/<id>/wchan``), which ``Probe`` reads from a
daemon thread of its own while the main thread waits again (a signal handler must not
block on a file). A call waiting on a futex is on a lock; one in ``hrtimer_nanosleep`` is
asleep, not deadlocked.

Light (standard library only).
"""

from __future__ import annotations

import platform
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

__all__ = ["Probe", "Watched"]


@dataclass
class Watched:
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


class Probe:
    """Reads the main thread's wait channel (Linux ``/proc``) from a thread of its own, while
    the main thread waits: ``futex`` for a lock, ``hrtimer_nanosleep`` for a sleep, ...

    A daemon thread started once per process, outside any signal handler; the handler
    only puts a request on a ``SimpleQueue`` (whose ``put`` is safe there)."""

    _requests: queue.SimpleQueue[Watched] = queue.SimpleQueue()
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
    def ask(cls, watched: Watched) -> None:
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
