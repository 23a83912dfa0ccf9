"""A pytest plugin that records when each process of a run reaches each phase.

Load it with ``-p timeline`` (bench/ on ``sys.path``). Every process, the xdist
controller and each worker, appends one JSON line to the file named by
``SESSIONSTATE_TIMELINE`` when it unconfigures: seconds since
``SESSIONSTATE_TIMELINE_T0`` (the launcher's ``time.time()``) at configure, at
the end of collection, at the first test's start and the last test's end, plus
the time spent inside tests and the process's CPU time. bench/suite_speed.py
uses it to show where a 2-worker run spends its wall time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from typing import Any

import pytest

_T0 = float(os.environ.get("SESSIONSTATE_TIMELINE_T0", "0") or 0)
_events: dict[str, float] = {}
_busy = [0.0]


def _now() -> float:
    return round(time.time() - _T0, 3)


def pytest_configure(config: pytest.Config) -> None:
    _events["configured"] = _now()


def pytest_collection_finish(session: pytest.Session) -> None:
    _events["collected"] = _now()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, Any, None]:
    _events.setdefault("tests_start", _now())
    started = time.perf_counter()
    yield
    _busy[0] += time.perf_counter() - started
    _events["tests_end"] = _now()


def pytest_unconfigure(config: pytest.Config) -> None:
    path = os.environ.get("SESSIONSTATE_TIMELINE")
    if not path:
        return
    worker = getattr(config, "workerinput", None)
    line = {
        "process": worker["workerid"] if worker else "controller",
        **_events,
        "unconfigured": _now(),
        "test_seconds": round(_busy[0], 3),
        "cpu_seconds": round(time.process_time(), 3),
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
