"""SCS (operator splitting for conic programs), through cvxpy.

eps_abs = eps_rel = tol / 100 on the O(1)-scaled model (see SolveOptions); the per-iteration history
is SCS's own CSV log (residuals, gap, objectives; one row per iteration).

Also takes the fixed-point models (workbench.solvers.fixed_point): one scs.SCS object on the data
compiled once (workbench.solvers.compiled), updated between outer iterations by SCS.update(c=...) (dual) or update(b=...)
(primal); the factorisation of the KKT matrix is kept. ``inner_warm_start`` (default on) starts each
inner solve from the previous one's solution: measured with benchmarks/bench_exact.py (2026-11-21), it
cut the inner iterations where they are many (Capsules-i125-1213: 292,600 -> 44,650 over the outer
loop; Capsules-i100-889: 121,675 -> 72,675) and changed them little elsewhere (Box_Stacks 800 -> 850,
a 10,000-contact packing 1,875 -> 2,025 in 3 outer iterations, at less wall time).
"""

from __future__ import annotations

import os
import tempfile

import pandas as pd

from formulations.dual_fixed_point import FIXED_POINT_KIND
from workbench.solvers.cvxpy_base import CvxpySolver
from workbench.solvers.fixed_point import FixedPointCapable


class ScsSolver(FixedPointCapable, CvxpySolver):
    name = "scs"
    summary = "SCS splitting conic solver (via cvxpy)"
    accepts = ("cvxpy", FIXED_POINT_KIND)
    cvxpy_name = "SCS"
    install_hint = "pip install scs"

    def settings(self, options):
        s = {"eps_abs": options.tol / 100, "eps_rel": options.tol / 100, "max_iters": int(options.max_iter or 100_000)}
        if options.time_limit is not None:
            s["time_limit_secs"] = float(options.time_limit)
        return s

    def run(self, model, data, chain, options, opts):
        if not options.keep_history:
            return super().run(model, data, chain, options, opts)
        fd, path = tempfile.mkstemp(suffix=".csv", prefix="scs_log_")
        os.close(fd)
        try:
            raw, _ = super().run(model, data, chain, options, {**opts, "log_csv_filename": path})
            history = pd.read_csv(path) if os.path.getsize(path) else None
        finally:
            os.unlink(path)
        if history is not None:
            history.columns = [c.strip() for c in history.columns]
            history = history.rename(columns={"iter": "iteration", "time": "elapsed"})
            for col in ("pobj", "dobj"):
                if col in history:
                    history["solver_" + {"pobj": "primal", "dobj": "dual"}[col] + "_objective"] = \
                        history[col].map(model.unscale_objective)
        return raw, history
