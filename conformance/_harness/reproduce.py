"""Re-run one failing test of the suite on the very case Hypothesis found.

Hypothesis prints a failure's case as ``@reproduce_failure(VERSION, BLOB)``, "to add
as a decorator on your test function": for this suite that function lives in
site-packages, and most of its Hypothesis tests are functions nested in the test (or
state machines built inside it), which no decorator outside can reach. Instead the
plugin turns the blob into a ready command::

    sessionstate check mypkg:subject --reproduce test_lru.py::test_manager_machine \\
        --blob 6.170.17:AXicY3BkZHBkdGQAIhAEsxkcmWAIKIlLigEArSEFqg==

which runs that test alone (``--sessionstate-reproduce``) under settings that replay
the blob's case and nothing else (``--sessionstate-blob``, ``load_replay``): an
example database holding only that case, and only the ``reuse`` phase, the one that
runs stored cases. Every Hypothesis test the selected test runs, however it is
written, gets that case first and generates nothing; the one it came from fails
again, anything else it runs does not fit the case and passes. A blob belongs to one
Hypothesis version; a different one is refused before the run.

Without a blob, ``--reproduce`` alone re-runs the test's whole search: under the
derandomized profiles (``quick``, ``ci``, ``triage``) that finds the same case again.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from sessionstate.conformance._harness.short_ids import short_id

__all__ = ["blob_from_notes", "command", "load_replay", "parse_blob"]

#: The profile ``load_replay`` registers on top of the suite's.
REPLAY_PROFILE = "sessionstate-replay"

_HINT = "You can reproduce this test case by temporarily adding @reproduce_failure("
_HINT_END = ") as a decorator on your test function"


def parse_blob(text: str) -> tuple[str, bytes]:
    """``"VERSION:BLOB"`` as ``(version, blob)``; ``ValueError`` if it is not one."""
    version, sep, blob = text.partition(":")
    if not sep or not version or not blob or not blob.isascii():
        raise ValueError(f"{text!r} is not of the form 'HYPOTHESIS_VERSION:BLOB'")
    return version, blob.encode("ascii")


def command(
    target: str,
    test_id: str,
    blob: str | None = None,
    *,
    profile: str = "ci",
    expectations: str | None = None,
    seed: int | None = None,
) -> str:
    """The ``sessionstate check`` command line that re-runs ``test_id`` alone: with
    ``blob``, only its failing case; else the search again (with ``seed``, if any)."""
    words = ["sessionstate", "check", target]
    if profile != "ci":
        words += ["--profile", profile]
    if expectations:
        words += ["--expectations", expectations]
    words += ["--reproduce", short_id(test_id)]
    if blob:
        words += ["--blob", blob]
    elif seed is not None:
        words += ["--seed", str(seed)]
    return shlex.join(words)


def blob_from_notes(error: BaseException, replace: Any = None) -> str:
    """The ``"VERSION:BLOB"`` Hypothesis noted on ``error`` (``""``: none). With
    ``replace`` (``blob -> str``), that "add @reproduce_failure" note becomes its text."""
    import ast

    notes: list[str] = getattr(error, "__notes__", None) or []
    for index, note in enumerate(notes):
        start = note.find(_HINT)
        end = note.find(_HINT_END, start)
        if start < 0 or end < 0:
            continue
        try:  # the decorator's arguments, as Hypothesis wrote them: ('6.170.17', b'...')
            version, data = ast.literal_eval(note[start + len(_HINT) - 1 : end + 1])
            blob = f"{version}:{data.decode('ascii')}"
        except (ValueError, SyntaxError, TypeError, AttributeError):
            continue
        if replace is not None:
            notes[index] = note[:start] + replace(blob) + note[end + len(_HINT_END) :]
        return blob
    return ""


def load_replay(blob: str) -> None:
    """On top of the profile in force, load settings under which every Hypothesis test
    runs the case ``blob`` encodes, and only that: a database that holds just that case
    under every key, the ``reuse`` phase alone (no explicit examples, no generation,
    no shrinking), randomized so that the database is read. ``ValueError`` for a blob
    Hypothesis cannot decode."""
    from hypothesis import Phase, settings
    from hypothesis.core import decode_failure
    from hypothesis.errors import InvalidArgument

    _, data = parse_blob(blob)
    try:
        choices = decode_failure(data)
    except InvalidArgument as error:
        raise ValueError(str(error)) from None
    settings.register_profile(
        REPLAY_PROFILE,
        settings(
            settings.default,
            database=_one_case_database(choices),
            derandomize=False,
            phases=[Phase.reuse],
        ),
    )
    settings.load_profile(REPLAY_PROFILE)


def _one_case_database(choices: Iterable[Any]) -> Any:
    from hypothesis.database import ExampleDatabase, choices_to_bytes

    stored = choices_to_bytes(choices)

    class OneCase(ExampleDatabase):
        """Every key holds the one case; nothing is ever saved or deleted."""

        def fetch(self, key: bytes) -> Iterable[bytes]:
            yield stored

        def save(self, key: bytes, value: bytes) -> None:
            pass

        def delete(self, key: bytes, value: bytes) -> None:
            pass

        def __repr__(self) -> str:
            return "OneCase(<the --blob case>)"

    return OneCase()
