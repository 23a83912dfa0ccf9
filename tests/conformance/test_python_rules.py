"""The rule tables of ``_model/python_rules.py`` match a scan of all of Unicode.

The strategies take whitespace from categories plus ``control_whitespace()``, and
look-alike letters from ``LOOKALIKE_BLOCKS`` only, because scanning every code point
takes seconds; these tests scan them all once, so a Python with a newer Unicode
that adds such a character fails here rather than leaving it undrawn.
"""

from __future__ import annotations

import sys
import unicodedata

from sessionstate.conformance._model.python_rules import (
    LOOKALIKE_BLOCKS,
    STRIP_SPACE_CATEGORIES,
    _ascii_forms,
    control_whitespace,
    digit,
    int_skips,
    lookalikes,
)

ALL = [chr(n) for n in range(sys.maxunicode + 1)]


def test_strip_whitespace_is_the_categories_and_the_controls() -> None:
    stripped = {c for c in ALL if c.strip() == ""}
    drawn = {c for c in ALL if unicodedata.category(c) in STRIP_SPACE_CATEGORIES}
    assert stripped == drawn | set(control_whitespace())


def test_int_skips_what_strip_removes_but_four_controls() -> None:
    rejected = {c for c in ALL if c.isspace() and not int_skips(c)}
    assert rejected == {"\x1c", "\x1d", "\x1e", "\x1f"}


def test_every_lookalike_lies_in_the_scanned_blocks() -> None:
    outside = [c for c in ALL if (ord(c) & ~0xFF) not in LOOKALIKE_BLOCKS and c > "\x7f"
               and _ascii_forms(c)]  # fmt: skip
    assert outside == []
    assert "\u017f" in lookalikes()["s"] and "\ufb00" in lookalikes()["ff"]


def test_digit_stays_in_its_decimal_system() -> None:
    for c in ALL:
        if unicodedata.category(c) == "Nd":
            zero = digit(c, 0)
            assert [int(digit(c, v)) for v in range(10)] == list(range(10))
            assert all(digit(digit(zero, v), 0) == zero for v in range(10))
