"""Exceptions that the CLI turns into a one-line message and exit code 2.

Anything the user can get wrong (a file, an option, a study file) raises a subclass of
:class:`InputError`; everything else is a bug and keeps its traceback.
"""

import difflib
import unicodedata


def printable(text) -> str:
    """``text`` on one line with every control character shown as an escape (``\\x1b``, ``\\u202e``):
    the one sanitiser of what the workbench prints that came from input (a file name, a key, a value),
    so no input moves the terminal's cursor, changes its colours or reorders the line. Whitespace runs
    become one space."""
    text = " ".join(str(text).split())
    return "".join(c if c.isprintable() or c == " " else (repr(c)[1:-1] if unicodedata.category(c)[0] == "C" else c)
                   for c in text)


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
