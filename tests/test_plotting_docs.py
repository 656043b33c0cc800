"""Every example in docs/ that draws a figure runs as written and draws the figure its text shows:
docs/plotting.md (convergence, profile, scaling at one journal column, as PDF; a simulation's time
series) and docs/api.md (the judged error of two methods on one axis)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def examples(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"), flags=re.S)


def pdf_width_inches(path: Path) -> float:
    """The width of a one-page PDF's MediaBox, in inches (72 points each)."""
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", path.read_bytes())
    assert box, f"{path}: no MediaBox"
    return float(box.group(1)) / 72


def legend_off_the_data(fig) -> bool:
    """No legend box overlaps an axes' plotting area (figure legends and axes legends alike)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return all(not leg.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
               for leg in legends for ax in fig.axes)


def test_plotting_example_runs_and_draws_the_figures_it_shows(capsys):
    blocks = examples("plotting.md")
    assert len(blocks) == 1
    scope: dict = {}
    exec(compile(blocks[0], str(DOCS / "plotting.md"), "exec"), scope)
    work, plot = scope["work"], scope["plot"]
    for name in ("convergence", "profile", "scaling"):
        pdf = work / f"{name}.pdf"
        assert pdf.read_bytes().startswith(b"%PDF") and pdf_width_inches(pdf) == pytest.approx(plot.COLUMN_WIDTH)
    assert (work / "steps.png").stat().st_size > 10_000 and (work / "steps.svg").is_file()
    assert "['convergence.pdf', 'profile.pdf', 'scaling.pdf', 'steps.pdf']" in capsys.readouterr().out
    # the convergence figure shown: one row, the judged measure (both exact methods on siconos_error),
    # against iteration and time, with the threshold, legend by label and off the data
    fig = plot.convergence(scope["histories"], scope["runs"], problem="spheres-8", rows=("error",),
                           width=plot.COLUMN_WIDTH)
    assert [ax.get_ylabel() for ax in fig.axes] == [plot.MEASURES["siconos_error"]] * 2
    assert [ax.get_xlabel() for ax in fig.axes] == ["iteration", "time [s]"]
    for ax in fig.axes:
        gids = {line.get_gid() for line in ax.lines}
        assert {"curve:apgd-anti", "curve:pqn"} <= gids and any((g or "").startswith("threshold:") for g in gids)
    texts = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    assert {"APGD, anti-relaxed", "PQN"} <= texts and not {"apgd-anti", "pqn"} & texts
    assert legend_off_the_data(fig)
    for other in (plot.performance_profile(scope["runs"], value="time", width=plot.COLUMN_WIDTH),
                  plot.scaling(scope["runs"], {"solve_seconds": "solve time [s]"}, width=plot.COLUMN_WIDTH)):
        assert legend_off_the_data(other)
        shown = [t.get_text() for leg in list(other.legends) + [a.get_legend() for a in other.axes if a.get_legend()]
                 for t in leg.get_texts()]
        assert any(t.startswith("APGD, anti-relaxed") for t in shown) and not any(t.startswith("apgd-anti") for t in shown)
    with pytest.raises(ValueError, match="rows take objective, error, own"):
        plot.convergence(scope["histories"], scope["runs"], problem="spheres-8", rows=("errors",))


def test_api_examples_run_and_plot_one_judged_measure(capsys):
    """The study block and the plot block of docs/api.md (tests/test_method.py runs the page whole)."""
    blocks = [b for b in examples("api.md") if "load_histories" in b or "savefig" in b]
    assert len(blocks) == 2
    scope: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOCS / 'api.md'} block {i}", "exec"), scope)
    fig, histories = scope["fig"], scope["histories"]
    ax = fig.axes[0]
    measures = set(histories.dropna(subset=["judged_error"])["judged_name"])
    assert len(measures) == 1 and ax.get_ylabel() == f"judged error: {measures.pop()} (workbench measure)"
    assert (scope["folder"] / "convergence.pdf").read_bytes().startswith(b"%PDF")
    assert legend_off_the_data(fig)
