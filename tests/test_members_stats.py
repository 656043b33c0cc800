"""Statistics over family members (workbench/analysis/members.py): the exact order-statistic interval of
the median against the binomial tables and scipy's quantile test, its coverage on known distributions,
and the paired rule that decides "A needs fewer iterations than B" only when the interval excludes 0."""

import math

import numpy as np
import pytest

from workbench.analysis.members import MIN_MEMBERS, compare, median_interval, order_statistic_ranks


def test_ranks_are_the_binomial_tables():
    # the classical sign-test ranks for 95 %: n = 10 -> (2, 9), 97.9 %; n = 20 -> (6, 15), 95.9 %
    assert order_statistic_ranks(10)[:2] == (2, 9) and order_statistic_ranks(10)[2] == pytest.approx(1 - 2 * 11 / 1024)
    assert order_statistic_ranks(20)[:2] == (6, 15) and order_statistic_ranks(20)[2] == pytest.approx(0.958611, abs=1e-6)
    assert order_statistic_ranks(MIN_MEMBERS - 1) is None and order_statistic_ranks(MIN_MEMBERS)[:2] == (1, 6)
    s = median_interval([5, 1, 4, 2, 3])
    assert s["median"] == 3 and (s["low"], s["high"]) == (-math.inf, math.inf) and math.isnan(s["coverage"])


@pytest.mark.parametrize("n", [6, 10, 20, 37])
def test_the_interval_agrees_with_scipys_quantile_test(n):
    from scipy import stats
    if not hasattr(stats, "quantile_test"):
        pytest.skip("scipy without quantile_test")
    x = np.random.default_rng(n).lognormal(size=n)
    s = median_interval(x)
    ci = stats.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(0.95)
    assert (s["low"], s["high"]) == (ci.low, ci.high)


def test_coverage_on_a_known_distribution_is_the_stated_one():
    """4,000 samples of 20 lognormal members (median 1): the interval holds the true median in a fraction
    within 3 standard errors of the stated exact coverage (95.86 %), not just 'about 95 %'."""
    rng = np.random.default_rng(44)
    hits = []
    for _ in range(4000):
        s = median_interval(rng.lognormal(0.0, 2.0, size=20))
        hits.append(s["low"] <= 1.0 <= s["high"])
    cov = order_statistic_ranks(20)[2]
    assert abs(np.mean(hits) - cov) <= 3 * math.sqrt(cov * (1 - cov) / 4000)


def test_the_paired_rule_decides_only_when_the_interval_excludes_zero():
    rng = np.random.default_rng(1)
    b = rng.lognormal(6.0, 1.5, size=20)            # members far apart: 80x between packings
    a = b * 0.5 * rng.lognormal(0.0, 0.2, size=20)   # A about half of B on every member
    r = compare(a, b, label_a="APGD", label_b="SCS", population="settled packings")
    assert r["decided"] == "APGD" and r["sentence"].startswith("APGD needs fewer iterations than SCS on settled")
    assert r["ratio_low"] <= 0.5 <= r["ratio_high"] < 1 and r["n"] == 20
    assert compare(b, a)["decided"] == "B"
    # no systematic difference: undecided, with the member count
    c = b * rng.lognormal(0.0, 1.0, size=20)
    r = compare(c, b, label_a="A", label_b="B")
    assert r["decided"] is None and r["sentence"].startswith("undecided over 20 members")
    # a clear difference on too few members decides nothing
    r = compare(a[:5], b[:5])
    assert r["decided"] is None and "undecided over 5 members" in r["sentence"]
    # unpaired data (the same members for both) is an error, not a comparison
    with pytest.raises(ValueError):
        compare(a, b[:10])


def test_not_reached_is_worse_than_any_reached_value_and_a_tie_with_itself():
    a = np.array([10.0, 12, 9, 11, 10, 13, 8, 10], dtype=float)
    b = np.full(8, np.inf)                     # B never reaches the level
    assert compare(a, b)["decided"] == "A"
    assert compare(b, b)["decided"] is None and compare(b, b)["median"] == 0.0
