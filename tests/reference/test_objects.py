"""Unit tests of ``sessionstate.reference.objects`` (contract section 2, concrete objects)."""

from __future__ import annotations

import pytest
import torch

from sessionstate.reference import (
    EncodeOnceKV,
    FixedState,
    LatentBuffer,
    SeenStorages,
    device_bytes,
)


class TestLatentBuffer:
    def test_fresh(self) -> None:
        """A new buffer is empty, not resident, unbounded and counts nothing."""
        buffer = LatentBuffer()
        assert (buffer.resident, len(buffer), buffer.maxlen, buffer.view()) == (False, 0, None, [])
        assert buffer.nbytes_by_device(set()) == {}

    def test_ring(self) -> None:
        """With maxlen the buffer keeps only the newest items, in order."""
        buffer, items = LatentBuffer(), [torch.zeros(1) for _ in range(4)]
        buffer.allocate(maxlen=2)
        for item in items:
            buffer.append(item)
        assert buffer.maxlen == 2
        assert len(buffer) == 2
        assert [id(x) for x in buffer.view()] == [id(items[2]), id(items[3])]
        assert buffer.nbytes_by_device(set()) == {"cpu": 8}

    def test_unbounded(self) -> None:
        """allocate() without maxlen keeps everything."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.extend(torch.zeros(2) for _ in range(100))
        assert (buffer.maxlen, len(buffer)) == (None, 100)
        assert buffer.nbytes == 800

    def test_extend_respects_ring(self) -> None:
        """extend() appends in order and the ring still applies."""
        buffer = LatentBuffer()
        buffer.allocate(maxlen=3)
        buffer.extend([1, 2, 3, 4, 5])
        assert buffer.view() == [3, 4, 5]

    @pytest.mark.parametrize("call", ["append", "extend", "commit"])
    def test_use_before_allocate(self, call: str) -> None:
        """append, extend and commit(payload) before allocate raise RuntimeError."""
        buffer = LatentBuffer()
        argument: object = [1] if call == "extend" else 1
        with pytest.raises(RuntimeError, match=r"LatentBuffer used before allocate\(\)"):
            getattr(buffer, call)(argument)
        assert not buffer.resident

    def test_commit_none_is_noop(self) -> None:
        """commit(None) does nothing, allocated or not, and does not promote staged."""
        buffer = LatentBuffer()
        buffer.commit(None)
        buffer.commit()
        buffer.allocate()
        buffer.stage("staged")
        buffer.commit()
        assert buffer.view(include_staged=False) == []
        assert len(buffer) == 0

    def test_commit_payload_appends(self) -> None:
        """commit(payload) adds the payload like append."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.commit("a")
        buffer.append("b")
        assert buffer.view() == ["a", "b"]

    def test_view_returns_new_list(self) -> None:
        """Mutating a view leaves the buffer alone; each call builds a new list."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.append("a")
        first = buffer.view()
        first.append("intruder")
        assert buffer.view() == ["a"]
        assert buffer.view() is not buffer.view()

    def test_staged_in_view_not_in_bytes(self) -> None:
        """A staged payload shows at the end of a staged view and is never counted."""
        buffer, staged = LatentBuffer(), torch.zeros(10)
        buffer.allocate()
        buffer.append("a")
        buffer.stage(staged)
        assert buffer.view()[1] is staged
        assert buffer.view(include_staged=False) == ["a"]
        assert len(buffer) == 1
        assert buffer.nbytes == 0

    def test_bytes_are_accounting_of_items(self) -> None:
        """Items sharing a storage count once, and seen is passed through."""
        buffer, base = LatentBuffer(), torch.zeros(4, 4)
        buffer.allocate()
        buffer.extend([base[0], base[1], {"x": base.t()}])
        seen: SeenStorages = set()
        assert buffer.nbytes_by_device(seen) == {"cpu": 64}
        assert buffer.nbytes_by_device(seen) == {}
        assert device_bytes(base, seen) == {}

    def test_reset_and_reallocate(self) -> None:
        """reset() empties and unallocates; allocate() starts empty again."""
        buffer = LatentBuffer()
        buffer.allocate(maxlen=4)
        buffer.append(torch.zeros(1))
        buffer.stage("s")
        buffer.reset()
        assert (buffer.resident, len(buffer), buffer.maxlen, buffer.view()) == (False, 0, None, [])
        buffer.allocate()
        assert (buffer.resident, buffer.view()) == (True, [])

    def test_allocate_discards_items(self) -> None:
        """allocate() on a resident buffer initialises it to empty."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.append("a")
        buffer.allocate(maxlen=1)
        assert (buffer.view(), buffer.maxlen) == ([], 1)

    def test_evict(self) -> None:
        """The default evict() returns the bytes held and unallocates."""
        buffer = LatentBuffer()
        buffer.allocate()
        buffer.append(torch.zeros(3))
        assert buffer.evict() == 12
        assert not buffer.resident

    def test_unknown_allocate_keyword(self) -> None:
        """An unknown sizing keyword raises TypeError."""
        with pytest.raises(TypeError):
            LatentBuffer().allocate(max_len=3)  # type: ignore[call-arg]


class TestEncodeOnceKV:
    def test_fresh(self) -> None:
        """A new cache is not resident, counts nothing, and cannot be viewed."""
        kv = EncodeOnceKV()
        assert not kv.resident
        assert kv.nbytes_by_device(set()) == {}
        with pytest.raises(RuntimeError, match=r"EncodeOnceKV used before allocate\(\)"):
            kv.view()

    def test_allocate(self) -> None:
        """allocate() gives the empty live dict."""
        kv = EncodeOnceKV()
        kv.allocate()
        assert kv.resident
        assert kv.view() == {"is_init": False, "k": None, "v": None}
        assert kv.nbytes_by_device(set()) == {}

    def test_commit_writes_once(self) -> None:
        """commit(payload) stores k and v and marks the cache initialised."""
        kv, k, v = EncodeOnceKV(), torch.zeros(2), torch.zeros(3)
        kv.allocate()
        kv.commit({"k": k, "v": v, "ignored": torch.zeros(100)})
        cache = kv.view()
        assert cache["is_init"] is True
        assert (cache["k"] is k, cache["v"] is v) == (True, True)
        assert sorted(cache) == ["is_init", "k", "v"]
        assert kv.nbytes_by_device(set()) == {"cpu": 20}

    def test_view_is_live(self) -> None:
        """view() returns the same dict, and in-place writes are counted."""
        kv = EncodeOnceKV()
        kv.allocate()
        cache = kv.view()
        assert kv.view() is cache
        cache["k"] = torch.zeros(4)
        cache["v"] = cache["k"][1:]
        assert kv.view(include_staged=False)["k"] is cache["k"]
        assert kv.nbytes == 16

    def test_commit_promotes_staged(self) -> None:
        """commit() with no payload promotes the staged one, once."""
        kv, k = EncodeOnceKV(), torch.zeros(1)
        kv.allocate()
        kv.stage({"k": k, "v": k})
        assert kv.view()["is_init"] is False
        kv.commit()
        assert kv.view()["k"] is k
        kv.view()["k"] = None
        kv.commit()
        assert kv.view()["k"] is None

    def test_commit_nothing_is_noop(self) -> None:
        """commit() with nothing staged does nothing, even before allocate."""
        kv = EncodeOnceKV()
        kv.commit()
        assert not kv.resident

    def test_commit_before_allocate(self) -> None:
        """commit(payload) before allocate raises RuntimeError."""
        with pytest.raises(RuntimeError, match="before allocate"):
            EncodeOnceKV().commit({"k": None, "v": None})

    def test_reset_clears_staged(self) -> None:
        """reset() unallocates and forgets the staged payload."""
        kv = EncodeOnceKV()
        kv.allocate()
        kv.stage({"k": torch.zeros(1), "v": None})
        kv.reset()
        assert not kv.resident
        kv.allocate()
        kv.commit()
        assert kv.view() == {"is_init": False, "k": None, "v": None}

    def test_evict(self) -> None:
        """The default evict() returns the bytes of k and v."""
        kv = EncodeOnceKV()
        kv.allocate()
        kv.commit({"k": torch.zeros(2), "v": torch.empty(2, device="meta")})
        assert kv.nbytes_by_device(set()) == {"cpu": 8, "meta": 8}
        assert kv.evict() == 16
        assert not kv.resident

    def test_unknown_allocate_keyword(self) -> None:
        """allocate() takes no sizing parameters at all."""
        with pytest.raises(TypeError):
            EncodeOnceKV().allocate(size=1)  # type: ignore[call-arg]


def _fixed(**kwargs: object) -> FixedState:
    state = FixedState()
    state.allocate(shapes={"h": (2, 3), "c": [4]}, **kwargs)  # type: ignore[arg-type]
    return state


class TestFixedState:
    def test_allocate_zero_filled(self) -> None:
        """Buffers are zero-filled float32 on cpu by default."""
        view = _fixed().view()
        assert sorted(view) == ["c", "h"]
        assert (view["h"].shape, view["c"].shape) == ((2, 3), (4,))
        assert view["h"].dtype is torch.float32
        assert str(view["h"].device) == "cpu"
        assert torch.equal(view["h"], torch.zeros(2, 3))
        assert _fixed().nbytes_by_device(set()) == {"cpu": 40}

    def test_allocate_dtype_and_device(self) -> None:
        """dtype and device are applied to every buffer."""
        state = _fixed(dtype=torch.float16, device="meta")
        assert {t.dtype for t in state.view().values()} == {torch.float16}
        assert state.nbytes_by_device(set()) == {"meta": 20}

    def test_view_is_new_dict_of_same_buffers(self) -> None:
        """view() returns a new dict over the same tensors."""
        state = _fixed()
        first, second = state.view(), state.view(include_staged=False)
        assert first is not second
        assert first["h"] is second["h"]

    def test_commit_copies_in_place(self) -> None:
        """commit() copies values into the existing buffers, keeping their identity."""
        state = _fixed()
        before = state.view()
        payload = {"h": torch.ones(2, 3), "c": torch.full((4,), 2.0)}
        state.commit(payload)
        after = state.view()
        assert after["h"] is before["h"] and after["c"] is before["c"]
        payload["h"].fill_(7.0)
        assert torch.equal(after["h"], torch.ones(2, 3))
        assert torch.equal(after["c"], torch.full((4,), 2.0))

    @pytest.mark.parametrize(
        "payload",
        [
            {"h": torch.ones(2, 3)},
            {"h": torch.ones(2, 3), "c": torch.ones(4), "x": torch.ones(1)},
            {"h": torch.ones(2, 3), "c": torch.ones(5)},
            {"h": torch.ones(3, 2), "c": torch.ones(4)},
        ],
        ids=["missing", "extra", "shape", "transposed_shape"],
    )
    def test_commit_rejects(self, payload: dict[str, torch.Tensor]) -> None:
        """Missing or extra names and shape mismatches raise ValueError and copy nothing."""
        state = _fixed()
        with pytest.raises(ValueError, match=r"^FixedState\.commit: "):
            state.commit(payload)
        assert all(not t.any() for t in state.view().values())

    def test_commit_promotes_staged(self) -> None:
        """commit() with no payload copies the staged one, then nothing."""
        state = _fixed()
        state.stage({"h": torch.ones(2, 3), "c": torch.ones(4)})
        assert not state.view()["h"].any()
        state.commit()
        assert torch.equal(state.view()["c"], torch.ones(4))
        state.view()["c"].zero_()
        state.commit()
        assert not state.view()["c"].any()

    def test_use_before_allocate(self) -> None:
        """view() and commit(payload) before allocate raise RuntimeError; commit() does not."""
        state = FixedState()
        state.commit()
        assert state.nbytes_by_device(set()) == {}
        with pytest.raises(RuntimeError, match=r"FixedState used before allocate\(\)"):
            state.view()
        with pytest.raises(RuntimeError, match="before allocate"):
            state.commit({})

    def test_evict_refused(self) -> None:
        """evict() raises RuntimeError and the state stays resident and intact."""
        state = _fixed()
        state.commit({"h": torch.ones(2, 3), "c": torch.ones(4)})
        with pytest.raises(RuntimeError, match="never evictable"):
            state.evict()
        assert state.resident
        assert state.nbytes == 40
        assert torch.equal(state.view()["c"], torch.ones(4))

    def test_reset(self) -> None:
        """reset() unallocates and forgets the staged payload."""
        state = _fixed()
        state.stage({"h": torch.ones(2, 3), "c": torch.ones(4)})
        state.reset()
        assert not state.resident
        state.allocate(shapes={"h": (2, 3), "c": (4,)})
        state.commit()
        assert not state.view()["h"].any()

    def test_never_recomputable(self) -> None:
        """FixedState has no recompute source."""
        assert not _fixed().recomputable

    def test_unknown_allocate_keyword(self) -> None:
        """An unknown sizing keyword raises TypeError."""
        with pytest.raises(TypeError):
            FixedState().allocate(shapes={}, shape={"h": (1,)})  # type: ignore[call-arg]

    def test_empty_shapes_refused(self) -> None:
        """allocate(shapes={}) raises ValueError and leaves the object as it was."""
        state = FixedState()
        with pytest.raises(ValueError, match=r"^FixedState\.allocate: shapes is empty"):
            state.allocate(shapes={})
        assert not state.resident
        allocated = _fixed()
        with pytest.raises(ValueError):
            allocated.allocate(shapes={})
        assert sorted(allocated.view()) == ["c", "h"]

    def test_snapshot_is_a_copy_later_commits_leave_alone(self) -> None:
        """snapshot() clones every buffer: a commit after it changes the state, not it."""
        state = _fixed(dtype=torch.float16)
        state.commit({"h": torch.ones(2, 3), "c": torch.full((4,), 2.0)})
        saved = state.snapshot()
        assert sorted(saved) == ["c", "h"]
        assert saved["h"] is not state.view()["h"]
        assert saved["h"].dtype is torch.float16
        state.commit({"h": torch.full((2, 3), 5.0), "c": torch.zeros(4)})
        assert torch.equal(saved["h"], torch.ones(2, 3, dtype=torch.float16))

    def test_restore_copies_back_in_place(self) -> None:
        """restore(snapshot) brings the saved values back into the same buffers."""
        state = _fixed()
        state.commit({"h": torch.ones(2, 3), "c": torch.full((4,), 2.0)})
        saved, buffers = state.snapshot(), state.view()
        state.commit({"h": torch.full((2, 3), 9.0), "c": torch.zeros(4)})
        state.restore(saved)
        after = state.view()
        assert after["h"] is buffers["h"] and after["c"] is buffers["c"]
        assert torch.equal(after["h"], torch.ones(2, 3))
        assert torch.equal(after["c"], torch.full((4,), 2.0))

    @pytest.mark.parametrize(
        "snapshot",
        [{"h": torch.ones(2, 3)}, {"h": torch.ones(2, 3), "c": torch.ones(5)}],
        ids=["missing", "shape"],
    )
    def test_restore_rejects_what_commit_rejects(self, snapshot: dict[str, torch.Tensor]) -> None:
        """restore() checks names and shapes first, with ValueError, and copies nothing."""
        state = _fixed()
        with pytest.raises(ValueError, match=r"^FixedState\.restore: "):
            state.restore(snapshot)
        assert all(not t.any() for t in state.view().values())

    def test_snapshot_and_restore_before_allocate(self) -> None:
        """Before allocate() both raise RuntimeError."""
        with pytest.raises(RuntimeError, match="before allocate"):
            FixedState().snapshot()
        with pytest.raises(RuntimeError, match="before allocate"):
            FixedState().restore({})
