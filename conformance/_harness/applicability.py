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

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CONTENTS_NOT_CHECKED",
    "NOT_APPLICABLE",
    "NOT_CHECKED",
    "capability_reason",
    "clause_list",
    "declared_skip",
    "hooks_needed",
    "missing_hook",
]

#: The prefix of a skip reason saying that a test cannot run against this subject
#: (a hook it lacks), as opposed to this machine (no CUDA device).
NOT_APPLICABLE = "not applicable"
#: The prefix of a skip reason saying that a focused test never got past another
#: clause's failure (``checks.focused_on``): its clause is unchecked, not passed.
NOT_CHECKED = "not checked"
#: The start of the skip reason of OBJ-9 for a spec with neither a model nor a contents
#: kind: what the object holds was not checked, which is never a pass.
CONTENTS_NOT_CHECKED = f"{NOT_CHECKED}: contents"

#: The skip reasons a subject declares by what it leaves out: a hook (``NOT_APPLICABLE``, or
#: a test's own "subject 'x' has no accounting"), a capability (``capability_reason``), or
#: an expectations ``skip`` entry ("expected: reason"). Any other skip (no CUDA device on
#: this machine, no model for an object's contents) leaves a clause that no test ran
#: unchecked, not skipped: it was not checked, and nothing the subject said excused it.
_DECLARED = re.compile(
    rf"^(Skipped: )?({NOT_APPLICABLE}\b|expected: |[A-Z][\w.,\s-]* needs? capability '[^']*', "
    r"which subject "
    r"|subject .* has no (manager_factory|config_resolver|accounting|buffer_factory|"
    r"state_objects|adapters)$)",
    re.DOTALL,
)

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


def capability_reason(clauses: str, capability: str, subject_name: str) -> str:
    """The skip reason of a test whose ``clauses`` (one id, or ``clause_list``'s) need a
    capability the subject does not declare (``declared_skip`` knows it)."""
    verb = "needs" if "," not in clauses and ".." not in clauses else "need"
    return (
        f"{clauses} {verb} capability {capability!r}, which subject {subject_name!r} "
        "does not declare"
    )


def clause_list(clause_ids: Iterable[str]) -> str:
    """``OBJ-1..10`` for a run of one group's consecutive clauses, ``ADMIT-2, ADMIT-4``
    otherwise, sorted by group and number."""

    def key(cid: str) -> tuple[str, int]:
        group, _, number = cid.rpartition("-")
        return group, int(number) if number.isdigit() else -1

    parts: list[list[tuple[str, int]]] = []
    for cid in sorted(dict.fromkeys(clause_ids), key=key):
        group, _, number = cid.rpartition("-")
        run = parts[-1] if parts else None
        if run and run[-1][0] == group and number.isdigit() and run[-1][1] + 1 == int(number):
            run.append((group, int(number)))
        else:
            parts.append([(group, int(number) if number.isdigit() else -1)])
    shown = []
    for run in parts:
        (group, first), (_, last) = run[0], run[-1]
        if first < 0:
            shown.append(group)
        elif len(run) > 2:
            shown.append(f"{group}-{first}..{last}")
        else:
            shown.extend(f"{group}-{number}" for _, number in run)
    return ", ".join(shown)


def declared_skip(message: str) -> bool:
    """Whether a test's skip ``message`` is one the subject declared (see ``_DECLARED``)."""
    return bool(_DECLARED.match(message))
