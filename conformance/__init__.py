"""The session-state conformance suite.

Point it at your implementation with ``sessionstate check pkg.module:subject``,
where ``subject`` is a :class:`Subject`. The clauses are in ``SPEC.md``
(``sessionstate spec`` prints them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .state_objects import StateObjectSpec
from .subject import CAPABILITIES, Subject, UsageError, load_subject

if TYPE_CHECKING:
    from .adapters import AdapterSpec, Op
    from .object_models import ObjectModel

__all__ = [
    "CAPABILITIES",
    "AdapterSpec",
    "ObjectModel",
    "Op",
    "StateObjectSpec",
    "Subject",
    "UsageError",
    "load_subject",
]


def __getattr__(name: str) -> Any:
    # The adapter machine needs Hypothesis and torch; importing them lazily keeps
    # `import sessionstate.conformance` (and so the pytest plugin) light.
    if name in ("AdapterSpec", "Op"):
        from . import adapters

        return getattr(adapters, name)
    if name == "ObjectModel":
        from .object_models import ObjectModel

        return ObjectModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
