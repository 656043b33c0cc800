"""Statistics over the members of a dataset family: a median with its 95 % interval, and the paired
comparison of two methods on the same members with the rule that turns it into a sentence.

Median interval: the exact distribution-free interval of order statistics (the sign test's, e.g.
Conover, *Practical nonparametric statistics*, sec. 3.2; Hollander and Wolfe ch. 3). For n members
sorted x_(1) <= ... <= x_(n), the number of members below the population median is Binomial(n, 1/2)
whatever the distribution (continuous), so

    P( x_(k) <= median <= x_(n+1-k) ) >= 1 - 2 P(B <= k - 1),      B ~ Binomial(n, 1/2),

and the interval takes the largest k with 2 P(B <= k - 1) <= 1 - level. Its coverage is stated
exactly (it is at least ``level``: 97.9 % for 10 members, 95.9 % for 20). Below 6 members no k exists
for 95 % (2 / 2^5 = 6.25 % > 5 %): the interval is then unbounded and every comparison undecided. No
resampling, no seed: the interval is a function of the sorted values alone.

Paired comparison of methods A and B on the same members: d_i = log(a_i / b_i), its median and the same
interval (for the median of the paired log-ratios; exp of it is the median ratio A / B with its
interval). A member where neither reached (both infinite: "not reached", or failed at the same limit)
is a tie, d_i = 0; one where only A did not reach is d_i = +inf (A worse), and so on: the order
statistics take them as they are. The rule (issue 44): "A needs fewer X than B" only when the interval
lies below 0, "B needs fewer X than A" when it lies above 0, else "undecided over n members".
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LEVEL", "MIN_MEMBERS", "order_statistic_ranks", "median_interval", "paired_log_ratio", "compare",
           "INTERVAL_METHOD"]

#: the level of every interval over members
LEVEL = 0.95

#: the fewest members with a 95 % median interval (2 / 2^6 = 3.1 % <= 5 %)
MIN_MEMBERS = 6

#: what every interval over members is, in words (reports and pages say it)
INTERVAL_METHOD = ("exact distribution-free interval of the median (order statistics x_(k), x_(n+1-k), "
                   "k from the Binomial(n, 1/2) distribution; no resampling)")


def order_statistic_ranks(n: int, level: float = LEVEL) -> tuple[int, int, float] | None:
    """(k, n + 1 - k, coverage) of the median interval of n values (1-based ranks, module docstring);
    None when n is too small for ``level`` (no k >= 1 reaches it)."""
    from scipy.stats import binom

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    best = None
    for k in range(1, n // 2 + 1):
        coverage = 1.0 - 2.0 * float(binom.cdf(k - 1, n, 0.5))
        if coverage < level:
            break
        best = (k, n + 1 - k, coverage)
    return best


def median_interval(values, level: float = LEVEL) -> dict:
    """The median of ``values`` (NaN is not allowed: a value that was not measured is the caller's to
    say; +inf is allowed, e.g. "not reached") and its exact interval: ``n``, ``median``, ``low``,
    ``high``, ``level``, ``coverage`` (the exact coverage, >= level), ``ranks`` (k, n + 1 - k). With too
    few values the interval is (-inf, +inf) and ``coverage`` is NaN."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    if np.isnan(x).any():
        raise ValueError("median_interval: NaN among the values (say what was not measured instead)")
    n = int(x.size)
    out = {"n": n, "median": float(np.median(x)) if n else math.nan, "low": -math.inf, "high": math.inf,
           "level": level, "coverage": math.nan, "ranks": None, "method": INTERVAL_METHOD}
    ranks = order_statistic_ranks(n, level) if n else None
    if ranks is not None:
        k, j, coverage = ranks
        out.update(low=float(x[k - 1]), high=float(x[j - 1]), coverage=coverage, ranks=(k, j))
    return out


def paired_log_ratio(a, b) -> np.ndarray:
    """log(a_i / b_i) of paired positive values (+inf allowed: "not reached"); both infinite is a tie (0)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values of other shapes: {a.shape} and {b.shape} (the same members for both)")
    if np.isnan(a).any() or np.isnan(b).any() or (a <= 0).any() or (b <= 0).any():
        raise ValueError("paired log-ratio of values that are not positive (or NaN)")
    both = np.isinf(a) & np.isinf(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.log(a) - np.log(b)
    d[both] = 0.0
    return d


def compare(a, b, *, label_a: str = "A", label_b: str = "B", quantity: str = "iterations",
            population: str = "", level: float = LEVEL) -> dict:
    """The paired comparison of A and B on the same members (module docstring): the interval of the
    median log-ratio (``low``, ``high``, ``median``, ``coverage``, ``n``), the median ratio A / B with
    its interval (``ratio``, ``ratio_low``, ``ratio_high``), ``decided`` ("A", "B" or None) and the
    ``sentence``: "A needs fewer X than B[ on POPULATION] (median ratio r, 95 % interval [lo, hi], n
    members)", or "undecided over n members ..."."""
    d = paired_log_ratio(a, b)
    s = median_interval(d, level)
    ratio = {key: float(np.exp(s[key])) for key in ("median", "low", "high")}
    on = f" on {population}" if population else ""
    interval = (f"{level:.0%} interval [{ratio['low']:.3g}, {ratio['high']:.3g}]" if s["ranks"] is not None
                else f"no {level:.0%} interval under {MIN_MEMBERS} members")
    a_never, b_never = int(np.sum(np.isinf(np.asarray(a, float)))), int(np.sum(np.isinf(np.asarray(b, float))))
    never = "".join(f"; {who} not reached on {k} of {s['n']}" for who, k in ((label_a, a_never), (label_b, b_never)) if k)
    detail = f"median ratio {label_a} / {label_b} {ratio['median']:.3g}, {interval}, {s['n']} members{never}"
    if s["high"] < 0:
        decided, sentence = label_a, f"{label_a} needs fewer {quantity} than {label_b}{on} ({detail})"
    elif s["low"] > 0:
        decided, sentence = label_b, f"{label_b} needs fewer {quantity} than {label_a}{on} ({detail})"
    else:
        decided, sentence = None, f"undecided over {s['n']} members{on}: {quantity} of {label_a} and {label_b} ({detail})"
    return {**s, "ratio": ratio["median"], "ratio_low": ratio["low"], "ratio_high": ratio["high"],
            "decided": decided, "sentence": sentence}
