"""Which hooks are the subject's own (``own_hooks``): a subject that brings none is refused,
the project's own subjects never are."""

from __future__ import annotations

import sys
import types

from sessionstate.conformance import Subject
from sessionstate.conformance._harness.own_hooks import hook_origins, no_own_hook, origins_line
from sessionstate.reference import (
    SessionStateManager,
    device_bytes,
    resolve_session_state_config,
)


class MyManager(SessionStateManager):
    """A subclass is the subject's own code, whatever it inherits."""


def test_the_template_brings_no_hook_of_its_own() -> None:
    module = types.ModuleType("conformance_subject")
    module.__file__ = "/somewhere/conformance_subject.py"
    template = Subject(
        name="my-backend", manager_factory=SessionStateManager,
        config_resolver=resolve_session_state_config, accounting=device_bytes,
    )  # fmt: skip
    sys.modules["conformance_subject"] = module
    try:
        refusal = no_own_hook(template, "conformance_subject:subject")
    finally:
        del sys.modules["conformance_subject"]
    assert refusal is not None and "\n" not in refusal
    assert refusal.startswith("subject 'my-backend' brings no hook of its own (its ")
    assert "edit conformance_subject.py" in refusal
    assert hook_origins(template) == {
        "own": [],
        "reference": ["manager_factory", "config_resolver", "accounting"],
    }


def test_one_hook_of_its_own_is_enough() -> None:
    subject = Subject(name="mine", manager_factory=MyManager, accounting=device_bytes)
    assert no_own_hook(subject, "mine:subject") is None
    assert hook_origins(subject) == {"own": ["manager_factory"], "reference": ["accounting"]}
    assert origins_line(hook_origins(subject)) == (
        "hooks: own manager_factory; the reference's accounting"
    )


def test_a_subject_with_no_hook_is_refused_too() -> None:
    refusal = no_own_hook(Subject(name="bare"), "bare_module:subject")
    assert refusal is not None and "it sets no hook" in refusal


def test_the_projects_own_subjects_are_checked() -> None:
    """The bundled reference (``sessionstate check`` with no target) is the reference."""
    from sessionstate.fixtures.reference_subject import subject

    target = "sessionstate.fixtures.reference_subject:subject"
    assert no_own_hook(subject, target) is None
