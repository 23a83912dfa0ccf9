"""The ``sessionstate`` command line.

``check`` runs the conformance suite against a TARGET (default: the bundled
reference); ``fuzz`` runs its properties under HypoFuzz; ``spec`` lists the clauses; ``explain`` prints one clause and the
tests that check it; ``demo`` builds a reference manager and prints stats().
Usage errors print one line and exit 2 (so does a bare ``sessionstate``, after the
usage); Ctrl-C exits 130, SIGTERM 143 and SIGHUP 129 (handled as Ctrl-C); output
to a pipe whose reader has gone (``| head``) stops quietly with 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sessionstate.conformance._harness.options import add_command_options, command_values

from . import __version__

EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 4  # a report that could not be written (a full disk), as for check
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a writer whose reader went away


def _add_check(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check",
        help="run the conformance suite against a subject",
        description="Run the conformance suite. Exit 0: every MUST clause passed (SHOULD "
        "failures, expected failures that passed and unmatched expectations are warnings); 1: "
        "a clause failed (any clause under --strict; under --reproduce, the case still fails); "
        "2: usage error, or under --strict stale expectations; 3: incomplete (a MUST clause "
        "was not checked to the end: a test cut off at its time bound, crashed or lost, the "
        "subject's code ended the process, or its tests were skipped for a reason the subject "
        "did not declare, such as contents with no model; under --reproduce, the case no "
        "longer fails); 4: infrastructure (the example "
        "database failed, or a report could not be written: the verdict table is printed "
        "first); 130, 143, 129: interrupted by SIGINT, SIGTERM, SIGHUP (the reports say "
        "incomplete). "
        "Report paths may be devices, FIFOs or /dev/stdout: those are written in place, "
        "files are replaced whole. Arguments after '--' go to pytest.",
    )
    add_command_options(check, "check")


def _add_fuzz(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fuzz = commands.add_parser(
        "fuzz",
        help="fuzz the suite's properties against a subject (HypoFuzz, the [fuzz] extra)",
        description="First run every selected test once at the quick profile (as 'sessionstate "
        "check --profile quick' does), then the suite's properties under HypoFuzz for "
        "--seconds or until a failure, saving what it finds in an example database. Exit 0: "
        "nothing found (the examples run per clause group are printed), or only a SHOULD "
        "clause failed (a warning, as for 'check'); 1: a clause failed (reported as "
        "'sessionstate check' reports it, by the same exit policy); 2: usage error (--seconds "
        "must be finite and above "
        "0); 3: no example ran (give more --seconds), or the subject's code ended the "
        "process; 4: the example database cannot be reached or failed; 130, 143, 129: "
        "interrupted by SIGINT, SIGTERM, SIGHUP. Arguments after '--' go to pytest.",
    )
    add_command_options(fuzz, "fuzz")


def _fuzz(args: argparse.Namespace, passthrough: list[str]) -> int:
    from sessionstate.conformance._harness.fuzz import FuzzOptions, run_fuzz, usable_cores
    from sessionstate.conformance.subject import DEFAULT_TARGET

    problem = unsupported_dependencies()
    if problem:
        return _usage_error("fuzz", RuntimeError(problem))
    values = command_values(args, "fuzz")
    values["target"] = values["target"] or DEFAULT_TARGET
    values["workers"] = usable_cores() if values["workers"] is None else values["workers"]
    return run_fuzz(FuzzOptions(**values, pytest_args=passthrough))


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionstate",
        description="Reference session state manager and its conformance suite.",
    )
    parser.add_argument("--version", action="version", version=f"sessionstate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_check(commands)
    _add_fuzz(commands)
    commands.add_parser("spec", help="list the spec's clauses")
    explain = commands.add_parser(
        "explain", help="print where a clause lives: SPEC text, tests, models, zoo, reference"
    )
    explain.add_argument(
        "clause", help="a clause id, any case (LRU-3, lru-3), or a group (LRU) to list its clauses"
    )
    init = commands.add_parser("init", help="write a starter subject and a CI workflow")
    init.add_argument("directory", nargs="?", default=".", help="where to write (default: .)")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    report = commands.add_parser(
        "report",
        help="compliance matrix from results JSON files",
        description="Print the compliance matrix of results files as Markdown; write it and "
        "an HTML page where asked. Exit 0: written; 2: a file that is not this version's "
        "results, or an output that is an input or cannot be written; 4: writing failed "
        "(a full disk), after the matrix was printed.",
    )
    report.add_argument("results", nargs="+", metavar="JSON", help="files from check --report-json")
    report.add_argument(
        "--markdown",
        metavar="PATH",
        help="write the matrix as Markdown here (missing directories are made)",
    )
    report.add_argument(
        "--html",
        metavar="PATH",
        help="write a self-contained HTML page here (missing directories are made)",
    )
    commands.add_parser("demo", help="build a reference manager, use it, print stats()")
    return parser


def unsupported_dependencies() -> str | None:
    """``compat.unsupported()``: an installed pytest, Hypothesis, pytest-xdist or NumPy
    older than the suite runs on, said before anything imports the suite."""
    from sessionstate.conformance._harness.compat import unsupported

    return unsupported()


def _usage_error(command: str, error: Exception) -> int:
    print(f"sessionstate {command}: error: {error}", file=sys.stderr)
    return EXIT_USAGE


def _init(directory: str, force: bool) -> int:
    from sessionstate.conformance._harness.init_project import init_project
    from sessionstate.conformance._harness.requirement import install_source
    from sessionstate.conformance.subject import UsageError

    source = install_source()
    try:
        written = init_project(directory, force, source)
    except UsageError as error:
        return _usage_error("init", error)
    for path in written:
        print(f"wrote {path}")
    print(f"SESSIONSTATE_REQUIREMENT: {source.requirement} (this sessionstate is {source.how})")
    if not source.reachable:
        print(f"  edit it in the workflow: {source.note}")
    print(
        "next: edit conformance_subject.py, then run: sessionstate check conformance_subject:subject"
    )
    return 0


def _report(paths: list[str], markdown_path: str | None, html_path: str | None) -> int:
    """Print the Markdown matrix; write it and the HTML page where asked. Exit 2 (one
    line) for a results file that cannot be read or is not ours, an output that is an
    input or the other output, or an output that cannot be written (checked before
    anything is written; missing directories are made); 4 when writing fails after
    that (a full disk), after the matrix was printed."""
    from sessionstate.conformance._harness.atomic import write_error, write_text_atomic
    from sessionstate.conformance._report.matrix import load_results, to_html, to_markdown
    from sessionstate.conformance.subject import UsageError

    outputs = [(option, path) for option, path in (("--markdown", markdown_path),
                                                   ("--html", html_path)) if path]  # fmt: skip
    try:
        _check_report_outputs(paths, outputs)
        results = load_results(paths)
        table = to_markdown(results)
        page = to_html(results) if html_path else ""
    except UsageError as error:
        return _usage_error("report", error)
    except (KeyError, TypeError, ValueError, AttributeError) as error:  # a shape not checked
        problem = f"{type(error).__name__}: {error}".splitlines()[0]
        return _usage_error(
            "report", UsageError(f"the results files are not in this version's format ({problem})")
        )
    print(table, end="")
    for option, path in outputs:
        try:
            write_text_atomic(path, table if option == "--markdown" else page)
        except OSError as error:
            print(f"sessionstate report: error: {option} {path!r} could not be written: "
                  f"{write_error(error)}", file=sys.stderr)  # fmt: skip
            return EXIT_INFRASTRUCTURE
    return 0


def _check_report_outputs(inputs: list[str], outputs: list[tuple[str, str]]) -> None:
    """``UsageError`` unless every output can be written (``runner._check_writable``,
    which makes missing directories) and none is an input or the other output."""
    import os

    from sessionstate.conformance._harness.runner import _check_writable
    from sessionstate.conformance.subject import UsageError

    read = {os.path.realpath(path): path for path in inputs}
    taken: dict[str, str] = {}
    for option, path in outputs:
        real = os.path.realpath(path)
        if real in read:
            raise UsageError(f"{option} {path!r} is the results file {read[real]!r}: "
                             "writing it would destroy the input")  # fmt: skip
        if real in taken:
            raise UsageError(f"{taken[real]} and {option} both name {path!r}")
        taken[real] = option
        _check_writable(option, path)


def _split_passthrough(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _check(args: argparse.Namespace, passthrough: list[str]) -> int:
    from sessionstate.conformance._harness.runner import CheckOptions
    from sessionstate.conformance._harness.supervision.supervisor import supervise
    from sessionstate.conformance.subject import DEFAULT_TARGET

    problem = unsupported_dependencies()
    if problem:
        return _usage_error("check", RuntimeError(problem))
    values = command_values(args, "check")
    if values.pop("list_clauses"):
        return _spec()
    values["target"] = values["target"] or DEFAULT_TARGET
    if values["profile"] is None:
        del values["profile"]  # CheckOptions' default; SESSIONSTATE_PROFILE is pytest's
    return supervise(CheckOptions(**values, pytest_args=passthrough))


def _spec() -> int:
    from sessionstate.conformance.clauses import all_clauses

    for clause in all_clauses().values():
        requires = f"  [requires {', '.join(sorted(clause.requires))}]" if clause.requires else ""
        print(f"{clause.id:<9} {clause.level:<6} {clause.title}{requires}")
    return 0


def _explain(clause_id: str) -> int:
    from sessionstate.conformance._report.explain import explain

    return explain(clause_id)


def _demo() -> int:
    import torch

    from .reference import LatentBuffer, SessionStateManager

    manager = SessionStateManager(max_sessions=2)
    shared = torch.zeros(64)
    for session_id in ("a", "b", "c"):
        session = manager.get_or_create_session(session_id)
        frames = session.get_or_create("frames", LatentBuffer, LatentBuffer)
        frames.allocate(maxlen=4)
        frames.append(torch.zeros(16))
        session.attrs["prompt_embeds"] = shared
    for key, value in manager.stats().items():
        print(f"{key:>16}: {value}")
    return 0


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int, frame: object) -> None:
    raise _Signalled(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; its exit status. SIGTERM and SIGHUP are handled as Ctrl-C is
    (``check`` and ``fuzz`` stop their child processes first): one line, no traceback,
    exit 128 + the signal (130, 143, 129)."""
    import signal

    names = ("SIGTERM", "SIGHUP")
    previous = {s: signal.signal(s, _interrupt) for n in names if (s := getattr(signal, n, None))}
    try:
        return _main(argv)
    except KeyboardInterrupt as error:  # outside a test run (pytest reports its own)
        signum = getattr(error, "signum", None)
        print("sessionstate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED if signum is None else 128 + signum
    except BrokenPipeError:  # `sessionstate explain X | head`: the reader has gone
        # Python's own recipe: point stdout at devnull, so the flush at exit cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _main(argv: Sequence[str] | None) -> int:
    own, passthrough = _split_passthrough(sys.argv[1:] if argv is None else argv)
    parser = _build_parser()
    args = parser.parse_args(own)
    if args.command == "check":
        return _check(args, passthrough)
    if args.command == "fuzz":
        return _fuzz(args, passthrough)
    if args.command == "spec":
        return _spec()
    if args.command == "explain":
        return _explain(args.clause)
    if args.command == "init":
        return _init(args.directory, args.force)
    if args.command == "report":
        return _report(args.results, args.markdown, args.html)
    if args.command == "demo":
        return _demo()
    parser.print_usage(sys.stderr)
    print("sessionstate: error: a command is required; 'sessionstate --help' lists them",
          file=sys.stderr)  # fmt: skip
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
