"""The fits that calibrate the generator's unstated parameters against Mazhar et al. 2014.

Mazhar et al. 2014 (sec. 5.1, 5.2) give neither the spheres' mass nor the container's floor. Both are
fitted here, each on one of the paper's numbers, and everything else they report is kept for the test:

* the floor width w [m] on a contact count C(w) (sec. 5.2: 77 contacts at 64 spheres). C falls as the
  floor widens (fewer layers, fewer sphere-sphere contacts), and it is an integer, so the fit is a
  bisection over w to the narrowest bracket [w_lo, w_hi] where C crosses the target
  (:func:`fit_monotone`);
* the common sphere mass m [kg] on the settled objective f(m) (sec. 5.1: -0.0232). The exponent p of
  f proportional to m^p is measured, not assumed: the log-log slope of f over masses actually solved
  (:func:`scaling_exponent`), then m = (f_target / f(1 kg))^(1/p) (:func:`fit_power`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    """One fitted parameter: ``value`` (the bracket's point whose measure is closest to the target),
    the bracket [``lo``, ``hi``] that holds the crossing, and every (parameter, measure) evaluated."""
    value: float
    lo: float
    hi: float
    target: float
    evaluations: tuple[tuple[float, float], ...]

    @property
    def residual(self) -> float:
        """The fitted point's measure minus the target."""
        return dict(self.evaluations)[self.value] - self.target


def fit_monotone(measure: Callable[[float], float], target: float, lo: float, hi: float, *,
                 width: float) -> Fit:
    """Bisect [lo, hi] for the x where a monotone ``measure`` crosses ``target`` until the bracket is
    at most ``width`` wide. The measure at lo and at hi must lie on either side of the target (or on
    it); a step function (a contact count) is met to the bracket, not to a root."""
    if not lo < hi or width <= 0:
        raise ValueError(f"bad bracket [{lo}, {hi}] or width {width}")
    seen: dict[float, float] = {lo: float(measure(lo)), hi: float(measure(hi))}
    side_lo = np.sign(seen[lo] - target)
    if side_lo * np.sign(seen[hi] - target) > 0:
        raise ValueError(f"the measure does not cross {target} on [{lo}, {hi}]: {seen[lo]}, {seen[hi]}")
    while hi - lo > width and seen[lo] != target and seen[hi] != target:
        mid = 0.5 * (lo + hi)
        seen[mid] = float(measure(mid))
        if np.sign(seen[mid] - target) == side_lo:
            lo = mid
        else:
            hi = mid
    best = min((lo, hi), key=lambda x: (abs(seen[x] - target), x))
    return Fit(best, lo, hi, float(target), tuple(sorted(seen.items())))


def scaling_exponent(parameters, values) -> float:
    """The least-squares slope p of log|value| over log(parameter): value proportional to parameter^p.
    Needs at least two distinct positive parameters and values of one sign, none zero."""
    x = np.asarray(parameters, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.size < 2 or np.unique(x).size < 2 or np.any(x <= 0):
        raise ValueError("need at least two distinct positive parameters")
    if np.any(y == 0) or np.unique(np.sign(y)).size > 1:
        raise ValueError("values must be nonzero and of one sign")
    return float(np.polyfit(np.log(x), np.log(np.abs(y)), 1)[0])


def fit_power(value_at_unit: float, target: float, exponent: float) -> float:
    """The parameter m where value_at_unit * m^exponent equals target (same sign as value_at_unit)."""
    if exponent == 0 or value_at_unit == 0 or np.sign(value_at_unit) != np.sign(target):
        raise ValueError(f"no power fit of {target} from {value_at_unit} with exponent {exponent}")
    return float((target / value_at_unit) ** (1.0 / exponent))
