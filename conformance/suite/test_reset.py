"""RESET-*: SessionState reset and rebuild (SPEC.md, "RESET: SessionState reset and rebuild").

Sessions come from the subject's manager. The objects put in them are the small
StateObject doubles of ``sessionstate.conformance._machine.reset``, which record what
was done to them, never compute an expected value; ``SessionMapMachine`` there checks
``put``/``get``/``names`` against a dict, and ``LongSessionMapMachine`` does over hundreds of
sessions and thousands of calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sessionstate.conformance._machine.reset import (
    NAMES,
    FaultyProbe,
    LongSessionMapMachine,
    OtherProbe,
    Probe,
    SessionMapMachine,
    SubProbe,
    make_session,
    populate,
    reads_of,
    reset_now,
    subject_buffer,
)
from sessionstate.conformance._machine.stateful import run_steps
from sessionstate.conformance.checks import calling, check, check_bytes, check_equal
from sessionstate.conformance.sizes import sizes

attr_values = st.one_of(
    st.integers(0, 9), st.text("ab", max_size=2), st.builds(torch.zeros, st.integers(0, 3))
)
#: attrs is ``dict[str, object]`` and RESET-1 clears all of it: every ``str`` is a key, the
#: usual names, any text (empty, non-ASCII) and names a port may treat as private (``_``).
attr_keys = st.one_of(
    st.sampled_from(["language", "call_count", "prompt_embeds"]),
    st.text(),
    st.text().map("_".__add__),
)
attr_dicts = sizes(0, 9).flatmap(
    lambda n: st.dictionaries(attr_keys, attr_values, min_size=n, max_size=n)
)
#: What the subject's buffer holds when its session is reset: committed items only, a
#: staged payload on top of them (not yet committed), or nothing after its own evict().
BUFFER_STATES = ("holding", "staged", "evicted")


@pytest.mark.clause("RESET-1")
@example(names=["frames"], with_buffer=True, attrs={"language": "ab"}, state="holding", items=1)
@example(names=[], with_buffer=True, attrs={"_step": 1, "": "a"}, state="staged", items=2)
@given(
    names=st.lists(st.sampled_from(NAMES), unique=True, max_size=5),
    with_buffer=st.booleans(),
    attrs=attr_dicts,
    state=st.sampled_from(BUFFER_STATES),
    items=sizes(0, 9),
)
def test_reset_resets_every_object_and_clears_attrs(
    subject: Any,
    names: list[str],
    with_buffer: bool,
    attrs: dict[str, Any],
    state: str,
    items: int,
) -> None:
    """After reset() every object is still registered under its name, non-resident; attrs is
    empty (whatever its keys), the session holds no bytes, and every read of the subject's
    buffer answers as a buffer reset while empty, whether it held ``items`` committed
    items, a staged payload on top of them, or was evicted itself first."""
    session = make_session(subject, "RESET-1")
    objects: dict[str, Any] = {name: Probe(name) for name in names}
    if with_buffer:
        objects["buffer"] = subject_buffer(subject, state, items)
    held = f"the buffer {state} with {items} items; " if with_buffer else ""
    when = "after " + held + populate(subject, session, objects, attrs, "RESET-1")
    when += "; session.reset()"
    with calling("RESET-1", "session.reset()"):
        session.reset()
    # Sorted: the order of names() is RESET-4's business, not reset()'s.
    registered = sorted(session.names())
    check_equal(registered, sorted(objects), "RESET-1", "sorted(session.names())", when)
    for name, obj in objects.items():
        check_equal(session.get(name), obj, "RESET-1", f"session.get({name!r})", when)
        check_equal(obj.resident, False, "RESET-1", f"session.get({name!r}).resident", when)
    check_equal(dict(session.attrs), {}, "RESET-1", "session.attrs", when)
    with calling("RESET-1", "session.nbytes_by_device()"):
        check_bytes(session.nbytes_by_device(), {}, "RESET-1", "session.nbytes_by_device()", when)
    if with_buffer:
        check_reads_as_reset_while_empty(subject, objects["buffer"], when)


def check_reads_as_reset_while_empty(subject: Any, buffer: Any, when: str) -> None:
    """Every public read of the reset ``buffer`` answers as a twin ``make_buffer()`` that
    was reset while empty: a reset that only marks the ring released keeps what it held."""
    with calling("RESET-1", "twin = make_buffer(); twin.reset()"):
        twin = subject.make_buffer()
        twin.reset()
    expected = reads_of(twin)
    for read, answer in reads_of(buffer).items():
        call = read.replace("obj", "session.get('buffer')")
        check_equal(
            answer, expected[read], "RESET-1", call, f"{when}; as a buffer reset while empty"
        )


#: Which of the objects are ``FaultyProbe``s: at least one.
faulty_kinds = st.lists(st.booleans(), min_size=1, max_size=5).filter(any)


@pytest.mark.clause("RESET-2")
@given(faulty=faulty_kinds, attrs=attr_dicts)
def test_reset_finishes_when_an_object_reset_raises(
    subject: Any, faulty: list[bool], attrs: dict[str, Any]
) -> None:
    """A raising reset() still lets the others reset and attrs clear, then propagates."""
    session = make_session(subject, "RESET-2")
    objects = {n: (FaultyProbe if f else Probe)(n) for n, f in zip(NAMES, faulty, strict=False)}
    when = "after " + populate(subject, session, objects, attrs, "RESET-2") + "; session.reset()"
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


# (what is stored under "x" before get_or_create("x", factory, Probe), whether it is returned)
_STORED: dict[str, tuple[Callable[[], object], bool]] = {
    "absent": (lambda: None, False),
    "resident-instance": (lambda: Probe("stored"), True),
    "resident-subclass": (lambda: SubProbe("stored"), True),
    "non-resident-instance": (lambda: reset_now(Probe("stored")), False),
    "resident-other-type": (lambda: OtherProbe("stored"), False),
}


@pytest.mark.clause("RESET-3")
@pytest.mark.parametrize("state", list(_STORED))
def test_get_or_create_rebuilds_only_what_it_must(subject: Any, state: str) -> None:
    """The stored object if a resident Probe; otherwise factory() once, stored and returned."""
    session = make_session(subject, "RESET-3")
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
    session = make_session(subject, "RESET-3")
    old = {name: Probe(name) for name in NAMES[:3]}
    when = "after " + populate(subject, session, old, {}, "RESET-3") + "; session.reset()"
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


@pytest.mark.clause("RESET-4")
@given(data=st.data())
def test_get_put_names_behave_as_an_ordered_map(subject: Any, data: st.DataObject) -> None:
    """get returns the object or None; put stores and returns it, never resetting the old one."""
    run_steps(lambda: SessionMapMachine(subject), data)


@pytest.mark.clause("RESET-4")
@settings(max_examples=max(2, settings.default.max_examples // 20))  # type: ignore[union-attr]
@given(data=st.data())
def test_long_program(subject: Any, data: st.DataObject) -> None:
    """The same over hundreds of sessions of one manager and thousands of puts and gets,
    each checked as it returns; every session's names at the end."""
    run_steps(lambda: LongSessionMapMachine(subject), data)
