"""The ``workbench`` command line.

Each group of subcommands lives in its own module listed in ``COMMANDS``; a module exposes
``register(subparsers)`` that adds its subparsers and sets ``func``. Adding a command is one module and
one line here. Bad input (an :class:`~workbench.errors.InputError` anywhere) gives one line on stderr
and exit code 2, never a traceback.

PROBLEM arguments are files (FCLib .hdf5, Siconos .dat, native .npz) or built-in scenes ``scene:NAME``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import Sequence

from workbench.errors import InputError

EXIT_BAD_INPUT = 2

#: modules that register subcommands, in the order of ``workbench --help``
COMMANDS = [
    "workbench.commands.solve",
    "workbench.commands.simulate",
    "workbench.commands.generate",
    "workbench.commands.study",
    "workbench.commands.export",
]


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2 through InputError, no usage dump)."""

    def error(self, message):
        raise InputError(message)


def load(spec: str):
    """A problem from a file path, ``shared:REL`` (a reference problem, see workbench.shared_data) or
    ``scene:NAME``."""
    if spec.startswith("scene:"):
        from problems.scenes import SCENES
        name = spec.split(":", 1)[1]
        if name not in SCENES:
            raise InputError(f"unknown scene {name!r}; known: {', '.join(SCENES)}")
        return SCENES[name]()
    from workbench.io import load_problem
    from workbench.shared_data import PREFIX, resolve_shared
    return load_problem(resolve_shared(spec) if spec.startswith(PREFIX) else spec)


def positive(kind):
    """argparse type: a positive finite number of ``kind``."""
    def parse(text):
        try:
            x = kind(text)
        except ValueError:
            raise InputError(f"expected a number, got {text!r}") from None
        if not (x > 0 and math.isfinite(x)):
            raise InputError(f"expected a positive number, got {text!r}")
        return x
    return parse


def key_value(text: str):
    """argparse type: KEY=VALUE with a JSON value (a plain string when not JSON)."""
    if "=" not in text:
        raise InputError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="workbench", description="Frictional-contact time-step workbench")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    sub.required = True
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head & co.
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
