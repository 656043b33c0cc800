"""The numbers a report summarises runs with: shifted geometric means, log-log slopes, the first
point within a tolerance of a reference. Pure functions of tables of runs.

Shifted geometric mean (qpbenchmark's definition, after Mittelmann's benchmarks):

    sgm(t; sh) = exp( (1/n) sum_i log(t_i + sh) ) - sh,      sh = 10 s by default,

over every problem of the study, a run that was not solved (any status but "solved", or a method
that cannot take the problem) counting as the time limit. qpbenchmark reports it relative to the best
method (1.0 is the best); reports show both. The shift damps small times: with sh = 10 s, methods
that all take well under a second come out near 1.0 -- a study of small problems should set a
smaller ``shift`` in its [report] table.

Performance profiles: :mod:`workbench.analysis.profiles`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["shifted_geometric_mean", "loglog_slope", "loglog_fit", "first_within"]


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


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x (the exponent of y ~ x^k); NaN with fewer than two
    distinct positive x."""
    return float(loglog_fit(x, y)["slope"])


def loglog_fit(x, y, level: float = 0.95) -> dict[str, float | int]:
    """Ordinary least squares of log y = a + k log x (natural logs) over the points with positive, finite
    x and y: the slope k, its standard error se = sqrt(s^2 / sum (log x - mean)^2) with s^2 the residual
    variance on n - 2 degrees of freedom, and the two-sided ``level`` confidence interval k +- t se
    (Student's t, n - 2 degrees of freedom). With fewer than three distinct x the standard error is
    undefined: slope (two points) or everything NaN, the interval NaN."""
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    lx, ly = np.log(x[keep]), np.log(y[keep])
    n = int(lx.size)
    nan = float("nan")
    out = {"n": n, "slope": nan, "intercept": nan, "se": nan, "low": nan, "high": nan, "level": level}
    if len(np.unique(lx)) < 2:
        return out
    sxx = float(np.sum((lx - lx.mean()) ** 2))
    k = float(np.sum((lx - lx.mean()) * (ly - ly.mean())) / sxx)
    a = float(ly.mean() - k * lx.mean())
    out.update(slope=k, intercept=a)
    if n < 3:
        return out
    se = float(np.sqrt(np.sum((ly - a - k * lx) ** 2) / (n - 2) / sxx))
    half = float(stats.t.ppf(0.5 + level / 2, n - 2)) * se
    out.update(se=se, low=k - half, high=k + half)
    return out


def first_within(x, objective, reference: float, rel_tol: float) -> float:
    """The first x (iteration or seconds) at which |objective - reference| <= rel_tol |reference|
    (Mazhar et al. 2014 section 5.1: APGD iterations to reach the interior-point objective); NaN when never."""
    x, obj = np.asarray(x, dtype=float), np.asarray(objective, dtype=float)
    hit = np.flatnonzero(np.abs(obj - reference) <= rel_tol * abs(reference))
    return float(x[hit[0]]) if hit.size else float("nan")
