"""A run's state in one pytest process, kept in ``config.stash`` (``RUN_STATE``).

The plugin fills it in ``pytest_configure`` from the options; its hooks and the suite's
collection read it: ``load_configured_subject`` gives a test module that parametrizes by
the subject's specs (``suite/test_obj.py``, ``suite/test_adapt.py``) the one ``Subject``
this process loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

import pytest

if TYPE_CHECKING:
    from sessionstate.conformance._harness.expectations import Expectation
    from sessionstate.conformance.subject import Subject

__all__ = ["RUN_STATE", "Configured", "RunState", "load_configured_subject", "run_state"]


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


def run_state(config: pytest.Config) -> RunState:
    """This process's run state (``pytest_configure`` put it there)."""
    return config.stash[RUN_STATE]


def load_configured_subject(config: pytest.Config) -> Subject:
    """The Subject named by the options (loaded once per process)."""
    state = run_state(config)
    subject = state["subject"]
    if subject is None:
        from sessionstate.conformance.subject import UsageError, load_subject

        try:
            subject = state["subject"] = load_subject(state["target"])
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
    return subject
