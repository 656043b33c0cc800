"""Figures ready for a paper (issue 46): every figure kind of workbench.plot, drawn from small tables
made here, has readable axis labels with units from the one table of measure names (plot.MEASURES),
its legend off the data, methods told apart where their lines coincide (a marker each, and a note in
words), no spread in the legend without spread, and is saved as a 300 dpi PNG beside a vector PDF."""

import struct
import zlib

import numpy as np
import pandas as pd
import pytest

from workbench import plot
from test_plotting_docs import legend_off_the_data


def _png_dpi(path) -> float:
    """The resolution a PNG states (its pHYs chunk), in dots per inch."""
    data = path.read_bytes()
    i = data.index(b"pHYs")
    x, _, unit = struct.unpack(">IIB", data[i + 4:i + 13])
    assert unit == 1  # per metre
    return x * 0.0254


def _histories_and_runs(repetitions: int):
    """Two methods with the very same iterates (they coincide), and a third."""
    hist, runs = [], []
    for method, scale in (("a", 1.0), ("b", 1.0), ("c", 0.3)):
        for rep in range(repetitions):
            key = f"{method}{rep}"
            it = np.arange(1, 41)
            err = scale * 0.5 ** it * (1 + 0.1 * rep)
            hist.append(pd.DataFrame({"key": key, "iteration": it, "seconds": it * 1e-3, "objective": 1.0 + err,
                                      "error_name": "ccp_residual", "error": err, "judged_name": "relaxed_error",
                                      "judged_error": err}))
            runs.append({"key": key, "problem": "p", "method": method, "label": f"method {method.upper()}",
                         "objective": 1.0 + err[-1], "judged_error": err[-1], "judged_name": "relaxed_error",
                         "tol": 1e-6, "accept": 1e-6, "repetition": rep, "status": "solved", "n_contacts": 10,
                         "solve_seconds": 0.04, "iterations": 40})
    return pd.concat(hist, ignore_index=True), pd.DataFrame(runs)


def _labels(fig) -> list[str]:
    return [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel()) if t]


def _legend_texts(fig) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legends for t in leg.get_texts()]


def _readable(label: str) -> bool:
    """A label from the table (or a count, which has no unit), never a column's code name."""
    return label in plot.MEASURES.values() or label in ("iteration", "contacts") or "[" in label


@pytest.mark.parametrize("repetitions", [1, 3])
def test_convergence_labels_markers_and_spread_legend(repetitions):
    histories, runs = _histories_and_runs(repetitions)
    fig = plot.convergence(histories, runs, problem="p")
    labels = _labels(fig)
    assert plot.MEASURES["relaxed_error"] in labels and plot.MEASURES["ccp_residual"] in labels
    assert all(_readable(label) for label in labels), labels
    assert not any(label.startswith(("judged:", "own:")) for label in labels)
    curves = [line for line in fig.axes[0].lines if (line.get_gid() or "").startswith("curve:")]
    assert len({line.get_marker() for line in curves}) == 3  # the coinciding A and B differ by their marker
    texts = _legend_texts(fig)
    assert ("min-max over repetitions" in texts) == (repetitions > 1)
    assert legend_off_the_data(fig)


def test_profile_scaling_and_time_series_labels_and_legends(tmp_path):
    values = pd.DataFrame({"A": [1.0, 2.0, np.inf], "B": [1.5, 1.0, 3.0]}, index=["p1", "p2", "p3"])
    profile = plot.performance_profile(values)
    scaling = plot.scaling(pd.DataFrame([{"problem": f"p{n}", "method": m, "label": f"method {m}", "status": "solved",
                                          "n_contacts": n, "solve_seconds": 1e-4 * n, "iterations": 40}
                                         for m in "ab" for n in (10, 100, 1000)]))
    t = np.linspace(0, 1, 50)
    steps = pd.concat([pd.DataFrame({"t": t, "method": m, "v_slope": 1 - t, "v_slope_analytic": 1 - t,
                                     "complementarity": 1e-9 + 0 * t, "iterations": 5}) for m in ("x", "y")])
    series = plot.time_series(steps, title="two methods on top of each other")
    ball = pd.DataFrame({"t": t, "v_slope": 1 - t, "v_slope_analytic": 1 - t, "rolling": t, "rolling_analytic": t,
                         "contacts": 1, "iterations": 5, "complementarity": 1e-9, "fixed_force": 9.81})
    for fig in (profile, scaling, series, plot.simulation_velocities(ball, title="ball"),
                plot.simulation_steps(ball, title="ball", weight=9.81)):
        labels = _labels(fig)
        assert labels and all(_readable(label) for label in labels), labels
        assert not {"v_slope", "rolling", "t", "complementarity", "fixed_force"} & set(labels)
        assert legend_off_the_data(fig)
    assert "y (same as x)" in _legend_texts(series)
    files = plot.save(series, tmp_path / "series.png")
    assert files == {"PDF": "series.pdf", "SVG": "series.svg"}
    assert _png_dpi(tmp_path / "series.png") == pytest.approx(plot.PNG_DPI, abs=0.5)
    assert (tmp_path / "series.pdf").read_bytes().startswith(b"%PDF")
