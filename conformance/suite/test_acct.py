"""ACCT-*: byte accounting and aliasing (SPEC.md, "ACCT: byte accounting and aliasing").

ACCT-1..5, 8 and 9 call ``subject.accounting`` (the subject's ``device_bytes``)
directly; ACCT-10 and ACCT-11 go through a session and a manager. Host memory
(NumPy, memory shared by NumPy and torch, borrowed and opaque storages: ACCT-6,
ACCT-7, ACCT-12) is checked in ``test_acct_host.py``. Expected bytes come from
the suite's own memory model (``conformance._model.memory``), or are written out by hand
(ACCT-9), never from an accounting implementation.
"""

from __future__ import annotations

from collections import OrderedDict, UserList, deque
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._harness.supervision import own_outcomes
from sessionstate.conformance._machine.acct import (
    BLAMABLE,
    OTHER_ITEMS,
    POINTER_BYTES,
    Case,
    Endless,
    EndsWith,
    LockProbe,
    accounting_of,
    count,
    expect_bytes,
    run_case,
    timed_walk,
    within_deadline,
)
from sessionstate.conformance._machine.composed_bytes import check_composed_bytes
from sessionstate.conformance._machine.lock import RecordingLock
from sessionstate.conformance._model.memory import (
    DTYPES,
    Held,
    definitions,
    derivations,
    expected_bytes,
)
from sessionstate.conformance.checks import (
    calling,
    check,
    check_bytes,
    check_equal,
    focused_on,
    nonzero,
    per_clause,
)
from sessionstate.conformance.strategies import (
    Nested,
    SessionContents,
    allocations,
    derived_values,
    devices,
    nested_containers,
    scalars,
    session_contents,
    values_from,
)


def _views_of(pools: st.SearchStrategy[list[Held]], key: str) -> st.SearchStrategy[list[Held]]:
    """Lists of values derived from one shared pool of allocations (built once, module level)."""
    return st.lists(values_from(st.shared(pools, key=key)), min_size=1, max_size=5)


def _single(helds: st.SearchStrategy[Held]) -> st.SearchStrategy[list[Held]]:
    return helds.map(lambda held: [held])


def _derived(held: Held, name: str) -> Held:
    (derive,) = [d for d in derivations(held) if d.__name__ == name]
    return derive(held)


_nonempty_views = values_from(_single(allocations(zero_size=False)))


@per_clause("ACCT-1", "ACCT-4")
@given(held=_nonempty_views)
@example(held=_derived(allocate("cpu", (64, 16)), ".narrow(0, 1, 1)"))
@example(held=_derived(allocate("cpu", (8, 4)), ".unsqueeze(0).expand(2, 8, 4)"))
def test_tensor_counts_its_whole_storage(subject: Any, focus: str, held: Held) -> None:
    """Any view of an allocation, alone, counts the allocation's whole storage."""
    with focused_on(focus):
        call = f"device_bytes({held!r}, set())"
        observed = count(accounting_of(subject), held.value, set(), "ACCT-1", call)
        expected = expected_bytes([held])
        clause = "ACCT-4" if set(nonzero(observed)) != set(expected) else "ACCT-1"
        check_bytes(observed, expected, clause, call, definitions([held]))


_views_of_one = _views_of(_single(allocations()), "ACCT-2")


@per_clause("ACCT-2", "ACCT-1", "ACCT-4")
@given(views=_views_of_one)
def test_views_of_one_allocation_count_once(subject: Any, focus: str, views: list[Held]) -> None:
    """Views, slices, expand, as_strided, transposes and view(dtype) of one allocation count once."""
    accounting = accounting_of(subject)
    with focused_on(focus):
        call = f"device_bytes({views!r}, set())"
        observed = count(accounting, [h.value for h in views], set(), "ACCT-2", call)
        expect_bytes(accounting, observed, expected_bytes(views), views, "ACCT-2", call)


@per_clause("ACCT-3", "ACCT-1", "ACCT-4")
@given(pool=st.lists(allocations(), min_size=2, max_size=6))
@example(pool=[allocate("meta", (0,)), allocate("meta", (4,)), allocate("meta", (2, 3))])
@example(pool=[allocate("cpu", (0,)), allocate("cpu", (0, 3)), allocate("cpu", (2,))])
def test_distinct_storages_count_separately(subject: Any, focus: str, pool: list[Held]) -> None:
    """Distinct storages count separately, meta and zero-size ones (data pointer 0) included."""
    accounting = accounting_of(subject)
    with focused_on(focus):
        call = f"device_bytes({pool!r}, set())"
        observed = count(accounting, [h.value for h in pool], set(), "ACCT-3", call)
        expect_bytes(accounting, observed, expected_bytes(pool), pool, "ACCT-3", call)


_by_device = {d: allocations(on=st.just(d), zero_size=False) for d in available_devices()}


@st.composite
def _one_per_device(draw: st.DrawFn) -> list[Held]:
    """A value on each of some distinct devices (one allocation per device)."""
    names = draw(st.lists(devices(), min_size=1, unique=True))
    return [draw(derived_values(draw(_by_device[name]))) for name in names]


@per_clause("ACCT-4", "ACCT-1", "ACCT-3")
@given(helds=_one_per_device())
def test_bytes_are_keyed_by_device(subject: Any, focus: str, helds: list[Held]) -> None:
    """Each device's bytes appear under str(tensor.device), never summed with another's."""
    accounting = accounting_of(subject)
    with focused_on(focus):
        call = f"device_bytes({helds!r}, set())"
        observed = count(accounting, [h.value for h in helds], set(), "ACCT-4", call)
        expect_bytes(accounting, observed, expected_bytes(helds), helds, "ACCT-4", call)


@pytest.mark.clause("ACCT-4")
def test_copy_to_another_device_is_another_storage(subject: Any) -> None:
    """A CPU tensor and its meta copy are two storages on two devices; so are cuda:0 and cuda:1."""
    accounting = accounting_of(subject)
    host = torch.zeros(5, dtype=torch.float32)
    call = "device_bytes([t, t.to('meta')], set()) with t = torch.zeros(5)"
    observed = count(accounting, [host, host.to("meta")], set(), "ACCT-4", call)
    check_bytes(observed, {"cpu": 20, "meta": 20}, "ACCT-4", call)
    if {"cuda:0", "cuda:1"} <= set(available_devices()):
        pair = [allocate("cuda:0", (3, 2)), allocate("cuda:1", (3, 2))]
        call = f"device_bytes({pair!r}, set())"
        observed = count(accounting, [h.value for h in pair], set(), "ACCT-4", call)
        check_bytes(observed, {"cuda:0": 24, "cuda:1": 24}, "ACCT-4", call, definitions(pair))


@pytest.mark.cuda
@pytest.mark.clause("ACCT-4")
def test_real_cuda_copies_count_on_their_device(subject: Any) -> None:
    """On a real GPU, a host tensor, its cuda:0 copy and views of it count per device."""
    if not torch.cuda.is_available():
        own_outcomes.skip("torch.cuda.is_available() is False: no CUDA device is visible")
    accounting = accounting_of(subject)
    host = torch.zeros(4, 8, dtype=torch.float32)
    gpu = host.to("cuda:0")
    values = [host, gpu, gpu.t(), gpu[1:], torch.empty(0, device="cuda:0"), host.narrow(0, 1, 1)]
    call = "device_bytes([t, g, g.t(), g[1:], torch.empty(0, device='cuda:0'), t.narrow(0, 1, 1)], set())"
    observed = count(accounting, values, set(), "ACCT-4", call)
    check_bytes(
        observed,
        {"cpu": 128, "cuda:0": 128},
        "ACCT-4",
        call,
        "t = torch.zeros(4, 8); g = t.to('cuda:0')",
    )


_pools_any_device = st.lists(allocations(), min_size=1, max_size=3)
_two_calls = st.tuples(
    _views_of(_pools_any_device, "ACCT-5"), _views_of(_pools_any_device, "ACCT-5")
)


@per_clause("ACCT-5", *BLAMABLE)
@given(calls=_two_calls)
def test_shared_seen_counts_each_storage_once_across_calls(
    subject: Any, focus: str, calls: tuple[list[Held], list[Held]]
) -> None:
    """A second call with the same seen skips what the first counted and returns a new dict."""
    accounting = accounting_of(subject)
    with focused_on(focus):
        first, second = calls
        seen: set[Any] = set()
        counted: set[str] = set()
        call1, call2 = f"device_bytes({first!r}, seen)", f"device_bytes({second!r}, seen)"
        result1 = count(accounting, [h.value for h in first], seen, "ACCT-5", call1)
        snapshot = dict(result1)
        expect_bytes(accounting, result1, expected_bytes(first, counted), first, "ACCT-5", call1)
        result2 = count(accounting, [h.value for h in second], seen, "ACCT-5", call2)
        expect_bytes(
            accounting,
            result2,
            expected_bytes(second, counted),
            second,
            "ACCT-5",
            f"{call2} after {call1}",
            first + second,
        )
        check(result2 is not result1, "ACCT-5", f"{call2} returned the dict {call1} returned")
        check_bytes(result1, snapshot, "ACCT-5", "first result", f"after {call2}")
        again = f"device_bytes({first + second!r}, seen)"
        result3 = count(accounting, [h.value for h in first + second], seen, "ACCT-5", again)
        check_bytes(result3, {}, "ACCT-5", again, f"after {call1}; {call2}")


# Roots only, on cpu, of ordinary dtypes: a failure here is about walking, not aliasing,
# devices or sizes (a dtype counted wrong alone is ACCT-1's, test_acct_values.py).
_cpu_common = allocations(on=st.just("cpu"), zero_size=False, dtypes=DTYPES)
_cpu_roots = st.shared(st.lists(_cpu_common, min_size=1, max_size=3), key="ACCT-8")
_nested_roots = nested_containers(st.one_of(values_from(_cpu_roots, max_steps=0), scalars()))


def _walk_examples() -> list[Nested]:
    """Hand-built values for the rules most walkers get wrong (counted or not, ACCT-8)."""
    held = allocate("cpu", (4,))
    t, name = held.value, held.expr
    return [
        Nested([{t}], [], f"[{{{name}}}]", [held]),  # a set is an "other object"
        Nested(dict.fromkeys([t]), [], f"dict.fromkeys([{name}])", [held]),  # keys are ignored
        Nested((SimpleNamespace(x=t),), [], f"(SimpleNamespace(x={name}),)", [held]),
        Nested(
            ["ab", b"c", bytearray(b"d"), None, 1.5, True],
            [],
            "['ab', b'c', bytearray(b'd'), None, 1.5, True]",
        ),
        Nested(
            UserList([OrderedDict(k=deque([t]))]),
            [held],
            f"UserList([OrderedDict(k=deque([{name}]))])",
            [held],
        ),
    ]


def _with_walk_examples(test: Any) -> Any:
    """``test`` with an ``@example`` for each of ``_walk_examples()``."""
    for case in _walk_examples():
        test = example(value=case)(test)
    return test


@pytest.mark.clause("ACCT-8")
@_with_walk_examples
@given(value=_nested_roots)
def test_containers_are_walked_and_other_objects_count_nothing(subject: Any, value: Nested) -> None:
    """Mapping values and sequence items are walked to any depth; keys, sets, str and
    other objects are not."""
    accounting = accounting_of(subject)
    call = f"device_bytes({value!r}, set())"
    observed = count(accounting, value.value, set(), "ACCT-8", call)
    check_bytes(
        observed, expected_bytes(value.counted), "ACCT-8", call, definitions(value.contained)
    )


@pytest.mark.clause("ACCT-8")
def test_deep_nesting_is_walked(subject: Any) -> None:
    """A tensor 100 containers deep counts."""
    accounting = accounting_of(subject)
    value: object = torch.zeros(3, dtype=torch.int64)
    for depth in range(100):
        value = [value] if depth % 3 == 0 else {"k": value} if depth % 3 == 1 else (value,)
    call = "device_bytes([{'k': ([...],)}] nested 100 deep around torch.zeros(3, dtype=torch.int64), set())"
    check_bytes(count(accounting, value, set(), "ACCT-8", call), {"cpu": 24}, "ACCT-8", call)


_V = "v = torch.tensor([1.0, 2.0, 3.0]); "  # 12 bytes; int64 indices are 8 bytes an entry
_COO = _V + "i = torch.tensor([[0, 1, 2], [1, 2, 0]]); s = torch.sparse_coo_tensor(i, v, (3, 4))"
_CSR = _V + "crow = torch.tensor([0, 1, 2, 3]); col = torch.tensor([1, 2, 0]); "
_CSR += "s = torch.sparse_csr_tensor(crow, col, v, (3, 4))"
_CSC = _V + "ccol = torch.tensor([0, 1, 2, 3, 3]); row = torch.tensor([2, 0, 1]); "
_CSC += "s = torch.sparse_csc_tensor(ccol, row, v, (3, 4))"
_T5 = "t = torch.zeros(5, dtype=torch.float32); "  # 20 bytes
# A jagged nested tensor of rows of 2 and 3 floats (20 bytes of values, 24 of int64 offsets),
# built from its parts: the same tensor as nested_tensor([zeros(2), zeros(3)],
# layout=torch.jagged), whose first call costs twice as much of torch's lazy imports.
_NJT = "n = torch.nested.nested_tensor_from_jagged(torch.zeros(5), torch.tensor([0, 2, 5]))"
SPARSE_CASES = [
    Case("sparse-coo", _COO, ("s",), ({"cpu": 60},)),
    Case("sparse-csr", _CSR, ("s",), ({"cpu": 68},)),
    Case("sparse-csc", _CSC, ("{'k': [s]}",), ({"cpu": 76},)),
    # 2x2 blocks of float32 (3 blocks: 48 bytes) and 3 + 3 int64 indices (48 bytes).
    Case(
        "sparse-bsr",
        "crow = torch.tensor([0, 2, 3]); col = torch.tensor([0, 1, 1]); "
        "v = torch.zeros(3, 2, 2); s = torch.sparse_bsr_tensor(crow, col, v, (4, 4))",
        ("[s, v]",),
        ({"cpu": 96},),
    ),
    # Nested tensors count the tensors they are built from, as sparse ones do. Jagged:
    # values (5 floats, 20 bytes) and offsets (3 int64, 24 bytes); its own
    # untyped_storage() is a 20-byte placeholder with no address, not values()'s.
    Case("jagged-nested", _NJT, ("[n, {'again': n}]",), ({"cpu": 44},)),
    Case("jagged-and-its-parts", _NJT, ("[n, n.values(), n.offsets()]",), ({"cpu": 44},)),
    Case("jagged-parts-first", _NJT, ("n.values()", "n"), ({"cpu": 20}, {"cpu": 24})),
    # Strided nested: its buffer (20 bytes; unbind() views it) and three 2x1 int64
    # metadata tensors (sizes, strides, offsets: 16 bytes each, host memory).
    Case(
        "strided-nested",
        "m = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])",
        ("[m, m.unbind()]",),
        ({"cpu": 68},),
    ),
]
CYCLE_CASES = [
    Case("self-list", _T5 + "a = [t]; a.append(a)", ("a",), ({"cpu": 20},)),
    Case("self-dict", _T5 + "d = {'t': t}; d['self'] = d", ("d",), ({"cpu": 20},)),
    Case("self-deque", _T5 + "q = deque([t]); q.append(q)", ("q",), ({"cpu": 20},)),
    Case(
        "mutual",
        _T5 + "a = [t]; b = {'a': a, 't': t}; a.append(b)",
        ("[b, a]",),
        ({"cpu": 20},),
    ),
    Case("through-tuple", _T5 + "a = [t]; a.append((a, t))", ("a",), ({"cpu": 20},)),
    Case("shared-not-cyclic", _T5 + "s = [t]; big = [s] * 50", ("[big, big]",), ({"cpu": 20},)),
]


@pytest.mark.clause("ACCT-9")
@pytest.mark.parametrize("case", SPARSE_CASES, ids=lambda c: c.id)
def test_sparse_tensors_count_their_components(subject: Any, case: Case) -> None:
    """Sparse and nested tensors count the tensors they are built from (indices,
    offsets, metadata and values), each once, instead of raising."""
    run_case(accounting_of(subject), case, "ACCT-9")


@pytest.mark.clause("ACCT-9")
@pytest.mark.parametrize("case", CYCLE_CASES, ids=lambda c: c.id)
def test_self_referencing_containers_terminate(subject: Any, case: Case) -> None:
    """A container that holds itself terminates and counts what it holds, once.

    Both are ACCT-9's: a walk that never ends cannot be judged on what it counts, so
    counting in cycles is not left to ACCT-8, whose own tests walk acyclic containers.
    """
    run_case(accounting_of(subject), case, "ACCT-9")


# MUST-level values only: torch on every device, NumPy owners and their views;
# shared, so that buffers, attrs and sessions of one example alias each other.
_session_pool = st.shared(
    st.lists(st.one_of(allocations(), allocations(numpy=True)), min_size=1, max_size=3),
    key="ACCT-10/11",
)
_contents = session_contents(values_from(_session_pool))


def _fill(subject: Any, session: Any, contents: SessionContents, clause: str) -> None:
    """Give ``session`` the buffers (subject buffers, ``put``) and attrs of ``contents``."""
    for i, items in enumerate(contents.buffers):
        with calling(clause, f"session.put('buffer{i}', make_buffer() holding {items!r})"):
            buffer = subject.make_buffer()
            for held in items:
                buffer.append(held.value)
            session.put(f"buffer{i}", buffer)
    for name, nested in contents.attrs.items():
        session.attrs[name] = nested.value


@pytest.mark.clause("ACCT-10")
@given(contents=_contents)
def test_session_counts_objects_and_attrs_with_one_seen(
    subject: Any, contents: SessionContents
) -> None:
    """A session counts its objects and attrs once each (aliases included); nbytes is the sum."""
    with calling("ACCT-10", "make_manager(max_sessions=4).get_or_create_session('acct')"):
        session = subject.make_manager(max_sessions=4).get_or_create_session("acct")
    _fill(subject, session, contents, "ACCT-10")
    when = definitions(contents.contained())
    with calling("ACCT-10", "session.nbytes_by_device()"):
        observed = session.nbytes_by_device()
    what = "session.nbytes_by_device()"
    check_composed_bytes(subject, observed, contents.counted(), "ACCT-10", what, when)
    with calling("ACCT-10", "session.nbytes"):
        nbytes = session.nbytes
    check_equal(nbytes, sum(observed.values()), "ACCT-10", "session.nbytes", when)
    # The caller's seen: filled by the first call, so the second adds nothing.
    seen: set[Any] = set()
    for expect, call in (
        (observed, "session.nbytes_by_device(seen)"),
        ({}, "session.nbytes_by_device(seen) again"),
    ):
        with calling("ACCT-10", call):
            check_bytes(session.nbytes_by_device(seen), expect, "ACCT-10", call, when)


@pytest.mark.clause("ACCT-10")
@pytest.mark.parametrize("device", available_devices())
def test_attrs_count_with_the_objects_seen(subject: Any, device: str) -> None:
    """The basic statement in every run, not only when drawn: an attribute aliasing a
    buffer's tensor counts once, and an attribute of its own counts too."""
    shared, own = allocate(device, (2, 3)), allocate(device, (4,), fill=1)
    view = derivations(shared)[0](shared)
    contents = SessionContents([[shared]], {"vae_cache": Nested(view.value, [view], view.expr),
                                            "prompt_embeds": Nested([own.value], [own], f"[{own!r}]")})  # fmt: skip
    with calling("ACCT-10", "make_manager(max_sessions=4).get_or_create_session('acct')"):
        session = subject.make_manager(max_sessions=4).get_or_create_session("acct")
    _fill(subject, session, contents, "ACCT-10")
    when = f"a buffer holding {shared!r}, attrs {contents.attrs!r}"
    with calling("ACCT-10", "session.nbytes_by_device()"):
        observed = session.nbytes_by_device()
    what = "session.nbytes_by_device()"
    check_composed_bytes(subject, observed, [shared, view, own], "ACCT-10", what, when)
    with calling("ACCT-10", "session.nbytes"):
        check_equal(session.nbytes, sum(observed.values()), "ACCT-10", "session.nbytes", when)


@pytest.mark.clause("ACCT-11")
@given(sessions=st.lists(_contents, min_size=1, max_size=6), data=st.data())
def test_manager_counts_sessions_in_the_table_once(
    subject: Any, sessions: list[SessionContents], data: st.DataObject
) -> None:
    """Storages shared by sessions count once; evicted and dropped sessions do not count."""
    drops = data.draw(st.sets(st.integers(0, len(sessions) - 1)), label="drops")
    with calling("ACCT-11", "make_manager(max_sessions=4)"):
        manager = subject.make_manager(max_sessions=4)
        for i, contents in enumerate(sessions):
            _fill(subject, manager.get_or_create_session(f"s{i}"), contents, "ACCT-11")
        for i in sorted(drops):
            manager.drop_session(f"s{i}")
        live = [i for i in range(len(sessions)) if f"s{i}" in manager]
        observed = manager.nbytes_by_device()
    held = [h for i in live for h in sessions[i].counted()]
    defined = definitions(h for c in sessions for h in c.contained())
    when = f"sessions {[f's{i}' for i in live]} in the table; {defined}"
    what = "manager.nbytes_by_device()"
    check_composed_bytes(subject, observed, held, "ACCT-11", what, when)


@pytest.mark.clause("ACCT-11")
@pytest.mark.parametrize("device", available_devices())
def test_storage_shared_by_two_sessions_counts_once(subject: Any, device: str) -> None:
    """The plainest sharing, in every run rather than when drawn: one allocation, held as an
    attribute by one live session and as a view in a buffer of another, counts once."""
    held = allocate(device, (2, 3))
    view = derivations(held)[0](held)
    with calling("ACCT-11", "make_manager(max_sessions=4)"):
        manager = subject.make_manager(max_sessions=4)
        manager.get_or_create_session("a").attrs["cache"] = held.value
        _fill(subject, manager.get_or_create_session("b"), SessionContents([[view]], {}), "ACCT-11")
        observed = manager.nbytes_by_device()
    when = f"sessions 'a' (attrs['cache'] = {held!r}) and 'b' (a buffer holding {view!r})"
    what = "manager.nbytes_by_device()"
    check_composed_bytes(subject, observed, [held, view], "ACCT-11", what, when)


@pytest.mark.clause("ACCT-11", "STATS-2", "STATS-3")
@pytest.mark.parametrize("device", available_devices())
def test_evicted_and_dropped_sessions_do_not_count(subject: Any, device: str) -> None:
    """In every run: sessions that hold bytes leave the count when evicted (a holder keeps
    them alive) or dropped; a storage two table sessions share counts once, in
    ``nbytes_by_device()`` and in ``stats()``, whose ``total_nbytes`` is their sum."""
    a, b, c = (allocate(device, (2, 3), fill=n) for n in range(3))
    c_view = derivations(c)[0](c)
    with calling("ACCT-11", "make_manager(max_sessions=2)"):
        manager = subject.make_manager(max_sessions=2)
        holders = [manager.get_or_create_session(s) for s in ("a", "b", "c", "d")]
        holders[0].attrs["cache"] = a.value  # 'a': evicted by 'c', still held
        holders[1].attrs["cache"] = b.value  # 'b': evicted by 'd'
        _fill(subject, holders[2], SessionContents([[c]], {}), "ACCT-11")
        holders[3].attrs["shared"] = c_view.value  # 'd' shares c with 'c'
    program = (
        f"max_sessions=2; sessions 'a' (attrs {a!r}), 'b' (attrs {b!r}), 'c' (a buffer "
        f"holding {c!r}), 'd' (attrs {c_view!r}): 'a' and 'b' evicted, still held"
    )
    steps = [(None, [c, c_view]), ("c", [c_view]), ("d", [])]
    for dropped, held in steps:
        if dropped is not None:
            with calling("ACCT-11", f"drop_session({dropped!r})"):
                manager.drop_session(dropped)
            program += f"; drop_session({dropped!r})"
        with calling("ACCT-11", "manager.nbytes_by_device()"):
            observed = dict(manager.nbytes_by_device())
        what = "nbytes_by_device()"
        check_composed_bytes(subject, observed, held, "ACCT-11", what, program)
        with calling("STATS-2", "manager.stats()"):
            stats = manager.stats()
        per_device = {k.removeprefix("nbytes:"): v for k, v in stats.items()
                      if isinstance(k, str) and k.startswith("nbytes:")}  # fmt: skip
        total = sum(per_device.values())
        check_equal(stats.get("total_nbytes"), total, "STATS-2", "stats()['total_nbytes']",
                    f"the sum of its nbytes:<device> keys, {program}")  # fmt: skip
        check_bytes(per_device, observed, "STATS-3", "stats() nbytes", f"beside {what}, {program}")


# --- Hostile values: depth, containers with code of their own, buffers (ACCT-13..16) ---

_T4 = "t = torch.zeros(4, dtype=torch.float32); "  # 16 bytes
_U = "u = torch.zeros(2, dtype=torch.int64); "  # 16 bytes
BUILT_IN_CASES = [
    Case("list-subclass", _T4 + "v = ListOwnIter([t, [t]])", ("v",), ({"cpu": 16},)),
    Case("tuple-subclass", _T4 + "v = TupleOwnIter((t,))", ("[v, v]",), ({"cpu": 16},)),
    Case("dict-subclass", _T4 + "v = DictOwnValues(k=t)", ("{'a': v}",), ({"cpu": 16},)),
    Case("deque-subclass", _T4 + "v = DequeOwnIter([t])", ("(v,)",), ({"cpu": 16},)),
]
OTHER_CONTAINER_CASES = [
    Case("endless-sequence", _T4 + "e = Endless(t)", ("[e]",), ({"cpu": 16},)),
    Case("endless-beside", _T4 + _U + "e = Endless(t)", ("[e, u]", "u"), ({"cpu": 32}, {})),
    Case("endless-siblings", _T4 + _U, ("[Endless(t), Endless(u)]",), ({"cpu": 32},)),
    Case("endless-of-endless", _T4, ("Endless(Endless(t))",), ({"cpu": 16},)),
    Case("huge-range", _T4, ("[range(10**12), t]",), ({"cpu": 16},)),
    Case("raising-mapping", _T4 + "m = RaisingMapping(k=t)", ("[m, t]",), ({"cpu": 16},)),
    Case("raising-len", _T4 + "m = RaisingLen(k=t)", ("{'m': m}",), ({"cpu": 16},)),
    Case(
        "raising-item",
        _T4 + _U + "s = RaisingAt(t, u)",
        ("s", "[t, u]"),
        ({"cpu": 32}, {}),
    ),
]
_A = "a = array.array('d', bytes(8 * 1024)); "  # 8192 bytes
BUFFER_CASES = [
    Case("array-array", _A, ("a",), ({"cpu": 8192},)),
    Case("array-views", _A, ("[memoryview(a), a, memoryview(a)[::2]]",), ({"cpu": 8192},)),
    Case("array-numpy-alias", _A, ("np.frombuffer(a)", "a"), ({"cpu": 8192}, {})),
    Case("mmap", "m = anonymous_mmap(4096)", ("{'m': m}",), ({"cpu": 4096},)),
    # A buffer with no single start address (strided) counts its nbytes, once per exporter.
    Case(
        "strided-exporter",
        _A + "pb = PickleBuffer(memoryview(a)[::2])",
        ("[pb, pb]",),
        ({"cpu": 4096},),
    ),
    # A closed mmap exports nothing (memoryview() raises ValueError): it counts nothing,
    # and accounting does not raise (ACCT-9).
    Case("closed-mmap", "m = anonymous_mmap(4096); m.close()", ("{'m': m}",), ({},)),
    # A released memoryview holds nothing alive (its .obj raises ValueError).
    Case("released-memoryview", _A + "v = memoryview(a); v.release()", ("v",), ({},)),
    Case("bytes-stay-values", "", ("[b'xy', bytearray(4), memoryview(b'xyz')]",), ({},)),
]


def _object_cases() -> list[Case]:
    p = POINTER_BYTES
    two = _T4 + _U + "o = object_array(t, u)"
    return [
        Case("object-array", two, ("o",), ({"cpu": 32 + 2 * p},)),
        Case("object-array-view", two, ("[o[1:], t]",), ({"cpu": 32 + 2 * p},)),
        Case(
            "object-array-nested",
            _T4 + "o = object_array([t], {'k': t})",
            ("o",),
            ({"cpu": 16 + 2 * p},),
        ),
        Case(
            "object-array-of-itself",
            _T4 + "o = object_array(t, None); o[1] = o",
            ("o",),
            ({"cpu": 16 + 2 * p},),
        ),
    ]


@pytest.mark.clause("ACCT-13")
def test_nesting_depth_has_no_limit(subject: Any) -> None:
    """A tensor 100,000 containers deep (lists, dicts and tuples in turn) counts."""
    accounting = accounting_of(subject)
    value: object = torch.zeros(3, dtype=torch.int64)
    for depth in range(100_000):
        value = [value] if depth % 3 == 0 else {"k": value} if depth % 3 == 1 else (value,)
    call = "device_bytes([{'k': ([...],)}] nested 100,000 deep around torch.zeros(3, dtype=torch.int64), set())"
    observed = within_deadline(accounting, value, set(), "ACCT-13", call, "100,000 levels")
    check_bytes(observed, {"cpu": 24}, "ACCT-13", call)


@pytest.mark.clause("ACCT-13")
@pytest.mark.parametrize("case", BUILT_IN_CASES, ids=lambda c: c.id)
def test_built_in_containers_run_no_code_of_their_own(subject: Any, case: Case) -> None:
    """Subclasses of dict, list, tuple and deque are read through the built-in iteration:
    their own __iter__ / values(), which raise here, are never called."""
    run_case(accounting_of(subject), case, "ACCT-13")


@pytest.mark.clause("ACCT-14")
@pytest.mark.parametrize("case", OTHER_CONTAINER_CASES, ids=lambda c: c.id)
def test_other_containers_are_bounded_and_never_raise(subject: Any, case: Case) -> None:
    """An endless Sequence and range(10**12) return; a Mapping or Sequence whose own code
    raises ends its walk, and what it gave still counts."""
    run_case(accounting_of(subject), case, "ACCT-14")


@pytest.mark.clause("ACCT-14")
def test_other_containers_yield_at_most_the_bound(subject: Any) -> None:
    """At most 65,536 items are taken from each container with code of its own."""
    accounting = accounting_of(subject)
    t = torch.zeros(4)
    endless = [Endless(t), Endless(t)]
    call = "device_bytes([Endless(t), Endless(t)], set()) with t = torch.zeros(4)"
    observed = within_deadline(accounting, endless, set(), "ACCT-14", call, "two endless")
    check_bytes(observed, {"cpu": 16}, "ACCT-14", call)
    served = max(e.served for e in endless)
    # One more read is allowed: the one that finds the end of a finite Sequence.
    check(
        served <= OTHER_ITEMS + 1,
        "ACCT-14",
        f"{call} read {served} items of one Endless, more than {OTHER_ITEMS}",
    )


@pytest.mark.clause("ACCT-14")
def test_the_last_item_within_the_bound_per_container_counts(subject: Any) -> None:
    """Every item within the bound counts: a tensor as a Sequence's 65,536th item, the last
    one taken, counts its bytes (a walk that stops one short misses it). A walk that took
    ACCT-17's budget or more may have been ended by it: not checked, then."""
    accounting = accounting_of(subject)
    t = torch.zeros(1)
    call = "device_bytes([EndsWith(t, 65_536)], set()) with t = torch.zeros(1) its last item"
    value = [EndsWith(t, OTHER_ITEMS)]
    observed = timed_walk(accounting, value, set(), {"cpu": 4}, "ACCT-14", call, "the last within")
    check_bytes(observed, {"cpu": 4}, "ACCT-14", call)


@pytest.mark.clause("ACCT-14")
def test_an_item_past_the_bound_per_container_counts_nothing(subject: Any) -> None:
    """A Sequence yields at most its first 65,536 items: a tensor as its 65,537th counts
    nothing (one more read is allowed, to find the end, but not that it counts)."""
    accounting = accounting_of(subject)
    t = torch.zeros(1)
    call = "device_bytes([EndsWith(t, 65_537)], set()) with t = torch.zeros(1) its last item"
    value = [EndsWith(t, OTHER_ITEMS + 1)]
    observed = within_deadline(accounting, value, set(), "ACCT-14", call, "one past the bound")
    check_bytes(observed, {}, "ACCT-14", call)


@pytest.mark.clause("ACCT-15")
@pytest.mark.parametrize("case", BUFFER_CASES + _object_cases(), ids=lambda c: c.id)
def test_buffers_and_object_arrays_count(subject: Any, case: Case) -> None:
    """array.array and mmap count their buffer once, through any memoryview of it too;
    bytes stay values; a NumPy object array counts its pointers and its elements."""
    run_case(accounting_of(subject), case, "ACCT-15")


def _probed_call(subject: Any, method: str) -> list[bool]:
    """Whether the lock was held each time a probe Mapping in a session ran, during
    ``manager.<method>()`` (its bytes are checked too)."""
    made: list[RecordingLock] = []

    def lock_factory() -> RecordingLock:
        made.append(RecordingLock(reentry="allow"))
        return made[-1]

    with calling("ACCT-16", "make_manager(max_sessions=4, lock_factory=RecordingLock)"):
        manager = subject.make_manager(max_sessions=4, lock_factory=lock_factory)
    probe = LockProbe(lambda: any(lock.held for lock in made), k=torch.zeros(4))
    with calling("ACCT-16", "get_or_create_session('probed').attrs['probe'] = ..."):
        manager.get_or_create_session("probed").attrs["probe"] = probe
    call = f"manager.{method}()"
    with calling("ACCT-16", call):
        result = getattr(manager, method)()
    by_device = result if method == "nbytes_by_device" else {
        k.removeprefix("nbytes:"): v for k, v in result.items() if k.startswith("nbytes:")}  # fmt: skip
    check_bytes(
        by_device, {"cpu": 16}, "ACCT-16", call, "attrs['probe'] = LockProbe(k=torch.zeros(4))"
    )
    return probe.held


@pytest.mark.clause("ACCT-16")
@pytest.mark.parametrize("method", ["nbytes_by_device", "stats"])
def test_manager_counts_bytes_outside_its_lock(subject: Any, method: str) -> None:
    """While a session's values are walked, the manager's lock is not held."""
    held = _probed_call(subject, method)
    call = f"manager.{method}()"
    check(held, "ACCT-16", f"{call} never read the Mapping in attrs (ACCT-8 walks its values)")
    check(not any(held), "ACCT-16",
          f"{call} walked a session's attrs with the manager's lock held "
          f"({sum(held)} of {len(held)} reads)")  # fmt: skip
