"""sessionstate: the reference session state manager for world-model serving
(vLLM-omni RFC #4480) and a conformance suite any other implementation can run.

* ``sessionstate.reference``: the reference implementation.
* ``sessionstate.conformance``: the clause-numbered spec and the stateful suite.
* ``sessionstate.fixtures``: subjects to test against, broken ones included.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sessionstate")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0+unknown"

__all__ = ["__version__"]
