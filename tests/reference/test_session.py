"""Unit tests of ``sessionstate.reference.session`` (contract section 3)."""

from __future__ import annotations

import pytest
import torch

from sessionstate.reference import (
    EncodeOnceKV,
    LatentBuffer,
    SeenStorages,
    SessionState,
    device_bytes,
)


def _buffer(*items: object, maxlen: int | None = None) -> LatentBuffer:
    buffer = LatentBuffer()
    buffer.allocate(maxlen=maxlen)
    buffer.extend(items)
    return buffer


class _FailingReset(LatentBuffer):
    """A buffer whose reset() unallocates and then raises."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def reset(self) -> None:
        super().reset()
        raise OSError(self.message)


class _Counter:
    """A factory that counts its calls and returns new unallocated buffers."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> LatentBuffer:
        self.calls += 1
        return LatentBuffer()


class TestSessionState:
    def test_fresh(self) -> None:
        """A new session has no objects, no attrs and no bytes."""
        session = SessionState()
        assert (session.names(), session.attrs, session.get("x")) == ([], {}, None)
        assert (session.nbytes_by_device(), session.nbytes) == ({}, 0)

    def test_put_get_names(self) -> None:
        """put returns its object, get finds it, names keep insertion order."""
        session, a, b = SessionState(), LatentBuffer(), EncodeOnceKV()
        assert session.put("b", b) is b
        assert session.put("a", a) is a
        assert (session.get("a"), session.get("b")) == (a, b)
        assert session.names() == ["b", "a"]

    def test_put_replaces_without_reset(self) -> None:
        """Replacing an object keeps the name's position and leaves the old object alone."""
        session, old, new = SessionState(), _buffer("x"), LatentBuffer()
        session.put("a", old)
        session.put("b", LatentBuffer())
        session.put("a", new)
        assert session.get("a") is new
        assert session.names() == ["a", "b"]
        assert old.resident and old.view() == ["x"]

    def test_names_is_a_copy(self) -> None:
        """Mutating the returned names list changes nothing."""
        session = SessionState()
        session.put("a", LatentBuffer())
        session.names().append("z")
        assert session.names() == ["a"]

    def test_get_or_create_absent(self) -> None:
        """An absent name calls the factory once and stores its result."""
        session, factory = SessionState(), _Counter()
        created = session.get_or_create("frames", factory, LatentBuffer)
        assert factory.calls == 1
        assert session.get("frames") is created

    def test_get_or_create_resident(self) -> None:
        """A resident object of the right class is returned without calling the factory."""
        session, factory, existing = SessionState(), _Counter(), _buffer()
        session.put("frames", existing)
        assert session.get_or_create("frames", factory, LatentBuffer) is existing
        assert factory.calls == 0

    def test_get_or_create_non_resident(self) -> None:
        """A non-resident object is rebuilt, even the factory's own unallocated one."""
        session, factory = SessionState(), _Counter()
        first = session.get_or_create("frames", factory, LatentBuffer)
        second = session.get_or_create("frames", factory, LatentBuffer)
        assert factory.calls == 2
        assert second is not first
        assert session.get("frames") is second

    def test_get_or_create_wrong_type(self) -> None:
        """A resident object of another class is replaced."""
        session, factory, kv = SessionState(), _Counter(), EncodeOnceKV()
        kv.allocate()
        session.put("frames", kv)
        created = session.get_or_create("frames", factory, LatentBuffer)
        assert isinstance(created, LatentBuffer)
        assert (factory.calls, session.get("frames"), kv.resident) == (1, created, True)

    def test_get_or_create_subclass_counts(self) -> None:
        """An instance of a subclass of cls is kept."""
        session, sub = SessionState(), _FailingReset("x")
        sub.allocate()
        session.put("frames", sub)
        assert session.get_or_create("frames", _Counter(), LatentBuffer) is sub

    def test_reset(self) -> None:
        """reset() resets every object, keeps them registered, and clears attrs."""
        session, a, b = SessionState(), _buffer(torch.zeros(2)), EncodeOnceKV()
        b.allocate()
        session.put("a", a)
        session.put("b", b)
        session.attrs.update(call_count=3, prompt=torch.zeros(4))
        session.reset()
        assert session.names() == ["a", "b"]
        assert (session.get("a"), session.get("b")) == (a, b)
        assert (a.resident, b.resident, session.attrs) == (False, False, {})
        assert session.nbytes == 0

    def test_reset_continues_past_errors(self) -> None:
        """Every object is reset and attrs cleared before the first error propagates."""
        session = SessionState()
        before, after = _buffer("x"), _buffer("y")
        first, second = _FailingReset("first"), _FailingReset("second")
        first.allocate()
        second.allocate()
        for name, obj in [("before", before), ("f1", first), ("after", after), ("f2", second)]:
            session.put(name, obj)
        session.attrs["k"] = 1
        with pytest.raises(OSError, match=r"^first$"):
            session.reset()
        assert [o.resident for o in (before, first, after, second)] == [False] * 4
        assert session.attrs == {}
        assert session.names() == ["before", "f1", "after", "f2"]

    def test_nbytes_objects_and_attrs(self) -> None:
        """Objects and attrs both count, per device."""
        session = SessionState()
        session.put("frames", _buffer(torch.zeros(4)))
        session.attrs["vae_cache"] = [torch.empty(2, device="meta"), {"x": torch.zeros(1)}]
        session.attrs["call_count"] = 7
        assert session.nbytes_by_device() == {"cpu": 20, "meta": 8}
        assert session.nbytes == 28

    def test_one_seen_across_objects_and_attrs(self) -> None:
        """A tensor held by two objects and an attr counts once."""
        session, shared = SessionState(), torch.zeros(8)
        session.put("a", _buffer(shared))
        session.put("b", _buffer(shared[2:]))
        session.attrs["prompt_embeds"] = shared.view(2, 4)
        assert session.nbytes_by_device() == {"cpu": 32}

    def test_callers_seen_is_used(self) -> None:
        """A caller's seen is skipped and mutated; without one each call starts fresh."""
        session, counted, fresh = SessionState(), torch.zeros(2), torch.zeros(3)
        session.put("a", _buffer(counted, fresh))
        session.attrs["x"] = counted
        seen: SeenStorages = set()
        device_bytes(counted, seen)
        assert session.nbytes_by_device(seen) == {"cpu": 12}
        assert device_bytes(fresh, seen) == {}
        assert session.nbytes_by_device(seen) == {}
        assert session.nbytes_by_device() == {"cpu": 20}
