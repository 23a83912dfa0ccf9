"""What faulthandler's stack dumps say: the call in flight, and a fatal error.

Every process running the suite's tests has faulthandler write into the run journal's
folder (``recording``): ``<pid>.fatal`` when the process dies of a fatal signal, and
``<pid>.stack`` when the test runs past a bound (``dump_traceback_later``) or the
supervisor asks (``SIGUSR2``). From those files the supervisor names what the subject was
doing: `` in stats() (slow.py:7)`` is the outermost subject frame the suite called and
the innermost subject frame, by the watchdog's rule of whose code a frame is (``frames``).

Light (standard library only).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

from sessionstate.conformance._harness.supervision.frames import LIBRARIES, STDLIB_DIRS

__all__ = ["call_from_dump", "call_in_flight", "calls_now", "fatal_error"]


_FATAL = re.compile(r"Fatal Python error: (.+)")
_FATAL_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Aborted": "SIGABRT",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


def fatal_error(path: Path) -> str:
    """From faulthandler's report in ``path``: ``SIGSEGV in stats() (mod.py:5)``, or ``""``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    found = list(_FATAL.finditer(text))
    if not found:
        return ""
    what = found[-1].group(1).strip()
    call = call_from_dump(text[found[-1].start() :])
    return f"{_FATAL_SIGNALS.get(what, what)}{call}"


def calls_now(journal: Path, pids: list[int]) -> dict[int, str]:
    """The call in flight in each of ``pids``, from the stack faulthandler dumps there on
    ``SIGUSR2`` (``recording``) into ``<pid>.stack``; ``""`` where none came in time."""
    if not hasattr(signal, "SIGUSR2"):
        return {}
    sizes: dict[int, int] = {}
    for pid in pids:
        path = journal / f"{pid}.stack"
        sizes[pid] = path.stat().st_size if path.exists() else 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR2)
    time.sleep(0.3)  # faulthandler writes from the signal handler, at once
    found: dict[int, str] = {}
    for pid, size in sizes.items():
        try:
            with (journal / f"{pid}.stack").open(encoding="utf-8", errors="replace") as dump:
                dump.seek(size)
                found[pid] = call_from_dump(dump.read())
        except OSError:
            found[pid] = ""
    return found


def call_in_flight(path: Path) -> str:
    """`` in stats() (mod.py:5)`` from the last stack dump in ``path`` (``""``: none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    at = text.rfind("Timeout (")
    return call_from_dump(text[at:]) if at >= 0 else ""


_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>\S+)')
_CONFORMANCE = str(Path(__file__).resolve().parents[2]) + os.sep


def _kind(filename: str) -> str:
    """``suite``, ``neutral`` or ``subject``: the watchdog's rule, from a file name alone."""
    if filename.startswith("<"):
        return "neutral"  # exec'd or generated code: its caller names the call
    path = os.path.abspath(filename)
    if path.startswith(_CONFORMANCE):
        return "suite"
    parts = path.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            after = parts[parts.index(marker) + 1 :]
            name = after[0].removesuffix(".py") if after else ""
            return "neutral" if name in LIBRARIES else "subject"
    if path.startswith(STDLIB_DIRS):
        return "neutral"
    return "subject"


def _is_probe(frames: list[tuple[str, str, str]]) -> bool:
    """Whether these frames are the watchdog's probe thread (``wait_channel.Probe``): the
    suite's own code, waiting, never the call in flight."""
    return any(f == "_serve" and Path(p).name == "wait_channel.py" for p, _, f in frames)


def call_from_dump(text: str) -> str:
    """`` in CALL() (FILE:LINE)``: in the thread running suite code, the outermost
    subject frame the suite called (the call in flight) and the innermost subject frame
    (where it was); the innermost frame when no subject frame is on the stack."""
    threads: list[list[tuple[str, str, str]]] = []
    for line in text.splitlines():
        if "most recent call first" in line:
            threads.append([])
            continue
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].append((match["file"], match["line"], match["func"]))
    threads = [frames for frames in threads if frames and not _is_probe(frames)]
    if not threads:
        return ""
    chosen = next((f for f in threads if any(_kind(p) == "suite" for p, _, _ in f)), threads[0])
    outermost_first = chosen[::-1]
    suite_at = max((i for i, (p, _, _) in enumerate(outermost_first) if _kind(p) == "suite"),
                   default=-1)  # fmt: skip
    subject = [f for f in outermost_first[suite_at + 1 :] if _kind(f[0]) == "subject"]
    if not subject:
        path, line, func = chosen[0]
        return f" in {func} ({Path(path).name}:{line})"
    call, inner = subject[0], subject[-1]
    return f" in {call[2]}() ({Path(inner[0]).name}:{inner[1]})"
