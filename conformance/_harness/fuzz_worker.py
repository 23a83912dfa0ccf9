"""What a HypoFuzz worker of ``sessionstate fuzz`` sets up when it loads the ``fuzz``
profile (``profiles.load_profile``): HypoFuzz's shrinking under newer Hypothesis releases
(``hypofuzz_compat``), and a count of the test cases it runs, per node id, into the folder
``COUNTS_ENV`` names (``count_examples``), which ``fuzz`` reads for its progress and its
summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["COUNTS_ENV", "count_examples", "hypofuzz_compat"]

#: The folder a worker counts its test cases into, set by ``fuzz`` for its workers.
COUNTS_ENV = "SESSIONSTATE_FUZZ_COUNTS"


def hypofuzz_compat() -> None:
    """Let HypoFuzz 25.11.1 shrink under the Hypothesis releases after it.

    Its worker copies ``shrink_target.slice_comments`` (the explain phase's notes) from
    the shrunk result, an attribute those releases no longer have: the worker dies with
    an ``AttributeError`` after every shrink, before it saves the shrunk failure. The notes
    are empty here (the suite runs without the explain phase), so the attribute is given
    back as an empty mapping where it is missing. Idempotent.
    """
    from hypothesis.internal.conjecture.data import ConjectureResult

    if not hasattr(ConjectureResult, "slice_comments"):
        ConjectureResult.slice_comments = property(lambda self: {})  # type: ignore[attr-defined]


#: The counts of this process (``count_examples``), and the pid they belong to: a worker
#: forked from a process that had registered the callback starts from nothing.
_COUNTS: dict[str, Any] = {"pid": None, "counts": {}, "written": 0.0, "folder": None}
_COUNTING = threading.Lock()


def count_examples(folder: str) -> None:
    """In a HypoFuzz worker: count every test case it runs, per node id, into
    ``folder/<pid>.json`` (written at most twice a second). Idempotent per process."""
    from hypothesis.internal.observability import add_observability_callback

    if _COUNTS["folder"] is not None:
        return
    _COUNTS["folder"] = folder
    add_observability_callback(_counted, all_threads=True)


def _counted(observation: Any, thread_id: int | None = None) -> None:
    if getattr(observation, "type", None) != "test_case":
        return
    with _COUNTING:
        if _COUNTS["pid"] != os.getpid():
            _COUNTS.update(pid=os.getpid(), counts={}, written=0.0)
        counts: dict[str, int] = _COUNTS["counts"]
        name = str(observation.property)
        counts[name] = counts.get(name, 0) + 1
        now = time.monotonic()
        if now - _COUNTS["written"] < 0.5:
            return
        _COUNTS["written"] = now
        _write_counts(Path(_COUNTS["folder"]), counts)


def _write_counts(folder: Path, counts: dict[str, int]) -> None:
    """Replace ``folder/<pid>.json`` whole; nothing when the folder is gone (the run is
    over: a worker that has not stopped yet must not make it again)."""
    temporary = folder / f".{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        temporary.write_text(json.dumps(counts), encoding="utf-8")
        os.replace(temporary, folder / f"{os.getpid()}.json")
