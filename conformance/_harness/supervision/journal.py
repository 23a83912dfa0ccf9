"""The run journal: what each process of a supervised run has done, as it happens.

``sessionstate check`` runs the suite in a child process (``supervisor``) and follows
it through this journal, so that what a test did is known even when the process
running it never returns from it (killed, crashed, or cut off at its bound). Each
process appends JSON lines to its own file, ``<dir>/<pid>.jsonl``, opened
``O_APPEND`` and written with one ``os.write`` per line, so a line is whole or absent
whatever happens to the process after the call. One line per event, never per call:

- ``{"e": "phase", "phase": TEXT}``: what the child entry is doing (importing the
  target and calling its hooks; running the tests);
- ``{"e": "collected", "tests": {NODEID: [CLAUSE, ...]}}``: the conformance tests a
  process collected (each xdist worker collects them all);
- ``{"e": "start", "nodeid": ID}``: a test started in this process;
- ``{"e": "record", "record": {...}}``: a test's ``results.TestRecord`` fields;
- ``{"e": "crash", "nodeid": ID, "message": TEXT}``: the xdist controller saw the
  worker running that test die;
- ``{"e": "facts", "facts": {...}}``: what is under test (``target.gather``), once.

Besides the lines, ``<pid>.stack`` holds faulthandler's stack dumps (armed shortly
before a test's bound runs out) and ``<pid>.fatal`` faulthandler's report of a fatal
signal in that process. Light: standard library only, no pytest, no subject.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Journal", "JournalReader", "Line"]

#: ``(pid, event)`` as the reader returns them.
Line = tuple[int, dict[str, Any]]


class Journal:
    """Appends this process's lines to ``<folder>/<pid>.jsonl``; never raises: a journal
    that cannot be written (disk full) loses lines, and the supervisor then treats the
    tests it did not hear about as lost (unchecked), never as passed."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.pid = os.getpid()
        self._fd: int | None = None

    def write(self, event: str, **fields: Any) -> None:
        """Append one line ``{"e": event, **fields}``."""
        if self._fd is None or self.pid != os.getpid():  # a forked process gets its own
            self.pid = os.getpid()
            try:
                self._fd = os.open(
                    self.folder / f"{self.pid}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
                )
            except OSError:
                return
        line = json.dumps({"e": event, **fields}, default=str) + "\n"
        with contextlib.suppress(OSError):
            os.write(self._fd, line.encode("utf-8"))

    def path(self, suffix: str) -> Path:
        """``<folder>/<pid><suffix>``: this process's other files (``.stack``, ``.fatal``)."""
        return self.folder / f"{os.getpid()}{suffix}"


@dataclass
class JournalReader:
    """Reads every process's new whole lines since the last ``poll``."""

    folder: Path
    _offsets: dict[Path, int] = field(default_factory=dict)

    def poll(self) -> list[Line]:
        """The lines appended since the last call, file by file (each file in order)."""
        lines: list[Line] = []
        for path in sorted(self.folder.glob("*.jsonl")):
            offset = self._offsets.get(path, 0)
            try:
                with path.open("rb") as stream:
                    stream.seek(offset)
                    data = stream.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a line still being written waits for the next poll
            self._offsets[path] = offset + end
            pid = int(path.stem) if path.stem.isdigit() else 0
            for raw in data[:end].splitlines():
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    lines.append((pid, event))
        return lines
