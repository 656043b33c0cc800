"""SCS (operator splitting for conic programs), through cvxpy.

eps_abs = eps_rel = tol / 100 on the O(1)-scaled model (see SolveOptions); the per-iteration history
comes from SCS's own CSV log: objective = its primal objective (physical units), error =
max(res_primal, res_dual), extras res_primal, res_dual, gap and the dual objective; seconds = SCS's own
clock. SCS's settings (SCS_SETTINGS, from its documentation) are the parameters ``backend.NAME``.

Also takes the fixed-point models (workbench.solvers.fixed_point): one scs.SCS object on the data
compiled once (workbench.solvers.compiled), updated between outer iterations by SCS.update(c=...) (dual) or update(b=...)
(primal); the factorisation of the KKT matrix is kept. ``inner_warm_start`` (a parameter of fixed-point runs, default on) starts each
inner solve from the previous one's solution: measured with benchmarks/timing/bench_exact.py (2026-11-21), it
cut the inner iterations where they are many (Capsules-i125-1213: 292,600 -> 44,650 over the outer
loop; Capsules-i100-889: 121,675 -> 72,675) and changed them little elsewhere (Box_Stacks 800 -> 850,
a 10,000-contact packing 1,875 -> 2,025 in 3 outer iterations, at less wall time).
"""

from __future__ import annotations

import os
import tempfile

import pandas as pd

from workbench.params import Param
from workbench.solvers.cvxpy_base import CvxpySolver
from workbench.solvers.fixed_point import FixedPointCapable

#: SCS 3's settings and their defaults (SCS documentation, "Settings"); cvxpy adds use_indirect. Not
#: declared, so never taken from a user: write_data_filename and log_csv_filename (file names; the
#: workbench sets the log's itself, to a temporary file it reads back)
SCS_SETTINGS = {"normalize": True, "scale": 0.1, "adaptive_scale": True, "rho_x": 1e-6, "max_iters": 100_000,
                "eps_abs": 1e-4, "eps_rel": 1e-4, "eps_infeas": 1e-7, "alpha": 1.5, "time_limit_secs": 0.0,
                "verbose": True, "acceleration_lookback": 10, "acceleration_interval": 10, "warm_start": False,
                "use_indirect": False}


class ScsSolver(FixedPointCapable, CvxpySolver):
    name = "scs"
    summary = "SCS splitting conic solver (via cvxpy)"
    cvxpy_name = "SCS"
    install_hint = "pip install scs"
    history_error = "max(res_primal, res_dual)"
    history_extras = ("res_primal", "res_dual", "gap", "solver_dual_objective")
    default_max_iter = SCS_SETTINGS["max_iters"]
    fixed_point_params = (Param("inner_warm_start", bool, True, "fixed-point formulations: start each inner "
                                "solve from the previous solution"),)

    def backend_settings(self):
        return SCS_SETTINGS

    def settings(self, options):
        s = {"eps_abs": options.tol / 100, "eps_rel": options.tol / 100, "max_iters": self.max_iter(options)}
        if options.time_limit is not None:
            s["time_limit_secs"] = float(options.time_limit)
        return s

    def run(self, model, data, chain, options, opts, rec):
        if not rec.keep:
            return super().run(model, data, chain, options, opts, rec)
        fd, path = tempfile.mkstemp(suffix=".csv", prefix="scs_log_")
        os.close(fd)
        try:
            raw = super().run(model, data, chain, options, {**opts, "log_csv_filename": path}, rec)
            log = pd.read_csv(path) if os.path.getsize(path) else None
        finally:
            os.unlink(path)
        if log is not None:
            log.columns = [c.strip() for c in log.columns]
            unscale = model.unscale_objective
            for row in log.itertuples(index=False):
                rec.record(row.iter, unscale(row.pobj), max(row.res_pri, row.res_dual), row.res_pri, row.res_dual,
                           row.gap, unscale(row.dobj), seconds=row.time)
        return raw
