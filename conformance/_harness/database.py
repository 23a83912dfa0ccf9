"""The example database a run of the suite shares: a directory or a Redis server.

``sessionstate fuzz`` saves what HypoFuzz finds there, and ``sessionstate check
--database`` replays it (Hypothesis' reuse phase runs every failure stored under a test's
key before generating anything new). A database is named by one string:

- ``PATH``: a ``DirectoryBasedExampleDatabase`` in that directory;
- ``redis://HOST:PORT[/DB]``: a ``RedisExampleDatabase`` on that server (the ``redis``
  package of the ``[fuzz]`` extra).

Every problem with the name (a missing directory where one may not be made, a URL that
does not parse, a server that does not answer, a missing extra) is a ``UsageError`` of one
line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sessionstate.conformance.subject import UsageError

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

__all__ = [
    "DATABASE_ENV",
    "EXTRA_HINT",
    "align_keys",
    "describe",
    "open_database",
    "suite_rootdir",
]

#: Names the database where no option can (HypoFuzz's worker processes, which collect the
#: suite with the pytest arguments of ``hypothesis fuzz``, read the option; this is for
#: runs started by hand).
DATABASE_ENV = "SESSIONSTATE_DATABASE"
#: What a missing ``[fuzz]`` extra asks for.
EXTRA_HINT = "pip install 'sessionstate[fuzz]'"

#: One database object per name and process: Hypothesis and HypoFuzz compare a test's
#: database with ``settings().database``, and a Redis client opens one connection pool.
_OPENED: dict[tuple[str, bool], ExampleDatabase] = {}


def is_redis(spec: str) -> bool:
    return spec.startswith(("redis://", "rediss://"))


def describe(spec: str) -> str:
    """How a run names the database: the URL, or the directory's absolute path."""
    return spec if is_redis(spec) else str(Path(spec).expanduser().resolve())


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
            f"--database {spec!r}: unknown scheme {scheme!r}; give a directory or "
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
    parts = urlsplit(spec)
    try:
        port = parts.port or 6379
    except ValueError:
        raise UsageError(f"--database {spec!r}: the port is not a number") from None
    path = parts.path.strip("/")
    if not parts.hostname or (path and not path.isdigit()) or parts.query or parts.fragment:
        raise UsageError(f"--database {spec!r}: expected redis://HOST:PORT[/DB]")
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise UsageError(f"--database {spec!r} needs redis: {EXTRA_HINT}") from None
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
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f"--database {spec!r}: the server does not answer: {first}") from None
    return RedisExampleDatabase(client)


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
