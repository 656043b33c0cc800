"""Exceptions that the CLI turns into a one-line message and exit code 2.

Anything the user can get wrong (a file, an option, a study file) raises a subclass of
:class:`InputError`; everything else is a bug and keeps its traceback.
"""


class InputError(ValueError):
    """Bad user input: malformed file, inconsistent data, unknown option."""


class ProblemDataError(InputError):
    """A time-step problem whose data are inconsistent (sizes, NaN/Inf, negative mu, ...)."""


class FileFormatError(InputError):
    """A problem file that cannot be read (missing, truncated, malformed)."""


class UnsupportedError(InputError):
    """A valid request that this problem or solver cannot serve (e.g. a primal formulation of a
    local problem that has no M and D)."""


def unknown(what: str, value: str, known) -> InputError:
    """``unknown WHAT 'VALUE'; did you mean ...? known: ...`` as an InputError to raise."""
    import difflib
    known = list(known)
    close = difflib.get_close_matches(value, known, n=1)
    hint = f"did you mean {close[0]!r}? known: " if close else "known: "
    return InputError(f"unknown {what} {value!r}; {hint}{', '.join(known)}")


class StudyError(InputError):
    """A study file that cannot be run as written."""
