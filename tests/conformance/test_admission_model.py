"""The admission side of the suite's LRU model (``_model.manager.LruTable``) and the ADMIT
machine (``sessionstate.conformance._machine.admit``), by hand.

The model is checked against worked examples from SPEC ADMIT; the machines are checked to
pass the reference and the zoo's baseline and to catch every ``admit_*`` zoo subject for
the clause it plants (in process, without shrinking: ``tests/zoo`` runs the full suite on
each in its own process).
"""

from __future__ import annotations

import importlib
from functools import partial
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from sessionstate.conformance._machine.admit import (
    DefaultManagerMachine,
    RefusingManagerMachine,
    Same,
    non_positive,
    outcome_of,
    refusal,
)
from sessionstate.conformance._model.manager import LruTable, Outcome, spec_key
from sessionstate.conformance.checks import ClauseFailure
from sessionstate.fixtures.zoo import module_names

MACHINES = [RefusingManagerMachine, DefaultManagerMachine]


def _counters(model: LruTable) -> tuple[int, int, int, int]:
    return model.hits, model.misses, model.evictions, model.drops


def _conserved(model: LruTable) -> bool:
    return model.misses == len(model) + model.evictions + model.drops


class TestSessionKey:
    @pytest.mark.parametrize(
        ("session_id", "key"),
        [(None, "default"), ("", "default"), (0, "default"), (7, "7"), ("a", "a")],
    )
    def test_falsy_ids_are_default_and_others_stringified(
        self, session_id: object, key: str
    ) -> None:
        """KEY-1, KEY-2."""
        assert spec_key(session_id) == key


class TestLruTable:
    def test_refusing_model_refuses_at_the_cap_and_changes_nothing(self) -> None:
        """ADMIT-1..3: below the cap a miss is admitted; at it, refused with no trace."""
        model = LruTable(2, evict_when_full=False)
        assert [model.get_or_create_session(i) for i in ("a", None)] == [Outcome("miss")] * 2
        assert model.get_or_create_session("a") == Outcome("hit")
        assert model.get_or_create_session("c") == Outcome("refused")
        assert model.get_or_create_session("") == Outcome("hit")  # "" is the resident "default"
        assert (model.keys(), _counters(model)) == (["a", "default"], (2, 2, 0, 0))

    def test_evicting_model_evicts_least_recently_used(self) -> None:
        """ADMIT-10 (LRU-3, LRU-4): a hit refreshes; the newcomer is never the victim."""
        model = LruTable(2)
        for session_id in ("a", "b", "a"):
            model.get_or_create_session(session_id)
        assert model.get_or_create_session("c") == Outcome("miss", ("b",))
        assert (model.keys(), _counters(model)) == (["a", "c"], (1, 3, 1, 0))

    def test_drop_makes_room_and_an_absent_drop_does_not(self) -> None:
        """ADMIT-5."""
        model = LruTable(1, evict_when_full=False)
        model.get_or_create_session("a")
        assert model.drop_session("x") is False
        assert model.get_or_create_session("b") == Outcome("refused")
        assert model.drop_session("a") is True
        assert model.get_or_create_session("b") == Outcome("miss")
        assert (model.keys(), _counters(model), _conserved(model)) == (["b"], (0, 2, 0, 1), True)

    @pytest.mark.parametrize(("new", "raised", "cap"), [(4, True, 4), (3, False, 3), (1, False, 3)])
    def test_raise_max_sessions_only_raises(self, new: int, raised: bool, cap: int) -> None:
        """ADMIT-6."""
        model = LruTable(3)
        assert (model.raise_max_sessions(new), model.max_sessions) == (raised, cap)

    @pytest.mark.parametrize("new", [0, -1])
    def test_non_positive_caps_are_rejected(self, new: int) -> None:
        """ADMIT-7 and LRU-8, with the message the spec names."""
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            LruTable(3).raise_max_sessions(new)
        with pytest.raises(ValueError, match="max_sessions must be positive"):
            LruTable(new)

    def test_raised_cap_admits_and_flag_switches_policy(self) -> None:
        """ADMIT-8, ADMIT-11: a raise admits more; a flip applies to the next miss."""
        model = LruTable(1, evict_when_full=False)
        model.get_or_create_session("a")
        model.raise_max_sessions(2)
        assert [model.get_or_create_session(i).kind for i in ("b", "c")] == ["miss", "refused"]
        model.set_evict_when_full(True)
        assert model.get_or_create_session("c") == Outcome("miss", ("a",))
        assert (model.flipped, model.initial_max_sessions, model.keys()) == (True, 1, ["b", "c"])
        assert "evict_when_full=True" in model.describe()


class TestExpectations:
    def test_refusal_matches_by_message_not_class(self) -> None:
        """ADMIT-1: any exception class; the message must name the normalised key."""

        class SessionAdmissionError(Exception):
            pass

        assert refusal(None) == RuntimeError("cannot admit session 'default': full")
        assert refusal("d") == SessionAdmissionError("cannot admit session 'd'")
        assert refusal("d") != SessionAdmissionError("manager full")
        assert refusal("d") != object()
        assert repr(refusal("d")) == "SessionAdmissionError(\"cannot admit session 'd'\")"

    def test_non_positive_needs_a_value_error(self) -> None:
        assert non_positive() == ValueError("max_sessions must be positive, got 0")
        assert non_positive() != RuntimeError("max_sessions must be positive")

    def test_same_is_identity(self) -> None:
        held = [1]
        assert Same(held) == held
        assert Same(held) != [1]

    def test_outcome_of_returns_errors_but_passes_clause_failures(self) -> None:
        assert outcome_of(lambda: 3) == 3
        assert isinstance(outcome_of(lambda: int("x")), ValueError)

        def fails() -> None:
            raise ClauseFailure("ADMIT-12", "re-entered [ADMIT-12]")

        with pytest.raises(ClauseFailure):
            outcome_of(fails)


def _subject(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.__name__)
@pytest.mark.parametrize(
    "target",
    ["sessionstate.fixtures.reference_subject:subject", "sessionstate.fixtures.zoo._kit:baseline"],
)
def test_machines_pass_correct_subjects(machine: Any, target: str) -> None:
    """No false alarm: both machines accept the reference and the zoo's bug-free kit."""
    subject = _subject(target)
    run_state_machine_as_test(lambda: machine(subject))


#: Bugs only the scripted tests of test_admit.py reach: a refusing default
#: (the machines pass evict_when_full explicitly), an unlocked cap write (needs
#: the instrumented lock), and a refusal whose conservation break the machines
#: report first as the counter clause it also breaks (ADMIT-3).
SCRIPTED_ONLY = {"admit_default_refuses", "admit_raise_unlocked", "admit_refusal_counts_eviction"}
#: Bugs another machine reaches: a race between two raises (the LOCK histories,
#: ``_machine/lock_raise.py``), and an order a raise rebuilt, which shows only in evictions
#: deep into a table reordered by hits (the large-world ``RaisingMachine``, ``_machine/bulk.py``;
#: ``tests/conformance/test_bulk.py``).
OTHER_MACHINES = {"admit_raise_checked_outside", "admit_raise_rebuilds_order"}
ADMIT_ZOO = [
    name
    for name in module_names()
    if name.startswith("admit_") and name not in SCRIPTED_ONLY | OTHER_MACHINES
]


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("name", ADMIT_ZOO)
def test_machines_catch_admit_zoo(machine: Any, name: str) -> None:
    """Each machine alone finds each planted admission bug and names a clause in KILLS.

    The default machine reaches ``admit_evicts_anyway`` only through setting
    ``evict_when_full = False``, so it reports ADMIT-11 (the flag is not honoured).
    """
    module = importlib.import_module(f"sessionstate.fixtures.zoo.{name}")
    no_shrink = settings(settings.default, phases=[p for p in Phase if p is not Phase.shrink])
    # A derandomized search's seed is the digest of the machine factory's source, so which
    # programs it tries is luck: the default machine reaches "a hit while full and
    # refusing" only after switching the flag off; random seeds find it in nearly every
    # 60-example search, the pinned one no longer does. A search that finds nothing goes
    # on for more examples, so the claim (each machine finds each bug) rests on no one seed.
    caught: ClauseFailure | None = None
    try:
        run_state_machine_as_test(lambda: machine(module.subject), settings=no_shrink)
    except ClauseFailure as failure:
        caught = failure
    else:
        longer = settings(no_shrink, max_examples=300)
        try:
            run_state_machine_as_test(partial(machine, module.subject), settings=longer)
        except ClauseFailure as failure:
            caught = failure
    assert caught is not None, f"{machine.__name__} did not find {name}'s bug"
    expected = set(module.KILLS)
    if machine is DefaultManagerMachine and name == "admit_evicts_anyway":
        expected = {"ADMIT-11"}
    assert caught.clause in expected, str(caught)
