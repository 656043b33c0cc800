"""The concrete problems of a study: every group loaded once, hashed, and named.

Each problem is loaded (or generated) once by the driver, so a bad file stops the study before any
run with the reader's one-line error, and its *data hash* (:func:`problem_digest`) keys the results.
Workers load problems themselves from :attr:`ProblemRef.source` (a file path or ``scene:NAME``,
through workbench.sources);
generated problems are therefore saved in the native format under ``RESULTS/problems/`` first,
which also keeps the exact data a study ran on next to its results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from workbench.problem import TimeStepProblem, problem_digest
from workbench.study.spec import Study, StudyError

__all__ = ["ProblemRef", "problem_digest", "resolve_problems"]


@dataclass(frozen=True)
class ProblemRef:
    """A problem of the study, as the runner and the report need it (the data stay on disk)."""
    name: str
    source: str
    digest: str
    tags: tuple[str, ...]
    kind: str
    n_contacts: int
    n_dof: int | None
    d: int
    #: a simulation's scene parameters (kind "simulation": source is "scenario:NAME")
    params: dict | None = None
    #: the scaling series of its group (``series = ...`` in the study file)
    series: str | None = None

    def describe(self) -> dict:
        return {"problem": self.name, "source": self.source, "problem_hash": self.digest,
                "tags": list(self.tags), "kind": self.kind, "n_contacts": self.n_contacts,
                "n_dof": self.n_dof, "d": self.d, "params": self.params, "series": self.series}


def _ref(problem: TimeStepProblem, name: str, source: str, tags) -> ProblemRef:
    return ProblemRef(name=name, source=source, digest=problem_digest(problem), tags=tuple(tags),
                      kind=problem.kind, n_contacts=problem.n_contacts, n_dof=problem.n_dof, d=problem.d)


def _generate(generator: str, name: str, params: dict) -> list[tuple[str, TimeStepProblem]]:
    from workbench.sources import generate
    try:
        problems = generate(generator, **params)
    except Exception as exc:  # whatever a generator raises, the study names it and stops
        raise StudyError(f"generator {generator!r} ({name}) failed: {type(exc).__name__}: {exc}") from None
    if len(problems) == 1:
        return [(name, problems[0])]
    return [(f"{name}-{i}", p) for i, p in enumerate(problems)]


def _scenario_ref(scenario: str, name: str, params: dict, tags) -> ProblemRef:
    """A dynamic scene simulated by each run: keyed by its name and parameters (the scene is built
    here once, so bad parameters stop the study before any run)."""
    from workbench.sources import scenario as build_scenario
    try:
        built = build_scenario(scenario, **params)
    except Exception as exc:  # whatever a scene's constructor raises, the study names it and stops
        raise StudyError(f"scenario {scenario!r} ({name}) failed: {type(exc).__name__}: {exc}") from None
    bodies = built.world.bodies
    digest = hashlib.sha256(json.dumps({"scenario": scenario, "params": params}, sort_keys=True,
                                       default=str).encode()).hexdigest()
    return ProblemRef(name=name, source=f"scenario:{scenario}", digest=digest, tags=tuple(tags), kind="simulation",
                      n_contacts=0, n_dof=int(bodies.n * bodies.dof), d=int(bodies.dim),
                      params=dict(params))


def _save(problem: TimeStepProblem, path: Path) -> None:
    """Write atomically, so an interrupted study never leaves a half-written problem behind."""
    from workbench.files import atomic_output
    from workbench.io import save_problem
    with atomic_output(path) as tmp:
        save_problem(problem, tmp)


def resolve_problems(study: Study, problem_dir: Path) -> list[ProblemRef]:
    """Every problem of ``study`` in file order; generated ones are saved under ``problem_dir``."""
    from workbench.io import load_problem
    from workbench.sources import load

    _unique(((name, source) for group in study.groups for name, source in
            [(scene, f"scene:{scene}") for scene in group.scenes]
            + [(label, f"{'scenario' if group.scenario else 'generator'}:{group.scenario or group.generator}")
               for label, _ in group.generated]), study.path)      # the names known before anything is built
    refs: list[ProblemRef] = []
    for group in study.groups:
        first = len(refs)
        for path in group.files:
            problem = load_problem(path)
            refs.append(_ref(problem, problem.name or path.stem, str(path), group.tags))
        for scene in group.scenes:
            refs.append(_ref(load(f"scene:{scene}"), scene, f"scene:{scene}", group.tags))
        if group.scenario is not None:
            refs += [_scenario_ref(group.scenario, label, params, group.tags) for label, params in group.generated]
        for label, params in group.generated if group.scenario is None else ():
            for name, problem in _generate(group.generator, label, params):
                problem_dir.mkdir(parents=True, exist_ok=True)
                path = problem_dir / f"{name}.npz"
                _save(problem, path)
                refs.append(_ref(problem, name, str(path), group.tags))
        if group.series is not None:
            refs[first:] = [dataclasses.replace(r, series=group.series) for r in refs[first:]]
    _unique(((ref.name, ref.source) for ref in refs), study.path)
    return refs


def _unique(named, path=None) -> None:
    """Refuse two problems of one name (results are keyed by name): checked on the names known before
    any problem is built (scenes, generated labels), then on every problem's."""
    seen: dict[str, str] = {}
    for name, source in named:
        if name in seen:
            raise StudyError(f"{str(path) + ': ' if path else ''}two problems are named {name!r} ({seen[name]} and "
                             f"{source}); results are keyed by name, so rename one (name = ... for generated "
                             "problems)")
        seen[name] = source
