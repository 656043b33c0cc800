"""The settledness sweep (benchmarks/reproduce/settledness.py, issue 32 item 3): the trend fit against known slopes
and scipy's regression, a small sweep (two caps on a small packing) checked against an independent
solver and its cache, and its page and figure."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from benchmarks.reproduce import settledness
from workbench.analysis.stats import loglog_fit
from workbench.io import load_problem
from workbench.method import solve
from workbench.solvers import SolveOptions

#: a packing of 18 spheres settled for 60 steps (a few seconds), as tests/test_generate.py makes one
SMALL = {"n": 18, "width": 8.0, "duration": 0.3, "h": 0.005}


def test_an_exact_power_law_gives_its_slope_with_no_uncertainty():
    x = np.geomspace(1e-5, 1e-1, 8)
    fit = loglog_fit(x, 2.0 * x ** -1.5)
    assert fit["slope"] == pytest.approx(-1.5, rel=1e-12)
    assert fit["intercept"] == pytest.approx(np.log(2.0), rel=1e-10)
    assert fit["se"] < 1e-12 and fit["low"] <= -1.5 <= fit["high"]


def test_a_noisy_power_law_agrees_with_scipy_and_its_interval_covers_the_slope():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(200):
        x = np.geomspace(1e-4, 1e-1, 8)
        y = 500.0 * x ** 0.3 * np.exp(rng.normal(0.0, 0.2, x.size))
        fit, ref = loglog_fit(x, y), stats.linregress(np.log(x), np.log(y))
        assert fit["slope"] == pytest.approx(ref.slope, rel=1e-10)
        assert fit["se"] == pytest.approx(ref.stderr, rel=1e-10)
        covered += fit["low"] <= 0.3 <= fit["high"]
    assert 180 <= covered <= 198            # a 95 % interval: 190 expected of 200, binomial sd about 3


def test_too_few_points_leave_the_interval_undefined_and_the_verdict_unmeasured():
    two = loglog_fit([1.0, 10.0], [5.0, 50.0])
    assert two["slope"] == pytest.approx(1.0) and np.isnan(two["se"]) and np.isnan(two["low"])
    assert np.isnan(loglog_fit([1.0, 1.0], [2.0, 3.0])["slope"])
    assert settledness.verdict({"low": None, "high": None}) == "not measured"
    assert settledness.verdict({"low": 0.1, "high": 0.4}) == "reproduced"
    assert settledness.verdict({"low": -0.4, "high": -0.1}) == "not reproduced"
    assert settledness.verdict({"low": -0.1, "high": 0.4}) == "undecided"


def test_the_papers_two_points_give_their_slope():
    paper = settledness.paper_points()
    assert paper["slope"] == pytest.approx(np.log(825 / 561) / np.log(1.5637 / 0.0215), rel=1e-12)


def test_a_packing_made_by_several_caps_counts_once_in_the_fits():
    def packing(cap, sha, energy, iterations):
        return {"cap": cap, "sha256": sha, "kinetic_energy": energy, "mean_penetration": energy / 10,
                "apgd": {f"{t:g}": [iterations, iterations / 1000] for t in settledness.THRESHOLDS}}
    made = [packing(10, "a", 1e-2, 100), packing(50, "b", 1e-4, 1000), packing(500, "c", 1e-5, 1500),
            packing(1000, "c", 1e-5, 1500), packing(10000, "c", 1e-5, 1500)]
    assert [caps for _, caps in settledness.distinct(made)] == [[10], [50], [500, 1000, 10000]]
    fit = settledness.fits(made)["iterations"]["kinetic_energy"]["5e-05"]
    once = loglog_fit([1e-2, 1e-4, 1e-5], [100, 1000, 1500])
    assert fit["n"] == 3 and fit["slope"] == pytest.approx(once["slope"]) and fit["se"] == pytest.approx(once["se"])


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    cache = tmp_path_factory.mktemp("settledness")
    return cache, settledness.sweep((3, 200), cache, SMALL, apgd_cap=5000, progress=False)


def test_a_small_sweep_measures_every_packing_against_an_independent_interior_point(small_sweep):
    cache, data = small_sweep
    assert [p["cap"] for p in data["packings"]] == [3, 200]
    for p in data["packings"]:
        problem = load_problem(cache / p["file"])
        assert problem.metadata["generator"]["max_iter"] == p["cap"]
        gap = problem.b[::problem.d] * problem.h
        assert p["mean_penetration"] == pytest.approx(float(np.maximum(0.0, -gap).mean()), rel=1e-12)
        assert p["mean_penetration"] <= p["max_penetration"] * (1 + 1e-5)
        ref = p["reference"]
        assert ref["status"] in ("solved", "inaccurate") and ref["error"] < 1e-6
        other = solve(problem, "dual", "ipm", SolveOptions(tol=1e-10))   # another interior point agrees
        assert other.objective == pytest.approx(ref["objective"], rel=1e-7)
        iterations = [p["apgd"][t][0] for t in data["thresholds"]]
        assert iterations == sorted(iterations) and iterations[0] >= 1  # tighter thresholds: no fewer iterations
        assert p["committed"] is None                                   # no committed packing of these parameters
    fit = data["fits"]["iterations"]["kinetic_energy"][data["paper_threshold"]]
    assert fit["n"] == 2 and fit["se"] is None and settledness.verdict(fit) == "not measured"


def test_a_second_sweep_keeps_the_packings_and_measures_the_same_iterations(small_sweep):
    cache, data = small_sweep
    before = {p["cap"]: (cache / p["file"]).stat().st_mtime_ns for p in data["packings"]}
    again = settledness.sweep((3, 200), cache, SMALL, apgd_cap=5000, progress=False)
    for p, q in zip(data["packings"], again["packings"]):
        assert q["generation"]["kept"] and not p["generation"]["kept"]
        assert q["generation"]["seconds"] == p["generation"]["seconds"]
        assert (cache / q["file"]).stat().st_mtime_ns == before[q["cap"]]
        assert q["sha256"] == p["sha256"]
        assert [h[0] for h in q["apgd"].values()] == [h[0] for h in p["apgd"].values()]


def test_a_committed_packing_of_the_same_parameters_is_checked_and_measured_where_it_differs(small_sweep, tmp_path):
    import shutil

    cache, data = small_sweep
    three, two_hundred = data["packings"]
    shutil.copy(cache / two_hundred["file"], tmp_path / "other.npz")    # other arrays under cap 3's parameters
    shutil.copy(cache / three["file"], tmp_path / "same.npz")
    manifest = {"other.npz": {"generator": three["generator"], "sha256": two_hundred["sha256"]}}
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    got = settledness.sweep((3,), cache, SMALL, apgd_cap=5000, progress=False, committed=tmp_path)["packings"][0]
    assert got["committed"]["file"] == "other.npz" and not got["committed"]["same"]
    measured = got["committed"]["measured"]
    assert measured["kinetic_energy"] == two_hundred["kinetic_energy"] != three["kinetic_energy"]
    assert [h[0] for h in measured["apgd"].values()] == [h[0] for h in two_hundred["apgd"].values()]
    page = settledness.render({**data, "packings": [got]})
    assert "| 3, committed | " in page and "DIFFERENT sha256" in page
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"same.npz": {"generator": three["generator"],
                                                                      "sha256": three["sha256"]}}))
    got = settledness.sweep((3,), cache, SMALL, apgd_cap=5000, progress=False, committed=tmp_path)["packings"][0]
    assert got["committed"] == {"file": "same.npz", "same": True, "measured": None}


def test_the_page_and_figure_of_a_small_sweep(small_sweep, tmp_path):
    from workbench.provenance import check_docs, write_results

    _, data = small_sweep
    page = write_results("settledness", data, settledness.render, "test", folder=tmp_path).read_text()
    assert page.count("\n| 3 | ") == 1 and page.count("\n| 200 | ") == 1
    assert "not measured" in page and f"{settledness.paper_points()['slope']:.3f}" in page
    record = json.loads((tmp_path / "settledness.json").read_text())
    assert record["renderer"] == "benchmarks.reproduce.settledness:render"
    (tmp_path / "docs" / "results").mkdir(parents=True)
    for suffix in ("json", "md"):
        (tmp_path / "docs" / "results" / f"settledness.{suffix}").write_text(
            (tmp_path / f"settledness.{suffix}").read_text())
    assert check_docs(tmp_path, [settledness.render]) == []
    png, pdf = settledness.write_figure(data, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "settledness.svg").exists()


def test_bad_caps_are_one_line_and_exit_2(capsys):
    assert settledness.main(["--caps", "10,x"]) == 2
    assert settledness.main(["--caps", "10", "--write"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


def test_replicates_per_cap_give_each_cap_a_median_with_its_interval(small_sweep, tmp_path):
    """Two replicates per cap (replicate 1 a round-off twin, its start moved by 1e-12 R): the as-built
    replicate is the packing of the one-per-cap sweep, the per-cap median is that of the replicates'
    iterations, and fewer than 10 replicates need a reason (issue 44 item 4)."""
    cache, single = small_sweep
    with pytest.raises(settledness.InputError):
        settledness.sweep((3,), cache, SMALL, apgd_cap=5000, progress=False, replicates=2)
    data = settledness.sweep((3,), cache, SMALL, apgd_cap=5000, progress=False, replicates=2, fewer="a test")
    first, twin = data["packings"]
    assert (first["replicate"], twin["replicate"]) == (0, 1)
    assert first["sha256"] == single["packings"][0]["sha256"] != twin["sha256"]
    assert load_problem(cache / twin["file"]).metadata["generator"]["roundoff"] == 1
    its = [p["apgd"][data["paper_threshold"]][0] for p in data["packings"]]
    (cap,) = data["per_cap"]
    assert cap["n"] == 2 and cap["distinct"] == 2 and cap["iterations"]["median"] == pytest.approx(np.median(its))
    assert cap["iterations"]["low"] is None and cap["iterations"]["high"] is None   # no 95 % interval under 6
    page = settledness.render(data)
    assert "Per cap over its 2 replicates" in page and "Fewer than 10 because a test." in page
    assert "| 3 (r1) | " in page and f"| 3 | 2 (2) | {np.median(its):,.0f} [-, -] |" in page
