"""Argument helpers every command module shares: the parser class, value types, and the checks that
turn a formulation or solver name into an error naming the option, the value and what is accepted.

Value types raise ``argparse.ArgumentTypeError``, so argparse prefixes the option's name
("argument --tol: expected a positive number, got '-1'"); :class:`Parser` turns every parse error
into an :class:`~workbench.errors.InputError` (one line on stderr, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import re

from workbench.errors import InputError, unknown

#: exit code of a run that was not solved (inaccurate, max_iter, timeout, failed, unavailable), or a
#: simulation that stopped; bad input is 2 (workbench.cli)
EXIT_NOT_SOLVED = 1


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2 through InputError, no usage dump)."""

    def error(self, message):
        choice = _INVALID_CHOICE.match(message)
        if choice:  # argparse lists the choices; say which one was meant, as for every other name
            argument, value, choices = choice.groups()
            raise InputError(f"{argument}: {unknown('choice', value, _QUOTED.findall(choices))}")
        raise InputError(message)


#: argparse's message for a value outside ``choices``
_INVALID_CHOICE = re.compile(r"^(argument .*?): invalid choice: '(.*)' \(choose from (.*)\)$")
_QUOTED = re.compile(r"'([^']*)'")


def positive(kind, limit: str | None = None, fraction: bool = False):
    """argparse type: a positive finite number of ``kind``, within the workbench.limits ``limit``
    when one is named, at most 1 for a ``fraction`` (a tolerance: ``1e6`` is refused as a slip for
    ``1e-06``); parsed by :func:`workbench.numbers.number`, the one parser of numbers."""
    from workbench.limits import check
    from workbench.numbers import number
    noun = "a positive integer" if kind is int else "a positive number"

    def parse(text):
        try:
            x = number(text, "value", kind, positive=True, fraction=fraction)
            if limit is not None:
                check(limit, x, repr(text))
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value: ")) from None
        return x
    parse.__name__ = noun  # argparse names the type in its own messages
    return parse


def output_file(text: str) -> str:
    """argparse type: an output file path, checked before any work (workbench.files.check_output): a
    new path or a regular file, never a link, a FIFO or a device."""
    from workbench.files import check_output
    try:
        check_output(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def key_value(text: str):
    """argparse type: KEY=VALUE with a JSON value (a plain string when not JSON)."""
    from workbench.limits import check_depth, parse_error
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return key, value
    except ValueError:  # an integer of more than 4,300 digits: Python refuses to convert it
        raise argparse.ArgumentTypeError(f"{key}=...: a number of {len(value)} characters is too long") from None
    except RecursionError as exc:
        raise argparse.ArgumentTypeError(str(parse_error(exc, f"{key}=..."))) from None
    try:
        check_depth(parsed, f"{key}=...")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return key, parsed


def formulation_named(name: str, flag: str = "--formulation"):
    """The formulation ``name``; an InputError naming ``flag`` and the known ones otherwise."""
    from formulations import FORMULATIONS, get_formulation
    if name not in FORMULATIONS:
        raise InputError(f"{flag} {name}: {unknown('formulation', name, FORMULATIONS)}")
    return get_formulation(name)


def solver_named(name: str, flag: str = "--solver"):
    """The solver ``name``; an InputError naming ``flag`` and the known ones otherwise."""
    from workbench.solvers import get_solver
    try:
        return get_solver(name)
    except InputError as exc:
        raise InputError(f"{flag} {name}: {exc}") from None


def method_named(formulation: str, solver: str, params: dict | None = None, formulation_flag: str = "--formulation",
                 solver_flag: str = "--solver"):
    """The :class:`workbench.method.Method` of the options; an InputError naming the option when the
    formulation or solver is unknown, or when the solver cannot solve what the formulation builds
    (saying which formulations it can take), or a parameter is bad."""
    from workbench.errors import UnsupportedError
    from workbench.method import Method

    form, slv = formulation_named(formulation, formulation_flag), solver_named(solver, solver_flag)
    try:
        return Method(form, slv, params)
    except UnsupportedError as exc:
        raise InputError(f"{solver_flag} {solver}: {exc}") from None


def add_method_options(s, many: bool = False) -> None:
    """--formulation/-f and --solver/-s, their help listing the registered names (``many``: each
    repeatable and optional, as ``compare`` takes them)."""
    from formulations import FORMULATIONS
    from workbench.solvers import SOLVERS

    solvers = ", ".join(n.replace(":*", ":NAME") for n in SOLVERS) + ", or another installed cvxpy solver"
    extra = {"action": "append", "help_end": " (repeatable; default: all)"} if many else \
        {"required": True, "help_end": ""}
    end = extra.pop("help_end")
    s.add_argument("--formulation", "-f", **extra, help=f"one of {', '.join(FORMULATIONS)}{end}")
    s.add_argument("--solver", "-s", **extra, help=f"one of {solvers}{end}")


def add_threads_option(s) -> None:
    """--threads N: the compiled kernels' threads (workbench.threads; default all cores, for ``run`` the
    cores divided by --jobs)."""
    s.add_argument("--threads", type=positive(int), default=None, metavar="N",
                   help="threads of the compiled kernels (default: WORKBENCH_THREADS, else every core; "
                        "run: the cores / --jobs per worker); results do not depend on it")
