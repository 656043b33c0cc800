"""The one parser of every number a user types: options, study files, solver parameters, environment
variables.

:func:`number` turns a value (text from the command line or the environment, a TOML or JSON number)
into a float or an int, or refuses it with one line (an :class:`~workbench.errors.InputError`, exit
code 2) naming what it was for. The checks run in an order that keeps every one of them cheap:

1. the size of the value before any conversion: text longer than :data:`MAX_CHARS` characters and
   integers of more than :data:`MAX_BITS` bits (about 330 digits) are refused as they are, so a
   5,000-digit integer never reaches ``int()``/``float()`` (quadratic in the digits, and past 4,300
   digits a ValueError of its own);
2. finite: NaN and +-inf are refused everywhere (a time limit of ``inf`` is not "no limit");
3. whole where a count is meant (``kind=int``: ``3.0`` is 3, ``2.5`` is refused);
4. the range: ``positive`` (> 0), ``low``/``high`` (inclusive), ``fraction`` (a tolerance or a
   threshold: at most 1, and a value above 1 is taken for a sign slip: ``--tol 1e6`` is refused with
   "did you mean 1e-06?").

A limit of :mod:`workbench.limits` (which parses its environment variables with this parser) is
checked by the caller after it, with ``workbench.limits.check``.
"""

from __future__ import annotations

import math

from workbench.errors import InputError

__all__ = ["number", "plain_float", "MAX_CHARS", "MAX_BITS", "shown"]

#: the longest text taken as a number (64 digits and an exponent are more than any real setting has)
MAX_CHARS = 100
#: the widest integer taken as a number: 2**1100 is about 1e331, past every float
MAX_BITS = 1100


def shown(value, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters (a 5,000-digit value is not echoed whole); an integer
    too wide to print cheaply is described by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_BITS:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= width else f"{text[:width - 5]}...{text[-2:]}"


def plain_float(word: str) -> float:
    """The float a word of a data file spells, or NaN when it spells none: the one reading of a
    number in the file readers. Python's float() also takes digit-group underscores ("2_0.0" is 20,
    "1_000" is 1000), which no data file writes: a word holding one is not a number."""
    if "_" in word:
        return math.nan
    try:
        return float(word)
    except ValueError:
        return math.nan


def _suggest(x: float) -> str:
    """What a tolerance above 1 most likely meant: 1e6 -> 1e-06, 2e3 -> 0.0005."""
    exponent = math.log10(x)
    return f"{10.0 ** -round(exponent):g}" if abs(exponent - round(exponent)) < 1e-9 else f"{1 / x:g}"


def number(value, what: str, kind: type = float, *, positive: bool = False, low: float | None = None,
           high: float | None = None, fraction: bool = False, text: bool = True):
    """``value`` as a ``kind`` (float or int) after the checks of the module docstring; an InputError
    "WHAT: expected ..., got VALUE" otherwise. ``text=False``: a string is refused, not parsed (a value
    typed by TOML or JSON, where "1e-6" in quotes is a mistake worth naming)."""
    noun = ("a positive " if positive else "a ") + ("whole number" if kind is int else "number")
    if fraction:
        noun += " at most 1"

    def refuse(why: str = ""):
        return InputError(f"{what}: expected {noun}, got {shown(value)}{'; ' + why if why else ''}")

    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (isinstance(value, str) and not text):
        raise refuse()
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_CHARS:
            raise refuse(f"{len(text)} characters is too long for a number")
        if "_" in text:
            raise refuse("'_' is not part of a number here")
        try:
            x = int(text) if kind is int and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise refuse() from None
    else:
        x = value
    if isinstance(x, int) and x.bit_length() > MAX_BITS:
        raise refuse("too large")
    if isinstance(x, float) and not math.isfinite(x):
        raise refuse()
    if kind is int:
        if isinstance(x, float):
            if not x.is_integer():
                raise refuse()
            x = int(x)
    else:
        try:
            x = float(x)
        except OverflowError:
            raise refuse("too large") from None
    if positive and not x > 0:
        raise refuse()
    if (low is not None and x < low) or (high is not None and x > high):
        span = f"between {low:g} and {high:g}" if low is not None and high is not None else \
            (f"at least {low:g}" if low is not None else f"at most {high:g}")
        raise refuse(f"it must be {span}")
    if fraction and x > 1:
        raise refuse(f"did you mean {_suggest(x)}?")
    return x
