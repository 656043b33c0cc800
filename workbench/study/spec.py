"""The study file: a TOML description of a solver comparison, parsed and validated.

Layout (every table and key is checked; a typo gives "unknown key 'x' in [methods.foo]; did you
mean 'y'?")::

    [study]
    name = "quickstart"            # default: the file's stem
    description = "..."
    repetitions = 1                # runs per (problem, method); timing statistics use the median
    time_limit = 60                # seconds per run: the solver's own cap, and the worker is killed
                                   # at time_limit + 1 s (status "timeout"), counted after the problem is loaded
    safety_net = false             # true: time_limit is only a safety net (every run should end on its
                                   # own cap); a run that reaches it is a machine effect (row column
                                   # machine_effect = "safety net"), not the method's timeout
    tolerance = "default"          # preset name, or a list of presets (each method then runs at each)
    histories = true               # per-iteration histories to keep: true, false, or method names
    plugins = []                   # Python files imported first (here and in every worker): they
                                   # may register extra solvers, formulations, scenes or generators;
                                   # they are code and can do anything (docs/threat-model.md), so they
                                   # must lie in the study file's folder (or WORKBENCH_STUDY_ROOTS)

    [tolerances.NAME]              # presets besides the built-in ones (see TOLERANCE_PRESETS)
    tol = 1e-5                     # accuracy asked of the solver (SolveOptions.tol)
    accept = 1e-4                  # error at most this counts as "solved" (default: tol)

    [[problems]]                   # a group: exactly one of files, scenes, generator, scenario, families,
                                   # sources
    files = ["shared:fclib/*.hdf5", "../data/*.dat"]   # paths or globs (workbench.sources): shared:REL
                                   # in the reference data, dataset:NAME among the committed datasets;
                                   # relative ones are resolved against the directory of the study
                                   # file (never the working directory)
    tags = ["settled"]             # free labels carried into every row and the report (the
                                   # conclusion names the fastest method per tag)
    series = "settled packings"    # a scaling series: the report fits log-log slopes of time
                                   # against contacts only within a declared series

    [[problems]]
    scenes = ["rolling-ball-2d"]   # built-in scenes (workbench.sources.NAMED; a dynamic one gives its
                                   # first time step with a contact)

    [[problems]]
    generator = "sphere_packing"   # a generator of workbench.sources.NAMED
    params = { mu = 0.25, seed = 0 }
    sweep = { n_spheres = [64, 128] }   # cartesian product of the listed values
    name = "spheres-{n_spheres}"   # problem name template (default: generator-key=value...)

    [[problems]]
    files = ["../problems/datasets/settled-*.hdf5"]
    optional = "make them with: workbench generate settled"   # files absent: the group is skipped
                                   # with this reason (the study stops only when nothing is left)

    [[problems]]
    families = ["settled-00064"]   # dataset families (problems.families): members 0 ... N-1 of each,
    members = 10                   # each a problem named by its dataset (settled-00064-m03), tagged with
                                   # tags, or with its family's name when none are given; the report's
                                   # conclusion gives medians with 95 % intervals over them. Fewer
                                   # members there than asked: make them with workbench generate FAMILY
                                   # --members N

    [[problems]]
    sources = ["scene:rolling-ball-2d"]   # any spec of workbench.sources but a file (files: above), e.g.
                                   # of a kind a plugin adds (a Source subclass in workbench.sources.ORIGINS);
                                   # members = N goes to its family:NAME specs

    [[problems]]
    scenario = "ball-on-plane"     # a dynamic scene of workbench.sources.NAMED: each run
    params = { h = 0.0025 }        # simulates it with the method; its per-step table is the run's
    sweep = { mu = [0.1, 0.2] }    # history (the report's time series); params, sweep, name as above

    [methods.clarabel-dual]        # the key names the method in results
    formulation = "dual"
    solver = "clarabel"
    label = "Clarabel, dual"       # shown in reports (default: the key)
    tolerance = "high_accuracy"    # overrides [study].tolerance for this method
    max_iter = 500
    params = { max_step_fraction = 0.99 }   # solver-specific settings, passed through

    [reference]                    # a dedicated high-accuracy run per problem, not among the
    solver = "clarabel"            # compared methods: a candidate for the reference objective
    formulations = ["dual"]        # default: every formulation of the methods the solver can take
    tol = 1e-10                    # default 1e-10
    max_iter = 1000
    params = {}

    [report]
    sections = ["summary", "conclusion", "paper", "tables", "convergence", "scaling", "profiles",
                "timeseries"]
    reference_method = "clarabel-dual"   # preferred reference where it solved the problem (never
                                   # for its own runs); otherwise the most accurate point found
    target = 1e-6                  # "time to within target of the reference objective" (relative)
    convergence = "error"          # "error": |objective - reference|; "absolute": |objective|
    shift = 10.0                   # shift [s] of the shifted geometric mean (qpbenchmark: 10)
    time = "solve"                 # time measure of means and profiles: "solve" or "total" (+ build)
    convergence_members = 2        # convergence figures of the first 2 members of each family only
                                   # (default: every member's)

    [[report.paper]]                # a number a paper reports, shown beside the measured one
    what = "APGD iterations to the interior-point objective, settled"
    source = "Mazhar et al. 2014 sec. 5.1.1"
    value = 561
    method = "apgd-dual"           # the method whose runs are measured
    tag = "settled"                # which problems: tag = ..., or problem = NAME (default: all)
    quantity = "iterations_to_reference"   # a column of the runs (iterations, objective, ...), or
    rel_tol = 5e-5                 # the first iteration with |objective - reference| <= rel_tol |reference|
    paper_problem = "320 spheres settled 4 s at h = 0.0005 s, at most 10,000 iterations per step"
    paper_criterion = "APGD until its objective matches MOSEK's to the digits printed (4.3e-5)"
    paper_params = { h = 0.0005, steps = 8000, max_iter = 10000 }   # checked against the generator
                                   # parameters of each measured file (its folder's MANIFEST.json)
    not_comparable = "..."         # a reason the two cannot be compared, shown instead of a match

Every error is a :class:`StudyError` (an InputError: one line, exit code 2 from the CLI) that names
the file and the place in it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.analysis import sections as report_sections
from workbench.errors import InputError, StudyError, did_you_mean
from workbench.files import inside, plain_name
from workbench.limits import check, check_depth, count_values, parse_error
from workbench.numbers import number
from workbench.params import check_params
from workbench.study.globs import bounded_glob, resolve_files
from workbench.study.plan import REPORT_CHOICES, PaperValue, ReportOptions
from workbench.study.plugins import import_plugin

__all__ = ["Study", "StudyError", "StudyMethod", "ProblemGroup", "ReportOptions", "PaperValue", "Tolerance", "load_study",
           "import_plugin", "select", "TOLERANCE_PRESETS", "PAPER_QUANTITIES", "bounded_glob"]

DEFAULT_TIME_LIMIT = 300.0

_TOP_KEYS = ("study", "tolerances", "problems", "methods", "reference", "report")
_STUDY_KEYS = ("name", "description", "repetitions", "time_limit", "safety_net", "tolerance", "histories", "plugins")
_TOLERANCE_KEYS = ("tol", "accept")
_PROBLEM_KEYS = ("files", "scenes", "generator", "scenario", "families", "sources", "params", "sweep", "name", "tags",
                 "series", "optional", "members")
_KINDS = ("files", "scenes", "generator", "scenario", "families", "sources")
_METHOD_KEYS = ("formulation", "solver", "label", "tolerance", "max_iter", "params")
_REFERENCE_KEYS = ("solver", "formulations", "tol", "max_iter", "params")
_REPORT_KEYS = tuple(f.name for f in dataclasses.fields(ReportOptions))
_SEED_KEYS = ("what", "source", "value", "method", "tag", "problem", "quantity", "rel_tol", "paper_problem",
              "paper_criterion", "paper_params", "not_comparable")
#: what a [[report.paper]] entry may measure: columns of the runs, and one derived from histories
PAPER_QUANTITIES = ("iterations_to_reference", "iterations", "objective", "solve_seconds", "build_seconds",
                   "n_contacts", "judged_error", "siconos_error", "relaxed_error", "ccp_residual",
                   "complementarity", "dual_objective", "primal_objective", "analytic_error", "steps")


@dataclass(frozen=True)
class Tolerance:
    """A tolerance preset: ``tol`` is asked of the solver, ``accept`` judges "solved" (None: tol)."""
    name: str
    tol: float
    accept: float | None = None


#: built-in presets (qpbenchmark's names for its settings); a study may add its own
TOLERANCE_PRESETS = {
    "low_accuracy": Tolerance("low_accuracy", 1e-4),
    "default": Tolerance("default", 1e-6),
    "high_accuracy": Tolerance("high_accuracy", 1e-8),
}


@dataclass(frozen=True)
class StudyMethod:
    """A method as a study runs it: ``method``, the :class:`workbench.method.Method` its runs solve
    with (names resolved, pairing and parameters checked once, when the study file is read), under the
    study's ``name`` for it and its table ``label``, at a tolerance preset, with an iteration cap and
    whether its runs keep a history. Its formulation, solver and parameters are the Method's."""
    name: str
    label: str
    method: Any  # workbench.method.Method (one layer down, imported when the file is read)
    tolerance: Tolerance
    max_iter: int | None = None
    keep_history: bool = True

    @property
    def formulation(self) -> str:
        return self.method.formulation_name

    @property
    def solver(self) -> str:
        return self.method.solver_name

    @property
    def params(self) -> dict[str, Any]:
        return self.method.params

    def solve_options(self, time_limit: float):
        """The SolveOptions of a run of this method (its parameters are the Method's)."""
        from workbench.solvers import SolveOptions
        return SolveOptions(tol=self.tolerance.tol, accept=self.tolerance.accept, max_iter=self.max_iter,
                            time_limit=time_limit, keep_history=self.keep_history)

    def identity(self) -> dict[str, Any]:
        """What makes a run of this method what it is (hashed into the run key; label excluded)."""
        return {"method": self.name, "formulation": self.formulation, "solver": self.solver,
                "tol": self.tolerance.tol, "accept": self.tolerance.accept, "max_iter": self.max_iter,
                "params": self.params}

    def describe(self) -> dict[str, Any]:
        """The method as the report shows it."""
        return {"method": self.name, "label": self.label, "formulation": self.formulation,
                "solver": self.solver, "tolerance": self.tolerance.name, "tol": self.tolerance.tol,
                "accept": self.tolerance.accept, "max_iter": self.max_iter, "params": self.params}


@dataclass(frozen=True)
class ProblemGroup:
    """One [[problems]] entry, with its globs expanded and its sweep unrolled."""
    index: int
    files: tuple[Path, ...] = ()
    scenes: tuple[str, ...] = ()
    generator: str | None = None
    #: a dynamic scene, simulated by each run (a scenario of workbench.sources.NAMED)
    scenario: str | None = None
    #: (name, params) of each generated problem or simulated scene
    generated: tuple[tuple[str, dict[str, Any]], ...] = ()
    tags: tuple[str, ...] = ()
    #: why an optional group has no problem (its files are absent)
    missing: str | None = None
    #: the scaling series the group's problems belong to (slopes are fitted within a series only)
    series: str | None = None
    #: specs of workbench.sources (not files), as they are
    specs: tuple[str, ...] = ()
    #: the member count of the group's families (family:NAME specs, or families = [...])
    members: int | None = None

    def sources(self) -> list:
        """The group's problems as :class:`workbench.sources.Source` s (parsed here, made by the
        runner): its files, scenes, or each (name, params) of its generator or scenario."""
        from workbench.sources import Source
        labels = {"tags": self.tags, "series": self.series}
        if self.generator is not None or self.scenario is not None:
            prefix = f"generator:{self.generator}" if self.generator is not None else f"scenario:{self.scenario}"
            return [Source.parse(prefix, params, name=name, **labels) for name, params in self.generated]
        return [Source.parse(str(path), **labels) for path in self.files] + \
            [Source.parse(f"scene:{scene}", name=scene, **labels) for scene in self.scenes] + \
            [Source.parse(spec, {"members": self.members} if spec.startswith("family:") else None, **labels)
             for spec in self.specs]


@dataclass
class Study:
    """A validated study. ``methods`` are expanded over tolerance presets (``name@preset``)."""
    path: Path
    text: str
    name: str
    description: str
    repetitions: int
    time_limit: float
    methods: list[StudyMethod]
    groups: list[ProblemGroup]
    plugins: list[Path]
    report: ReportOptions
    #: the dedicated reference runs ([reference]), one method per formulation; not compared
    references: list[StudyMethod] = field(default_factory=list)
    #: time_limit is a safety net, not a budget: a run that reaches it is a machine effect
    safety_net: bool = False

    def hard_limit(self) -> float:
        """Seconds after which the runner kills a run's worker (the solver's own cap plus a grace
        that covers building and judging; see :func:`workbench.study.worker.hard_limit`)."""
        from workbench.study.worker import hard_limit
        return hard_limit(self.time_limit)


# --------------------------------------------------------------------------- value checks

def _check_keys(table: dict, allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise StudyError(f"unknown key {key!r} in {where}; {did_you_mean(key, allowed)}")


def _table(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise StudyError(f"{where} must be a table, got {_show(value)}")
    return value


def _show(value) -> str:
    return f"{type(value).__name__} {value!r}"


def _string(value, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise StudyError(f"{where} must be a non-empty string, got {_show(value)}")
    return value


def _flag(value, where: str) -> bool:
    if not isinstance(value, bool):
        raise StudyError(f"{where} must be true or false, got {_show(value)}")
    return value


def _strings(value, where: str) -> list[str]:
    """A string or a list of strings, as a list."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items):
        raise StudyError(f"{where} must be a string or a list of strings, got {_show(value)}")
    return items


def _positive(value, where: str, kind=float, limit: str | None = None, fraction: bool = False):
    """A positive finite number (a whole one for ``kind`` int), within the workbench.limits
    ``limit`` when one is named, at most 1 for a ``fraction`` (workbench.numbers.number). A TOML
    value is typed already: text is refused here, not parsed."""
    try:
        x = number(value, where, kind, positive=True, fraction=fraction, text=False)
    except InputError as exc:
        raise StudyError(str(exc).replace(f"{where}: expected ", f"{where} must be ", 1)) from None
    if limit is not None:
        check(limit, x, where)
    return x


def _real(value, where: str) -> float:
    """A finite number (workbench.numbers.number; TOML text is refused, not parsed)."""
    try:
        return number(value, where, text=False)
    except InputError as exc:
        raise StudyError(str(exc).replace(f"{where}: expected ", f"{where} must be ", 1)) from None


def _choice(value, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise StudyError(f"{where} must be one of its choices, got {value!r}; {did_you_mean(str(value), choices)}")
    return value


# --------------------------------------------------------------------------- sections

def _tolerances(doc: dict) -> dict[str, Tolerance]:
    presets = dict(TOLERANCE_PRESETS)
    for name, table in _table(doc.get("tolerances", {}), "[tolerances]").items():
        where = f"[tolerances.{name}]"
        table = _table(table, where)
        _check_keys(table, _TOLERANCE_KEYS, where)
        if "tol" not in table:
            raise StudyError(f"{where} needs tol")
        accept = table.get("accept")
        presets[name] = Tolerance(name, _positive(table["tol"], f"{where} tol", fraction=True),
                                  None if accept is None else _positive(accept, f"{where} accept", fraction=True))
    return presets


def _preset(name, presets: dict[str, Tolerance], where: str) -> Tolerance:
    name = _string(name, where)
    if name not in presets:
        raise StudyError(f"{where}: unknown tolerance preset {name!r}; {did_you_mean(name, presets)}")
    return presets[name]


def _resolve(formulation: str, solver: str, params: dict, label: str, where: str):
    """The workbench.method.Method of a study's method (the one place names are paired and
    parameters checked); a StudyError naming ``where`` otherwise."""
    from workbench.method import Method as Pairing
    try:
        return Pairing(formulation, solver, params, label)
    except InputError as exc:
        raise StudyError(f"{where}: {exc}") from None


def _methods(doc: dict, presets: dict[str, Tolerance], study_presets: list[Tolerance],
             histories) -> list[StudyMethod]:
    tables = _table(doc.get("methods", {}), "[methods]")
    if not tables:
        raise StudyError("the study has no [methods.NAME] table")
    if isinstance(histories, list):
        unknown = [h for h in histories if h not in tables]
        if unknown:
            raise StudyError(f"[study] histories names unknown method(s) {', '.join(map(repr, unknown))}; "
                             f"{did_you_mean(unknown, tables)}")
    methods = []
    for name, table in tables.items():
        where = f"[methods.{name}]"
        table = _table(table, where)
        _check_keys(table, _METHOD_KEYS, where)
        for key in ("formulation", "solver"):
            if key not in table:
                raise StudyError(f"{where} needs {key}")
        formulation, solver = _string(table["formulation"], f"{where} formulation"), \
            _string(table["solver"], f"{where} solver")
        label = _string(table.get("label", name), f"{where} label")
        max_iter = table.get("max_iter")
        max_iter = None if max_iter is None else _positive(max_iter, f"{where} max_iter", int, "ITER")
        params = _table(table.get("params", {}), f"{where} params")
        resolved = _resolve(formulation, solver, params, label, where)
        keep = histories if isinstance(histories, bool) else name in histories
        own = [_preset(table["tolerance"], presets, f"{where} tolerance")] if "tolerance" in table else None
        for tol in own or study_presets:
            several = own is None and len(study_presets) > 1
            methods.append(StudyMethod(name=f"{name}@{tol.name}" if several else name,
                                       label=f"{label} @{tol.name}" if several else label, method=resolved,
                                       tolerance=tol, max_iter=max_iter, keep_history=keep))
    return methods


def _generated(table: dict, where: str, kind: str, before: int = 0,
               per_problem: int = 1) -> tuple[str, tuple[tuple[str, dict[str, Any]], ...]]:
    """The (name, params) of each problem of a generator or scenario group (sweep unrolled). The
    problems it declares (the sweep's product, from the list lengths), with the ``before`` of the
    groups above it, times the ``per_problem`` runs of each, are checked against the RUNS limit
    before anything is unrolled, and the name template before it is filled (:func:`_check_template`)."""
    from workbench.sources import builder

    name = _string(table[kind], f"{where} {kind}")
    try:
        func = builder(name, kind)
    except InputError as exc:
        raise StudyError(f"{where}: {exc}") from None
    params = _table(table.get("params", {}), f"{where} params")
    sweep = _table(table.get("sweep", {}), f"{where} sweep")
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise StudyError(f"{where} sweep.{key} must be a non-empty list, got {_show(values)}")
        if key in params:
            raise StudyError(f"{where}: {key!r} is both in params and in sweep")
    template = _string(table["name"], f"{where} name") if "name" in table else None
    if template is not None:
        _check_template(template, f"{where} name")
    count = 1
    for values in sweep.values():
        count *= len(values)
        check("RUNS", (before + count) * per_problem,
              f"{where} sweep: its product" + (f" with the {before} problems above it" if before else "")
              + (f", x {per_problem} runs per problem" if per_problem > 1 else ""))
    out = []
    for combo in itertools.product(*sweep.values()):
        varied = dict(zip(sweep, combo))
        full = {**params, **varied}
        try:
            check_params(name, func, full)
        except InputError as exc:
            raise StudyError(f"{where}: {exc}") from None
        if template is None:
            label = name + "".join(f"-{k}={v}" for k, v in varied.items())
        else:
            try:
                label = template.format(**full)
            except (KeyError, IndexError, ValueError) as exc:
                raise StudyError(f"{where} name {template!r} cannot be filled from the parameters ({exc})") from None
        out.append((plain_name(label, f"{where} problem name"), full))
    return name, tuple(out)


def _check_template(template: str, where: str) -> None:
    """A problem-name template is checked before it is filled: at most 200 characters (the longest
    name), fields named by plain parameter names (no attribute or index: ``{n.__class__}``), and
    format specs without a width or precision past 200 (``{n:>2000000000}`` would make 2 GB)."""
    import string
    if len(template) > 200:
        raise StudyError(f"{where} is {len(template)} characters long; a problem name has at most 200")
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise StudyError(f"{where} {template!r} is not a name template ({exc})") from None
    for _, name, spec, _ in fields:
        if name is None:
            continue
        if not name.isidentifier():
            raise StudyError(f"{where} {template!r}: a field names a parameter ({{n_spheres}}), got {{{name}}}")
        if "{" in (spec or "") or any(int(d) > 200 for d in re.findall(r"\d+", spec or "")):
            raise StudyError(f"{where} {template!r}: the format spec {spec!r} asks for more than 200 characters "
                             "or nests a field")


def _groups(doc: dict, base: Path, per_problem: int = 1) -> list[ProblemGroup]:
    """The problem groups; the runs they declare (``per_problem`` runs each: methods x repetitions) are
    counted from the declaration and checked against the RUNS limit before any group is expanded."""
    from workbench.sources import Source, builder

    entries = doc.get("problems", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise StudyError("problems must be given as [[problems]] tables")
    if not entries:
        raise StudyError("the study has no [[problems]] table")
    check("RUNS", len(entries) * per_problem, f"{len(entries)} [[problems]] groups x {per_problem} runs per problem "
          "(methods x repetitions; each group declares at least one problem)")
    groups = []
    declared = 0  # problems declared by the groups so far: the runs' lower bound, counted before expanding
    for i, table in enumerate(entries, start=1):
        where = f"[[problems]] #{i}"
        if groups:
            g = groups[-1]
            declared += sum(len(s.members()) for s in g.sources())
        _check_keys(table, _PROBLEM_KEYS, where)
        kinds = [k for k in _KINDS if k in table]
        if len(kinds) != 1:
            raise StudyError(f"{where} needs exactly one of {', '.join(_KINDS)} (has {', '.join(kinds) or 'none'})")
        if kinds[0] not in ("generator", "scenario"):
            for key in ("params", "sweep", "name"):
                if key in table:
                    raise StudyError(f"{where}: {key} belongs to a generator or scenario group")
        if "members" in table and kinds[0] not in ("families", "sources"):
            raise StudyError(f"{where}: members belongs to a families (or sources = [\"family:NAME\"]) group")
        if "optional" in table and kinds[0] != "files":
            raise StudyError(f"{where}: optional belongs to a files group")
        tags = tuple(_strings(table.get("tags", []), f"{where} tags"))
        series = _string(table["series"], f"{where} series") if "series" in table else None
        if kinds[0] == "files":
            optional = table.get("optional")
            if optional is not None and not isinstance(optional, (bool, str)):
                raise StudyError(f"{where} optional must be true or a string (the reason), got {_show(optional)}")
            try:
                files = resolve_files(_strings(table["files"], f"{where} files"), base, where)
            except StudyError as exc:
                if not optional:
                    raise
                hint = f" ({optional})" if isinstance(optional, str) else ""
                groups.append(ProblemGroup(i, tags=tags, series=series, missing=f"{exc}{hint}"))
                continue
            groups.append(ProblemGroup(i, files=files, tags=tags, series=series))
        elif kinds[0] == "scenes":
            scenes = _strings(table["scenes"], f"{where} scenes")
            for scene in scenes:
                try:
                    builder(scene, "scene", "scenario")
                except InputError as exc:
                    raise StudyError(f"{where}: {exc}") from None
            groups.append(ProblemGroup(i, scenes=tuple(scenes), tags=tags, series=series))
        elif kinds[0] in ("sources", "families"):
            specs = _strings(table[kinds[0]], f"{where} {kinds[0]}")
            if kinds[0] == "families":
                specs = [f"family:{name}" for name in specs]
            for spec in specs:
                if Source.parse(spec).origin == "file":
                    raise StudyError(f"{where} sources: {spec!r} is no spec of workbench.sources but a file's; "
                                     "files go in files = [...]")
            families = [spec for spec in specs if spec.startswith("family:")]
            members = table.get("members")
            if families and members is None:
                raise StudyError(f"{where}: a family needs its member count (members = N)")
            if members is not None and not families:
                raise StudyError(f"{where}: members belongs to a group that names a family (family:NAME)")
            group = ProblemGroup(i, specs=tuple(specs), tags=tags, series=series, members=members)
            for source in group.sources():
                try:
                    source.members()  # an unknown family, a bad count or members not made: one line, here
                except InputError as exc:
                    raise StudyError(f"{where}: {exc}") from None
            groups.append(group)
        elif kinds[0] == "generator":
            name, generated = _generated(table, where, "generator", declared, per_problem)
            groups.append(ProblemGroup(i, generator=name, generated=generated, tags=tags, series=series))
        else:
            name, generated = _generated(table, where, "scenario", declared, per_problem)
            groups.append(ProblemGroup(i, scenario=name, generated=generated, tags=tags, series=series))
    if all(g.missing for g in groups):
        raise StudyError("no problem to run: " + "; ".join(g.missing for g in groups))
    return groups


def _report(doc: dict, methods: list[StudyMethod]) -> ReportOptions:
    table = _table(doc.get("report", {}), "[report]")
    _check_keys(table, _REPORT_KEYS, "[report]")
    sections = _strings(table.get("sections", list(report_sections.SECTIONS)), "[report] sections")
    for s in sections:
        _choice(s, tuple(report_sections.SECTIONS), "[report] sections entries")
    ref = table.get("reference_method")
    names = [m.name for m in methods]
    if ref is not None and _string(ref, "[report] reference_method") not in names:
        raise StudyError(f"[report] reference_method {ref!r} is not a method of the study; methods: "
                         f"{', '.join(names)}")
    entries = table.get("paper", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise StudyError("[report] paper must be given as [[report.paper]] tables")
    default = ReportOptions()
    paper = tuple(_paper_value(e, f"[[report.paper]] #{i}", names) for i, e in enumerate(entries, start=1))

    def choice(key: str) -> str:  # one of the declared choices (workbench.study.plan.REPORT_CHOICES)
        return _choice(table.get(key, getattr(default, key)), REPORT_CHOICES[key], f"[report] {key}")
    return ReportOptions(sections=tuple(sections), reference_method=ref, paper=paper, convergence=choice("convergence"),
                         shift=_positive(table.get("shift", default.shift), "[report] shift"),
                         target=_positive(table.get("target", default.target), "[report] target", fraction=True),
                         time=choice("time"),
                         convergence_members=None if table.get("convergence_members") is None else
                         _positive(table["convergence_members"], "[report] convergence_members", kind=int))


def _reference(doc: dict, methods: list[StudyMethod]) -> list[StudyMethod]:
    """The dedicated reference runs of [reference]: one StudyMethod per formulation, named
    ``reference/FORMULATION``."""
    from workbench.errors import UnsupportedError

    if "reference" not in doc:
        return []
    where = "[reference]"
    table = _table(doc["reference"], where)
    _check_keys(table, _REFERENCE_KEYS, where)
    if "solver" not in table:
        raise StudyError(f"{where} needs solver")
    solver = _string(table["solver"], f"{where} solver")
    tol = Tolerance("reference", _positive(table.get("tol", 1e-10), f"{where} tol", fraction=True))
    max_iter = table.get("max_iter")
    max_iter = None if max_iter is None else _positive(max_iter, f"{where} max_iter", int, "ITER")
    params = _table(table.get("params", {}), f"{where} params")
    compared = list(dict.fromkeys(m.formulation for m in methods))
    if "formulations" in table:
        names = _strings(table["formulations"], f"{where} formulations")
        unknown = [f for f in names if f not in compared]
        if unknown:
            raise StudyError(f"{where} formulations: {', '.join(map(repr, unknown))} is not a formulation of "
                             f"the compared methods; {did_you_mean(unknown, compared)}")
    resolved = {}
    for f in names if "formulations" in table else compared:
        label = f"reference ({solver}, {f}, tol {tol.tol:g})"
        try:
            resolved[f] = _resolve(f, solver, params, label, where)
        except StudyError as exc:
            # without a list, the formulations the solver cannot take are left out
            if "formulations" in table or not isinstance(exc.__context__, UnsupportedError):
                raise
    if not resolved:
        raise StudyError(f"{where}: solver {solver} takes none of the compared formulations ({', '.join(compared)})")
    return [StudyMethod(name=f"reference/{f}", label=m.label, method=m, tolerance=tol, max_iter=max_iter,
                        keep_history=False) for f, m in resolved.items()]


def _paper_value(table: dict, where: str, methods: list[str]) -> PaperValue:
    _check_keys(table, _SEED_KEYS, where)
    for key in ("what", "source", "value", "method", "quantity"):
        if key not in table:
            raise StudyError(f"{where} needs {key}")
    value = _real(table["value"], f"{where} value")
    method = _string(table["method"], f"{where} method")
    if method not in methods:
        raise StudyError(f"{where}: method {method!r} is not a method of the study; methods: {', '.join(methods)}")
    if "tag" in table and "problem" in table:
        raise StudyError(f"{where}: give tag or problem, not both")
    return PaperValue(what=_string(table["what"], f"{where} what"), source=_string(table["source"], f"{where} source"),
                     value=value, method=method,
                     quantity=_choice(table["quantity"], PAPER_QUANTITIES, f"{where} quantity"),
                     tag=_string(table["tag"], f"{where} tag") if "tag" in table else None,
                     problem=_string(table["problem"], f"{where} problem") if "problem" in table else None,
                     rel_tol=_positive(table.get("rel_tol", 1e-4), f"{where} rel_tol", fraction=True),
                     paper_problem=_optional_string(table, "paper_problem", where),
                     paper_criterion=_optional_string(table, "paper_criterion", where),
                     paper_params=_paper_params(table.get("paper_params", {}), f"{where} paper_params"),
                     not_comparable=_optional_string(table, "not_comparable", where))


def _optional_string(table: dict, key: str, where: str) -> str | None:
    return _string(table[key], f"{where} {key}") if key in table else None


def _paper_params(params: Any, where: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(params, dict):
        raise StudyError(f"{where} must be a table of numbers, e.g. {{ h = 0.0005, steps = 8000 }}")
    out = []
    for key, value in params.items():
        out.append((str(key), _real(value, f"{where}.{key}")))
    return tuple(out)


# --------------------------------------------------------------------------- plugins and entry point

def _parse(path: Path, text: str) -> Study:
    from workbench.sources import trusted_roots

    count_values(text, "the study file")   # before the parser holds a value per delimiter
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"invalid TOML: {exc}") from None
    except RecursionError as exc:
        raise parse_error(exc, "invalid study file") from None
    except ValueError as exc:  # an integer of more than 4,300 digits: Python refuses to convert it
        raise StudyError(f"invalid study file: a number too long to be one ({' '.join(str(exc).split())[:120]})") \
            from None
    check_depth(doc, "the study file's nesting")
    _check_keys(doc, _TOP_KEYS, "the study file (top level)")
    head = _table(doc.get("study", {}), "[study]")
    _check_keys(head, _STUDY_KEYS, "[study]")
    base = path.parent
    plugins = [(base / p).resolve() for p in _strings(head.get("plugins", []), "[study] plugins")]
    for plugin in plugins:
        if not plugin.is_file():
            raise StudyError(f"[study] plugins: no file {plugin}")
        # a plugin is code that runs with the user's rights: it must travel with the study (its folder,
        # or WORKBENCH_STUDY_ROOTS), where whoever runs the study can read it first
        inside(plugin, trusted_roots(base), "[study] plugins")
        import_plugin(plugin)
    presets = _tolerances(doc)
    study_presets = [_preset(n, presets, "[study] tolerance")
                     for n in _strings(head.get("tolerance", "default"), "[study] tolerance")]
    histories = head.get("histories", True)
    if not isinstance(histories, bool):
        histories = _strings(histories, "[study] histories")
    methods = _methods(doc, presets, study_presets, histories)
    repetitions = _positive(head.get("repetitions", 1), "[study] repetitions", int, "RUNS")
    return Study(path=path, text=text, name=plain_name(_string(head.get("name", path.stem), "[study] name"), "[study] name"),
                 description=str(head.get("description", "")),
                 repetitions=repetitions,
                 time_limit=_positive(head.get("time_limit", DEFAULT_TIME_LIMIT), "[study] time_limit", float,
                                      "SECONDS"),
                 methods=methods, groups=_groups(doc, base, max(1, len(methods)) * repetitions), plugins=plugins,
                 report=_report(doc, methods), references=_reference(doc, methods),
                 safety_net=_flag(head.get("safety_net", False), "[study] safety_net"))


def select(study: Study, methods: list[str] | None = None, repetitions: int | None = None,
           time_limit: float | None = None) -> Study:
    """``study`` restricted to the methods any pattern of ``methods`` names (a glob on the method's
    name or its solver, as ``benchopt run -s``), with repetitions and time limit overridden."""
    import fnmatch

    chosen = study.methods
    if methods:
        for pattern in methods:
            if not any(fnmatch.fnmatchcase(m.name, pattern) or fnmatch.fnmatchcase(m.solver, pattern)
                       for m in study.methods):
                raise StudyError(f"--solver {pattern!r} names no method of the study; methods (solver): "
                                 + ", ".join(f"{m.name} ({m.solver})" for m in study.methods))
        chosen = [m for m in study.methods if any(fnmatch.fnmatchcase(m.name, p) or fnmatch.fnmatchcase(m.solver, p)
                                                  for p in methods)]
    return dataclasses.replace(study, methods=chosen,
                               repetitions=study.repetitions if repetitions is None else repetitions,
                               time_limit=study.time_limit if time_limit is None else float(time_limit))


def read_small_text(p: Path, what: str) -> str:
    """The UTF-8 text of the regular file ``p`` within the BYTES limit; StudyError otherwise (a FIFO
    or a device is refused before it is opened, so that reading cannot block)."""
    try:
        if not p.is_file():
            kind = "a folder" if p.is_dir() else ("not a regular file (a FIFO, socket or device)" if p.exists()
                                                 else "missing")
            raise StudyError(f"{p}: cannot read {what}: it is {kind}")
        check("BYTES", p.stat().st_size, f"{p}: {what}")
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"{p}: cannot read {what} ({getattr(exc, 'strerror', None) or exc})") from None
    except InputError as exc:
        raise StudyError(str(exc)) from None


def load_study(path: os.PathLike | str) -> Study:
    """Read and validate a study file; StudyError "PATH: what is wrong" otherwise."""
    p = Path(path)
    text = read_small_text(p, "the study file")
    try:
        return _parse(p.resolve(), text)
    except InputError as exc:
        raise StudyError(f"{p}: {exc}") from None
