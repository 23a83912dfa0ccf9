"""Hypothesis settings profiles for the suite: ``quick``, ``ci`` (default), ``deep``.

Every profile sets ``database``, ``derandomize``, ``deadline`` and
``print_blob`` explicitly: with ``CI`` set in the environment, Hypothesis loads
its own ``ci`` profile otherwise. Ours are registered under a
``sessionstate-`` prefix so Hypothesis' own ``ci`` profile is left alone.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

__all__ = ["DEFAULT_PROFILE", "PROFILES", "check_profile", "load_profile"]

DEFAULT_PROFILE = "ci"
PROFILES = ("quick", "ci", "deep", "triage", "mutation")

_COMMON = {
    "deadline": None,
    # The explain phase re-runs a failing machine many times to annotate lines
    # (26 s against 2 s on one zoo subject); the shrunk program is the report.
    "phases": [p for p in Phase if p is not Phase.explain],
    "print_blob": True,
    "report_multiple_bugs": False,
    # filter_too_much: a focused test (checks.focused_on) drops every example that
    # breaks another clause first; it reports a clause it never reached itself.
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
}


def _register() -> None:
    db_dir = os.environ.get("SESSIONSTATE_HYPOTHESIS_DB", ".hypothesis/sessionstate")
    settings.register_profile(
        "sessionstate-quick",
        max_examples=15,
        stateful_step_count=20,
        derandomize=True,
        database=None,
        **_COMMON,  # type: ignore[arg-type]
    )
    settings.register_profile(
        "sessionstate-ci",
        max_examples=60,
        stateful_step_count=30,
        derandomize=True,
        database=None,
        **_COMMON,  # type: ignore[arg-type]
    )
    settings.register_profile(
        "sessionstate-deep",
        max_examples=600,
        stateful_step_count=60,
        derandomize=False,
        database=DirectoryBasedExampleDatabase(db_dir),
        **_COMMON,  # type: ignore[arg-type]
    )
    # Whether a bug is caught, not how small its program gets: the ci search
    # without shrinking (the zoo self-tests; shrinking dominates a failing run).
    settings.register_profile(
        "sessionstate-triage",
        max_examples=60,
        stateful_step_count=30,
        derandomize=True,
        database=None,
        **{**_COMMON, "phases": [Phase.explicit, Phase.reuse, Phase.generate]},  # type: ignore[arg-type]
    )
    # Mutation testing re-runs the suite in one process many times.
    settings.register_profile(
        "sessionstate-mutation",
        max_examples=40,
        stateful_step_count=25,
        derandomize=True,
        database=None,
        **{
            **_COMMON,
            "suppress_health_check": [
                *_COMMON["suppress_health_check"],  # type: ignore[misc]
                HealthCheck.differing_executors,
            ],
        },  # type: ignore[arg-type]
    )


def check_profile(name: str) -> None:
    """``UsageError`` unless ``name`` is one of ``PROFILES``."""
    if name not in PROFILES:
        from .subject import UsageError

        raise UsageError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")


def load_profile(name: str, seed: int | None = None) -> None:
    """Register (idempotently) and load the suite profile ``name``.

    With ``seed``, the profile runs randomized (``derandomize=False``); the
    seed itself reaches Hypothesis through ``--hypothesis-seed``.
    """
    check_profile(name)
    _register()
    if seed is None:
        settings.load_profile(f"sessionstate-{name}")
        return
    settings.register_profile(
        f"sessionstate-{name}-seeded",
        parent=settings.get_profile(f"sessionstate-{name}"),
        derandomize=False,
        database=None,
    )
    settings.load_profile(f"sessionstate-{name}-seeded")
