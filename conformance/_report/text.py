"""Subject-supplied text made safe to show: one function per output format.

A subject's name, the values its code returned, its exceptions' messages and its
expectation reasons reach our terminal table, the Markdown summary and matrix, the HTML
page and the JUnit XML. None of them may forge output: an ``ESC[32m`` plus a CR could
print a fake green ``verdict: CONFORMANT`` line, a newline could add table rows, a
``<img onerror>`` could run in a rendered Markdown page. So:

* ``terminal_text``: every control character (C0, DEL, C1), the line and paragraph
  separators and the bidirectional overrides and isolates become visible escapes
  (``\\x1b``, ``\\n``, ``\\u202e``); the result is one line that shows what was sent.
* ``markdown_cell``: ``terminal_text``, then Markdown's and HTML's specials escaped so
  that the text renders as itself, on one line, inside a table cell (``|`` never
  splits the cell).
* ``html_text``: ``terminal_text``'s escapes but for newlines and tabs, then
  ``html.escape`` (quotes included).
* JUnit XML is escaped by ElementTree; ``junit._clean`` drops what XML cannot hold.

``short_repr`` bounds how much of a subject's value a message quotes: a ``stats()`` of a
million keys is shown by its first entries and a count, never rendered whole.
"""

from __future__ import annotations

import html
import itertools
import re
import reprlib
from typing import Any

__all__ = ["REPR_LIMIT", "html_text", "markdown_cell", "short_repr", "terminal_text"]

#: Characters shown as escapes: C0 controls, DEL, C1 controls, the line and paragraph
#: separators, the Arabic letter mark, LRM/RLM, and the bidi embeddings, overrides and
#: isolates (U+202A..U+202E, U+2066..U+2069) that reorder what a terminal shows, and lone
#: surrogates (U+D800..U+DFFF), which no UTF-8 stream or file can hold.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_IN_HTML = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Markdown's specials escaped with a backslash (every ASCII punctuation may be).
_MARKDOWN = re.compile(r"([\\`*_\[\]|#~!])")
#: How many characters of a subject's value a message quotes, at most (about).
REPR_LIMIT = 240


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_text(value: object) -> str:
    """``str(value)`` on one line, every character that could move the cursor, colour,
    erase or reorder the output replaced by a visible escape."""
    return _UNSAFE.sub(_escape, str(value))


def markdown_cell(value: object) -> str:
    """``value`` as Markdown that renders as the text itself, on one line, safe inside a
    table cell and outside one: no HTML, no link, no emphasis, no code span, no ``|``."""
    text = _MARKDOWN.sub(r"\\\1", terminal_text(value))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def html_text(value: object) -> str:
    """``value`` as HTML text or attribute value: ``terminal_text``'s escapes but for
    newlines and tabs (a note's lines are kept, in a ``pre-wrap`` block, and break no
    structure there), then ``html.escape``, quotes included."""
    return html.escape(_UNSAFE_IN_HTML.sub(_escape, str(value)), quote=True)


class _ShortRepr(reprlib.Repr):
    """``reprlib.Repr`` that never sorts or walks a whole mapping or set: the first
    entries in their own order, then how many more there are."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 3, 8, 8, 8
        self.maxset, self.maxfrozenset, self.maxdeque, self.maxarray = 8, 8, 8, 8
        self.maxstring, self.maxlong, self.maxother = limit, limit, limit

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        entries = [
            f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
            for k, v in itertools.islice(x.items(), self.maxdict)
        ]
        more = len(x) - len(entries)
        if more:
            entries.append(f"... {more:,} more")
        return "{" + ", ".join(entries) + "}"

    def _unordered(self, x: Any, level: int, left: str, right: str) -> str:
        if not x:
            return f"{type(x).__name__}()"
        if level <= 0:
            return left + "..." + right
        entries = [self.repr1(item, level - 1) for item in itertools.islice(x, self.maxset)]
        more = len(x) - len(entries)
        if more:
            entries.append(f"... {more:,} more")
        return left + ", ".join(entries) + right

    def repr_set(self, x: set[Any], level: int) -> str:
        return self._unordered(x, level, "{", "}")

    def repr_frozenset(self, x: frozenset[Any], level: int) -> str:
        return self._unordered(x, level, "frozenset({", "})")


def short_repr(value: object, limit: int = REPR_LIMIT) -> str:
    """``repr(value)``, exactly, when ``value`` is small (at most ``_SMALL`` entries,
    nested ones counted, and a repr of at most ``_FULL`` characters); else a bounded
    summary of at most about ``limit`` characters: the first entries of each container
    and how many more, a long text's head and tail. A large container is never rendered
    whole first; a value whose ``__repr__`` raises is shown by its type. The result still
    needs the escaping of the format it is shown in."""
    try:
        if _within(value, _SMALL) >= 0:
            whole = repr(value)
            if len(whole) <= _FULL:
                return whole
        shown = _ShortRepr(limit).repr(value)
    except Exception:  # a subject's __repr__ that raises must not hide its failure
        return f"<{type(value).__name__} object>"
    if len(shown) > limit:
        half = max(limit // 2 - 2, 1)
        shown = f"{shown[:half]} ... {shown[-half:]}"
    return shown


#: Values with at most this many entries (nested ones counted) are shown by ``repr``...
_SMALL = 1000
#: ... when that repr has at most this many characters.
_FULL = 4000


def _within(value: object, budget: int) -> int:
    """``budget`` less the entries of ``value`` (nested ones counted, a text by its
    length over 100), or a negative number as soon as it runs out: never walks more than
    ``budget`` entries."""
    budget -= 1
    if isinstance(value, (str, bytes)):
        return budget - len(value) // 100
    if isinstance(value, dict):
        if len(value) > budget:
            return -1
        for key, item in value.items():
            budget = _within(item, _within(key, budget))
            if budget < 0:
                return budget
        return budget
    if isinstance(value, (list, tuple, set, frozenset)):
        if len(value) > budget:
            return -1
        for item in value:
            budget = _within(item, budget)
            if budget < 0:
                return budget
    return budget
