"""Reports: the numbers they summarise with (shifted geometric mean, Dolan-More profiles, log-log
slopes, iterations to a reference), the seed-comparison table, simulation time series, and the HTML
page as a browser shows it (headless Chromium: every figure loads, every table has rows, every
linked file exists)."""

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from problems.scenes import rolling_ball_2d, rolling_ball_2d_relaxed_impulse
from workbench.cli import main
from workbench.metrics import dual_objective
from workbench.report import load_results
from workbench.report.stats import (iterations_to_reference, loglog_slope, performance_profile,
                                    shifted_geometric_mean)
from workbench.study.store import ResultStore

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")

STUDY = """
[study]
name = "report-test"
time_limit = 60

[[problems]]
scenes = ["rolling-ball-2d"]
tags = ["ball"]

[[problems]]
generator = "sphere_packing"
sweep = { n_spheres = [4, 8] }
name = "spheres-{n_spheres}"

[[problems]]
files = ["no-such-dataset/*.hdf5"]
optional = "make them with: workbench generate settled"

[[problems]]
scenario = "ball-on-plane-2d"
params = { duration = 0.35, h = 0.01 }
name = "ball-2d"

[methods.clarabel-dual]
label = "Clarabel, dual"
formulation = "dual"
solver = "clarabel"

[methods.apgd-dual]
label = "APGD, dual"
formulation = "dual"
solver = "apgd"
max_iter = 20000

[methods.apgd-anti]
label = "APGD, anti-relaxed"
formulation = "anti-relaxed"
solver = "apgd"

[report]
reference_method = "clarabel-dual"
shift = 0.01

[[report.seed]]
what = "APGD iterations to the interior-point objective"
source = "made up for the test"
value = 10
method = "apgd-dual"
tag = "ball"
quantity = "iterations_to_reference"
rel_tol = 1e-4
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One small study run and reported: (results dir, report dir)."""
    root = tmp_path_factory.mktemp("report")
    study = root / "study.toml"
    study.write_text(STUDY)
    results, out = root / "results", root / "report"
    assert main(["run", str(study), "--out", str(results), "--report-dir", str(out), "--no-progress"]) == 0
    return results, out


# --------------------------------------------------------------------------- statistics

def test_shifted_geometric_mean_against_hand_values():
    assert shifted_geometric_mean([0.0, 0.0], 10.0) == pytest.approx(0.0, abs=1e-12)
    assert shifted_geometric_mean([1.0, 4.0], 1.0) == pytest.approx(np.sqrt(10.0) - 1.0)
    assert shifted_geometric_mean([3.0, 3.0, 3.0], 10.0) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        shifted_geometric_mean([1.0, np.inf])


def test_performance_profile_of_a_hand_example():
    # best times per problem 1, 1, 3: ratios A = 1, 2, inf and B = 2, 1, 1
    times = pd.DataFrame({"A": [1.0, 2.0, np.inf], "B": [2.0, 1.0, 3.0]}, index=["p1", "p2", "p3"])
    rho = performance_profile(times, taus=[1.0, 1.5, 2.0, np.inf])
    np.testing.assert_allclose(rho["A"], [1 / 3, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(rho["B"], [2 / 3, 2 / 3, 1.0, 1.0])
    # a problem nobody solves stays in the denominator
    rho = performance_profile(pd.DataFrame({"A": [1.0, np.inf]}), taus=[np.inf])
    assert rho["A"].iloc[0] == 0.5


def test_loglog_slope_and_iterations_to_reference():
    x = np.array([10.0, 100.0, 1000.0])
    assert loglog_slope(x, 3.0 * x ** 1.5) == pytest.approx(1.5)
    assert np.isnan(loglog_slope([5.0, 5.0], [1.0, 2.0]))
    objective = -1.0 + np.array([0.5, 1e-2, 1e-3, 2e-5, 1e-7])
    assert iterations_to_reference([1, 2, 3, 4, 5], objective, -1.0, 5e-5) == 4
    assert np.isnan(iterations_to_reference([1, 2], [0.0, 0.0], -1.0, 1e-3))


# --------------------------------------------------------------------------- the report's content

def test_report_numbers_come_from_the_runs(report):
    results, out = report
    res = load_results(results)
    runs = res.runs
    assert len(runs) == 4 * 3 and (runs["status"] == "solved").all(), runs[["problem", "method", "status", "message"]]
    assert res.plan["missing"] and "make them with: workbench generate settled" in res.plan["missing"][0]
    # reference objective of the rolling ball: Clarabel's, which is the closed-form relaxed optimum
    ball_ref = res.references()["rolling-ball-2d"]["dual"]
    assert ball_ref == pytest.approx(dual_objective(rolling_ball_2d(), rolling_ball_2d_relaxed_impulse()), rel=1e-6)
    # the seed table's measured value is the first APGD iteration within 1e-4 of that reference
    apgd = runs[(runs["problem"] == "rolling-ball-2d") & (runs["method"] == "apgd-dual")]
    hist = ResultStore(results).read_histories(apgd["key"])
    close = np.abs(hist["objective"].to_numpy() - ball_ref) <= 1e-4 * abs(ball_ref)
    expected = hist["iteration"].to_numpy()[np.argmax(close)]
    assert close.any() and 1 <= expected <= apgd["iterations"].iloc[0]
    seed = pd.read_csv(out / "tables" / "seed.csv", index_col=0)
    assert seed["seed"].iloc[0] == 10 and seed["measured"].iloc[0] == expected and seed["runs"].iloc[0] == 1
    # objective table = the runs' medians; summary success rates
    table = pd.read_csv(out / "tables" / "objective.csv", index_col=0)
    assert table.loc["spheres-8", "Clarabel, dual"] == pytest.approx(
        runs.loc[(runs["problem"] == "spheres-8") & (runs["method"] == "clarabel-dual"), "objective"].iloc[0])
    summary = pd.read_csv(out / "tables" / "summary.csv", index_col=0)
    assert list(summary["solved %"]) == [100.0, 100.0, 100.0]
    text = (out / "index.md").read_text()
    for heading in ("## Summary", "## Seed results beside this study's", "## Convergence", "## Scaling",
                    "## Performance profiles", "## Time series", "## Provenance"):
        assert heading in text
    assert "A problem group was skipped" in text


def test_convergence_figure_draws_each_solver_s_own_history_columns(report, tmp_path):
    """The histories of a problem are one long table with every solver's columns: each run must be
    drawn from the columns its own solver logged (Clarabel: its objective; APGD: the dual objective)."""
    from workbench.report import figures

    res = load_results(report[0])
    runs = res.runs[res.runs["problem"] == "spheres-8"]
    drawn = figures.convergence_figure("spheres-8", runs, res.store.read_histories(runs["key"]),
                                       res.references()["spheres-8"], "absolute", res.labels, res.methods,
                                       tmp_path / "c.png")
    assert drawn["clarabel-dual"] == ("objective", "max(res_primal, res_dual)")
    assert drawn["apgd-dual"] == ("objective", "ccp_residual")
    assert drawn["apgd-anti"] == ("objective", "siconos_error")


def test_relaxed_ball_leaves_the_analytic_curve_and_the_exact_one_follows_it(report):
    """Seed 000 section 3.1 / seed 001 section 5.3.1: with the relaxed (dual) formulation the sliding
    ball's velocities depart from the analytic ones (it lifts off: v_n != 0); anti-relaxed, they
    agree."""
    res = load_results(report[0])
    sims = res.runs[res.runs["kind"] == "simulation"].set_index("method")
    assert (sims["steps"] == 35).all()
    assert sims.loc["apgd-anti", "analytic_error"] < 1e-3
    assert sims.loc["clarabel-dual", "analytic_error"] > 0.05
    assert sims.loc["apgd-anti", "complementarity"] < 1e-5 < sims.loc["clarabel-dual", "complementarity"]
    hist = res.store.read_histories(sims["key"])
    assert set(hist["method"]) == set(sims.index) and len(hist) == 3 * 35
    assert {"t", "v_slope", "v_slope_analytic", "rolling", "complementarity"} <= set(hist.columns)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.tables = [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a["src"])
        elif tag == "a":
            self.links.append(a["href"])
        elif tag == "table":
            self.tables += 1


def test_every_figure_and_file_the_report_names_exists(report):
    _, out = report
    page = _Links()
    page.feed((out / "index.html").read_text())
    assert page.tables >= 10
    names = {Path(p).name for p in page.images}
    assert {"performance_profile.png", "scaling.png", "convergence-rolling-ball-2d.png",
            "timeseries-ball-2d.png"} <= names
    for path in page.images + page.links:
        assert (out / path).is_file(), path
    for path in page.images:
        assert (out / path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _render_in_chromium(index: Path) -> tuple[str, list, list]:
    """Load ``index`` in headless Chromium: its title, [src, complete, naturalWidth, shown width] of
    every image, [rows, shown height] of every table."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("headless Chromium is not installed (/usr/bin/chromium and /usr/bin/chromedriver; "
                    "Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.get(index.resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth,"
            " i.getBoundingClientRect().width])")
        tables = driver.execute_script(
            "return Array.from(document.querySelectorAll('table')).map(t => [t.rows.length,"
            " t.getBoundingClientRect().height])")
        return driver.title, images, tables
    finally:
        driver.quit()


def _assert_renders(images, tables, min_images: int, min_tables: int) -> None:
    assert len(images) >= min_images and len(tables) >= min_tables
    for src, complete, natural_width, shown_width in images:
        assert complete and natural_width > 0 and shown_width > 0, f"broken image {src}"
    for rows, height in tables:
        assert rows >= 2 and height > 0


def test_html_report_renders_in_headless_chromium(report):
    title, images, tables = _render_in_chromium(report[1] / "index.html")
    assert title == "Study report-test"
    _assert_renders(images, tables, 6, 10)


@pytest.mark.slow
def test_quickstart_study_gives_a_report_with_tables_convergence_and_profiles(tmp_path):
    """The README's main command: studies/quickstart.toml, then its report in a browser."""
    study = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"
    out = tmp_path / "report"
    assert main(["run", str(study), "--out", str(tmp_path / "results"), "--report-dir", str(out), "--jobs", "2",
                 "--no-progress"]) == 0
    res = load_results(tmp_path / "results")
    assert len(res.runs) == len(res.plan["runs"]) > 0
    page = _Links()
    page.feed((out / "index.html").read_text())
    names = {Path(p).name for p in page.images}
    assert "performance_profile.png" in names and any(n.startswith("convergence-") for n in names)
    title, images, tables = _render_in_chromium(out / "index.html")
    assert title == "Study quickstart"
    _assert_renders(images, tables, 3, 3)
