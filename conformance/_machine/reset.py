"""The RESET machinery: StateObject doubles, session set-up, ``SessionMapMachine`` and its
long program, ``LongSessionMapMachine``.

Sessions come from the subject's manager. The objects put in them are the small
StateObject doubles below, which record what was done to them; they subclass
the shared ``StateObject`` ABC only so a subject's ``get_or_create`` sees a
StateObject, never to compute an expected value.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionstate.conformance.checks import calling, check_equal
from sessionstate.conformance.sizes import COUNT_BOUND, sizes
from sessionstate.reference import StateObject

__all__ = [
    "NAMES",
    "READS",
    "Double",
    "FaultyProbe",
    "LongSessionMapMachine",
    "OtherProbe",
    "Probe",
    "SessionMapMachine",
    "SubProbe",
    "make_session",
    "outcome",
    "populate",
    "reads_of",
    "reset_now",
    "subject_buffer",
]

#: The names objects are put under.
NAMES = ("frames", "video_latents", "kv", "state", "cache")


class Double(StateObject[Any, Any]):
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


class Probe(Double):
    """The class ``get_or_create`` is asked for."""


class SubProbe(Probe):
    """A subclass of ``Probe``: an instance of the requested class."""


class OtherProbe(Double):
    """Not a ``Probe``: the wrong type for ``get_or_create(..., Probe)``."""


class FaultyProbe(Probe):
    """A ``Probe`` whose ``reset()`` goes non-resident, then raises ``error``."""

    def __init__(self, tag: str) -> None:
        super().__init__(tag)
        self.error = RuntimeError(f"reset of {tag!r} failed")

    def reset(self) -> None:
        super().reset()
        raise self.error


def make_session(subject: Any, clause: str) -> Any:
    with calling(clause, "make_manager(max_sessions=4).get_or_create_session('reset')"):
        return subject.make_manager(max_sessions=4).get_or_create_session("reset")


def populate(
    subject: Any, session: Any, objects: dict[str, Any], attrs: dict[str, Any], clause: str
) -> str:
    """Put ``objects`` and set ``attrs``; return the program that did it."""
    program = []
    for name, obj in objects.items():
        # A subject's buffer has no Python repr; it was made by make_buffer().
        made = repr(obj) if isinstance(obj, Double) else "make_buffer()"
        call = f"session.put({name!r}, {made})"
        with calling(clause, call):
            session.put(name, obj)
        program.append(call)
    session.attrs.update(attrs)
    program += [f"session.attrs[{k!r}] = {v!r}" for k, v in attrs.items()]
    return "; ".join(program)


def subject_buffer(subject: Any, state: str = "holding", items: int = 1) -> Any:
    """The subject's buffer in ``state`` before its session's reset (RESET-1): ``items``
    committed tensors (``"holding"``), with one more staged on top, not yet committed
    (``"staged"``), or then evicted itself (``"evicted"``). A buffer without ``stage`` or
    ``evict`` (``buffer_factory`` promises only ``append``) is left holding."""
    call = f"make_buffer(); {items} x append(torch.zeros(2))"
    with calling("RESET-1", call):
        buffer = subject.make_buffer()
        for i in range(items):
            buffer.append(torch.full((2,), float(i)))
    method = {"staged": "stage", "evicted": "evict"}.get(state)
    step = getattr(buffer, method, None) if method else None
    if callable(step):
        with calling("RESET-1", f"{call}; buffer.{method}(...)"):
            if method == "stage":
                step(torch.full((3,), -1.0))
            else:
                step()
    return buffer


#: Every public read of a StateObject and of a LatentBuffer (RESET-1, amended in version 3):
#: after reset() each must answer as an object of the kind that was reset while empty.
READS: dict[str, Callable[[Any], object]] = {
    "obj.view()": lambda obj: obj.view(),
    "obj.view(include_staged=True)": lambda obj: obj.view(include_staged=True),
    "obj.view(include_staged=False)": lambda obj: obj.view(include_staged=False),
    "len(obj)": len,
    "list(obj)": list,
    "obj.maxlen": lambda obj: obj.maxlen,
    "obj.nbytes_by_device(set())": lambda obj: obj.nbytes_by_device(set()),
    "obj.nbytes": lambda obj: obj.nbytes,
    "obj.resident": lambda obj: obj.resident,
}


def outcome(value: object) -> object:
    """``value`` as plain, comparable data: a tensor or array as its type, shape and dtype,
    containers item by item, anything else as it is."""
    if isinstance(value, torch.Tensor) or hasattr(value, "__array_interface__"):
        return ("tensor", type(value).__name__, tuple(value.shape), str(value.dtype))  # type: ignore[attr-defined]
    if isinstance(value, Mapping):
        return {k: outcome(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, deque)):
        return [outcome(v) for v in value]
    return value


def reads_of(obj: Any) -> dict[str, object]:
    """Each of ``READS`` on ``obj``: its ``outcome``, or ``raises <type>`` (a read the
    object does not offer raises the same for every object of its kind)."""
    answers: dict[str, object] = {}
    for name, read in READS.items():
        try:
            answers[name] = outcome(read(obj))
        except Exception as error:
            answers[name] = f"raises {type(error).__name__}"
    return answers


def reset_now(obj: Double) -> Double:
    obj.reset()
    return obj


class SessionMapMachine(RuleBasedStateMachine):
    """``put``/``get``/``names`` of one session against a dict model (RESET-4)."""

    def __init__(self, subject: Any) -> None:
        super().__init__()
        self.session = make_session(subject, "RESET-4")
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


#: The most sessions and calls (``put``, ``get``, and the calls that open sessions) of one
#: program of ``LongSessionMapMachine``.
MAP_SESSIONS = 1024
MAP_CALLS = 4096


class LongSessionMapMachine(RuleBasedStateMachine):
    """``put``/``get``/``names`` (RESET-4) over hundreds of sessions of one manager, through
    thousands of calls: a map shared between sessions, or one that changes past a size,
    shows only there.

    Each session has its own model: its names in first-put order and in last-put order (a
    re-put may keep a name's place or move it last, as ``SessionMapMachine`` allows). Each
    call is checked as it returns, in O(1): ``put`` returns its object and leaves the one it
    replaced un-reset; ``get`` returns what the model holds, or None; a new session holds no
    names. ``names()`` is read at rest, after each step, of the sessions the step touched
    (O(their names)); ``finish()`` reads every session's and checks every replaced object
    again, once (``SessionMapMachine`` rereads them all after each step)."""

    def __init__(self, subject: Any) -> None:
        super().__init__()
        with calling("RESET-4", f"make_manager(max_sessions={MAP_SESSIONS})"):
            self.manager = subject.make_manager(max_sessions=MAP_SESSIONS)
        self.sessions: list[Any] = []
        self.maps: list[dict[str, Probe]] = []  # first-put order
        self.last_put: list[dict[str, None]] = []  # the order if a re-put moves its name last
        self.held: set[int] = set()  # id() of the sessions, to skip one handed out twice
        self.replaced: list[Probe] = []
        self.touched: set[int] = set()
        self.calls = self.made = 0

    def _budget(self, count: int) -> int:
        return max(0, min(count, MAP_CALLS - self.calls))

    @initialize(count=sizes(1, MAP_SESSIONS), opening=st.sampled_from((False, *(True,) * 9)),
                names=sizes(1, COUNT_BOUND), across=sizes(1, MAP_SESSIONS))  # fmt: skip
    def start(self, count: int, opening: bool, names: int, across: int) -> None:
        """``count`` sessions; the ``opening`` (nine programs in ten, never the simplest):
        2,048 puts of ``names`` names across the first ``across`` of them, then 512 gets."""
        self.open_sessions(count)
        if opening and self.sessions:
            self.puts(MAP_CALLS // 2, names, across, "")
            self.gets(MAP_CALLS // 8, names, across, "")

    @rule(count=sizes(1, MAP_SESSIONS))
    def open_sessions(self, count: int) -> None:
        """``count`` more sessions, each new and empty (a KEY or LRU bug that hands one out
        twice is not this clause's: such a session is left out)."""
        for _ in range(min(self._budget(count), MAP_SESSIONS - len(self.sessions))):
            self.calls += 1
            call = f"get_or_create_session('map{self.calls}').names()"
            with calling("RESET-4", call):
                session = self.manager.get_or_create_session(f"map{self.calls}")
                names = list(session.names())
            if id(session) in self.held:
                continue
            if names:
                check_equal(names, [], "RESET-4", call, f"{len(self.sessions)} sessions open")
            self.held.add(id(session))
            self.sessions.append(session)
            self.maps.append({})
            self.last_put.append({})

    def _targets(self, count: int, names: int, across: int, prefix: str) -> list[tuple[int, str]]:
        """(session, name) of each call of a step: the first ``across`` sessions in turn,
        each through ``prefix`` + 0, 1, ... up to ``names`` (few names re-put, many add: over
        one session, a step puts thousands of names into it)."""
        across = min(across, len(self.sessions))
        calls = range(self._budget(count))
        return [(i % across, f"{prefix}{(i // across) % names}") for i in calls]

    @precondition(lambda self: self.sessions)
    @rule(count=sizes(1, COUNT_BOUND), names=sizes(1, COUNT_BOUND), across=sizes(1, MAP_SESSIONS),
          prefix=st.text(max_size=2) | st.sampled_from(NAMES))  # fmt: skip
    def puts(self, count: int, names: int, across: int, prefix: str) -> None:
        for index, name in self._targets(count, names, across, prefix):
            self.calls, self.made = self.calls + 1, self.made + 1
            obj, model, moved = Probe(f"p{self.made}"), self.maps[index], self.last_put[index]
            call = f"session #{index}.put({name!r}, {obj!r})"
            with calling("RESET-4", call):
                returned = self.sessions[index].put(name, obj)
            if returned is not obj:
                check_equal(returned, obj, "RESET-4", call)
            old = model.get(name)
            if old is not None:
                if old.resets:
                    check_equal(old.resets, 0, "RESET-4", f"{old!r}.resets", f"after {call}")
                self.replaced.append(old)
                del moved[name]
            model[name], moved[name] = obj, None
            self.touched.add(index)

    @precondition(lambda self: self.sessions)
    @rule(count=sizes(1, COUNT_BOUND), names=sizes(1, COUNT_BOUND), across=sizes(1, MAP_SESSIONS),
          prefix=st.text(max_size=2) | st.sampled_from(NAMES))  # fmt: skip
    def gets(self, count: int, names: int, across: int, prefix: str) -> None:
        for index, name in self._targets(count, names, across, prefix):
            self.calls += 1
            call = f"session #{index}.get({name!r})"
            with calling("RESET-4", call):
                got = self.sessions[index].get(name)
            if got is not self.maps[index].get(name):
                check_equal(got, self.maps[index].get(name), "RESET-4", call)

    @invariant()
    def check_names_of_touched_sessions(self) -> None:
        for index in sorted(self.touched):
            self._check_names(index)
        self.touched.clear()

    def _check_names(self, index: int) -> None:
        call = f"session #{index}.names()"
        with calling("RESET-4", call):
            names = list(self.sessions[index].names())
        if names != list(self.last_put[index]):  # a re-put may keep its place or move last
            check_equal(names, list(self.maps[index]), "RESET-4", call)

    def finish(self) -> None:
        """After a program that passed: every session's names, every replaced object."""
        for index in range(len(self.sessions)):
            self._check_names(index)
        for obj in self.replaced:
            check_equal(obj.resets, 0, "RESET-4", f"{obj!r}.resets", "after put() replaced it")
