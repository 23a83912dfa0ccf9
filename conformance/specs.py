"""What a model author writes for the OBJ clauses: ``StateObjectSpec`` (how the suite
builds, sizes and feeds a custom StateObject), ``ObjectModel`` (the base of the plain
model an object is checked against, OBJ-9), and the memory model that prices what the
object holds.

A model author describes an object with a :class:`StateObjectSpec` and lists it
in ``Subject.state_objects``; the OBJ state machine
(``sessionstate.conformance.suite.test_obj``) drives it through allocate,
commit, append, stage, discard, view, reset, evict and re-allocate, and puts it
into a session of the subject's manager next to attributes that alias its
payloads.

The oracle is :class:`MemoryModel`: every tensor the suite hands out is an
allocation of known size and device (``allocations``), found again by storage
identity (contract section 1), so the expected bytes of what the object holds
never come from the object's code. Storages the object made itself (a
``FixedState`` buffer, a clone) count their own ``nbytes()``.

Light at import: ``sessionstate.conformance`` exports :class:`StateObjectSpec`
and the pytest plugin imports that package, so hypothesis and torch are
imported inside the functions that need them (tests/plugin pins this).
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sessionstate.conformance.subject import UsageError

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from sessionstate.conformance._model.memory import Allocation, Held

__all__ = [
    "CONTENTS",
    "RESIDENT_FROM",
    "UNKNOWN_KEYWORD",
    "LogModel",
    "MemoryModel",
    "ObjectModel",
    "StateObjectSpec",
    "committed_view",
]

UNKNOWN_KEYWORD = "not_a_sizing_parameter"
#: When an object becomes resident: at allocate(), or at the first commit after it.
RESIDENT_FROM = ("allocate", "commit")


def committed_view(obj: Any) -> object:
    """The default ``held``: ``obj.view(include_staged=False)``."""
    return obj.view(include_staged=False)


@dataclass(frozen=True)
class StateObjectSpec:
    """How the suite builds, sizes and feeds one kind of ``StateObject``.

    * ``factory()`` returns a new, unallocated object.
    * ``allocate``: keyword arguments for ``allocate()``, a mapping or a
      strategy of mappings (one is drawn at every allocation).
    * ``payloads``: what ``commit``/``append``/``stage`` may receive; a
      strategy, or a callable the suite calls with its own tensor strategy
      (tensors on every device, views of earlier ones included, so payloads
      alias on purpose).
    * ``held(obj)``: the values the object's bytes must equal the accounting
      of; by default ``obj.view(include_staged=False)``. Leaves must be strided
      tensors or NumPy arrays; containers are walked as in ACCT-8.
    * ``evictable=False`` for state that must never be evicted (``evict()``
      raises ``RuntimeError`` and the object stays resident, OBJ-6).
    * ``resident_from="commit"`` for an encode-once object that is resident only
      once something is committed after ``allocate()`` (Cosmos3's K/V: its adapter
      rebuilds it until the first encode); the default is ``"allocate"`` (OBJ-1).
    * ``model()``, optional, returns a plain model of a new object (OBJ-9,
      ``conformance.specs.ObjectModel``): every call goes to the model too, and the
      object must raise what it raises and show what it shows. Observed are
      ``view()`` with ``include_staged`` omitted, ``True`` and ``False``, plus
      ``observations``: name -> function of the object (or the model), e.g.
      ``{"len(obj)": len}``.
    * ``contents``, instead of a ``model``: a kind of contents the suite models
      itself (``CONTENTS``): ``"log"``, the payloads written since ``allocate()``
      in order (``LogModel``). A spec with neither leaves its contents unchecked:
      OBJ-9 is then *unchecked* and the verdict incomplete (exit 3), unless an
      expectations entry skips OBJ-9 with a reason.
    """

    name: str
    factory: Callable[[], Any]
    allocate: Mapping[str, object] | SearchStrategy[Mapping[str, object]]
    payloads: SearchStrategy[Any] | Callable[[SearchStrategy[Any]], SearchStrategy[Any]]
    held: Callable[[Any], object] = committed_view
    evictable: bool = True
    model: Callable[[], Any] | None = None
    observations: Mapping[str, Callable[[Any], object]] = field(default_factory=dict)
    resident_from: str = "allocate"
    contents: str | None = None

    def oracle(self) -> Callable[[], Any] | None:
        """What OBJ-9 checks the object's contents against: the ``model``, else the model
        of the declared ``contents`` kind, else ``None`` (contents unchecked)."""
        if self.model is not None:
            return self.model
        return CONTENTS[self.contents] if self.contents is not None else None

    def __repr__(self) -> str:
        # Short: Hypothesis prints the spec in every failing case of the OBJ tests.
        return f"StateObjectSpec({self.name!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def __post_init__(self) -> None:
        from hypothesis.strategies import SearchStrategy

        if self.resident_from not in RESIDENT_FROM:
            raise UsageError(
                f"StateObjectSpec {self.name!r}: resident_from must be one of "
                f"{', '.join(map(repr, RESIDENT_FROM))}, got {self.resident_from!r}"
            )
        if not isinstance(self.name, str) or not self.name:
            raise UsageError(f"StateObjectSpec.name must be a non-empty str, got {self.name!r}")
        for field_name in ("factory", "held"):
            if not callable(getattr(self, field_name)):
                raise UsageError(f"StateObjectSpec {self.name!r}: {field_name} must be callable")
        if self.model is not None and not callable(self.model):
            raise UsageError(f"StateObjectSpec {self.name!r}: model must be callable or None")
        if self.contents is not None and self.contents not in CONTENTS:
            raise UsageError(
                f"StateObjectSpec {self.name!r}: contents must be one of "
                f"{', '.join(map(repr, CONTENTS))} or None, got {self.contents!r}"
            )
        if self.contents is not None and self.model is not None:
            raise UsageError(
                f"StateObjectSpec {self.name!r}: give a model or a contents kind, not both"
            )
        if not isinstance(self.observations, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in self.observations.items()
        ):
            raise UsageError(
                f"StateObjectSpec {self.name!r}: observations must map names to callables"
            )
        if not isinstance(self.allocate, (Mapping, SearchStrategy)):
            raise UsageError(
                f"StateObjectSpec {self.name!r}: allocate must be a mapping of keyword "
                f"arguments or a strategy of them, got {type(self.allocate).__name__}"
            )
        if not (isinstance(self.payloads, SearchStrategy) or callable(self.payloads)):
            raise UsageError(
                f"StateObjectSpec {self.name!r}: payloads must be a strategy or a callable "
                f"taking the suite's tensor strategy, got {type(self.payloads).__name__}"
            )

    def allocate_kwargs(self) -> SearchStrategy[dict[str, object]]:
        """Keyword arguments for ``allocate()``, as a strategy of fresh dicts."""
        from hypothesis import strategies as st
        from hypothesis.strategies import SearchStrategy

        if isinstance(self.allocate, SearchStrategy):
            return self.allocate.map(dict)
        return st.just(self.allocate).map(dict)

    def payload_strategy(self, tensors: SearchStrategy[Any]) -> SearchStrategy[Any]:
        """The payload strategy, built over the suite's ``tensors`` when callable."""
        from hypothesis.strategies import SearchStrategy

        if isinstance(self.payloads, SearchStrategy):
            return self.payloads
        built = self.payloads(tensors)
        if not isinstance(built, SearchStrategy):
            raise UsageError(
                f"StateObjectSpec {self.name!r}: payloads(tensors) returned "
                f"{type(built).__name__}, not a strategy"
            )
        return built


class MemoryModel:
    """Every allocation the suite handed out, and the bytes of values that hold them.

    ``allocations_in(value)`` maps each tensor or array inside ``value`` to an
    allocation: the suite's own by storage identity, or one recorded on first
    sight for storages the object made itself. Both keep their storage alive,
    so an ``id()`` is never reused while it is a key.
    """

    def __init__(self) -> None:
        self.pool: list[Held] = []
        self._values: dict[int, Held] = {}
        self._storages: dict[int, tuple[object, Allocation]] = {}
        self._suites: set[str] = set()  # labels of the allocations the suite made
        self._own = itertools.count()

    def add(self, held: Held) -> Any:
        """Record a new allocation of the suite's (noted for the printed program); return its value."""
        from hypothesis import note

        self.pool.append(held)
        value: Any = held.value  # a tensor: the suite makes no NumPy payloads here
        storage = value.untyped_storage()
        self._storages[id(storage)] = (storage, held.allocation)
        self._suites.add(held.allocation.label)
        note(f"{held.allocation.label} = {held.allocation.source}")
        return self._remember(held)

    def view(self, draw: Callable[[SearchStrategy[Any]], Any], bases: list[Held]) -> Any:
        """A value derived from one of ``bases``, sharing its storage."""
        from hypothesis import strategies as st

        from sessionstate.conformance._model.memory import derivations

        # Index draws, not sampled_from(list): a strategy built per draw costs
        # more than the rest of a step.
        base = bases[draw(st.integers(0, len(bases) - 1))]
        options = derivations(base)
        return self._remember(options[draw(st.integers(0, len(options) - 1))](base))

    def roots(self, allocations: Iterable[Allocation]) -> list[Held]:
        """The suite's allocations among ``allocations``, as values to derive views from."""
        from sessionstate.conformance._model.memory import Held

        return [Held(a.root, a, a.label) for a in allocations if self.is_suites(a)]

    def _remember(self, held: Held) -> Any:
        self._values[id(held.value)] = held
        return held.value

    def allocations_in(self, value: object) -> list[Allocation]:
        """The allocation behind every tensor or array leaf of ``value``, in walk order."""
        import numpy as np
        import torch

        found: list[Allocation] = []
        entered: set[int] = set()

        def visit(item: object) -> None:
            if isinstance(item, torch.Tensor):
                storage = item.untyped_storage()
                found.append(self._allocation(storage, str(item.device), storage.nbytes()))
            elif isinstance(item, np.ndarray):
                owner = item
                while isinstance(owner.base, np.ndarray):
                    owner = owner.base
                found.append(self._allocation(owner, "cpu", owner.nbytes))
            elif isinstance(item, (str, bytes, bytearray)) or id(item) in entered:
                return
            elif isinstance(item, Mapping):
                entered.add(id(item))
                for inner in item.values():
                    visit(inner)
            elif isinstance(item, Iterable) and hasattr(item, "__len__"):
                entered.add(id(item))
                for inner in item:
                    visit(inner)

        visit(value)
        return found

    def _allocation(self, key: object, device: str, nbytes: int) -> Allocation:
        from sessionstate.conformance._model.memory import Allocation

        known = self._storages.get(id(key))
        if known is None:
            made = Allocation(f"own{next(self._own)}", device, nbytes, key)  # type: ignore[arg-type]
            known = self._storages[id(key)] = (key, made)
        return known[1]

    def is_suites(self, allocation: Allocation) -> bool:
        """Whether the suite (not the object) made ``allocation``."""
        return allocation.label in self._suites

    @staticmethod
    def expected(
        allocations: Iterable[Allocation], counted: set[str] | None = None
    ) -> dict[str, int]:
        """Bytes of the distinct ``allocations``, per device (``counted`` models a seen set)."""
        from sessionstate.conformance._model.memory import Held, expected_bytes

        return expected_bytes((Held(a.root, a, a.label) for a in allocations), counted)

    def describe(self, value: object) -> str:
        """``value`` as Python-looking text, suite tensors by the expression that made them."""
        held = self._values.get(id(value))
        if held is not None and held.value is value:
            return held.expr
        if isinstance(value, Mapping):
            return "{" + ", ".join(f"{k!r}: {self.describe(v)}" for k, v in value.items()) + "}"
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.describe(v) for v in value)
            return (
                f"[{inner}]"
                if isinstance(value, list)
                else f"({inner}{',' if len(value) == 1 else ''})"
            )
        shape = getattr(value, "shape", None)
        if shape is not None:
            return f"<{type(value).__name__} {tuple(shape)} on {getattr(value, 'device', 'cpu')}>"
        return repr(value)


class ObjectModel(ABC):
    """Base of plain models (OBJ-9): the StateObject defaults; subclasses add ``allocate``,
    ``commit``, ``view`` and ``reset``.

    A model changes nothing observable when it raises (validate, then mutate):
    the object is held to exactly what the model does.
    """

    staged: Any = None

    @abstractmethod
    def commit(self, payload: Any = None) -> None: ...

    @abstractmethod
    def view(self, *, include_staged: bool = True) -> object: ...

    @abstractmethod
    def reset(self) -> None: ...

    def stage(self, payload: Any) -> None:
        self.staged = payload

    def discard(self) -> None:
        self.staged = None

    def append(self, payload: Any) -> None:
        self.commit(payload)

    def evict(self, policy: object = None) -> None:
        self.reset()


class LogModel(ObjectModel):
    """``contents="log"``: the payloads written since ``allocate()``, in order.

    ``allocate(**sizing)`` empties it; a ``maxlen`` among the keywords (not ``None``)
    keeps the last ``maxlen`` payloads; any other sizing keyword is the object's own and
    changes nothing here, but an unknown one (OBJ-7's misuse) or a positional argument
    raises ``TypeError``, as the object must. ``commit(payload)`` and ``append(payload)``
    add ``payload`` last; ``commit()`` with no payload adds nothing; a write before
    ``allocate()`` raises ``RuntimeError``. ``view()`` is a new list of the payloads,
    the staged one last when ``include_staged`` (the default); ``reset()`` and
    ``evict()`` empty it until the next ``allocate()`` (``view()`` is then ``[]``).
    """

    def __init__(self) -> None:
        self.items: list[Any] | None = None
        self.maxlen: int | None = None

    def allocate(self, *args: object, **sizing: object) -> None:
        if args or UNKNOWN_KEYWORD in sizing:
            raise TypeError("allocate() takes keyword sizing arguments the object knows")
        maxlen = sizing.get("maxlen")
        self.items, self.maxlen = [], maxlen if isinstance(maxlen, int) else None

    def commit(self, payload: Any = None) -> None:
        if payload is not None:
            self.append(payload)

    def append(self, payload: Any) -> None:
        if self.items is None:
            raise RuntimeError("append before allocate()")
        self.items.append(payload)
        if self.maxlen is not None and len(self.items) > self.maxlen:
            del self.items[0]

    def view(self, *, include_staged: bool = True) -> list[Any]:
        staged = [self.staged] if include_staged and self.staged is not None else []
        return [*(self.items or ()), *staged]

    def reset(self) -> None:
        self.items, self.maxlen, self.staged = None, None, None


#: The contents kinds a ``StateObjectSpec`` may declare instead of a model, and the
#: model the suite builds for each (OBJ-9).
CONTENTS: dict[str, Callable[[], Any]] = {"log": LogModel}
