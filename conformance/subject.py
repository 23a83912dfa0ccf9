"""``Subject``: what an implementer hands the suite, and how a TARGET string is loaded."""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionstate.conformance._harness.applicability import NOT_APPLICABLE

__all__ = [
    "CAPABILITIES",
    "DEFAULT_TARGET",
    "Subject",
    "UsageError",
    "check_fields",
    "load_subject",
    "typed_specs",
]

#: What ``sessionstate check`` and the plugin test when no target is named: the reference.
DEFAULT_TARGET = "sessionstate.fixtures.reference_subject:subject"

#: Optional features a subject may declare; clauses that need one say so in SPEC.md.
CAPABILITIES = frozenset({"threadsafe", "admission", "require_session"})


class UsageError(Exception):
    """The suite was misused (bad target, unknown capability, bad expectations).

    Reported as one line and exit status 2, never as a clause failure.
    """


@dataclass(frozen=True, repr=False)
class Subject:
    """An implementation under test.

    Every hook is optional except ``name``; a missing hook skips only the
    clauses that need it, with a reason naming the field.

    * ``manager_factory(max_sessions=, byte_budget=, lock_factory=)`` builds a
      manager (``lock_factory`` is omitted when a test does not need it).
      ``None``: the manager clauses are not applicable; the OBJ and ADAPT
      clauses host the subject's objects and adapters on the reference manager.
    * ``config_resolver(enable=, max_sessions=) -> (bool, int)``: the subject's
      ``resolve_session_state_config``; ``None`` skips the ENV clauses.
    * ``accounting(value, seen) -> dict[str, int]``: the subject's
      ``device_bytes``; ``None`` skips the clauses that call it directly.
    * ``buffer_factory()`` returns an allocated ``StateObject`` that accepts
      ``append(payload)`` and counts what it holds; ``None`` uses a suite-owned
      buffer counting through ``accounting`` (no reference object ever enters
      the subject's sessions).
    * ``capabilities``: declared optional features, from ``CAPABILITIES``.
    * ``devices``: the devices to allocate on (``cpu`` is always kept), e.g.
      ``("cpu", "meta")`` for code that cannot take a simulated CUDA tensor;
      ``None``: every device the machine has. ``--devices`` wins over it. The
      devices left out are named in the report header and the JSON results.
    * ``state_objects`` and ``adapters``: specs for custom StateObjects and
      model adapters (the OBJ and ADAPT groups).
    """

    name: str
    manager_factory: Callable[..., Any] | None = None
    config_resolver: Callable[..., tuple[bool, int]] | None = None
    accounting: Callable[[object, set[Any]], dict[str, int]] | None = None
    buffer_factory: Callable[[], Any] | None = None
    capabilities: frozenset[str] = frozenset()
    devices: Sequence[str] | None = None
    state_objects: Sequence[Any] = ()
    adapters: Sequence[Any] = ()

    def __repr__(self) -> str:
        # Short, because Hypothesis prints it at the top of every failing case: the name,
        # and where its manager comes from (the target's code), not every hook.
        factory = self.manager_factory
        if factory is None:
            return f"Subject({self.name!r})"
        where = getattr(factory, "__qualname__", None) or type(factory).__qualname__
        module = getattr(factory, "__module__", None)
        return f"Subject({self.name!r}, manager_factory={module + '.' if module else ''}{where})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis' pretty printer (its failing-case lines) shows ``repr``, not every
        field of the dataclass."""
        printer.text(repr(self))

    def __post_init__(self) -> None:
        """``capabilities`` is checked (an iterable of known names) and frozen here; the
        other fields are checked by ``check_fields`` when the subject is loaded, so that
        a module holding one broken subject still serves its others."""
        _check_names(self.name, "capabilities", self.capabilities, "an iterable of str")
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))
        unknown = sorted(self.capabilities - CAPABILITIES)
        if unknown:
            raise UsageError(
                f"subject {self.name!r} declares unknown capability {unknown[0]!r}"
                f"{_did_you_mean(unknown[0], CAPABILITIES)}; known: {', '.join(sorted(CAPABILITIES))}"
            )

    def make_manager(self, **kwargs: Any) -> Any:
        """A fresh manager from ``manager_factory`` (or the reference one)."""
        if self.manager_factory is None:
            from sessionstate.reference import SessionStateManager

            return SessionStateManager(**kwargs)
        return self.manager_factory(**kwargs)

    def make_buffer(self) -> Any:
        """A fresh allocated buffer from ``buffer_factory``, else a ``SuiteBuffer`` that
        counts through the subject's ``accounting``.

        Never a reference object: its accounting would mix keys of its own into the
        subject's ``seen`` sets (see ``suite_buffer``). With neither hook the test
        is skipped as not applicable.
        """
        if self.buffer_factory is not None:
            return self.buffer_factory()
        if self.accounting is None:
            from sessionstate.conformance._harness.supervision import own_outcomes

            own_outcomes.skip(
                f"{NOT_APPLICABLE}: subject {self.name!r} has neither buffer_factory nor "
                "accounting, so the suite has no buffer to put into its sessions"
            )
        from sessionstate.conformance._harness.suite_buffer import SuiteBuffer

        buffer = SuiteBuffer(self.accounting)
        buffer.allocate()
        return buffer


#: The hooks: each None or a callable.
_HOOKS = ("manager_factory", "config_resolver", "accounting", "buffer_factory")


def check_fields(subject: Subject) -> None:
    """``UsageError`` for the first field of ``subject`` whose type is wrong: one line
    naming the field, what it holds and what it needs, not a ``TypeError`` deep in a test
    (nor a clause failure). ``load_subject`` calls it on every subject it loads."""
    from sessionstate.conformance._report.text import short_repr

    name = subject.name
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"Subject name={_shown(name)}: needs a non-empty str")
    for hook in _HOOKS:
        value = getattr(subject, hook)
        if value is not None and not callable(value):
            raise UsageError(
                f"subject {name!r}: {hook} is a {type(value).__name__}, not callable "
                f"({short_repr(value, 80)}): it needs a callable or None"
            )
    if subject.devices is not None:
        _check_names(name, "devices", subject.devices, "None or a sequence of device names")
    for field_name in ("state_objects", "adapters"):
        value = getattr(subject, field_name)
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise UsageError(
                f"subject {name!r}: {field_name}={_shown(value)}: needs a sequence (a tuple "
                "or list) of specs"
            )


def _check_names(subject: object, field_name: str, value: object, needs: str) -> None:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise UsageError(f"subject {subject!r}: {field_name}={_shown(value)}: needs {needs}")
    for entry in value:
        if not isinstance(entry, str) or not entry.strip():
            raise UsageError(
                f"subject {subject!r}: {field_name} holds {_shown(entry)}: needs {needs}"
            )


def _shown(value: object) -> str:
    """``value`` for a one-line error: bounded (``text.short_repr``), with its type."""
    from sessionstate.conformance._report.text import short_repr

    return f"{short_repr(value, 80)} (a {type(value).__name__})"


def _did_you_mean(word: str, choices: Sequence[str] | frozenset[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load_subject(target: str) -> Subject:
    """Resolve ``pkg.module:attr`` to a ``Subject``.

    ``attr`` may be a ``Subject``, a zero-argument callable returning one, or a
    manager class (wrapped as ``Subject(name=attr, manager_factory=cls)``).
    Raises ``UsageError`` with one line naming the problem.

    The module is imported as ``python -m`` would import it: the current directory
    is put first on ``sys.path`` when it is not on it already (the ``sessionstate``
    console script and ``pytest --pyargs`` leave it off), so the
    ``conformance_subject.py`` that ``sessionstate init`` writes is found from the
    directory it was written to. It stays there for the rest of the process, for
    the imports the subject makes later.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target {target!r} is not of the form 'pkg.module:attr'")
    _put_cwd_on_path()
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(
            f"cannot import module {module_name!r} of target {target!r}: {error}"
        ) from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        names = [name for name in vars(module) if not name.startswith("_")]
        raise UsageError(
            f"module {module_name!r} has no attribute {attr!r}{_did_you_mean(attr, names)}"
        ) from None
    subject = _as_subject(obj, attr, target)
    check_fields(subject)
    return subject


def _put_cwd_on_path() -> None:
    """The current directory first on ``sys.path``, unless an entry already names it
    (``python -m`` puts the directory itself there, ``python -c`` puts ``""``)."""
    try:
        cwd = os.getcwd()
    except OSError:  # the directory was removed under us: nothing to import from it
        return
    for entry in sys.path:
        try:
            if os.path.samefile(entry or os.curdir, cwd):
                return
        except OSError:  # a missing or unreadable entry names no directory
            continue
    sys.path.insert(0, cwd)
    importlib.invalidate_caches()


def _as_subject(obj: object, attr: str, target: str) -> Subject:
    if isinstance(obj, Subject):
        return obj
    if inspect.isclass(obj) and callable(getattr(obj, "get_or_create_session", None)):
        return Subject(name=attr, manager_factory=obj)
    if callable(obj) and not inspect.isclass(obj):
        produced = obj()
        if isinstance(produced, Subject):
            return produced
        raise UsageError(
            f"target {target!r} is a callable that returned {type(produced).__name__}, not a Subject"
        )
    raise UsageError(
        f"target {target!r} is a {type(obj).__name__}, not a Subject, a callable returning one, "
        "or a manager class"
    )


def typed_specs(subject: Subject, field_name: str, kind: type) -> list[Any]:
    """The entries of ``subject.<field_name>``, each checked to be a ``kind``.

    A wrong entry is a misuse of the suite (``UsageError``), not a clause failure.
    """
    specs = list(getattr(subject, field_name))
    for index, spec in enumerate(specs):
        if not isinstance(spec, kind):
            raise UsageError(
                f"subject {subject.name!r}: {field_name}[{index}] is a "
                f"{type(spec).__name__}, not a {kind.__name__}"
            )
    return specs
