"""The OBJ machinery: ``StateObjectMachine``, one spec's object against the StateObject contract.

The machine's own model is small on purpose (is the object resident, what may be staged,
which session holds it); everything else is read back through the spec's ``held(obj)``
and priced by the suite's ``MemoryModel``, never by the object's own code. What the object
holds is compared with the spec's own plain model, when it declares one (OBJ-9,
``conformance.specs.ObjectModel``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from hypothesis.strategies import SearchStrategy

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._machine.object_accounting import check_object_bytes
from sessionstate.conformance._machine.object_mirror import ModelMirror, check_recomputable
from sessionstate.conformance.checks import (
    ClauseFailure,
    calling,
    check_bytes,
    check_equal,
    nonzero,
)
from sessionstate.conformance.specs import UNKNOWN_KEYWORD, MemoryModel, StateObjectSpec
from sessionstate.conformance.strategies import FILLS

if TYPE_CHECKING:
    from sessionstate.conformance._model.memory import Allocation, Held

__all__ = [
    "MISUSES",
    "OBJ_CLAUSES",
    "StateObjectMachine",
    "naming_spec",
    "spec_params",
]

#: Checked for every spec; OBJ-9 only for a spec with a model.
OBJ_CLAUSES = (*(f"OBJ-{n}" for n in range(1, 9)), "OBJ-10")
#: The three ways to break OBJ-7's keyword-only rule.
MISUSES = ("an unknown keyword", "a positional sizing argument", "a positional include_staged")
_SHAPES = ((0,), (2,), (3,), (2, 2), (3, 2), (4,))
_DTYPES = ("float32", "float16", "int64")
Args = tuple[Any, ...]
Kwargs = Mapping[str, Any] | None


def spec_params(specs: Sequence[StateObjectSpec]) -> list[Any]:
    """One item per spec (one ``None`` when there is none), clause marks per item.

    OBJ-9 is tagged only where a model checks it (the spec's ``model`` or the model of
    its ``contents`` kind); a spec with neither adds an OBJ-9 item skipped as *not
    checked*, so OBJ-9 is unchecked, never passed, for want of a model (the verdict is
    then incomplete unless an expectations entry skips OBJ-9).
    """
    from sessionstate.conformance._harness.applicability import CONTENTS_NOT_CHECKED

    every = pytest.mark.clause(*OBJ_CLAUSES, "OBJ-9")
    params = [] if specs else [pytest.param(None, id="none", marks=every)]
    for spec in specs:
        if spec.oracle() is not None:
            params.append(pytest.param(spec, id=spec.name, marks=every))
            continue
        reason = (
            f"{CONTENTS_NOT_CHECKED} of spec {spec.name!r}: OBJ-9 needs its model= or a "
            "contents= kind"
        )
        no_model = [pytest.mark.clause("OBJ-9"), pytest.mark.skip(reason=reason)]
        params.append(pytest.param(spec, id=spec.name, marks=pytest.mark.clause(*OBJ_CLAUSES)))
        params.append(pytest.param(spec, id=f"{spec.name}-no-model", marks=no_model))
    return params


@contextmanager
def naming_spec(spec: StateObjectSpec) -> Iterator[None]:
    """A clause failure inside names the spec it was found on: ``spec 'Ring': ...``."""
    try:
        yield
    except ClauseFailure as failure:
        raise ClauseFailure(failure.clause, f"spec {spec.name!r}: {failure}") from failure


class _Snapshot(NamedTuple):
    resident: bool
    nbytes_by_device: dict[str, int]
    held: tuple[str, ...] | None


class StateObjectMachine(RuleBasedStateMachine):
    """One spec's object against the StateObject contract, checked after every rule."""

    def __init__(self, subject: Any, spec: StateObjectSpec) -> None:
        super().__init__()
        self.subject, self.spec = subject, spec
        self.memory = MemoryModel()
        self.tensors = _tensors(self.memory, _allocations())
        self.payloads = spec.payload_strategy(self.tensors)
        self.aliases = _aliases(self)
        self.kwargs = spec.allocate_kwargs()
        self.allocated = False  # from allocate() until reset() or evict()
        self.committed = False  # something committed since allocate()
        self.raised: Exception | None = None  # what the last _call raised, if anything
        self.staged: object | None = None  # the payload of a stage() not yet discarded
        self.just_staged = False  # stage() was the last change: commit() must not refuse
        self.manager: Any = None
        self.session: Any = None
        self.attrs: list[Allocation] = []
        self.last = "factory()"
        self.obj = self._create()
        self.mirror = ModelMirror(spec.oracle(), spec.observations)  # OBJ-9; inert without a model

    # -- helpers ---------------------------------------------------------------

    def _create(self) -> Any:
        with calling("OBJ-1", f"{self.spec.name} factory()"):
            return self.spec.factory()

    def held_allocations(self, clause: str = "OBJ-2") -> list[Allocation]:
        """The allocations behind ``held(obj)``: none, and ``held`` not called, while the
        object is not expected resident (OBJ-1): an encode-once object may refuse reads
        between ``allocate()`` and its first commit, as Cosmos3's UND K/V does."""
        if not self.expects_resident:
            return []
        try:
            value = self.spec.held(self.obj)
        except Exception:
            self._check_resident()  # a held() that raises on a non-resident object: say so
            with calling(clause, f"held({self.spec.name}) {self._when()}"):
                raise
        return self.memory.allocations_in(value)

    def _bytes(self, clause: str, seen: set[Any] | None = None) -> dict[str, int]:
        with calling(clause, f"nbytes_by_device(seen) {self._when()}"):
            return dict(self.obj.nbytes_by_device(set() if seen is None else seen))

    def _snapshot(self, clause: str) -> _Snapshot:
        with calling(clause, f"resident {self._when()}"):
            resident = bool(self.obj.resident)
        labels = (
            tuple(a.label for a in self.held_allocations(clause)) if self.expects_resident else None
        )
        return _Snapshot(resident, self._bytes(clause), labels)

    def _check_unchanged(self, before: _Snapshot, clause: str) -> None:
        after = self._snapshot(clause)
        when = self._when()
        check_equal(after.resident, before.resident, clause, "resident", when)
        check_bytes(after.nbytes_by_device, before.nbytes_by_device, clause, "bytes", when)
        check_equal(after.held, before.held, clause, "allocations held", when)

    def _when(self) -> str:
        return f"after {self.last}"

    def _call(
        self, call: str, clause: str, method: str, args: Args = (), kwargs: Kwargs = None,
        refusable: bool = False,
    ) -> Any:  # fmt: skip
        """``obj.method(*args, **kwargs)``, after the same call on the spec's model.

        An exception the model raised too is OBJ-9's to judge; with
        ``refusable``, a ``RuntimeError`` is an allowed refusal, which must
        change nothing. Any other exception fails ``clause``.
        """
        self.last = call
        self.mirror.call(method, args, kwargs or {})
        before = self._snapshot(clause) if refusable else None
        error: Exception | None = None
        with calling(clause, call):
            try:
                result = getattr(self.obj, method)(*args, **(kwargs or {}))
            except Exception as raised:
                refused = before is not None and isinstance(raised, RuntimeError)
                if self.mirror.raised is None and not refused:
                    raise
                error, result = raised, None
        self.raised = error
        if error is not None:
            self.last = f"{call}, raised {type(error).__name__}"
        if before is not None and isinstance(error, RuntimeError):
            self._check_unchanged(before, clause)
        self.mirror.check_outcome(call, error)
        return result

    def _expect_error(
        self, call: str, error: type[Exception], clause: str, when: str, method: str,
        args: Args = (), kwargs: Kwargs = None,
    ) -> None:  # fmt: skip
        self.last = call
        self.mirror.call(method, args, kwargs or {})  # keeps the model in step
        try:
            getattr(self.obj, method)(*args, **(kwargs or {}))
        except error:
            return
        except Exception as other:
            raised: str | None = type(other).__name__
        else:
            raised = None
        check_equal(raised, error.__name__, clause, f"exception from {call}", when)

    def _draw_payload(self, data: Any) -> tuple[Any, str]:
        payload = data.draw(self.payloads, label="payload")
        text = self.memory.describe(payload)
        note(f"payload = {text}")
        return payload, text

    def write(self, method: str, data: Any) -> None:
        payload, text = self._draw_payload(data)
        self._call(f"{method}({text})", "OBJ-1", method, (payload,), refusable=not self.allocated)
        self.just_staged = False
        self._after_write(wrote=self.raised is None)

    def _after_write(self, wrote: bool) -> None:
        """Record a write the object took (``wrote``): once allocated it is committed.

        Before ``allocate()`` an encode-once object (``resident_from="commit"``) may take
        its first K/V and be resident from then on, as Cosmos3's UND K/V is (its adapter
        never calls ``allocate()``), or refuse it; OBJ-1 says only that it is resident from
        its first commit, so the machine follows what ``resident`` then says.
        """
        if not wrote:
            return
        if self.allocated:
            self.committed = True
        elif self.spec.resident_from == "commit":
            with calling("OBJ-1", f"resident {self._when()}"):
                resident = self.obj.resident
            self.allocated = self.committed = resident is True

    def _counts_staged(self, observed: dict[str, int]) -> bool:
        # Names the more specific clause: the bytes match held(obj) *plus* the
        # staged payload, which OBJ-3 says is never counted.
        if self.staged is None:
            return False
        staged = self.memory.allocations_in(self.staged)
        return nonzero(observed) == nonzero(
            self.memory.expected([*self.held_allocations(), *staged])
        )

    # -- rules: one per StateObject (or SessionState) method --------------------

    @initialize(data=st.data())
    def start(self, data: Any) -> None:
        # Most bugs need an allocated object holding payloads: start half the
        # runs so (and a quarter allocated and empty), leaving their steps for
        # what follows. 0, the shrink target, starts from the bare factory().
        setup = data.draw(st.integers(0, 3), label="setup (0 bare, 1 allocated, 2+ holding)")
        if setup >= 1:
            self.allocate(data)
        if setup >= 2:
            self.write("commit", data)

    @rule(data=st.data())
    def allocate(self, data: Any) -> None:
        kwargs = data.draw(self.kwargs, label="kwargs")
        self._call(f"allocate({_keywords(kwargs)})", "OBJ-1", "allocate", (), kwargs)
        self.allocated, self.committed, self.just_staged = True, False, False
        payloads = [a for a in self.held_allocations("OBJ-1") if self.memory.is_suites(a)]
        check_equal(payloads, [], "OBJ-1", "payload allocations held", self._when())

    @rule(data=st.data(), misuse=st.sampled_from(MISUSES))
    def allocate_or_view_wrongly(self, data: Any, misuse: str) -> None:
        # Keyword-only (OBJ-7): allocate() with an unknown keyword, or with its
        # first sizing argument (None when it has none) by position; view(flag).
        kwargs, method = data.draw(self.kwargs, label="kwargs"), "allocate"
        args: Args = ()
        if misuse == MISUSES[0]:
            kwargs[UNKNOWN_KEYWORD] = 1
        elif misuse == MISUSES[1]:
            args = (kwargs.pop(next(iter(kwargs))) if kwargs else None,)
        else:
            method, args, kwargs = "view", (data.draw(st.booleans(), label="flag"),), {}
        before = self._snapshot("OBJ-7")
        call = f"{method}({_keywords(kwargs, args)})"
        self._expect_error(call, TypeError, "OBJ-7", misuse, method, args, kwargs)
        self._check_unchanged(before, "OBJ-7")

    @rule(data=st.data())
    def commit(self, data: Any) -> None:
        if not data.draw(st.booleans(), label="commit() with no payload"):
            self.write("commit", data)
            return
        # commit() may refuse (RuntimeError) before allocate() or with nothing
        # staged; right after stage() it must take the staged payload (OBJ-3).
        must_take = self.allocated and self.just_staged
        clause = "OBJ-3" if must_take else "OBJ-1"
        staged = self.staged is not None
        self._call("commit()", clause, "commit", refusable=not must_take)
        # With nothing staged, commit() commits nothing, whether it refuses or not.
        self._after_write(wrote=staged and self.raised is None)
        self.just_staged = False

    @rule(data=st.data())
    def append(self, data: Any) -> None:
        self.write("append", data)

    @rule(data=st.data())
    def stage(self, data: Any) -> None:
        payload, text = self._draw_payload(data)
        before = self._snapshot("OBJ-3")
        self._call(f"stage({text})", "OBJ-3", "stage", (payload,))
        self._check_unchanged(before, "OBJ-3")
        self.staged, self.just_staged = payload, True

    @rule()
    def discard(self) -> None:
        before = self._snapshot("OBJ-3")
        self._call("discard()", "OBJ-3", "discard")
        self._check_unchanged(before, "OBJ-3")
        self.staged, self.just_staged = None, False

    @rule(include_staged=st.sampled_from([None, True, False]))
    def view(self, include_staged: bool | None) -> None:
        # None: view() with the default, which must be include_staged=True (OBJ-9).
        before = self._snapshot("OBJ-1")
        kwargs = {} if include_staged is None else {"include_staged": include_staged}
        call = f"view({_keywords(kwargs)})"
        # Only a resident object must answer (OBJ-1); before it is, view() may refuse.
        self._call(call, "OBJ-1", "view", (), kwargs, refusable=not self.expects_resident)
        self._check_unchanged(before, "OBJ-1")

    @rule()
    def reset(self) -> None:
        self._call("reset()", "OBJ-1", "reset")
        self.allocated, self.committed, self.staged, self.just_staged = False, False, None, False

    @precondition(lambda self: self.allocated)
    @rule()
    def evict(self) -> None:
        if not self.spec.evictable:
            before = self._snapshot("OBJ-6")
            when = "the spec says evictable=False"
            self._expect_error("evict()", RuntimeError, "OBJ-6", when, "evict")
            self.last = "evict() of a never-evictable object"
            self._check_unchanged(before, "OBJ-6")
            return
        held = sum(self.memory.expected(self.held_allocations()).values())
        freed = self._call("evict()", "OBJ-6", "evict")
        check_equal(freed, held, "OBJ-6", "evict()", f"with {held} bytes held")
        self.allocated, self.committed, self.staged, self.just_staged = False, False, None, False
        with calling("OBJ-6", "resident after evict()"):
            resident = self.obj.resident
        check_equal(resident, False, "OBJ-6", "resident", self._when())
        check_bytes(self._bytes("OBJ-6"), {}, "OBJ-6", "nbytes_by_device(set())", self._when())

    @rule(data=st.data())
    def put(self, data: Any) -> None:
        if self.session is None:
            call = "make_manager(max_sessions=1, byte_budget=None).get_or_create_session('obj')"
            with calling("OBJ-4", call):
                self.manager = self.subject.make_manager(max_sessions=1, byte_budget=None)
                self.session = self.manager.get_or_create_session("obj")
        aliases = data.draw(self.aliases, label="aliases")
        self.last = (
            f"session.put({self.spec.name!r}, obj); "
            f"session.attrs['aliases'] = {self.memory.describe(aliases)}"
        )
        note(self.last)
        with calling("OBJ-4", self.last):
            self.session.put(self.spec.name, self.obj)
            self.session.attrs["aliases"] = aliases
        self.attrs = self.memory.allocations_in(aliases)

    @precondition(lambda self: self.session is not None)
    @rule()
    def get_or_create(self) -> None:
        made: list[Any] = []

        def factory() -> Any:
            made.append(self.spec.factory())
            return made[-1]

        name, cls = self.spec.name, type(self.obj)
        call = self.last = f"session.get_or_create({name!r}, factory, {cls.__name__})"
        with calling("OBJ-8", call):
            got = self.session.get_or_create(name, factory, cls)
        if self.expects_resident:
            check_equal(len(made), 0, "OBJ-8", "factory() calls", "while the object is resident")
            check_equal(got is self.obj, True, "OBJ-8", f"{call} is the stored object")
            return
        check_equal(len(made), 1, "OBJ-8", "factory() calls", "once the object is not resident")
        check_equal(got is made[0], True, "OBJ-8", f"{call} is what factory() returned")
        with calling("OBJ-8", f"session.get({name!r})"):
            stored = self.session.get(name)
        check_equal(stored is got, True, "OBJ-8", f"session.get({name!r}) is the new object")
        self.obj, self.staged, self.just_staged = got, None, False
        self.allocated = self.committed = False  # factory() returns an unallocated object
        self.mirror.renew()

    def release_source(self) -> None:
        """OBJ-10 as the source goes: ``recompute_source.reset()`` (an eviction planner
        releasing what this object is rebuilt from), then ``recomputable`` must read
        false. Not a rule: the object's own state is not the machine's to check after
        its source changed under it (a handle may read through its source), so only
        OBJ-10 is checked here. Does nothing without a source, or with itself as one.
        """
        with calling("OBJ-10", f"recompute_source {self._when()}"):
            source = self.obj.recompute_source
        reset = getattr(source, "reset", None)
        if source is None or source is self.obj or not callable(reset):
            return
        self.last = f"obj.recompute_source.reset() (a {type(source).__name__})"
        note(self.last)
        with calling("OBJ-10", self.last):
            reset()
        check_recomputable(self.obj, self._when())

    # -- invariants ---------------------------------------------------------------

    @invariant()
    def check_object(self) -> None:
        # One invariant in a deliberate order (Hypothesis would run several in
        # name order, and print each after every step).
        self._check_resident()
        self._check_bytes()
        self._check_seen()
        self._check_nbytes()
        check_recomputable(self.obj, self._when())  # OBJ-10
        self.mirror.check_observations(self.obj, self._when())  # OBJ-9

    def _check_resident(self) -> None:
        with calling("OBJ-1", f"resident {self._when()}"):
            resident = self.obj.resident
        when = self._when()
        if self.spec.resident_from == "commit" and self.allocated:
            when += ", with resident_from='commit'" + (
                "" if self.committed else " and nothing committed"
            )
        check_equal(resident, self.expects_resident, "OBJ-1", "resident", when)

    @property
    def expects_resident(self) -> bool:
        """Resident from allocate() (or, for ``resident_from="commit"``, from the first commit
        after it) until reset() or evict() (OBJ-1)."""
        return self.allocated and (self.spec.resident_from == "allocate" or self.committed)

    def _check_bytes(self) -> None:
        counted = self._bytes("OBJ-2")
        expected = self.memory.expected(self.held_allocations())
        clause = "OBJ-2" if self.allocated else "OBJ-1"
        if nonzero(counted) != nonzero(expected) and self._counts_staged(counted):
            clause = "OBJ-3"
        check_object_bytes(self, counted, expected, clause, "nbytes_by_device(set())", self._when())

    def _check_seen(self) -> None:
        seen: set[Any] = set()
        self._bytes("OBJ-4", seen)
        again = self._bytes("OBJ-4", seen)
        what = "nbytes_by_device(seen) again with the same seen"
        check_bytes(again, {}, "OBJ-4", what, self._when())

    def _check_nbytes(self) -> None:
        with calling("OBJ-5", f"nbytes {self._when()}"):
            total = self.obj.nbytes
        expected = sum(self._bytes("OBJ-5").values())
        when = f"the sum of nbytes_by_device(set()) is {expected}, {self._when()}"
        check_equal(total, expected, "OBJ-5", "nbytes", when)

    @precondition(lambda self: self.session is not None)
    @invariant()
    def check_session_bytes(self) -> None:
        expected = self.memory.expected([*self.held_allocations(), *self.attrs])
        with calling("OBJ-4", f"session.nbytes_by_device() {self._when()}"):
            observed = self.session.nbytes_by_device()
        what, when = "session.nbytes_by_device()", f"{self._when()}, attrs alias the object"
        check_object_bytes(self, observed, expected, "OBJ-4", what, when, self.attrs)


@cache
def _allocations() -> SearchStrategy[Held]:
    """New allocations: every device, a few shapes (zero-size included) and dtypes, and
    contents that tell two payloads of one shape apart (OBJ-9 compares bit for bit)."""
    devices, shapes, dtypes = available_devices(), _SHAPES, _DTYPES
    return st.builds(
        allocate,
        st.sampled_from(devices),
        st.sampled_from(shapes),
        st.sampled_from(dtypes),
        fill=FILLS,
    )


# Composites are built once here: decorating per machine re-reads their source.
@st.composite
def _tensors(draw: Any, memory: MemoryModel, allocations: SearchStrategy[Held]) -> Any:
    if memory.pool and draw(st.booleans()):
        return memory.view(draw, memory.pool)
    return memory.add(draw(allocations))


@st.composite
def _aliases(draw: Any, machine: StateObjectMachine) -> list[Any]:
    """One to three values for ``attrs``: views of what the object holds, or others."""
    roots = machine.memory.roots(machine.held_allocations())
    return [
        machine.memory.view(draw, roots) if roots and draw(st.booleans()) else draw(machine.tensors)
        for _ in range(draw(st.integers(1, 3)))
    ]


def _keywords(kwargs: Mapping[str, object], args: Args = ()) -> str:
    return ", ".join([*map(repr, args), *(f"{key}={value!r}" for key, value in kwargs.items())])
