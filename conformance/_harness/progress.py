"""One line per clause group as ``sessionstate check`` finishes it: a long run is not opaque.

The supervisor (``supervisor``) learns from the run journal which tests were collected and
which have ended; when the last test of a clause group (the group its module is named
after: ``test_lru.py`` is LRU) has ended, it prints::

    LRU done: 17 tests, 2 failed; 3/12 groups, 0:41 elapsed, about 2:05 left

"Left" is the tests still to run times the wall time per test so far: a guide, not a
bound (a state machine takes many times a plain test's time).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["GroupProgress", "group_of"]

_MODULE = re.compile(r"test_([a-z]+)\w*\.py::")


def group_of(nodeid: str) -> str:
    """The clause group a suite test belongs to, from its module's name (``other`` if none)."""
    match = _MODULE.search(nodeid)
    return match.group(1).upper() if match else "other"


def clock(seconds: float) -> str:
    """``M:SS`` (``H:MM:SS`` from an hour)."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02}:{rest % 60:02}" if hours else f"{rest // 60}:{rest % 60:02}"


@dataclass
class GroupProgress:
    """Prints a group's line once all of its collected tests have a record."""

    stream: IO[str]
    started: float = field(default_factory=time.monotonic)
    done: set[str] = field(default_factory=set)

    def update(
        self, collected: Mapping[str, Any], records: Iterable[Mapping[str, Any]]
    ) -> list[str]:
        """Print (and return) the line of every group finished since the last call."""
        if not collected:
            return []
        outcome = {str(r["nodeid"]): str(r.get("outcome", "")) for r in records}
        groups: dict[str, list[str]] = {}
        for nodeid in collected:
            groups.setdefault(group_of(nodeid), []).append(nodeid)
        ended = sum(1 for n in collected if n in outcome)
        elapsed = time.monotonic() - self.started
        lines = []
        for group, tests in groups.items():
            if group in self.done or any(n not in outcome for n in tests):
                continue
            self.done.add(group)
            failed = sum(1 for n in tests if outcome[n] in ("failed", "error", "crashed"))
            left = len(collected) - ended
            guess = f", about {clock(elapsed / ended * left)} left" if left and ended else ""
            bad = f", {failed} failed" if failed else ""
            lines.append(
                f"{group} done: {len(tests)} test{'s' if len(tests) != 1 else ''}{bad}; "
                f"{len(self.done)}/{len(groups)} groups, {clock(elapsed)} elapsed{guess}"
            )
        if lines:
            # pytest's progress dots share the stream: start on a line of our own.
            self.stream.write("\n" + "\n".join(lines) + "\n")
            self.stream.flush()
        return lines
