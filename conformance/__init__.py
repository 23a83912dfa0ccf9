"""The session-state conformance suite.

Point it at your implementation with ``sessionstate check pkg.module:subject``,
where ``subject`` is a :class:`Subject`. The clauses are in ``SPEC.md``
(``sessionstate spec`` prints them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessionstate.conformance.specs import ObjectModel, StateObjectSpec
from sessionstate.conformance.subject import CAPABILITIES, Subject, UsageError, load_subject

if TYPE_CHECKING:
    from sessionstate.conformance.adapters import AdapterSpec, Op

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
    # AdapterSpec builds Hypothesis strategies; importing them lazily keeps
    # `import sessionstate.conformance` (and so the pytest plugin) light.
    if name in ("AdapterSpec", "Op"):
        from sessionstate.conformance import adapters

        return getattr(adapters, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
