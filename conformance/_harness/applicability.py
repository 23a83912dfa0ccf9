"""Which ``Subject`` hooks each clause needs, so that no clause is scored on our code.

A subject that brings only StateObjects or adapters has no manager of its own.
Its objects and adapters still run (OBJ, ADAPT), hosted on the reference
manager; but a clause *about* a manager (KEY, LRU, RESET, DROP, STATS, LOCK,
ADMIT, and the session and manager totals of ACCT-10/11) would then test the
reference, and a PASS would credit the subject with what it never brought. Such a
clause is *not applicable*: its tests are skipped with a reason naming the hook.
The rule is applied by the plugin to every test from its clause tags, like
capabilities, so no test can forget it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["NOT_APPLICABLE", "NOT_CHECKED", "hooks_needed", "missing_hook"]

#: The prefix of a skip reason saying that a test cannot run against this subject
#: (a hook it lacks), as opposed to this machine (no CUDA device).
NOT_APPLICABLE = "not applicable"
#: The prefix of a skip reason saying that a focused test never got past another
#: clause's failure (``checks.focused_on``): its clause is unchecked, not passed.
NOT_CHECKED = "not checked"

#: Group (or clause id) -> the Subject fields its tests call. A clause id entry
#: wins over its group's.
_NEEDS: dict[str, tuple[str, ...]] = {
    "KEY": ("manager_factory",),
    "LRU": ("manager_factory",),
    "RESET": ("manager_factory",),
    "DROP": ("manager_factory",),
    "STATS": ("manager_factory",),
    "LOCK": ("manager_factory",),
    "ADMIT": ("manager_factory",),
    "ACCT": ("accounting",),
    "ACCT-10": ("manager_factory",),
    "ACCT-11": ("manager_factory",),
    "ENV": ("config_resolver",),
    "OBJ": ("state_objects",),
    "ADAPT": ("adapters",),
    "LOST": ("manager_factory",),
}


def hooks_needed(clause_id: str) -> tuple[str, ...]:
    """The Subject fields a test of ``clause_id`` calls."""
    group = clause_id.split("-")[0]
    return _NEEDS.get(clause_id, _NEEDS.get(group, ()))


def missing_hook(subject: Any, clause_ids: Iterable[str]) -> tuple[str, str] | None:
    """``(clause, field)`` for the first clause whose hook ``subject`` lacks, else None."""
    for cid in clause_ids:
        for hook in hooks_needed(cid):
            if not getattr(subject, hook):
                return cid, hook
    return None
