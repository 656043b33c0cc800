"""The numbers a report summarises runs with: shifted geometric means, performance profiles,
log-log slopes, the first point within a tolerance of a reference. Pure functions of tables of runs.

Shifted geometric mean (qpbenchmark's definition, after Mittelmann's benchmarks):

    sgm(t; sh) = exp( (1/n) sum_i log(t_i + sh) ) - sh,      sh = 10 s by default,

over every problem of the study, a run that was not solved (any status but "solved", or a method
that cannot take the problem) counting as the time limit. qpbenchmark reports it relative to the best
method (1.0 is the best); reports show both. The shift damps small times: with sh = 10 s, methods
that all take well under a second come out near 1.0 -- a study of small problems should set a
smaller ``shift`` in its [report] table.

Performance profile (Dolan and More, Math. Program. 91, 2002): with t_{p,s} the time method s takes
to solve problem p to the study's tolerance (infinity when it does not), the ratio
r_{p,s} = t_{p,s} / min_s t_{p,s} and

    rho_s(tau) = |{p : r_{p,s} <= tau}| / n_p,

the fraction of problems that s solves within a factor tau of the best method. rho_s(1) is the
fraction on which s is fastest, rho_s(inf) its success rate. Problems no method solves stay in n_p.
A problem the method cannot take (NaN in the table: not applicable, see
:mod:`workbench.report.accounting`) is left out of that method's n_p and of the best time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["shifted_geometric_mean", "performance_ratios", "performance_profile", "loglog_slope",
           "first_within", "MIN_TIME"]

#: floor on times entering a ratio (a clock can read 0 s for a trivial solve)
MIN_TIME = 1e-9


def shifted_geometric_mean(values, shift: float = 10.0) -> float:
    """exp(mean(log(v + shift))) - shift for nonnegative finite ``values``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan")
    if np.any(v < 0) or not np.all(np.isfinite(v)):
        raise ValueError("shifted geometric mean of negative or non-finite values")
    if shift <= 0:
        raise ValueError(f"shift must be positive, got {shift}")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def performance_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """r_{p,s} for a problems x methods table of times (inf = not solved, NaN = not applicable,
    which stays NaN)."""
    t = np.clip(times.to_numpy(dtype=float), MIN_TIME, None)
    with np.errstate(invalid="ignore"):
        best = np.nanmin(np.where(np.isnan(t), np.inf, t), axis=1, keepdims=True) if t.size \
            else np.ones((len(t), 1))
        r = np.where(np.isfinite(best), t / best, np.where(np.isnan(t), np.nan, np.inf))
    return pd.DataFrame(r, index=times.index, columns=times.columns)


def performance_profile(times: pd.DataFrame, taus=None) -> pd.DataFrame:
    """rho_s(tau), index tau, one column per method. ``taus`` defaults to every finite ratio (the
    steps of the profile) and 1."""
    r = performance_ratios(times)
    if taus is None:
        finite = r.to_numpy()[np.isfinite(r.to_numpy())]
        taus = np.unique(np.concatenate([[1.0], finite]))
    taus = np.asarray(taus, dtype=float)
    rho = {}
    for s in r.columns:
        v = r[s].to_numpy()
        n_p = int((~np.isnan(v)).sum())  # the problems s can take
        # a ratio of inf (not solved) never counts, not even at tau = inf
        rho[s] = [(np.isfinite(v) & (v <= tau)).sum() / n_p if n_p else np.nan for tau in taus]
    return pd.DataFrame(rho, index=pd.Index(taus, name="tau"))


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x (the exponent of y ~ x^k); NaN with fewer than two
    distinct positive x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if len(np.unique(x[keep])) < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def first_within(x, objective, reference: float, rel_tol: float) -> float:
    """The first x (iteration or seconds) at which |objective - reference| <= rel_tol |reference|
    (Mazhar et al. 2014 section 5.1: APGD iterations to reach the interior-point objective); NaN when never."""
    x, obj = np.asarray(x, dtype=float), np.asarray(objective, dtype=float)
    hit = np.flatnonzero(np.abs(obj - reference) <= rel_tol * abs(reference))
    return float(x[hit[0]]) if hit.size else float("nan")
