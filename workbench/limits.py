"""Bounds on the work one command may ask for, and the one way to raise them.

Every number a user (or a study file someone sent) gives that sizes work or memory is checked
against a limit before anything is planned, allocated or started: the runs of a plan, the steps of
a simulation, the sizes of a generated problem, time limits and iteration caps, the files a glob
may match, the nesting of a study file. Past its limit a value is refused with one line (an
:class:`~workbench.errors.InputError`, exit code 2) that names the value, the limit and the
environment variable that raises it::

    workbench: error: --repetitions 1000000000: 1000000000 runs is over the limit of 100000 runs
    (set WORKBENCH_MAX_RUNS to raise it)

Each limit is ``WORKBENCH_MAX_<NAME>`` (:data:`LIMITS`); a value there replaces the default for the
process and its workers. The defaults are far above what the papers' studies use and far below
what exhausts a workstation. Each limit has a ceiling no variable raises it past (:func:`env_limit`,
the same for the readers' variables in workbench.io.validate): the value at which the work it
admits could not be held or finished by one machine (a plan of 10^7 runs is about 2 GB of
``plan.json`` and several times that in memory), so that a limit raised by mistake (``1e12``) is
one line, not the allocation it would admit.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from workbench.errors import InputError

__all__ = ["Limit", "LIMITS", "limit", "env_limit", "count_values", "fixed_work", "PER_STEP_BODIES", "address_space_left", "check", "check_work", "solve_numbers", "SOLVE_NUMBERS", "check_depth", "env_name", "parse_error"]


@dataclass(frozen=True)
class Limit:
    """A bound: its default, the unit its messages use, and the ceiling its variable may raise it to."""
    default: float
    unit: str
    ceiling: float


#: name -> Limit; the environment variable WORKBENCH_MAX_<NAME> overrides the default
LIMITS: dict[str, Limit] = {
    # runs of one plan (problems x methods x repetitions, reference runs included), and repetitions alone
    "RUNS": Limit(100_000, "runs", 10_000_000),
    # time steps of one simulation (simulate --steps, or a scene's duration / h)
    "STEPS": Limit(1_000_000, "steps", 1_000_000_000),
    # every integer size parameter of a scene or generator (n_spheres, n, n_bottom, ...; not seed): the
    # 10-million-contact packing of benchmarks.timing.bench_scale has 4,550,000 spheres (about 40 GB to build)
    "SIZE": Limit(5_000_000, "", 1_000_000_000),
    # the problem a scene or generator would make, counted from its parameters before it is built
    # (workbench.limits.check_work with the builder's declared ``work``): contacts (bodies alone when
    # more); a larger problem (benchmarks' 10-million-contact packing) raises it explicitly
    "CONTACTS": Limit(2_000_000, "contacts", 1_000_000_000),
    # a dynamic scene's time steps x bodies (the work of one simulation)
    "BODY_STEPS": Limit(1_000_000_000, "body-steps", 10**13),
    # rows of a table a command streams to disk as it goes (simulate's trajectory.csv: bodies x recorded
    # states): about 150 bytes a row of CSV, so the default is about 1.5 GB of disk
    "ROWS": Limit(10_000_000, "rows", 10**10),
    # seconds of a time limit (--time-limit, [study] time_limit); about 11.6 days
    "SECONDS": Limit(1_000_000, "s", 100_000_000),
    # an iteration cap (--max-iter, max_iter = ...)
    "ITER": Limit(1_000_000_000, "iterations", 10**12),
    # worker processes of one study (run --jobs)
    "JOBS": Limit(256, "workers", 4096),
    # problem files one [[problems]] group may name (its globs together)
    "FILES": Limit(10_000, "files", 1_000_000),
    # bytes of a study file, of a results folder's plan.json
    "BYTES": Limit(16 * 2**20, "bytes", 2**30),
    # nesting depth of a study file's tables and lists, of a --param or --set JSON value
    "DEPTH": Limit(32, "levels", 256),
    # values of a study file, counted before it is parsed (workbench.limits.count_values): tomllib
    # holds 150 bytes an inline table (5.3 million in 16 MB: 800 MB) and about 800 a table header
    # (it keeps each declared table's path), so 250,000 is at most about 200 MB and 2 s of CPU; the
    # shipped studies have under 300
    "VALUES": Limit(250_000, "values", 100_000_000),
}
# the ceilings: RUNS 10^7 (about 200 bytes of plan.json a run: 2 GB, and several times that in
# memory); STEPS, SIZE and CONTACTS 10^9 (a vector of 10^9 contacts is 24 GB); BODY_STEPS 10^13 (days
# at any rate a simulation steps); ROWS 10^10 (about 1.5 TB of CSV); SECONDS 10^8 (three years); ITER 10^12; JOBS 4,096 processes;
# FILES 10^6; BYTES 1 GiB (a TOML parser holds about 60 bytes per byte of inline tables); DEPTH 256
# (Python's parsers recurse); VALUES 10^8 (tens of GB parsed)


def env_name(name: str) -> str:
    return f"WORKBENCH_MAX_{name}"


def limit(name: str) -> float:
    """The limit ``name`` in force: WORKBENCH_MAX_<NAME> when set (a positive number at most its
    ceiling), else its default."""
    bound = LIMITS[name]
    return env_limit(env_name(name), bound.default, bound.ceiling, bound.unit)


def env_limit(variable: str, default: float, ceiling: float, unit: str = "", kind: type = float) -> float:
    """The environment variable ``variable`` read as a limit: ``default`` when unset or blank; else a
    positive ``kind`` through the one number parser, refused in one line above ``ceiling``: "VARIABLE:
    1e12 runs is over the ceiling of 10000000 runs that no setting passes"."""
    from workbench.numbers import number
    text = os.environ.get(variable)
    if text is None or not text.strip():
        return default
    value = number(text, variable, kind, positive=True)
    if value > ceiling:
        unit = f" {unit}" if unit else ""
        raise InputError(f"{variable}: {_number(value)}{unit} is over the ceiling of {_number(ceiling)}{unit} that "
                         "no setting passes (more than one machine can hold or finish)")
    return value


def check(name: str, value, what: str) -> None:
    """InputError "WHAT: VALUE UNIT is over the limit of L UNIT (set WORKBENCH_MAX_NAME to raise it)"
    when ``value`` exceeds the limit ``name``."""
    bound = limit(name)
    if value > bound:
        unit = LIMITS[name].unit
        unit = f" {unit}" if unit else ""
        raise InputError(f"{what}: {_number(value)}{unit} is over the limit of {_number(bound)}{unit} "
                         f"(set {env_name(name)} to raise it)")


#: what one time step costs beside its bodies, counted as bodies (its solve's set-up, its record): a
#: step of a one-body scene took about 8 ms, a body of a 1,000-sphere filling 0.18 ms a step
PER_STEP_BODIES = 64


def check_work(what: str, work: dict) -> None:
    """The size of the problem a builder would make, as its declared ``work`` function counts it from
    the parameters (a dict of bodies, contacts and, for a dynamic scene, steps), against the limits -
    the product is bounded, not each parameter alone: CONTACTS for max(bodies, contacts), BODY_STEPS
    for steps x max(bodies, PER_STEP_BODIES) (a step of a small scene costs its solve and its record all
    the same). Counted in Python integers, so no product overflows on the way."""
    bodies, contacts = int(work.get("bodies", 0)), int(work.get("contacts", 0))
    check("CONTACTS", max(bodies, contacts), f"{what}: the problem it makes ({bodies:,} bodies, "
                                             f"{contacts:,} contacts at most)")
    if "steps" in work:
        if math.isnan(work["steps"]):
            raise InputError(f"{what}: duration / h is not a number of steps")
        if math.isinf(work["steps"]):      # refused by the STEPS limit, before int() could overflow
            check("STEPS", work["steps"], f"{what}: duration / h")
        steps = int(math.ceil(work["steps"]))
        check("BODY_STEPS", steps * max(bodies, PER_STEP_BODIES), f"{what}: {steps:,} steps x "
              f"max({bodies:,} bodies, {PER_STEP_BODIES}, a step's own cost)")


#: the bytes that begin or separate a value in TOML and JSON: every key = value, array item, table
#: and inline table has one, so their count bounds the values a text can hold (strings and comments
#: that contain them count too: an upper bound, never an under-count)
VALUE_DELIMITERS = ",=[{"


def count_values(text: str, what: str) -> int:
    """The values ``text`` (a study file) may hold, bounded from above by its delimiters
    (:data:`VALUE_DELIMITERS`) before any parser sees it - a scan of the bytes, no allocation per
    value - checked against the VALUES limit: InputError "WHAT: 5300001 values is over the limit
    of 200000 values (...)"."""
    count = sum(text.count(c) for c in VALUE_DELIMITERS)
    check("VALUES", count, f"{what} (counted by its delimiters {' '.join(VALUE_DELIMITERS)} before it is parsed)")
    return count


def fixed_work(func, bodies: int, contacts: int):
    """Declare the ``work`` of a builder whose size its parameters do not change: ``bodies`` bodies, at
    most ``contacts`` contacts, and for a dynamic scene (a builder taking ``h`` and ``duration``)
    duration / h steps, from the parameters given or the builder's defaults. Returns ``func``. Every
    registered builder declares its work (tests/test_work_counted.py), fixed or grown by its parameters."""
    import inspect
    defaults = {k: p.default for k, p in inspect.signature(func).parameters.items()
                if p.default is not inspect.Parameter.empty}

    def work(**params) -> dict:
        bound = {**defaults, **params}
        out = {"bodies": bodies, "contacts": contacts}
        h, duration = bound.get("h"), bound.get("duration")
        if isinstance(h, (int, float)) and isinstance(duration, (int, float)):
            out["steps"] = duration / h if h > 0 else 0
        return out

    func.work = work
    return func


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under its RLIMIT_AS (``ulimit -v``): the
    soft limit less what is mapped now (/proc/self/statm); None when there is no such limit, or it
    cannot be read. A native library (Clarabel's Rust, a C solver) that asks for more aborts the
    process where Python would raise MemoryError, so its allocation is checked against this first."""
    import resource
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(0, soft - mapped)


def _number(x) -> str:
    """Whole numbers in full (up to 15 digits), others as %g; an integer too large for a float by its size."""
    if isinstance(x, int) and len(str(abs(x))) > 15:
        return f"about 1e{len(str(abs(x))) - 1}"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def parse_error(exc: BaseException, what: str) -> InputError:
    """The InputError for a parser's RecursionError (a file nested deeper than Python's stack)."""
    return InputError(f"{what}: nested deeper than the parser can follow ({type(exc).__name__}); the limit is "
                      f"{_number(limit('DEPTH'))} levels (set {env_name('DEPTH')} to raise it)")


def check_depth(value, what: str) -> None:
    """InputError when lists and dicts nest deeper in ``value`` than the DEPTH limit (walked without
    recursion, so any depth is measured safely)."""
    bound = limit("DEPTH")
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            if depth > bound:
                check("DEPTH", depth, what)
            stack.extend((x, depth + 1) for x in item)


#: the numbers of a solve's options (workbench.solvers.base.SolveOptions) as the command line takes
#: them: field -> (the option, kind, the workbench.limits limit, a fraction); None is "not asked"
#: except for tol
SOLVE_NUMBERS = {"tol": ("--tol", float, None, True), "accept": ("--accept", float, None, True),
                 "max_iter": ("--max-iter", int, "ITER", False),
                 "time_limit": ("--time-limit", float, "SECONDS", False)}


def solve_numbers(**values) -> dict:
    """The SolveOptions numbers ``values`` (field=value) checked as the command line checks them - a
    positive finite number (tol and accept at most 1), a whole one for max_iter, within its limit - so
    that the API refuses what the CLI refuses, with the same words: InputError "tol (--tol): expected
    a positive number at most 1, got inf". numpy integers and floats are taken as Python's."""
    import operator

    from workbench.numbers import number
    out = {}
    for field, value in values.items():
        option, kind, limit, fraction = SOLVE_NUMBERS[field]
        if value is None and field != "tol":
            out[field] = None
            continue
        if not isinstance(value, (bool, int, float, str)) and hasattr(value, "__index__"):
            value = operator.index(value)
        elif not isinstance(value, (bool, int, float, str)) and hasattr(value, "__float__") and \
                getattr(value, "shape", None) == ():
            value = float(value)
        what = f"{field} ({option})"
        x = number(value, what, kind, positive=True, fraction=fraction, text=False)
        if limit is not None:
            check(limit, x, what)
        out[field] = x
    return out
