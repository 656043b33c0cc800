"""MOSEK (interior point), through cvxpy — used whenever a licence is found.

Without a licence the mosek package still imports and cvxpy lists it, but solving raises a raw
mosek.Error; so availability checks a licence out first (about 0.06 s without one) and reports
"unavailable, because ..." instead. The licence is looked up as MOSEK does: $HOME/mosek/mosek.lic or
MOSEKLM_LICENSE_FILE. Tolerances: the interior-point relative gap and feasibilities = max(tol^2, 1e-12) (see SolveOptions).
MOSEK's own parameters are given as ``backend.MSK_IPAR_...`` (whole numbers) and ``backend.MSK_DPAR_...``
(finite numbers), parsed by workbench.numbers.number; MOSEK checks their names and ranges. Its string
parameters (``MSK_SPAR_...``: file names of data, logs and parameter files) are refused, so no setting
given by a user names a file; any other key is refused too.
"""

from __future__ import annotations

from functools import lru_cache

from workbench.solvers.cvxpy_base import CvxpySolver, interior_point_tolerance


@lru_cache(maxsize=1)
def _licence_check() -> tuple[bool, str]:
    try:
        import mosek
    except ImportError:
        return False, "the mosek package is not installed (pip install mosek)"
    try:
        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
    except mosek.Error as exc:
        code = getattr(exc, "errno", None) or str(exc).split("(")[0]
        return False, (f"no MOSEK licence could be checked out ({code}); put one at ~/mosek/mosek.lic "
                       "or point MOSEKLM_LICENSE_FILE at it")
    return True, ""


class MosekSolver(CvxpySolver):
    name = "mosek"
    summary = "MOSEK interior-point conic solver (via cvxpy; needs a licence)"
    cvxpy_name = "MOSEK"
    install_hint = "pip install mosek"
    unchecked_prefix = "backend.MSK_"

    def check_params(self, given, kind=None):
        from workbench.errors import InputError
        from workbench.numbers import number
        out = super().check_params(given, kind)
        for key, value in out.items():
            if key.startswith(self.unchecked_prefix):
                whole = key.startswith("backend.MSK_IPAR_")
                if not (whole or key.startswith("backend.MSK_DPAR_")):
                    raise InputError(f"solver mosek: parameter {key} is refused: only MOSEK's numeric parameters "
                                     "(backend.MSK_IPAR_..., backend.MSK_DPAR_...) are taken; its string parameters "
                                     "name files")
                out[key] = number(value, f"solver mosek: parameter {key}", int if whole else float)
        return out

    def availability(self):
        ok, why = super().availability()
        return _licence_check() if ok else (ok, why)

    def settings(self, options):
        t = interior_point_tolerance(options.tol)
        p = {"MSK_DPAR_INTPNT_CO_TOL_REL_GAP": t, "MSK_DPAR_INTPNT_CO_TOL_PFEAS": t,
             "MSK_DPAR_INTPNT_CO_TOL_DFEAS": t, "MSK_IPAR_NUM_THREADS": 1}
        if options.max_iter is not None:
            p["MSK_IPAR_INTPNT_MAX_ITERATIONS"] = int(options.max_iter)
        if options.time_limit is not None:
            p["MSK_DPAR_OPTIMIZER_MAX_TIME"] = float(options.time_limit)
        return {"mosek_params": p}

    def solver_options(self, options):
        opts = super().solver_options(options)
        own = {k: opts.pop(k) for k in list(opts) if k.startswith("MSK_")}
        opts["mosek_params"] = {**opts["mosek_params"], **own}
        return opts
