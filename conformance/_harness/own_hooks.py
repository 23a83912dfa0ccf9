"""Which of a subject's hooks are its own, and which are the bundled reference's.

The subject ``sessionstate init`` writes imports the reference's manager, accounting and
config resolver, for the implementer to replace with their own. Checked unedited, it
would test the reference under the implementer's name and pass, testing nothing of
theirs. So every run says which hooks it tested are the subject's own and which the
reference's (the report header), and ``sessionstate check`` refuses a subject that
brings no hook of its own (exit 2, one line naming the file to edit).

A hook is the reference's when it is an object the reference package defines (its
``__module__`` is ``sessionstate.reference`` or below): a function or class imported
from it as it is. Anything else is the subject's own: a subclass, a wrapper, a function
of its own calling the reference. A ``StateObjectSpec`` is the reference's when its
factory is; an ``AdapterSpec`` when its adapter factory is. The project's own subjects
(``sessionstate.fixtures``, the bundled reference among them) are reference material and
are always checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES", "HOOKS", "REFERENCE", "hook_origins", "no_own_hook", "origins_line"]

#: The Subject fields that bring code under test.
HOOKS = (
    "manager_factory", "config_resolver", "accounting", "buffer_factory", "state_objects",
    "adapters",
)  # fmt: skip
#: The package whose objects are the reference's.
REFERENCE = "sessionstate.reference"
#: The package of the project's own subjects: reference material, always checked.
FIXTURES = "sessionstate.fixtures"


def _is_reference(value: object) -> bool:
    module = getattr(value, "__module__", None)
    return isinstance(module, str) and (module == REFERENCE or module.startswith(REFERENCE + "."))


def _spec_is_reference(spec: object) -> bool:
    factory = getattr(spec, "factory", None) or getattr(spec, "adapter_factory", None)
    return _is_reference(factory)


def hook_origins(subject: Any) -> dict[str, list[str]]:
    """``{"own": [...], "reference": [...]}``: the subject's hooks (``HOOKS`` it sets) by
    where their code comes from, each list in ``HOOKS`` order. A list of specs is the
    reference's only when every spec in it is."""
    origins: dict[str, list[str]] = {"own": [], "reference": []}
    for name in HOOKS:
        value = getattr(subject, name, None)
        if not value:
            continue
        if name in ("state_objects", "adapters"):
            reference = all(_spec_is_reference(spec) for spec in _specs(value))
        else:
            reference = _is_reference(value)
        origins["reference" if reference else "own"].append(name)
    return origins


def _specs(value: object) -> Iterable[object]:
    return value if isinstance(value, (list, tuple)) else (value,)


def origins_line(origins: dict[str, list[str]] | None) -> str:
    """``hooks: own manager_factory; the reference's accounting`` for a report header."""
    if origins is None:
        return "hooks: (not known)"
    own = ", ".join(origins.get("own", [])) or "none"
    reference = ", ".join(origins.get("reference", []))
    return f"hooks: own {own}" + (f"; the reference's {reference}" if reference else "")


def no_own_hook(subject: Any, target: str) -> str | None:
    """The one-line refusal of a subject that brings no hook of its own, naming the file to
    edit; ``None`` when it brings one, or is one of the project's own subjects."""
    module_name = target.partition(":")[0]
    if module_name == FIXTURES or module_name.startswith(FIXTURES + "."):
        return None
    origins = hook_origins(subject)
    if origins["own"]:
        return None
    import sys

    module = sys.modules.get(module_name)
    where = getattr(module, "__file__", None)
    edit = Path(where).name if where else module_name
    brought = ", ".join(origins["reference"])
    what = f"its {brought} are the reference's own" if brought else "it sets no hook"
    return (
        f"subject {subject.name!r} brings no hook of its own ({what}): this would check "
        f"{REFERENCE}, not your code; edit {edit} to import your manager, accounting and "
        "config resolver"
    )
