"""How many processes the suite's child has, and how much memory they hold: the supervisor's
bounds on what subject code may start (``process_cap``, ``memory_cap``) besides time.

The child leads its own process group, and whatever subject code starts (forks, helper
processes, multiprocessing pools) stays in it unless it leaves on purpose. ``census``
counts the group's live processes and sums their resident memory from ``/proc``; the
supervisor polls it (``POLL``) and, past a cap, ends the run: the tests running are
unchecked, naming the cap and the call in flight, and no new child starts (a resumed run
would do the same again). Counting, not ``RLIMIT_NPROC``: root (as CI runs) is exempt from
that limit, and it counts every process of the user, not the run's.

``SESSIONSTATE_MAX_PROCESSES`` (default ``max(32, 2 x workers + 8)``) and
``SESSIONSTATE_MAX_MEMORY_MB`` (default three quarters of the machine's memory) override
the caps; ``0`` switches one off. Without ``/proc`` (not Linux) nothing is counted.

Light (standard library only): the supervisor imports it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from sessionstate.conformance.subject import UsageError

__all__ = [
    "MEMORY_ENV", "PROCESSES_ENV", "Census", "census", "memory_cap", "past_a_cap", "process_cap",
]  # fmt: skip

PROCESSES_ENV = "SESSIONSTATE_MAX_PROCESSES"
MEMORY_ENV = "SESSIONSTATE_MAX_MEMORY_MB"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Census(NamedTuple):
    """A process group's live (not zombie) processes and their resident bytes."""

    processes: int
    resident: int


def census(group: int, proc: Path = Path("/proc")) -> Census | None:
    """The live processes of process group ``group``; ``None`` without ``/proc``."""
    if not proc.is_dir():
        return None
    processes = resident = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended while we looked
        if len(fields) < 22 or fields[0] == "Z" or int(fields[2]) != group:
            continue
        processes += 1
        resident += int(fields[21]) * _PAGE
    return Census(processes, resident)


def _number(environ: Mapping[str, str], name: str) -> int | None:
    text = environ.get(name)
    if text is None or not text.strip():
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"{name}={text!r}: give a whole number >= 0 (0: no cap)")
    return value


def process_cap(workers: int, environ: Mapping[str, str]) -> int | None:
    """The most processes the child's group may hold (``None``: no cap)."""
    given = _number(environ, PROCESSES_ENV)
    if given is not None:
        return given or None
    return max(32, 2 * workers + 8)


def memory_cap(environ: Mapping[str, str], meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The most resident bytes the child's group may hold (``None``: no cap)."""
    given = _number(environ, MEMORY_ENV)
    if given is not None:
        return given * 2**20 or None
    try:
        total = next(
            int(line.split()[1]) * 1024
            for line in meminfo.read_text().splitlines()
            if line.startswith("MemTotal:")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return total * 3 // 4


def past_a_cap(found: Census | None, caps: tuple[int | None, int | None]) -> str:
    """Which cap ``found`` is past, in words (``"40 processes, past the cap of 16
    (SESSIONSTATE_MAX_PROCESSES)"``), or ``""``; ``caps`` are (processes, bytes)."""
    processes, memory = caps
    if found is None:
        return ""
    if processes is not None and found.processes > processes:
        return f"{found.processes} processes, past the cap of {processes} ({PROCESSES_ENV})"
    if memory is not None and found.resident > memory:
        return (
            f"{found.resident / 2**20:,.0f} MiB resident, past the cap of "
            f"{memory / 2**20:,.0f} MiB ({MEMORY_ENV})"
        )
    return ""
