"""benchmarks.reproduce.calibrate's fits on synthetic measures with a known answer (no packing is made here)."""

import json
import math

import numpy as np
import pytest

from benchmarks.reproduce.calibrate import fit_monotone, fit_power, scaling_exponent


def test_bisection_finds_the_floor_of_a_falling_step_count():
    # a contact count that falls with the floor width: 1000 / w^2 contacts, floored to an integer;
    # 77 contacts are met for w in (sqrt(1000/78), sqrt(1000/77)] = (3.5806, 3.6037]
    calls = []

    def count(w):
        calls.append(w)
        return math.floor(1000.0 / w ** 2)

    fit = fit_monotone(count, 77, 2.0, 8.0, width=1e-3)
    assert count(fit.value) == 77 and fit.residual == 0
    assert math.sqrt(1000 / 78) < fit.value <= math.sqrt(1000 / 77)
    # bisection: at most 2 + log2(6 / 1e-3) evaluations, each recorded once
    assert len(fit.evaluations) == len(set(calls)) <= 2 + math.ceil(math.log2(6 / 1e-3))


def test_bisection_reports_the_residual_when_the_count_skips_the_target():
    # a count that jumps 10 at a time never equals 77: the bracket closes on the jump and the
    # residual says how far the nearer side is
    # (80 for w in (10/9, 1.25], 70 for w in (1.25, 10/7])
    fit = fit_monotone(lambda w: 10 * math.floor(10.0 / w), 77, 1.0, 4.0, width=1e-4)
    assert fit.hi - fit.lo <= 1e-4
    assert fit.lo <= 1.25 < fit.hi
    assert fit.value == fit.lo and fit.residual == 3.0


def test_bisection_refuses_a_bracket_that_does_not_cross():
    with pytest.raises(ValueError, match="does not cross"):
        fit_monotone(lambda w: 100 - w, 77, 1.0, 10.0, width=0.1)
    with pytest.raises(ValueError, match="bad bracket"):
        fit_monotone(lambda w: w, 1, 2.0, 1.0, width=0.1)


def test_measured_exponent_and_power_fit_recover_a_known_mass():
    # an objective -0.0116 * m^1 (linear in m) sampled at three masses: slope 1, and -0.0232 at m = 2
    masses = [0.5, 1.0, 4.0]
    objective = [-0.0116 * m for m in masses]
    p = scaling_exponent(masses, objective)
    assert p == pytest.approx(1.0, abs=1e-12)
    assert fit_power(-0.0116, -0.0232, p) == pytest.approx(2.0, rel=1e-12)
    # and a quadratic law is told apart from a linear one
    assert scaling_exponent(masses, [3.0 * m ** 2 for m in masses]) == pytest.approx(2.0, abs=1e-12)
    assert fit_power(3.0, 12.0, 2.0) == pytest.approx(2.0, rel=1e-12)


def test_scaling_and_power_fit_refuse_what_has_no_answer():
    with pytest.raises(ValueError):
        scaling_exponent([1.0, 1.0], [2.0, 3.0])
    with pytest.raises(ValueError):
        scaling_exponent([1.0, 2.0], [-1.0, 1.0])
    with pytest.raises(ValueError):
        fit_power(-0.01, 0.02, 1.0)
    assert np.isfinite(fit_power(1.0, 1.0, 0.5))


# --------------------------------------------------------------------------- the command's measures and page

import scipy.sparse as sp

from benchmarks.reproduce import calibrate, calibrate_rows
from workbench.problem import TimeStepProblem
from workbench.report.reproduction import verdict


def _two_spheres(speed: float = 1.0):
    """Two unit spheres resting on a floor, one contact each (d = 3): a global problem with weights; ``speed``
    scales their velocities (another member of a family: another objective)."""
    mass, inertia, h, g = 1.0, 0.4, 0.01, 9.81
    M = sp.diags([mass, mass, mass, inertia, inertia, inertia] * 2).tocsr()
    D = np.zeros((12, 6))
    for i in range(2):
        D[6 * i + 2, 3 * i] = 1.0              # normal: up
        D[6 * i + 0, 3 * i + 1] = 1.0          # tangents, with the lever arm of the contact point
        D[6 * i + 4, 3 * i + 1] = -1.0
        D[6 * i + 1, 3 * i + 2] = 1.0
        D[6 * i + 3, 3 * i + 2] = 1.0
    v = np.zeros(12)
    v[0], v[8] = 0.3 * speed, -0.2 * speed
    k = M @ v - h * mass * g * np.array([0, 0, 1, 0, 0, 0] * 2)
    return TimeStepProblem(mu=[0.25, 0.25], M=M, D=sp.csr_matrix(D), k=k, b=np.array([-0.01, 0, 0, 0.02, 0, 0]), h=h)


def test_a_uniform_mass_scaling_scales_N_down_and_leaves_r():
    p = _two_spheres()
    s = calibrate.mass_scaled(p, 4.0)
    assert np.allclose(s.N.toarray(), p.N.toarray() / 4.0) and np.allclose(s.r, p.r)
    assert s.metadata["mass_factor"] == 4.0 and np.array_equal(s.b, p.b)


def test_mass_fit_measures_exponent_one_and_hits_the_target_with_the_median_member():
    """Seven members (other velocities, other objectives): the exponent measured on member 0 is 1 within
    round-off, the fitted mass brings the median member's objective to the target, its interval is the
    objectives' exact interval (seven members: the extremes, coverage 1 - 2 / 2^7) through m = target / f, and
    every member solved again at it gives the target as the median."""
    members = [_two_spheres(speed) for speed in (0.2, 0.5, 0.8, 1.0, 1.3, 1.7, 2.0)]
    at_one = [calibrate.interior_point(p)["objective"] for p in members]
    target = 3.0 * float(np.median(at_one))
    fit = calibrate.fit_mass(members, 1.0, target, factors=(0.5, 1.0, 2.0))
    assert fit["exponent"] == pytest.approx(1.0, abs=1e-6)
    assert fit["mass"] == pytest.approx(3.0, rel=1e-6)
    assert fit["objectives"]["n"] == 7 and fit["objectives"]["median"] == pytest.approx(np.median(at_one))
    assert fit["interval"] == pytest.approx(sorted(target / f for f in (min(at_one), max(at_one))), rel=1e-6)
    assert fit["interval"][0] < fit["mass"] < fit["interval"][1]
    assert len(fit["check"]["members"]) == 7 and abs(fit["residual"]) <= 1e-6 * abs(fit["target"])
    # the objectives at 1 kg given (as the members' measurements have them): the same fit, none solved twice
    given = calibrate.fit_mass(members, 1.0, target, factors=(0.5, 1.0, 2.0), objectives=at_one)
    assert given["mass"] == fit["mass"] and given["interval"] == fit["interval"]
    # under 6 members the median has no 95 % interval, and so neither has the mass
    assert calibrate.fit_mass(members[:3], 1.0, target, factors=(0.5, 1.0))["interval"] is None
    with pytest.raises(ValueError, match="include 1"):
        calibrate.fit_mass(members, 1.0, target, factors=(0.5, 2.0))


def _fake_floor(monkeypatch, count):
    monkeypatch.setattr(calibrate, "floor_packing", lambda width, n, cache, progress=False, **kw: width)
    monkeypatch.setattr(calibrate, "floor_entry", lambda width: {"contacts": count(width), "kinetic_energy": 0.0,
                                                                 "energy_ratio": 0.0, "sha256": "-",
                                                                 "committed_same": None})
    monkeypatch.setattr(calibrate, "contact_kinds", lambda width: {})


def test_floor_fit_reports_the_bracket_and_the_closest_count_when_the_target_is_jumped(monkeypatch, tmp_path):
    # two layers (144) up to 17.5 m, one (70) beyond: 77 is never reached
    _fake_floor(monkeypatch, lambda w: 144 if w < 17.5 else 70)
    out = calibrate.fit_floor(64, 77, tmp_path, bracket=(10.0, 24.0), resolution=0.05)
    f = out["fit"]
    assert f["lo"] < 17.5 <= f["hi"] and f["hi"] - f["lo"] <= 0.05
    assert f["value"] == f["hi"] and f["residual"] == -7 and f["closest_residual"] == -7
    assert [p["width"] for p in out["packings"]] == sorted(p["width"] for p in out["packings"])


def test_floor_fit_that_does_not_cross_is_reported_not_fitted(monkeypatch, tmp_path):
    _fake_floor(monkeypatch, lambda w: 60)
    out = calibrate.fit_floor(64, 77, tmp_path, bracket=(10.0, 24.0), resolution=0.05)
    assert out["fit"] is None and "does not cross" in out["reason"] and len(out["packings"]) == 2


def _member(r, objective, energy, contacts, apgd, settle):
    ref = {"objective": objective, "solver": "clarabel", "status": "solved", "judged": "relaxed_error",
           "error": 1e-11, "iterations": 24}
    return {"replicate": r, "file": f"cap-x-r{r:02d}/settled-00320.npz", "sha256": f"sha{r}", "contacts": contacts,
            "kinetic_energy": energy, "mass": 1.0, "settle_max_iterations": settle, "reference": ref,
            "apgd": {"0.0001": apgd, "5e-05": apgd, "1e-05": apgd, "1e-06": None}}


def _family(cap, members, committed=None):
    return {"cap": cap, "members": members, "gap": None, "unstated": "the generator's choices", "committed": committed}


def _data(low=-0.64, high=-0.14, n=10):
    """A page's data with known numbers over ``n`` members per family: mass 6 kg (the median settled objective
    -0.0232 / 6 at 1 kg), settled energies 0.0215 / 6 J within 1 %, APGD 557 to 566 iterations settled and not
    reached poorly settled, a floor that jumps from 144 to 70 contacts."""
    spread = [1 + 0.002 * (r - (n - 1) / 2) for r in range(n)]     # symmetric: the median is the centre
    settled = [_member(r, -0.0232 / 6 * spread[r], 0.0215 / 6 * spread[r], 1095 + r, 557 + r, 404) for r in range(n)]
    unsettled = [_member(r, -0.5312 / 6 * spread[r], 0.02 * spread[r], 1091, None, 10) for r in range(n)]
    committed = {"file": "settled-00320.npz", "same": False,
                 "measured": _member(0, -0.0039, 7e-5, 1095, 2667, 404)}
    families = {"settled": _family(10_000, settled, committed),
                "unsettled": _family(10, unsettled, {"file": "unsettled-00320.npz", "same": True, "measured": None})}
    check = [{**m["reference"], "objective": m["reference"]["objective"] * 6} for m in settled]
    objectives = calibrate.over_members([m["reference"]["objective"] for m in settled])
    mass = {"target": -0.0232, "made_with": 1.0, "exponent": 1.0, "exponent_tol": 1e-6, "objectives": objectives,
            "evaluations": [{"mass": 1.0, **settled[0]["reference"]}, {"mass": 2.0, **settled[0]["reference"]}],
            "mass": 6.0, "interval": None if objectives["low"] is None else
            sorted(-0.0232 / objectives[k] for k in ("low", "high")),
            "check": {"mass": 6.0, "objective": -0.0232, "members": check}, "residual": 0.0,
            "apgd": {"at_made": settled[0]["apgd"], "at_fitted": settled[0]["apgd"]}}
    packings = [{"width": w, "contacts": c, "kinetic_energy": e, "energy_ratio": e / 628, "sha256": "-",
                 "committed_same": same}
                for w, c, e, same in ((10.0, 188, 0.09, True), (17.47, 144, 0.0, None), (17.5, 70, 0.0, None),
                                      (17.503, 72, 0.0, None), (24.0, 70, 0.0, None))]
    floor = {"n": 64, "target": 77, "bracket": [10.0, 24.0], "resolution": 0.05, "overrides": {}, "packings": packings,
             "fit": {"value": 17.5, "lo": 17.47, "hi": 17.5, "residual": -7.0, "closest": 17.5, "closest_residual": -7}}
    found = {"fit": {"slope": (low + high) / 2, "low": low, "high": high, "level": 0.95, "n": 6}, "threshold": "5e-05",
             "verdict": "contradicted", "provenance": {"date": "d", "commit": "c", "command": "python -m x"}}
    data = {"quick": False, "apgd_cap": 20000, "mass": mass, "floor": floor, "families": families,
            "members": {"n": n, "fewer": None if n >= 10 else "a test's few"}, "committed_settle_max": 404,
            "settledness": found, "large": None, "large_uncalibrated": {**BIG, "width": 20.0, "contacts": 9044}}
    data["rows"] = calibrate_rows.mark_fit_tests(calibrate_rows.test_rows(data),
                                                 calibrate_rows.test_rows(data, calibrated=False))
    return data


#: a finished 2,560-sphere packing at rest
BIG = {"width": 17.5, "finished": True, "contacts": 9000, "kinetic_energy": 1e-3, "energy_ratio": 4e-8,
       "sha256": "-", "committed_same": None, "steps_done": 800, "settle_max_iterations": 10000, "steps_at_cap": 40}

HARDER = "poorly settled is harder for APGD, over members"
TREND = "poorly settled is harder for APGD, trend over the settledness sweep"


def test_rows_apply_the_fitted_mass_to_each_member_and_judge_every_quantity_on_its_interval():
    data = _data()
    rows = {r["quantity"]: r for r in data["rows"]}
    judged = {q: verdict(r)[0] for q, r in rows.items()}
    # every numeric row over the families carries its 10 members, the median and the exact interval (the 2nd and
    # 9th of 10 sorted values): the poorly settled objective and the settled energy at the fitted 6 kg
    objective = rows["interior-point objective (relaxed dual), poorly settled"]
    assert objective["members"]["n"] == 10 and "fewer" not in objective["members"]
    assert objective["measured"] == pytest.approx(-0.5312)
    values = sorted(m["reference"]["objective"] * 6 for m in data["families"]["unsettled"]["members"])
    assert (objective["members"]["low"], objective["members"]["high"]) == pytest.approx((values[1], values[8]))
    assert judged["interior-point objective (relaxed dual), poorly settled"] == "reproduced"
    assert rows["kinetic energy after settling [J], thoroughly settled"]["measured"] == pytest.approx(0.0215)
    assert judged["kinetic energy after settling [J], poorly settled"] == "not reproduced"      # 0.12 vs 1.56
    apgd = rows["APGD iterations to the interior-point objective, thoroughly settled"]
    assert apgd["measured"] == 561.5 and (apgd["members"]["low"], apgd["members"]["high"]) == (558, 565)
    assert judged["APGD iterations to the interior-point objective, thoroughly settled"] == "reproduced"
    # the as-committed packing is shown beside the sample, never in it
    assert "as committed, settled-00320.npz: 2,667" in apgd["shown"]
    assert "the same arrays as unsettled-00320.npz" in rows["contacts, poorly settled"]["shown"]
    # no member of the poorly settled family reached the objective: the median is "not reached", not a number
    assert judged["APGD iterations to the interior-point objective, poorly settled"] == "not measured"
    assert judged[HARDER] == "not measured" and rows[HARDER]["members"]["median"] is None
    assert judged[TREND] == "not reproduced"
    assert verdict(rows["contacts, thoroughly settled"])[0] == "not comparable"
    assert "by the rule alone: reproduced" in verdict(rows["contacts, thoroughly settled"])[1]
    assert judged["contacts, 2,560 spheres, in the fitted container"] == "not measured"
    # "up to 10,000" is the protocol's cap, not a count reached: nothing to test
    cap = rows["settling steps at the 10,000-iteration cap, thoroughly settled"]
    assert judged["settling steps at the 10,000-iteration cap, thoroughly settled"] == "not comparable"
    assert "'up to' is not 'reached'" in verdict(cap)[1] and "404" in cap["shown"] and cap["members"]["n"] == 10
    assert sum(v == "not measured" for v in judged.values()) == 5
    # an interval above 0 reproduces the trend, one that contains 0 leaves it undecided; the packings counted
    assert verdict({r["quantity"]: r for r in _data(0.1, 0.5)["rows"]}[TREND])[0] == "reproduced"
    straddles = {r["quantity"]: r for r in _data(-0.5, 0.01)["rows"]}[TREND]
    assert verdict(straddles)[0] == "undecided" and "over 6 distinct packings of the sweep" in verdict(straddles)[1]
    assert "6 per cap" not in straddles["members"]["fewer"] and "1 per cap" in straddles["members"]["fewer"]


def test_the_ratio_rows_pair_member_r_with_member_r():
    """Poorly settled iterations 1.5 x the settled ones of the same replicate, the settled ones spread over a
    factor 2^9: each pair's ratio is 1.5, so the paired interval is [1.5, 1.5] and the finding holds, where
    members taken apart would straddle 1."""
    data = _data()
    for family, factor in (("settled", 1), ("unsettled", 1.5)):
        for r, m in enumerate(data["families"][family]["members"]):
            m["apgd"]["5e-05"] = factor * 100 * 2 ** r
    data["rows"] = calibrate_rows.test_rows(data)
    harder = {r["quantity"]: r for r in data["rows"]}[HARDER]
    assert harder["members"]["of"] == "ratio" and harder["members"]["n"] == 10
    assert (harder["members"]["low"], harder["members"]["median"], harder["members"]["high"]) == pytest.approx((1.5,) * 3)
    assert verdict(harder)[0] == "reproduced"
    ratio = {r["quantity"]: r for r in data["rows"]}["kinetic energy ratio, poorly / thoroughly settled (mass-free)"]
    assert ratio["members"]["n"] == 10 and ratio["measured"] == pytest.approx(0.02 / (0.0215 / 6))   # each pair's


def test_fewer_members_than_ten_say_why_and_leave_an_unbounded_interval_undecided():
    rows = {r["quantity"]: r for r in _data(n=5)["rows"]}
    objective = rows["interior-point objective (relaxed dual), poorly settled"]
    assert objective["members"]["n"] == 5 and objective["members"]["fewer"] == "a test's few"
    assert objective["members"]["low"] is None and verdict(objective)[0] == "undecided"
    data = _data(n=5)
    data["members"]["fewer"] = None
    with pytest.raises(ValueError, match="no reason for fewer"):
        calibrate_rows.test_rows(data)


def test_page_shows_the_fits_their_residuals_the_members_and_every_verdict():
    page = calibrate.render(_data())
    assert "| common sphere mass [kg] |" in page and "| 6 (95 % interval [" in page
    assert "against the median over the 10 members of the family" in page
    assert "in the bracket [17.47, 17.5]" in page and "-7 contacts" in page and "closest reached: 70 at 17.5 m" in page
    assert "not reached by the floor width alone: the count goes from 144 at 17.47 m to 70 at 17.5 m" in page
    assert "p = 1.000000000, within 1e-06 of 1" in page and "the same: the iterations do not depend" in page
    assert "yes (scaling-00064)" in page and "Within 5 mm of the fitted width the packings have 70 to 72" in page
    assert "### Members: the sec. 5.1 protocol, 10 packings per per-step cap" in page
    assert "| thoroughly settled (10,000) | 9 (cap-x-r09/settled-00320.npz) |" in page
    assert "| thoroughly settled (10,000) | as committed (settled-00320.npz, not in the sample) |" in page
    assert "| not unsettled-00320.npz |" not in page and "| the same as unsettled-00320.npz |" in page
    assert "Verdicts: 3 reproduced, 3 not reproduced, 3 not comparable, 5 not measured." in page


def test_settledness_finding_is_read_from_the_committed_page():
    found = calibrate.settledness_finding()
    assert found is not None and found["threshold"] == "5e-05"
    assert found["verdict"] in ("reproduced", "not reproduced", "undecided")
    data = json.loads(calibrate.SETTLEDNESS.read_text())["data"]
    assert found["replicates"] == data.get("replicates", 1) and found["fit"]["n"] == len(
        {p["sha256"] for p in data["packings"]})


def test_a_bad_option_is_one_line_and_exit_code_2(capsys):
    assert calibrate.main(["--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("calibrate: ") and "--bogus" in err
    assert calibrate.main(["--quick", "--write"]) == 2
    assert calibrate.main(["--threads", "0"]) == 2
    assert calibrate.main(["--members", "0"]) == 2
    capsys.readouterr()
    assert calibrate.main(["--quick", "--sweep-cache", __file__]) == 2
    err = capsys.readouterr().err
    assert err == f"calibrate: --sweep-cache {__file__}: not a folder\n"


def test_the_largest_packing_is_one_member_by_cost_and_an_unsettled_one_is_not_comparable():
    """One 2,560-sphere packing, by cost: the row says why fewer than ten, and one member has no 95 % interval,
    so even a count 2.5 % off the paper's is undecided, never reproduced on one sample."""
    floor = _data()["floor"]
    big = BIG
    one = calibrate_rows.large_row(floor, big)
    assert one["members"]["n"] == 1 and one["members"]["fewer"] == calibrate_rows.SINGLE["large"]
    assert "by cost" in one["members"]["fewer"]
    label, reason = verdict(one)
    assert label == "undecided" and "over 1 member straddles" in reason
    label, reason = verdict(calibrate_rows.large_row(floor, {**big, "energy_ratio": 0.01}))
    assert label == "not comparable" and "not settled" in reason and "by the rule alone: undecided" in reason
    assert verdict(calibrate_rows.large_row(floor, None)) == ("not measured",
                                                             calibrate_rows.large_row(floor, None)["missing"])
    begun = {"width": 17.5, "finished": False, "steps_done": 327, "contacts": 7550, "settle_max_iterations": 10000,
             "steps_at_cap": 12, "last_step_seconds": 8.0}
    label, reason = verdict(calibrate_rows.large_row(floor, begun))
    assert label == "not measured" and "step 327 of 800" in reason and "8.0 s each" in reason
    # the settling record of the large packing, finished or not, judges "up to 10,000 iterations"
    data = _data()
    data["large"] = begun
    rows = {r["quantity"]: r for r in calibrate_rows.test_rows(data)}
    cap = rows["settling steps reach the 10,000-iteration cap, 2,560 spheres in the fitted container"]
    assert verdict(cap)[0] == "undecided" and "the packing unfinished" in cap["shown"]
    assert cap["members"]["fewer"] == calibrate_rows.SINGLE["large"] and cap["members"]["against"] == 10_000


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """calibrate's member path at --quick size: the settledness sweep's --quick packings (64 spheres for 0.5 s,
    two replicates per cap) made into a fresh sweep cache, floor packings into another."""
    cache, sweep = tmp_path_factory.mktemp("calibration"), tmp_path_factory.mktemp("settledness")
    return cache, sweep, calibrate.calibrate(True, cache, sweep_cache=sweep)


def test_the_quick_member_path_measures_every_row_over_the_sweeps_packings(quick):
    """Every numeric test row carries its members (n, the interval's ends, unbounded under 6) and, under 10,
    the reason; the members are the settledness sweep's own packings (its cache, its names), so a sweep run
    after keeps them instead of settling them again."""
    from benchmarks.reproduce import settledness

    cache, sweep, data = quick
    n = settledness.QUICK["replicates"]
    assert data["members"] == {"n": n, "fewer": "--quick: a CI-sized check, not the calibration"}
    for kind, cap in (("settled", 10_000), ("unsettled", 10)):
        members = data["families"][kind]["members"]
        assert [m["file"] for m in members] == [f"cap-{cap:05d}/settled-00064.npz", f"cap-{cap:05d}-r01/settled-00064.npz"]
        assert members[0]["sha256"] != members[1]["sha256"]           # round-off twins: other arrays
        kept = settledness.packing(cap, sweep / "quick", settledness.QUICK["overrides"], progress=False, replicate=1)
        assert kept[0] == sweep / "quick" / members[1]["file"] and kept[1]["kept"]
    over = [r for r in data["rows"] if r.get("members")]
    assert {r["quantity"] for r in over} >= {"interior-point objective (relaxed dual), poorly settled", HARDER,
                                            "kinetic energy ratio, poorly / thoroughly settled (mass-free)",
                                            "APGD iterations to the interior-point objective, poorly settled"}
    for r in over:
        m = r["members"]
        assert {"n", "median", "low", "high", "level"} <= set(m), r["quantity"]
        if r["quantity"] != TREND:          # the sweep's trend is read from its page, not measured here
            assert m["n"] == n and m["low"] is None and m["high"] is None, r["quantity"]
        assert m["n"] >= calibrate.MIN_MEMBERS or m["fewer"], r["quantity"]
    assert data["mass"]["objectives"]["n"] == n and data["mass"]["interval"] is None
    assert data["mass"]["apgd"]["at_made"] == data["mass"]["apgd"]["at_fitted"]
    json.dumps(data, allow_nan=False)       # storable as the page's record


def test_the_quick_run_end_to_end_prints_and_leaves_docs_alone(quick, capsys):
    """--quick: CI-sized (seconds once the packings are kept), printed, never written."""
    import subprocess
    from pathlib import Path

    cache, sweep, _ = quick
    repo = Path(__file__).resolve().parents[1]
    before = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert calibrate.main(["--quick", "--cache", str(cache), "--sweep-cache", str(sweep)]) == 0
    out = capsys.readouterr()
    assert "Quick run (--quick)" in out.out and "| common sphere mass [kg] |" in out.out and "Verdicts: " in out.out
    assert "Fewer than 10 members because --quick" in out.out and "(kept)" in out.err
    assert "docs/ unchanged" in out.err
    assert (cache / "quick").is_dir()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == before


def test_the_page_renders_the_same_from_its_stored_record():
    """The record is stored with sorted keys (workbench.provenance): the page must not depend on key order."""
    import json

    data = _data()
    assert calibrate.render(json.loads(json.dumps(data, sort_keys=True))) == calibrate.render(data)


@pytest.mark.parametrize("cause, flag", [("settling tolerance 1e-08", "--tight"), ("no warm start", "--cold")])
def test_the_settling_explanation_rows_say_how_far_they_got(cause, flag):
    def the_row(state):
        return calibrate_rows.explanation_row(cause, state, "settled again", flag)

    rule_of = lambda state: verdict(the_row(state))  # noqa: E731
    assert rule_of(None)[0] == "not measured" and flag in rule_of(None)[1]
    begun = {"finished": False, "steps_done": 2000, "settle_max_iterations": 900, "steps_at_cap": 0}
    assert rule_of(begun) == ("not measured", the_row(begun)["missing"])
    assert "step 2,000 of 8,000" in rule_of(begun)[1]
    # the paper's "up to 10,000" is its cap: a measured count is shown, not tested
    reached = {**begun, "settle_max_iterations": 10000, "steps_at_cap": 3}
    assert rule_of(reached)[0] == "not comparable" and "10,000 vs 10,000 (3 steps at the cap" in the_row(reached)["shown"]
    one = the_row(reached)["members"]
    assert one["n"] == 1 and one["fewer"] == calibrate_rows.SINGLE["settle"]
    assert rule_of({**begun, "finished": True, "steps_done": 8000})[0] == "not comparable"


def test_each_test_row_says_whether_it_tests_the_fit():
    """Every test row is judged at the uncalibrated parameters too (1 kg, the generator's own container): a row
    whose verdict is the same at both does not test the fit (issue 44 item 6)."""
    rows = {r["quantity"]: r for r in _data()["rows"]}
    energy = rows["kinetic energy after settling [J], thoroughly settled"]     # 0.0215 at 6 kg, 0.0036 at 1 kg
    assert verdict(energy)[0] == "reproduced" and energy["uncalibrated"]["verdict"] == "not reproduced"
    assert energy["differences"].startswith("at the uncalibrated parameters: not reproduced")
    assert energy["uncalibrated"]["measured"] == pytest.approx(0.0215 / 6)
    for free in ("kinetic energy ratio, poorly / thoroughly settled (mass-free)",
                 "APGD iterations to the interior-point objective, thoroughly settled", TREND):
        assert rows[free]["differences"].startswith("does not test the fit"), free
    # the 2,560-sphere count, one packing in each container: undecided at both
    data = _data()
    data["large"] = {**BIG, "contacts": 9463}
    rows = {r["quantity"]: r for r in calibrate_rows.mark_fit_tests(calibrate_rows.test_rows(data),
                                                                    calibrate_rows.test_rows(data, calibrated=False))}
    big = rows["contacts, 2,560 spheres, in the fitted container"]
    assert verdict(big)[0] == "undecided" and big["uncalibrated"]["measured"] == 9044
    assert big["differences"].startswith("does not test the fit (the same verdict, undecided")


def test_floor_contacts_are_counted_by_kind_under_each_envelope():
    """The committed scaling-00064 (the floor fit's recipe at 10 m): its stored count is the sum of the
    sphere-sphere, floor and wall contacts at the generator's 5 cm envelope; 1 cm counts fewer, never
    more (issue 44 item 5)."""
    from problems.generator import DEFAULT_DIR, read_manifest

    kinds = calibrate.contact_kinds(DEFAULT_DIR / "scaling-00064.npz")
    five, one = kinds["5 cm"], kinds["1 cm"]
    assert sum(five.values()) == read_manifest()["scaling-00064.npz"]["n_contacts"]
    assert five["floor"] > 0 and five["sphere-sphere"] > 0
    assert all(one[k] <= five[k] for k in five)


def test_the_page_names_the_envelope_and_the_radius_as_free_choices():
    """A floor fitted on 64 floor contacts plus 13 wall contacts counted at 5 cm (the issue's case): the page
    gives the count by kind under each envelope, says the fit depends on it, and gives the density the
    fitted mass implies at the unfitted radius."""
    data = _data()
    fitted = next(p for p in data["floor"]["packings"] if p["width"] == 17.5)
    fitted["kinds"] = {"5 cm": {"sphere-sphere": 0, "floor": 64, "wall": 6},
                       "1 cm": {"sphere-sphere": 0, "floor": 64, "wall": 0}}
    page = calibrate.render(data)
    assert "5 cm: 70 (0 sphere-sphere, 64 floor, 6 wall), -7 from the target" in page
    assert "1 cm: 64 (0 sphere-sphere, 64 floor, 0 wall), -13 from the target" in page
    assert "depends on the contact envelope" in page and "| 5 cm: 0 + 64 + 6; 1 cm: 0 + 64 + 0 |" in page
    assert f"a density of {6.0 / (4 / 3 * 3.141592653589793):.3g} kg/m^3" in page


def test_the_as_committed_packing_is_checked_against_member_0_and_measured_beside_the_sample(tmp_path):
    """A committed packing of member 0's parameters whose arrays differ is measured apart and shown beside the
    members (never one of them); one with the same arrays is named as member 0 itself. Small packings (18
    spheres, 60 steps of 5 ms) under both caps of sec. 5.1."""
    import shutil

    small = {"n": 18, "width": 8.0, "duration": 0.3, "h": 0.005}
    cache, committed = tmp_path / "sweep", tmp_path / "committed"
    committed.mkdir()
    settled = calibrate.measure_family("settled", 1, cache, small, 5000, committed=committed)
    assert settled["committed"] is None and settled["members"][0]["file"] == "cap-10000/settled-00018.npz"
    unsettled = calibrate.measure_family("unsettled", 1, cache, small, 5000, committed=committed)
    first, other = settled["members"][0], unsettled["members"][0]
    assert first["sha256"] != other["sha256"] and first["settle_max_iterations"] > 10 >= other["settle_max_iterations"]
    # the cap-10 arrays filed under the cap-10,000 parameters: another packing than member 0
    from problems.generator import read_manifest
    generator = read_manifest(cache / "cap-10000")["settled-00018.npz"]["generator"]
    shutil.copy(cache / other["file"], committed / "other.npz")
    (committed / "MANIFEST.json").write_text(json.dumps({"other.npz": {"generator": generator,
                                                                        "sha256": other["sha256"]}}))
    again = calibrate.measure_family("settled", 1, cache, small, 5000, committed=committed)
    assert again["members"] == settled["members"]                          # the sample is the sweep's packings
    c = again["committed"]
    assert c["file"] == "other.npz" and not c["same"]
    assert (c["measured"]["kinetic_energy"], c["measured"]["apgd"]) == (other["kinetic_energy"], other["apgd"])
    assert f"as committed, other.npz: {other['contacts']:,}" in calibrate_rows._beside(again, lambda x: x["contacts"])
    (committed / "MANIFEST.json").write_text(json.dumps({"same.npz": {"generator": generator,
                                                                       "sha256": first["sha256"]}}))
    same = calibrate.measure_family("settled", 1, cache, small, 5000, committed=committed)
    assert same["committed"] == {"file": "same.npz", "same": True, "measured": None}
    assert "the same arrays as same.npz" in calibrate_rows._beside(same, lambda x: x["contacts"])
