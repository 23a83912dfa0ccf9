"""``sessionstate check``: validate the request, run the suite under pytest, report.

Exit status: 0 every MUST clause passed (SHOULD failures are warnings unless
``strict``); 1 a clause failed; 2 the suite was misused (bad target, capability,
expectations file, clause id, profile); 3 no clause failed, but a MUST clause
was not checked to the end (its tests stopped at an expected or SHOULD failure).
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .clauses import all_clauses
from .subject import UsageError

__all__ = ["CheckOptions", "run_check"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
DEFAULT_TARGET = "sessionstate.fixtures.reference_subject:subject"


@dataclass
class CheckOptions:
    target: str = DEFAULT_TARGET
    profile: str = "ci"
    report_json: str | None = None
    junitxml: str | None = None
    markdown: str | None = None
    expectations: str | None = None
    strict: bool = False
    exitfirst: bool = False
    workers: str | None = None
    seed: int | None = None
    clauses: list[str] = field(default_factory=list)
    pytest_args: list[str] = field(default_factory=list)


def validate(options: CheckOptions) -> None:
    """Raise ``UsageError`` for anything wrong with the request, before any test runs."""
    from .expectations import parse_expectations
    from .profiles import PROFILES
    from .subject import _did_you_mean, load_subject

    if options.profile not in PROFILES:
        raise UsageError(
            f"unknown profile {options.profile!r}; choose one of {', '.join(PROFILES)}"
        )
    known = all_clauses()
    groups = {c.group for c in known.values()}
    for cid in options.clauses:
        if cid not in known and cid not in groups:
            hint = _did_you_mean(cid, [*known, *groups])
            raise UsageError(f"unknown clause or group {cid!r}{hint}; see 'sessionstate spec'")
    _check_specs(load_subject(options.target))
    if options.expectations:
        parse_expectations(options.expectations)


def _check_specs(subject: Any) -> None:
    from .adapters import AdapterSpec
    from .state_objects import StateObjectSpec
    from .subject import typed_specs

    typed_specs(subject, "state_objects", StateObjectSpec)
    typed_specs(subject, "adapters", AdapterSpec)


def pytest_arguments(options: CheckOptions, json_path: str) -> list[str]:
    args = [
        "--pyargs", "sessionstate.conformance.suite",
        "-p", "sessionstate.conformance.plugin",
        "-p", "no:cacheprovider",
        "-q", "--tb=short",
        # The subject's module may import hypothesis before pytest starts.
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        "--sessionstate-subject", options.target,
        "--sessionstate-profile", options.profile,
        "--sessionstate-report-json", json_path,
        # The clause table is printed below, after pytest's own summary.
        "--sessionstate-no-summary",
    ]  # fmt: skip
    for cid in options.clauses:
        args += ["--sessionstate-clause", cid]
    if options.expectations:
        args += ["--sessionstate-expectations", options.expectations]
    if options.strict:
        args.append("--sessionstate-strict")
    if options.seed is not None:
        args += ["--sessionstate-seed", str(options.seed), f"--hypothesis-seed={options.seed}"]
    if options.exitfirst:
        args.append("-x")
    if options.workers:
        # worksteal: an idle worker takes queued tests from a busy one, so the run does not
        # wait on one worker's backlog of stateful machines (bench/suite_speed.py).
        args += ["-n", options.workers, "--dist", "worksteal"]
    if options.junitxml:
        # One testcase per clause, in a suite named after the subject; pytest's own
        # per-test file stays available as `-- --junitxml=PATH`.
        args += ["--sessionstate-junitxml", options.junitxml]
    return args + options.pytest_args


def run_check(options: CheckOptions) -> int:
    """Run the suite as ``options`` say; print the summary; return the exit status."""
    import pytest

    from .report import markdown, summary_lines

    try:
        validate(options)
    except UsageError as error:
        print(f"sessionstate check: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory() as scratch:
        json_path = options.report_json or str(Path(scratch) / "results.json")
        status = pytest.main(pytest_arguments(options, json_path))
        if status in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
            print(f"sessionstate check: error: pytest exited with {status!r}", file=sys.stderr)
            return EXIT_USAGE
        if status == pytest.ExitCode.INTERRUPTED:
            # Collection errors (or Ctrl-C): some clauses were never run, so
            # no verdict can be given.
            print("sessionstate check: error: the suite was interrupted before it ran "
                  "(collection error?); see the output above", file=sys.stderr)  # fmt: skip
            return EXIT_USAGE
        if not Path(json_path).exists():
            print(f"sessionstate check: error: the suite did not run ({status!r})", file=sys.stderr)
            return EXIT_USAGE
        results: dict[str, Any] = json.loads(Path(json_path).read_text(encoding="utf-8"))
    print("\n".join(summary_lines(results)))
    if options.markdown:
        Path(options.markdown).write_text(markdown(results), encoding="utf-8")
    if options.strict and results["unmatched_expectations"]:
        return EXIT_FAILED
    return {"conformant": EXIT_OK, "incomplete": EXIT_INCOMPLETE}.get(
        results["verdict"], EXIT_FAILED
    )
