"""SCS (operator splitting for conic programs), through cvxpy.

eps_abs = eps_rel = tol / 100 on the O(1)-scaled model (see SolveOptions); the per-iteration history is SCS's own CSV log
(residuals, gap, objectives; one row per iteration).
"""

from __future__ import annotations

import os
import tempfile

import pandas as pd

from workbench.solvers.cvxpy_base import CvxpySolver


class ScsSolver(CvxpySolver):
    name = "scs"
    summary = "SCS splitting conic solver (via cvxpy)"
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
            if "elapsed" in history:
                history["elapsed"] = history["elapsed"] / 1e3  # SCS logs milliseconds
            for col in ("pobj", "dobj"):
                if col in history:
                    history["solver_" + {"pobj": "primal", "dobj": "dual"}[col] + "_objective"] = \
                        history[col].map(model.unscale_objective)
        return raw, history
