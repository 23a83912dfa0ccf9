"""Hypothesis strategies over what the ENV clauses read: the two variables and the arguments.

Derived from the rules SPEC.md says the clauses rest on (``str.strip()``,
``str.lower()``, ``int()``; see ``_model/python_rules.py``), not from lists of
examples: whitespace is any character ``str.strip()`` removes, digits any Unicode
decimal digit (``Nd``, one system or mixed), and a rejected MAX_SESSIONS value is
an accepted one with one rule broken. Whether a drawn value is accepted is never
decided here: the oracle asks ``int()`` and ``str.strip().lower()`` themselves.

MAX_SESSIONS numbers come from ``sizes()`` (the suite's one rule for a size: small
values, powers of two and their neighbours, the default 64 and its neighbours), spelt
with the leading zeros ``int()`` reads in base 10, or as the base-prefixed literals
(``0x40``, ``0o100``, ``0b1``) that ``int(x, 0)`` or ``strtol`` would read and ``int()``
rejects. Enable values include the near misses another reading of a flag makes
something of: empty and whitespace-only values, what ``int()`` reads but ENV-1 does
not spell (``"2"``, ``"00"``, ``"-1"``, ``"+1"``), and abbreviations of ENV-1's words
(``"y"``, ``"t"``, ``"n"``, ``"f"``: strtobool's and YAML 1.1's spellings).

Environment values hold no NUL and no surrogates: ``os.environ`` cannot store them.
"""

from __future__ import annotations

import sys

from hypothesis import strategies as st

from sessionstate.conformance._model.env import FALSE, TRUE
from sessionstate.conformance._model.python_rules import (
    INT_64_MAX,
    STRIP_SPACE_CATEGORIES,
    control_whitespace,
    digit,
    int_skips,
    lookalikes,
)
from sessionstate.conformance.sizes import COUNT_BOUND, sizes

__all__ = [
    "enable_arguments",
    "enable_values",
    "max_arguments",
    "max_values",
    "whitespace",
]


def whitespace() -> st.SearchStrategy[str]:
    """One character ``str.strip()`` removes: a space, line or paragraph separator, or a
    whitespace control character."""
    return st.one_of(
        st.sampled_from(control_whitespace()),
        st.characters(categories=STRIP_SPACE_CATEGORIES),
    )


def _padding(space: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.text(space, max_size=3)


#: Any text an environment variable can hold.
_ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8)
_ND = st.characters(categories=["Nd"])
_INT_SPACE = whitespace().filter(int_skips)
_INT_REJECTED_SPACE = st.sampled_from([c for c in control_whitespace() if not int_skips(c)])
_NOT_DECIMAL = st.characters(categories=("No", "Nl"))  # numerals int() does not read


#: A cap as the suite draws every size (``sizes``): 0..4, 2**k and neighbours, 63..65.
_SIZE = sizes(0, COUNT_BOUND)


@st.composite
def _decimal(draw: st.DrawFn, values: st.SearchStrategy[int]) -> str:
    """A drawn number in decimal: ASCII, one drawn ``Nd`` system, or a system per digit,
    with underscores between some digits and up to two leading zeros (base 10 reads
    them; ``int(x, 0)`` rejects them and ``strtol`` reads the number as octal)."""
    value = draw(values)
    style = draw(st.sampled_from(("ascii", "one system", "mixed systems")))
    zero = "0" if style == "ascii" else draw(_ND)
    out = []
    for i, ascii_digit in enumerate("0" * draw(st.integers(0, 2)) + str(abs(value))):
        if style == "mixed systems":
            zero = draw(_ND)
        if i and draw(st.integers(0, 3)) == 0:
            out.append("_")
        out.append(digit(zero, int(ascii_digit)))
    return "".join(out)


@st.composite
def _long_decimal(draw: st.DrawFn) -> str:
    """A run of digits about as long as ``int()`` reads (``sys.get_int_max_str_digits()``)
    or longer: a drawn pattern of digits repeated to a drawn length."""
    limit = sys.get_int_max_str_digits() or 4300
    length = draw(st.sampled_from((19, 20, 40, limit - 1, limit, limit + 1, limit + 2)))
    zero = draw(_ND)
    pattern = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4))
    pattern[0] = pattern[0] or 1  # no leading zero: the length is the number's
    text = "".join(digit(zero, d) for d in pattern) * (length // len(pattern) + 1)
    return text[:length]


_SIGN = st.sampled_from(("", "+", "-"))
_BODY = st.one_of(
    _decimal(_SIZE),
    _decimal(st.integers(INT_64_MAX - 1, 10**30)),
    _long_decimal(),
)


@st.composite
def _int_spelling(draw: st.DrawFn, body: st.SearchStrategy[str]) -> str:
    """``int()``'s grammar: skipped whitespace, a sign, digits with single underscores."""
    return draw(_padding(_INT_SPACE)) + draw(_SIGN) + draw(body) + draw(_padding(_INT_SPACE))


def _accepted() -> st.SearchStrategy[str]:
    """A value ``int()`` reads: small, past 2**63, or about as long as it reads."""
    return _int_spelling(_BODY)


@st.composite
def _prefixed(draw: st.DrawFn) -> str:
    """A drawn size as a base-prefixed literal (``0x40``, ``0O100``, ``0b_1``), signed and
    padded as ``int()`` pads: ``int(x, 0)``, ``literal_eval`` and ``strtol(x, 0)`` read
    it, ``int()`` rejects it (ENV-5)."""
    value, base = draw(_SIZE), draw(st.sampled_from("xob"))
    prefix = "0" + (base.upper() if draw(st.booleans()) else base)
    digits = format(value, base.upper() if base == "x" and draw(st.booleans()) else base)
    literal = prefix + ("_" if draw(st.integers(0, 3)) == 0 else "") + digits
    return draw(_padding(_INT_SPACE)) + draw(_SIGN) + literal + draw(_padding(_INT_SPACE))


@st.composite
def _broken(draw: st.DrawFn) -> str:
    """An accepted value with one of ``int()``'s rules broken."""
    pad, sign = draw(_padding(_INT_SPACE)), draw(_SIGN)
    body = draw(_decimal(_SIZE))
    cut = draw(st.integers(0, len(body)))
    broken = draw(
        st.sampled_from(
            (
                f"_{body}",  # underscores only between digits
                f"{body}_",
                f"{body[:cut]}__{body[cut:]}" if 0 < cut < len(body) else f"{sign}_{body}",
                f"{body[:cut]}{draw(whitespace())}{body[cut:]}",  # inner whitespace
                f"{body[:cut]}{draw(_NOT_DECIMAL)}{body[cut:]}",  # not a decimal digit
                f"{draw(_INT_REJECTED_SPACE)}{body}",  # whitespace str.strip() removes, int() not
                f"{body}.{body}",  # other syntaxes int() does not read in base 10
                f"0x{body}",
                f"{body}e{body}",
                f"{sign}{sign or '+'}{body}",  # one sign at most
            )
        )
    )
    return pad + broken + draw(_padding(_INT_SPACE))


def max_values() -> st.SearchStrategy[str | None]:
    """MAX_SESSIONS: unset, blank, accepted by ``int()`` (positive, zero or negative, small,
    past 2**63 or as long as it reads), one rule broken, a base-prefixed literal, or any
    text."""
    return st.one_of(
        st.none(),
        _padding(whitespace()),
        _accepted(),
        _broken(),
        _prefixed(),
        _ANY_TEXT,
    )


@st.composite
def _spelled(draw: st.DrawFn) -> str:
    """An enable spelling with each letter in either case, padded with any whitespace."""
    word = draw(st.sampled_from(TRUE + FALSE))
    cased = "".join(c.upper() if draw(st.booleans()) else c for c in word)
    return draw(_padding(whitespace())) + cased + draw(_padding(whitespace()))


@st.composite
def _misspelled(draw: st.DrawFn) -> str:
    """A spelling ``str.lower()`` does not recognise though another rule would: a letter (or
    ``ff``, ``st``...) as a character that case-folds, upper-cases or NFKC-normalises
    to it, a digit of another decimal system, or whitespace inside."""
    spelled = draw(_spelled())
    folds = lookalikes()
    spans = [
        (i, j)
        for i in range(len(spelled))
        for j in range(i + 1, min(i + 3, len(spelled)) + 1)
        if spelled[i:j].lower() in folds or spelled[i:j].isdecimal()
    ]
    if not spans:
        return spelled
    i, j = draw(st.sampled_from(spans))
    piece = spelled[i:j]
    if piece.isdecimal():
        other = digit(draw(_ND), int(piece))
    else:
        other = draw(st.sampled_from((*folds[piece.lower()], f"{piece}{draw(whitespace())}")))
    return spelled[:i] + other + spelled[j:]


@st.composite
def _abbreviated(draw: st.DrawFn) -> str:
    """A proper prefix of an ENV-1 word (``y``, ``t``, ``of``, ``fals``), cased and padded
    as ``_spelled`` is: a reader that matches by first letter or by prefix, as
    ``distutils.util.strtobool`` and YAML 1.1 do for ``y``/``n``/``t``/``f``, takes it for
    a flag that ENV-2 says is ignored."""
    word = draw(st.sampled_from([w for w in TRUE + FALSE if len(w) > 1]))
    cut = word[: draw(st.integers(1, len(word) - 1))]
    cased = "".join(c.upper() if draw(st.booleans()) else c for c in cut)
    return draw(_padding(whitespace())) + cased + draw(_padding(whitespace()))


def enable_values() -> st.SearchStrategy[str | None]:
    """The enable variable: unset, empty or whitespace only, a spelling, a near-miss
    spelling, a number ``int()`` reads (``"2"``, ``"00"``, ``"-1"``, ``"+1"``, ``" 1 "``:
    ENV-1 recognises ``0`` and ``1`` as spelt, nothing else), an abbreviation, or any
    text."""
    return st.one_of(
        st.none(),
        _padding(whitespace()),
        _spelled(),
        _misspelled(),
        _int_spelling(_decimal(_SIZE)),
        _abbreviated(),
        _ANY_TEXT,
    )


def enable_arguments() -> st.SearchStrategy[bool | None]:
    """The ``enable`` argument: ``None``, ``True`` or ``False``."""
    return st.sampled_from((None, True, False))


def max_arguments() -> st.SearchStrategy[int | None]:
    """The ``max_sessions`` argument: ``None``, a bool (an ``int``), zero, negative, small
    positive, or past 2**63."""
    return st.one_of(
        st.sampled_from((None, 0, False, True)),
        st.integers(-3, 300),
        st.integers(INT_64_MAX - 1, 2**80),
        st.integers(-(2**80), -INT_64_MAX),
    )
