"""The suite's devices (``conformance/_harness/devices.py``): allocations on every device,
real or simulated, behave as a real allocator's where accounting can tell (distinct
non-zero addresses, views sharing their base's storage, results and copies on the
right device), borrowed storages are not resizable, and the strategies draw on the
available devices only."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from hypothesis import find
from hypothesis import strategies as st

from sessionstate.conformance import strategies
from sessionstate.conformance._harness.devices import (
    allocate,
    available_devices,
    borrow,
    borrowing_available,
    is_simulated,
)
from sessionstate.conformance._model.memory import Held, aliases, derivations, expected_bytes
from sessionstate.conformance.strategies import devices

CUDA1 = "cuda:1" if "cuda:1" in available_devices() else None


@pytest.mark.skipif(CUDA1 is None, reason="no real or simulated cuda:1 on this torch")
def test_cuda_allocation_reports_its_device() -> None:
    """A (possibly simulated) cuda:1 allocation is a cuda:1 tensor of the modelled size."""
    held = allocate("cuda:1", (4,), "bfloat16")
    assert str(held.value.device) == "cuda:1"
    assert expected_bytes([held]) == {"cuda:1": 8}
    assert held.allocation.simulated == is_simulated("cuda:1")


CUDA = [d for d in available_devices() if d.startswith("cuda")]
needs_cuda = pytest.mark.skipif(not CUDA, reason="no real or simulated cuda device on this torch")

#: One of each view the SPEC names (ACCT-2), by the name a failure shows.
VIEWS = {
    "[1:]": lambda t: t[1:],
    "[:, ::2]": lambda t: t[:, ::2],
    ".view(-1)": lambda t: t.view(-1),
    ".view(3, 4)": lambda t: t.view(3, 4),
    ".t()": lambda t: t.t(),
    ".T": lambda t: t.T,
    ".expand(2, 4, 3)": lambda t: t.expand(2, 4, 3),
    ".as_strided((2, 2), (1, 2))": lambda t: t.as_strided((2, 2), (1, 2)),
    ".narrow(1, 1, 2)": lambda t: t.narrow(1, 1, 2),
    ".select(0, 1)": lambda t: t.select(0, 1),
    ".reshape(-1)": lambda t: t.reshape(-1),
    ".view(torch.int32)": lambda t: t.view(torch.int32),
    ".unsqueeze(0)": lambda t: t.unsqueeze(0),
    ".detach()": lambda t: t.detach(),
    "[1:].t()[1:]": lambda t: t[1:].t()[1:],
}


@needs_cuda
@pytest.mark.parametrize("device", CUDA)
def test_cuda_allocations_have_distinct_nonzero_addresses(device: str) -> None:
    """Live allocations on one device never share an address, and none is at 0, as on a
    real GPU: keying storages by (device, data_ptr) is exact there (ACCT-3)."""
    shapes, dtypes = [(3,), (2, 3), (1,)], ["float32", "int64", "uint8"]
    helds = [allocate(device, shape, dtype) for shape in shapes for dtype in dtypes]
    addresses = [h.value.untyped_storage().data_ptr() for h in helds]
    assert 0 not in addresses
    assert len(set(addresses)) == len(addresses)


SIMULATED = [d for d in CUDA if is_simulated(d)]


def _tensor(held: Held) -> torch.Tensor:
    assert isinstance(held.value, torch.Tensor)
    return held.value


def _address(value: torch.Tensor) -> int:
    return int(value.untyped_storage().data_ptr())


@pytest.mark.skipif(not SIMULATED, reason="no simulated cuda device: a real GPU's allocator reuses")
@pytest.mark.parametrize("device", SIMULATED)
def test_a_freed_address_goes_to_the_next_allocation_of_its_size(device: str) -> None:
    """As a caching allocator does: once an allocation and its views are gone, the next
    allocation of its size on its device is at its address at once, with its own contents;
    while a view keeps it alive, or on another device or at another size, it is not."""
    other_device = next(d for d in [*SIMULATED, "cuda:1", "cuda:0"] if d != device)
    first = _tensor(allocate(device, (8, 4), "float32"))
    view, address = first[1:], _address(first)
    del first
    alive = allocate(device, (8, 4), "float32")
    assert _address(_tensor(alive)) != address  # the view keeps it
    del view
    elsewhere = [allocate(other_device, (8, 4)), allocate(device, (8, 5)), allocate(device, (0,))]
    assert address not in [_address(_tensor(h)) for h in elsewhere]
    again = allocate(device, (4, 8), "int32", fill=3)  # 128 bytes, as the freed one
    tensor = _tensor(again)
    assert _address(tensor) == tensor.data_ptr() == address
    assert str(tensor.untyped_storage().device) == device
    assert tensor.cpu().tolist() == [[3] * 8] * 4
    assert expected_bytes([alive, again]) == {device: 256}
    result = tensor + 1  # results of operations are allocations too
    address = _address(result)
    del result
    assert _address(tensor * 2) == address


@pytest.mark.parametrize("device", ["cpu", *CUDA])
@pytest.mark.parametrize("name", VIEWS)
def test_views_share_the_storage_object_and_address(device: str, name: str) -> None:
    """Every view's ``untyped_storage()`` is its base's storage object, at its address and on
    its device, on a (simulated) GPU as torch does it for host tensors (checked on ``cpu``)."""
    base = allocate(device, (4, 3)).value
    view = VIEWS[name](base)
    assert view.untyped_storage() is base.untyped_storage()
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert str(view.device) == device
    assert str(view.untyped_storage().device) == device


@needs_cuda
@pytest.mark.parametrize("device", CUDA)
def test_cuda_tensors_and_their_storages_report_the_device(device: str) -> None:
    """The tensor, its storage (untyped and typed) and its views say ``cuda:N``; sizes are
    the modelled ones; zero-size storages are at address 0, like meta ones."""
    held = allocate(device, (2, 3), "float16")
    tensor, storage = held.value, held.value.untyped_storage()
    assert (str(tensor.device), str(storage.device)) == (device, device)
    assert storage.device == tensor.device == torch.device(device)
    assert (tensor.is_cuda, tensor.is_cpu, tensor.get_device()) == (True, False, int(device[-1]))
    assert storage.nbytes() == held.allocation.nbytes == 12
    empty = allocate(device, (0, 3)).value
    assert (empty.untyped_storage().data_ptr(), str(empty.untyped_storage().device)) == (
        0,
        device,
    )
    assert repr(allocate(device, (2,), fill=3).value).endswith(f"device='{device}')")


@needs_cuda
@pytest.mark.parametrize("device", CUDA)
def test_results_of_operations_stay_on_the_device(device: str) -> None:
    """``torch.cat``, arithmetic and reductions return new allocations on their inputs'
    device, whose storages say so too; values are computed."""
    a, b = allocate(device, (2, 3), fill=1).value, allocate(device, (2, 3), fill=2).value
    for result in (torch.cat([a, b]), a + b, a * 2, b.sum(), torch.stack([a, b[0:2]])):
        assert str(result.device) == device
        assert str(result.untyped_storage().device) == device
        assert result.untyped_storage() is not a.untyped_storage()
    assert torch.cat([a, b]).sum().item() == 18
    assert torch.equal(a + a, b)


@pytest.mark.skipif("cuda:1" not in CUDA, reason="no real or simulated cuda:1 on this torch")
def test_copies_across_devices_are_new_allocations() -> None:
    """``to``/``cpu``/``cuda`` copy to another device and return the tensor itself for its own;
    a host copy is a host tensor; mixing devices in one operation raises, as on GPUs."""
    held = allocate("cuda:1", (3,), fill=5)
    tensor = held.value
    assert tensor.to("cuda:1") is tensor and tensor.to(tensor.device) is tensor
    for copy, device in [
        (tensor.to("cuda:0"), "cuda:0"),
        (tensor.cuda(0), "cuda:0"),
        (tensor.to("cpu"), "cpu"),
        (tensor.cpu(), "cpu"),
        (tensor.to("meta"), "meta"),
    ]:
        assert (str(copy.device), str(copy.untyped_storage().device)) == (device, device)
        assert copy.untyped_storage() is not tensor.untyped_storage()
    assert type(tensor.cpu()) is torch.Tensor
    assert tensor.cpu().tolist() == [5.0, 5.0, 5.0]
    assert str(tensor.to(torch.float16).device) == "cuda:1"
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([tensor, allocate("cuda:0", (3,)).value])
    with pytest.raises(TypeError, match="numpy"):
        tensor.numpy()


@needs_cuda
@pytest.mark.parametrize("device", CUDA)
def test_deep_copies_of_views_share_one_new_storage(device: str) -> None:
    """``copy.deepcopy`` of a base and its view (what an adapter's argument copy does) makes
    one new allocation on the device that both copies view."""
    import copy

    tensor = allocate(device, (4,), fill=1).value
    base, view = copy.deepcopy([tensor, tensor[1:]])
    assert base.untyped_storage() is view.untyped_storage()
    assert base.untyped_storage() is not tensor.untyped_storage()
    assert (str(view.device), str(base.untyped_storage().device)) == (device, device)
    assert view.tolist() == [1.0, 1.0, 1.0]


def test_meta_storages_stay_at_address_zero() -> None:
    """Meta is left as torch makes it: every meta storage is at data pointer 0, so keying by
    address genuinely fails on it (ACCT-3)."""
    helds = [allocate("meta", (n,)) for n in (1, 2, 3)]
    assert {h.value.untyped_storage().data_ptr() for h in helds} == {0}
    assert len({id(h.value.untyped_storage()) for h in helds}) == 3


@pytest.mark.skipif(
    not any(is_simulated(d) for d in available_devices()), reason="CUDA devices are real here"
)
def test_simulated_devices_import_no_dynamo() -> None:
    """Building simulated CUDA tensors costs no ``torch._dynamo`` import (0.9 s a process):
    checked in a fresh interpreter, whose ``sys.modules`` nothing else has filled."""
    script = (
        "import sys\n"
        "from sessionstate.conformance._harness import devices\n"
        "from sessionstate.conformance._model.memory import derivations\n"
        "assert devices.simulated_cuda_available(), devices.available_devices()\n"
        "held = devices.allocate('cuda:1', (2, 3))\n"
        "views = [d(held).value for d in derivations(held)]\n"
        "devices.borrow('cuda:0', 2)\n"
        "print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(not borrowing_available(), reason="no borrowed storages on this torch")
@pytest.mark.parametrize(
    "device", [d for d in available_devices() if d == "meta" or is_simulated(d)]
)
def test_borrowed_storages_are_not_resizable(device: str) -> None:
    """``borrow`` makes what torch.from_dlpack does off the host: a storage torch cannot
    resize, of the modelled size, on the asked device; at data pointer 0 on meta, at an
    address of its own on a simulated GPU, as a CuPy array's."""
    held = borrow(device, 3)
    storage = held.value.untyped_storage()
    assert (str(held.value.device), tuple(held.value.shape)) == (device, (3,))
    assert (storage.resizable(), storage.nbytes()) == (False, 12)
    assert str(storage.device) == device
    other = borrow(device, 2)
    assert expected_bytes([held, other]) == {device: 20}
    if device == "meta":
        assert storage.data_ptr() == 0
        rebuilt = eval(held.allocation.source, {"torch": torch})
        assert rebuilt.untyped_storage().resizable() is False
    else:
        addresses = {storage.data_ptr(), other.value.untyped_storage().data_ptr()}
        assert 0 not in addresses and len(addresses) == 2
        empty = borrow(device, 0).value.untyped_storage()
        assert (empty.data_ptr(), empty.resizable(), str(empty.device)) == (0, False, device)


def test_borrow_refuses_a_real_device() -> None:
    """Only meta and simulated devices: nothing real is behind a borrowed storage."""
    with pytest.raises(ValueError, match="only meta and simulated"):
        borrow("cpu", 2)


@pytest.mark.parametrize("device", available_devices())
def test_zero_size_allocations_are_drawable(device: str) -> None:
    """Zero-size storages (data pointer 0, like meta) come out of the strategy on every device."""
    held = find(strategies.allocations(on=st.just(device)), lambda h: h.allocation.nbytes == 0)
    assert held.value.untyped_storage().data_ptr() == 0
    assert expected_bytes([held]) == {}


def test_devices_are_the_available_ones() -> None:
    """``devices()`` draws every available device and nothing else."""
    drawn = set()
    find(devices(), lambda d: drawn.add(d) or drawn == set(available_devices()))
    assert drawn == set(available_devices())


@pytest.mark.skipif(
    not any(is_simulated(d) for d in available_devices()), reason="CUDA devices are real here"
)
def test_simulated_values_have_no_aliases() -> None:
    """The model draws no subclass alias of a value on a simulated device (its allocation
    says so): re-classing a simulated tensor would lose the device it reports."""
    device = next(d for d in available_devices() if is_simulated(d))
    held = allocate(device, (4, 3))
    assert held.allocation.simulated
    assert aliases(held) == []
    assert all(d(held).allocation.simulated for d in derivations(held))
    assert aliases(allocate("cpu", (4, 3))) != []
