"""The example database a run of the suite shares: a directory or a Redis server.

``sessionstate fuzz`` saves what HypoFuzz finds there, and ``sessionstate check
--database`` replays it (Hypothesis' reuse phase runs every failure stored under a test's
key before generating anything new). A database is named by one string:

- ``PATH``: a ``DirectoryBasedExampleDatabase`` in that directory;
- ``redis://HOST:PORT[/DB]``: a ``RedisExampleDatabase`` on that server (the ``redis``
  package of the ``[fuzz]`` extra).

Every problem with the name (a missing directory where one may not be made, a URL that
does not parse, a missing extra) is a ``UsageError`` of one line. A server that does not
answer is an ``InfrastructureError`` (a ``UsageError`` too, for callers that only know
those): not the user's mistake, and never the subject's; ``sessionstate check`` and
``fuzz`` exit 4 on it.

A run of the suite uses the database through ``GuardedDatabase``: the backend failing
mid-run (Redis gone, a directory removed or full) fails no test, and is recorded as a
``Fault`` the plugin puts in the results (``"infrastructure"``); the check then exits 4.

Every message, banner and report names a database by ``redact(spec)``: a password in the
URL is ``***`` there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from sessionstate.conformance.subject import UsageError

__all__ = [
    "DATABASE_ENV",
    "EXTRA_HINT",
    "Fault",
    "GuardedDatabase",
    "InfrastructureError",
    "align_keys",
    "backend_errors",
    "check_alive",
    "describe",
    "drain_faults",
    "guarded_database",
    "merge_faults",
    "open_database",
    "redact",
    "suite_rootdir",
]

#: Names the database where no option can (HypoFuzz's worker processes, which collect the
#: suite with the pytest arguments of ``hypothesis fuzz``, read the option; this is for
#: runs started by hand).
DATABASE_ENV = "SESSIONSTATE_DATABASE"
#: What a missing ``[fuzz]`` extra asks for.
EXTRA_HINT = (
    "install sessionstate with its [fuzz] extra, from where you installed it (e.g. "
    'pip install "/path/to/sessionstate[fuzz]"; see docs/fuzzing.md)'
)

#: One database object per name and process: Hypothesis and HypoFuzz compare a test's
#: database with ``settings().database``, and a Redis client opens one connection pool.
_OPENED: dict[tuple[str, bool], ExampleDatabase] = {}


class InfrastructureError(UsageError):
    """The database cannot be reached (a server that does not answer): exit 4, not 2.
    ``error`` is the backend's own exception."""

    def __init__(self, message: str, error: BaseException) -> None:
        super().__init__(message)
        self.error = error


def is_redis(spec: str) -> bool:
    return spec.startswith(("redis://", "rediss://"))


#: ``scheme://user:password@`` (the user may be empty) and ``password=`` in a query.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*):[^\s/]*@")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#\s]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``; the user name,
    host, port and database number are kept (``redis://u:s3cret@h:1/0`` becomes
    ``redis://u:***@h:1/0``, ``redis://:s3cret@h`` becomes ``redis://:***@h``). Text with
    no password in it comes back unchanged. For display only: the URL itself is used as
    the user gave it."""
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
    return _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}***", text)


def describe(spec: str) -> str:
    """How a run names the database: the URL (its password redacted), or the directory's
    absolute path."""
    return redact(spec) if is_redis(spec) else str(Path(spec).expanduser().resolve())


def open_database(spec: str, *, create: bool = False) -> ExampleDatabase:
    """The database ``spec`` names; a directory is made only with ``create``."""
    if not spec:
        raise UsageError("--database: give a directory or redis://HOST:PORT[/DB]")
    key = (spec, create)
    if key not in _OPENED:
        _OPENED[key] = _redis(spec) if is_redis(spec) else _directory(spec, create)
    return _OPENED[key]


def _directory(spec: str, create: bool) -> ExampleDatabase:
    from hypothesis.database import DirectoryBasedExampleDatabase

    if "://" in spec:
        scheme = spec.partition("://")[0]
        raise UsageError(
            f"--database {redact(spec)!r}: unknown scheme {scheme!r}; give a directory or "
            "redis://HOST:PORT[/DB]"
        )
    path = Path(spec).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"--database {spec!r} is not a directory")
    if not path.exists():
        if not create:
            raise UsageError(
                f"--database {spec!r}: no such directory (a database 'sessionstate fuzz' "
                "wrote, or redis://HOST:PORT[/DB])"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(
                f"--database {spec!r}: cannot make it: {error.strerror or error}"
            ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"--database {spec!r}: the directory is not writable")
    return DirectoryBasedExampleDatabase(str(path))


def _redis(spec: str) -> ExampleDatabase:
    shown = redact(spec)
    try:
        parts = urlsplit(spec)
        port = parts.port or 6379
    except ValueError:
        raise UsageError(f"--database {shown!r}: the port is not a number") from None
    path = parts.path.strip("/")
    if not parts.hostname or (path and not path.isdigit()) or parts.query or parts.fragment:
        raise UsageError(f"--database {shown!r}: expected redis://HOST:PORT[/DB]")
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise UsageError(f"--database {shown!r} needs redis: {EXTRA_HINT}") from None
    client = redis.Redis(
        host=parts.hostname,
        port=port,
        db=int(path or 0),
        username=parts.username,
        password=parts.password,
        ssl=parts.scheme == "rediss",
        socket_connect_timeout=5,
    )
    try:
        client.ping()
    except redis.RedisError as error:
        raise InfrastructureError(
            f"infrastructure: cannot reach the example database {shown}: the server does "
            f"not answer: {describe_error(error)}",
            error,
        ) from None
    return RedisExampleDatabase(client)


def describe_error(error: BaseException) -> str:
    """``Type: first line of the message`` (passwords redacted): one line, whatever it holds."""
    lines = str(error).strip().splitlines()
    return redact(f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__)


def backend_errors() -> tuple[type[BaseException], ...]:
    """What a database backend raises when its storage fails: ``OSError`` (a directory:
    removed, full, not writable) and, when the ``redis`` package is there, ``RedisError``
    (``ConnectionError``, ``TimeoutError``, ...)."""
    try:
        from redis import RedisError
    except ImportError:
        return (OSError,)
    return (OSError, RedisError)


def check_alive(database: ExampleDatabase) -> None:
    """Raise ``OSError`` when ``database`` is a directory database whose directory is gone
    (``FileNotFoundError``) or is not one any more (``NotADirectoryError``): its own
    methods then do nothing, silently. A Redis database raises by itself on its next call."""
    if isinstance(database, DirectoryBasedExampleDatabase) and not database.path.is_dir():
        if database.path.exists():
            raise NotADirectoryError(f"the directory {str(database.path)!r} is not one any more")
        raise FileNotFoundError(f"the directory {str(database.path)!r} is gone")


@dataclass
class Fault:
    """How the example database ``database`` (its redacted name) failed in a run: the
    first error (``Type: message``) and how many calls did not reach it."""

    database: str
    error: str
    count: int

    def as_json(self) -> dict[str, Any]:
        return {"database": self.database, "error": self.error, "count": self.count}


_T = TypeVar("_T")


class GuardedDatabase(ExampleDatabase):
    """``backend`` with its failures kept out of the tests that use it.

    Hypothesis calls the database inside a test (the reuse phase's ``fetch``, a failure's
    ``save``): a backend error there would fail the test, and blame the subject for an
    outage. Here the first error (any ``Exception`` the backend raises, or the directory
    database's own silent failures: a directory gone, a value not written) is recorded in
    ``fault``, the
    call does nothing (``fetch`` finds nothing), and so does every later call, without
    reaching the backend (a server that went away is not waited on again, call after
    call). ``drain_faults`` hands what was recorded to the plugin. Never raises an
    ``Exception`` (a ``KeyboardInterrupt`` still goes through).
    """

    def __init__(self, backend: ExampleDatabase, name: str) -> None:
        super().__init__()
        self.backend = backend
        self.name = redact(name)
        self.fault: Fault | None = None
        self._reported = 0

    def __repr__(self) -> str:
        return f"GuardedDatabase({self.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuardedDatabase) and self.backend == other.backend

    def __hash__(self) -> int:
        return hash(self.name)

    def _call(self, call: Callable[[], _T], empty: _T) -> _T:
        if self.fault is not None:
            self.fault.count += 1
            return empty
        try:
            check_alive(self.backend)
            return call()
        except Exception as error:  # the backend's code, never the subject's: not a test's
            self.fault = Fault(self.name, describe_error(error), 1)
            return empty

    def fetch(self, key: bytes) -> Iterable[bytes]:
        # Read whole inside the guard: a Redis fetch is a generator that fails when iterated.
        nothing: list[bytes] = []
        yield from self._call(lambda: list(self.backend.fetch(key)), nothing)

    def save(self, key: bytes, value: bytes) -> None:
        self._call(lambda: self._save(key, value), None)

    def delete(self, key: bytes, value: bytes) -> None:
        self._call(lambda: self.backend.delete(key, value), None)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._call(lambda: self.backend.move(src, dest, value), None)

    def _save(self, key: bytes, value: bytes) -> None:
        """Save; a directory database that swallowed the error (it does, on ``OSError``)
        and wrote nothing is made to say why, by writing there again."""
        self.backend.save(key, value)
        backend = self.backend
        if not isinstance(backend, DirectoryBasedExampleDatabase):
            return
        if not backend._value_path(key, value).exists():
            _write_probe(backend._key_path(key))

    def drain(self) -> Fault | None:
        """The fault's calls not drained before (``None``: none), its first error with them."""
        if self.fault is None or self.fault.count == self._reported:
            return None
        new = self.fault.count - self._reported
        self._reported = self.fault.count
        return Fault(self.fault.database, self.fault.error, new)


def _write_probe(folder: Path) -> None:
    """Raise the ``OSError`` that keeps a file from being written in ``folder`` (made if
    missing); ``OSError`` naming the folder if none does (the save was lost anyway)."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
        pass
    raise OSError(f"a value saved in {str(folder)!r} was not written")


#: One guard per name and process, as ``_OPENED`` (settings compare databases).
_GUARDED: dict[str, GuardedDatabase] = {}


def guarded_database(spec: str) -> GuardedDatabase:
    """``open_database(spec)`` behind a ``GuardedDatabase``: what a run of the suite uses.

    A server that stopped answering since the run checked it (an xdist worker starts
    later) is the first call's fault, like an outage later on: not a usage error."""
    if spec not in _GUARDED:
        try:
            backend: ExampleDatabase = open_database(spec)
        except InfrastructureError as unreachable:
            backend = _Unreachable(unreachable.error)
        _GUARDED[spec] = GuardedDatabase(backend, describe(spec))
    return _GUARDED[spec]


class _Unreachable(ExampleDatabase):
    """A database that could not be opened: every call raises what opening it raised."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def fetch(self, key: bytes) -> Iterable[bytes]:
        raise self.error

    def save(self, key: bytes, value: bytes) -> None:
        raise self.error

    def delete(self, key: bytes, value: bytes) -> None:
        raise self.error


def drain_faults() -> list[dict[str, Any]]:
    """The faults of this process's guarded databases since the last call, as JSON
    (``Fault.as_json``): each database's first error and the calls it cost since."""
    drained = (guard.drain() for guard in _GUARDED.values())
    return [fault.as_json() for fault in drained if fault is not None]


def merge_faults(into: dict[str, dict[str, Any]], faults: Iterable[dict[str, Any]]) -> None:
    """Add ``faults`` (``drain_faults``'s, from any process) to ``into``, keyed by database:
    the first error seen is kept, the counts add up."""
    for fault in faults:
        kept = into.setdefault(fault["database"], {**fault, "count": 0})
        kept["count"] += int(fault["count"])


def suite_rootdir() -> str:
    """The ``--rootdir`` of a run that shares a database: the suite's own folder, so node
    ids (part of HypoFuzz's keys, hence of ``align_keys``'s) are ``test_lru.py::...`` on
    every host, whatever the directory the run starts in and wherever the package lives."""
    return str(Path(__file__).resolve().parent.parent / "suite")


def align_keys(items: list[object], seed: int) -> None:
    """Key every Hypothesis test of ``items`` by its node id, as HypoFuzz keys them, and
    seed it with ``seed`` (as ``@seed(seed)`` would).

    Hypothesis' pytest plugin adds the node id to the database key of a parametrized test
    only; HypoFuzz adds it to every test's. A run that replays what the fuzzer saved must
    look under the fuzzer's keys, so it adds the node id to the others too (the
    parametrized ones get the same key either way). The seed keeps what such a run
    generates after the replay the same from run to run: ``--hypothesis-seed`` would do
    that too, but it also turns the database off.
    """
    for item in items:
        test = getattr(item, "obj", None)
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
        nodeid = getattr(item, "nodeid", None)
        if inner is not None and nodeid:
            inner._hypothesis_internal_add_digest = nodeid.encode()
            test._hypothesis_internal_use_seed = seed  # type: ignore[union-attr]
