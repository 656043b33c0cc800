"""Where problems come from: one place that turns a problem spec into a TimeStepProblem, and one
registry of named problem sources.

Specs (the PROBLEM argument of every command, the entries of study files)::

    path/to/file.hdf5 | .h5 | .dat | .npz   FCLib HDF5, Siconos numerics text, the workbench's .npz
                      (the formats of workbench.io.formats.FORMATS)
    shared:REL        a reference problem of other simulators (workbench.shared_data), e.g.
                      shared:fclib/Box_Stacks-i0122-82-5.hdf5
    dataset:NAME      a dataset in problems/datasets, NAME.npz (settled-00320, scaling-00064, ...: committed,
                      or made there by workbench generate)
    scene:NAME        a built-in scene: a static one (rolling-ball-2d), or the first time step with a
                      contact of a dynamic one (ball-on-plane, filling, ...)
    scenario:NAME     a dynamic scene; as a problem, the same first time step as scene:NAME; in a study,
                      each run simulates it (workbench.study.simulation)
    generator:NAME    a problem generator called with parameters (sphere_packing, cannonball, ...)
    family:NAME       a dataset family (problems.families: a protocol and its members), with the
                      parameter members = N: a set of N problems, not one (in a study, each member is a
                      problem; solve refuses it, naming a member's spec; info lists its members)

The registry :data:`NAMED` maps each name to its kind and builder, so ``info``, ``solve``,
``compare``, ``simulate``, ``export`` and study files know the same scenes. Adding a scene, dynamic
scene or generator is one line in ``NAMED`` (a plugin of a study may add lines too). Builders take
keyword parameters; unknown or missing ones give an InputError naming the parameter and the known ones.
Generators must be deterministic given their parameters (give them a ``seed``): studies key results
by the data hash.

A spec is parsed once, into a :class:`Source` (as benchopt's ``Dataset``): ``Source.parse(spec,
params)`` picks its class by prefix (:data:`ORIGINS`); the source says what it is (``origin``, and once
made its ``kind``: global, local or simulation), ``load()``-s its time step, ``materialise(folder)``-s
what a study runs (generated problems saved under ``folder``), ``describe()``-s itself as the plan's
problem columns, gives the report its ``metadata()`` and pickles as its spec and facts (never its data:
a worker loads the problem itself). The CLI, the study's problems, the worker and the report take a
Source; :func:`trusted_roots` is the one list of the folders a study's files and a report's reads may
lie in.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from workbench.errors import InputError, StudyError, unknown
from workbench.io import formats
from workbench.params import check_params
from workbench.shared_data import PREFIX as SHARED_PREFIX
from workbench.shared_data import reference_files, resolve_shared, shared_data_dir

if TYPE_CHECKING:  # the problem module (numpy, scipy, numba) loads when a problem is made, not at start-up
    from workbench.problem import TimeStepProblem

__all__ = ["Named", "NAMED", "KINDS", "names", "builder", "scenario", "scene_problem", "load",
           "resolve_path", "dataset_dir", "dataset_names", "ACCEPTED", "Source", "Facts", "FileSource",
           "SceneSource", "ScenarioSource", "GeneratorSource", "FamilySource", "ORIGINS", "ROOTS_ENV", "trusted_roots"]

#: kinds of named sources: a static time step, a dynamic scene (problems.dynamic_scenes.Scenario), a
#: generator of time steps from parameters
KINDS = ("scene", "scenario", "generator")


@dataclass(frozen=True)
class Named:
    """A named problem source: its kind (one of KINDS), its builder ("module:function") and one line
    saying what it is."""
    kind: str
    target: str
    summary: str


NAMED: dict[str, Named] = {
    "rolling-ball-2d": Named("scene", "problems.scenes:rolling_ball_2d",
                             "first step of the sliding ball in planar motion, analytic impulses "
                             "(Melanz et al. 2015, sec. 3.1)"),
    "ball-on-plane": Named("scenario", "problems.dynamic_scenes:ball_on_plane",
                           "sphere sliding then rolling on a plane (Mazhar et al. 2014, sec. 5.3.1)"),
    "ball-on-plane-2d": Named("scenario", "problems.dynamic_scenes:ball_on_plane_2d",
                              "the same ball in planar motion (Melanz et al. 2015, sec. 3.1)"),
    "box-on-plane": Named("scenario", "problems.dynamic_scenes:box_on_plane",
                          "cube sliding to rest on a plane (Mazhar et al. 2014, sec. 5.3.2)"),
    "box-on-incline": Named("scenario", "problems.dynamic_scenes:box_on_incline",
                            "cube sliding down a 65 degree incline (Mazhar et al. 2014, sec. 5.4)"),
    "box-incline-to-rest": Named("scenario", "problems.dynamic_scenes:box_incline_to_rest",
                                 "cube stopping on a 25 degree incline (Mazhar et al. 2014, sec. 5.5)"),
    "filling": Named("scenario", "problems.dynamic_scenes:filling",
                     "spheres falling into a container (Melanz et al. 2015, sec. 3.2)"),
    "filling-2d": Named("scenario", "problems.dynamic_scenes:filling_2d", "disks falling into a planar container"),
    "compaction": Named("scenario", "problems.dynamic_scenes:compaction",
                        "spheres compacted by a heavy slab (Melanz et al. 2015, sec. 3.3)"),
    "drum": Named("scenario", "problems.drum:drum",
                  "ellipsoids (or spheres) in a rotating drum (Koziara 2017, sec. 8.1)"),
    "sphere_packing": Named("generator", "problems.synthetic:sphere_packing",
                            "one step of a jittered dense sphere packing in a box (n_spheres, seed, ...)"),
    "cannonball": Named("generator", "problems.lcp_scenes:cannonball",
                        "first step of the 2D cannonball arrangement (Anitescu & Hart 2003, Table 1)"),
    "hexagonal_pyramid": Named("generator", "problems.lcp_scenes:hexagonal_pyramid",
                               "the hexagonal pyramid on a plane (Anitescu & Hart 2003, sec. 3)"),
    "box_tower": Named("generator", "problems.stacks:box_tower",
                       "a tower of n cubes at rest on a floor, jittered sideways (n, jitter, seed, ...)"),
    "brick_wall": Named("generator", "problems.stacks:brick_wall",
                        "a brick wall in running bond at rest on a floor (courses, bricks, ...)"),
}

#: the accepted spec forms, for error messages
ACCEPTED = (f"a file ({formats.files_accepted()}), shared:REL, dataset:NAME, scene:NAME, scenario:NAME or "
            "generator:NAME (family:NAME, a set of problems, in a study)")

_DATASET_PREFIX = "dataset:"


def names(*kinds: str) -> list[str]:
    """Registered names of the given kinds (all kinds when none is given), in registry order."""
    return [n for n, entry in NAMED.items() if not kinds or entry.kind in kinds]


def _noun(kinds: tuple[str, ...]) -> str:
    return "scene" if "scene" in kinds else kinds[0]


def builder(name: str, *kinds: str) -> Callable[..., Any]:
    """The builder function of ``name`` (one of ``kinds``, default all); InputError when the name is
    unknown (listing the known ones) or its module is missing."""
    kinds = kinds or KINDS
    entry = NAMED.get(name)
    if entry is None or entry.kind not in kinds:
        raise unknown(_noun(kinds), name, names(*kinds))
    module, func = entry.target.split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise InputError(f"{entry.kind} {name!r} needs the module {module}, which is not available here "
                         f"({exc})") from None
    return getattr(mod, func)


#: what a problem's parameters are not: said when one is unknown (the usual mix-up is a solver setting)
_PARAMS_HINT = ("these are the problem's own parameters (--set, or a study's [[problems]] params); a solver's or "
                "formulation's settings go with --param KEY=VALUE or a study's [methods.NAME] params "
                "(workbench list --params NAME)")


def _call(name: str, func: Callable[..., Any], params: dict[str, Any]):
    try:
        check_params(name, func, params)
    except InputError as exc:
        raise InputError(f"{exc}; {_PARAMS_HINT}") from None
    try:
        return func(**params)
    except (TypeError, ValueError, ArithmeticError) as exc:  # a builder's own check of a value (InputError
        # too), or a value it cannot compute with (h = 0: ZeroDivisionError; 1e308 squared: OverflowError)
        raise InputError(f"{name!r} with {_show(params)}: {exc}") from None


def _show(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) or "default parameters"


def scenario(name: str, **params):
    """The dynamic scene ``name`` built with ``params`` (a problems.dynamic_scenes.Scenario); its
    steps (duration / h) within the STEPS limit (workbench.limits)."""
    from workbench.limits import check
    built = _call(name, builder(name, "scenario"), params)
    steps = built.duration / built.h
    if not steps == steps:  # NaN: neither a duration nor a step size that make a number of steps
        raise InputError(f"{name!r} with {_show(params)}: duration {built.duration!r} / h {built.h!r} is not a number")
    check("STEPS", steps, f"{name!r} with {_show(params)}: duration / h")
    return built


def scene_problem(name: str, **params) -> TimeStepProblem:
    """The time step of the scene ``name``: a static scene's problem, or a dynamic scene's first time
    step with a contact (the bodies fly freely until then, which needs no solver)."""
    if NAMED.get(name) is not None and NAMED[name].kind == "scenario":
        from problems.stepper import Simulation
        sc = scenario(name, **params)
        sim = Simulation(sc.world, sc.h, None, name=name)  # no method: free flight has nothing to solve
        for _ in range(sc.steps + 1):
            problem, _, _ = sim.problem()
            if problem is not None:
                return problem
            sim.step()
        raise InputError(f"scene {name!r} has no contact within its {sc.duration:g} s")
    return _call(name, builder(name, "scene"), params)


def generate(name: str, **params) -> list[TimeStepProblem]:
    """The problems of the generator ``name`` called with ``params`` (one or a sequence)."""
    out = _call(name, builder(name, "generator"), params)
    problems = list(out) if isinstance(out, (list, tuple)) else [out]
    from workbench.problem import TimeStepProblem
    if not problems or not all(isinstance(p, TimeStepProblem) for p in problems):
        raise InputError(f"generator {name!r} returned no TimeStepProblem")
    return problems


def dataset_dir() -> Path:
    """The folder of the committed datasets (problems/datasets)."""
    spec = importlib.util.find_spec("problems")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("dataset:NAME needs the problems package of the repository, which is not importable here")
    return Path(list(spec.submodule_search_locations)[0]) / "datasets"


def dataset_names() -> list[str]:
    """The names ``dataset:NAME`` takes: the committed datasets' problem files (.npz, not the
    simulation states beside them) without their suffix."""
    return sorted(p.name[:-len(".npz")] for p in dataset_dir().glob("*.npz") if not p.name.endswith(".state.npz"))


def resolve_path(spec: str, base: os.PathLike | str | None = None) -> Path:
    """The path a file spec names: ``shared:REL`` in the reference data, ``dataset:NAME`` among the
    committed datasets, ``~`` expanded, a relative path against ``base`` (default: the working
    directory). The file need not exist (globs are expanded by the caller). ``shared:`` and
    ``dataset:`` paths stay inside their folders (no absolute path, no ``..``, no link out)."""
    if spec.startswith(SHARED_PREFIX):
        return resolve_shared(spec)
    if spec.startswith(_DATASET_PREFIX):
        from workbench.files import relative_under
        name = spec[len(_DATASET_PREFIX):]
        return relative_under(dataset_dir(), name if Path(name).suffix else f"{name}.npz", spec)
    p = Path(os.path.expanduser(spec))
    return p if p.is_absolute() or base is None else Path(base) / p


def _named_problem(name: str, kinds: tuple[str, ...], params: dict[str, Any]) -> TimeStepProblem:
    if kinds == ("generator",):
        problems = generate(name, **params)
        if len(problems) > 1:
            raise InputError(f"the generator gives {len(problems)} problems; use it in a study file")
        return problems[0]
    builder(name, *kinds)  # an unknown name raises here, listing the known ones
    return scene_problem(name, **params)


def _named_like(spec: str) -> str:
    """'did you mean PREFIX:NAME? ' when a bare ``spec`` is the name of a scene, scenario, generator or
    dataset (the prefix forgotten), else ''."""
    names = [f"dataset:{n}" for n in (dataset_names() if importlib.util.find_spec("problems") else [])]
    names += [f"{kind}:{n}" for kind in ("scene", "scenario", "generator") for n in _names_quietly(kind)]
    hit = [n for n in names if n.split(":", 1)[1] == spec]
    return f"did you mean {hit[0]}? " if hit else ""


def _names_quietly(kind: str) -> list[str]:
    try:
        return names(kind)
    except InputError:   # no problems package: no named problems to suggest
        return []


def load(spec: str, **params) -> TimeStepProblem:
    """The problem ``spec`` names (module docstring): ``Source.parse(spec, params).load()``; ``params``
    go to a scene or generator builder. InputError (one line naming the spec and what is accepted) for
    anything that is not a problem."""
    return Source.parse(spec, params).load()


# --------------------------------------------------------------------------- the Source type

#: environment variable: more folders (os.pathsep-separated) a study file's files may lie in (and that
#: the report reads a problem's metadata from)
ROOTS_ENV = "WORKBENCH_STUDY_ROOTS"


def trusted_roots(base: os.PathLike | str | None = None) -> list[Path]:
    """The folders a study file's files may lie in and a report may read a problem's metadata from:
    ``base`` (the study file's folder, or the results folder the report reads), the reference data
    (shared:), the committed datasets (dataset:, when the problems package is here) and those of
    WORKBENCH_STUDY_ROOTS. The one list of them."""
    roots = [Path(base)] if base is not None else []
    roots.append(shared_data_dir())
    try:
        roots.append(dataset_dir())
    except InputError:
        pass
    roots += [Path(r).expanduser() for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r]
    return [r for r in roots if r is not None]


@dataclass(frozen=True)
class Facts:
    """What a made problem is, as the plan records it: its data hash (:func:`problem_digest
    <workbench.problem.problem_digest>`; a simulation's: of its scene's name and parameters), its kind
    (global, local or simulation) and sizes."""
    digest: str
    kind: str
    n_contacts: int
    n_dof: int | None
    d: int

    @classmethod
    def of(cls, problem: TimeStepProblem) -> Facts:
        from workbench.problem import problem_digest
        return cls(problem_digest(problem), problem.kind, problem.n_contacts, problem.n_dof, problem.d)


@dataclass(frozen=True)
class Source:
    """A problem named by a spec, parsed once (module docstring). ``params`` go to a scene's or
    generator's builder; ``name``, ``tags`` and ``series`` are what a study calls it and groups it by;
    ``facts`` are known once it is made (:meth:`materialise`). Subclasses, one per kind of spec
    (:data:`ORIGINS`), say how a problem is made: ``load`` (one time step) and, where a study runs
    something else, ``materialise``."""
    spec: str
    params: dict = field(default_factory=dict, hash=False)
    name: str | None = None
    tags: tuple[str, ...] = ()
    series: str | None = None
    facts: Facts | None = None

    #: what made the problem, for messages and the report: file, scene, scenario, generator, ...
    origin: ClassVar[str] = "file"
    #: whether each run simulates the source (a dynamic scene) instead of solving one time step
    simulated: ClassVar[bool] = False

    @staticmethod
    def parse(spec: str, params: dict | None = None, **labels) -> Source:
        """The source ``spec`` names: the class of the longest prefix of :data:`ORIGINS` it starts
        with (a file otherwise), with the builder's ``params`` and the study's ``labels`` (name, tags,
        series). Nothing is read or checked here: :meth:`load` and :meth:`materialise` say what is
        wrong."""
        if not isinstance(spec, str):
            raise InputError(f"a problem spec is a string, got {type(spec).__name__}; a problem is {ACCEPTED}")
        prefix = max((p for p in ORIGINS if spec.startswith(p)), key=len)
        return ORIGINS[prefix](spec, dict(params or {}), **labels)

    @property
    def target(self) -> str:
        """The spec without its prefix: the scene's or generator's name, the file's path."""
        return self.spec.partition(":")[2] if self.origin != "file" else self.spec

    @property
    def kind(self) -> str | None:
        """global, local or simulation (None until the source is made)."""
        return "simulation" if self.simulated else (self.facts.kind if self.facts else None)

    def load(self) -> TimeStepProblem:
        """The time step this source names; InputError naming the spec when it is none."""
        raise NotImplementedError

    def check(self) -> None:
        """What can be said wrong without reading or building anything (a missing file, an unknown
        name, an unknown parameter): InputError, as :meth:`load` would say it. A command that leaves
        the loading to a worker asks this first."""

    def members(self) -> list[Source]:
        """The sources this one stands for, each one problem of a study: itself, for every kind but a
        family (:class:`FamilySource`), which returns its N member sources, each a source of its own
        (a dataset, named and tagged), which :meth:`materialise`, the plan, the worker and the report
        then take as any other."""
        return [self]

    def materialise(self, folder: Path) -> list[Source]:
        """The sources a study runs for this one, each made once with its facts known (a bad file or
        scene stops the study here, before any run). ``folder``: where generated problems are saved."""
        problem = self.load()
        return [replace(self, name=self.name or self._default_name(problem), facts=Facts.of(problem))]

    def _default_name(self, problem: TimeStepProblem) -> str:
        return problem.name or self.target

    def describe(self) -> dict[str, Any]:
        """The plan's problem columns (plan.json ``problems``, the run row's problem columns), once made."""
        if self.facts is None:
            raise ValueError(f"{self.spec}: describe() needs a made source (materialise)")
        f = self.facts
        return {"problem": self.name, "source": self.spec, "problem_hash": f.digest, "tags": list(self.tags),
                "kind": self.kind, "n_contacts": f.n_contacts, "n_dof": f.n_dof, "d": f.d,
                "params": dict(self.params) if self.simulated else None, "series": self.series}

    def metadata(self, root: os.PathLike | str | None = None) -> dict[str, Any] | None:
        """What the report says of how the problem was made (a generated file's generator parameters);
        None when nothing is known. ``root``: the results folder the report reads, trusted besides
        :func:`trusted_roots`."""
        return None

    def _made(self, make: Callable[[], Any]):
        """``make()``, with whatever a scene's or generator's code raises named as the study's error."""
        try:
            return make()
        except Exception as exc:  # whatever a builder raises, the study names it and stops
            raise StudyError(f"{self.origin} {self.target!r} ({self.name}) failed: {type(exc).__name__}: "
                             f"{exc}") from None


class FileSource(Source):
    """A file: a path (``~`` expanded; relative to the working directory), ``shared:REL`` or ``dataset:NAME``."""
    origin = "file"

    def path(self, base: os.PathLike | str | None = None) -> Path:
        """The file's path (:func:`resolve_path`)."""
        return resolve_path(self.spec, base)

    def _default_name(self, problem: TimeStepProblem) -> str:
        return problem.name or self.path().stem

    def check(self) -> None:
        self._checked_path()

    def _checked_path(self) -> Path:
        spec = self.spec
        if self.params:
            raise InputError(f"{spec}: a file takes no parameters (got {_show(self.params)})")
        path = self.path()
        if not path.exists():
            if spec.startswith(_DATASET_PREFIX):
                raise InputError(f"{spec}: {unknown('dataset', spec[len(_DATASET_PREFIX):], dataset_names())}")
            if spec.startswith(SHARED_PREFIX):
                names = [str(f.relative_to(shared_data_dir())) for f in reference_files()]
                raise InputError(f"{spec}: {unknown('reference problem', spec[len(SHARED_PREFIX):], names)}")
            where = "" if str(path) == spec else f" ({path})"
            raise InputError(f"{spec}: no such file or folder{where}; {_named_like(spec)}a problem is {ACCEPTED}")
        if not path.is_file() and not path.is_dir():  # stat only: opening a FIFO or a device could block
            raise InputError(f"{spec}: not a regular file (a FIFO, socket or device); a problem is {ACCEPTED}")
        return path

    def load(self) -> TimeStepProblem:
        from workbench.io import load_problem
        spec, path = self.spec, self._checked_path()
        if any(path.suffix.lower() in f.suffixes for f in formats.FORMATS) or not path.is_file():
            return load_problem(path)
        try:  # an unknown suffix: the reader sniffs the content, and says the accepted forms if it fails
            return load_problem(path)
        except InputError as exc:
            why = str(exc).removeprefix(f"{path}: ")
            raise InputError(f"{spec}: not a problem file ({why}); a problem is {ACCEPTED}") from None

    def metadata(self, root: os.PathLike | str | None = None) -> dict[str, Any] | None:
        """The parameters a generated packing was made with: its entry in the ``MANIFEST.json`` of its
        folder (problems.generator; the entry's "generator" table, with the settling steps), else the
        ``NAME.json`` beside it that older generators wrote; None for a file without either.

        Read only inside :func:`trusted_roots` (``root`` among them), as a regular file of at most 4 MiB,
        no link followed: a row's source in a received folder never makes the report open a file
        elsewhere (or wait on a FIFO)."""
        from problems.generator import MANIFEST
        roots = [r.resolve() for r in trusted_roots(root)]
        try:
            data = self.path().resolve()
        except Exception:  # noqa: BLE001 - a spec that names no file has no parameters
            return None
        manifest = _own_json(data.parent / MANIFEST, roots)
        entry = manifest.get(data.name) if isinstance(manifest, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("generator"), dict):
            return {**entry["generator"], "steps": entry["generator"].get("steps", entry.get("steps"))}
        beside = _own_json(data.with_suffix(".json"), roots)
        if isinstance(beside, dict) and isinstance(beside.get("generator"), dict):
            return {**beside["generator"],
                    "steps": beside["generator"].get("steps", (beside.get("settling") or {}).get("steps"))}
        return None


class _NamedSource(Source):
    """A source of the registry :data:`NAMED`; ``kinds``: the registry kinds its prefix takes."""
    kinds: ClassVar[tuple[str, ...]] = ()

    def load(self) -> TimeStepProblem:
        try:
            return _named_problem(self.target, self.kinds, self.params)
        except InputError as exc:
            raise InputError(f"{self.spec}: {exc}") from None

    def check(self) -> None:
        try:
            func = builder(self.target, *self.kinds)
            try:
                check_params(self.target, func, self.params)
            except InputError as exc:  # as _call says it
                raise InputError(f"{exc}; {_PARAMS_HINT}") from None
        except InputError as exc:
            raise InputError(f"{self.spec}: {exc}") from None


class SceneSource(_NamedSource):
    """``scene:NAME``: a static scene's time step, or a dynamic scene's first time step with a contact."""
    origin = "scene"
    kinds = ("scene", "scenario")


class ScenarioSource(_NamedSource):
    """``scenario:NAME``: a dynamic scene; as a problem, its first time step with a contact; in a study,
    each run simulates it (workbench.study.simulation), keyed by its name and parameters."""
    origin = "scenario"
    kinds = ("scenario",)
    simulated = True

    def build(self):
        """The dynamic scene (problems.dynamic_scenes.Scenario), built with ``params`` (:func:`scenario`)."""
        return scenario(self.target, **self.params)

    def materialise(self, folder: Path) -> list[Source]:
        """Itself, built once here (bad parameters stop the study before any run), its facts those of
        its bodies, its data hash that of its name and parameters."""
        import hashlib
        import json
        bodies = self._made(self.build).world.bodies
        digest = hashlib.sha256(json.dumps({"scenario": self.target, "params": self.params}, sort_keys=True,
                                           default=str).encode()).hexdigest()
        return [replace(self, name=self.name or self.target,
                        facts=Facts(digest, "simulation", 0, int(bodies.n * bodies.dof), int(bodies.dim)))]


class GeneratorSource(_NamedSource):
    """``generator:NAME``: the problem(s) a generator makes from ``params``; in a study, each saved in
    the native format under the results folder's problems/ (the exact data next to the results, and a
    file the workers load)."""
    origin = "generator"
    kinds = ("generator",)

    def materialise(self, folder: Path) -> list[Source]:
        problems = self._made(lambda: generate(self.target, **self.params))
        name = self.name or self.target
        named = [(name, problems[0])] if len(problems) == 1 else [(f"{name}-{i}", p) for i, p in enumerate(problems)]
        out = []
        for label, problem in named:
            folder.mkdir(parents=True, exist_ok=True)
            path = Path(folder) / f"{label}.npz"
            _save(problem, path)
            out.append(FileSource(str(path), {}, name=label, tags=self.tags, series=self.series,
                                  facts=Facts.of(problem)))
        return out


class FamilySource(Source):
    """``family:NAME`` with ``params = {"members": N}``: members 0 ... N-1 of the dataset family NAME
    (:mod:`problems.families`: a protocol and packings that differ only in what it leaves free), the
    same members for every method. A set of problems, not one: :meth:`load` refuses (naming a member's
    spec), :meth:`members` gives the member sources ``dataset:NAME-mMM``, each named by its dataset and
    tagged with the study's tags, or with the family's name when the study gives none (so the report's
    conclusion groups the members by their family). Fewer members in problems/datasets than asked: an
    InputError naming ``workbench generate NAME --members N``."""
    origin = "family"

    def count(self) -> int:
        """N, the member count (``params["members"]``); InputError (one line) when it is missing, not a
        whole number >= 1, or other parameters are given."""
        other = sorted(set(self.params) - {"members"})
        if other:
            raise InputError(f"{self.spec}: a family takes one parameter, members = N (got {', '.join(other)})")
        n = self.params.get("members")
        if n is None:
            raise InputError(f"{self.spec}: a family needs its member count: members = N in a study's group, "
                             "--set members=N on the command line")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InputError(f"{self.spec}: members is a whole number >= 1, got {n!r}")
        return n

    def names(self) -> list[str]:
        """The members' dataset names (problems.families.members): InputError when the family is unknown
        or has fewer members in problems/datasets than asked."""
        from problems import families
        n = self.count()
        try:
            return families.members(self.target, n)
        except InputError as exc:
            raise InputError(f"{self.spec}: {exc}") from None

    def members(self) -> list[Source]:
        tags = self.tags or (self.target,)
        return [FileSource(f"{_DATASET_PREFIX}{m}", {}, name=m, tags=tags, series=self.series) for m in self.names()]

    def check(self) -> None:
        self.load()

    def load(self) -> TimeStepProblem:
        from problems import families
        try:
            families.family(self.target)
        except InputError as exc:
            raise InputError(f"{self.spec}: {exc}") from None
        raise InputError(f"{self.spec} is a family, a set of problems, not one: name a member "
                         f"({_DATASET_PREFIX}{families.member_name(self.target, 0)}, ...), or the family in a study "
                         f"(members = N)")

    def materialise(self, folder: Path) -> list[Source]:
        return [made for member in self.members() for made in member.materialise(folder)]

    def summary(self) -> dict[str, Any]:
        """What ``workbench info`` says of the family: its protocol and the members there are."""
        from problems import families
        try:
            fam = families.family(self.target)
        except InputError as exc:
            raise InputError(f"{self.spec}: {exc}") from None
        have = families.available(fam.name)
        shown = [f"{_DATASET_PREFIX}{families.member_name(fam.name, m)}" for m in range(have)]
        return {"family": fam.name, "protocol": fam.dataset, "summary": fam.summary,
                "members here": f"{have} (make more: workbench generate {fam.name} --members N)",
                "member specs": ", ".join(shown) or "none"}


#: the kinds of spec, by prefix ("" is a file): adding one is a Source subclass and one line here
#: (ARCHITECTURE.md); a family of problems (``family:NAME``, members = N) is one whose
#: :meth:`Source.members` gives several
ORIGINS: dict[str, type[Source]] = {
    "": FileSource,
    SHARED_PREFIX: FileSource,
    _DATASET_PREFIX: FileSource,
    "scene:": SceneSource,
    "scenario:": ScenarioSource,
    "generator:": GeneratorSource,
    "family:": FamilySource,
}


def _save(problem: TimeStepProblem, path: Path) -> None:
    """Write atomically, so an interrupted study never leaves a half-written problem behind."""
    from workbench.files import atomic_output
    from workbench.io import save_problem
    with atomic_output(path) as tmp:
        save_problem(problem, tmp)


def _own_json(path: Path, roots: list[Path]):
    """The JSON document at ``path`` when it lies inside one of ``roots`` and is a regular file of at most
    4 MiB (opened without following a link, without waiting on a FIFO), else None."""
    import json
    import stat

    if not any(r == path.parent or r in path.parents for r in roots):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4 * 2**20:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
