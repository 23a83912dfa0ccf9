"""Write a report so that its path always holds a whole file: the old one or the new one.

A run interrupted while writing (Ctrl-C, a full disk, a killed CI job) must not leave
half a JSON document where a complete earlier report was, nor an empty file a
dashboard reads as "no failures". ``write_text_atomic`` writes a temporary file next
to the target (same directory, so the same filesystem) and moves it over the target
with ``os.replace``, which is atomic on POSIX and Windows.

Only a regular file (or a path where nothing is yet) is replaced that way. Anything
else is a stream the user handed us and must keep: ``/dev/null`` or ``/dev/full``
(replacing a device node with a file breaks the machine), a FIFO (its reader waits for
what is written into it), a terminal, and ``/dev/stdout`` or ``/dev/fd/N`` (a shell's
``> log.txt``: replacing log.txt would drop everything printed before the report).
Those are opened for writing, without truncating, and written in place.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from pathlib import Path

__all__ = ["is_stream", "stage", "write_error", "write_text_atomic"]

#: A folder of open file descriptors: /proc/<pid>/fd, which /dev/fd and /proc/self/fd name.
_DESCRIPTORS = re.compile(r"^/proc/[^/]+/fd$")
#: More links than this in a chain is a loop (Linux stops at 40 too).
_MAX_LINKS = 40


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``.

    A regular file or an absent path is replaced atomically, its parent directories made
    first: readers see the previous content until the new one is complete. A symbolic
    link to one is written through (its target is replaced, the link stays); permissions
    are the umask's. Anything else (``is_stream``) is opened for appending and written,
    so that a device, a FIFO or an open descriptor stays what it was.

    Raises ``OSError`` when the text cannot be written (ENOSPC, EPIPE, EACCES...); the
    target then holds what it held before (a stream may have taken part of the text).
    """
    if is_stream(path):
        _write_stream(path, text)
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = stage(target, text)
    try:
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def stage(path: str | os.PathLike[str], text: str, *, exclusive: bool = False) -> Path:
    """``text`` written and flushed to disk in a temporary file beside ``path``, for the
    caller to move over it; a link at ``path`` is written through (the temporary file is
    beside the file it names). ``exclusive``: fail if that temporary name exists. Nothing
    is left behind when the write fails."""
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(
            temporary, "x" if exclusive else "w", encoding="utf-8", errors="backslashreplace"
        ) as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names something other than a regular file or nothing: a device,
    a FIFO, a socket, or any file reached through an open descriptor (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``). A directory is not a stream (nor a file)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent, a dangling link, or unreadable: written as a file
        return False
    if stat.S_ISDIR(mode):
        return False
    return not stat.S_ISREG(mode) or _through_descriptor(os.fspath(path))


def _through_descriptor(path: str) -> bool:
    """Whether following ``path``'s chain of symbolic links passes through a folder of
    file descriptors (where ``realpath`` would name the file behind the descriptor)."""
    return _descriptor_link(path) is not None


def _descriptor_link(path: str) -> str | None:
    """The ``/proc/<pid>/fd/N`` link that ``path``'s chain of symbolic links passes
    through, if any."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(os.path.dirname(current))
        if _DESCRIPTORS.match(folder):
            return os.path.join(folder, os.path.basename(current))
        if not os.path.islink(current):
            return None
        link = os.readlink(current)
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return None


def _own_descriptor(path: str | os.PathLike[str]) -> int | None:
    """N when ``path`` is this process's descriptor N (``/dev/stdout``, ``/dev/fd/N``)."""
    link = _descriptor_link(os.fspath(path))
    if link is None:
        return None
    folder, name = os.path.split(link)
    if os.path.basename(os.path.dirname(folder)) != str(os.getpid()) or not name.isdigit():
        return None
    return int(name)


def _write_stream(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to the stream at ``path``: never truncated, never replaced. Our own
    buffered output goes first. One of our descriptors (``/dev/stdout``) is written
    through a duplicate, which shares its file offset: a report sent to ``/dev/stdout >
    log.txt`` lands after what was printed before it and before what is printed after.
    Anything else is opened for appending."""
    for stream in (sys.stdout, sys.stderr):
        # A closed or broken stream of ours is not the report's problem.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    own = _own_descriptor(path)
    if own is not None:
        with os.fdopen(os.dup(own), "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
        return
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as out:
        out.write(text)


def write_error(error: OSError) -> str:
    """Why a write failed, in words (``No space left on device``), for a one-line error."""
    return error.strerror or str(error) or type(error).__name__
