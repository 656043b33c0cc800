"""The ``workbench`` command line, the top layer: nothing imports this module.

Each group of subcommands lives in its own module listed in ``COMMANDS``; a module exposes
``register(subparsers)`` that adds its subparsers and sets ``func``. Adding a command is one module and
one line here. Argument helpers live in :mod:`workbench.commands._args`, problem specs in
:mod:`workbench.sources`.

Exit codes: 0 done (for ``solve`` and ``export --solve``: solved), 1 not solved (inaccurate, max_iter,
timeout, failed, unavailable), a simulation stopped or code the command ran called ``sys.exit``, 2 bad
input (an :class:`~workbench.errors.InputError` anywhere: one line on stderr, never a traceback) or a
file-system error (read-only, full, a file where a folder is needed: one line naming the path), 130
interrupted.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import io
import os
import sys
import threading
from typing import Sequence

from workbench.commands._args import Parser
from workbench.errors import InputError

EXIT_BAD_INPUT = 2
#: a command that did not finish (a simulation that stopped, code that called sys.exit)
EXIT_NOT_DONE = 1

#: modules that register subcommands, in the order of ``workbench --help``
COMMANDS = [
    "workbench.commands.solve",
    "workbench.commands.simulate",
    "workbench.commands.generate",
    "workbench.commands.study",
    "workbench.commands.export",
    "workbench.commands.check_export",
    "workbench.commands.warm_up",
]

EXIT_CODES = """exit codes: 0 done (solve, export --solve: the run was solved); 1 not solved (inaccurate,
max_iter, timeout, failed, unavailable) or a simulation stopped; 2 bad input (one line on stderr
naming the argument, the value and what is accepted) or a file-system error (one line naming the path)"""


def _epilog() -> str:
    """The names a user can give: formulations, solvers (registered ones) and scenes."""
    import textwrap

    from formulations import FORMULATIONS
    from workbench.io.formats import files_accepted
    from workbench.solvers import SOLVERS
    from workbench.sources import names

    def wrapped(label: str, items) -> str:
        return textwrap.fill(", ".join(items), width=100, initial_indent=f"{label}: ", subsequent_indent="    ",
                             break_on_hyphens=False)

    solvers = [s.replace(":*", ":NAME") for s in SOLVERS] + ["any other installed cvxpy conic solver"]
    return "\n".join([
        wrapped("formulations", FORMULATIONS),
        wrapped("solvers", solvers),
        wrapped("scenes (PROBLEM scene:NAME)", names("scene", "scenario")),
        wrapped("generators (PROBLEM generator:NAME)", names("generator")),
        wrapped("PROBLEM", [f"a file ({files_accepted()})", "shared:REL (reference data)",
                            "dataset:NAME (problems/datasets)", "scene:NAME", "generator:NAME"]),
        "workbench list: the same with descriptions and availability; workbench help COMMAND: one command",
        "",
        EXIT_CODES,
    ])


class _TopParser(Parser):
    """The top-level parser: its epilog (the names of formulations, solvers and scenes, which loads
    their registries) is made only when the help is shown, so that ``--version`` and every command
    start without it."""

    def format_help(self) -> str:
        if self.epilog is None:
            self.epilog = _epilog()
        return super().format_help()


def build_parser() -> Parser:
    from workbench import __version__

    p = _TopParser(prog="workbench", description="Frictional-contact time-step workbench: solve, compare, "
               "simulate, generate and export one time step of nonsmooth rigid multibody dynamics, and run "
               "studies.", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"workbench {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    h = sub.add_parser("help", help="this text, or a command's: workbench help COMMAND")
    h.add_argument("topic", nargs="?", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return p


def _help(parser: Parser, topic: str | None) -> int:
    if topic is None:
        parser.print_help()
        return 0
    sub = next(a for a in parser._actions if a.dest == "command")
    if topic not in sub.choices:
        from workbench.errors import unknown
        raise unknown("command", topic, sub.choices)
    sub.choices[topic].print_help()
    return 0


def _one_line(text: str) -> str:
    from workbench.errors import printable
    return printable(text)


def _check_environment() -> None:
    """The numbers of the environment the libraries read at import (workbench.THREAD_ENV and numba's
    NUMBA_NUM_THREADS: a thread count of 0 or ``inf`` made numba raise at import), parsed by the one
    parser of numbers before anything imports them; the WORKBENCH_MAX_* limits are parsed where they
    are used, WORKBENCH_THREADS by workbench.threads."""
    from workbench import THREAD_ENV
    from workbench.numbers import number
    for name in (*THREAD_ENV, "NUMBA_NUM_THREADS"):
        if name in os.environ:
            # OpenMP's own variable may list a count per nesting level ("4,2", OpenMP 5.2 sec. 6.2)
            values = os.environ[name].split(",") if name == "OMP_NUM_THREADS" else [os.environ[name]]
            for value in values:
                number(value, name, int, positive=True, high=4096)


#: set by :func:`main` when the command it ran declared that it leaves nothing for Python's teardown
#: (``fast_exit`` among its defaults): :func:`run` then ends the process without it
_FAST_EXIT = False


def run() -> None:
    """The ``workbench`` process (the console script, ``python -m workbench.cli``): :func:`main`, then the
    exit. After a command that declared ``fast_exit`` (solve, info, list: they close what they open and
    leave no thread or child behind), with no other Python thread alive, the streams are flushed and
    the atexit handlers run, and the process ends without the interpreter's teardown of its modules,
    which frees numba's, LLVM's and scipy's objects one by one: a large part of a cold ``workbench solve``
    of a small file (benchmarks/timing/bench_first_call measures it)."""
    code = main()
    if _FAST_EXIT and all(t is threading.main_thread() or t.daemon for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # a closed or broken pipe, or no stream at all
                pass
        atexit._run_exitfuncs()
        if _flush_c_streams():
            os._exit(code)
    sys.exit(code)


def _flush_c_streams() -> bool:
    """fflush(NULL): what C's exit() writes of the C libraries' buffered output (a solver's ``--verbose``
    log through printf into a pipe), which os._exit would drop; False where it cannot be called."""
    try:
        import ctypes
        return ctypes.CDLL(None).fflush(None) == 0
    except (OSError, AttributeError, TypeError):
        return False


class _ClosedStream(io.TextIOBase):
    """What stands for a standard stream the process was started without (``workbench info F >&-``:
    Python then sets sys.stdout to None): a write is an OSError naming it, which :func:`main` reports
    in one line, so a command whose output cannot reach anyone says so instead of exiting 0."""

    def __init__(self, name: str):
        self.name = name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        import errno
        raise OSError(errno.EBADF, f"standard {self.name[1:-1].replace('std', '')}put is closed, so this "
                                   "command's output cannot be written", self.name)


def _streams() -> None:
    if sys.stdout is None:
        sys.stdout = _ClosedStream("<stdout>")
    if sys.stderr is None:      # nowhere to report anything: messages are dropped, the exit code stays
        sys.stderr = open(os.devnull, "w")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command of ``argv``; its exit code. Warnings raised on the way (numpy's RuntimeWarning of
    an overflow in data about to be refused, a library's deprecation note) are held: after bad input
    (exit 2) the one error line is all that is printed; otherwise they follow the command's output."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        code = _main(argv)
    if code != EXIT_BAD_INPUT:
        for w in caught[:20]:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return code


def _main(argv: Sequence[str] | None) -> int:
    global _FAST_EXIT
    argv = list(sys.argv[1:] if argv is None else argv)
    _streams()
    try:
        _check_environment()
        parser = build_parser()
        if not argv:
            parser.print_help()
            return 0
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        if args.command == "help":
            return _help(parser, args.topic)
        if hasattr(args, "threads"):    # before the command loads numba: its pool's size (workbench.threads)
            from workbench import threads
            threads.use(threads.choose(args.threads, getattr(args, "jobs", 1)))
        try:
            code = int(args.func(args) or 0)
            _FAST_EXIT = bool(getattr(args, "fast_exit", False))
            return code
        except SystemExit as exc:  # something the command ran (a plugin's solver, ...) called sys.exit
            print(f"workbench: error: the {args.command} command was ended early by SystemExit({exc.code!r}), "
                  "raised by code it ran; nothing it did after that is complete", file=sys.stderr)
            return EXIT_NOT_DONE
    except InputError as exc:
        print(f"workbench: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head & co.
        sys.stdout = open(os.devnull, "w")
        return 0
    except MemoryError as exc:  # a request within the limits (workbench.limits) that still did not fit
        print(f"workbench: error: not enough memory for this request ({_one_line(exc) or 'MemoryError'}); ask for a "
              "smaller problem or fewer runs", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the file system refused (read-only, full, a file where a folder is needed, ...)
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        print(f"workbench: error: {where + ': ' if where else ''}{_one_line(exc.strerror or exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    run()
