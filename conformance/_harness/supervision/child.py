"""The child process of ``sessionstate check`` (``supervisor``): validate, run the suite.

``python -m sessionstate.conformance._harness.supervision.child SPEC.json`` where the file holds
``{"options": CheckOptions fields, "files": {...}, "test_seconds": float | null,
"run_deadline": float | null (``time.time()`` by which the tests are to have stopped),
"run_seconds": float | null (the run's bound),
"skip_ids": path | null, "validate_only": bool}`` (``validate_only``: stop after the
validation, for ``sessionstate fuzz``). It does what the check did in one process before: validates
the request with the subject's code (``runner.validate``: importing the target, calling
its hooks) and runs ``pytest.main`` with the suite's arguments, plus the journal and the
per-test bound for the plugin. It hands back, in the files the supervisor named:

- ``usage``: the one-line usage error (then exit 2);
- ``infrastructure``: the one line saying the example database cannot be reached (then
  exit 4: not the user's fault, nor the subject's);
- ``results``: the JSON results the plugin writes at the end of the session;
- ``status``: ``{"pytest": EXIT_STATUS}`` once ``pytest.main`` has returned.

It prints no verdict and writes no report: the supervisor does, from these files or,
when the child could not finish, from the journal. It leaves with ``os._exit`` once
they are written, so a thread the subject left running cannot keep it alive. Ctrl-C
(the supervisor forwards it as SIGINT) at any point exits 130 without a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

EXIT_USAGE, EXIT_INFRASTRUCTURE, EXIT_INTERRUPTED = 2, 4, 130


def main(argv: list[str]) -> int:
    """Run one attempt as the spec file ``argv[0]`` says; the exit status."""
    spec: dict[str, Any] = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    files: dict[str, str] = spec["files"]
    from sessionstate.conformance._harness.database import InfrastructureError
    from sessionstate.conformance._harness.options import flag
    from sessionstate.conformance._harness.runner import CheckOptions, pytest_arguments, validate
    from sessionstate.conformance._harness.supervision.journal import Journal
    from sessionstate.conformance.subject import UsageError

    options = CheckOptions(**spec["options"])
    journal = Journal(files["journal"])
    journal.write("phase", phase="importing the target and calling its hooks")
    try:
        validate(options)
    except InfrastructureError as error:
        Path(files["infrastructure"]).write_text(str(error), encoding="utf-8")
        return EXIT_INFRASTRUCTURE
    except UsageError as error:
        Path(files["usage"]).write_text(str(error), encoding="utf-8")
        return EXIT_USAGE
    if spec.get("validate_only"):  # sessionstate fuzz: the subject answers, nothing runs
        Path(files["status"]).write_text(json.dumps({"pytest": 0}), encoding="utf-8")
        return 0
    if not spec.get("skip_ids"):  # the first attempt: a resumed one said it already
        _print_header(options, spec.get("test_seconds"), spec.get("run_seconds"))
    journal.write("phase", phase="collecting and running the tests")
    import pytest

    args = pytest_arguments(options, files["results"])
    ours = [flag("journal"), files["journal"]]
    if spec.get("test_seconds"):
        ours += [flag("test-timeout"), str(spec["test_seconds"])]
    if spec.get("run_deadline"):
        ours += [flag("run-deadline"), repr(spec["run_deadline"])]
        ours += [flag("run-timeout"), repr(spec["run_seconds"])]
    if spec.get("skip_ids"):
        ours += [flag("skip-ids"), spec["skip_ids"]]
    passthrough = len(options.pytest_args)
    args[len(args) - passthrough : len(args) - passthrough] = ours  # before the user's own
    status = int(pytest.main(args))
    Path(files["status"]).write_text(json.dumps({"pytest": status}), encoding="utf-8")
    return 0


def _print_header(options: Any, test_seconds: float | None, run_seconds: float | None) -> None:
    """Say what is being checked before the first test (``terminal.start_lines``): the
    subject is loaded and its hooks answered (``runner.validate``), so none of this can
    fail for a reason the run would not meet anyway; if it does, the run goes on."""
    from sessionstate.conformance._harness import under_test
    from sessionstate.conformance._harness.devices import select_devices
    from sessionstate.conformance._harness.runner import load_target
    from sessionstate.conformance._harness.search import run_database
    from sessionstate.conformance._report.terminal import start_lines

    try:
        subject = load_target(options.target)
        select_devices(options.devices if options.devices else subject.devices)
        facts = under_test.gather(subject)
        database = run_database(options.profile, options.database)
        lines = start_lines(facts, options.target, options.profile, options.run_seed(), database,
                            test_seconds, run_seconds)  # fmt: skip
    except Exception:  # the plugin meets the same problem and reports it
        return
    print("\n".join(lines), flush=True)


def _leave(status: int) -> None:
    """Flush what was printed and end the process now, whatever threads are left."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover - run by the supervisor as a process
    try:
        _leave(main(sys.argv[1:]))
    except KeyboardInterrupt:
        _leave(EXIT_INTERRUPTED)
