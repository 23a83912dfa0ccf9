"""A run's state in one pytest process, kept in ``config.stash`` (``RUN_STATE``).

``new_run_state`` makes it in ``pytest_configure`` from the options (a bad option is a
``pytest.UsageError`` then); the plugin's hooks and the suite's collection read it:
``load_configured_subject`` gives a test module that parametrizes by the subject's specs
(``suite/test_obj.py``, ``suite/test_adapt.py``) the one ``Subject`` this process loaded.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

from sessionstate.conformance._harness.options import env_var, flag
from sessionstate.conformance._harness.short_ids import SUITE_DIR
from sessionstate.conformance.subject import DEFAULT_TARGET, UsageError

if TYPE_CHECKING:
    from sessionstate.conformance._harness.expectations import Expectation
    from sessionstate.conformance.subject import Subject

__all__ = [
    "RUN_STATE",
    "Configured",
    "RunState",
    "facts",
    "inside",
    "is_xdist_controller",
    "json_facts",
    "load_configured_subject",
    "new_run_state",
    "run_state",
    "selected_clauses",
    "suite_requested",
]

# The variables the options table names (deadline.TIMEOUT_ENV is the last one's too).
SUBJECT_ENV = env_var("subject")
PROFILE_ENV = env_var("profile")
CALL_TIMEOUT_ENV = env_var("call-timeout")


class Configured(TypedDict):
    """What ``pytest_configure`` puts in a run's state."""

    target: str
    profile: str
    seed: int | None
    expectations: list[Expectation]
    subject: Subject | None
    started: float
    selected: list[str]
    facts: dict[str, Any] | None
    call_timeout: float | None
    collected: dict[str, list[str]]
    collected_count: int | None
    #: An xdist controller's: the ids its workers collected (it knows no clauses).
    collected_ids: list[str]
    profile_loaded: bool


class RunState(Configured, total=False):
    """A run's state in this process; ``results`` once the JSON results are made."""

    results: dict[str, Any]


RUN_STATE = pytest.StashKey[RunState]()


def new_run_state(config: pytest.Config) -> RunState:
    """The run's state as the options and variables ask: an option wins over its
    variable, which wins over the suite's default."""
    from sessionstate.conformance._harness.expectations import parse_expectations
    from sessionstate.conformance._harness.profiles import DEFAULT_PROFILE, check_profile

    target = config.getoption(flag("subject")) or os.environ.get(SUBJECT_ENV) or DEFAULT_TARGET
    profile = config.getoption(flag("profile")) or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
    path = config.getoption(flag("expectations"))
    try:
        check_profile(profile)  # checked now, loaded once conformance tests are collected
        expectations = parse_expectations(path) if path else []
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    return {
        "target": target,
        "profile": profile,
        "seed": config.getoption(flag("seed")),
        "expectations": expectations,
        "subject": None,
        "started": time.monotonic(),
        # Checked now, so that a bad selection is a usage error in an xdist controller too.
        "selected": selected_clauses(config),
        "facts": None,
        "call_timeout": _call_timeout(config),
        # Test id -> clauses, for every conformance test this process collected; an xdist
        # controller collects none and only learns how many its workers did.
        "collected": {},
        "collected_count": None,
        "collected_ids": [],
        "profile_loaded": False,
    }


def _call_timeout(config: pytest.Config) -> float | None:
    """The per-call deadline (``watchdog.Watchdog``) the options ask for; ``None``: none."""
    from sessionstate.conformance._harness.supervision.deadline import deadline_from

    value = config.getoption(flag("call-timeout")) or os.environ.get(CALL_TIMEOUT_ENV)
    try:
        seconds = deadline_from(value)
    except ValueError as error:
        message = f"{flag('call-timeout')} / {CALL_TIMEOUT_ENV}: {error}"
        raise pytest.UsageError(message) from None
    # Stepping through a test under --trace must not be cut short by the deadline.
    return None if config.getoption("trace", False) else seconds


def selected_clauses(config: pytest.Config) -> list[str]:
    """The clauses ``--sessionstate-clause`` selects (all of them without it), in spec order.

    From the options alone: an xdist controller, which collects nothing, reports
    the selection its workers ran.
    """
    from sessionstate.conformance.clauses import all_clauses

    known = all_clauses()
    wanted = config.getoption(flag("clause"))
    for cid in wanted:
        if cid not in known and cid not in {c.group for c in known.values()}:
            raise pytest.UsageError(f"{flag('clause')}: unknown clause or group {cid!r}")
    return [c for c in known if not wanted or c in wanted or known[c].group in wanted]


def run_state(config: pytest.Config) -> RunState:
    """This process's run state (``pytest_configure`` put it there)."""
    return config.stash[RUN_STATE]


def load_configured_subject(config: pytest.Config) -> Subject:
    """The Subject named by the options (loaded once per process)."""
    state = run_state(config)
    subject = state["subject"]
    if subject is None:
        from sessionstate.conformance.subject import load_subject

        try:
            subject = state["subject"] = load_subject(state["target"])
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
    return subject


def facts(config: pytest.Config) -> dict[str, Any]:
    """What is under test (``under_test.gather``), once per process."""
    state = run_state(config)
    found = state["facts"]
    if found is None:
        from sessionstate.conformance._harness import under_test

        found = state["facts"] = under_test.gather(load_configured_subject(config))
    return found


def json_facts(config: pytest.Config) -> dict[str, Any]:
    """The facts for the JSON results: this process's, the workers', or, when the subject
    was never loaded (no worker reported: all crashed), the target and the environment."""
    state = run_state(config)
    if state["facts"] is not None or state["subject"] is not None:
        return facts(config)
    from sessionstate.conformance._harness import under_test

    return {
        "subject": state["target"],
        "capabilities": [],
        "environment": under_test.environment(),
    }


#: The options that ask for the suite by being given.
_ASKING = ("subject", "profile", "clause", "expectations", "report-json", "seed", "junitxml",
           "strict")  # fmt: skip


def suite_requested(config: pytest.Config) -> bool:
    """Whether this run asked for the suite: an option or variable of ours, or an argument
    naming the suite (``--pyargs sessionstate.conformance...`` or a path into it)."""
    if any(config.getoption(flag(name)) for name in _ASKING):
        return True
    if os.environ.get(SUBJECT_ENV) or os.environ.get(PROFILE_ENV):
        return True
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if "sessionstate.conformance" in arg or inside(path, SUITE_DIR):
            return True
    return False


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` resolves to somewhere under ``folder``."""
    try:
        return path.resolve().is_relative_to(folder)
    except OSError:
        return False


def is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands tests to xdist workers and runs none itself."""
    return config.pluginmanager.has_plugin("dsession")
