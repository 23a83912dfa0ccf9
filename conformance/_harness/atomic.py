"""Write a report so that its path always holds a whole file: the old one or the new one.

A run interrupted while writing (Ctrl-C, a full disk, a killed CI job) must not leave
half a JSON document where a complete earlier report was, nor an empty file a
dashboard reads as "no failures". ``write_text_atomic`` writes a temporary file next
to the target (same directory, so the same filesystem) and moves it over the target
with ``os.replace``, which is atomic on POSIX and Windows.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, creating its parent directories; readers see
    the previous content until the new one is complete. A symbolic link is written
    through (its target is replaced, the link stays); permissions are the umask's."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
