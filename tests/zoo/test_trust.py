"""Verdicts a CI can gate on: no false failures on correct code, no credit for absent hooks.

Each subject here is correct in the way it is written; before the fixes these
tests pin, the suite failed or credited it anyway:

* a buffer that *refuses* ``view()``/``append()`` after ``reset()`` (an allowed
  refusal, SPEC OBJ) failed DROP-2 and RESET-1;
* a subject with its own ``accounting`` and no ``buffer_factory`` got the
  reference ``LatentBuffer`` in its sessions, whose ``seen`` keys differ from its
  own, and failed ACCT-11 (one tensor counted twice);
* a subject without a ``manager_factory`` had the KEY/LRU/DROP/STATS clauses run
  on the reference manager and reported passed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from sessionstate.conformance.clauses import all_clauses

MANAGER_GROUPS = ("KEY", "LRU", "RESET", "DROP", "STATS")

REFUSING_BUFFER = '''
from sessionstate.conformance import Subject
from sessionstate.reference import LatentBuffer, SessionStateManager, device_bytes


class RefusingBuffer(LatentBuffer):
    """Like upstream's LatentBuffer: unallocated, it refuses instead of answering."""

    def _refuse_unless_allocated(self):
        if not self.resident:
            raise RuntimeError("RefusingBuffer is not allocated; call allocate() first.")

    def view(self, *, include_staged=True):
        self._refuse_unless_allocated()
        return super().view(include_staged=include_staged)

    def append(self, payload):
        self._refuse_unless_allocated()
        super().append(payload)

    def commit(self, payload=None):
        self._refuse_unless_allocated()
        super().commit(payload)


def make_buffer():
    buffer = RefusingBuffer()
    buffer.allocate()
    return buffer


subject = Subject(name="refusing", manager_factory=SessionStateManager,
                  accounting=device_bytes, buffer_factory=make_buffer)
'''

OWN_ACCOUNTING = """
from sessionstate.conformance import Subject
from sessionstate.fixtures.alternative_manager import AlternativeManager, alt_device_bytes

# No buffer_factory: the suite must bring a buffer that counts through alt_device_bytes.
subject = Subject(name="own-accounting", manager_factory=AlternativeManager,
                  accounting=alt_device_bytes)
"""

# Objects of its own (the worked examples, written as a model author would), no manager:
# the reference's objects alone would be refused as bringing no hook of its own.
NO_MANAGER = """
from sessionstate.conformance import Subject
from sessionstate.fixtures.state_object_specs import DERIVED_LATENTS, STAGED_KV

subject = Subject(name="objects-only", state_objects=(STAGED_KV, DERIVED_LATENTS))
"""


def _module(tmp_path: Path, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return f"{name}:subject"


def _not_passed(run: Any, clauses: list[str]) -> dict[str, str]:
    outcomes = run.outcomes(clauses)
    return {cid: o for cid, o in outcomes.items() if o != "passed"}


def test_refusal_after_reset_is_not_a_defect(tmp_path: Path, run_check: Any) -> None:
    """DROP-2 and RESET-1 read reset objects through ``resident``, accepting the refusal."""
    target = _module(tmp_path, "refusing_subject", REFUSING_BUFFER)
    clauses = ["DROP-2", "DROP-4", "RESET-1", "RESET-4", "ACCT-11"]
    run = run_check(target, clauses)
    assert _not_passed(run, clauses) == {}, run.describe()
    assert run.returncode == 0, run.describe()


def test_default_buffer_counts_through_the_subjects_accounting(
    tmp_path: Path, run_check: Any
) -> None:
    """No reference object enters a subject's sessions, so its ``seen`` stays its own."""
    target = _module(tmp_path, "own_accounting_subject", OWN_ACCOUNTING)
    clauses = ["ACCT-10", "ACCT-11", "DROP-2", "RESET-1", "STATS-3"]
    run = run_check(target, clauses)
    assert _not_passed(run, clauses) == {}, run.describe()
    assert run.returncode == 0, run.describe()


def test_a_missing_manager_is_not_applicable_never_passed(tmp_path: Path, run_check: Any) -> None:
    """The manager clauses are skipped naming the hook; the OBJ clauses still run and pass."""
    target = _module(tmp_path, "objects_only_subject", NO_MANAGER)
    run = run_check(target, ["OBJ", *MANAGER_GROUPS])
    manager = [c for c, v in all_clauses().items() if v.group in MANAGER_GROUPS]
    obj = [c for c, v in all_clauses().items() if v.group == "OBJ"]
    clauses = run.report["clauses"]
    assert {clauses[c]["outcome"] for c in manager} == {"skipped"}, run.describe()
    assert all("no manager_factory" in clauses[c]["message"] for c in manager), run.describe()
    assert _not_passed(run, obj) == {}, run.describe()
    assert (run.report["verdict"], run.returncode) == ("conformant", 0), run.describe()


COUNTS_NOTHING = """
from sessionstate.conformance import Subject
from sessionstate.fixtures.reference_subject import subject as reference

# Every tensor counts nothing: each view's devices are wrong (ACCT-4) before its size is.
subject = Subject(name="counts-nothing", manager_factory=reference.manager_factory,
                  accounting=lambda value, seen: {})
"""


def test_a_focused_test_no_example_got_through_is_unchecked(tmp_path: Path, run_check: Any) -> None:
    """ACCT-1's focused case of the whole-storage test drops every example (each breaks
    ACCT-4 first): the plugin reports it skipped as not checked, so ACCT-1 is unchecked,
    naming ACCT-4; it is never passed on examples it did not check."""
    target = _module(tmp_path, "counts_nothing_subject", COUNTS_NOTHING)
    run = run_check(target, ["ACCT-1", "ACCT-4"])
    tests = {t["nodeid"].rsplit("::", 1)[1]: t for t in run.report["tests"]}
    focused = tests["test_tensor_counts_its_whole_storage[ACCT-1]"]
    assert focused["outcome"] == "skipped", run.describe()
    assert "not checked: every example stopped at ACCT-4 first" in focused["message"], (
        run.describe()
    )
    assert run.outcomes(["ACCT-1", "ACCT-4"]) == {"ACCT-1": "unchecked", "ACCT-4": "failed"}


def test_a_table_bug_is_not_charged_to_the_lock(run_check: Any) -> None:
    """An eviction bug (the most recent session evicted) with a correct lock: LOCK-1's
    tests compare each result with the same subject's manager on ``threading.Lock``, so the
    bug fails LRU-4 and never LOCK-1 (against the LRU model, it failed LOCK-1 too, and a
    reader went looking at their lock)."""
    run = run_check("sessionstate.fixtures.zoo.lru_mru_eviction:subject", ["LRU-4", "LOCK-1"])
    assert run.outcomes(["LRU-4", "LOCK-1"]) == {"LRU-4": "failed", "LOCK-1": "passed"}, (
        run.describe()
    )


def test_a_table_bug_is_not_charged_to_require_session(run_check: Any) -> None:
    """The same eviction bug and a correct ``require_session``: LOST's checks rest on the
    table following LRU without it, checked on a second manager of the same subject, so the
    bug fails LRU-4 and leaves LOST not checked, naming LRU-4 (against the LRU model alone,
    it failed LOST-1, -2, -3 and -4)."""
    lost = ["LOST-1", "LOST-2", "LOST-3", "LOST-4"]
    run = run_check("sessionstate.fixtures.zoo.lru_mru_eviction:subject", ["LRU-4", *lost])
    assert run.outcomes(["LRU-4", *lost]) == {
        "LRU-4": "failed",
        **dict.fromkeys(lost, "unchecked"),
    }, run.describe()
    for cid in lost:
        assert "every example stopped at LRU-4 first" in run.report["clauses"][cid]["message"]
