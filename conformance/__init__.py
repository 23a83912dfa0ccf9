"""The session-state conformance suite.

Point it at your implementation with ``sessionstate check pkg.module:subject``,
where ``subject`` is a :class:`Subject`. The clauses are in ``SPEC.md``
(``sessionstate spec`` prints them).
"""

from .adapters import AdapterSpec, Op
from .state_objects import StateObjectSpec
from .subject import CAPABILITIES, Subject, UsageError, load_subject

__all__ = [
    "CAPABILITIES",
    "AdapterSpec",
    "Op",
    "StateObjectSpec",
    "Subject",
    "UsageError",
    "load_subject",
]
