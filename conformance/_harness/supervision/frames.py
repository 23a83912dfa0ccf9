"""Whose code a frame runs: the suite's, a library's the suite runs on, or the subject's.

One rule, read from a file name and what this process has imported: the ``conformance``
package and the command line are the suite; the standard library and the libraries the
suite runs on (``LIBRARIES``, located where this process imported them) are neutral;
everything else (the subject, ``reference/``, ``fixtures/``) is the subject's. The watchdog
names the subject's call in flight by it, and a failure shows the subject's own frames
by it (``checks.subject_frames``). The supervisor, in a process that imports none of these
libraries, applies the same ``LIBRARIES`` and ``STDLIB_DIRS`` to file names alone (``supervisor``'s ``_kind``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator

__all__ = [
    "CONFORMANCE_DIR", "LIBRARIES", "NEUTRAL", "STDLIB_DIRS", "SUBJECT", "SUITE", "kind_of",
]  # fmt: skip

SUITE, NEUTRAL, SUBJECT = 0, 1, 2

#: The installed ``conformance`` package (this module is in its ``_harness/supervision``).
CONFORMANCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The top-level package's own modules (the command line), not its subpackages.
_TOP_DIR = os.path.dirname(os.path.abspath(sys.modules[__name__.split(".")[0]].__file__ or ""))
#: Libraries the suite runs on or calls itself: their frames are never the subject's call.
#: (Subject code calling into them stays inside the subject's outermost frame anyway.)
LIBRARIES = (
    "_pytest", "pytest", "pluggy", "xdist", "execnet", "hypothesis", "_hypothesis_pytestplugin",
    "_hypothesis_globals", "_hypothesis_ftz_detector", "sortedcontainers", "attr", "coverage",
    "iniconfig", "packaging", "typing_extensions", "exceptiongroup", "torch", "numpy",
    # torch's own dependencies, which it imports lazily: the first jagged nested tensor
    # imports torch.distributed.tensor and with it sympy (seconds on a loaded machine).
    "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "filelock", "fsspec",
)  # fmt: skip
_kinds: dict[str, int] = {}


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")})


#: The standard library's folders, each ending in a separator.
STDLIB_DIRS = _stdlib_dirs()


def _library_roots() -> Iterator[str]:
    for name in LIBRARIES:
        module = sys.modules.get(name)  # a library's frame runs only once it is imported
        path = getattr(module, "__file__", None)
        if path:
            path = os.path.abspath(path)
            is_package = os.path.basename(path).startswith("__init__.")
            yield os.path.dirname(path) + os.sep if is_package else path


def kind_of(filename: str) -> int:
    kind = _kinds.get(filename)
    if kind is None:
        kind = _kinds[filename] = _classify(filename)
    return kind


def _classify(filename: str) -> int:
    if filename.startswith("<"):
        return NEUTRAL  # <frozen importlib._bootstrap>, exec'd strings
    path = os.path.abspath(filename)
    if path.startswith(CONFORMANCE_DIR + os.sep):
        return SUITE
    if os.path.dirname(path) == _TOP_DIR and os.path.basename(path) != "__init__.py":
        return SUITE  # the command line (sessionstate/cli.py); reference/ and fixtures/ are not
    for root in STDLIB_DIRS:
        rest = path[len(root) :].split(os.sep) if path.startswith(root) else None
        if rest is not None and "site-packages" not in rest and "dist-packages" not in rest:
            return NEUTRAL
    for root in _library_roots():
        if path == root or (root.endswith(os.sep) and path.startswith(root)):
            return NEUTRAL
    return SUBJECT
