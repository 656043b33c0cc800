"""Declared parameters of solvers and formulations, and the one check of what a user gives them.

Every solver and formulation lists its settings as ``params: ClassVar[tuple[Param, ...]]``; the values
a user gives (``--param KEY=VALUE``, a study's ``params`` table) are checked against that list by
:func:`validate` and nothing else: an unknown key, or a value of the wrong type or outside its
choices, is an :class:`~workbench.errors.InputError` naming the key, the value and the known keys.
The same declarations feed ``workbench list --params NAME`` and study-file validation.
The keyword parameters of scenes, generators and datasets (``--set KEY=VALUE``) are the builder
function's own: :func:`check_params` checks them against its signature.

Values come typed from TOML and from the command line (a JSON value, else a string), so a check
accepts what is unambiguous: an int where a float is declared, an integral float where an int is,
"true"/"false" for a bool. A parameter whose default (or one of whose choices) is None may be given as null (None).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from workbench.errors import InputError, did_you_mean

__all__ = ["Param", "validate", "check_known", "describe", "check_params"]

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


@dataclass(frozen=True)
class Param:
    """One setting: its name, type (float, int, bool, str, dict or list), default (None: unset, the
    method decides), a one-line doc, for strings the allowed values, for numbers the range
    [low, high] (numbers are parsed by workbench.numbers.number: finite, whole for an int)."""
    name: str
    type: type
    default: Any
    doc: str
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None

    def check(self, value: Any, owner: str) -> Any:
        """``value`` converted to the declared type; InputError when it cannot be."""
        if value is None and (self.default is None or (self.choices is not None and None in self.choices)):
            return None
        if self.type in (int, float) and self.choices is None:
            from workbench.numbers import number
            return number(value, f"{owner}: parameter {self.name}", self.type, low=self.low, high=self.high)
        out = _convert(value, self.type)
        if out is _BAD:
            raise InputError(f"{owner}: parameter {self.name} takes a value of type {self.type.__name__}, got {value!r}")
        if self.choices is not None and out not in self.choices:
            raise InputError(f"{owner}: parameter {self.name} must be one of its choices, got {value!r}; "
                             f"{did_you_mean(str(out), map(str, self.choices))}")
        return out

    def line(self) -> str:
        """``name (type, default ...): doc`` for listings."""
        kind = "|".join(map(str, self.choices)) if self.choices else self.type.__name__
        if self.low is not None or self.high is not None:
            kind += f" in [{'-inf' if self.low is None else f'{self.low:g}'}, {'inf' if self.high is None else f'{self.high:g}'}]"
        return f"{self.name} ({kind}, default {self.default!r}): {self.doc}"


_BAD = object()


def _convert(value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        return _BAD
    if isinstance(value, bool):          # a bool is an int in Python: never a number here
        return _BAD
    if kind is float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return float(value) if isinstance(value, str) else _BAD
        except ValueError:
            return _BAD
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return int(value) if isinstance(value, str) else _BAD
        except ValueError:
            return _BAD
    return value if isinstance(value, kind) else _BAD


def check_known(given: Iterable[str], declared: Iterable[Param], owner: str, open_prefix: str | None = None) -> None:
    """InputError naming the keys of ``given`` that ``declared`` does not have, and the known keys (a
    family ``PREFIX.NAME`` of them shown as ``PREFIX.* (N settings)``); keys starting with
    ``open_prefix`` are not checked."""
    if not given:
        return
    declared = tuple(declared)
    known = {p.name for p in declared}
    unknown = sorted(k for k in set(given) - known if not (open_prefix and k.startswith(open_prefix)))
    if not unknown:
        return
    shown: dict[str, int] = {}
    asked = {k.partition(".")[0] + ".*" for k in unknown if "." in k}  # a family the user named is listed whole
    for p in declared:
        family = p.name.partition(".")[0] + ".*" if "." in p.name and p.name.partition(".")[0] + ".*" not in asked \
            else p.name
        shown[family] = shown.get(family, 0) + 1
    names = [f"{k} ({n} settings)" if k.endswith(".*") else k for k, n in shown.items()]
    names += [f"{open_prefix}* (unchecked)"] if open_prefix else []
    raise InputError(f"{owner} has no parameter {', '.join(unknown)}; {did_you_mean(unknown, known, names)}")


def validate(declared: Iterable[Param], given: dict[str, Any], owner: str) -> dict[str, Any]:
    """Every declared parameter's value: the given one, checked, else the default. Unknown keys and
    bad values raise InputError (module docstring). Validating a validated dict returns it unchanged."""
    declared = tuple(declared)
    check_known(given, declared, owner)
    return {p.name: p.check(given[p.name], owner) if p.name in given else p.default for p in declared}


def describe(declared: Iterable[Param]) -> list[str]:
    """One line per parameter (``workbench list --params``)."""
    return [p.line() for p in declared]


def check_params(name: str, func: Callable[..., Any], params: dict[str, Any]) -> None:
    """InputError naming the parameter when ``params`` do not fit ``func``'s signature (unknown or
    missing names), with the parameters it takes."""
    signature = inspect.signature(func)
    known = [p for p, spec in signature.parameters.items() if spec.kind not in (spec.VAR_POSITIONAL, spec.VAR_KEYWORD)]
    takes_any = any(spec.kind == spec.VAR_KEYWORD for spec in signature.parameters.values())
    for key in params:
        if key not in known and not takes_any:
            raise InputError(f"{name!r} has no parameter {key!r} (got {key}={params[key]!r}); "
                             f"{did_you_mean(key, known)}")
    try:
        signature.bind(**params)
    except TypeError as exc:
        raise InputError(f"{name!r}: {exc}; parameters: {', '.join(known)}") from None
    for key, value in params.items():
        spec = signature.parameters.get(key)
        if spec is None or (value is None and "None" in str(spec.annotation)):  # **kwargs, or Optional
            continue
        default = spec.default
        if not _fits(value, default):
            raise InputError(f"{name!r} parameter {key}={value!r}: expected {type(default).__name__} "
                             f"(default {default!r})")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            from workbench.numbers import number  # finite, not too long: the one parser of numbers
            number(value, f"{name!r} parameter {key}", int if isinstance(value, int) else float)
        _check_size(name, key, value, spec)
    work = getattr(func, "work", None)      # the size of what it would make, declared beside it (problems/)
    if work is not None:
        from workbench.limits import check_work
        check_work(repr(name), work(**params))


def _check_size(name: str, key: str, value, spec: inspect.Parameter) -> None:
    """An integer size parameter (annotated int, or with an int default; not ``seed``) must be a
    whole number within the SIZE limit (workbench.limits; an iteration cap: ITER): it sizes the arrays
    a builder allocates, or the work it does."""
    from workbench.limits import check
    is_int = spec.annotation in (int, "int") or (isinstance(spec.default, int) and not isinstance(spec.default, bool))
    if not is_int or key == "seed":
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name!r} parameter {key}={value!r}: expected a whole number")
    check("ITER" if "iter" in key else "SIZE", value, f"{name!r} parameter {key}")


def _fits(value, default) -> bool:
    """Whether ``value`` may stand where a parameter's ``default`` is (numbers for numbers; a parameter
    whose default is None or absent takes anything)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (isinstance(value, int) or not isinstance(default, int))
    if isinstance(default, str):
        return isinstance(value, str)
    return True
