"""A fork server for ``sessionstate check``: the zoo's runs without a fresh interpreter each.

Every ``sessionstate check`` starts two interpreters, its supervisor and the child that
runs the suite; the child imports torch, numpy, pytest and Hypothesis before it collects
anything, some 4-5 CPU-seconds of the few a zoo subject's run takes. This process imports
them once, then serves requests read from stdin, one JSON object a line::

    {"argv": ["check", TARGET, ...], "cwd": DIR, "env": {...}, "output": FILE}

For each it forks a process that runs ``sessionstate.cli.main(argv)`` in ``cwd`` under
``env``, its stdout and stderr in ``output``: the same command line, the same supervisor
(``_harness.supervision.supervisor``), the same child entry (``_harness.supervision.child.main``) on the same spec
file, the same reports. One thing differs: ``spawn.spawn_child`` forks this warmed-up
interpreter instead of starting ``python -m sessionstate.conformance._harness.supervision.child``, in a
session of its own as that would be, with the signal handlers Python starts with.
Nothing of the subject is imported here: each check imports its target itself, as a fresh
child does. It answers ``{"started": PID}`` at once, then ``{"returncode": STATUS}``.

Run as ``python -c "import runpy, sys; del sys.path[0]; runpy.run_path(THIS_FILE, run_name='__main__')"``
(``conftest.fork_server``): ``sys.path`` is then the one ``python -P -m`` gives the child.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any


class Forked:
    """A forked process, with the part of ``subprocess.Popen``'s interface the supervisor
    uses: ``pid``, ``returncode``, ``poll()``, ``wait(timeout)``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._fd = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(["forked child", str(self.pid)], timeout or 0)
            if self._fd is not None:
                select.select([self._fd], [], [], left)
            else:
                time.sleep(0.02 if left is None else min(0.02, left))
        assert self.returncode is not None
        return self.returncode


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _fork_child(spec: Path) -> Forked:
    """``spawn.spawn_child``: run ``child.main`` on ``spec`` in a fork of this process."""
    _flush()
    pid = os.fork()
    if pid:
        return Forked(pid)
    try:  # the child, as `python -m sessionstate.conformance._harness.supervision.child SPEC` runs it
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name in ("SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        from sessionstate.conformance._harness.supervision import child

        try:
            child._leave(child.main([str(spec)]))
        except KeyboardInterrupt:
            child._leave(child.EXIT_INTERRUPTED)
    except BaseException:
        traceback.print_exc()
    finally:
        _flush()
        os._exit(70)


def _warm() -> None:
    """Import what every child imports before it collects the suite (not the suite, whose
    modules read the profile and devices at import, nor any subject)."""
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch  # noqa: F401
    import xdist  # noqa: F401

    from sessionstate import cli  # noqa: F401
    from sessionstate.conformance._harness import runner  # noqa: F401
    from sessionstate.conformance._harness.supervision import child, spawn, supervisor  # noqa: F401

    spawn.spawn_child = _fork_child  # type: ignore[assignment]


def _run(request: dict[str, Any]) -> None:
    """In the fork for one request: the ``sessionstate`` command it names; never returns."""
    code = 70
    try:
        os.setpgid(0, 0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        from sessionstate import cli

        code = cli.main(request["argv"])
    except SystemExit as error:  # argparse
        code = error.code if isinstance(error.code, int) else 2
    except BaseException:
        traceback.print_exc()
    finally:
        _flush()
        os._exit(code)


def serve() -> None:
    _warm()
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        _flush()
        pid = os.fork()
        if pid == 0:
            _run(request)
        print(json.dumps({"started": pid}), file=replies, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), file=replies,
              flush=True)  # fmt: skip


if __name__ == "__main__":
    serve()
