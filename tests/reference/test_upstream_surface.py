"""The reference is a drop-in for upstream's newest ``session_state`` surface (vllm-omni #7302).

Code written against upstream must run on ``sessionstate.reference`` with only the
package name changed. Upstream's public names and signatures are WRITTEN DOWN HERE, module
by module, from upstream's source (vllm-omni ``vllm_omni/experimental/world_models/
session_state/``: ``__init__.py``, ``manager.py``, ``base.py``, ``objects.py``,
``accounting.py``, ``attrs.py``) and its tests of #7302 (``SessionStateManager(...,
evict_when_full=False)``, ``SessionAdmissionError`` matched on ``"cannot admit session
's2'"``, ``LatentBuffer[torch.Tensor]()``); upstream's code is never imported.

"Accepts every call upstream's accepts": each upstream parameter is ours too, at the same
position, of the same kind, with the same default; ours may add parameters only after
them, keyword-only and defaulted. Every error survives a pickle round-trip (a worker
process hands its exception to the parent).
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from sessionstate.reference import (
    LatentBuffer,
    SessionAdmissionError,
    SessionAttr,
    SessionStateLostError,
    SessionStateManager,
)

P = inspect.Parameter
POS, KW = P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY
NO_DEFAULT = P.empty

#: Upstream's modules (under ``session_state``) and ours, with the public names each holds.
MODULES: dict[str, tuple[str, frozenset[str]]] = {
    "__init__": (
        "sessionstate.reference",
        frozenset(
            {
                "DEFAULT_MAX_SESSIONS",
                "LatentBuffer",
                "SeenStorages",
                "StateObject",
                "SessionAttr",
                "SessionAdmissionError",
                "SessionState",
                "SessionStateLostError",
                "SessionStateManager",
                "device_bytes",
                "resolve_session_state_config",
            }
        ),
    ),
    "manager": (
        "sessionstate.reference.manager",
        frozenset(
            {
                "DEFAULT_MAX_SESSIONS",
                "SessionAdmissionError",
                "SessionState",
                "SessionStateLostError",
                "SessionStateManager",
                "resolve_session_state_config",
            }
        ),
    ),
    "base": ("sessionstate.reference.base", frozenset({"StateObject", "PayloadT", "ViewT"})),
    "objects": ("sessionstate.reference.objects", frozenset({"LatentBuffer"})),
    "accounting": (
        "sessionstate.reference.accounting",
        frozenset({"SeenStorages", "device_bytes", "merge_bytes"}),
    ),
    "attrs": ("sessionstate.reference.attrs", frozenset({"SessionAttr"})),
}

Param = tuple[str, inspect._ParameterKind, object]  # name, kind, default


@dataclass(frozen=True)
class Signature:
    """One upstream callable: ``module:qualified.name`` and its parameters, ``self`` included."""

    where: str
    params: tuple[Param, ...]


def _p(name: str, default: object = NO_DEFAULT, kind: inspect._ParameterKind = POS) -> Param:
    return (name, kind, default)


SELF = _p("self")

#: Upstream's signatures, as its source declares them.
SIGNATURES = [
    Signature(
        "manager:SessionStateManager.__init__",
        (
            SELF,
            _p("max_sessions", 64),
            _p("byte_budget", None),
            _p("lock_factory", threading.Lock),
            _p("evict_when_full", True),  # 4th positional since #7302
        ),
    ),
    Signature("manager:SessionStateManager.get_or_create_session", (SELF, _p("session_id"))),
    Signature("manager:SessionStateManager.drop_session", (SELF, _p("session_id"))),
    Signature("manager:SessionStateManager.raise_max_sessions", (SELF, _p("max_sessions"))),
    Signature("manager:SessionStateManager.nbytes_by_device", (SELF,)),
    Signature("manager:SessionStateManager.stats", (SELF,)),
    Signature("manager:SessionStateManager.__len__", (SELF,)),
    Signature("manager:SessionStateManager.__contains__", (SELF, _p("session_id"))),
    Signature("manager:SessionState.__init__", (SELF,)),
    Signature("manager:SessionState.get", (SELF, _p("name"))),
    Signature("manager:SessionState.put", (SELF, _p("name"), _p("obj"))),
    Signature("manager:SessionState.get_or_create", (SELF, _p("name"), _p("factory"), _p("cls"))),
    Signature("manager:SessionState.names", (SELF,)),
    Signature("manager:SessionState.reset", (SELF,)),
    Signature("manager:SessionState.nbytes_by_device", (SELF, _p("seen", None))),
    Signature(
        "manager:resolve_session_state_config", (_p("enable", None), _p("max_sessions", None))
    ),
    Signature("accounting:device_bytes", (_p("value"), _p("seen"))),
    Signature("accounting:merge_bytes", (_p("into"), _p("other"))),
    Signature("base:StateObject.stage", (SELF, _p("payload"))),
    Signature("base:StateObject.commit", (SELF, _p("payload", None))),
    Signature("base:StateObject.discard", (SELF,)),
    Signature("base:StateObject.append", (SELF, _p("payload"))),
    Signature("base:StateObject.view", (SELF, _p("include_staged", True, KW))),
    Signature("base:StateObject.evict", (SELF, _p("policy", None))),
    Signature("base:StateObject.reset", (SELF,)),
    Signature("base:StateObject.nbytes_by_device", (SELF, _p("seen"))),
    Signature("objects:LatentBuffer.__init__", (SELF,)),
    Signature("objects:LatentBuffer.allocate", (SELF, _p("maxlen", None, KW))),
    Signature("objects:LatentBuffer.append", (SELF, _p("payload"))),
    Signature("objects:LatentBuffer.extend", (SELF, _p("payloads"))),
    Signature("objects:LatentBuffer.commit", (SELF, _p("payload", None))),
    Signature("objects:LatentBuffer.view", (SELF, _p("include_staged", True, KW))),
    Signature("objects:LatentBuffer.reset", (SELF,)),
    Signature("objects:LatentBuffer.nbytes_by_device", (SELF, _p("seen"))),
    Signature("attrs:SessionAttr.__init__", (SELF, _p("default", kind=KW), _p("coerce", None, KW))),
    # The errors take the message as their one positional argument (upstream raises
    # SessionAdmissionError(f"cannot admit session {key!r}...")).
    Signature("manager:SessionAdmissionError.__init__", (SELF, _p("message"))),
]

#: Upstream's properties and class attributes, with their values where they are constants.
PROPERTIES = [
    "base:StateObject.nbytes",
    "base:StateObject.resident",
    "base:StateObject.recomputable",
]
CLASS_VALUES = [
    ("base:StateObject.recompute_source", None),
    ("base:StateObject.recompute_cost", 0),
    ("manager:DEFAULT_MAX_SESSIONS", 64),
]


def _resolve(where: str) -> Any:
    """``module:a.b`` in our package, upstream's module name mapped to ours; attributes of a
    class are read statically (a property stays a property, inherited ones included)."""
    module_name, _, path = where.partition(":")
    first, *rest = path.split(".")
    target = getattr(importlib.import_module(MODULES[module_name][0]), first)
    for part in rest:
        target = inspect.getattr_static(target, part)
    return target


def _mismatches(ours: inspect.Signature, upstream: tuple[Param, ...]) -> list[str]:
    """Why ``ours`` would refuse a call ``upstream`` accepts (empty: none).

    An upstream positional parameter must be ours at the same position, positional too; an
    upstream keyword-only one must be ours by name (positional is more lenient, and fine);
    both with upstream's default. Parameters upstream lacks must be optional keywords.
    """
    params = list(ours.parameters.values())
    by_name = {p.name: p for p in params}
    found = []
    for index, (name, kind, default) in enumerate(upstream):
        have = params[index] if kind is POS and index < len(params) else by_name.get(name)
        if have is None or have.name != name or (kind is POS and have.kind is not POS):
            shown = "nothing" if have is None else f"{have.name!r} ({have.kind})"
            found.append(f"upstream {name!r} ({kind}) is {shown} here")
        elif have.kind not in (POS, KW):
            found.append(f"{name!r} is {have.kind} here")
        elif have.default is not default and have.default != default:
            found.append(f"{name!r} defaults to {have.default!r}, upstream {default!r}")
    known = {name for name, _, _ in upstream}
    found += [
        f"{p.name!r}, not upstream's, is not an optional keyword"
        for p in params
        if p.name not in known and (p.kind is not KW or p.default is NO_DEFAULT)
    ]
    return found


@pytest.mark.parametrize("module", sorted(MODULES), ids=str)
def test_every_upstream_name_is_ours(module: str) -> None:
    """Each of upstream's public names is importable from the matching module of ours."""
    ours, names = MODULES[module]
    loaded = importlib.import_module(ours)
    assert sorted(name for name in names if not hasattr(loaded, name)) == []


@pytest.mark.parametrize("signature", SIGNATURES, ids=[s.where for s in SIGNATURES])
def test_signature_accepts_every_upstream_call(signature: Signature) -> None:
    function = _resolve(signature.where)
    if isinstance(function, (staticmethod, classmethod)):
        function = function.__func__
    assert _mismatches(inspect.signature(function), signature.params) == []


@pytest.mark.parametrize("where", PROPERTIES, ids=str)
def test_properties_are_properties(where: str) -> None:
    assert isinstance(_resolve(where), property)


@pytest.mark.parametrize(("where", "value"), CLASS_VALUES, ids=[w for w, _ in CLASS_VALUES])
def test_class_values(where: str, value: object) -> None:
    assert _resolve(where) == value


def test_generic_classes_subscript_as_upstream_writes_them() -> None:
    """``LatentBuffer[torch.Tensor]()`` and ``SessionAttr[int](default=0)`` work."""
    buffer = LatentBuffer[torch.Tensor]()
    buffer.allocate(maxlen=2)
    buffer.append(torch.zeros(3))
    assert len(buffer.view()) == 1
    assert isinstance(SessionAttr[int](default=0), SessionAttr)


def test_upstream_call_sites_run() -> None:
    """What #7302's own tests do, with the package name changed."""
    manager = SessionStateManager(2, None, threading.Lock, False)
    assert manager.evict_when_full is False
    manager.get_or_create_session("s0")
    manager.get_or_create_session("s1")
    with pytest.raises(SessionAdmissionError, match="cannot admit session 's2'"):
        manager.get_or_create_session("s2")
    assert (len(manager), manager.evictions) == (2, 0)
    assert manager.raise_max_sessions(3) is True
    assert manager.get_or_create_session("s2") is not None
    with pytest.raises(SessionAdmissionError, match="cannot admit DreamZero session 'x'"):
        raise SessionAdmissionError("cannot admit DreamZero session 'x'")
    with pytest.raises(SessionStateLostError, match="has no resident state"):
        raise SessionStateLostError("session 'x' has no resident state")


def _refusal() -> SessionAdmissionError:
    manager = SessionStateManager(max_sessions=1, evict_when_full=False)
    manager.get_or_create_session("a")
    try:
        manager.get_or_create_session("it's")
    except SessionAdmissionError as error:
        return error
    raise AssertionError("the full manager admitted 'it's'")


ERRORS: list[tuple[str, Callable[[], BaseException]]] = [
    ("admission-message-only", lambda: SessionAdmissionError("cannot admit session 's2'")),
    (
        "admission-with-fields",
        lambda: SessionAdmissionError("refused", session_id="s", max_sessions=3),
    ),
    ("admission-from-the-manager", _refusal),
    ("state-lost", lambda: SessionStateLostError("session 's0' has no resident state")),
]


@pytest.mark.parametrize("make", [m for _, m in ERRORS], ids=[i for i, _ in ERRORS])
def test_every_error_survives_a_pickle_round_trip(make: Callable[[], BaseException]) -> None:
    error = make()
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.args, str(again), vars(again)) == (
        type(error),
        error.args,
        str(error),
        vars(error),
    )
