"""The Python rules the ENV and KEY clauses rest on, taken from Python itself.

SPEC.md states the ENV clauses in terms of ``str.strip()``, ``str.lower()`` and
``int()``, and the KEY clauses in terms of ``str()``. Nothing here restates those
rules: the sets below are asked of the running interpreter (``str.isspace``, which
is what ``str.strip()`` removes; ``int()`` itself; ``unicodedata``), so the suite's
strategies, its oracle and the reach measurements agree with the Python the
subject runs on.

* ``STRIP_SPACE_CATEGORIES`` and ``control_whitespace()``: every character
  ``str.strip()`` removes is a space, line or paragraph separator, or one of the
  few control characters Python counts as whitespace.
* ``int_skips(c)``: whether ``int()`` skips the whitespace ``c`` around digits. It
  does not skip all that ``str.strip()`` removes: U+001C..U+001F are whitespace to
  ``str.strip()`` but ``int()`` rejects them.
* ``digit(zero_of, value)``: the digit ``value`` of the decimal system whose digit
  ``zero_of`` is one of: Unicode keeps each system's ten ``Nd`` digits contiguous
  and in order, which ``int()`` relies on too.
* ``lookalikes()``: characters that are not the ASCII letters of an enable
  spelling but that ``str.casefold()``, ``str.upper()`` or NFKC turn into them
  (U+017F long s into ``'s'``, U+FB00 into ``'ff'``, fullwidth letters into ASCII), though
  ``str.lower()`` does not.
* ``max_value_rules``, ``enable_value_rules`` and ``id_families``: which of these
  rules a drawn value exercises, for the reach measurements (``bench/reachability.py``,
  ``tests/conformance/test_input_reach.py``, ``tests/conformance/test_env_values.py``).
"""

from __future__ import annotations

import sys
import unicodedata
from functools import cache
from typing import Literal

from sessionstate.conformance._model.env import FALSE, TRUE

__all__ = [
    "INT_64_MAX",
    "LOOKALIKE_BLOCKS",
    "STRIP_SPACE_CATEGORIES",
    "control_whitespace",
    "digit",
    "enable_value_rules",
    "id_families",
    "int_or_none",
    "int_skips",
    "lookalike_of",
    "lookalikes",
    "max_value_rules",
]

#: The Unicode categories whose every character ``str.strip()`` removes; the other
#: characters it removes are control characters (``control_whitespace``).
STRIP_SPACE_CATEGORIES: tuple[Literal["Zs"], Literal["Zl"], Literal["Zp"]] = ("Zs", "Zl", "Zp")
#: The largest value a C ``int64_t`` holds: a port that parses into one overflows past it.
INT_64_MAX = 2**63 - 1
#: The 256-code-point blocks holding every character whose ``casefold()``,
#: ``upper().lower()`` or NFKC form is ASCII letters its ``lower()`` is not: scanning
#: all of Unicode takes seconds, these blocks milliseconds, and
#: ``tests/conformance/test_python_rules.py`` scans all of Unicode to check the list.
LOOKALIKE_BLOCKS = (
    0x0000, 0x0100, 0x0200, 0x1D00, 0x1E00, 0x2000, 0x2100, 0x2400, 0x2C00, 0x3200,
    0x3300, 0xA700, 0xFB00, 0xFF00, 0x10700, 0x1D400, 0x1D500, 0x1D600, 0x1D700, 0x1F100,
)  # fmt: skip


@cache
def control_whitespace() -> str:
    """The control characters (category ``Cc``, all below U+0100) that ``str.strip()`` removes."""
    return "".join(
        c for c in map(chr, range(0x100)) if unicodedata.category(c) == "Cc" and c.isspace()
    )


def int_or_none(text: str) -> int | None:
    """``int(text)``, or ``None`` where ``int()`` rejects it (ValueError)."""
    try:
        return int(text)
    except ValueError:
        return None


def int_skips(space: str) -> bool:
    """Whether ``int()`` skips the whitespace character ``space`` around digits."""
    return int_or_none(f"{space}0{space}") == 0


def digit(zero_of: str, value: int) -> str:
    """The digit ``value`` (0..9) of the decimal system the ``Nd`` digit ``zero_of`` is in."""
    return chr(ord(zero_of) - unicodedata.decimal(zero_of) + value)


def _ascii_forms(c: str) -> set[str]:
    """The ASCII letters other case and compatibility rules than ``lower()`` make of ``c``."""
    forms = (c.casefold(), c.upper().lower(), unicodedata.normalize("NFKC", c).lower())
    return {f for f in forms if f.isascii() and f.isalpha() and f != c.lower()}


@cache
def lookalikes() -> dict[str, tuple[str, ...]]:
    """ASCII letters (one or more) -> the non-ASCII characters ``_ascii_forms`` maps to them."""
    found: dict[str, list[str]] = {}
    for block in LOOKALIKE_BLOCKS:
        for c in map(chr, range(max(block, 0x80), block + 0x100)):
            for form in _ascii_forms(c):
                found.setdefault(form, []).append(c)
    return {form: tuple(chars) for form, chars in found.items()}


def lookalike_of(c: str) -> bool:
    """Whether ``c`` is a non-ASCII character some rule other than ``lower()`` makes ASCII."""
    return not c.isascii() and bool(_ascii_forms(c))


def _whitespace_rules(text: str, rules: set[str]) -> None:
    edges = text[: len(text) - len(text.lstrip())] + text[len(text.rstrip()) :]
    for c in edges:
        if not int_skips(c):
            rules.add("whitespace int() rejects")
        elif c.isascii():
            rules.add("ASCII whitespace")
        else:
            rules.add("non-ASCII whitespace")
    if any(c.isspace() for c in text.strip()):
        rules.add("inner whitespace")


def max_value_rules(text: str) -> set[str]:
    """The ``int()`` rules a MAX_SESSIONS value exercises (for the reach measurements)."""
    rules: set[str] = set()
    _whitespace_rules(text, rules)
    body = text.strip()
    digits = [c for c in body if unicodedata.category(c) == "Nd"]
    if any(not c.isascii() for c in digits):
        rules.add("non-ASCII digit")
    if len({ord(c) - unicodedata.decimal(c) for c in digits}) > 1:
        rules.add("mixed scripts")
    if body[:1] in ("+", "-"):
        rules.add("sign")
    if "_" in body:
        rules.add("underscore")
    unsigned = body.lstrip("+-")
    if unsigned[:2].lower() in ("0x", "0o", "0b"):
        rules.add("base prefix")  # a literal int(x, 0) reads and int(x) rejects
    elif (
        len(unsigned) > 1
        and unicodedata.category(unsigned[0]) == "Nd"
        and unicodedata.decimal(unsigned[0]) == 0
    ):
        rules.add("leading zero")  # int(x) reads it, int(x, 0) rejects it, strtol reads octal
    if any(unicodedata.category(c) in ("No", "Nl") for c in body):
        rules.add("non-Nd numeric")
    parsed = int_or_none(text)
    if parsed is None:
        rules.add("rejected")
        if not body:
            rules.add("empty or blank")
        if len(digits) > sys.get_int_max_str_digits():
            rules.add("past the digit limit")
    elif parsed <= 0:
        rules.add("zero or negative")
    elif parsed > INT_64_MAX:
        rules.add("beyond 2**63")
    return rules


def enable_value_rules(text: str) -> set[str]:
    """The near misses an enable value is (for the reach measurements): what other
    readings of a flag than ``str.strip().lower()`` against ENV-1's spellings make of it."""
    rules: set[str] = set()
    flag = text.strip().lower()
    recognised = flag in TRUE + FALSE
    if not text:
        rules.add("empty")
    elif not flag:
        rules.add("blank")
    if recognised and text.strip() != flag:
        rules.add("case variant")
    parsed = int_or_none(text)
    if parsed is not None and not recognised:
        # int() reads it, ENV-1 does not: "2", "-1" (another number), "00", "+1" (0 or 1)
        rules.add("0 or 1 spelt otherwise" if parsed in (0, 1) else "another integer")
    if flag and not recognised and any(w.startswith(flag) for w in TRUE + FALSE):
        rules.add("abbreviation")  # "y", "t", "n", "f": strtobool's and YAML 1.1's spellings
    return rules


def id_families(first: object, second: object) -> set[str]:
    """The KEY families a pair of distinct ids exercises (for the reach measurements)."""
    families: set[str] = set()
    if isinstance(first, str) and isinstance(second, str):
        a, b = str(first), str(second)
        if a != b and unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b):
            families.add("NFC vs NFD")
        elif a != b and a.split() == b.split():
            families.add("whitespace only")
        elif a != b and a.casefold() == b.casefold():
            families.add("case only")
        if type(first) is not str or type(second) is not str:
            families.add("str subclass")
    elif first == second and str(first) != str(second):
        families.add("equal, printed differently")
    if not first or not second:
        families.add("falsy")
    if any(isinstance(i, str) and any(c in i for c in "'\"\\") for i in (first, second)):
        families.add("quote or backslash")
    if any(isinstance(i, str) and any(unicodedata.category(c) == "Cc" for c in i)
           for i in (first, second)):  # fmt: skip
        families.add("control character")
    return families
