"""The suite's test ids, however pytest roots them: ``short_id`` and ``is_suite_id``.

pytest gives a test of the shipped suite a node id relative to its rootdir
(``.venv/lib/.../conformance/suite/test_lru.py::test_x[LRU-3]``, or ``test_lru.py::...``
under ``--pyargs``); the reports, ``--reproduce``, the clause index and Hypothesis'
derandomization key all use the short form, ``test_lru.py::test_x[LRU-3]``. Stdlib only.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["SUITE_DIR", "is_suite_id", "short_id"]

#: The shipped suite's test modules.
SUITE_DIR = Path(__file__).resolve().parents[1] / "suite"

#: Node ids of the shipped suite's tests, however pytest roots them.
_SUITE_ID = re.compile(r"(^|[/\\.])conformance[/\\.]suite[/\\.]test_\w+\.py::")


def short_id(nodeid: str) -> str:
    """``test_lru.py::test_x[LRU-3]`` for any rooting of the suite's node ids (only the
    module's path is shortened: a parameter may hold a ``/``)."""
    path, sep, rest = nodeid.partition("::")
    return f"{Path(path).name}{sep}{rest}"


def is_suite_id(nodeid: str) -> bool:
    """Whether ``nodeid`` names a test of the shipped suite: under ``--pyargs`` ids are
    relative to the rootdir (``test_lru.py::...``), so by the module's name too."""
    module = nodeid.split("::")[0]
    return bool(_SUITE_ID.search(nodeid)) or ("/" not in module and (SUITE_DIR / module).is_file())
