"""Starting the suite's child process, and naming how a process ended.

``spawn_child`` starts ``python -m sessionstate.conformance._harness.supervision.child`` on
a spec file, in a process group of its own, so the supervisor can kill whatever the
subject's code started with it. Callers reach it as ``spawn.spawn_child``: the project's
own tests replace it (tests/zoo/forkserver.py).

Light (standard library only).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["signal_name", "spawn_child", "status"]


def _spawn(spec: Path) -> subprocess.Popen[bytes]:
    """``python -m`` the child entry on ``spec``, in a session (process group) of its own."""
    return subprocess.Popen([*_child_command(), str(spec)], start_new_session=True)


#: How a child process is started: ``_spawn`` (a fresh interpreter). Only the project's
#: own tests replace it, with a fork of an interpreter that has imported torch, pytest and
#: Hypothesis already (tests/zoo/forkserver.py): the child then runs the same ``child.main``
#: on the same spec, minus the imports. What it returns needs ``pid``, ``returncode``,
#: ``poll()`` and ``wait(timeout)`` as ``subprocess.Popen`` has them.
spawn_child: Callable[[Path], subprocess.Popen[bytes]] = _spawn


def _child_command() -> list[str]:
    """``python -m`` the child entry; with ``-P`` where Python has it (3.11+), so the
    current directory is not put first on ``sys.path`` by ``-m`` (``load_subject`` puts
    it there, as in one process) and the child sees the modules this process would."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe_path, "-m", "sessionstate.conformance._harness.supervision.child"]


def signal_name(signum: int) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number with no name here."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def status(code: int | None) -> str:
    """How a process ended, from its return code: ``status 3``, ``SIGKILL``, ..."""
    if code is None:
        return "an unknown status"
    return signal_name(-code) if code < 0 else f"status {code}"
