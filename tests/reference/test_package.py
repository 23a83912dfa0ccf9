"""Unit tests of ``sessionstate.reference`` itself: its public names."""

from __future__ import annotations

import importlib

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
