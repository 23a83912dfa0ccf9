"""What a run of the suite collects, and how each test is marked: ``Collection``.

Before the suite's modules are imported: the Hypothesis profile is loaded and the devices
narrowed (a ``@given`` test keeps the settings in force where it is defined; the
strategies read ``devices.available_devices()`` once, at import). After: the selection
(``--sessionstate-clause``, ``--sessionstate-reproduce``, a resumed run's skipped ids),
and on each test kept, automatically, the skips its clauses call for: a capability the
subject does not declare (a forgotten per-test decorator broke SQLAlchemy's third-party
dialects, #5841), a hook it lacks (a test would run our reference code and credit the
subject with its pass), an expectations entry.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sessionstate.conformance._harness.options import flag
from sessionstate.conformance._harness.recording import RECORDING, skipped_ids
from sessionstate.conformance._harness.run_state import (
    RUN_STATE,
    RunState,
    is_xdist_controller,
    load_configured_subject,
    run_state,
    suite_requested,
)
from sessionstate.conformance._harness.short_ids import SUITE_DIR, is_suite_id, short_id
from sessionstate.conformance.checks import item_clauses
from sessionstate.conformance.subject import UsageError

__all__ = ["Collection"]


class Collection:
    """The suite's collection hooks (a pytest plugin object)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Load the profile and narrow the devices before the suite's modules are
        imported. ``--sessionstate-devices`` wins over ``Subject.devices``; an xdist
        controller allocates nothing and loads no subject."""
        config = session.config
        if not suite_requested(config) or is_xdist_controller(config):
            return
        _load_profile(config)
        from sessionstate.conformance._harness.devices import select_devices
        from sessionstate.conformance._harness.own_hooks import no_own_hook

        option = config.getoption(flag("devices"))
        names: Sequence[str] | None
        names = [n.strip() for n in option.split(",") if n.strip()] if option else None
        source = flag("devices")
        subject = load_configured_subject(config)
        refusal = no_own_hook(subject, run_state(config)["target"])  # the unedited template
        if refusal:
            raise pytest.UsageError(refusal)
        if names is None:
            names, source = subject.devices, f"subject {subject.name!r}: devices"
        try:
            select_devices(names)
        except ValueError as error:
            raise pytest.UsageError(f"{source}: {error}") from None

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """With a selection (``--sessionstate-clause``, ``--sessionstate-reproduce``), a
        suite module holding none of the selected tests is not imported at all: every test
        in it would be deselected, and importing it (building its cases) is time before
        the first test. Which clauses a module's tests check is read from the stored clause
        index (``_report.clause_index``, kept equal to what collection finds by
        ``tests/conformance/test_clause_index.py``); a module the index does not list is
        collected as usual, and nothing outside the suite's folder is ever ignored."""
        if collection_path.parent != SUITE_DIR or collection_path.suffix != ".py":
            return None
        if RUN_STATE not in config.stash or not collection_path.name.startswith("test_"):
            return None
        reproduce = config.getoption(flag("reproduce"))
        if reproduce:
            module = reproduce.partition("::")[0]
            return (
                True if (SUITE_DIR / module).is_file() and module != collection_path.name else None
            )
        if not config.getoption(flag("clause")):
            return None
        checked = _clauses_by_module().get(collection_path.name)
        if checked is None or checked & set(run_state(config)["selected"]):
            return None
        return True

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Keep the tests the options select, and mark each kept test of the suite."""
        from sessionstate.conformance.clauses import all_clauses

        state = run_state(config)
        known = all_clauses()
        wanted = config.getoption(flag("clause"))
        reproduce = config.getoption(flag("reproduce"))
        skip_ids = skipped_ids(config)
        subject = None
        keep, dropped = [], []
        for item in items:
            ids = item_clauses(item)
            if not ids:
                keep.append(item)
                continue
            for cid in ids:
                if cid not in known:
                    raise pytest.UsageError(f"{item.nodeid} names unknown clause {cid!r}")
            if (
                item.nodeid in skip_ids  # a resumed run: ended in an earlier attempt
                or (reproduce and short_id(item.nodeid) != reproduce)
                or (wanted and not set(ids) & set(state["selected"]))
            ):
                dropped.append(item)
                continue
            keep.append(item)
            subject = subject or load_configured_subject(config)
            _mark(item, ids, subject, known, state)
        state["collected"] = {i.nodeid: item_clauses(i) for i in keep if item_clauses(i)}
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        config.stash[RECORDING].collected(state["collected"], workers)
        if config.getoption(flag("database")):  # the keys HypoFuzz saved under
            from sessionstate.conformance._harness.database import align_keys

            align_keys([item for item in keep if item_clauses(item)], state["seed"] or 0)
        _arm_reproduction(config, state)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
        if any(item_clauses(item) for item in keep) and not state["profile_loaded"]:
            _load_profile(config)  # suite tests collected from a path we did not recognise
        if keep and all(item_clauses(item) for item in keep):
            _freeze_what_collection_made()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The xdist controller runs no test: it counts what its workers collected, and
        freezes once they collected a conformance-only run (only ids are known here, so it
        is judged by where they live)."""
        config = getattr(node, "config", None)
        if ids and config is not None and RUN_STATE in config.stash:
            state = run_state(config)  # how many tests the run holds, for an interrupted run
            state["collected_count"] = state["collected_count"] or len(ids)
            state["collected_ids"] = state["collected_ids"] or list(ids)
        if ids and all(is_suite_id(nodeid) for nodeid in ids):
            _freeze_what_collection_made()


@functools.cache
def _clauses_by_module() -> dict[str, frozenset[str]]:
    """Suite module file name -> the clauses its tests are tagged with (the clause index)."""
    from sessionstate.conformance._report.clause_index import load

    found: dict[str, set[str]] = {}
    for test_id, clauses in load().items():
        found.setdefault(test_id.partition("::")[0], set()).update(clauses)
    return {module: frozenset(clauses) for module, clauses in found.items()}


def _mark(
    item: pytest.Item, ids: list[str], subject: Any, known: dict[str, Any], state: RunState
) -> None:
    """The skips (or xfail) a kept test gets; the first added is the one reported: a
    capability the subject does not declare, a hook it lacks, an expectations entry."""
    from sessionstate.conformance._harness.applicability import (
        NOT_APPLICABLE,
        capability_reason,
        clause_list,
        hooks_needed,
        missing_hook,
    )
    from sessionstate.conformance._harness.expectations import clause_skips, first_for_test

    # Each reason names every clause of the test that needs what is missing: the clause
    # table shows a test's reason on each of its clauses' rows.
    for cid in ids:
        missing = sorted(known[cid].requires - subject.capabilities)
        if missing:
            needing = [c for c in ids if missing[0] in known[c].requires]
            reason = capability_reason(clause_list(needing), missing[0], subject.name)
            item.add_marker(pytest.mark.skip(reason=reason))
            break
    lacking = missing_hook(subject, ids)
    if lacking:
        _, hook = lacking
        needing = [c for c in ids if hook in hooks_needed(c)]
        verb = "needs" if len(needing) == 1 else "need"
        reason = (
            f"{NOT_APPLICABLE}: subject {subject.name!r} has no {hook}, which "
            f"{clause_list(needing)} {verb}"
        )
        item.add_marker(pytest.mark.skip(reason=reason))
    # Indexed lookups: a test costs the same whatever the size of the expectations file.
    expectations = state["expectations"]
    entry = first_for_test(expectations, item.nodeid)
    if entry is not None:
        mark = pytest.mark.skip if entry.kind == "skip" else pytest.mark.xfail
        item.add_marker(mark(reason=f"expected: {entry.reason}"))
        return
    skipped = clause_skips(expectations)
    if ids and all(cid in skipped for cid in ids):
        item.add_marker(pytest.mark.skip(reason=f"expected: {skipped[ids[0]].reason}"))


def _arm_reproduction(config: pytest.Config, state: RunState) -> None:
    """``--sessionstate-reproduce``: the one test kept is the selection, its clauses the
    report's; ``--sessionstate-blob`` makes it replay that failing case."""
    test_id = config.getoption(flag("reproduce"))
    blob = config.getoption(flag("blob"))
    if not test_id:
        if blob:
            raise pytest.UsageError(f"{flag('blob')} needs {flag('reproduce')} TEST_ID")
        return
    if not state["collected"]:
        raise pytest.UsageError(
            f"{flag('reproduce')}: no test {test_id!r} in this selection (a test id as "
            "the summary prints it, e.g. test_lru.py::test_manager_machine)"
        )
    from sessionstate.conformance._harness.reproduce import parse_blob
    from sessionstate.conformance.clauses import all_clauses

    ran = {cid for clauses in state["collected"].values() for cid in clauses}
    state["selected"] = [cid for cid in all_clauses() if cid in ran]
    if blob:
        try:
            parse_blob(blob)
        except ValueError as error:
            raise pytest.UsageError(f"{flag('blob')}: {error}") from None


def _load_profile(config: pytest.Config) -> None:
    """Load the suite's Hypothesis profile (and ``--sessionstate-blob``'s case on top of it)
    before the suite's modules are imported.

    Not at configure time: the plugin is installed for every pytest run in the
    environment, and a run of the caller's own tests must keep its own Hypothesis
    settings. (A run mixing both gets the suite's profile: Hypothesis has one.)
    """
    from sessionstate.conformance._harness.profiles import load_profile

    state = run_state(config)
    try:
        load_profile(
            state["profile"], seed=state["seed"], database=config.getoption(flag("database"))
        )
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    state["profile_loaded"] = True
    blob = config.getoption(flag("blob"))
    if blob and config.getoption(flag("reproduce")):  # that one case, and only it
        from sessionstate.conformance._harness.reproduce import load_replay

        try:
            load_replay(blob)
        except ValueError as error:
            raise pytest.UsageError(f"{flag('blob')}: {error}") from None


def _freeze_what_collection_made() -> None:
    """In a run of conformance tests only, exempt everything alive now from cyclic GC.

    torch, Hypothesis and the collected suite leave ~300k objects behind, and every
    full collection walks them all: about 0.4 s each, for the automatic ones during
    the run and for the five pytest forces at exit. ``gc.freeze()`` moves them to the
    permanent generation; refcounting still frees them, only cycles made before this
    point are never collected. Runs that also hold the caller's own tests are left as
    they are. Once per process: the xdist controller hears from every worker.
    """
    import gc

    if gc.get_freeze_count() == 0:
        gc.freeze()
