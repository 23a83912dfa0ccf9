"""The pytest plugin (entry point ``pytest11``): the suite's options, markers and
``subject`` fixture; everything else is delegated.

Light at load time, as Hypothesis' own plugin is: it imports neither torch, Hypothesis
nor the subject until pytest is configured, so ``-p sessionstate.conformance.plugin`` is
cheap and options work with ``pytest --pyargs sessionstate.conformance`` (options in an
installed package's conftest.py are ignored there; pytest #1596).

``pytest_configure`` puts the run's state in ``config.stash`` (``run_state.RUN_STATE``,
``recording.RECORDING``) and registers one plugin object per job, each in the module
named after it; the hooks live there:

==========================  =================================================================
``_harness.stable_keys``    derandomized draws keyed by the suite's own test ids
``_harness.collection``     profile and devices before import; selection; capability,
                            hook and expectation skips
``_harness.recording``      each test's record, the supervisor's journal, why a run stopped
``_harness.supervision.guard``          the watchdog on every call into the subject, the test's budget
``_harness.run_results``    the JSON results, the per-clause JUnit XML, the exit status
``_report.header``          the report header, the clause table at the end
==========================  =================================================================

The options are generated from one table, ``_harness.options.OPTIONS``.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from sessionstate.conformance._harness.collection import Collection
from sessionstate.conformance._harness.options import add_pytest_options
from sessionstate.conformance._harness.recording import RECORDING, Recording
from sessionstate.conformance._harness.run_results import RunResults
from sessionstate.conformance._harness.run_state import (
    RUN_STATE,
    load_configured_subject,
    new_run_state,
    suite_requested,
)
from sessionstate.conformance._harness.short_ids import SUITE_DIR
from sessionstate.conformance._harness.stable_keys import StableKeys
from sessionstate.conformance._harness.supervision.guard import Guard
from sessionstate.conformance._report.header import Header


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser.getgroup("sessionstate", "session-state conformance suite"))


def pytest_configure(config: pytest.Config) -> None:
    if suite_requested(config):
        from sessionstate.conformance._harness.compat import unsupported

        problem = unsupported()
        if problem:  # before a suite module is imported: one line, never a clause failure
            raise pytest.UsageError(f"sessionstate: {problem}")
    config.addinivalue_line("markers", "clause(*ids): the spec clause(s) this test checks")
    config.addinivalue_line("markers", "cuda: needs a real CUDA device")
    config.stash[RUN_STATE] = new_run_state(config)
    config.stash[RECORDING] = recording = Recording(config)
    jobs = {
        "stable-keys": StableKeys(SUITE_DIR),
        "collection": Collection(),
        "recording": recording,
        "guard": Guard(),
        "run-results": RunResults(),
        "header": Header(),
    }
    for name, job in jobs.items():
        config.pluginmanager.register(job, f"sessionstate-{name}")
    if suite_requested(config):
        _hypothesis_for_the_suite(config)
        from sessionstate.conformance._harness.supervision import forks
        from sessionstate.conformance._harness.supervision.own_outcomes import install_sigint

        install_sigint()  # a Ctrl-C is the suite's KeyboardInterrupt, not the subject's
        forks.install()  # a fork in a test (guard arms it) never runs the suite twice


@pytest.fixture(scope="session")
def subject(pytestconfig: pytest.Config) -> Any:
    """The Subject under test, chosen per process by option or environment."""
    return load_configured_subject(pytestconfig)


def _hypothesis_for_the_suite(config: pytest.Config) -> None:
    """A run of the suite keeps Hypothesis' files out of the current directory, and says
    once that ``--hypothesis-profile`` does not apply to it (see ``profiles``)."""
    from sessionstate.conformance._harness.profiles import (
        ignored_profile_notice,
        use_private_storage,
    )

    use_private_storage()
    profile = config.stash[RUN_STATE]["profile"]
    notice = ignored_profile_notice(config.getoption("hypothesis_profile", None), profile)
    if notice and not hasattr(config, "workerinput"):  # the controller says it, once
        sys.stderr.write(notice + "\n")
