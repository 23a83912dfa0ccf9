"""RESET-*: SessionState reset and rebuild (SPEC.md, "RESET: SessionState reset and rebuild").

Sessions come from the subject's manager. The objects put in them are the small
StateObject doubles below, which record what was done to them; they subclass
the shared ``StateObject`` ABC only so a subject's ``get_or_create`` sees a
StateObject, never to compute an expected value.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from sessionstate.conformance.checks import calling, check, check_equal
from sessionstate.reference import StateObject

NAMES = ("frames", "video_latents", "kv", "state", "cache")


class _Double(StateObject[Any, Any]):
    """A StateObject double: resident from construction until reset; counts resets."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.resets = 0
        self._resident = True

    def allocate(self) -> None:
        self._resident = True

    def commit(self, payload: Any = None) -> None:
        """Inert: these doubles hold no payload."""

    def view(self, *, include_staged: bool = True) -> None:
        return None

    def reset(self) -> None:
        self.resets += 1
        self._resident = False

    def nbytes_by_device(self, seen: set[Any]) -> dict[str, int]:
        return {}

    @property
    def resident(self) -> bool:
        return self._resident

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tag!r})"


class Probe(_Double):
    """The class ``get_or_create`` is asked for."""


class SubProbe(Probe):
    """A subclass of ``Probe``: an instance of the requested class."""


class OtherProbe(_Double):
    """Not a ``Probe``: the wrong type for ``get_or_create(..., Probe)``."""


class FaultyProbe(Probe):
    """A ``Probe`` whose ``reset()`` goes non-resident, then raises ``error``."""

    def __init__(self, tag: str) -> None:
        super().__init__(tag)
        self.error = RuntimeError(f"reset of {tag!r} failed")

    def reset(self) -> None:
        super().reset()
        raise self.error


def _session(subject: Any, clause: str) -> Any:
    with calling(clause, "make_manager(max_sessions=4).get_or_create_session('reset')"):
        return subject.make_manager(max_sessions=4).get_or_create_session("reset")


def _populate(
    subject: Any, session: Any, objects: dict[str, Any], attrs: dict[str, Any], clause: str
) -> str:
    """Put ``objects`` and set ``attrs``; return the program that did it."""
    program = []
    for name, obj in objects.items():
        # A subject's buffer has no Python repr; it was made by make_buffer().
        made = repr(obj) if isinstance(obj, _Double) else "make_buffer()"
        call = f"session.put({name!r}, {made})"
        with calling(clause, call):
            session.put(name, obj)
        program.append(call)
    session.attrs.update(attrs)
    program += [f"session.attrs[{k!r}] = {v!r}" for k, v in attrs.items()]
    return "; ".join(program)


def _subject_buffer(subject: Any) -> Any:
    with calling("RESET-1", "make_buffer().append(torch.zeros(2))"):
        buffer = subject.make_buffer()
        buffer.append(torch.zeros(2))
    return buffer


attr_values = st.one_of(
    st.integers(0, 9), st.text("ab", max_size=2), st.builds(torch.zeros, st.integers(0, 3))
)
attr_dicts = st.dictionaries(
    st.sampled_from(["language", "call_count", "prompt_embeds"]), attr_values, max_size=3
)


@pytest.mark.clause("RESET-1")
def test_reset_resets_every_object_and_clears_attrs(subject: Any) -> None:
    """After reset() every object is still registered under its name, non-resident; attrs is empty."""

    @given(st.lists(st.sampled_from(NAMES), unique=True, max_size=5), st.booleans(), attr_dicts)
    def run(names: list[str], with_buffer: bool, attrs: dict[str, Any]) -> None:
        session = _session(subject, "RESET-1")
        objects: dict[str, Any] = {name: Probe(name) for name in names}
        if with_buffer:
            objects["buffer"] = _subject_buffer(subject)
        when = (
            "after " + _populate(subject, session, objects, attrs, "RESET-1") + "; session.reset()"
        )
        with calling("RESET-1", "session.reset()"):
            session.reset()
        # Sorted: the order of names() is RESET-4's business, not reset()'s.
        names = sorted(session.names())
        check_equal(names, sorted(objects), "RESET-1", "sorted(session.names())", when)
        for name, obj in objects.items():
            check_equal(session.get(name), obj, "RESET-1", f"session.get({name!r})", when)
            check_equal(obj.resident, False, "RESET-1", f"session.get({name!r}).resident", when)
        check_equal(dict(session.attrs), {}, "RESET-1", "session.attrs", when)

    run()


@pytest.mark.clause("RESET-2")
def test_reset_finishes_when_an_object_reset_raises(subject: Any) -> None:
    """A raising reset() still lets the others reset and attrs clear, then propagates."""

    kinds = st.lists(st.booleans(), min_size=1, max_size=5).filter(any)

    @given(kinds, attr_dicts)
    def run(faulty: list[bool], attrs: dict[str, Any]) -> None:
        session = _session(subject, "RESET-2")
        objects = {n: (FaultyProbe if f else Probe)(n) for n, f in zip(NAMES, faulty, strict=False)}
        when = (
            "after " + _populate(subject, session, objects, attrs, "RESET-2") + "; session.reset()"
        )
        raised: BaseException | None = None
        try:
            session.reset()
        except Exception as error:
            raised = error
        errors = [o.error for o in objects.values() if isinstance(o, FaultyProbe)]
        # Any one of the errors may propagate, alone or inside an exception group.
        inner = [*getattr(raised, "exceptions", ()), raised]
        propagated = next((e for e in inner if e in errors), raised)
        expected = propagated if propagated in errors else errors[0]
        check_equal(propagated, expected, "RESET-2", "the error session.reset() raised", when)
        for name, obj in objects.items():
            check_equal(obj.resets, 1, "RESET-2", f"session.get({name!r}).resets", when)
        check_equal(dict(session.attrs), {}, "RESET-2", "session.attrs", when)

    run()


# (what is stored under "x" before get_or_create("x", factory, Probe), whether it is returned)
_STORED = {
    "absent": (lambda: None, False),
    "resident-instance": (lambda: Probe("stored"), True),
    "resident-subclass": (lambda: SubProbe("stored"), True),
    "non-resident-instance": (lambda: _reset(Probe("stored")), False),
    "resident-other-type": (lambda: OtherProbe("stored"), False),
}


def _reset(obj: _Double) -> _Double:
    obj.reset()
    return obj


@pytest.mark.clause("RESET-3")
@pytest.mark.parametrize("state", list(_STORED))
def test_get_or_create_rebuilds_only_what_it_must(subject: Any, state: str) -> None:
    """The stored object if a resident Probe; otherwise factory() once, stored and returned."""
    session = _session(subject, "RESET-3")
    stored = _STORED[state][0]()
    when = f"with {stored!r} stored under 'x'" if stored is not None else "with nothing under 'x'"
    if stored is not None:
        with calling("RESET-3", f"session.put('x', {stored!r})"):
            session.put("x", stored)
    built: list[Probe] = []

    def factory() -> Probe:
        built.append(Probe("built"))
        return built[-1]

    call = "session.get_or_create('x', factory, Probe)"
    with calling("RESET-3", call):
        result = session.get_or_create("x", factory, Probe)
    expected = stored if _STORED[state][1] else (built[0] if built else Probe("built"))
    check_equal(
        len(built), 0 if _STORED[state][1] else 1, "RESET-3", "number of factory() calls", when
    )
    check_equal(result, expected, "RESET-3", call, when)
    check_equal(session.get("x"), expected, "RESET-3", "session.get('x')", f"after {call} {when}")
    check_equal(session.names(), ["x"], "RESET-3", "session.names()", f"after {call} {when}")


@pytest.mark.clause("RESET-3")
def test_get_or_create_after_reset_builds_fresh_objects(subject: Any) -> None:
    """After session.reset(), get_or_create rebuilds each (now non-resident) object."""
    session = _session(subject, "RESET-3")
    old = {name: Probe(name) for name in NAMES[:3]}
    when = "after " + _populate(subject, session, old, {}, "RESET-3") + "; session.reset()"
    with calling("RESET-3", "session.reset()"):
        session.reset()
    for name in old:
        call = f"session.get_or_create({name!r}, lambda: Probe('new'), Probe)"
        with calling("RESET-3", call):
            result = session.get_or_create(name, lambda n=name: Probe(f"new {n}"), Probe)
        check_equal(result, session.get(name), "RESET-3", call, f"stored object, {when}")
        check(
            result is not old[name], "RESET-3", f"{call} returned the reset {old[name]!r} [{when}]"
        )


class SessionMapMachine(RuleBasedStateMachine):
    """``put``/``get``/``names`` of one session against a dict model (RESET-4)."""

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.session = _session(subject, "RESET-4")
        self.model: dict[str, Probe] = {}  # Python dict order: first insertion
        self.last_put: list[str] = []  # the order if a re-put moved the name last
        self.replaced: list[Probe] = []
        self.made = 0

    @rule(name=st.sampled_from(NAMES))
    def put(self, name: str) -> None:
        self.made += 1
        obj = Probe(f"p{self.made}")
        call = f"session.put({name!r}, {obj!r})"
        with calling("RESET-4", call):
            returned = self.session.put(name, obj)
        check_equal(returned, obj, "RESET-4", call)
        if name in self.model:
            self.replaced.append(self.model[name])
            self.last_put.remove(name)
        self.model[name] = obj
        self.last_put.append(name)

    @rule(name=st.sampled_from(NAMES))
    def get(self, name: str) -> None:
        call = f"session.get({name!r})"
        with calling("RESET-4", call):
            got = self.session.get(name)
        check_equal(got, self.model.get(name), "RESET-4", call)

    @invariant()
    def check_names_in_insertion_order(self) -> None:
        with calling("RESET-4", "session.names()"):
            names = list(self.session.names())
        if names != self.last_put:  # a re-put may keep its first place or move last
            check_equal(names, list(self.model), "RESET-4", "session.names()")

    @invariant()
    def check_replaced_objects_not_reset(self) -> None:
        for obj in self.replaced:
            check_equal(obj.resets, 0, "RESET-4", f"{obj!r}.resets", "after put() replaced it")


@pytest.mark.clause("RESET-4")
def test_get_put_names_behave_as_an_ordered_map(subject: Any) -> None:
    """get returns the object or None; put stores and returns it, never resetting the old one."""
    run_state_machine_as_test(lambda: SessionMapMachine(subject))
