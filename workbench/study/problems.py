"""The concrete problems of a study: every source made once, hashed, and named.

Each source of the study's groups (:meth:`ProblemGroup.sources <workbench.study.spec.ProblemGroup.sources>`,
a :class:`workbench.sources.Source` each) is made once by the driver (:meth:`Source.materialise`), so a
bad file stops the study before any run with the reader's one-line error, and its *data hash*
(:func:`problem_digest`) keys the results. Workers load problems themselves from the Source of their
run; generated problems are therefore saved in the native format under ``RESULTS/problems/`` first,
which also keeps the exact data a study ran on next to its results.
"""

from __future__ import annotations

from pathlib import Path

from workbench.problem import problem_digest
from workbench.sources import Source
from workbench.study.spec import Study, StudyError

__all__ = ["problem_digest", "resolve_problems"]


def resolve_problems(study: Study, problem_dir: Path) -> list[Source]:
    """Every problem of ``study`` in file order, made (facts known); generated ones are saved under
    ``problem_dir``. Two problems of one name are refused (results are keyed by name): first among the
    names known before anything is built (scenes, generated labels, family members), so that a study of
    many groups with one clash stops before making any problem, then among every problem's."""
    sources = [member for group in study.groups for source in group.sources() for member in source.members()]
    _unique(((s.name, s.spec) for s in sources if s.name is not None), study.path)
    made = [m for member in sources for m in member.materialise(problem_dir)]
    _unique(((s.name, s.spec) for s in made), study.path)
    return made


def _unique(named, path) -> None:
    seen: dict[str, str] = {}
    for name, spec in named:
        if name in seen:
            raise StudyError(f"{path}: two problems are named {name!r} ({seen[name]} and {spec}); results are "
                             "keyed by name, so rename one (name = ... for generated problems)")
        seen[name] = spec
