"""Aliases of an allocation that are not views: ``detach()``, ``as_subclass``, ``Parameter``.

Each shares its source's storage (so it counts once with it, SPEC ACCT-2) but is
no view to autograd: ``_is_view()`` is false, ``_base`` is ``None``, and
``x.select(0, 0).detach()`` is contiguous, at offset 0 and smaller than the
storage it keeps alive. An accounting with a fast path for "fresh" tensors
(``numel() * element_size()`` for a contiguous tensor at offset 0 that is no
view) counts such a value short: ACCT-1 says it counts the whole storage.

``PlainSubclass`` is a ``torch.Tensor`` subclass as a user writes one;
``TracedSubclass`` overrides ``__torch_function__`` too, so every method called on
it (``untyped_storage()`` included) runs through that override first; and
``torch.nn.Parameter`` is the subclass ``nn.Module`` registers. Drawn only on real
devices: a simulated CUDA tensor (``_harness.devices``) is itself a subclass,
and re-classing it would lose the device it reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

__all__ = ["PlainSubclass", "TracedSubclass", "alias_steps"]


class PlainSubclass(torch.Tensor):
    """A tensor subclass with nothing of its own."""


class TracedSubclass(torch.Tensor):
    """A tensor subclass with a ``__torch_function__`` of its own, which runs torch's
    (results of views stay ``TracedSubclass``)."""

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: Iterable[type],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        # Tensor.__torch_function__ is unannotated in torch.
        return super().__torch_function__(func, types, args, dict(kwargs or {}))  # type: ignore[no-untyped-call]


def _parameter(tensor: torch.Tensor) -> torch.Tensor:
    # requires_grad=False: an integer, bool or quantized Parameter cannot require grad.
    return torch.nn.Parameter(tensor, requires_grad=False)


#: (prefix, suffix, function): the expression of the alias is prefix + expr + suffix.
alias_steps: tuple[tuple[str, str, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    ("", ".detach()", lambda t: t.detach()),
    ("", ".as_subclass(PlainSubclass)", lambda t: t.as_subclass(PlainSubclass)),
    ("", ".as_subclass(TracedSubclass)", lambda t: t.as_subclass(TracedSubclass)),
    ("torch.nn.Parameter(", ", requires_grad=False)", _parameter),
)
