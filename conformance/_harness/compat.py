"""The releases of pytest, Hypothesis, pytest-xdist and NumPy the suite runs on, and why.

The suite leans on a few things its dependencies do not promise to keep, and on features
that appeared in a given release. Each is named here, once, with the first release that
has it; ``pyproject.toml`` declares these same floors (``tests/cli/test_compat.py`` holds
them equal), and ``nox -s lowest`` runs the suite on exactly these releases, ``nox -s
newest`` on the newest ones (both in ``.ci/run``).

What the suite relies on:

- Hypothesis ``hypothesis.stateful.get_state_machine_test(factory)`` and its
  ``.hypothesis.inner_test(data)`` (``_machine/stateful.py``): a state machine's program
  drawn from an ordinary ``@given`` test's ``data``. From 6.124.5 to 6.138.14 its
  ``inner_test`` wants an argument more and every stateful clause ERRORs; older releases
  (6.90.0, say) do not have the function, and the suite cannot be collected.
- Hypothesis ``test.hypothesis.inner_test`` (``_harness/supervision/guard.py``), the documented place
  to wrap each example; ``_hypothesis_internal_add_digest`` and
  ``_hypothesis_internal_use_seed`` (``stable_keys.py``, ``database.py``), which key the
  example database and the seed by the suite's own test ids; ``hypothesis.core.
  decode_failure`` and ``hypothesis.database.choices_to_bytes`` (``reproduce.py``; the
  first also in ``runner.py``, to refuse a malformed ``--blob`` in one line);
  ``hypothesis.internal.conjecture.providers`` and ``constants_ast`` (``input_reach.py``,
  a measurement, not a check); ``hypothesis.internal.observability`` and
  ``ConjectureResult`` (``fuzz_worker.py``, HypoFuzz's side).
- pytest-xdist ``--dist worksteal`` (``check -n N`` and ``fuzz``' quick pass): 3.2.0.
- pytest ``config.stash``, ``pytest.Parser`` and the hook signatures of pytest 7.
- NumPy 1.23.2: the first release with wheels for Python 3.11 (older ones build from
  source, and the oldest fail to).

``unsupported()`` is checked before anything imports the suite (``sessionstate check``,
``fuzz`` and the plugin when a run asks for the suite): an older release is one line,
exit 2 (pytest's usage error on the plain pytest route), never a clause failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

__all__ = ["FLOORS", "Floor", "unsupported"]


@dataclass(frozen=True)
class Floor:
    """The oldest release of ``distribution`` the suite runs on, and what it needs of it."""

    distribution: str
    version: str
    needs: str


FLOORS = (
    Floor("hypothesis", "6.138.15", "get_state_machine_test(...).hypothesis.inner_test(data)"),
    Floor("pytest", "7.0", "config.stash and pytest.Parser"),
    Floor("pytest-xdist", "3.2.0", "--dist worksteal"),
    Floor("numpy", "1.23.2", "wheels for Python 3.11"),
)


def _older(installed: str, floor: str) -> bool:
    """Whether release ``installed`` comes before ``floor``, by PEP 440 (``packaging``,
    which pytest itself depends on); a version that is not PEP 440 is not judged."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(installed) < Version(floor)
    except InvalidVersion:
        return False


def unsupported() -> str | None:
    """One line naming every installed dependency older than its floor, with the
    release needed and why; ``None`` when all are recent enough. A dependency that is
    not installed is left to the import that needs it."""
    problems = []
    for floor in FLOORS:
        try:
            installed = metadata.version(floor.distribution)
        except metadata.PackageNotFoundError:
            continue
        if _older(installed, floor.version):
            problems.append(
                f"{floor.distribution} {installed} is installed, the suite needs "
                f"{floor.distribution}>={floor.version} ({floor.needs})"
            )
    return "; ".join(problems) or None
