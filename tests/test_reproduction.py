"""The reproduction tables (benchmarks/reproduce/, workbench.report.reproduction): the verdict rules,
and fresh re-runs of committed rows agreeing with the committed results."""

import json

import pytest

from workbench import provenance
from workbench.report import reproduction as rp
from workbench.report.reproduction import (DEPENDS, NOT_COMPARABLE, NOT_MEASURED, NOT_REPRODUCED, REPRODUCED,
                                          REPRODUCED_FAILURE, UNDECIDED, over_members, paired_members, row, verdict)


def _v(paper, measured, rule, **kw):
    return verdict(row("q", "Table 1", paper, measured, rule, criterion="c", **kw))[0]


def test_within_a_relative_tolerance():
    rule = {"rule": "within", "rel_tol": 0.25}
    assert _v(561, 654, rule) == REPRODUCED          # 16.6 % off
    assert _v(825, 602, rule) == NOT_REPRODUCED      # 27 % off
    assert _v(-0.0232, -0.3849, rule) == NOT_REPRODUCED
    assert _v(-0.0232, -0.0232 * 1.25, rule) == REPRODUCED   # the bound itself counts
    assert _v(-0.0232, None, rule) == NOT_MEASURED


def test_factor_below_same():
    assert _v(0.06, 0.025, {"rule": "factor", "factor": 3}) == REPRODUCED
    assert _v(0.06, 0.0021, {"rule": "factor", "factor": 3}) == NOT_REPRODUCED
    assert _v(0.06, -0.06, {"rule": "factor", "factor": 3}) == NOT_REPRODUCED   # other sign
    assert _v(1e-8, 3e-13, {"rule": "below", "threshold": 1e-6}) == REPRODUCED
    assert _v(1e-8, 2e-5, {"rule": "below", "threshold": 1e-6}) == NOT_REPRODUCED
    assert _v("solved", "MAX ITER", {"rule": "same"}) == NOT_REPRODUCED
    assert _v("MAX ITER", "MAX ITER", {"rule": "same"}) == REPRODUCED
    assert _v([1.0, 3.5], [1.0, 3.5], {"rule": "same"}) == REPRODUCED


def test_findings_are_inequalities():
    harder = {"rule": "holds", "op": ">", "finding": "poorly settled is harder"}
    assert _v("f", [567, 415], harder) == REPRODUCED      # 1e-4 in the issue
    assert _v("f", [602, 654], harder) == NOT_REPRODUCED  # 5e-5 in the issue: reversed
    orders = {"rule": "holds", "op": ">=", "factor": 100.0, "finding": "two orders"}
    assert _v("f", [2.0, 5e-4], orders) == REPRODUCED
    assert _v("f", [2.0, 0.05], orders) == NOT_REPRODUCED
    assert _v("f", [2.0, float("nan")], orders) == NOT_MEASURED
    assert _v("f", None, orders) == NOT_MEASURED


def test_an_obstacle_makes_a_row_not_comparable_and_keeps_the_rules_outcome():
    label, reason = verdict(row("q", "sec. 5.1", -0.0232, -0.3849, {"rule": "within", "rel_tol": 0.25},
                                criterion="c", obstacle="dataset at h = 0.005 s (paper 0.0005 s)"))
    assert label == NOT_COMPARABLE
    assert "h = 0.005 s" in reason and NOT_REPRODUCED in reason
    assert _v(1, 2, {"rule": "not_comparable", "reason": "units unknown"}) == NOT_COMPARABLE
    assert verdict(row("energy", "sec. 5.1", 0.0215, 0.09, rp.not_given("sphere mass"), criterion="c")) == \
        (NOT_COMPARABLE, "sphere mass not given")


def test_malformed_rules_fail_when_the_row_is_made():
    with pytest.raises(ValueError):
        row("q", "s", 1.0, 1.0, {"rule": "roughly"}, criterion="c")
    with pytest.raises(ValueError):
        row("q", "s", 0.0, 1.0, {"rule": "within", "rel_tol": 0.1}, criterion="c")


def test_the_rendered_verdict_follows_the_numbers():
    data = {"title": "t", "setup": "s", "rows": [row("x", "Table 1", 0.06, 0.025, {"rule": "factor", "factor": 3},
                                                      criterion="c")]}
    assert "**reproduced**" in rp.render_table(data)
    data["rows"][0]["measured"] = 0.0021
    page = rp.render_table(data)
    assert "**not reproduced**" in page and "0 reproduced, 1 not reproduced" in page


def test_a_row_over_members_is_judged_on_its_interval():
    """Inside the band: reproduced; outside: not reproduced; straddling a bound: undecided; the member
    count and the interval are on the row. 20 members: the interval is the 6th to the 15th value."""
    rule = {"rule": "within", "rel_tol": 0.25}
    inside = over_members([561 + k for k in range(-10, 10)])                # 551 ... 570
    assert (inside["n"], inside["low"], inside["high"]) == (20, 556, 565)
    assert _v(561, inside["median"], rule, members=inside) == REPRODUCED
    far = over_members([2000 + 10 * k for k in range(20)])
    assert _v(561, far["median"], rule, members=far) == NOT_REPRODUCED
    spread = over_members([300 + 40 * k for k in range(20)])               # 500 ... 860 around 701.25
    label, reason = verdict(row("q", "sec. 5.1", 561, spread["median"], rule, criterion="c", members=spread))
    assert label == UNDECIDED and "straddles" in reason and "20 members" in reason
    page = rp.render_table({"title": "t", "setup": "s", "rows": [row("q", "s", 561, spread["median"], rule,
                                                                      criterion="c", members=spread)]})
    assert "median 680, 95% interval [500, 860], 20 members" in page and "1 undecided" in page
    # one sample of a random protocol, or a few members without a reason, is not a row
    with pytest.raises(ValueError, match="under 10"):
        row("q", "s", 561, 560.0, rule, criterion="c", members=over_members([550, 560, 570]))
    few = over_members([550, 560, 570, 555, 565, 561, 559], fewer="each member is a 30-minute settle")
    assert _v(561, few["median"], rule, members=few) == REPRODUCED      # 7 members: [550, 570]


def test_a_finding_over_members_is_the_paired_ratios_interval():
    import numpy as np
    rng = np.random.default_rng(3)
    b = rng.lognormal(6, 1.5, 12)                   # packings 80x apart
    harder = {"rule": "holds", "op": ">", "finding": "poorly settled needs more iterations"}
    m = paired_members(b * 2.0 * rng.lognormal(0, 0.1, 12), b)
    assert _v("f", [2.0, 1.0], harder, members=m) == REPRODUCED
    m = paired_members(b * 0.5, b)
    assert _v("f", [0.5, 1.0], harder, members=m) == NOT_REPRODUCED
    m = paired_members(b * rng.lognormal(0, 1.0, 12), b)
    assert _v("f", [1.0, 1.0], harder, members=m) == UNDECIDED


def test_a_failure_on_both_sides_is_a_reproduced_failure_not_a_reproduction():
    label, reason = verdict(row("LCP0 outcome", "Table 1", "MAX ITER", "MAX ITER", {"rule": "same"}, criterion="c",
                                failure="both stop at the iteration limit"))
    assert label == REPRODUCED_FAILURE and "iteration limit" in reason
    assert _v("MAX ITER", "solved", {"rule": "same"}, failure="both stop") == NOT_REPRODUCED
    page = rp.render_table({"title": "t", "setup": "s", "rows": [
        row("a", "s", "MAX ITER", "MAX ITER", {"rule": "same"}, criterion="c", failure="both stop"),
        row("b", "s", 1.0, 1.0, {"rule": "same"}, criterion="c")]})
    assert "1 reproduced, 0 not reproduced, 0 not comparable, 0 not measured, 1 reproduced failure." in page


def test_a_quantity_with_several_definitions_names_the_choice_its_verdict_depends_on():
    """Anitescu and Hart's LCP2 error: the maximum and the 2-norm pass, the mean fails by 25x."""
    rule = {"rule": "factor", "factor": 3}
    choices = {"name": "error statistic", "values": {"max": 1.1e-3, "2-norm": 2e-3, "mean": 4e-5}}
    label, reason = verdict(row("LCP2 error", "Table 1", 1e-3, 1.1e-3, rule, criterion="c", choices=choices))
    assert label == f"{DEPENDS} error statistic" and "mean: not reproduced" in reason and "max: reproduced" in reason
    same = {"name": "error statistic", "values": {"max": 1.1e-3, "2-norm": 2e-3}}
    label, reason = verdict(row("LCP2 error", "Table 1", 1e-3, 1.1e-3, rule, criterion="c", choices=same))
    assert label == REPRODUCED and reason.startswith("the same under every error statistic")
    page = rp.render_table({"title": "t", "setup": "s", "rows": [row("e", "s", 1e-3, 1.1e-3, rule, criterion="c",
                                                                      choices=choices)]})
    assert "1 depends on error statistic" in page and "2-norm: 0.002; max: 0.0011; mean: 4e-05" in page
    # the raw data is stored with sorted keys: the page rendered from it is the page written
    data = {"title": "t", "setup": "s", "rows": [row("e", "s", 1e-3, 1.1e-3, rule, criterion="c", choices=choices)]}
    assert rp.render_table(json.loads(json.dumps(data, sort_keys=True))) == page
    with pytest.raises(ValueError):
        row("e", "s", 1e-3, 1e-3, rule, criterion="c", choices={"name": "x", "values": {"max": 1.0}})


def _committed(name):
    path = provenance.RESULTS_DIR / f"{name}.json"
    if not path.exists():
        pytest.skip(f"docs/results/{name}.json not committed")
    return json.loads(path.read_text())["data"]["rows"]


def test_lcp2_errors_agree_with_the_committed_reproduction():
    """A fresh LCP2 solve of the 210-disk cannonball gives the committed Table 1 errors (Clarabel to 1e-8:
    the error of the returned impulses agrees within 5 % relative, or both are below 1e-10)."""
    from benchmarks.reproduce.anitescu_hart_2003 import lcp2_error

    rows = {r["quantity"]: r for r in _committed("repro-anitescu-hart-2003")}
    for mu in (0.1, 0.6):
        committed = rows[f"LCP2 residual error [m/s], mu = {mu:g}"]["measured"]
        fresh = lcp2_error(mu)[0]
        assert fresh == pytest.approx(committed, rel=0.05) or max(fresh, committed) < 1e-10, (mu, fresh, committed)


def test_the_interior_point_objective_agrees_with_the_committed_reproduction():
    """The sec. 5.1 objective of the thoroughly settled packing, re-solved by Clarabel to 1e-10, agrees
    with the committed table within 1e-6 relative (the interior point's accuracy)."""
    from benchmarks.reproduce.mazhar_2014 import interior_point_objective

    rows = {r["quantity"]: r for r in _committed("repro-mazhar-2014")}
    committed = rows["interior-point objective (relaxed dual), thoroughly settled"]
    dataset = committed["dataset"]
    assert interior_point_objective(dataset) == pytest.approx(committed["measured"], rel=1e-6)


def test_a_depends_on_roundoff_row_is_not_reproduced_whatever_the_rule_says():
    label, reason = verdict(row("outcome", "Table 1", "solved", "solved", {"rule": "same"}, criterion="c",
                                roundoff="the probe ends MAX ITER"))
    assert label == NOT_REPRODUCED and reason.startswith("depends on round-off") and "MAX ITER" in reason
    assert _v("solved", "solved", {"rule": "same"}) == REPRODUCED



def test_a_drum_row_whose_trajectories_disagree_depends_on_round_off():
    """benchmarks.reproduce.trajectories.roundoff: the first trajectory's rows; a row that another trajectory
    judges otherwise is "not reproduced (depends on round-off)" with both outcomes, the others keep
    their verdict."""
    from benchmarks.reproduce.trajectories import roundoff
    rule = {"rule": "holds", "op": "<", "finding": "fewer"}
    as_built = [row("a", "Table 3", "fewer", [1.0, 2.0], rule, criterion="c"),
                row("b", "Table 3", "fewer", [3.0, 2.0], rule, criterion="c")]
    perturbed = [row("a", "Table 3", "fewer", [1.5, 2.0], rule, criterion="c"),
                 row("b", "Table 3", "fewer", [1.0, 2.0], rule, criterion="c")]
    rows = roundoff([as_built, perturbed])
    assert verdict(rows[0])[0] == REPRODUCED and "roundoff" not in rows[0]
    label, reason = verdict(rows[1])
    assert label == NOT_REPRODUCED and reason.startswith("depends on round-off")
    assert "as built: not reproduced" in reason and "perturbed (seed 1): reproduced" in reason

#: BLAS settings of the machine-independence test: 1 and 2 threads, two OpenBLAS kernels
BLAS_SETTINGS = ({"OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell"},
                 {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Haswell"},
                 {"OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Sandybridge"},
                 {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Prescott"})


def _anitescu_hart_quick(tmp_path, blas: dict) -> list[tuple]:
    """(quantity, measured outcome, verdict, pivot sequence) of every LCP0 outcome row of
    ``benchmarks.reproduce anitescu-hart-2003 --quick`` run in a fresh interpreter under ``blas``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    folder = tmp_path / "_".join(blas.values())
    env = {**os.environ, **blas, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-m", "benchmarks.reproduce", "anitescu-hart-2003", "--quick",
                    "--results-dir", str(folder)], env=env, cwd=root, capture_output=True, check=True, timeout=600)
    rows = json.loads((folder / "repro-anitescu-hart-2003.json").read_text())["data"]["rows"]
    return [(r["quantity"], r["measured"], verdict(r), r["shown"].split("pivot sequence ")[1][:16])
            for r in rows if r["quantity"].startswith("LCP0 (Lemke) outcome")]


@pytest.mark.slow
def test_lemke_outcomes_and_verdicts_do_not_depend_on_blas_threads_or_kernel(tmp_path):
    """Anitescu and Hart 2003 Table 1 on the quick (55-disk) cannonball: the same pivot sequences (hash),
    outcomes and verdicts with 1 and 2 BLAS threads and under the Haswell, Sandybridge and Prescott
    kernels of OpenBLAS (each in its own interpreter: OpenBLAS reads them when it loads)."""
    runs = [_anitescu_hart_quick(tmp_path, blas) for blas in BLAS_SETTINGS]
    assert runs[0] and all(len(h) == 16 for *_, h in runs[0])
    for blas, other in zip(BLAS_SETTINGS[1:], runs[1:]):
        assert other == runs[0], blas


def test_poorly_settled_is_harder_is_judged_on_the_sweeps_trend(tmp_path, monkeypatch):
    """Mazhar et al. 2014's "poorly settled is harder for APGD" row reads the settledness sweep's slope of
    log(iterations) against log(kinetic energy): it holds only when the interval lies above 0; no sweep is
    "not measured"; the one-pair rows are never judged."""
    from benchmarks.reproduce import mazhar_2014 as reproduce
    monkeypatch.setattr(reproduce, "RESULTS_DIR", tmp_path)
    assert verdict(reproduce._settledness_trend_row())[0] == NOT_MEASURED

    def sweep(low, high):
        fit = {"slope": (low + high) / 2, "low": low, "high": high, "n": 6, "level": 0.95, "se": 0.1, "intercept": 0}
        data = {"caps": [10, 10000], "paper_threshold": "5e-05",
                "fits": {"iterations": {"kinetic_energy": {"5e-05": fit}}}}
        (tmp_path / "settledness.json").write_text(json.dumps({"data": data}))
        return verdict(reproduce._settledness_trend_row())[0]
    assert sweep(0.05, 0.4) == REPRODUCED
    assert sweep(-0.6, -0.1) == NOT_REPRODUCED         # contradicted
    assert sweep(-0.2, 0.3) == UNDECIDED               # the interval contains 0: one of the verdict words, not a loss
    r = reproduce._settledness_trend_row()
    assert r["members"]["n"] == 6 and "fewer" in r["members"] and "distinct packings" in verdict(r)[1]


def test_a_committed_row_not_run_is_not_measured_never_not_comparable():
    """Issue 32's rule on every committed reproduction page: a row whose measurement is missing (nothing run) is
    "not measured", with why; "not comparable" is for numbers measured that cannot be set beside the paper's."""
    for record in sorted((provenance.RESULTS_DIR).glob("repro-*.json")):
        for r in json.loads(record.read_text(encoding="utf-8"))["data"]["rows"]:
            if r["rule"]["rule"] == "not_comparable":
                assert r.get("measured") is not None or r.get("shown"), (record.name, r["quantity"])


def test_a_trend_row_is_judged_on_its_slope_beyond_two_standard_errors():
    """benchmarks.reproduce.melanz_2015.loglog_trend is loglog_fit's slope and standard error (n - 2 degrees of
    freedom): exact on a power law, NaN under TREND_SIZES sizes; _trend_row holds when k - 2 SE > 0."""
    import math

    from benchmarks.reproduce import melanz_2015 as reproduce
    x = [10.0, 20.0, 40.0, 80.0, 160.0]
    k, se = reproduce.loglog_trend(x, [3.0 * v ** 0.5 for v in x])
    assert k == pytest.approx(0.5, abs=1e-12) and se == pytest.approx(0.0, abs=1e-12)
    assert all(math.isnan(v) for v in reproduce.loglog_trend(x[:4], x[:4]))
    grows = reproduce._trend_row("q", "Fig. 1", "grows", x, [1.0, 1.3, 1.9, 2.2, 3.5], "y", "none", "")
    flat = reproduce._trend_row("q", "Fig. 1", "grows", x, [1.0, 1.3, 0.9, 1.2, 1.0], "y", "none", "")
    assert verdict(grows)[0] == REPRODUCED and verdict(flat)[0] == NOT_REPRODUCED


def test_an_obstacle_holds_under_every_definition_of_a_choice():
    """A row with choices and an obstacle (a quick run's reduced scene) is not comparable, with the verdict
    under each definition in its reason."""
    choices = {"name": "error statistic", "values": {"max": 1.1e-3, "mean": 4e-5}}
    label, reason = verdict(row("LCP2 error", "Table 1", 1e-3, 1.1e-3, {"rule": "factor", "factor": 3}, criterion="c",
                                choices=choices, obstacle="quick run"))
    assert label == NOT_COMPARABLE and reason.startswith("quick run") and "mean: not reproduced" in reason


def test_simulated_rows_are_judged_over_their_members():
    """benchmarks.reproduce.trajectories.over_members: a numeric row is judged on the interval of its
    median over the members (a finding 'A OP f B' on the paired ratio), a status row keeps the round-off
    rule, and fewer than 10 members need a reason."""
    from benchmarks.reproduce.trajectories import over_members
    rule = {"rule": "holds", "op": "<", "factor": 0.5, "finding": "fewer"}

    def member(k, ratio, status):
        return [row("it/step", "Table 3", "fewer", [ratio * (10 + k), 10.0 + k], rule, criterion="c"),
                row("force", "Fig. 8", 10.0, 10.0 + 0.1 * k, {"rule": "within", "rel_tol": 0.05}, criterion="c"),
                row("divs", "Table 3", 0, status, {"rule": "same"}, criterion="c")]

    rows = over_members([member(k, 0.1 + 0.01 * k, 0) for k in range(10)])
    assert verdict(rows[0])[0] == REPRODUCED and rows[0]["members"]["n"] == 10 and rows[0]["members"]["of"] == "ratio"
    assert rows[0]["members"]["high"] == pytest.approx(0.18)    # ranks 2 and 9 of 10: ratios 0.11 ... 0.18
    assert verdict(rows[1])[0] == UNDECIDED                     # 10.1 ... 10.8 straddles 10.5
    assert verdict(rows[2])[0] == REPRODUCED and "members" not in rows[2]
    rows = over_members([member(k, 0.1, k % 2) for k in range(10)])
    assert verdict(rows[2])[0] == NOT_REPRODUCED and "depends on round-off" in verdict(rows[2])[1]
    with pytest.raises(ValueError):
        over_members([member(k, 0.1, 0) for k in range(3)])
    rows = over_members([member(k, 0.1, 0) for k in range(3)], "--quick")
    assert verdict(rows[0])[0] == UNDECIDED and rows[0]["members"]["fewer"] == "--quick"
    page = rp.render_table({"title": "t", "setup": "s", "rows": rows})
    assert "3 members; fewer because --quick" in page


def test_mazhar_sec51_rows_over_the_families_members(monkeypatch):
    """Mazhar et al. 2014 sec. 5.1 over members (constructed measurements): APGD's iterations per protocol
    and the paired finding on the members of the same seed, 'at rest' counted apart from the protocol's
    name, and fewer than 10 members say why (here: only 5 made)."""
    from types import SimpleNamespace

    from benchmarks.reproduce import mazhar_2014 as mz

    def measured(name, cap):
        kind, m = name.split("-00064-m")
        m = int(m)
        apgd = {"settled": 500 + 10 * m, "unsettled": 900 + 20 * m}[kind]
        return {"contacts": 185, "energy": 0.05 if kind == "settled" else 4.0, "at_rest": kind == "unsettled",
                "translational": (0.04 if kind == "settled" else 0.5) * (1 + 0.01 * m),
                "ratio": 1e-5, "objective": -1.0, "apgd": apgd if m != 4 else float("inf"),
                "meta": {"n_bodies": 64}}

    monkeypatch.setattr(mz, "_measure_member", measured)
    monkeypatch.setattr("problems.families.available", lambda name, folder=None: 5)
    args = SimpleNamespace(quick=False, members=None, apgd_cap=20_000, settled_family="settled-00064",
                           unsettled_family="unsettled-00064")
    rows, notes = [], []
    mz.mazhar_members(args, rows, notes)
    by = {r["quantity"]: r for r in rows}
    settled = by["APGD iterations to the interior-point objective, thoroughly settled, over members"]
    assert settled["members"]["n"] == 5 and "5 members of settled-00064 are made" in settled["members"]["fewer"]
    assert settled["measured"] == 520 and verdict(settled)[0] == NOT_COMPARABLE    # 64 spheres, not the paper's 320
    assert "(by the rule alone: undecided" in verdict(settled)[1]                    # under 6 members: no interval
    rest = by["members at rest, poorly settled protocol"]
    assert rest["measured"] == 5 and verdict(rest)[0] == NOT_COMPARABLE and "measured apart" in verdict(rest)[1]
    harder = by["poorly settled is harder for APGD, over members"]
    # member 4 reached on neither side: a tie (ratio 1); the median of 1, 1.8, 1.804, 1.808, 1.811
    assert harder["members"]["of"] == "ratio" and harder["members"]["median"] == pytest.approx(920 / 510)
    assert verdict(harder)[0] == UNDECIDED
    energy = by["kinetic energy ratio, poorly / thoroughly settled (mass-free), over members"]
    assert energy["measured"] == pytest.approx(80.0) and verdict(energy)[0] == UNDECIDED
    # the kinetic energy with or without the rotation: 80 and 12.5, each judged on its own members
    values = energy["choices"]["values"]
    assert values["translational only"]["median"] == pytest.approx(12.5) and values["translational only"]["n"] == 5
    assert "translational only: undecided" in verdict(energy)[1]


def test_a_choice_measured_over_members_is_judged_on_its_interval():
    """choices whose values are members (over_members): each definition judged on its own interval."""
    rule = {"rule": "factor", "factor": 3}
    inside = over_members([70.0 + k for k in range(10)])
    outside = over_members([10.0 + k for k in range(10)])
    r = row("ratio", "Table 1", 73, 75.0, rule, criterion="c",
            choices={"name": "kinetic energy", "values": {"with rotation": inside, "translational": outside}})
    label, reason = verdict(r)
    assert label == f"{DEPENDS} kinetic energy" and "with rotation: reproduced" in reason
    assert "translational: not reproduced" in reason and "over 10 members" in reason
    assert "with rotation: median 74.5, 95% interval [71, 78], 10 members" in rp.render_table(
        {"title": "t", "setup": "s", "rows": [r]})


def test_a_finding_against_zero_is_judged_on_the_interval_of_its_value():
    """A finding 'A > 0' (the second number the same constant on every member, e.g. the compaction's
    settling-time difference) is judged on the interval of A over the members against that constant."""
    from benchmarks.reproduce.trajectories import over_members
    rule = {"rule": "holds", "op": ">", "finding": "relaxed settles later"}

    def members(values):
        return over_members([[row("later", "Fig. 10a", "later", [v, 0.0], rule, criterion="c")] for v in values])[0]

    r = members([0.1 * (k + 1) for k in range(10)])
    assert r["members"]["against"] == 0.0 and r["members"]["of"] == "value"
    assert verdict(r)[0] == REPRODUCED and "value's 95% interval [0.2, 0.9] over 10 members inside > 0" in verdict(r)[1]
    assert verdict(members([-0.1 * (k + 1) for k in range(10)]))[0] == NOT_REPRODUCED
    assert verdict(members([0.1 * (k - 4) for k in range(10)]))[0] == UNDECIDED


def test_a_band_finding_over_a_fitted_slope_is_judged_on_its_t_interval():
    """Mazhar et al. 2014 sec. 6.1 "APGD and the interior point scale alike": k_APGD - k_IP, the slope of the
    per-packing time ratio against the contacts (the difference of the two slopes, exactly), judged on its
    t interval against [-0.3, 0.3]: inside reproduced, outside not, straddling undecided."""
    import numpy as np

    from workbench.analysis.stats import loglog_fit
    from workbench.report.reproduction import fitted
    band = {"rule": "between", "low": -0.3, "high": 0.3}
    assert _v("similar", 0.1, band) == REPRODUCED and _v("similar", -0.5, band) == NOT_REPRODUCED
    contacts = np.geomspace(77, 9000, 40)
    wiggle = np.exp(0.05 * np.sin(np.arange(40)))
    ip, apgd = 1e-4 * contacts ** 1.54, 3e-4 * contacts ** 1.40 * wiggle
    fit = loglog_fit(contacts, apgd / ip)
    assert fit["slope"] == pytest.approx(loglog_fit(contacts, apgd)["slope"] - loglog_fit(contacts, ip)["slope"])
    m = fitted(fit, estimate="slope difference", unit="packings, one per size")
    r = row("scale alike", "sec. 6.1", "similar scaling", fit["slope"], band, criterion="c", members=m)
    label, reason = verdict(r)
    assert label == REPRODUCED and "over 40 packings, one per size inside [-0.3, 0.3]" in reason
    assert "slope difference -0.14" in rp.render_table({"title": "t", "setup": "s", "rows": [r]})
    steep = loglog_fit(contacts, 3e-4 * contacts ** 2.0 * wiggle / ip)        # 2.0 - 1.54 = 0.46
    assert verdict(row("s", "s", "similar", steep["slope"], band, criterion="c",
                       members=fitted(steep, estimate="d", unit="packings")))[0] == NOT_REPRODUCED
    few = loglog_fit(contacts[:4], (apgd * np.exp(np.array([0.0, 0.4, -0.4, 0.3] + [0.0] * 36)) / ip)[:4])
    assert verdict(row("s", "s", "similar", few["slope"], band, criterion="c",
                       members=fitted(few, estimate="d", unit="packings", fewer="4 sizes")))[0] == UNDECIDED


def test_every_committed_page_uses_only_the_verdict_words_and_counts_its_members():
    """Issue 44 item 4 on the committed pages (the papers' and the calibration's test rows): every row's
    verdict (computed again from its raw data) is one of reproduced, not reproduced, undecided, reproduced
    failure, depends on CHOICE, not comparable, not measured; a row over members has at least MIN_MEMBERS
    of them or says why fewer, and its page shows the interval; the settledness page's trend verdicts are
    the same words."""
    words = {REPRODUCED, NOT_REPRODUCED, UNDECIDED, REPRODUCED_FAILURE, NOT_COMPARABLE, NOT_MEASURED}
    records = sorted(provenance.RESULTS_DIR.glob("repro-*.json")) + sorted(provenance.RESULTS_DIR.glob("calibration.json"))
    assert records
    for record in records:
        data = json.loads(record.read_text(encoding="utf-8"))["data"]
        page = (record.parent / f"{record.stem}.md").read_text(encoding="utf-8")
        for r in data["rows"]:
            label = verdict(r)[0]
            assert label in words or label.startswith(f"{DEPENDS} "), (record.name, r["quantity"], label)
            m = r.get("members")
            if m is not None:
                assert m["n"] >= rp.MIN_MEMBERS or m.get("fewer"), (record.name, r["quantity"])
                assert f"{m['level']:.0%} interval [" in page
    settled = provenance.RESULTS_DIR / "settledness.md"
    if settled.exists():
        from benchmarks.reproduce.settledness import render
        text = render(json.loads((provenance.RESULTS_DIR / "settledness.json").read_text())["data"])
        judged = [line.rsplit("|", 2)[1].strip() for line in text.splitlines()
                  if line.startswith("| APGD iterations | kinetic energy")]
        assert judged and set(judged) <= words, judged


def test_members_measured_side_by_side_give_the_same_rows():
    """benchmarks.reproduce.common.per_member with --jobs 2 (spawned workers, one thread each) returns the
    rows of each member in member order, equal to the rows measured one after the other (the sec. 3.4
    filling sizes of a quick run, on two round-off members that differ from each other)."""
    import argparse

    from benchmarks.reproduce.common import per_member
    from benchmarks.reproduce.melanz_2015 import _sizes_rows

    args = argparse.Namespace(quick=True, members=2, jobs=1, filling_tol=1e-5)
    serial = per_member(_sizes_rows, args, ("dual", "apgd"), ("anti-relaxed", "apgd"))
    side_by_side = per_member(_sizes_rows, argparse.Namespace(**{**vars(args), "jobs": 2}),
                              ("dual", "apgd"), ("anti-relaxed", "apgd"))
    assert side_by_side == serial and len(serial) == 2
    assert serial[0] != serial[1]  # the members are different trajectories, so the order is checked
