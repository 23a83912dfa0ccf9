"""Unit tests of ``sessionstate.reference`` itself: its public names."""

from __future__ import annotations

import importlib

import pytest

import sessionstate.reference as ref

_PUBLIC = [
    "DEFAULT_MAX_SESSIONS",
    "EncodeOnceKV",
    "FixedState",
    "LatentBuffer",
    "SeenStorages",
    "SessionAdmissionError",
    "SessionAttr",
    "SessionState",
    "SessionStateLostError",
    "SessionStateManager",
    "StateObject",
    "device_bytes",
    "merge_bytes",
    "resolve_session_state_config",
]

_MODULES = ["accounting", "attrs", "base", "config", "errors", "manager", "objects", "session"]


class TestAll:
    def test_exact_public_names(self) -> None:
        """``__all__`` lists exactly the documented names, sorted."""
        assert ref.__all__ == _PUBLIC

    def test_names_are_the_modules_objects(self) -> None:
        """Each public name is the very object its defining module exports."""
        for module in _MODULES:
            submodule = importlib.import_module(f"sessionstate.reference.{module}")
            for name in submodule.__all__:
                if name in _PUBLIC:
                    assert getattr(ref, name) is getattr(submodule, name), name
        exported = {
            name
            for module in _MODULES
            for name in importlib.import_module(f"sessionstate.reference.{module}").__all__
        }
        assert set(_PUBLIC) <= exported


#: Where upstream's session_state package defines each public name (its module layout).
UPSTREAM_LAYOUT = {
    "base": ["StateObject"],
    "accounting": ["SeenStorages", "device_bytes", "merge_bytes"],
    "manager": [
        "DEFAULT_MAX_SESSIONS",
        "SessionState",
        "SessionStateManager",
        "resolve_session_state_config",
    ],
    "objects": ["LatentBuffer"],
    "attrs": ["SessionAttr"],
}


@pytest.mark.parametrize("module", sorted(UPSTREAM_LAYOUT))
def test_upstream_imports_work_with_the_package_name_changed(module: str) -> None:
    """``from <upstream>.session_state.<module> import X`` works as
    ``from sessionstate.reference.<module> import X``, the same object as the package's."""
    here = importlib.import_module(f"sessionstate.reference.{module}")
    for name in UPSTREAM_LAYOUT[module]:
        assert getattr(here, name) is getattr(ref, name), name
