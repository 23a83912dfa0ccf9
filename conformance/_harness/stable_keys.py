"""Derandomized draws that do not depend on where the suite is installed or run from.

Hypothesis' pytest plugin adds a parametrized test's node id to the digest its derandomized
seed (and its database key) is made from, at the start of the test's call. A node id is rooted
at pytest's rootdir, so the same test of an installed suite was
``../../venv/lib/python3.11/site-packages/sessionstate/conformance/suite/test_env.py::...``
from one folder and ``site-packages/.../test_env.py::...`` from another, and drew other
examples: a derandomized profile found a bug in one checkout and missed it in another of the
same commit. ``StableKeys`` replaces that digest with the node id as the suite's own folder
roots it (``test_env.py::test_resolution_matches_oracle[ENV-4]``), which is also what a run
sharing an example database roots its node ids at (``database.suite_rootdir``), so the keys
of the two agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionstate.conformance._harness.short_ids import short_id

__all__ = ["StableKeys"]


class StableKeys:
    """A pytest plugin object (the suite's plugin registers one): for each test of the suite
    folder ``suite_dir`` whose digest Hypothesis keyed by its node id, the same key rooted at
    that folder."""

    def __init__(self, suite_dir: Path) -> None:
        self.suite_dir = suite_dir

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        # A plain implementation runs after every hook wrapper's set-up, Hypothesis' one
        # (which sets the digest) included, and before the test itself.
        if self.suite_dir not in Path(item.path).resolve().parents:
            return
        test = getattr(item, "obj", None)
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
        if inner is not None and hasattr(inner, "_hypothesis_internal_add_digest"):
            inner._hypothesis_internal_add_digest = short_id(item.nodeid).encode()
