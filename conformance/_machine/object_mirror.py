"""OBJ-9: a StateObject checked against the plain model its spec declares (and
OBJ-10, the one property every object shows the same way: recomputable while its
recompute source is resident).

A :class:`StateObjectSpec` may name a ``model``: a factory of a plain Python
object with the same methods as the StateObject (``allocate``, ``commit``,
``append``, ``stage``, ``discard``, ``view``, ``reset``, ``evict``) that states
what the object holds, the way zarr checks its stores against a dict. The OBJ
machine applies every call to the model first, then to the object
(:class:`ModelMirror`): the object must raise an exception of the type the
model raised, or nothing when the model raised nothing, and after every step
the object's observations (its three views, plus the spec's own
``observations``) must equal the model's bit for bit (``bitwise``).

:class:`ObjectModel` gives a model the contract's defaults (contract section
2): ``stage`` records, ``discard`` clears, ``append`` is ``commit``, ``evict``
is ``reset``. Nothing here knows any particular object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sessionstate.conformance._model.bitwise import Raised, Shown, bit_difference, show
from sessionstate.conformance.checks import calling, check, check_equal

__all__ = ["VIEWS", "ModelMirror", "check_recomputable"]

Observation = Callable[[Any], object]

#: Observed on every object with a model; ``view()`` is how the default
#: ``include_staged=True`` is checked.
VIEWS: Mapping[str, Observation] = {
    "view()": lambda obj: obj.view(),
    "view(include_staged=True)": lambda obj: obj.view(include_staged=True),
    "view(include_staged=False)": lambda obj: obj.view(include_staged=False),
}


class ModelMirror:
    """The spec's model, driven call for call alongside the object (OBJ-9).

    With no model in the spec every method does nothing, so the machine runs
    exactly as before for that spec.
    """

    def __init__(self, factory: Callable[[], Any] | None, extra: Mapping[str, Observation]):
        self.factory = factory
        self.observations = {**VIEWS, **extra}
        self.model: Any = None
        self.raised: Exception | None = None  # what the model's last call raised
        self.renew()

    def renew(self) -> None:
        """A fresh model, for the fresh object a ``factory()`` made."""
        self.model = None if self.factory is None else self.factory()

    def call(self, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Apply ``method(*args, **kwargs)`` to the model, remembering what it raised."""
        self.raised = None
        if self.model is None:
            return
        try:
            getattr(self.model, method)(*args, **kwargs)
        except Exception as error:
            self.raised = error

    def check_outcome(self, call: str, error: Exception | None) -> None:
        """The object raised the model's exception type, or nothing when the model did not."""
        if self.model is None or type(error) is type(self.raised):
            return
        observed = "nothing" if error is None else repr(error)
        expected = "nothing" if self.raised is None else type(self.raised).__name__
        what = f"exception from {call}"
        check_equal(Shown(observed), Shown(expected), "OBJ-9", what, "as its model")

    def check_observations(self, obj: Any, when: str) -> None:
        """Every observation of ``obj`` equals the model's, bit for bit."""
        if self.model is None:
            return
        for name, observe in self.observations.items():
            observed, expected = _observe(observe, obj), _observe(observe, self.model)
            found = bit_difference(observed, expected, name)
            if found is None:
                continue
            what, shown = found.path, (Shown(found.observed), Shown(found.expected))
            if isinstance(observed, Raised) or isinstance(expected, Raised):
                what, shown = name, (Shown(show(observed)), Shown(show(expected)))
            check_equal(*shown, "OBJ-9", what, f"{when}, as its model")


def check_recomputable(obj: Any, when: str) -> None:
    """OBJ-10: ``recomputable`` is the bool ``recompute_source is not None and
    recompute_source.resident`` (upstream's ``StateObject``: droppable and rebuildable
    *now*, so it follows the source's residency, not the object's own), and
    ``recompute_cost`` an int >= 0. A source without a ``resident`` fails OBJ-10."""
    with calling("OBJ-10", f"recomputable {when}"):
        recomputable, source, cost = obj.recomputable, obj.recompute_source, obj.recompute_cost
    source_resident: object = None
    if source is not None:
        with calling("OBJ-10", f"recompute_source.resident {when}"):
            source_resident = source.resident
    expected = source is not None and source_resident is True
    shown = "" if source is None else f", recompute_source.resident={source_resident!r}"
    when = f"recompute_source={_short(source)}{shown}, {when}"
    check_equal(recomputable, expected, "OBJ-10", "recomputable", when)
    check_equal(type(recomputable), bool, "OBJ-10", "type(recomputable)", when)
    natural = type(cost) is int and cost >= 0
    check(natural, "OBJ-10", f"recompute_cost={cost!r}, but should be an int >= 0")


def _short(value: object) -> str:
    """``None``, or the source's type name: its repr may be a whole tensor dump."""
    return "None" if value is None else f"<{type(value).__name__}>"


def _observe(observe: Observation, target: Any) -> object:
    try:
        return observe(target)
    except Exception as error:
        return Raised(error)
