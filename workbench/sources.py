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

The registry :data:`NAMED` maps each name to its kind and builder, so ``info``, ``solve``,
``compare``, ``simulate``, ``export`` and study files know the same scenes. Adding a scene, dynamic
scene or generator is one line in ``NAMED`` (a plugin of a study may add lines too). Builders take
keyword parameters; unknown or missing ones give an InputError naming the parameter and the known ones.
Generators must be deterministic given their parameters (give them a ``seed``): studies key results
by the data hash.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from workbench.errors import InputError, unknown
from workbench.io import formats
from workbench.params import check_params
from workbench.shared_data import PREFIX as SHARED_PREFIX
from workbench.shared_data import reference_files, resolve_shared, shared_data_dir

if TYPE_CHECKING:  # the problem module (numpy, scipy, numba) loads when a problem is made, not at start-up
    from workbench.problem import TimeStepProblem

__all__ = ["Named", "NAMED", "KINDS", "names", "builder", "scenario", "scene_problem", "load",
           "resolve_path", "is_simulation", "dataset_dir", "dataset_names", "ACCEPTED"]

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
ACCEPTED = f"a file ({formats.files_accepted()}), shared:REL, dataset:NAME, scene:NAME, scenario:NAME or generator:NAME"

_DATASET_PREFIX = "dataset:"
_PREFIXES = {"scene:": ("scene", "scenario"), "scenario:": ("scenario",), "generator:": ("generator",)}


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
        # the formulation and solver are never used: free flight steps have nothing to solve
        sim = Simulation(sc.world, sc.h, "dual", "apgd", name=name)
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


def is_simulation(spec: str) -> bool:
    """Whether a study source is simulated by its runs (``scenario:NAME``) rather than solved once."""
    return spec.startswith("scenario:")


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
    """The problem ``spec`` names (module docstring); ``params`` go to a scene or generator builder.
    InputError (one line naming the spec and what is accepted) for anything that is not a problem."""
    for prefix, kinds in _PREFIXES.items():
        if spec.startswith(prefix):
            try:
                return _named_problem(spec[len(prefix):], kinds, params)
            except InputError as exc:
                raise InputError(f"{spec}: {exc}") from None
    if params:
        raise InputError(f"{spec}: a file takes no parameters (got {_show(params)})")
    from workbench.io import load_problem
    path = resolve_path(spec)
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
    if any(path.suffix.lower() in f.suffixes for f in formats.FORMATS) or not path.is_file():
        return load_problem(path)
    try:  # an unknown suffix: the reader sniffs the content, and says the accepted forms if it fails
        return load_problem(path)
    except InputError as exc:
        why = str(exc).removeprefix(f"{path}: ")
        raise InputError(f"{spec}: not a problem file ({why}); a problem is {ACCEPTED}") from None
