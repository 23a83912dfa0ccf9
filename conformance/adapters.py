"""Validating model adapters: ``Op``, ``AdapterSpec`` and the differential machine.

An adapter presents a model's bespoke per-session state class over the session
manager, and upstream's acceptance bar for a port is bit-equivalence against
the bespoke path (contract section 7). Describe the state class once with an
:class:`AdapterSpec`; :class:`AdapterMachine` then drives the bespoke state of
each session and a FRESH adapter per step (the way a pipeline builds one per
forward) with the same generated calls, and checks the ADAPT clauses.

Expected values come from the bespoke side and from the suite's own walk of
object graphs (:func:`reachable_memory`), never from any accounting code.
torch and NumPy are imported when a machine runs, not at import:
``sessionstate.conformance`` exports ``AdapterSpec`` and ``Op``, and the pytest
plugin that imports the package must stay light at load.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any
from weakref import ReferenceType

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from .checks import calling, check_bytes, check_equal
from .subject import UsageError

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "AdapterMachine",
    "AdapterSpec",
    "Call",
    "Difference",
    "Memory",
    "Op",
    "Raised",
    "bit_difference",
    "bytes_by_device",
    "reachable_memory",
]


class Op:
    """One public method of the state class, and how to draw its arguments.

    ``Op("accumulate_frames", frames)`` calls ``state.accumulate_frames(<drawn>)``;
    keyword strategies draw keyword arguments. ``Op.set("language", tokens)``
    writes an attribute instead: pipelines also write state directly, and an
    adapter's descriptors must behave like plain attributes.
    """

    def __init__(
        self,
        method_name: str,
        /,
        *arg_strategies: st.SearchStrategy[Any],
        **kwarg_strategies: st.SearchStrategy[Any],
    ) -> None:
        for strategy in (*arg_strategies, *kwarg_strategies.values()):
            if not isinstance(strategy, st.SearchStrategy):
                raise UsageError(
                    f"Op({method_name!r}, ...) got {strategy!r}, not a Hypothesis strategy; "
                    "wrap a constant in st.just(...)"
                )
        self.name = method_name
        self.arg_strategies = arg_strategies
        self.kwarg_strategies = kwarg_strategies
        self.is_set = False
        # Validating a strategy is costly; a machine draws from this one every step.
        self._calls: st.SearchStrategy[Call] | None = None

    @classmethod
    def set(cls, attribute: str, strategy: st.SearchStrategy[Any]) -> Op:
        """An attribute write, ``state.<attribute> = <drawn>``."""
        op = cls(attribute, strategy)
        op.is_set = True
        return op

    def calls(self) -> st.SearchStrategy[Call]:
        """Calls of this operation with drawn arguments (one strategy, built once)."""
        if self._calls is None:
            self._calls = st.builds(
                Call,
                st.just(self),
                st.tuples(*self.arg_strategies),
                st.fixed_dictionaries(self.kwarg_strategies),
            )
        return self._calls

    def __repr__(self) -> str:
        return f"Op{'.set' if self.is_set else ''}({self.name!r}, ...)"


@dataclass(frozen=True, eq=False)
class Raised:
    """An exception a call raised; two compare equal when their types are equal."""

    error: Exception

    def __repr__(self) -> str:
        return f"Raised({self.error!r})"


@dataclass(frozen=True, eq=False)
class Call:
    """One drawn operation; its repr is the call, so printed programs read as Python."""

    op: Op
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def __repr__(self) -> str:
        if self.op.is_set:
            return f"setattr({self.op.name!r}, {self.args[0]!r})"
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.op.name}({', '.join(parts)})"

    def describe(self, side: str) -> str:
        """``adapter.reset(...)`` or ``adapter.language = ...``, for failure messages."""
        return f"{side}.{self.op.name}{' = ...' if self.op.is_set else '(...)'}"

    def apply(self, state: object) -> Any:
        """Perform the call on ``state``; a raised exception is returned as ``Raised``.

        Each side gets its own deep copy of the arguments, so neither can see
        (or mutate) what the other stored.
        """
        args, kwargs = copy.deepcopy((self.args, self.kwargs))
        try:
            if self.op.is_set:
                setattr(state, self.op.name, args[0])
                return None
            return getattr(state, self.op.name)(*args, **kwargs)
        except Exception as error:
            return Raised(error)


Observer = str | Callable[[Any], Any]


@dataclass(frozen=True)
class AdapterSpec:
    """How to validate one model adapter against its bespoke state class.

    ``bespoke_factory()`` builds the model's own state for one session;
    ``adapter_factory(manager, session_id)`` builds an adapter, once per
    forward; ``operations`` are the calls to generate; ``observe`` names
    attributes, or callables ``f(state) -> value`` (pure reads), compared on
    both sides after every step. ``max_sessions`` is the manager's capacity
    and the bespoke LRU's, kept small so that sessions are evicted often.
    """

    name: str
    bespoke_factory: Callable[[], Any]
    adapter_factory: Callable[[Any, Any], Any]
    operations: Sequence[Op]
    observe: Sequence[Observer] = ()
    max_sessions: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "operations", tuple(self.operations))
        object.__setattr__(self, "observe", tuple(self.observe))
        where = f"AdapterSpec {self.name!r}"
        if not self.operations or not all(isinstance(op, Op) for op in self.operations):
            raise UsageError(f"{where}: operations must be a non-empty sequence of Op")
        if not all(isinstance(o, str) or callable(o) for o in self.observe):
            raise UsageError(f"{where}: observe entries must be attribute names or callables")
        if not isinstance(self.max_sessions, int) or self.max_sessions <= 0:
            raise UsageError(
                f"{where}: max_sessions must be a positive int, got {self.max_sessions!r}"
            )

    def calls(self) -> st.SearchStrategy[Call]:
        """Calls of any of the operations."""
        return st.one_of(*(op.calls() for op in self.operations))

    def session_ids(self) -> tuple[object, ...]:
        """A pool one larger than the capacity; ``None`` is the session "default" (KEY-1)."""
        return (None, *(f"s{i}" for i in range(1, self.max_sessions + 1)))

    def observers(self) -> list[tuple[str, Callable[[Any], Any]]]:
        """``(label with {} for the side, reader)`` for every ``observe`` entry."""
        readers: list[tuple[str, Callable[[Any], Any]]] = []
        for entry in self.observe:
            if isinstance(entry, str):
                readers.append((f"{{}}.{entry}", lambda state, name=entry: getattr(state, name)))
            else:
                readers.append((f"{getattr(entry, '__name__', repr(entry))}({{}})", entry))
        return readers


# --- bit-for-bit comparison -------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """Where two values first differ, and what each side has there."""

    path: str
    observed: str
    expected: str

    def __str__(self) -> str:
        return f"{self.path} is {self.observed}, not {self.expected}"


def bit_difference(observed: object, expected: object, path: str = "value") -> Difference | None:
    """The first difference between ``observed`` and ``expected``, or ``None``.

    Same types; tensors and arrays equal in dtype, shape, device and every
    value, NaNs at the same places counting as equal; mappings, lists, tuples
    and deques compared item by item; ``Raised`` equal by exception type;
    anything else by ``==`` (NaN floats equal).
    """
    import numpy as np
    import torch

    if type(observed) is not type(expected):
        return Difference(f"type({path})", type(observed).__name__, type(expected).__name__)
    if isinstance(expected, Raised):
        assert isinstance(observed, Raised)
        same = type(observed.error) is type(expected.error)
        return None if same else Difference(path, repr(observed), repr(expected))
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, np.ndarray):
        return _array_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, Mapping):
        return _mapping_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, (list, tuple, deque)):
        return _sequence_difference(observed, expected, path)  # type: ignore[arg-type]
    if isinstance(expected, float) and math.isnan(expected) and math.isnan(observed):  # type: ignore[arg-type]
        return None
    try:
        equal = bool(observed == expected)
    except Exception:
        equal = False
    return None if equal else Difference(path, _show(observed), _show(expected))


def _tensor_difference(a: torch.Tensor, b: torch.Tensor, path: str) -> Difference | None:
    import torch

    for attribute in ("dtype", "shape", "device", "layout"):
        if getattr(a, attribute) != getattr(b, attribute):
            return Difference(
                f"{path}.{attribute}", str(getattr(a, attribute)), str(getattr(b, attribute))
            )
    if a.device.type == "meta" or type(a).__name__ == "FakeTensor":
        return None  # no values to read
    if a.layout != torch.strided:
        a, b = a.to_dense(), b.to_dense()
    if a.is_floating_point() or a.is_complex():
        nans = a.isnan()
        if not torch.equal(nans, b.isnan()):
            return _first_unequal(nans, b.isnan(), f"isnan({path})")
        a, b = a.masked_fill(nans, 0), b.masked_fill(nans, 0)
    return None if torch.equal(a, b) else _first_unequal(a, b, path)


def _first_unequal(a: torch.Tensor, b: torch.Tensor, path: str) -> Difference:
    index = tuple(int(i) for i in (a != b).nonzero()[0]) if a.dim() else ()
    where = f"{path}[{', '.join(map(str, index))}]" if index else path
    return Difference(where, repr(a[index].item()), repr(b[index].item()))


def _array_difference(a: np.ndarray, b: np.ndarray, path: str) -> Difference | None:
    import numpy as np

    for attribute in ("dtype", "shape"):
        if getattr(a, attribute) != getattr(b, attribute):
            return Difference(
                f"{path}.{attribute}", str(getattr(a, attribute)), str(getattr(b, attribute))
            )
    same = np.asarray(a == b)
    if a.dtype.kind in "fc":
        same |= np.isnan(a) & np.isnan(b)
    if same.all():
        return None
    index = tuple(int(i) for i in np.argwhere(~same)[0]) if a.ndim else ()
    where = f"{path}[{', '.join(map(str, index))}]" if index else path
    return Difference(where, repr(a[index]), repr(b[index]))


def _mapping_difference(a: Mapping[Any, Any], b: Mapping[Any, Any], path: str) -> Difference | None:
    if set(a) != set(b):
        return Difference(f"{path}.keys()", repr(sorted(map(repr, a))), repr(sorted(map(repr, b))))
    for key in b:
        found = bit_difference(a[key], b[key], f"{path}[{key!r}]")
        if found is not None:
            return found
    return None


def _sequence_difference(a: Sequence[Any], b: Sequence[Any], path: str) -> Difference | None:
    if len(a) != len(b):
        return Difference(f"len({path})", str(len(a)), str(len(b)))
    for i, (x, y) in enumerate(zip(a, b)):
        found = bit_difference(x, y, f"{path}[{i}]")
        if found is not None:
            return found
    return None


def _show(value: object, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]} ...>"


class _Shown:
    """A value already rendered, so ``check_equal`` prints it verbatim."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


# --- the suite's own memory walk ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Memory:
    """One allocation a walk reached: a tensor storage or a NumPy owner array.

    ``owner`` keeps the allocation alive, so the walk's ``id`` keys stay valid.
    """

    owner: object
    device: str
    nbytes: int
    path: str


@cache
def _leaves() -> tuple[type, ...]:
    """Values a walk never enters: they hold no tensor or array memory of their own."""
    import numpy as np
    import torch

    return (
        str, bytes, bytearray, int, float, complex, type(None), type, range,
        ModuleType, FunctionType, MethodType, BuiltinFunctionType, ReferenceType,
        torch.dtype, torch.device, np.dtype,
    )  # fmt: skip


def reachable_memory(
    roots: Iterable[tuple[str, object]], stop: Iterable[object] = ()
) -> dict[int, Memory]:
    """Every allocation reachable from ``roots``, by storage identity, first path kept.

    Walks mappings' values, the items of lists, tuples, deques and sets, and
    other objects' ``__dict__`` and ``__slots__``; never enters an object in
    ``stop`` (a manager, a SessionState), a class, a module or a function.
    """
    import numpy as np
    import torch

    leaves = _leaves()
    stopped = {id(obj) for obj in stop}
    visited: set[int] = set()
    found: dict[int, Memory] = {}
    todo = list(roots)[::-1]
    while todo:
        path, obj = todo.pop()
        if isinstance(obj, leaves) or id(obj) in stopped or id(obj) in visited:
            continue
        visited.add(id(obj))
        if isinstance(obj, torch.Tensor):
            todo.extend(_add_tensor(found, obj, path)[::-1])
        elif isinstance(obj, np.ndarray):
            owner = obj
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            found.setdefault(id(owner), Memory(owner, "cpu", owner.nbytes, path))
        else:
            todo.extend(_children(obj, path)[::-1])
    return found


def _add_tensor(
    found: dict[int, Memory], tensor: torch.Tensor, path: str
) -> list[tuple[str, object]]:
    import torch

    # A sparse tensor has no storage of its own: its component tensors hold the memory.
    if tensor.layout == torch.sparse_coo:
        return [(f"{path}._indices()", tensor._indices()), (f"{path}._values()", tensor._values())]
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [
            (f"{path}.values()", p)
            for p in (tensor.crow_indices(), tensor.col_indices(), tensor.values())
        ]
    if tensor.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [
            (f"{path}.values()", p)
            for p in (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
        ]
    storage = tensor.untyped_storage()
    found.setdefault(id(storage), Memory(storage, str(tensor.device), storage.nbytes(), path))
    return []


def _children(obj: object, path: str) -> list[tuple[str, object]]:
    if isinstance(obj, Mapping):
        return [(f"{path}[{key!r}]", value) for key, value in list(obj.items())]
    if isinstance(obj, (list, tuple, deque, set, frozenset)):
        return [(f"{path}[{i}]", item) for i, item in enumerate(list(obj))]
    children = [(f"{path}.{k}", v) for k, v in getattr(obj, "__dict__", {}).items()]
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                children.append((f"{path}.{slot}", getattr(obj, slot)))
    return children


def bytes_by_device(found: Mapping[int, Memory]) -> dict[str, int]:
    """Total bytes of the allocations a walk found, per device."""
    totals: dict[str, int] = {}
    for memory in found.values():
        totals[memory.device] = totals.get(memory.device, 0) + memory.nbytes
    return totals


def _session_roots(session: Any) -> list[tuple[str, object]]:
    # What a SessionState reaches, through its public surface only (contract section 3).
    objects = [(f"session.get({name!r})", session.get(name)) for name in session.names()]
    return [*objects, ("session.attrs", session.attrs)]


# --- the differential machine --------------------------------------------------------------


def _key(session_id: object) -> str:
    return str(session_id or "default")  # KEY-1, KEY-2


@dataclass
class _Holder:
    """An adapter kept alive across steps, with the bespoke state and session it had."""

    key: str
    adapter: Any
    bespoke: Any
    session: Any


@dataclass(frozen=True)
class _Strategies:
    operation_names: st.SearchStrategy[frozenset[str]]
    session_ids: st.SearchStrategy[object]
    any_session_ids: st.SearchStrategy[object]


@cache
def _strategies(spec: AdapterSpec) -> _Strategies:
    # Built once per spec: validating a strategy is costly, and a machine draws every step.
    pool = spec.session_ids()
    names = sorted({op.name for op in spec.operations})
    # Forwards favour the first id, so that one session lives through many calls;
    # drops pick any id, so the favourite is not dropped as often as it is used.
    favoured = st.one_of(st.just(pool[0]), st.sampled_from(pool))
    operation_names = st.frozensets(st.sampled_from(names), min_size=1)
    return _Strategies(operation_names, favoured, st.sampled_from(pool))


@cache
def _call_lists(spec: AdapterSpec, names: frozenset[str]) -> st.SearchStrategy[list[Call]]:
    calls = st.one_of(*(op.calls() for op in spec.operations if op.name in names))
    return st.lists(calls, min_size=1, max_size=6)


operation_names = st.runner().flatmap(lambda machine: _strategies(machine.spec).operation_names)
session_ids = st.runner().flatmap(lambda machine: _strategies(machine.spec).session_ids)
any_session_ids = st.runner().flatmap(lambda machine: _strategies(machine.spec).any_session_ids)
call_lists = st.runner().flatmap(lambda machine: _call_lists(machine.spec, machine.enabled))
#: Mostly not: holding a new adapter lets go of the one that may be evicted next.
holds = st.sampled_from([False, False, True])


class AdapterMachine(RuleBasedStateMachine):
    """Bespoke states in an LRU of the manager's capacity versus adapters over the manager.

    ``apply`` builds a fresh adapter, as a pipeline does per forward, and may
    keep it; ``apply_held`` uses the kept one, whose session the manager may
    have evicted since (``touch_other_sessions`` makes sure of it);
    ``drop_session`` ends a session. With
    ``parity``, memory parity (ADAPT-8, a SHOULD) is checked after each call.
    """

    def __init__(self, subject: Any, spec: AdapterSpec, *, parity: bool = False) -> None:
        super().__init__()
        self.spec = spec
        self.parity = parity
        self.manager = subject.make_manager(max_sessions=spec.max_sessions, byte_budget=None)
        self.bespoke: OrderedDict[str, Any] = OrderedDict()  # key -> bespoke state, LRU order
        self.held: _Holder | None = None
        self.dropped: set[str] = set()  # dropped and not built again since (ADAPT-6)
        self.enabled = frozenset(op.name for op in spec.operations)

    @initialize(names=operation_names)
    def enable_operations(self, names: frozenset[str]) -> None:
        """Swarm testing: each run calls a few of the operations only, so that they
        repeat on one session (a ring that overflows, a reset after a write)."""
        self.enabled = names

    @rule(session_id=session_ids, calls=call_lists, hold=holds)
    def apply(self, session_id: object, calls: list[Call], hold: bool) -> None:
        """Forwards of one session: each call on its bespoke state and on a fresh adapter.

        After each call, a new fresh adapter must see what the last one wrote
        (ADAPT-3) and serves the next call. With ``hold``, the last adapter is
        kept alive instead, as a rollout mid-generation keeps its own.
        """
        key = _key(session_id)
        clause = "ADAPT-6" if key in self.dropped else None
        adapter, session = self._build(session_id)
        for i, call in enumerate(calls):
            when = f"after {call.describe('adapter')} on session {session_id!r}"
            self._step(adapter, session, self.bespoke[key], call, clause, when)
            clause = None
            if hold and i == len(calls) - 1:
                self.held = _Holder(key, adapter, self.bespoke[key], session)
                return
            adapter, session = self._build(session_id)
            self._compare_observations(adapter, self.bespoke[key], "ADAPT-3", f"by a fresh adapter {when}")

    @precondition(lambda self: self.held is not None)
    @rule(calls=call_lists)
    def apply_held(self, calls: list[Call]) -> None:
        """Calls on the held adapter, whose session the manager may have evicted."""
        held = self.held
        assert held is not None
        for call in calls:
            evicted = self.bespoke.get(held.key) is not held.bespoke
            status = "evicted" if evicted else "held"
            when = f"after {call.describe('adapter')} on the {status} session {held.key!r}"
            self._step(held.adapter, held.session, held.bespoke, call, "ADAPT-5" if evicted else None, when)

    @precondition(lambda self: self.held is not None)
    @rule()
    def touch_other_sessions(self) -> None:
        """A forward (a fresh adapter) for every other session: the held one is evicted."""
        assert self.held is not None
        for session_id in self.spec.session_ids():
            key = _key(session_id)
            if key != self.held.key:
                clause = "ADAPT-6" if key in self.dropped else "ADAPT-3"
                adapter, _ = self._build(session_id)
                when = f"by a fresh adapter for session {session_id!r}"
                self._compare_observations(adapter, self.bespoke[key], clause, when)

    @rule(session_id=any_session_ids)
    def drop_session(self, session_id: object) -> None:
        """End a session; the next adapter for it must behave like a fresh bespoke state."""
        key = _key(session_id)
        with calling("ADAPT-6", f"manager.drop_session({session_id!r})"):
            self.manager.drop_session(session_id)
        dropped = self.bespoke.pop(key, None)
        if dropped is not None:
            self.dropped.add(key)
            if self.held is not None and self.held.bespoke is dropped:
                self.held = None  # its session was reset under it (DROP-2): not modelled

    @invariant()
    def check_table_matches_model(self) -> None:
        """Adapters touched exactly the sessions the bespoke LRU touched (ADAPT-4)."""
        for session_id in self.spec.session_ids():
            check_equal(
                session_id in self.manager,
                _key(session_id) in self.bespoke,
                "ADAPT-4",
                f"{session_id!r} in manager",
                f"with the bespoke LRU holding {list(self.bespoke)}",
            )

    def _build(self, session_id: object) -> tuple[Any, Any]:
        """A fresh adapter (one hit or miss, ADAPT-4) and the session the manager holds for it."""
        key = _key(session_id)
        expected = (1, 0) if key in self.bespoke else (0, 1)
        before = (self.manager.hits, self.manager.misses)
        with calling("ADAPT-4", f"adapter_factory(manager, {session_id!r})"):
            adapter = self.spec.adapter_factory(self.manager, session_id)
        counted = (self.manager.hits - before[0], self.manager.misses - before[1])
        kind = "an existing" if expected == (1, 0) else "a new"
        what = f"(hits, misses) counted by adapter_factory(manager, {session_id!r})"
        check_equal(counted, expected, "ADAPT-4", what, f"for {kind} session")
        self._touch(key)
        self.dropped.discard(key)
        # One more hit on the most recent session: the LRU order does not change.
        return adapter, self.manager.get_or_create_session(session_id)

    def _touch(self, key: str) -> None:
        if key in self.bespoke:
            self.bespoke.move_to_end(key)
            return
        self.bespoke[key] = self.spec.bespoke_factory()
        while len(self.bespoke) > self.spec.max_sessions:
            self.bespoke.popitem(last=False)

    def _step(
        self, adapter: Any, session: Any, bespoke: Any, call: Call, clause: str | None, when: str
    ) -> None:
        expected = call.apply(bespoke)
        observed = call.apply(adapter)
        self._check_same(observed, expected, clause or "ADAPT-1", call.describe("adapter"), when)
        self._check_accounted(adapter, session, when)
        self._compare_observations(adapter, bespoke, clause or "ADAPT-2", when)
        if self.parity:
            self._check_parity(session, bespoke, when)

    def _compare_observations(self, adapter: Any, bespoke: Any, clause: str, when: str) -> None:
        for label, read in self.spec.observers():
            observed, expected = _read(read, adapter), _read(read, bespoke)
            self._check_same(observed, expected, clause, label.format("adapter"), when)

    def _check_same(self, observed: Any, expected: Any, clause: str, what: str, when: str) -> None:
        __tracebackhide__ = True
        found = bit_difference(observed, expected)
        if found is not None:
            shown, wanted = _Shown(_show(observed)), _Shown(_show(expected))
            check_equal(shown, wanted, clause, what, f"{when}; {found}")

    def _check_accounted(self, adapter: Any, session: Any, when: str) -> None:
        """ADAPT-7: the adapter reaches no allocation its SessionState does not reach."""
        held = reachable_memory([("adapter", adapter)], stop=(self.manager, session))
        with calling("ADAPT-7", "walking the adapter's SessionState"):
            known = reachable_memory(_session_roots(session), stop=(self.manager,))
        unseen = [
            f"{m.path} ({m.nbytes} bytes on {m.device})" for k, m in held.items() if k not in known
        ]
        check_equal(
            unseen, [], "ADAPT-7", "memory the adapter holds outside its SessionState", when
        )

    def _check_parity(self, session: Any, bespoke: Any, when: str) -> None:
        """ADAPT-8: the session holds exactly the bytes the bespoke state holds, per device."""
        observed = bytes_by_device(reachable_memory(_session_roots(session), stop=(self.manager,)))
        expected = bytes_by_device(reachable_memory([("bespoke", bespoke)]))
        check_bytes(observed, expected, "ADAPT-8", "bytes reachable from the session", when)


def _read(read: Callable[[Any], Any], state: Any) -> Any:
    try:
        return read(state)
    except Exception as error:
        return Raised(error)
