"""Export a time step, in a chosen formulation, to the files other solvers and tools read.

    export(problem, formulation, fmt, path, *, solution=None, guess=None, scaled=True) -> [Path, ...]

Two kinds of format, one module each:

* model formats write the optimisation problem of a formulation, its backend-neutral description
  (:class:`formulations.qp.ConicQP`, the one the workbench's cvxpy models are generated from) in the
  form of :func:`workbench.export.model.export_form`: ``cbf`` (Conic Benchmark Format v3), ``ptf`` and
  ``task`` (MOSEK, through the mosek package), ``lp`` (CPLEX LP), ``mps`` (free MPS with QUADOBJ and
  QCMATRIX), ``nl`` (AMPL). Formulations, by the names of the registry (``formulations.FORMULATIONS``):
  the keys of ``MODELS``: the relaxed ``dual`` and ``primal`` (conic QPs, Mazhar et al. 2014 eqs.
  24/23) and ``lcp-pyramid`` with its primal ``lcp-pyramid-primal`` (Anitescu & Hart 2003 QP (15) with
  Gamma = 0 on pyramidal cones, the QP LCP2 solves, in impulses and in velocities; the pyramid LCP
  itself is no optimisation problem). The old names ``pyramid-dual`` / ``pyramid-primal`` are read as
  deprecated aliases (:func:`model_name`).
* data formats write the problem data: ``fclib`` (FCLib HDF5), ``dat`` (Siconos numerics text),
  ``mat`` (MATLAB), ``npz`` (numpy). Formulations: ``raw`` (the problem as it is, global or local)
  and ``local`` (the Delassus form W = N, q = r). ``solution`` and ``guess`` (impulses nu in N s, or a
  SolveResult) go into the formats that hold them (fclib, mat, npz).

Every file says what it encodes (source problem, workbench version, formulation and relaxation,
contact grouping [normal, tangents], friction coefficients, units, sign conventions, scaling):
comment lines in text formats, attributes or fields in HDF5/.mat/.npz, and ``PATH.json`` next to
formats without room for comments (.dat, .nl, .task). Model formats are written on the scales of the
load-carrying contacts (:func:`workbench.export.model.export_scale`), each far separated contact scaled on
its own (:func:`workbench.export.model.equilibrate_contacts`), unless ``scaled=False``; the header gives
the scales.

Adding a model formulation is one line in ``MODELS``: the formulation's ``describe(problem, *, scaled)
-> ConicQP`` (a QP with linear rows, nonnegativity bounds and friction cones; a pyramid QP has rows
and bounds only). Adding a format is a module with ``write`` and one line in ``FORMATS``.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import InputError, UnsupportedError, did_you_mean, unknown

if TYPE_CHECKING:  # the format table is read when the command line starts: numpy loads when a problem is exported
    import numpy as np

    from workbench.problem import TimeStepProblem

__all__ = ["export", "FORMATS", "MODELS", "DATA_FORMULATIONS", "DEPRECATED", "format_from_path", "model_name",
           "build_model"]

#: formulation (the registry's name; ``-primal``: its primal QP) -> "module:function" describing it as a ConicQP
MODELS: dict[str, str] = {
    "dual": "formulations.relaxed_dual:describe",
    "primal": "formulations.relaxed_primal:describe",
    "lcp-pyramid": "formulations.lcp_pyramid:describe_dual",
    "lcp-pyramid-primal": "formulations.lcp_pyramid:describe_primal",
}
#: old export names of model formulations -> the registry's, still read with a note
DEPRECATED: dict[str, str] = {"pyramid-dual": "lcp-pyramid", "pyramid-primal": "lcp-pyramid-primal"}

#: formulations of the data formats
DATA_FORMULATIONS = ("raw", "local")


@dataclass(frozen=True)
class Format:
    writer: str                 # "module:function"
    kind: str                   # "model" or "data"
    suffixes: tuple[str, ...]
    summary: str


FORMATS: dict[str, Format] = {
    "cbf": Format("workbench.export.cbf:write", "model", (".cbf",), "Conic Benchmark Format v3 (MOSEK, JuMP, ...)"),
    "ptf": Format("workbench.export.mosek:write", "model", (".ptf",), "MOSEK text task format"),
    "task": Format("workbench.export.mosek:write", "model", (".task",), "MOSEK binary task format"),
    "lp": Format("workbench.export.lp:write", "model", (".lp",), "CPLEX LP with quadratic constraints"),
    "mps": Format("workbench.export.mps:write", "model", (".mps",), "free MPS with QUADOBJ/QCMATRIX"),
    "nl": Format("workbench.export.nl:write", "model", (".nl",), "AMPL .nl (+ .col/.row names)"),
    "fclib": Format("workbench.export.fclib:write", "data", (".hdf5", ".h5"), "FCLib HDF5"),
    "dat": Format("workbench.export.siconos_dat:write", "data", (".dat",), "Siconos numerics text"),
    "mat": Format("workbench.export.matlab:write", "data", (".mat",), "MATLAB v5 .mat (scipy.io.savemat)"),
    "npz": Format("workbench.export.npz:write", "data", (".npz",), "numpy .npz, plain arrays"),
}


def _target(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def format_from_path(path: os.PathLike | str) -> str:
    """The format named by ``path``'s suffix; InputError when none matches."""
    suffix = Path(path).suffix.lower()
    for name, f in FORMATS.items():
        if suffix in f.suffixes:
            return name
    raise InputError(f"cannot tell the format from {str(path)!r}; give one of {', '.join(FORMATS)}")


def model_name(formulation: str) -> tuple[str, str | None]:
    """(the registry's name of ``formulation``, a one-line note when it was given by a deprecated name)."""
    if formulation in DEPRECATED:
        new = DEPRECATED[formulation]
        return new, f"formulation {formulation!r} is deprecated: it is {new!r}, the registry's name"
    return formulation, None


def build_model(problem: TimeStepProblem, formulation: str, *, scaled: bool = True):
    """The ConicQP of ``formulation`` (a key of MODELS, or a DEPRECATED name) for ``problem``, in the form
    the files hold (:func:`workbench.export.model.export_form`), on the export scale
    (:func:`workbench.export.model.export_scale`) with the per-contact scales of
    :func:`workbench.export.model.contact_scales` when ``scaled``."""
    from workbench.export.model import contact_scales, equilibrate_contacts, export_form, export_scale
    formulation = model_name(formulation)[0]
    if formulation not in MODELS:
        raise UnsupportedError(f"formulation {formulation!r} has no optimisation model to export; model formats "
                               f"take: {did_you_mean(formulation, MODELS)}")
    if not scaled:
        return export_form(_target(MODELS[formulation])(problem, scaled=False))
    sc = export_scale(problem)
    qp = _target(MODELS[formulation])(problem, scaled=sc)
    return export_form(equilibrate_contacts(qp, contact_scales(problem, sc)))


def _impulses(problem: TimeStepProblem, value, what: str) -> tuple[np.ndarray | None, dict[str, str]]:
    """(nu, description) from an array of impulses or a SolveResult; checks the length."""
    if value is None:
        return None, {}
    info: dict[str, str] = {}
    if hasattr(value, "nu"):
        info = {f"{what}_from": f"workbench solve: formulation {value.formulation}, solver {value.solver}, "
                                f"status {value.status}"}
        for key in ("relaxed_error", "siconos_error"):
            if key in value.metrics:
                info[f"{what}_{key}"] = repr(float(value.metrics[key]))
        value = value.nu
        if value is None:
            raise InputError(f"the {what} has no impulses (the solve returned none)")
    import numpy as np

    nu = np.asarray(value, dtype=float).reshape(-1)
    if nu.shape[0] != problem.n_unknowns or not np.all(np.isfinite(nu)):
        raise InputError(f"the {what} must be {problem.n_unknowns} finite impulses, got {nu.shape[0]} values")
    return nu, info


def export(problem: TimeStepProblem, formulation: str, fmt: str, path: os.PathLike | str, *,
           solution=None, guess=None, scaled: bool = True) -> list[Path]:
    """Write ``problem`` in ``formulation`` as format ``fmt`` to ``path``; returns the files written.

    ``solution``/``guess``: impulses nu (N s, length n_unknowns) or a SolveResult, for the data formats
    that hold them. ``scaled``: write model formats on O(1)-scaled data (default) or physical data.
    """
    if fmt not in FORMATS:
        raise unknown("export format", fmt, FORMATS)
    spec = FORMATS[fmt]
    writer = _target(spec.writer)
    if spec.kind == "model":
        if solution is not None or guess is not None:
            raise UnsupportedError(f"format {fmt} holds an optimisation model, not a solution or guess; "
                                   "use fclib, mat or npz for those")
        if problem.n_contacts == 0:
            raise UnsupportedError(f"{problem.name or 'the problem'} has no contacts: format {fmt} would hold an "
                                   "optimisation model without a contact unknown (the step is free flight, v = M^-1 k); "
                                   "export its data as fclib, dat, mat or npz instead")
        model = build_model(problem, formulation, scaled=scaled)
        return _written(path, lambda tmp: writer(model, tmp))
    if formulation not in DATA_FORMULATIONS:
        raise UnsupportedError(f"format {fmt} holds problem data: formulation {formulation!r} is not one of its "
                               f"formulations; {did_you_mean(formulation, DATA_FORMULATIONS)}")
    if formulation == "local":
        problem = problem.as_local()
    nu_sol, sol_info = _impulses(problem, solution, "solution")
    nu_guess, guess_info = _impulses(problem, guess, "guess")
    return _written(path, lambda tmp: writer(problem, tmp, formulation=formulation, solution=nu_sol, guess=nu_guess,
                                             notes={**sol_info, **guess_info}))


def _written(path: os.PathLike | str, write) -> list[Path]:
    """Run ``write(tmp)`` through workbench.files.atomic_output: every file (and sidecar) appears
    whole, with the umask's permissions, or not at all; the paths written, beside ``path``."""
    from workbench.files import atomic_output
    target = Path(path)
    with atomic_output(target) as tmp:
        files = write(tmp)
    return [target.parent / Path(f).name for f in files]
