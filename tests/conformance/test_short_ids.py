"""``_harness.short_ids``: the suite's test ids, however pytest roots them."""

from __future__ import annotations

import pytest

from sessionstate.conformance._harness.short_ids import SUITE_DIR, is_suite_id, short_id

TEST = "test_lru.py::test_manager_machine[LRU-3]"


@pytest.mark.parametrize(
    "nodeid",
    [
        TEST,
        f"conformance/suite/{TEST}",
        f".nox/tests/lib/python3.11/site-packages/sessionstate/conformance/suite/{TEST}",
        f"..\\venv\\Lib\\site-packages\\sessionstate\\conformance\\suite\\{TEST}".replace(
            "\\", "/"
        ),
    ],
)
def test_every_rooting_shortens_to_the_module_and_test(nodeid: str) -> None:
    assert short_id(nodeid) == TEST


def test_only_the_module_path_is_shortened() -> None:
    """A parameter may hold a slash (a session id, a path): it is kept whole."""
    nodeid = "conformance/suite/test_key.py::test_ids[a/b::c]"
    assert short_id(nodeid) == "test_key.py::test_ids[a/b::c]"


@pytest.mark.parametrize(
    ("nodeid", "suite"),
    [
        (f"conformance/suite/{TEST}", True),
        (f"site-packages/sessionstate/conformance/suite/{TEST}", True),
        ("sessionstate.conformance.suite.test_lru.py::test_x", True),
        (TEST, True),  # --pyargs roots it at the suite's folder: a module that is there
        ("test_not_in_the_suite.py::test_x", False),
        ("tests/cli/test_check.py::test_x", False),
        ("conformance/suite_extra/test_lru.py::test_x", False),
    ],
)
def test_suite_ids_are_told_from_others(nodeid: str, suite: bool) -> None:
    assert is_suite_id(nodeid) is suite


def test_the_suite_folder_holds_the_suite() -> None:
    assert (SUITE_DIR / "test_lru.py").is_file()
