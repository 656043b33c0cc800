"""Any other conic solver that cvxpy finds installed and that handles second-order cones
(ECOS, CVXOPT, GUROBI, COPT, SCIP, ...), under its lower-case cvxpy name. It takes no ``backend.NAME``
parameter: the workbench does not know that solver's settings, so it cannot declare them (a setting
reaches a solver only when declared, workbench.solvers.cvxpy_base; SCIP's ``scip_params`` can name
files to write, ``visual/vbcfilename``, and crashed SCIP natively). Tolerances and caps have
solver-specific names, so ``tol``, ``max_iter`` and ``time_limit`` are not mapped (a result
with a time limit says so: ``info["time_limit_enforced"] = False`` and its message)."""

from __future__ import annotations

from workbench.solvers.cvxpy_base import CvxpySolver


def other_conic_solvers(known: set[str]) -> list[str]:
    """cvxpy names of installed solvers that accept second-order cones and are not in ``known``."""
    import cvxpy as cp
    from cvxpy.constraints import SOC
    from cvxpy.reductions.solvers.defines import SOLVER_MAP_CONIC

    names = []
    for name in cp.installed_solvers():
        intf = SOLVER_MAP_CONIC.get(name)
        if intf is not None and SOC in intf.SUPPORTED_CONSTRAINTS and name.lower() not in known:
            names.append(name)
    return names


class GenericCvxpySolver(CvxpySolver):
    summary = "conic solver found by cvxpy"
    #: why a backend.* setting is refused (workbench.solvers.split_params adds it to the message)
    backend_note = ("a solver cvxpy found takes no backend.* setting: the workbench cannot declare its settings, "
                    "and a setting reaches a solver only when declared")

    def __init__(self, cvxpy_name: str):
        self.cvxpy_name = cvxpy_name
        self.name = cvxpy_name.lower()
        self.summary = f"{cvxpy_name} (found installed by cvxpy)"

    def solve(self, model, options):
        """The cvxpy solve; with a time limit, the result says that it was not passed on (the
        solver's own name for it is unknown here): only a worker's hard limit (``solve
        --time-limit``, a study) bounds such a solve."""
        result = super().solve(model, options)
        if options.time_limit is not None:
            result.info["time_limit_enforced"] = False
            note = (f"time_limit {options.time_limit:g} s was not passed to {self.cvxpy_name} (a solver cvxpy found; "
                    "its setting has a name of its own): only a worker's hard limit bounds it")
            result.message = f"{result.message}; {note}" if result.message else note
        return result
