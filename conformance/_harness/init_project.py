"""``sessionstate init [DIR]``: a starter subject and a CI workflow for an implementer."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from sessionstate.conformance._harness.atomic import stage, write_error
from sessionstate.conformance._harness.requirement import InstallSource, install_source
from sessionstate.conformance.subject import UsageError

__all__ = ["init_project", "workflow_text"]

SUBJECT_TEMPLATE = '''\
"""The subject the session-state conformance suite checks: edit it to point at YOUR code.

Run it:  sessionstate check conformance_subject:subject
Every field but ``name`` is optional; a missing hook skips only the clauses that need it.
Unedited, every hook below is the bundled reference's, and the check refuses it (exit 2):
it would test the reference, not your code. The report header names the hooks that are yours.
"""

from sessionstate.conformance import Subject

# Replace these imports with your implementation's.
from sessionstate.reference import (
    SessionStateManager,  # your manager class
    device_bytes,  # your byte accounting: device_bytes(value, seen) -> dict[str, int]
    resolve_session_state_config,  # your env/config resolution
)

subject = Subject(
    # Shown in reports and the compliance matrix.
    name="my-backend",
    # Called as manager_factory(max_sessions=..., byte_budget=..., lock_factory=...).
    manager_factory=SessionStateManager,
    # resolve_session_state_config(enable=..., max_sessions=...) -> (bool, int); None skips ENV-*.
    config_resolver=resolve_session_state_config,
    # device_bytes(value, seen) -> {device: bytes}; None skips the clauses that call it directly.
    accounting=device_bytes,
    # An allocated StateObject accepting append(payload); None: a suite-owned buffer counted
    # through your accounting.
    buffer_factory=None,
    # Optional features you claim: "threadsafe" (LOCK-4, LOCK-5), "admission" (ADMIT-*, LOCK-6),
    # "require_session" (LOST-*: require_session() and SessionStateLostError). A feature you
    # have but do not claim is not checked: its clauses are skipped as not applicable.
    capabilities=frozenset({"threadsafe", "admission"}),
    # The devices to allocate on (cpu always kept), e.g. ("cpu", "meta"); None: every device.
    devices=None,
    # StateObjectSpecs for your own StateObjects (OBJ-*) and AdapterSpecs for adapters (ADAPT-*).
    state_objects=(),
    adapters=(),
)
'''

WORKFLOW_TEMPLATE = """\
# Session-state conformance: runs the sessionstate suite against conformance_subject.py.
# Pushes and pull requests run the derandomized `ci` profile (reproducible gating); a nightly
# run explores with the randomized `deep` profile. Its example database is cached under a new
# key every run (the newest one is restored first), so that a failure found once is replayed
# first on every later run, nightly runs on an unchanged commit included.
name: sessionstate conformance
on:
  push:
  pull_request:
  workflow_dispatch:
  schedule:
    - cron: "17 3 * * *"
# Least privilege: the job reads the repository; only the step publishing the results
# as a check run writes (its job asks for checks: write).
permissions:
  contents: read
# One run per branch at a time; a newer push to a pull request cancels the older run.
concurrency:
  group: ${{{{ github.workflow }}}}-${{{{ github.ref }}}}
  cancel-in-progress: ${{{{ github.event_name == 'pull_request' }}}}
jobs:
  conformance:
    runs-on: ubuntu-latest
    # The `ci` profile takes minutes; the nightly `deep` one longer. A hung run stops here.
    timeout-minutes: 90
    permissions:
      contents: read
      checks: write
    env:
      # Where sessionstate comes from: the one line to change. `sessionstate init` filled
      # it from how sessionstate was installed where it ran ({requirement_how}).
      # A runner installs it from a git repository, pinned to a tag or commit so that every
      # run checks against the same suite:
      #   sessionstate @ git+https://github.com/<owner>/<repo>@<tag-or-commit>
      # or from a wheel committed to this repository (build one: pip wheel --no-deps -w ci .):
      #   ./ci/sessionstate-{version}-py3-none-any.whl
      # Once sessionstate is on PyPI: sessionstate=={version}
      SESSIONSTATE_REQUIREMENT: {requirement}
      PROFILE: ${{{{ github.event_name == 'schedule' && 'deep' || 'ci' }}}}
      SESSIONSTATE_HYPOTHESIS_DB: .hypothesis/sessionstate
      # The suite's own bound on the whole run, inside the job's 90 minutes: a slow subject
      # ends with a verdict and its reports (tests not reached unchecked), not a killed job.
      SESSIONSTATE_RUN_TIMEOUT: "4800"
    steps:
      - uses: actions/checkout@v5
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
          # pip's downloads, keyed by this file: it names what is installed.
          cache: pip
          cache-dependency-path: .github/workflows/sessionstate.yml
      # A cache entry is never overwritten, so the key is new every run and the newest
      # entry of this branch (else of any branch this one may read) is restored.
      - uses: actions/cache@v5
        with:
          path: .hypothesis
          key: hypothesis-${{{{ github.ref_name }}}}-${{{{ github.run_id }}}}-${{{{ github.run_attempt }}}}
          restore-keys: |
            hypothesis-${{{{ github.ref_name }}}}-
            hypothesis-
      # torch first, from PyTorch's CPU index: PyPI's Linux torch is a CUDA build that pulls
      # gigabytes of CUDA libraries a GPU-less runner never uses, and once a torch is
      # installed nothing below replaces it. Pin it (torch==X.Y.Z) to test the torch you ship.
      - name: Install torch (CPU build)
        run: pip install torch --index-url https://download.pytorch.org/whl/cpu
      - name: Install sessionstate
        run: |
          case "$SESSIONSTATE_REQUIREMENT" in
            *OWNER/REPO*)
              echo "::error::set SESSIONSTATE_REQUIREMENT in this workflow to where sessionstate comes from"
              exit 1 ;;
            *file://*)
              echo "::error::SESSIONSTATE_REQUIREMENT names a path on the machine that ran sessionstate init, which a runner cannot reach: set it to a git URL or a wheel committed to this repository"
              exit 1 ;;
          esac
          pip install "$SESSIONSTATE_REQUIREMENT"
      # conformance_subject.py imports your implementation: installed here when this
      # repository is a Python project, else imported from the checkout (sessionstate check
      # puts the current directory on sys.path).
      - name: Install this repository's project
        run: |
          if [ -f pyproject.toml ] || [ -f setup.py ]; then
            pip install .
          else
            echo "no pyproject.toml or setup.py here: the subject imports from the checkout"
          fi
      - name: Run the conformance suite
        run: >
          sessionstate check conformance_subject:subject --profile "$PROFILE"
          --junitxml reports/junit.xml --markdown reports/summary.md
          --report-json reports/sessionstate.json
      # The steps below run also when the suite failed; reports/ is missing when it never
      # ran (a failed install), and each of them then does nothing.
      - name: Job summary
        if: always()
        run: |
          if [ -f reports/summary.md ]; then
            cat reports/summary.md >> "$GITHUB_STEP_SUMMARY"
          fi
      # One check run with a line per test, failures annotated. A pull request from a fork
      # gets a read-only token that cannot create check runs: its results are in the job
      # summary and the artifact.
      - name: Publish the test results
        if: >-
          always() && (github.event_name != 'pull_request'
          || github.event.pull_request.head.repo.full_name == github.repository)
        uses: mikepenz/action-junit-report@v5
        with:
          report_paths: reports/junit.xml
          check_name: sessionstate conformance results
          require_tests: false
      - name: Upload the reports
        if: always()
        uses: actions/upload-artifact@v6
        with:
          name: sessionstate-report
          path: reports/
          if-no-files-found: ignore
"""


def init_project(
    directory: str, force: bool = False, source: InstallSource | None = None
) -> list[Path]:
    """Write the starter files into ``directory``; refuse to overwrite unless ``force``.

    The workflow installs sessionstate by ``source`` (default: how this one was
    installed, ``install_source()``).

    All or nothing: every destination is checked first (the folder is a folder, no file
    is a directory or a dangling symbolic link, which is never followed), then every
    file is written to a temporary file beside its destination, and only when all were
    written are they moved into place. Any failure is a ``UsageError`` naming the path
    and why, with nothing left behind: no temporary file, no folder made for it.
    """
    from sessionstate import __version__

    root = Path(directory)
    files = {
        root / "conformance_subject.py": SUBJECT_TEMPLATE,
        root / ".github" / "workflows" / "sessionstate.yml": workflow_text(
            install_source() if source is None else source, __version__
        ),
    }
    for path in files:
        _check_destination(path, force)
    made: list[Path] = []
    staged: dict[Path, Path] = {}
    try:
        for path, text in files.items():
            made += _make_folders(path.parent)
            staged[path] = stage(path, text, exclusive=True)
        for path, temporary in staged.items():
            os.replace(temporary, os.path.realpath(path))
    except OSError as error:
        for temporary in staged.values():
            temporary.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        where = error.filename or directory
        raise UsageError(f"cannot write {str(where)!r}: {write_error(error)}") from None
    return list(files)


def workflow_text(source: InstallSource, version: str) -> str:
    """The workflow, installing sessionstate by ``source``'s requirement."""
    # A JSON string is a YAML double-quoted scalar: any URL or path stays one value.
    return WORKFLOW_TEMPLATE.format(
        version=version, requirement=json.dumps(source.requirement), requirement_how=source.how
    )


def _check_destination(path: Path, force: bool) -> None:
    """``UsageError`` unless ``path`` can be (over)written as a file: no part of its
    folder is a file or a dangling link, it is not a directory nor a dangling link, and
    it does not exist unless ``force``."""
    for folder in reversed(path.parents):
        if folder.is_symlink() and not folder.exists():
            raise UsageError(f"{str(folder)!r} is a symbolic link to nothing; not followed")
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"{str(folder)!r} is not a directory")
    if path.is_symlink() and not path.exists():
        raise UsageError(f"{str(path)!r} is a symbolic link to nothing; not followed")
    if path.is_dir():
        raise UsageError(f"{str(path)!r} is a directory")
    if path.exists() and not force:
        raise UsageError(f"{path} already exists; pass --force to overwrite")


def _make_folders(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; the ones made, outermost first."""
    missing = [f for f in (folder, *folder.parents) if not f.exists()]
    for made in reversed(missing):
        made.mkdir()
    return list(reversed(missing))
