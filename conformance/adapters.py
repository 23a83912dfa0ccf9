"""Describing a model adapter for the ADAPT clauses: ``Op`` and ``AdapterSpec``.

An adapter presents a model's bespoke per-session state class over the session
manager, and upstream's acceptance bar for a port is bit-equivalence against
the bespoke path (contract section 7). Describe the state class once with an
:class:`AdapterSpec`; the ADAPT machine (``_machine/adapt.py``) then drives the bespoke state of
each session and a FRESH adapter per step (the way a pipeline builds one per
forward) with the same generated calls, and checks the ADAPT clauses.

Expected values come from the bespoke side and from the suite's own walk of
object graphs (``bitwise.reachable_memory``), never from any accounting code.
Nothing here imports torch or NumPy: ``sessionstate.conformance`` exports
``AdapterSpec`` and ``Op``, and the pytest plugin that imports the package must
stay light at load.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hypothesis import strategies as st

from sessionstate.conformance._model.bitwise import (
    Raised,
)
from sessionstate.conformance.subject import UsageError

__all__ = ["POLICIES", "AdapterSpec", "Call", "Op", "adapter_policies"]

#: The admission policies a pipeline can run its manager under: ``"evict"`` (the default,
#: ``evict_when_full=True``: a miss over capacity evicts least-recently-used sessions) and
#: ``"refuse"`` (``evict_when_full=False``, as #7302's DreamZero pipeline builds it: a miss
#: at capacity raises ``SessionAdmissionError`` and the pipeline makes room by dropping).
POLICIES = ("evict", "refuse")


class Op:
    """One thing a pipeline does to its state, and how to draw its arguments.

    * ``Op("accumulate_frames", frames)`` calls ``state.accumulate_frames(<drawn>)``;
      keyword strategies draw keyword arguments.
    * ``Op.set("language", tokens)`` writes an attribute: pipelines also write state
      directly, and an adapter's descriptors must behave like plain attributes.
    * ``Op.fn(advance, st.integers(1, 4))`` runs a plain function ``advance(state, n)``
      on both sides: the pipeline's read-modify-write statements
      (``state.current_start_frame += n``, a ``torch.cat`` growth of a cached tensor),
      shown in a shrunk program as ``advance(state, 3)``.

    With ``mutates_args=True`` the call's arguments are compared too, after the call,
    on both sides (ADAPT-1): for methods that write into what they are given
    (Cosmos3's ``load_into_transformer(transformer, is_negative)``).
    """

    def __init__(
        self,
        method_name: str,
        /,
        *arg_strategies: st.SearchStrategy[Any],
        mutates_args: bool = False,
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
        self.mutates_args = mutates_args
        self.function: Callable[..., Any] | None = None
        # Validating a strategy is costly; a machine draws from this one every step.
        self._calls: st.SearchStrategy[Call] | None = None

    @classmethod
    def set(cls, attribute: str, strategy: st.SearchStrategy[Any]) -> Op:
        """An attribute write, ``state.<attribute> = <drawn>``."""
        op = cls(attribute, strategy)
        op.is_set = True
        return op

    @classmethod
    def fn(
        cls,
        function: Callable[..., Any],
        /,
        *arg_strategies: st.SearchStrategy[Any],
        mutates_args: bool = False,
        **kwarg_strategies: st.SearchStrategy[Any],
    ) -> Op:
        """A statement: ``function(state, *drawn, **drawn)`` on each side, named by
        ``function.__name__`` (give it a name that says what the pipeline does)."""
        if not callable(function):
            raise UsageError(f"Op.fn({function!r}, ...): the first argument must be callable")
        name = getattr(function, "__name__", repr(function))
        op = cls(name, *arg_strategies, mutates_args=mutates_args, **kwarg_strategies)
        op.function = function
        return op

    def calls(self) -> st.SearchStrategy[Call]:
        """Calls of this operation with drawn arguments (one strategy, built once)."""
        if self._calls is None:
            args = st.tuples(*self.arg_strategies)
            kwargs = st.fixed_dictionaries(self.kwarg_strategies)
            # map, not builds: Hypothesis prints a built value as its constructor call.
            self._calls = st.tuples(args, kwargs).map(lambda drawn: Call(self, *drawn))
        return self._calls

    def __repr__(self) -> str:
        kind = ".set" if self.is_set else ".fn" if self.function is not None else ""
        return f"Op{kind}({self.name!r}, ...)"


@dataclass(frozen=True, eq=False)
class Call:
    """One drawn operation; its repr is the call, so printed programs read as Python."""

    op: Op
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def _head(self) -> tuple[str, str]:
        """What comes before the arguments, and the separator before the first one."""
        if self.op.is_set:
            return f"setattr({self.op.name!r}", ", "
        if self.op.function is not None:
            return f"{self.op.name}(state", ", "
        return f"{self.op.name}(", ""

    def __repr__(self) -> str:
        head, first = self._head()
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{head}{first if parts else ''}{', '.join(parts)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis' printer: arguments print as the strategies built them.
        head, first = self._head()
        printer.text(head)
        items: list[tuple[str, Any]] = [("", a) for a in self.args]
        items += [(f"{k}=", v) for k, v in self.kwargs.items()]
        for i, (prefix, value) in enumerate(items):
            printer.text(f"{', ' if i else first}{prefix}")
            printer.pretty(value)
        printer.text(")")

    def describe(self, side: str) -> str:
        """``adapter.reset(...)``, ``adapter.language = ...`` or ``advance(adapter, ...)``."""
        if self.op.function is not None:
            return f"{self.op.name}({side}, ...)"
        return f"{side}.{self.op.name}{' = ...' if self.op.is_set else '(...)'}"

    def apply(self, state: object) -> Any:
        """Perform the call on ``state``; a raised exception is returned as ``Raised``.

        Each side gets its own deep copy of the arguments, so neither can see
        (or mutate) what the other stored.
        """
        return self.apply_keeping_args(state)[0]

    def apply_keeping_args(self, state: object) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        """``apply``, and this side's copy of the arguments as the call left them."""
        args, kwargs = copy.deepcopy((self.args, self.kwargs))
        try:
            if self.op.is_set:
                setattr(state, self.op.name, args[0])
                return None, args, kwargs
            if self.op.function is not None:
                return self.op.function(state, *args, **kwargs), args, kwargs
            return getattr(state, self.op.name)(*args, **kwargs), args, kwargs
        except Exception as error:
            return Raised(error), args, kwargs


Observer = str | Callable[[Any], Any]


class AdapterFactory(Protocol):
    """What ``AdapterSpec.adapter_factory`` is: called by keyword, it builds one adapter."""

    def __call__(self, *, manager: Any, session_id: Any) -> Any: ...


@dataclass(frozen=True)
class AdapterSpec:
    """How to validate one model adapter against its bespoke state class.

    ``bespoke_factory()`` builds the model's own state for one session: the oracle
    every result and observed value of the adapter is compared with (ADAPT-1..6);
    ``adapter_factory(manager=..., session_id=...)`` builds an adapter, once per
    forward, by keyword: upstream's adapters take ``(session_id, manager)`` and can be
    passed as they are, a lambda taking either order works too; ``operations`` are the calls to generate; ``observe`` names
    attributes, or callables ``f(state) -> value`` (pure reads), compared on
    both sides after every step. ``max_sessions`` is the manager's capacity
    and the bespoke LRU's, kept small so that sessions are evicted often.

    ``policies`` names the admission policies the pipeline runs its manager under
    (``POLICIES``); each is checked in its own run. ``None`` (the default) derives
    them from the subject (``adapter_policies``): both where it declares the
    ``admission`` capability, else ``("evict",)``.
    """

    name: str
    bespoke_factory: Callable[[], Any]
    adapter_factory: AdapterFactory
    operations: Sequence[Op]
    observe: Sequence[Observer] = ()
    max_sessions: int = 2
    policies: Sequence[str] | None = None

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
        if self.policies is not None:
            policies = (self.policies,) if isinstance(self.policies, str) else self.policies
            policies = tuple(policies)
            unknown = [p for p in policies if p not in POLICIES]
            if not policies or unknown or len(set(policies)) != len(policies):
                raise UsageError(
                    f"{where}: policies must be distinct entries of {POLICIES}, "
                    f"got {self.policies!r}"
                )
            object.__setattr__(self, "policies", policies)

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
                readers.append((f"{{}}.{entry}", operator.attrgetter(entry)))
            else:
                readers.append((f"{getattr(entry, '__name__', repr(entry))}({{}})", entry))
        return readers


def adapter_policies(subject: Any, spec: AdapterSpec) -> tuple[str, ...]:
    """The admission policies ``spec``'s adapter is checked under, for ``subject``.

    ``spec.policies`` when given; else both ``POLICIES`` where the subject declares the
    ``admission`` capability (its manager can refuse, so its pipeline may run either), and
    ``("evict",)`` otherwise: a subject without a manager of its own runs on the reference
    manager's default policy unless its spec asks for ``"refuse"`` too (each policy is a
    run of its own, and CI time is shared). Asking for ``"refuse"`` of a subject whose own
    manager declares no admission control is a ``UsageError``: the suite could not build
    the manager the pipeline runs.
    """
    declared = "admission" in subject.capabilities
    if spec.policies is None:
        return POLICIES if declared else ("evict",)
    if "refuse" in spec.policies and not (declared or subject.manager_factory is None):
        raise UsageError(
            f"AdapterSpec {spec.name!r} runs the 'refuse' policy, but subject "
            f"{subject.name!r} does not declare the 'admission' capability"
        )
    return tuple(spec.policies)
