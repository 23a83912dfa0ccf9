"""``SessionAttr``: a descriptor that keeps an adapter's attribute in ``SessionState.attrs``.

An adapter is rebuilt for every forward, so anything it stores on itself is
lost between calls and invisible to byte accounting (a reviewer finding on the
DreamZero port). Declaring ``call_count = SessionAttr(default=0, coerce=int)``
makes ``adapter.call_count`` read and write the session's ``attrs`` instead.

The adapter keeps its ``SessionState`` in ``self._session``, as upstream's
adapters do (``self._session = manager.get_or_create_session(session_id)``),
so that an upstream adapter runs on this package with only its imports
changed. ``session_state``, this package's earlier name, is still read when
there is no ``_session``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from .session import SessionState

__all__ = ["SessionAttr"]

T = TypeVar("T")


class SessionAttr(Generic[T]):
    """Reads ``owner._session.attrs.get(name, default)``; writes ``coerce(value)``.

    The owning object must hold its ``SessionState`` as ``_session`` (upstream's
    convention; ``session_state`` is accepted too).
    ``coerce`` defaults to the identity; the default is returned as is (it is
    not copied, so prefer immutable defaults).
    """

    def __init__(self, default: T, coerce: Callable[[Any], T] | None = None) -> None:
        self.default = default
        self.coerce = coerce
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> SessionAttr[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> SessionAttr[T] | T:
        if instance is None:
            return self
        value = _attrs_of(instance).get(self.name, self.default)
        return value  # type: ignore[return-value]

    def __set__(self, instance: object, value: Any) -> None:
        _attrs_of(instance)[self.name] = value if self.coerce is None else self.coerce(value)

    def __delete__(self, instance: object) -> None:
        _attrs_of(instance).pop(self.name, None)


#: Where the owner keeps its SessionState: upstream's name first.
_HOLDERS = ("_session", "session_state")


def _attrs_of(instance: object) -> dict[str, object]:
    for holder in _HOLDERS:
        state = getattr(instance, holder, None)
        if isinstance(state, SessionState):
            # ADAPT-3, ADAPT-7: the value lives in the session's attrs, where the next
            # forward's adapter reads it and byte accounting sees it.
            return state.attrs
    raise AttributeError(
        f"{type(instance).__name__} uses SessionAttr but has no SessionState "
        "in its '_session' attribute"
    )
