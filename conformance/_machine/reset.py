"""The RESET machinery: StateObject doubles, session set-up, and ``SessionMapMachine``.

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
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sessionstate.conformance.checks import calling, check_equal
from sessionstate.reference import StateObject

__all__ = [
    "NAMES",
    "READS",
    "Double",
    "FaultyProbe",
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
