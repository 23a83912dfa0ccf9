"""Hypothesis strategies over the suite's memory model (``conformance._model.memory``).

Every value drawn here knows the allocations it pins, so a test computes its
expected bytes with :func:`~sessionstate.conformance._model.memory.expected_bytes`
instead of asking any accounting code. Reprs read as Python: an allocation is
its label (``buf3``), a derived value the chain of views over it
(``buf3.t().unsqueeze(0)``), a container the literal that builds it
(``[buf3, {'k': (buf3[1:], None)}, deque([b'x'])]``); ``definitions()`` spells
the labels out for a failure message.
"""

from __future__ import annotations

import unicodedata
from collections import OrderedDict, UserList, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import torch
from hypothesis import strategies as st

from sessionstate.conformance._harness.devices import allocate, available_devices
from sessionstate.conformance._model.dtypes import dtypes_on, families_on
from sessionstate.conformance._model.memory import NUMPY_DTYPES, Held, aliases, derivations
from sessionstate.conformance._model.records import (
    AttrsRecord,
    DataRecord,
    ModuleHolder,
    NamedPair,
    SlotsRecord,
)

__all__ = [
    "ATTR_NAMES",
    "CONTAINER_KINDS",
    "TRICKY_SESSION_IDS",
    "VALUE_KINDS",
    "FoldedId",
    "Nested",
    "SessionContents",
    "ShownId",
    "allocations",
    "container_kinds",
    "derived_values",
    "devices",
    "dtype_names",
    "id_texts",
    "lookalike_ids",
    "nested_containers",
    "scalars",
    "session_contents",
    "session_ids",
    "shapes",
    "value_kinds",
    "values_from",
]


#: Session ids whose ``repr()`` is not ``'<id>'``: a single quote (repr switches to double
#: quotes), a backslash with control characters (escaped in a repr), and non-ASCII text
#: (kept as is). Upstream words a refusal ``cannot admit session {key!r}`` (ADMIT-1), and
#: an id a pipeline passes may hold any of these; every id pool of the suite ends with them.
TRICKY_SESSION_IDS: tuple[str, ...] = ("it's", "C:\\tmp\tnew\nline", "caf\u00e9 \u4e16\u754c")


def session_ids(*plain: object) -> st.SearchStrategy[object]:
    """One of ``plain`` (first, so programs shrink to them), one of ``TRICKY_SESSION_IDS``,
    or any id ``lookalike_ids`` draws."""
    return st.one_of(
        st.sampled_from((*plain, *TRICKY_SESSION_IDS)),
        lookalike_ids().map(lambda ids: ids[0]),
    )


class ShownId(str):
    """A ``str`` whose ``str()`` is other text: its key is that text (KEY-2), not its value."""

    shown: str

    def __new__(cls, value: str, shown: str) -> ShownId:
        made = super().__new__(cls, value)
        made.shown = shown
        return made

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"ShownId({str.__repr__(self)}, shown={self.shown!r})"


class FoldedId(str):
    """A ``str`` equal to (and hashing as) every text that case-folds alike, as a
    case-insensitive id type of a web framework is: its key is still ``str()`` of it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.casefold() == other.casefold()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.casefold())

    def __repr__(self) -> str:
        return f"FoldedId({str.__repr__(self)})"


#: Kinds of characters of id text: letters that compose or fold (Latin, Greek, Cyrillic
#: and their compatibility forms), any letter or number, combining marks, spaces and
#: controls, quotes and backslashes. A kind is drawn first, then a character of it:
#: Hypothesis merges a union of character strategies into one, where the three quoting
#: characters would be drawn once in hundreds.
_ID_CHARS = (
    st.characters(categories=("Ll", "Lu", "Lt"), max_codepoint=0x24F),
    st.characters(categories=("L", "N")),
    st.characters(categories=["Mn"], max_codepoint=0x36F),
    st.characters(categories=("Zs", "Cc")),
    st.sampled_from("'\"\\"),
)


@st.composite
def _id_char(draw: st.DrawFn) -> str:
    return draw(_ID_CHARS[draw(st.integers(0, len(_ID_CHARS) - 1))])


def id_texts() -> st.SearchStrategy[str]:
    """Non-empty id text, each character of a drawn kind (``_ID_CHARS``)."""
    return st.lists(_id_char(), min_size=1, max_size=6).map("".join)


_FORMS: tuple[Callable[[str], str], ...] = (
    lambda t: unicodedata.normalize("NFC", t),
    lambda t: unicodedata.normalize("NFD", t),
    lambda t: unicodedata.normalize("NFKC", t),
    lambda t: unicodedata.normalize("NFKD", t),
    str.upper,
    str.lower,
    str.casefold,
    str.swapcase,
    str.strip,
    lambda t: f" {t}",
    lambda t: f"{t}\u00a0",
    lambda t: "\t".join(t.split()) or f"{t}\t",
)


@st.composite
def _text_variants(draw: st.DrawFn) -> list[object]:
    """Ids whose text differs invisibly: normal forms, case, whitespace, ``str`` subclasses."""
    text = draw(id_texts())
    ids: list[object] = [text]
    for _ in range(draw(st.integers(1, 3))):
        form = _FORMS[draw(st.integers(0, len(_FORMS) - 1))](text)
        kind = draw(st.integers(0, 3))
        if kind == 1:
            ids.append(FoldedId(form))
        elif kind == 2:
            ids.append(ShownId(text, form))
        elif kind == 3:
            ids.append(ShownId(form, text))
        else:
            ids.append(form)
    return ids


@st.composite
def _equal_numbers(draw: st.DrawFn) -> list[object]:
    """Ids Python calls equal (or hashes alike) whose ``str`` differ: ``1``, ``1.0``, ``True``,
    ``Decimal(1)``, ``Fraction(1)``, ``(1+0j)``; ``-1`` and ``-2`` (one hash in CPython);
    ``10**20`` and ``1e20``; ``0.0`` and ``-0.0``; and NaNs, each unequal to itself."""
    value = draw(st.one_of(st.integers(-2, 2), st.integers(2**53, 2**70)))
    forms: list[object] = [
        value, float(value), Decimal(value), Fraction(value), complex(value), str(value),
        value - 1 if value == -1 else value + 1 if value == -2 else -0.0 if value == 0 else value,
        float("nan"),
    ]  # fmt: skip
    if value in (0, 1):
        forms.append(bool(value))
    return draw(st.lists(st.sampled_from(forms), min_size=2, max_size=4))


def lookalike_ids() -> st.SearchStrategy[list[object]]:
    """Two to four ids that a careless key function merges or splits: text that differs
    only invisibly (Unicode normal forms, case, whitespace, ``str`` subclasses with their
    own ``__str__``, ``__eq__`` or ``__hash__``), or numbers that are equal but print
    differently. The key of each is ``str(id)`` (KEY-2), or "default" when falsy (KEY-1)."""
    return st.one_of(_text_variants(), _equal_numbers())


def devices() -> st.SearchStrategy[str]:
    """The devices values can live on here: cpu, meta, real or simulated cuda:N."""
    return st.sampled_from(available_devices())


def shapes(*, zero_size: bool = True, max_dims: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    """Small shapes; with ``zero_size`` a dimension may be 0 (data pointer 0, ACCT-3)."""
    return st.lists(st.integers(0 if zero_size else 1, 4), max_size=max_dims).map(tuple)


#: Element values of a new allocation (see ``allocate``); shrinks to 0, all alike.
FILLS = st.integers(0, 100)


@st.composite
def dtype_names(draw: st.DrawFn, device: str) -> str:
    """A dtype for a new allocation on ``device``: a family first, each alike (a family of
    14 sub-byte ints would otherwise crowd out the 3 complex ones), then one of its
    dtypes. Shrinks to float64. Quantized families only on CPU (``dtypes.py``)."""
    by_family = dtypes_on(device)
    families = families_on(device)
    names = by_family[families[draw(st.integers(0, len(families) - 1))]]
    return names[draw(st.integers(0, len(names) - 1))]


@st.composite
def _torch_allocations(
    draw: st.DrawFn,
    on: st.SearchStrategy[str],
    zero_size: bool,
    fills: st.SearchStrategy[int],
    dtypes: Sequence[str] | None,
) -> Held:
    device = draw(on)
    if dtypes is None:
        dtype = draw(dtype_names(device))
    else:
        dtype = dtypes[draw(st.integers(0, len(dtypes) - 1))]
    return allocate(device, draw(shapes(zero_size=zero_size)), dtype, fill=draw(fills))


def allocations(
    on: st.SearchStrategy[str] | None = None,
    *,
    numpy: bool = False,
    zero_size: bool = True,
    dtypes: Sequence[str] | None = None,
) -> st.SearchStrategy[Held]:
    """Each draw makes a NEW allocation (a NumPy owner array on cpu when ``numpy``), of
    any dtype torch has (``dtype_names``) on the device drawn, or one of ``dtypes``
    (names every drawn device makes: a test about walking, not sizes, passes
    ``memory.DTYPES``)."""
    if numpy:
        return st.builds(
            allocate,
            st.just("cpu"),
            shapes(zero_size=zero_size),
            st.sampled_from(NUMPY_DTYPES),
            st.just(True),
            fill=FILLS,
        )
    return _torch_allocations(on if on is not None else devices(), zero_size, FILLS, dtypes)


def _chain(draw: st.DrawFn, held: Held, max_steps: int) -> Held:
    # Indices, not sampled_from(list): integers() strategies are cached by
    # Hypothesis, a fresh sampled_from per step is rebuilt and revalidated.
    for _ in range(draw(st.integers(0, max_steps))):
        views = derivations(held) + aliases(held)
        held = views[draw(st.integers(0, len(views) - 1))](held)
    return held


@st.composite
def derived_values(draw: st.DrawFn, held: Held, max_steps: int = 3) -> Held:
    """``held`` or a chain of up to ``max_steps`` views of it, all on its allocation:
    views (``derivations``) and aliases that are no views (``aliases``: ``detach()``,
    tensor subclasses, ``nn.Parameter``)."""
    return _chain(draw, held, max_steps)


@st.composite
def values_from(
    draw: st.DrawFn, pools: st.SearchStrategy[Sequence[Held]], max_steps: int = 3
) -> Held:
    """A value derived from one allocation of a drawn pool.

    Pass ``st.shared(pools, key=...)`` so that every value drawn in one example
    comes from the same allocations and aliases them. Build it once (at module
    level): unlike ``sampled_from(pool).flatmap(derived_values)`` it needs no
    new strategy per example.
    """
    pool = draw(pools)
    return _chain(draw, pool[draw(st.integers(0, len(pool) - 1))], max_steps)


def scalars() -> st.SearchStrategy[object]:
    """Values that count nothing (ACCT-8): None, numbers, bools, str, bytes, bytearray, and
    short ``range``s (walked or not, they hold only ints; a huge one is ACCT-14's, a SHOULD,
    so it is not drawn for the MUST clauses these values feed)."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 10**12),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text("abc\u00e9", max_size=3),
        st.binary(max_size=3),
        st.binary(max_size=3).map(bytearray),
        st.sampled_from([0, 3]).map(range),
    )


@dataclass(eq=False)
class Nested:
    """A value for the subject, the ``Held`` values it counts, and Python that builds it.

    ``counted`` lists the held values reachable through walked containers
    (Mapping values, Sequences); those inside sets, dict keys or other objects
    are in the value and in ``contained`` but not in ``counted`` (ACCT-8).
    """

    value: object
    counted: list[Held] = field(default_factory=list)
    expr: str = ""
    contained: list[Held] = field(default_factory=list)

    def __repr__(self) -> str:
        return self.expr


def _leaf(item: object) -> Nested:
    if isinstance(item, Nested):
        return item
    if isinstance(item, Held):
        return Nested(item.value, [item], item.expr, [item])
    return Nested(item, [], repr(item))


def _joined(children: Sequence[Nested]) -> str:
    return ", ".join(c.expr for c in children)


def _walked(value: object, children: Sequence[Nested], expr: str) -> Nested:
    """A container whose children are walked: it counts what they count."""
    counted = [held for child in children for held in child.counted]
    return Nested(value, counted, expr, [held for child in children for held in child.contained])


def _opaque(value: object, children: Sequence[Nested], expr: str) -> Nested:
    """An object whose children are not walked (ACCT-8): it counts nothing."""
    return Nested(value, [], expr, [held for child in children for held in child.contained])


def _sequence(
    make: Callable[[list[Any]], object], template: str
) -> Callable[[list[Nested]], Nested]:
    def build(children: list[Nested]) -> Nested:
        value = make([c.value for c in children])
        return _walked(value, children, template.format(_joined(children)))

    return build


def _tuple(children: list[Nested]) -> Nested:
    expr = f"({children[0].expr},)" if len(children) == 1 else f"({_joined(children)})"
    return _walked(tuple(c.value for c in children), children, expr)


def _mapping(
    make: Callable[[dict[str, Any]], object], template: str
) -> Callable[[list[Nested]], Nested]:
    # Keys k0, k1, ...: keys are never counted, and drawing unique ones would
    # make Hypothesis filter (and print) the whole recursive strategy.
    def build(children: list[Nested]) -> Nested:
        expr = template.format(", ".join(f"'k{i}': {c.expr}" for i, c in enumerate(children)))
        return _walked(make({f"k{i}": c.value for i, c in enumerate(children)}), children, expr)

    return build


def _hashable(children: list[Nested]) -> list[Nested]:
    kept = []
    for child in children:
        try:
            hash(child.value)
        except TypeError:
            continue
        kept.append(child)
    return kept


def _set(children: list[Nested]) -> Nested:
    # A set is an "other object": its members are not walked (ACCT-8).
    kept = _hashable(children)
    return _opaque({c.value for c in kept}, kept, f"{{{_joined(kept)}}}" if kept else "set()")


def _keys(children: list[Nested]) -> Nested:
    # Mapping keys are ignored: only values are walked (ACCT-8).
    kept = _hashable(children)
    return _opaque(dict.fromkeys(c.value for c in kept), kept, f"dict.fromkeys([{_joined(kept)}])")


def _namespace(child: Nested) -> Nested:
    # Attributes of an arbitrary object are not walked (ACCT-8).
    return _opaque(SimpleNamespace(x=child.value), [child], f"SimpleNamespace(x={child.expr})")


def _named(children: list[Nested]) -> Nested:
    # A namedtuple is a tuple: its items are walked (ACCT-8).
    value = NamedPair(*(c.value for c in children))
    return _walked(value, children, f"NamedPair({_joined(children)})")


def _record(make: type) -> Callable[[Nested], Nested]:
    # Dataclasses, attrs classes and nn.Modules are other objects (ACCT-8, amended in
    # version 3): their fields, buffers and parameters count nothing.
    def build(child: Nested) -> Nested:
        return _opaque(make(child.value), [child], f"{make.__name__}({child.expr})")

    return build


#: Every container kind ``nested_containers`` draws: walked (ACCT-8) or counting nothing.
CONTAINER_KINDS: dict[type, bool] = {
    list: True,
    tuple: True,
    NamedPair: True,
    deque: True,
    UserList: True,
    dict: True,
    OrderedDict: True,
    set: False,
    SimpleNamespace: False,
    DataRecord: False,
    SlotsRecord: False,
    ModuleHolder: False,
}
if AttrsRecord is not None:
    CONTAINER_KINDS[AttrsRecord] = False
#: The kinds whose one field ``container_kinds`` reads as ``.value``.
_RECORDS = tuple(
    k for k, walked in CONTAINER_KINDS.items() if not walked and k not in (set, SimpleNamespace)
)


def container_kinds(value: object) -> set[type]:
    """The ``CONTAINER_KINDS`` met anywhere in ``value``, inside the ones that count
    nothing too (for the reach of ``nested_containers``: bench/reachability.py)."""
    found: set[type] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind not in CONTAINER_KINDS:
            continue
        found.add(kind)
        if isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, SimpleNamespace):
            todo.append(item.x)
        elif isinstance(item, _RECORDS):
            todo.append(getattr(item, "value", None))  # every record holds one ``value``
        else:
            todo += list(item)  # type: ignore[call-overload]
    return found


#: The layouts ``value_kinds`` tells apart: what a fast path for one shape of tensor misses.
VALUE_KINDS = (
    "alias, no view",
    "tensor subclass",
    "offset > 0",
    "non-contiguous",
    "stride 0",
    "prefix at offset 0",
)


def value_kinds(held: Held) -> set[str]:
    """Which of ``VALUE_KINDS`` a drawn tensor is (for the reach of ``values_from``)."""
    value = held.value
    if not isinstance(value, torch.Tensor):
        return set()
    kinds = set()
    if held.expr.endswith((".detach()", "Subclass)", "requires_grad=False)")):
        kinds.add("alias, no view")
    if type(value).__name__ in ("PlainSubclass", "TracedSubclass", "Parameter"):
        kinds.add("tensor subclass")
    if value.storage_offset() > 0:
        kinds.add("offset > 0")
    if not value.is_contiguous():
        kinds.add("non-contiguous")
    if 0 in value.stride() and value.numel() > 1:
        kinds.add("stride 0")
    nbytes = value.numel() * value.element_size()
    if value.is_contiguous() and value.storage_offset() == 0 and nbytes < held.allocation.nbytes:
        kinds.add("prefix at offset 0")
    return kinds


def _containers(children: st.SearchStrategy[Nested]) -> st.SearchStrategy[Nested]:
    items = st.lists(children, max_size=4)
    return st.one_of(
        items.map(_sequence(list, "[{}]")),
        items.map(_tuple),
        items.map(_sequence(deque, "deque([{}])")),
        items.map(_sequence(UserList, "UserList([{}])")),
        items.map(_mapping(dict, "{{{}}}")),
        items.map(_mapping(OrderedDict, "OrderedDict({{{}}})")),
        items.map(_set),
        items.map(_keys),
        children.map(_namespace),
        st.lists(children, min_size=1, max_size=2).map(_named),
        *(children.map(_record(kind)) for kind in _RECORDS),
    )


def nested_containers(
    leaves: st.SearchStrategy[object], max_leaves: int = 10
) -> st.SearchStrategy[Nested]:
    """Nested dicts, lists, tuples, namedtuples, deques (and sets, key-only dicts,
    namespaces, dataclasses, attrs classes and nn.Modules that count nothing) over
    ``leaves``: ``Held`` values (counted) or plain objects (not)."""
    return st.recursive(leaves.map(_leaf), _containers, max_leaves=max_leaves)


#: Attribute names a world-model session keeps in ``attrs`` (DreamZero's, upstream).
ATTR_NAMES = ("language", "prompt_embeds", "call_count", "vae_cache", "current_start_frame")


@dataclass(eq=False)
class SessionContents:
    """What one session is given: lists of values, each held by one buffer object, and attrs."""

    buffers: list[list[Held]]
    attrs: dict[str, Nested]

    def counted(self) -> list[Held]:
        """The held values the session must count (ACCT-10)."""
        return [h for items in self.buffers for h in items] + [
            h for nested in self.attrs.values() for h in nested.counted
        ]

    def contained(self) -> list[Held]:
        """Every held value in the contents, counted or not (for ``definitions``)."""
        return [h for items in self.buffers for h in items] + [
            h for nested in self.attrs.values() for h in nested.contained
        ]

    def __repr__(self) -> str:
        return f"SessionContents(buffers={self.buffers!r}, attrs={self.attrs!r})"


def session_contents(values: st.SearchStrategy[Held]) -> st.SearchStrategy[SessionContents]:
    """Up to two buffers of up to three ``values``, and up to two attrs nesting them."""
    nested = nested_containers(st.one_of(values, scalars()), max_leaves=4)
    return st.builds(
        SessionContents,
        st.lists(st.lists(values, max_size=3), max_size=2),
        st.dictionaries(st.sampled_from(ATTR_NAMES), nested, max_size=2),
    )
