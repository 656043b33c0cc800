"""Solvers, one per module, found through one registry; and ``solve``, which runs one
(problem, formulation, solver) and judges the result with the workbench's own metrics.

Adding a solver is one module and one line in ``SOLVERS``.
"""

from __future__ import annotations

import importlib
import time
import traceback

from workbench.errors import InputError, UnsupportedError
from workbench.solvers.base import STATUSES, SolveOptions, SolveResult, Solver, finalize

__all__ = ["SOLVERS", "get_solver", "list_solvers", "solve", "SolveOptions", "SolveResult", "Solver",
           "STATUSES"]

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
    for cvxpy_name in other_conic_solvers(set(SOLVERS)):
        if cvxpy_name.lower() == name:
            return GenericCvxpySolver(cvxpy_name)
    raise InputError(f"unknown solver {name!r}; known: {', '.join(s.name for s in list_solvers())}")


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


def solve(problem, formulation: str, solver: str, options: SolveOptions | None = None) -> SolveResult:
    """Build ``formulation`` for ``problem``, solve it with ``solver`` and judge the result.

    Raises InputError for unknown names or combinations that cannot work; an unavailable solver
    gives status "unavailable" and a solver that fails gives "failed", both with a message.
    """
    from formulations import get_formulation

    options = options or SolveOptions()
    form = get_formulation(formulation)
    slv = get_solver(solver)
    kinds = [k for k in slv.accepts if k in form.builds]
    if not kinds:
        raise UnsupportedError(f"solver {solver} takes {'/'.join(slv.accepts)} models; formulation "
                               f"{formulation} builds {'/'.join(form.builds)}")
    if problem.n_contacts == 0:
        raise UnsupportedError(f"{problem.name or 'this problem'} has no contacts: its solution is "
                               "v = M^-1 k, there is nothing for a contact solver to do")
    ok, why = slv.availability()
    if not ok:
        return SolveResult(solver=solver, formulation=formulation, status="unavailable", message=why)
    model = form.build(problem, kinds[0], options)
    t0 = time.perf_counter()
    try:
        result = slv.solve(model, options)
    except InputError:
        raise
    except Exception as exc:  # a backend that raises (cvxpy SolverError, ...) ends the run "failed"
        return SolveResult(solver=solver, formulation=formulation, status="failed",
                           solve_seconds=time.perf_counter() - t0,
                           message=" ".join(f"{type(exc).__name__}: {exc}".split()),
                           info={"traceback": traceback.format_exc()})
    if not result.solve_seconds:
        result.solve_seconds = time.perf_counter() - t0
    return finalize(result, model, options, slv.stopped_by(result, options))
