"""Exceptions that the CLI turns into a one-line message and exit code 2.

Anything the user can get wrong (a file, an option, a study file) raises a subclass of
:class:`InputError`; everything else is a bug and keeps its traceback.
"""

import difflib
import re
import unicodedata


#: the bidirectional formatting characters (embeddings, overrides, isolates, marks): each reorders
#: the text displayed after it
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def unsafe(c: str) -> bool:
    """The one printable-name rule: True for a character no name may hold and no output may show raw -
    C0 and C1 controls (category Cc: ESC, the 8-bit CSI U+009B, NEL U+0085, DEL, ...), the bidi
    formatting characters (:data:`BIDI`), the line and paragraph separators U+2028 and U+2029, and any
    other format, surrogate, private or unassigned code point (category C)."""
    return unicodedata.category(c)[0] == "C" or c in "\u2028\u2029" or c in BIDI


def printable(text, *, one_line: bool = True) -> str:
    """``text`` with every :func:`unsafe` character shown as an escape (``\\x1b``, ``\\u202e``,
    ``\\u2028``): the one sanitiser of what the workbench prints that came from input (a file name, a
    key, a value, a study name, a path), so no input moves the terminal's cursor, changes its colours,
    reorders the line or breaks it. With ``one_line`` (messages) runs of ASCII whitespace first become
    one space; without it (a path, a name) every character is kept and a newline shows as ``\\n``."""
    text = str(text)
    if one_line:
        text = " ".join(_ascii_space_runs(text))
    return "".join(c if c == " " or not unsafe(c) else repr(c)[1:-1] for c in text)


def _ascii_space_runs(text: str) -> list[str]:
    """``text`` split at runs of ASCII whitespace (str.split() would also split at U+0085 and U+2028,
    hiding them as spaces rather than showing them)."""
    return [w for w in _ASCII_SPACE.split(text) if w]


_ASCII_SPACE = re.compile(r"[ \t\n\r\x0b\x0c]+")


class InputError(ValueError):
    """Bad user input: malformed file, inconsistent data, unknown option."""


class ProblemDataError(InputError):
    """A time-step problem whose data are inconsistent (sizes, NaN/Inf, negative mu, ...)."""


class FileFormatError(InputError):
    """A problem file that cannot be read (missing, truncated, malformed)."""


class UnsupportedError(InputError):
    """A valid request that this problem or solver cannot serve (e.g. a primal formulation of a
    local problem that has no M and D)."""


def did_you_mean(given, known, listed=None) -> str:
    """``did you mean 'X'? known: A, B, ...``: for the name ``given`` (or each of several names) that
    is not among ``known``, the closest known name when one is close (difflib), then every known name.
    The one way a message about a mistyped name ends, whatever the name names. ``listed``: what to
    list instead of every known name (a family of names shown as one entry)."""
    known = [str(k) for k in known]
    given = [given] if isinstance(given, str) else list(given)
    close = list(dict.fromkeys(m for g in given for m in difflib.get_close_matches(str(g), known, n=1)))
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    listed = known if listed is None else [str(k) for k in listed]
    return f"{hint}known: {', '.join(listed) or 'none'}"


def unknown(what: str, value: str, known) -> InputError:
    """``unknown WHAT 'VALUE'; did you mean ...? known: ...`` as an InputError to raise."""
    return InputError(f"unknown {what} {value!r}; {did_you_mean(value, known)}")


class StudyError(InputError):
    """A study file that cannot be run as written."""
