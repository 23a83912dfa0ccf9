"""Hypothesis settings profiles for the suite: ``quick``, ``ci`` (default), ``deep``.

Every profile sets ``database``, ``derandomize``, ``deadline`` and
``print_blob`` explicitly: with ``CI`` set in the environment, Hypothesis loads
its own ``ci`` profile otherwise. Ours are registered under a
``sessionstate-`` prefix so Hypothesis' own ``ci`` profile is left alone.

A run of the suite keeps Hypothesis' own files (``use_private_storage``) out of the
current directory, and says in one line that ``--hypothesis-profile`` does not apply
to it (``ignored_profile_notice``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from sessionstate.conformance._harness.search import DEEP_DATABASE_DEFAULT, DEEP_DATABASE_ENV

# Each profile's wall-clock bound per test, enforced by `sessionstate check`'s supervisor:
# in `bounds`, which the supervisor imports without Hypothesis.
from sessionstate.conformance._harness.supervision.bounds import TEST_SECONDS

__all__ = [
    "DEFAULT_PROFILE",
    "INTERNAL_PROFILES",
    "PROFILES",
    "TEST_SECONDS",
    "check_profile",
    "default_fuzz_database",
    "ignored_profile_notice",
    "load_profile",
    "public_profiles",
    "storage_directory",
    "use_private_storage",
]

DEFAULT_PROFILE = "ci"
PROFILES = ("quick", "ci", "deep", "triage", "quick-unshrunk", "mutation", "fuzz")
#: Profiles accepted by ``--profile`` but never offered in its help or its error:
#: ``quick-unshrunk`` is the zoo self-tests' (``quick``'s search without shrinking: whether
#: a planted bug is caught at ``quick``, and as which clause, without the minutes shrinking
#: takes); ``mutation`` is the bench's (``bench/mutation_test.py`` passes it to the plugin);
#: ``fuzz`` is the one ``sessionstate fuzz`` has HypoFuzz's workers load.
INTERNAL_PROFILES = ("quick-unshrunk", "mutation", "fuzz")


def public_profiles() -> tuple[str, ...]:
    """The profiles ``--profile`` offers (every one but ``INTERNAL_PROFILES``)."""
    return tuple(p for p in PROFILES if p not in INTERNAL_PROFILES)


_COMMON = {
    "deadline": None,
    # The explain phase re-runs a failing machine many times to annotate lines
    # (26 s against 2 s on one zoo subject); the shrunk program is the report.
    "phases": [p for p in Phase if p is not Phase.explain],
    "print_blob": True,
    "report_multiple_bugs": False,
    # Health checks judge a test's data, not the subject: none may fail a clause.
    # filter_too_much: a focused test (checks.focused_on) drops every example that
    # breaks another clause first; it reports a clause it never reached itself.
    # large_base_example: a state machine's smallest program draws a manager first.
    # (nested_given stays on: HypoFuzz will not fuzz a test that suppresses it.)
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
}


#: The phases of a search that stops at the first failure it finds (no shrinking).
_UNSHRUNK = [Phase.explicit, Phase.reuse, Phase.generate]


def _register() -> None:
    db_dir = os.environ.get(DEEP_DATABASE_ENV) or DEEP_DATABASE_DEFAULT
    settings.register_profile(
        "sessionstate-quick",
        max_examples=15,
        stateful_step_count=20,
        derandomize=True,
        database=None,
        **_COMMON,  # type: ignore[arg-type]
    )
    settings.register_profile(
        "sessionstate-quick-unshrunk",
        parent=settings.get_profile("sessionstate-quick"),
        phases=_UNSHRUNK,
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
        **{**_COMMON, "phases": _UNSHRUNK},  # type: ignore[arg-type]
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


def _register_fuzz(database: str | None) -> None:
    """``fuzz``: the ``ci`` profile randomized (HypoFuzz refuses a derandomized test) and
    on the database named by ``database``, else ``$SESSIONSTATE_DATABASE``, else
    ``default_fuzz_database()`` (made if missing: the fuzzer writes it)."""
    from sessionstate.conformance._harness.database import DATABASE_ENV, open_database
    from sessionstate.conformance._harness.options import env_var

    target = os.environ.get(env_var("subject"))  # `hypothesis fuzz` run by hand
    spec = database or os.environ.get(DATABASE_ENV) or str(default_fuzz_database(target))
    settings.register_profile(
        "sessionstate-fuzz",
        parent=settings.get_profile("sessionstate-ci"),
        derandomize=False,
        database=open_database(spec, create=True),
    )


def default_fuzz_database(target: str | None = None) -> Path:
    """Where ``sessionstate fuzz`` keeps what it finds about ``target`` when no
    ``--database`` is given: a folder of its own per subject under ``fuzz-examples``
    (``mypkg.conformance_subject-1a2b3c4d``), since a stored failure is replayed against
    whatever subject the next run checks. ``None``: the folder of them all."""
    base = storage_directory() / "fuzz-examples"
    if target is None:
        return base
    import hashlib
    import re

    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", target).strip("._")[:64] or "subject"
    return base / f"{readable}-{hashlib.sha256(target.encode()).hexdigest()[:8]}"


def check_profile(name: str) -> None:
    """``UsageError`` unless ``name`` is one of ``PROFILES``."""
    if name not in PROFILES:
        from sessionstate.conformance.subject import UsageError

        raise UsageError(f"unknown profile {name!r}; choose one of {', '.join(public_profiles())}")


def load_profile(name: str, seed: int | None = None, database: str | None = None) -> None:
    """Register (idempotently) and load the suite profile ``name``.

    With ``seed``, the profile runs randomized (``derandomize=False``); the
    seed itself reaches Hypothesis through ``--hypothesis-seed``. With ``database``
    (a directory that exists, or ``redis://HOST:PORT[/DB]``: ``database.open_database``),
    the run uses that example database, randomized, so its reuse phase replays every
    failure stored there first; a ``UsageError`` says what is wrong with the name.
    """
    check_profile(name)
    _register()
    if name == "fuzz":
        _register_fuzz(database)
        settings.load_profile("sessionstate-fuzz")
        from sessionstate.conformance._harness.fuzz_worker import (
            COUNTS_ENV,
            count_examples,
            hypofuzz_compat,
        )

        hypofuzz_compat()
        if os.environ.get(COUNTS_ENV):  # a worker of `sessionstate fuzz`
            from sessionstate.conformance._harness.supervision import forks

            count_examples(os.environ[COUNTS_ENV])
            forks.arm_for_good()  # it runs tests outside pytest's call phase, where the guard arms
        return
    if seed is None and database is None:
        settings.load_profile(f"sessionstate-{name}")
        return
    db = None
    if database is not None:
        from sessionstate.conformance._harness.database import guarded_database

        db = guarded_database(database)  # its failures are the run's, not the tests'
    settings.register_profile(
        f"sessionstate-{name}-seeded",
        parent=settings.get_profile(f"sessionstate-{name}"),
        derandomize=False,
        database=db,
    )
    settings.load_profile(f"sessionstate-{name}-seeded")


#: Set by the user, it decides where Hypothesis keeps its files, and the suite leaves it be.
STORAGE_ENV = "HYPOTHESIS_STORAGE_DIRECTORY"


def storage_directory() -> Path:
    """Where a run of the suite has Hypothesis keep its files: ``sessionstate/hypothesis``
    in the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``; the temporary folder
    when there is no home)."""
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        try:
            cache = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory to be found
            cache = tempfile.gettempdir()
    return Path(cache) / "sessionstate" / "hypothesis"


def use_private_storage() -> Path | None:
    """Have Hypothesis keep its files in ``storage_directory()``, not in ``.hypothesis/``
    under the current directory, unless ``HYPOTHESIS_STORAGE_DIRECTORY`` says where.

    Hypothesis writes there even when no profile has an example database: caches of the
    constants in the modules under test (the subject's included) and of Unicode data, the
    first on collection. They are caches, so a per-user folder serves them as well, and
    ``sessionstate check`` or ``explain`` leaves the directory it is run from as it was.
    The ``deep`` profile's database is not among them: it lives where
    ``SESSIONSTATE_HYPOTHESIS_DB`` says (default ``.hypothesis/sessionstate``), for a CI
    cache to keep. Returns the folder chosen, or ``None`` when the user's variable decides.
    """
    if os.environ.get(STORAGE_ENV):
        return None
    from hypothesis.configuration import set_hypothesis_home_dir

    where = storage_directory()
    set_hypothesis_home_dir(where)
    return where


def ignored_profile_notice(requested: str | None, profile: str) -> str | None:
    """The one line to print when ``--hypothesis-profile`` was given to a run of the suite.

    The suite's tests run under its own profile, whatever Hypothesis loaded: its settings
    (no deadline, no explain phase, the health checks it suppresses, a database only where
    a profile says) are what make a failure a clause's and a pass reproducible, and a
    profile of the caller's would replace all of them. So the option is not honoured; it
    is reported, once, naming the option that does choose.
    """
    if not requested:
        return None
    return (
        f"sessionstate: --hypothesis-profile {requested} does not apply to the conformance "
        f"tests, which run under the suite's profile {profile!r}; choose it with "
        "'sessionstate check --profile' or '--sessionstate-profile'"
    )
