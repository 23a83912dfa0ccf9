"""The devices the suite allocates on, and the allocations it hands a subject.

Contract: every tensor or array the suite gives a subject is made here, by
``allocate`` (or ``borrow``), which records the one allocation it pins as a
``_model.memory.Allocation`` (device, exact size from ``_model.dtypes``, the Python
that makes it); what bytes any set of such values must count is the pure model's
business (``_model.memory.expected_bytes``), never this module's, nor any
accounting code's.

Devices: ``cpu`` and ``meta`` always (every meta storage and every zero-size
storage has data pointer 0, which is what catches address-keyed dedup,
ACCT-3); ``cuda:N`` for real GPUs; without a GPU, ``cuda:0``/``cuda:1`` are
*simulated* by host memory that reports a CUDA device, and behave as a real
allocator does where accounting can tell: each live allocation has its own
distinct non-zero address (zero-size ones 0), the address of a freed one goes to
the next allocation of its size at once, as a caching allocator's does
(``_harness.caching_allocator``), views share their base's storage object, the
tensor *and its storage* report ``cuda:N``, results of operations stay on the
device of their inputs, and ``to``/``cpu`` copy across devices.
Building them imports nothing beyond torch (no ``torch._dynamo``).

The run's devices are this machine's (``machine_devices``), or the selection
``select_devices`` keeps for the rest of the process (``--devices``,
``Subject(devices=...)``); the strategies read ``available_devices()`` once, at import.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from typing import Any, ClassVar, cast

import numpy as np
import torch

from sessionstate.conformance._harness import caching_allocator
from sessionstate.conformance._model.dtypes import (
    KINDS,
    QUANTIZED_DEVICES,
    make_tensor,
    source_of,
    storage_nbytes,
)
from sessionstate.conformance._model.memory import Allocation, Held

__all__ = [
    "allocate",
    "available_devices",
    "borrow",
    "borrowing_available",
    "is_simulated",
    "left_out_devices",
    "machine_devices",
    "select_devices",
    "simulated_cuda_available",
]

#: Labels of new allocations (``buf3``, ``arr4``, ``brw5``), unique in the process.
_labels = itertools.count()


#: The CUDA devices simulated where no GPU is visible.
_SIMULATED = ("cuda:0", "cuda:1")


class _SimulatedStorage(torch.UntypedStorage):
    """Host memory standing in for one allocation on a simulated CUDA device.

    A real (CPU) storage whose Python object says which device it stands for:
    torch keeps a storage's Python object for as long as the storage lives, so
    every ``untyped_storage()`` of every view returns this same object, and its
    finalizer runs when the storage is freed: its memory then goes to the
    device's caching allocator.
    """

    __slots__ = ()
    simulated_device: ClassVar[torch.device]

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self.simulated_device

    def clone(self) -> torch.UntypedStorage:
        # torch's UntypedStorage constructor is unannotated.
        copy = torch.UntypedStorage(self.nbytes()).copy_(self)  # type: ignore[no-untyped-call]
        copy.__class__ = type(self)
        caching_allocator.reuse(copy)
        return copy

    def __del__(self) -> None:
        # At interpreter exit the module may be half torn down: the memory is freed anyway.
        with contextlib.suppress(Exception):
            caching_allocator.release(self)


class _SimulatedTensor(torch.Tensor):
    """A tensor over host memory that reports a simulated ``cuda:N`` device.

    Operations run on the host copy; what they return is put back on the
    device of their inputs (a new storage is marked as that device's), and
    mixing two simulated devices (or one and ``meta``) raises as on real GPUs.
    ``to``/``cpu``/``cuda`` copy across devices; ``numpy()`` refuses.
    """

    simulated_device: ClassVar[torch.device]
    storage_class: ClassVar[type[_SimulatedStorage]]

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self.simulated_device

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    def get_device(self) -> int:
        return int(self.simulated_device.index or 0)

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        if id(self) in memo:
            return cast(torch.Tensor, memo[id(self)])  # what an earlier call stored for self
        storage = self.untyped_storage()
        copied = memo.get(id(storage))
        if copied is None:  # views deep-copied together share one new storage, as in torch
            # UntypedStorage.clone is unannotated in torch (this is _SimulatedStorage.clone).
            copied = memo[id(storage)] = storage.clone()  # type: ignore[no-untyped-call]
        with torch._C.DisableTorchFunctionSubclass():
            plain = torch.empty(0, dtype=self.dtype)
            plain.set_(copied, self.storage_offset(), self.size(), self.stride())
            plain.requires_grad_(self.requires_grad)
        plain.__class__ = type(self)
        memo[id(self)] = plain
        return plain

    # Tensor.__repr__ is unannotated, and mypy reads its keyword-only parameter without
    # its name: the same signature is then neither a compatible override nor callable.
    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        text: str = super().__repr__(tensor_contents=tensor_contents)  # type: ignore[no-untyped-call, call-arg]
        return "tensor" + text.removeprefix(type(self).__name__)  # as torch prints a CUDA one

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: Iterable[type],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        kwargs = {} if kwargs is None else dict(kwargs)
        special = _SPECIAL.get(func)
        if special is not None:
            return special(cls, args, kwargs)
        if func not in _CROSS_DEVICE:
            _check_one_device(cls, args, kwargs)
        into: type[_SimulatedTensor] | None = cls
        if kwargs.get("device") is not None:  # new_zeros(..., device=...), zeros_like, ...
            into = _simulated_class(kwargs["device"])
            if into is not None:
                kwargs["device"] = "cpu"
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
        if into is None or func in _NOT_WRAPPED:
            return result
        return _on_device(result, into, args, kwargs)


def _tensors(args: Iterable[Any], kwargs: Mapping[str, Any]) -> Iterator[torch.Tensor]:
    """The tensors among the arguments, and in list or tuple arguments (``torch.cat``)."""
    for value in itertools.chain(args, kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, torch.Tensor))


def _check_one_device(
    cls: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    """Raise as torch does for tensors on two devices (host tensors are let through)."""
    for tensor in _tensors(args, kwargs):
        if isinstance(tensor, _SimulatedTensor):
            other = tensor.simulated_device
        elif tensor.device.type == "meta":
            other = tensor.device
        else:
            continue
        if other != cls.simulated_device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, {cls.simulated_device} and {other}!"
            )


def _on_device(
    result: Any, into: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> Any:
    """``result`` of an operation on simulated tensors, put on ``into``'s device."""
    if isinstance(result, (tuple, list)):
        return type(result)(_on_device(r, into, args, kwargs) for r in result)
    if not isinstance(result, torch.Tensor) or isinstance(result, _SimulatedTensor):
        return result  # not a tensor, or the input itself (in-place operations)
    if result.device.type != "cpu":
        return result  # e.g. meta: never on the simulated device
    hosts = [t for t in _tensors(args, kwargs) if not isinstance(t, _SimulatedTensor)]
    if any(result is t for t in hosts):
        return result  # a host tensor itself (host.copy_(simulated))
    if result.layout is torch.strided:
        storage = result.untyped_storage()
        if type(storage) is torch.UntypedStorage:
            if any(_shares(t, storage) for t in hosts):
                return result  # a view of a host tensor (host.view_as(simulated))
            storage.__class__ = into.storage_class  # a new allocation, on the device
            caching_allocator.reuse(storage)
    # A new Python object, so its class can change: no alias is made, so ``_base``,
    # autograd and the storage's object are exactly what torch made.
    result.__class__ = into
    return result


def _shares(tensor: torch.Tensor, storage: torch.UntypedStorage) -> bool:
    return tensor.layout is torch.strided and tensor.untyped_storage() is storage


def _to(cls: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``Tensor.to``: a copy when the device changes, as between real devices."""
    tensor, *rest = args
    target = kwargs.pop("device", None)
    if rest and isinstance(rest[0], torch.Tensor):
        other = rest.pop(0)
        target = other.device
        rest.insert(0, other.dtype)
    elif rest and isinstance(rest[0], (str, int, torch.device)):
        target = rest.pop(0)
    return _moved(cls, tensor, target, rest, kwargs)


def _cpu(cls: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _moved(cls, args[0], "cpu", [], kwargs)


def _cuda(cls: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensor, *rest = args
    target = kwargs.pop("device") if "device" in kwargs else (rest.pop(0) if rest else None)
    if target is None or isinstance(target, int):
        target = f"cuda:{target or 0}"  # None: the current device
    return _moved(cls, tensor, target, rest, kwargs)


def _moved(
    cls: type[_SimulatedTensor],
    tensor: torch.Tensor,
    target: object,
    rest: list[Any],
    kwargs: dict[str, Any],
) -> torch.Tensor:
    """``tensor`` (simulated, or a host tensor with a simulated one as its target) on
    ``target`` (``None``: where it is), converted by ``rest`` and ``kwargs``."""
    source = tensor.device
    device = source if target is None else _device(target)
    into = _simulated_class(device) if device.type == "cuda" else None
    if device.type == "cuda" and into is None:
        raise RuntimeError("CUDA error: invalid device ordinal")
    with torch._C.DisableTorchFunctionSubclass():
        if device.type != "cpu" and into is None:  # meta
            return torch.Tensor.to(tensor, device, *rest, **kwargs)
        if source.type == "meta":  # nothing to copy out of: torch says so
            return torch.Tensor.to(tensor, "cpu", *rest, **kwargs)
        result = torch.Tensor.to(tensor, *rest, **kwargs)  # dtype and copy, in host memory
        if device != source and _shares(result, tensor.untyped_storage()):
            result = result.clone()  # another device: another allocation
    if into is None:
        return result
    return cast(torch.Tensor, _on_device(result, into, (), {}))  # a tensor in, a tensor out


def _no_numpy(cls: type[_SimulatedTensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise TypeError(
        f"can't convert {cls.simulated_device} device type tensor to numpy. "
        "Use Tensor.cpu() to copy the tensor to host memory first."
    )


def _device(target: object) -> torch.device:
    if isinstance(target, int):
        return torch.device("cuda", target)
    device: torch.device = torch.device(target)  # type: ignore[call-overload]
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", 0)  # the current device
    return device


def _simulated_class(target: object) -> type[_SimulatedTensor] | None:
    """The tensor class of simulated ``target``; ``None`` for any other device."""
    device = str(_device(target))
    return _simulated_classes(device) if device in _SIMULATED else None


@cache
def _simulated_classes(device: str) -> type[_SimulatedTensor]:
    index = torch.device(device).index
    storage_class = type(
        f"SimulatedCuda{index}Storage",
        (_SimulatedStorage,),
        {"__slots__": (), "simulated_device": torch.device(device), "__module__": __name__},
    )
    return type(
        f"SimulatedCuda{index}Tensor",
        (_SimulatedTensor,),
        {
            "simulated_device": torch.device(device),
            "storage_class": storage_class,
            "__module__": __name__,
        },
    )


_SPECIAL: dict[Callable[..., Any], Callable[..., Any]] = {
    torch.Tensor.to: _to,
    torch.Tensor.cpu: _cpu,
    torch.Tensor.cuda: _cuda,
    torch.Tensor.numpy: _no_numpy,
    torch.Tensor.__array__: _no_numpy,
    torch.Tensor.device.__get__: lambda cls, args, kwargs: cls.simulated_device,
    # Getset descriptors at runtime, which torch's stubs declare as plain bool attributes.
    torch.Tensor.is_cuda.__get__: lambda cls, args, kwargs: True,  # type: ignore[attr-defined]
    torch.Tensor.is_cpu.__get__: lambda cls, args, kwargs: False,  # type: ignore[attr-defined]
}
#: Copies may cross devices, as on real GPUs.
_CROSS_DEVICE = frozenset({torch.Tensor.copy_, torch.Tensor.__setitem__})
#: Field reads, whose tensor keeps its identity (``t._base``), as torch's own default.
_NOT_WRAPPED = frozenset(torch.overrides.get_default_nowrap_functions())


def _simulated(plain: torch.Tensor, device: str) -> torch.Tensor:
    """``plain`` (a new host tensor, or one over a new host storage) on simulated ``device``."""
    cls = _simulated_classes(device)
    if plain.layout is torch.strided:
        storage = plain.untyped_storage()
        storage.__class__ = cls.storage_class
        caching_allocator.reuse(storage)  # a block of its size freed last, if one is kept
    plain.__class__ = cls
    return plain


@cache
def simulated_cuda_available() -> bool:
    """Whether host memory can stand in for CUDA devices on this torch (views included)."""
    try:
        made = _simulated(torch.zeros(2), "cuda:1")
        view = made.view(-1)
        joined = torch.cat([made, view])
    except Exception:
        return False
    storage = view.untyped_storage()
    return (
        str(view.device) == "cuda:1"
        and storage is made.untyped_storage()
        and str(storage.device) == "cuda:1"
        and str(joined.untyped_storage().device) == "cuda:1"
    )


@cache
def machine_devices() -> tuple[str, ...]:
    """``cpu``, ``meta``, then real or simulated ``cuda:N`` devices: all this machine has."""
    devices = ["cpu", "meta"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    elif simulated_cuda_available():
        devices += ["cuda:0", "cuda:1"]
    return tuple(devices)


#: The devices a run allocates on, when narrowed (``select_devices``); None: all of them.
_SELECTED: tuple[str, ...] | None = None


def select_devices(names: Iterable[str] | None) -> None:
    """Allocate only on ``names`` (``--devices``, ``Subject(devices=...)``); None: all.

    For a subject that cannot run on some device (code that moves tensors with
    ``.to(device)`` cannot take a simulated CUDA tensor). Called before the suite's
    modules are imported: their strategies read ``available_devices()`` once.
    ``cpu`` is always kept, since NumPy values live there. Raises ``ValueError``
    naming an unknown device.
    """
    global _SELECTED
    if names is None:
        _SELECTED = None
        return
    wanted = list(dict.fromkeys(names))
    known = machine_devices()
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"unknown device {unknown[0]!r}; this machine has {', '.join(known)}")
    _SELECTED = tuple(d for d in known if d in wanted or d == "cpu")


def available_devices() -> tuple[str, ...]:
    """The devices this run allocates on: ``machine_devices()``, or the selection."""
    return machine_devices() if _SELECTED is None else _SELECTED


def left_out_devices() -> tuple[str, ...]:
    """The machine's devices the selection leaves out (named in the header and report)."""
    return tuple(d for d in machine_devices() if d not in available_devices())


def is_simulated(device: str) -> bool:
    """Whether ``device`` is a simulated stand-in for a CUDA device here."""
    return device.startswith("cuda") and not torch.cuda.is_available()


def allocate(
    device: str,
    shape: tuple[int, ...],
    dtype: str = "float32",
    numpy: bool = False,
    fill: int = 0,
) -> Held:
    """A new allocation on ``device`` (a NumPy owner array on ``cpu`` when ``numpy``),
    every element ``fill``.

    Any dimension may be 0: zero-size storages have data pointer 0 too (ACCT-3).
    The strategies draw ``fill`` (0 to 100, exact in every dtype here), so that two
    payloads of one shape and dtype differ in content: an object that returns the
    wrong one of them, or keeps the wrong end of a ring, is then seen bit for bit
    (OBJ-9, ADAPT), simulated CUDA devices included. Meta tensors have no values to
    tell apart.
    """
    shape = tuple(int(n) for n in shape)
    label = f"{'arr' if numpy else 'buf'}{next(_labels)}"
    if numpy:
        nbytes = math.prod(shape) * KINDS[dtype].itemsize
        array = np.full(shape, fill, dtype=dtype)
        source = _spelled("np", shape, fill, f"dtype={dtype!r}")
        return Held(array, Allocation(label, "cpu", nbytes, array, source=source), label)
    if KINDS[dtype].make == "quantized" and device not in QUANTIZED_DEVICES:
        raise ValueError(f"allocate({device!r}, dtype={dtype!r}): quantized on cpu only")
    simulated = is_simulated(device)
    tensor = make_tensor("cpu" if simulated else device, shape, dtype, fill)
    if simulated:
        tensor = _simulated(tensor, device)
    source = source_of(device, shape, dtype, fill)
    nbytes = storage_nbytes(shape, dtype)
    return Held(tensor, Allocation(label, device, nbytes, tensor, simulated, source), label)


def _spelled(module: str, shape: tuple[int, ...], fill: int, keywords: str) -> str:
    """The replayable line that makes an allocation: ``zeros`` once the fill shrank to 0
    (the shortest), ``full`` otherwise."""
    head = f"{module}.full({shape!r}, {fill}, " if fill else f"{module}.zeros({shape!r}, "
    return f"{head}{keywords})"


@cache
def borrowing_available() -> bool:
    """Whether this torch can build a storage over memory it did not allocate, on ``meta``."""
    return hasattr(torch._C, "_construct_storage_from_data_pointer")


def borrow(device: str, numel: int) -> Held:
    """A float32 tensor over a storage torch only borrows, on ``meta`` or a simulated ``cuda:N``.

    Like a CUDA tensor imported with ``torch.from_dlpack`` (from CuPy or JAX), its
    storage is not resizable. On ``meta`` it has data pointer 0 and no memory behind
    it; on a simulated ``cuda:N`` it is host memory NumPy owns, at its own non-zero
    address (0 when ``numel`` is 0), as a CuPy array's is. Needs
    ``borrowing_available()``; ``cuda:N`` only where simulated.
    """
    nbytes = numel * KINDS["float32"].itemsize
    make = torch._C._construct_storage_from_data_pointer
    label = f"brw{next(_labels)}"
    if device == "meta":
        storage = make(0, torch.device("meta"), nbytes)
        # set_ resizes a non-empty meta tensor's storage, which a borrowed one refuses.
        tensor = torch.empty(0, device="meta").set_(storage, 0, (0,), (1,))
        tensor = tensor.as_strided((numel,), (1,))
        make_expr = (
            f"torch._C._construct_storage_from_data_pointer(0, torch.device('meta'), {nbytes})"
        )
        source = f"torch.empty(0, device='meta').set_({make_expr}, 0, (0,), (1,))"
        source += f".as_strided(({numel},), (1,))"
        return Held(tensor, Allocation(label, device, nbytes, tensor, source=source), label)
    if not is_simulated(device):
        raise ValueError(f"borrow({device!r}): only meta and simulated cuda devices")
    if numel:  # the storage keeps the array alive, as torch.from_dlpack keeps CuPy's
        host = torch.from_numpy(np.zeros(numel, dtype=np.float32))
    else:  # NumPy gives even an empty array an address; a GPU allocator gives 0
        host = torch.empty(0).set_(make(0, torch.device("cpu"), 0), 0, (0,), (1,))
    simulated = _simulated(host, device)
    # The real-GPU equivalent (under ``cupy.cuda.Device(N)``), for failure messages.
    source = f"torch.from_dlpack(cupy.zeros({numel}, dtype=cupy.float32))"
    return Held(simulated, Allocation(label, device, nbytes, simulated, True, source), label)
