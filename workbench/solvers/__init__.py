"""Solvers, one per module, found through one registry. A solver is paired with a formulation
and solves a problem through :class:`workbench.method.Method` (one layer up).

Adding a solver is one module and one line in ``SOLVERS``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from workbench.errors import InputError, unknown
from workbench.params import check_known

if TYPE_CHECKING:
    from workbench.solvers.base import Solver

__all__ = ["SOLVERS", "get_solver", "solver_names", "list_solvers", "split_params", "parameter_lines", "SolveOptions",
           "SolveResult",
           "Solver", "StopCause", "STATUSES"]

#: the names of workbench.solvers.base offered here, loaded on first use (PEP 562): the registry's
#: names (the command line's help, "did you mean") come without numpy, pandas and numba
_FROM_BASE = ("STATUSES", "SolveOptions", "SolveResult", "Solver", "StopCause")


def __getattr__(name: str):
    if name in _FROM_BASE:
        from workbench.solvers import base
        return getattr(base, name)
    raise AttributeError(f"module 'workbench.solvers' has no attribute {name!r}")


#: name -> "module:Class"; a key "FAMILY:*" registers a family: get_solver("FAMILY:NAME") returns
#: Class(NAME), and list_solvers shows the members in the module's LISTED
SOLVERS: dict[str, str] = {
    "clarabel": "workbench.solvers.clarabel:ClarabelSolver",
    "scs": "workbench.solvers.scs:ScsSolver",
    "mosek": "workbench.solvers.mosek:MosekSolver",
    "newton": "workbench.solvers.newton:NewtonSolver",
    "pqn": "workbench.solvers.pqn:PQNSolver",
    "siconos:*": "workbench.solvers.siconos:SiconosSolver",
    "lemke": "workbench.solvers.lemke:LemkeSolver",
    "lcp1": "workbench.solvers.lcp1:LCP1Solver",
    "lcp2": "workbench.solvers.lcp2:LCP2Solver",
    "apgd": "workbench.solvers.apgd:APGDSolver",
    "pgs": "workbench.solvers.pgs:PGSSolver",
    "jacobi": "workbench.solvers.jacobi:JacobiSolver",
    "bb": "workbench.solvers.bb:BBSolver",
    "admm": "workbench.solvers.admm:ADMMSolver",
    "ipm": "workbench.solvers.ipm:IPMSolver",
}


def get_solver(name: str) -> Solver:
    """An instance of the solver called ``name`` (registered, a member of a registered family, or
    another installed cvxpy conic solver)."""
    family, sep, member = name.partition(":")
    if sep and member and f"{family}:*" in SOLVERS:
        module, cls = SOLVERS[f"{family}:*"].split(":")
        return getattr(importlib.import_module(module), cls)(member)
    if name in SOLVERS:
        module, cls = SOLVERS[name].split(":")
        return getattr(importlib.import_module(module), cls)()
    from workbench.solvers.cvxpy_generic import GenericCvxpySolver, other_conic_solvers
    others = other_conic_solvers(set(SOLVERS))
    for cvxpy_name in others:
        if cvxpy_name.lower() == name:
            return GenericCvxpySolver(cvxpy_name)
    raise unknown("solver", name, solver_names())


def solver_names() -> list[str]:
    """The names ``get_solver`` takes: the registered ones (a family's listed members), then every other
    installed conic solver cvxpy supports (the names alone: instantiating every solver would probe
    Siconos in a subprocess)."""
    from workbench.solvers.cvxpy_generic import other_conic_solvers
    known = [n[:-1] + member if n.endswith(":*") else n for n in SOLVERS
             for member in (importlib.import_module(SOLVERS[n].split(":")[0]).LISTED if n.endswith(":*") else [""])]
    return known + [o.lower() for o in other_conic_solvers(set(SOLVERS))]


def list_solvers() -> list[Solver]:
    """Every registered solver, then any other installed conic solver cvxpy supports."""
    from workbench.solvers.cvxpy_generic import GenericCvxpySolver, other_conic_solvers
    out = []
    for n in SOLVERS:
        if n.endswith(":*"):
            module = importlib.import_module(SOLVERS[n].split(":")[0])
            out += [get_solver(n[:-1] + member) for member in module.LISTED]
        else:
            out.append(get_solver(n))
    out += [GenericCvxpySolver(n) for n in other_conic_solvers(set(SOLVERS))]
    return out


def parameter_lines(name: str) -> list[str]:
    """The declared parameters of the solver or formulation ``name``, one line each (``workbench list
    --params NAME``); InputError when it is neither."""
    from formulations import FORMULATIONS, get_formulation

    from workbench.params import describe
    try:
        target = get_formulation(name) if name in FORMULATIONS else get_solver(name)
    except InputError:
        raise unknown("solver or formulation", name, [*FORMULATIONS, *solver_names()]) from None
    lines = describe(target.params if name in FORMULATIONS else target.parameters())
    prefix = getattr(target, "unchecked_prefix", None)
    if prefix:
        lines.append(f"{prefix}IPAR_NAME (int), {prefix}DPAR_NAME (float): passed to the backend, which checks "
                     "the name and the range (numbers only: no string parameter, none names a file)")
    return lines or ["(no parameters)"]


def split_params(form, slv: Solver, kind: str | None, params: dict[str, Any]) -> tuple[dict, dict]:
    """``params`` divided into the formulation's and the solver's (for models of ``kind``), both
    checked (workbench.params); an unknown key is an InputError listing both's known keys."""
    try:
        check_known(params, form.params + slv.parameters(kind), f"{form.name} x {slv.name}", slv.unchecked_prefix)
    except InputError as exc:
        note = getattr(slv, "backend_note", "")
        if note and any(k.startswith("backend.") for k in params):
            raise InputError(f"{exc} ({note})") from None
        raise
    own = {p.name for p in form.params}
    form_params = form.check_params({k: v for k, v in params.items() if k in own})
    return form_params, slv.check_params({k: v for k, v in params.items() if k not in own}, kind)

