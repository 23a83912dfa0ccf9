"""The session-state conformance suite.

Point it at your implementation with ``sessionstate check pkg.module:subject``,
where ``subject`` is a :class:`Subject`. The clauses are in ``SPEC.md``
(``sessionstate spec`` prints them).
"""

from .subject import CAPABILITIES, Subject, UsageError, load_subject

__all__ = ["CAPABILITIES", "Subject", "UsageError", "load_subject"]
