"""How a run searches, as its header and JSON report say: in a fixed order (derandomized),
from a given seed, or from a new seed each run; and which example database it replays.

``quick``, ``ci`` and ``triage`` are derandomized: the same examples in every run of one
suite version. ``deep`` (and ``fuzz``, HypoFuzz's) are randomized, and ``deep`` keeps the
failures it finds in its own database (``SESSIONSTATE_HYPOTHESIS_DB``, default
``.hypothesis/sessionstate``) for the next run to replay. ``--seed N`` makes any profile
randomized from ``N``; ``--database`` makes a run replay that database, from seed 0 when no
seed is given (``CheckOptions.run_seed``).

Light (standard library only): the header is printed before the suite is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "DEEP_DATABASE_DEFAULT",
    "DEEP_DATABASE_ENV",
    "RANDOMIZED_PROFILES",
    "is_randomized",
    "order",
    "profile_database",
    "run_database",
]

#: The profiles whose search draws a new seed each run (unless a seed is given).
RANDOMIZED_PROFILES = ("deep", "fuzz")
#: Where the ``deep`` profile keeps its example database.
DEEP_DATABASE_ENV = "SESSIONSTATE_HYPOTHESIS_DB"
DEEP_DATABASE_DEFAULT = ".hypothesis/sessionstate"


def is_randomized(profile: str, seed: int | None) -> bool:
    """Whether a run of ``profile`` with ``seed`` (``None``: none given) is randomized."""
    return seed is not None or profile in RANDOMIZED_PROFILES


def order(profile: str, seed: int | None) -> str:
    """The header's word for the search: ``seed N``, ``randomized (a new seed each run)``
    or ``derandomized``."""
    if seed is not None:
        return f"seed {seed}"
    if profile in RANDOMIZED_PROFILES:
        return "randomized (a new seed each run)"
    return "derandomized"


def profile_database(profile: str) -> str | None:
    """The example database ``profile`` keeps on its own, as an absolute path: ``deep``'s;
    ``None`` for every other profile."""
    if profile != "deep":
        return None
    return str(Path(os.environ.get(DEEP_DATABASE_ENV) or DEEP_DATABASE_DEFAULT).resolve())


def run_database(profile: str, given: str | None) -> str | None:
    """The database a run replays and writes, as its reports name it: ``--database`` (a
    Redis URL's password redacted, a directory's absolute path), else the profile's own."""
    if given:
        from sessionstate.conformance._harness.database import describe

        return describe(given)
    return profile_database(profile)
