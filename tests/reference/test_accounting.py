"""Unit tests of ``sessionstate.reference.accounting`` (contract section 1)."""

from __future__ import annotations

import array
import mmap
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
import torch

from sessionstate.reference import SeenStorages, accounting, device_bytes, merge_bytes
from sessionstate.reference.accounting import OTHER_ITEMS_PER_CALL, OTHER_ITEMS_PER_CONTAINER

# Views that share their base's storage; the base is a (4, 8) float32 tensor of 128 bytes.
_VIEWS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "slice": lambda t: t[1:2, 3:5],
    "narrow": lambda t: t.narrow(1, 7, 1),
    "select": lambda t: t[3],
    "view": lambda t: t.view(-1),
    "reshape": lambda t: t.reshape(8, 4),
    "t": lambda t: t.t(),
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.unsqueeze(0).permute(2, 0, 1),
    "expand": lambda t: t.unsqueeze(0).expand(5, 4, 8),
    "as_strided": lambda t: t.as_strided((2, 2), (1, 1), 29),
    "view_dtype": lambda t: t.view(torch.int32),
    "view_dtype_narrower": lambda t: t.view(torch.float16),
    "detach": lambda t: t.detach(),
}


class TestSeenStorages:
    def test_is_a_set(self) -> None:
        """``SeenStorages`` is the plain set type callers create with ``set()``."""
        seen: SeenStorages = set()
        assert SeenStorages == set[object]
        assert isinstance(seen, set)


class TestMergeBytes:
    def test_adds_per_device_in_place(self) -> None:
        """Devices present in both are added; the others are copied over."""
        into = {"cpu": 10, "meta": 1}
        assert merge_bytes(into, {"cpu": 5, "cuda:0": 7}) is into
        assert into == {"cpu": 15, "meta": 1, "cuda:0": 7}

    def test_empty_other_leaves_into(self) -> None:
        """Merging nothing changes nothing."""
        into = {"cpu": 3}
        assert merge_bytes(into, {}) == {"cpu": 3}

    def test_does_not_mutate_other(self) -> None:
        """Only ``into`` changes."""
        other = {"cpu": 4}
        merge_bytes({"cpu": 1}, other)
        assert other == {"cpu": 4}


class TestDeviceBytesTensors:
    def test_slice_pins_whole_storage(self) -> None:
        """A narrow slice counts the whole allocation behind it."""
        buf = torch.zeros(100)
        assert device_bytes(buf[10:12], set()) == {"cpu": 400}

    @pytest.mark.parametrize("name", sorted(_VIEWS))
    def test_view_counts_once(self, name: str) -> None:
        """A tensor and a view of it count their one storage once."""
        base = torch.zeros(4, 8)
        derived = _VIEWS[name](base)
        assert derived.untyped_storage() is base.untyped_storage()
        assert device_bytes([base, derived], set()) == {"cpu": 128}
        assert device_bytes([derived, base, derived], set()) == {"cpu": 128}

    def test_dtype_sizes(self) -> None:
        """Bytes follow the element size of each storage."""
        value = [torch.zeros(3, dtype=torch.float16), torch.zeros(3, dtype=torch.int64)]
        assert device_bytes(value, set()) == {"cpu": 6 + 24}

    def test_distinct_storages_add_up(self) -> None:
        """Two equal but separate tensors count twice."""
        assert device_bytes([torch.zeros(4), torch.zeros(4)], set()) == {"cpu": 32}

    def test_shared_seen_across_calls(self) -> None:
        """A storage counted in one call is skipped by the next call with the same seen."""
        seen: SeenStorages = set()
        base = torch.zeros(8)
        assert device_bytes(base, seen) == {"cpu": 32}
        assert device_bytes(base[2:], seen) == {}
        assert device_bytes([base, torch.zeros(2)], seen) == {"cpu": 8}

    def test_fresh_seen_counts_again(self) -> None:
        """Separate seen sets do not share anything."""
        base = torch.zeros(8)
        assert device_bytes(base, set()) == {"cpu": 32}
        assert device_bytes(base, set()) == {"cpu": 32}

    def test_returns_new_dict_and_grows_seen(self) -> None:
        """Each call returns a new dict and records the storage it counted."""
        seen: SeenStorages = set()
        base = torch.zeros(2)
        first = device_bytes(base, seen)
        assert base.untyped_storage() in seen
        assert device_bytes(torch.zeros(1), seen) is not first
        assert first == {"cpu": 8}

    def test_meta_storages_counted_separately(self) -> None:
        """Meta storages all have data pointer 0 and still count one by one."""
        a, b = torch.empty(3, device="meta"), torch.empty(5, device="meta")
        assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() == 0
        assert device_bytes([a, b], set()) == {"meta": 32}
        assert device_bytes([a, a.view(-1), b.t()], set()) == {"meta": 32}

    def test_zero_size_storages_counted_separately(self) -> None:
        """Zero-size storages share data pointer 0 but are distinct entries of seen."""
        a, b = torch.empty(0), torch.empty(0)
        assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() == 0
        seen: SeenStorages = set()
        assert device_bytes([a, b], seen) == {"cpu": 0}
        assert a.untyped_storage() in seen
        assert b.untyped_storage() in seen
        assert len(seen) == 2

    def test_fake_cuda_device_names(self, fake_cuda: Callable[[int, str], torch.Tensor]) -> None:
        """Bytes are keyed by str(tensor.device), here simulated cuda:0 and cuda:1."""
        zero, one = fake_cuda(4, "cuda:0"), fake_cuda(6, "cuda:1")
        assert str(one.device) == "cuda:1"
        assert device_bytes([zero, one, one.view(-1)], set()) == {"cuda:0": 16, "cuda:1": 24}

    def test_cpu_and_meta_in_one_value(self) -> None:
        """Devices are never summed together."""
        value = {"host": torch.zeros(2), "meta": torch.empty(3, device="meta")}
        assert device_bytes(value, set()) == {"cpu": 8, "meta": 12}

    def test_cpu_tensor_and_device_copy(
        self, fake_cuda: Callable[[int, str], torch.Tensor]
    ) -> None:
        """A CPU tensor and its (simulated) CUDA copy are two storages on two devices."""
        value = [torch.zeros(4), fake_cuda(4, "cuda:0"), torch.empty(4, device="meta")]
        assert device_bytes(value, set()) == {"cpu": 16, "cuda:0": 16, "meta": 16}


class TestDeviceBytesNumpy:
    def test_owner(self) -> None:
        """An owning array counts its buffer under cpu."""
        assert device_bytes(np.zeros(10), set()) == {"cpu": 80}

    @pytest.mark.parametrize("index", [slice(1, None), slice(None, None, 2), slice(3, 4)])
    def test_view_counts_owner(self, index: slice) -> None:
        """A view alone counts the whole owner buffer, and with the owner counts once."""
        owner = np.zeros(10)
        assert device_bytes(owner[index], set()) == {"cpu": 80}
        assert device_bytes([owner, owner[index], owner.reshape(2, 5).T], set()) == {"cpu": 80}

    def test_base_chain_followed(self) -> None:
        """A view of a view (through a subclass) still counts the first owner."""
        owner = np.zeros(10)
        middle = owner.view(_Sub)
        tail = middle[1:]
        assert tail.base is middle and middle.base is owner
        assert device_bytes([tail, owner], set()) == {"cpu": 80}

    def test_foreign_base_is_owner(self) -> None:
        """An array over a bytearray owns its memory as far as NumPy goes."""
        array = np.frombuffer(bytearray(24), dtype=np.int64)
        assert device_bytes([array, array[1:]], set()) == {"cpu": 24}

    def test_zero_size_counts_nothing(self) -> None:
        """An empty owner adds no device; an empty view still pins its owner."""
        owner = np.zeros(4)
        assert device_bytes(np.zeros(0), set()) == {}
        assert device_bytes(owner[2:2], set()) == {"cpu": 32}

    def test_tensor_numpy(self) -> None:
        """``tensor.numpy()`` is the tensor's memory, alone or with it, in both orders."""
        tensor = torch.zeros(4)
        array = tensor.numpy()
        assert device_bytes(array, set()) == {"cpu": 16}
        assert device_bytes(array[1:], set()) == {"cpu": 16}
        assert device_bytes([tensor, array], set()) == {"cpu": 16}
        assert device_bytes([array, tensor], set()) == {"cpu": 16}

    def test_tensor_slice_numpy_pins_storage(self) -> None:
        """``tensor[2:4].numpy()`` pins the tensor's whole storage, as the slice does."""
        tensor = torch.zeros(10)
        array = tensor[2:4].numpy()
        assert device_bytes(array, set()) == {"cpu": 40}
        assert device_bytes([array, tensor], set()) == {"cpu": 40}

    def test_from_numpy_owner(self) -> None:
        """``torch.from_numpy(owner)`` and the owner count once, in both orders."""
        owner = np.zeros(10)
        tensor = torch.from_numpy(owner)
        assert device_bytes(tensor, set()) == {"cpu": 80}
        assert device_bytes([owner, tensor], set()) == {"cpu": 80}
        assert device_bytes([tensor, owner], set()) == {"cpu": 80}

    def test_from_numpy_offset_view(self) -> None:
        """``torch.from_numpy(owner[1:])`` with the owner is the owner's bytes, both orders."""
        owner = np.zeros(10)
        tail = torch.from_numpy(owner[1:])
        assert device_bytes(tail, set()) == {"cpu": 72}
        assert device_bytes([owner, tail], set()) == {"cpu": 80}
        assert device_bytes([tail, owner], set()) == {"cpu": 80}

    def test_partial_overlaps(self) -> None:
        """Overlapping borrowed ranges count the bytes of their union."""
        owner = np.zeros(10)
        seen: SeenStorages = set()
        assert device_bytes(torch.from_numpy(owner[2:6]), seen) == {"cpu": 32}
        assert device_bytes(torch.from_numpy(owner[4:8]), seen) == {"cpu": 16}
        assert device_bytes(owner, seen) == {"cpu": 32}

    def test_range_bridging_two_others(self) -> None:
        """A range overlapping two counted ranges counts only the gap between them."""
        owner = np.zeros(10)
        seen: SeenStorages = set()
        assert device_bytes([torch.from_numpy(owner[0:2]), torch.from_numpy(owner[6:8])], seen) == {
            "cpu": 32
        }
        assert device_bytes(torch.from_numpy(owner[1:7]), seen) == {"cpu": 32}
        assert device_bytes(torch.from_numpy(owner[5:9]), seen) == {"cpu": 8}
        assert device_bytes(owner, seen) == {"cpu": 8}

    def test_adjacent_and_disjoint_ranges(self) -> None:
        """Touching and separate ranges each count in full."""
        owner = np.zeros(10)
        parts = [owner[0:2], owner[2:4], owner[8:10], owner[5:6]]
        seen: SeenStorages = set()
        counted = [device_bytes(torch.from_numpy(part), seen) for part in parts]
        assert counted == [{"cpu": 16}, {"cpu": 16}, {"cpu": 16}, {"cpu": 8}]
        assert device_bytes(owner, seen) == {"cpu": 24}

    def test_freed_owner_address_not_reused(self) -> None:
        """Arrays counted through one seen stay distinct even when made and dropped in turn."""
        seen: SeenStorages = set()
        counted = [device_bytes(np.zeros(10), seen) for _ in range(5)]
        counted += [device_bytes(torch.from_numpy(np.zeros(10)), seen) for _ in range(5)]
        assert counted == [{"cpu": 80}] * 10

    def test_cleared_seen_forgets_ranges(self) -> None:
        """After ``seen.clear()`` the same set counts host memory again."""
        owner = np.zeros(10)
        seen: SeenStorages = set()
        assert device_bytes(owner, seen) == {"cpu": 80}
        survivor = set(seen)  # keeps the old ranges object alive elsewhere
        seen.clear()
        assert device_bytes(owner, seen) == {"cpu": 80}
        assert len(survivor) == 1


class _Sub(np.ndarray):
    """An ndarray subclass: its views keep it as their base."""


class _Pair(Sequence[object]):
    """A minimal custom Sequence."""

    def __init__(self, *items: object) -> None:
        self.items = items

    def __getitem__(self, index: int) -> object:  # type: ignore[override]
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)


class _Unwalkable:
    """Mixin whose iteration fails, proving a value was not walked."""

    def __iter__(self) -> Iterator[object]:
        raise AssertionError("walked")

    def __getitem__(self, index: object) -> object:
        raise AssertionError("walked")


class _Str(_Unwalkable, str): ...


class _Bytes(_Unwalkable, bytes): ...


class _Bytearray(_Unwalkable, bytearray): ...


class TestDeviceBytesContainers:
    def test_mapping_values_not_keys(self) -> None:
        """A mapping counts its values; its keys count nothing."""
        assert device_bytes({torch.zeros(100): torch.zeros(1)}, set()) == {"cpu": 4}
        assert device_bytes(MappingProxyType({"a": torch.zeros(2)}), set()) == {"cpu": 8}

    def test_sequences(self) -> None:
        """Lists, tuples, deques and custom Sequences are walked."""
        value = [torch.zeros(1), (torch.zeros(2),), deque([torch.zeros(3)]), _Pair(torch.zeros(4))]
        assert device_bytes(value, set()) == {"cpu": 40}

    def test_nested_several_levels(self) -> None:
        """Containers are walked to any depth."""
        inner = torch.zeros(5)
        value = {"a": [({"b": deque([[inner]])},)], "c": [[[[[torch.zeros(1)]]]]], "d": inner}
        assert device_bytes(value, set()) == {"cpu": 24}

    def test_deep_nesting(self) -> None:
        """A fifty-level list still counts its leaf."""
        value: object = torch.zeros(2)
        for _ in range(50):
            value = [value]
        assert device_bytes(value, set()) == {"cpu": 8}

    @pytest.mark.parametrize("cls", [_Str, _Bytes, _Bytearray])
    def test_text_and_bytes_not_walked(self, cls: type) -> None:
        """str, bytes and bytearray are never iterated."""
        assert device_bytes([cls(b"xyz" if cls is not _Str else "xyz")], set()) == {}

    def test_memoryview_not_walked(self) -> None:
        """A memoryview counts nothing (its exporter is what holds memory)."""
        assert device_bytes(memoryview(bytearray(16)), set()) == {}

    @pytest.mark.parametrize("value", [None, 0, 1.5, True, object(), {torch.zeros(2)}, "", []])
    def test_other_objects_count_nothing(self, value: object) -> None:
        """Scalars, plain objects, sets and empty containers count nothing."""
        assert device_bytes(value, set()) == {}

    def test_self_referencing_list(self) -> None:
        """A list containing itself terminates and counts its tensor once."""
        value: list[object] = [torch.zeros(3)]
        value.append(value)
        assert device_bytes(value, set()) == {"cpu": 12}

    def test_self_referencing_dict(self) -> None:
        """A dict containing itself terminates and counts its tensor once."""
        value: dict[str, object] = {"t": torch.zeros(3)}
        value["self"] = value
        value["again"] = [value]
        assert device_bytes(value, set()) == {"cpu": 12}

    def test_shared_sub_container(self) -> None:
        """A sub-container reached twice is counted once."""
        shared = [torch.zeros(2)]
        assert device_bytes([shared, (shared,), {"x": shared}], set()) == {"cpu": 8}


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
class TestDeviceBytesSparse:
    @pytest.mark.parametrize("make", [torch.sparse_csr_tensor, torch.sparse_csc_tensor])
    def test_compressed(self, make: Callable[..., torch.Tensor]) -> None:
        """CSR and CSC count compressed indices, plain indices and values."""
        crow, col, values = torch.tensor([0, 1, 2]), torch.tensor([1, 0]), torch.tensor([1.0, 2.0])
        sparse = make(crow, col, values, (2, 2))
        assert device_bytes(sparse, set()) == {"cpu": 24 + 16 + 8}
        assert device_bytes([sparse, crow, col, values], set()) == {"cpu": 48}

    @pytest.mark.parametrize("make", [torch.sparse_bsr_tensor, torch.sparse_bsc_tensor])
    def test_blocked(self, make: Callable[..., torch.Tensor]) -> None:
        """BSR and BSC count their indices and their blocks."""
        crow, col, blocks = torch.tensor([0, 1, 2]), torch.tensor([1, 0]), torch.ones(2, 2, 2)
        sparse = make(crow, col, blocks, (4, 4))
        assert device_bytes([sparse, blocks], set()) == {"cpu": 24 + 16 + 32}

    def test_coo(self) -> None:
        """COO counts its indices and values, and dedups through seen."""
        indices, values = torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0])
        sparse = torch.sparse_coo_tensor(indices, values, (2, 2))
        seen: SeenStorages = set()
        assert device_bytes(sparse, seen) == {"cpu": 32 + 8}
        assert device_bytes([sparse, indices, values], seen) == {}

    def test_opaque_mkldnn_counts_its_elements_once(self) -> None:
        """An mkldnn tensor has no storage: its elements count, once per tensor object."""
        opaque = torch.zeros(3, 4).to_mkldnn()
        seen: set[object] = set()
        assert device_bytes([opaque, opaque], seen) == {"cpu": 48}
        assert device_bytes(opaque, seen) == {}

    def test_jagged_layout_counts_its_values_and_offsets(self) -> None:
        """A jagged nested tensor counts its packed values (5 floats) and its offsets
        (3 int64), each once beside values() and offsets() (ACCT-9)."""
        nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
        assert nested.layout is torch.jagged
        assert device_bytes(nested, set()) == {"cpu": 20 + 24}
        seen: SeenStorages = set()
        assert device_bytes(nested.values(), seen) == {"cpu": 20}
        assert device_bytes([nested, nested.offsets()], seen) == {"cpu": 24}

    def test_jagged_layout_with_lengths_counts_them(self) -> None:
        """A narrowed jagged tensor holds lengths too: 2x5 floats, 3 offsets, 2 lengths."""
        base = torch.zeros(2, 5)
        starts, lengths = torch.tensor([0, 1]), torch.tensor([2, 3])
        nested = torch.nested.narrow(base, 1, starts, lengths, layout=torch.jagged)
        assert nested._lengths is not None
        counted = device_bytes([nested, base], set())
        parts = [nested._values, nested._offsets, nested._lengths]
        assert counted == {"cpu": 40 + sum(p.untyped_storage().nbytes() for p in parts[1:])}

    @pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype")
    def test_strided_layout_counts_its_buffer_and_metadata(self) -> None:
        """A strided nested tensor: its buffer (20 bytes, shared with unbind()) and its
        size, stride and offset metadata (2x1 int64 each)."""
        nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
        assert nested.layout is torch.strided and nested.is_nested
        assert device_bytes([nested, nested.unbind()], set()) == {"cpu": 20 + 3 * 16}

    def test_a_nested_layout_torch_builds_otherwise_counts_its_storage(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Where the components cannot be read (another torch), the tensor's own storage
        counts rather than accounting raising (ACCT-9)."""
        import sessionstate.reference.accounting as accounting

        def unreadable(tensor: torch.Tensor) -> list[torch.Tensor]:
            raise AttributeError("_offsets")

        monkeypatch.setattr(accounting, "_nested_components", unreadable)
        nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
        assert device_bytes(nested, set()) == {"cpu": 20}
        # Its storage has no address (torch gives none): told apart by identity, before
        # and after host memory is counted by address range (a NumPy array starts that).
        seen: SeenStorages = set()
        assert device_bytes(nested, seen) == {"cpu": 20}
        assert device_bytes([np.zeros(2), nested], seen) == {"cpu": 16}
        other = torch.nested.nested_tensor([torch.zeros(1)], layout=torch.jagged)
        assert device_bytes([other, nested], seen) == {"cpu": 4}
        assert device_bytes([np.zeros(1), nested, other], seen) == {"cpu": 8}

    def test_host_ranges_another_call_started_mid_walk_are_shared(self) -> None:
        """A Mapping whose values() counts into the same seen starts its ranges while the
        outer walk is under way: the outer walk then uses those ranges, not new ones."""
        seen: SeenStorages = set()
        inner = np.zeros(3)

        class Counting(Mapping[str, object]):
            def __getitem__(self, key: str) -> object:
                raise KeyError(key)

            def __iter__(self) -> Iterator[str]:
                return iter(())

            def __len__(self) -> int:
                return 0

            def values(self) -> Any:
                assert device_bytes(inner, seen) == {"cpu": 24}
                return []

        assert device_bytes([inner, np.zeros(2), Counting()], seen) == {"cpu": 16}

    def test_an_opaque_tensor_counted_before_host_ranges_stays_counted_once(self) -> None:
        """Address ranges start after an mkldnn tensor was counted: it is not a storage
        (no range of its own) and still counts once."""
        opaque, seen = torch.zeros(3, 4).to_mkldnn(), set()
        assert device_bytes(opaque, seen) == {"cpu": 48}
        assert device_bytes([np.zeros(2), opaque], seen) == {"cpu": 16}


class TestAliasesOfOneAllocation:
    """Two storage objects over one allocation are one range of memory (ACCT-7)."""

    def test_a_dlpack_alias_counts_once_in_either_order(self) -> None:
        t = torch.zeros(4)
        alias = torch.from_dlpack(t)
        assert alias.untyped_storage() is not t.untyped_storage()
        assert device_bytes([t, alias], set()) == {"cpu": 16}
        assert device_bytes([alias, t], set()) == {"cpu": 16}

    def test_a_dlpack_alias_of_a_slice_across_calls(self) -> None:
        t, seen = torch.zeros(6), set()
        # The alias covers what it was made from, t[2:]; then t adds the rest.
        assert device_bytes(torch.from_dlpack(t[2:]), seen) == {"cpu": 16}
        assert device_bytes(t, seen) == {"cpu": 8}

    def test_distinct_allocations_still_count_separately(self) -> None:
        a, b = torch.zeros(4), torch.zeros(4)
        assert device_bytes([a, b, torch.from_dlpack(a)], set()) == {"cpu": 32}

    def test_meta_storages_are_still_told_apart_by_identity(self) -> None:
        metas = [torch.empty(2, device="meta"), torch.empty(3, device="meta")]
        assert device_bytes(metas, set()) == {"meta": 20}


class _Endless(Sequence[object]):
    """A Sequence whose ``__getitem__`` never raises IndexError; counts its reads."""

    def __init__(self, item: object) -> None:
        self.item, self.reads = item, 0

    def __getitem__(self, index: int) -> object:  # type: ignore[override]
        self.reads += 1
        return self.item

    def __len__(self) -> int:
        return 1


class _RaisingIter(Mapping[str, object]):
    """A Mapping whose iteration raises."""

    def __getitem__(self, key: str) -> object:
        return torch.zeros(1)

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("broken mapping")


class _ListOwnIter(list[object]):
    def __iter__(self) -> Iterator[object]:
        raise AssertionError("own __iter__ called")


class _TupleOwnIter(tuple[object, ...]):
    def __iter__(self) -> Iterator[object]:
        raise AssertionError("own __iter__ called")


class _DictOwnValues(dict[str, object]):
    def values(self) -> Any:
        raise AssertionError("own values() called")


class TestHostileValues:
    """ACCT-13..15: values whose shape or code used to break or stall the walk."""

    def test_nesting_100k_deep(self) -> None:
        """ACCT-13: no recursion limit; the walk keeps its own stack."""
        value: object = torch.zeros(2)
        for depth in range(100_000):
            value = [value] if depth % 2 else {"k": value}
        assert device_bytes(value, set()) == {"cpu": 8}

    def test_a_million_element_list(self) -> None:
        """A 1M-int list with a tensor at its end is read in full (it is in memory)."""
        value: list[object] = [*range(1_000_000), torch.zeros(3)]
        assert device_bytes(value, set()) == {"cpu": 12}

    def test_huge_range_is_a_value(self) -> None:
        """ACCT-14: range(10**12) is not iterated."""
        assert device_bytes([range(10**12), torch.zeros(1)], set()) == {"cpu": 4}

    def test_endless_sequences_are_bounded_each(self) -> None:
        """ACCT-14: at most OTHER_ITEMS_PER_CONTAINER reads of each, so siblings count."""
        endless = [_Endless(torch.zeros(2)), _Endless(torch.zeros(3)), _Endless(torch.zeros(1))]
        assert device_bytes(endless, set()) == {"cpu": 24}
        assert [e.reads for e in endless] == [OTHER_ITEMS_PER_CONTAINER] * 3

    def test_nested_endless_sequences_are_bounded_in_all(self) -> None:
        """ACCT-14: fresh endless containers inside endless ones stop at the per-call bound."""
        made: list[_Endless] = []

        class Fresh(Sequence[object]):
            def __getitem__(self, index: int) -> object:  # type: ignore[override]
                made.append(_Endless(None))
                return made[-1]

            def __len__(self) -> int:
                return 1

        assert device_bytes(Fresh(), set()) == {}
        assert len(made) + sum(e.reads for e in made) == OTHER_ITEMS_PER_CALL

    def test_each_call_has_its_own_budget(self) -> None:
        """The bounds are per call: a second call reads the container again."""
        endless, seen = _Endless(torch.zeros(2)), set[object]()
        assert device_bytes(endless, seen) == {"cpu": 8}
        assert device_bytes([endless, torch.zeros(1)], seen) == {"cpu": 4}
        assert endless.reads == 2 * OTHER_ITEMS_PER_CONTAINER

    def test_raising_mapping_counts_the_rest(self) -> None:
        """ACCT-14, ACCT-9: an iteration that raises ends that container only."""
        assert device_bytes([_RaisingIter(), torch.zeros(5)], set()) == {"cpu": 20}

    def test_subclass_iteration_is_not_called(self) -> None:
        """ACCT-13: list and dict subclasses are read through the built-in iteration."""
        value = [_ListOwnIter([torch.zeros(1)]), _DictOwnValues(k=torch.zeros(2))]
        assert device_bytes(value, set()) == {"cpu": 12}

    def test_array_array_counts_its_buffer(self) -> None:
        """ACCT-15: an 8 MB array.array counts 8 MB, once through its views too."""
        buffer = array.array("d", bytes(8 << 20))
        value = [buffer, memoryview(buffer), memoryview(buffer)[::2]]
        assert device_bytes(value, set()) == {"cpu": 8 << 20}

    def test_buffer_shared_with_numpy_counts_once(self) -> None:
        """ACCT-15, ACCT-7: np.frombuffer of an array.array is the same memory."""
        buffer, seen = array.array("f", bytes(64)), set[object]()
        assert device_bytes(np.frombuffer(buffer, dtype=np.float32), seen) == {"cpu": 64}
        assert device_bytes(buffer, seen) == {}

    def test_mmap_counts_its_buffer(self) -> None:
        """ACCT-15: any buffer exporter, not only array.array."""
        with mmap.mmap(-1, 4096) as mapped:
            assert device_bytes({"m": mapped}, set()) == {"cpu": 4096}

    @pytest.mark.parametrize(
        "value", [b"xyz" * 100, bytearray(300), memoryview(b"abc"), np.float64(1.0)], ids=type
    )
    def test_byte_strings_and_numpy_scalars_stay_values(self, value: object) -> None:
        """ACCT-8: bytes, bytearray (and views of them) and NumPy scalars count nothing."""
        assert device_bytes(value, set()) == {}

    def test_numpy_object_array_of_tensors(self) -> None:
        """ACCT-15: the pointers and the two 4 MB tensors; a view walks the owner."""
        a, b = torch.zeros(1 << 20), torch.zeros(1 << 20)
        objects = np.empty(2, dtype=object)
        objects[0], objects[1] = a, b
        assert device_bytes(objects, set()) == {"cpu": 16 + (8 << 20)}
        assert device_bytes([objects[1:], a], set()) == {"cpu": 16 + (8 << 20)}

    def test_numpy_object_array_holding_itself(self) -> None:
        """An object array that holds itself terminates."""
        objects = np.empty((2, 1), dtype=object)
        objects[0, 0], objects[1, 0] = torch.zeros(3), objects
        assert device_bytes(objects, set()) == {"cpu": 16 + 12}

    def test_other_containers_reached_twice_are_walked_once(self) -> None:
        """A custom Mapping holding itself, and a custom Sequence reached twice, end."""
        pair = _Pair(torch.zeros(1))
        proxy_target: dict[str, object] = {"t": torch.zeros(2)}
        proxy = MappingProxyType(proxy_target)
        proxy_target["self"] = proxy
        assert device_bytes([pair, pair, proxy], set()) == {"cpu": 12}

    def test_tuple_subclass(self) -> None:
        """ACCT-13: a tuple subclass (a named tuple) is read as a tuple."""
        value = torch.Size([3]), _TupleOwnIter((torch.zeros(3),))
        assert device_bytes(value, set()) == {"cpu": 12}

    def test_memoryview_of_numpy_array_counts_the_owner(self) -> None:
        """ACCT-15, ACCT-6: a memoryview of an ndarray is that array's owner's buffer."""
        owner = np.zeros(8, dtype=np.float32)
        assert device_bytes([memoryview(owner[2:]), owner], set()) == {"cpu": 32}

    def test_released_buffers_count_nothing(self) -> None:
        """A released memoryview or PickleBuffer holds nothing alive and never raises."""
        view = memoryview(array.array("b", bytes(8)))
        view.release()
        released = pickle.PickleBuffer(array.array("b", bytes(8)))
        released.release()
        assert device_bytes([view, released], set()) == {}

    def test_empty_buffer_counts_nothing(self) -> None:
        """A zero-length buffer has no bytes to count."""
        assert device_bytes(array.array("d"), set()) == {}

    def test_strided_buffer_counts_by_identity(self) -> None:
        """A buffer with no single address (a strided export) counts its bytes once."""
        strided = pickle.PickleBuffer(np.zeros(10)[::2])
        seen = set[object]()
        assert device_bytes([strided, strided], seen) == {"cpu": 40}
        assert device_bytes(strided, seen) == {}

    def test_numpy_object_array_reached_twice(self) -> None:
        """An object array seen through two views is walked once."""
        objects = np.empty(3, dtype=object)
        objects[:] = [torch.zeros(1), None, 1.5]
        assert device_bytes([objects, objects[::2]], set()) == {"cpu": 24 + 4}


class _RaisingTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError("no operation allowed")


class _RaisingAttributes:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class _ClaimsToBeATensor:
    __class__ = torch.Tensor  # type: ignore[assignment]


class _SlowSequence(Sequence[object]):
    """``length`` items, each after a millisecond, then ``tail``."""

    def __init__(self, length: int, tail: object) -> None:
        self.length, self.tail = length, tail

    def __len__(self) -> int:
        return self.length + 1

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        if not 0 <= index <= self.length:
            raise IndexError(index)
        if index == self.length:
            return self.tail
        time.sleep(0.001)
        return None


class TestValuesThatRaise:
    """ACCT-17: a value whose inspection raises counts nothing; the walk goes on, and the
    code of containers walked by their own iteration gets a time budget per call."""

    @pytest.mark.parametrize(
        "make",
        [
            lambda: torch.zeros(4).as_subclass(_RaisingTorchFunction),
            _RaisingAttributes,
            _ClaimsToBeATensor,
        ],
        ids=["torch-function", "getattribute", "fake-class"],
    )
    def test_counts_nothing_and_the_rest_counts(self, make: Callable[[], object]) -> None:
        hostile = make()
        assert device_bytes([torch.zeros(8), hostile, torch.zeros(2)], set()) == {"cpu": 40}
        assert device_bytes({"x": [hostile], "t": torch.zeros(1)}, set()) == {"cpu": 4}

    def test_a_slow_container_stops_at_the_budget(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(accounting, "OTHER_SECONDS_PER_CALL", 0.05)
        slow = _SlowSequence(2_000, torch.zeros(3))  # 2 s to read it whole
        started = time.monotonic()
        assert device_bytes([slow, torch.zeros(2)], set()) == {"cpu": 8}  # its tail not reached
        assert time.monotonic() - started < 1.0

    def test_the_budget_is_for_all_containers_together(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(accounting, "OTHER_SECONDS_PER_CALL", 0.05)
        slow = [_SlowSequence(2_000, None) for _ in range(5)]
        started = time.monotonic()
        assert device_bytes([*slow, torch.zeros(1)], set()) == {"cpu": 4}
        assert time.monotonic() - started < 1.0
        assert device_bytes(_SlowSequence(3, torch.zeros(2)), set()) == {"cpu": 8}  # a new call
