"""The workbench's figures as public functions, each returning a matplotlib Figure (object API on the
Agg canvas: no pyplot, no display); the study reports draw through them, and :func:`save` writes
one as a 300 dpi PNG with vector PDF and SVG beside it. See docs/plotting.md for an example that runs.

    >>> from workbench import plot
    >>> from workbench.study import load_histories, load_results
    >>> runs = load_results("results/quickstart")
    >>> fig = plot.convergence(load_histories("results/quickstart"), runs, problem="spheres-50")
    >>> fig.savefig("convergence.png")

- :func:`convergence` (the form of Mazhar et al. 2014 Figs. 1-4): per problem, one column against
  iteration and one against time (``x``), log-log, the rows chosen by ``rows`` ("objective", "error",
  "own"; a paper's figure: ``rows=("error",)``). Row "objective": |objective - reference| (with ``references``) or
  |objective|. Rows "error": one row per judged measure (relaxed_error for relaxed formulations, siconos_error
  for exact ones, lcp_residual for LCPs): the history's ``judged_error``, the workbench's measure of
  each method's iterates computed the same way for every solver (workbench.judging.judge_history),
  with each method's acceptance threshold drawn as a dashed line; so every method in a panel is on one
  measure (a run's measure is the one its record names, ``judged_name``). Rows "own": at most MAX_OWN_ROWS rows of the measures solvers log of themselves that are not a
  judged measure (ccp_residual, an interior-point method's residuals, ...), one measure per panel,
  recorded and never judged. Each method is its median curve over repetitions with a band from the
  minimum to the maximum (per iteration, over the repetitions that reached it; against time at the
  median time of that iteration, as benchopt plots it, shaded from the fastest to the slowest
  repetition's time); a cross marks the returned point (the median of the workbench's measure over
  repetitions, at the curve's last iteration or time). A method that handed over is drawn alone up to
  the hand-over (the runs' ``history_until``) and, as its composite (dashed), with the whole run.
- :func:`performance_profile`: Dolan-More profiles rho_s(tau) on a log2 axis.
- :func:`scaling`: quantities against contacts, log-log, with the least-squares slope per method.
- :func:`time_series`: a simulation's per-step quantities against time, analytic curves dashed, steps
  finished by another method marked.
- :func:`simulation_velocities` and :func:`simulation_steps`: the two figures of ``workbench simulate``
  (a scene's tracked velocities beside their analytic values; contacts, iterations, complementarity and
  the force on the fixed bodies against time).

Legends are placed outside the axes, never over data; methods appear by their labels (the runs' ``label``
column, the study's ``label =``, or ``labels=``). ``width`` (inches; :data:`COLUMN_WIDTH` for one journal
column) draws a figure at that width with fonts for print, and :func:`save` writes PDF or SVG (vector)
when the path says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from workbench.status import JUDGED_MEASURES

__all__ = ["convergence", "performance_profile", "scaling", "scaling_slopes", "time_series", "save",
           "simulation_velocities", "simulation_steps",
           "judged_measure", "JUDGED", "MAX_OWN_ROWS", "COLUMN_WIDTH", "ROWS", "MEASURES", "measure_label", "PNG_DPI"]

#: the measures a run can be judged by (a model's judged_by, workbench.status), in panel order
JUDGED = JUDGED_MEASURES
#: rows of the solvers' own measures drawn below the judged ones, the most common first
MAX_OWN_ROWS = 2
#: every measure and per-step quantity a figure can show: its name in the tables and histories ->
#: the axis label, in words with its unit ([-]: dimensionless); the one place a figure's label comes from
MEASURES = {
    "relaxed_error": "relaxed error, workbench measure [-]",
    "siconos_error": "Siconos error (De Saxce), workbench measure [-]",
    "lcp_residual": "LCP residual, workbench measure",
    "judged error": "error, workbench measure [-]",
    "ccp_residual": "CCP residual (solver's own)",
    "max(res_primal, res_dual)": "max of primal and dual residuals (solver's own)",
    "res_primal": "primal residual (solver's own)",
    "res_dual": "dual residual (solver's own)",
    "objective": "|objective - reference| [J]",
    "|objective|": "|objective| [J]",
    "v_slope": "velocity along the slope [m/s]",
    "rolling": "rolling speed R w [m/s]",
    "v_normal": "normal velocity [m/s]",
    "complementarity": "complementarity max|g_n u_n| [J]",
    "iterations": "solver iterations",
    "contacts": "contacts",
    "fixed_force": "force on the fixed bodies [N]",
    "kinetic_energy": "kinetic energy [J]",
    "solve_seconds": "solve time [s]",
    "seconds": "time [s]",
    "t": "t [s]",
    "rho": "fraction of problems solved within tau (rho) [-]",
}
#: resolution of the PNG beside each vector figure (print quality)
PNG_DPI = 300
#: markers that tell apart lines drawn on top of each other (one per method, in order)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


def measure_label(name: str) -> str:
    """The axis label of a measure (:data:`MEASURES`); a name not in the table as it is, said to be
    the solver's own where the convergence figure shows it so."""
    return MEASURES.get(name, name)


#: the row kinds of a convergence figure, in the order drawn
ROWS = ("objective", "error", "own")
#: one column of a two-column journal page (Elsevier, IEEE, Springer: 84-90 mm), in inches
COLUMN_WIDTH = 3.5
#: font sizes at print width (points): legible at 100 % in a column
_PRINT_STYLE = {"font.size": 7, "axes.labelsize": 7, "axes.titlesize": 7, "legend.fontsize": 6,
                "xtick.labelsize": 6, "ytick.labelsize": 6, "figure.titlesize": 7, "lines.markersize": 4}


def save(fig: Figure, path: Path | str) -> dict[str, str]:
    """Write the figure atomically: a ``.png`` path as a PNG at :data:`PNG_DPI` with the same figure as
    vector PDF and SVG beside it ({"PDF": pdf file name, "SVG": svg file name}); a ``.pdf`` or ``.svg``
    path as that vector file alone ({}), fonts embedded as text (PDF Type 42) so a journal's checks
    accept it."""
    from workbench.files import atomic_output
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = path.suffix.lower().lstrip(".")
    if kind in ("pdf", "svg"):
        import matplotlib
        with matplotlib.rc_context({"pdf.fonttype": 42, "svg.fonttype": "none"}), atomic_output(path) as tmp:
            fig.savefig(tmp, format=kind)
        return {}
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=PNG_DPI, format="png")
    for kind in ("pdf", "svg"):
        save(fig, path.with_suffix(f".{kind}"))
    return {"PDF": path.with_suffix(".pdf").name, "SVG": path.with_suffix(".svg").name}


def _style(width: float | None):
    """The drawing context: print fonts when a width is asked, else matplotlib's defaults."""
    import contextlib

    import matplotlib
    return matplotlib.rc_context(_PRINT_STYLE) if width is not None else contextlib.nullcontext()


def _colors(methods: list[str]) -> dict[str, str]:
    return {m: f"C{i % 10}" for i, m in enumerate(methods)}


def _order(runs: pd.DataFrame, labels: dict[str, str] | None, methods: list[str] | None):
    """Methods in ``methods`` order (default: as they appear) and their labels (default: the runs')."""
    methods = list(methods) if methods is not None else list(dict.fromkeys(runs["method"]))
    if labels is None:
        labels = dict(zip(runs["method"], runs["label"])) if "label" in runs else {}
    return methods, {m: labels.get(m, m) for m in methods}


def judged_measure(run) -> str | None:
    """Which workbench measure a run's judged error is: its record's ``judged_name`` (None without a
    judged error)."""
    name, judged = getattr(run, "judged_name", None), getattr(run, "judged_error", np.nan)
    return name if isinstance(name, str) and judged is not None and np.isfinite(judged) else None


def _threshold(run) -> float:
    accept = getattr(run, "accept", None)
    return float(accept) if accept is not None and np.isfinite(accept) else float(run.tol)


# --------------------------------------------------------------------------- convergence

def _band(curves: list[pd.DataFrame]) -> pd.DataFrame | None:
    """Per iteration, over the repetitions that reached it (benchopt's convention): the median of
    the seconds and the median, min and max of y. ``curves``: one frame (iteration, seconds, y) per
    repetition."""
    curves = [c for c in curves if len(c)]
    if not curves:
        return None
    wide = pd.concat([c.set_index("iteration")[["seconds", "y"]].add_suffix(f"_{i}") for i, c in enumerate(curves)],
                     axis=1).sort_index()
    y, sec = wide.filter(like="y_"), wide.filter(like="seconds_")
    return pd.DataFrame({"iteration": wide.index.to_numpy(dtype=float), "seconds": sec.median(axis=1).to_numpy(),
                         "seconds_lo": sec.min(axis=1).to_numpy(), "seconds_hi": sec.max(axis=1).to_numpy(),
                         "median": y.median(axis=1).to_numpy(), "lo": y.min(axis=1).to_numpy(),
                         "hi": y.max(axis=1).to_numpy()})


def _draw(ax, curves: list[pd.DataFrame], xname: str, color: str, gid: str, ls: str = "-",
          marker: str | None = None) -> bool:
    band = _band([c[np.isfinite(c["y"]) & (c["y"] > 0)] for c in curves])
    if band is None:
        return False
    band = band[band[xname] > 0]
    if band.empty:
        return False
    # a few markers along the line (not at every point): methods drawn on top of each other stay apart
    ax.plot(band[xname], band["median"], ls=ls, color=color, lw=1.4, gid=gid, marker=marker,
            markevery=max(1, len(band) // 6), ms=4, mfc="none")
    if len(curves) > 1:
        ax.fill_between(band[xname], band["lo"], band["hi"], color=color, alpha=0.2, lw=0)
        if xname == "seconds":  # the spread of the clock: from the fastest to the slowest repetition
            keep = band["seconds_lo"] > 0
            ax.fill(np.concatenate([band["seconds_lo"][keep], band["seconds_hi"][keep][::-1]]),
                    np.concatenate([band["median"][keep], band["median"][keep][::-1]]), color=color, alpha=0.2, lw=0)
    return True


def _mantissa_2_5(value, _pos) -> str:
    """Label a minor log tick only at 2 and 5 times a power of ten (the rest crowd each other)."""
    mantissa = value / 10 ** np.floor(np.log10(value)) if value > 0 else 0
    return f"{value:.2g}" if np.isclose(mantissa, 2) or np.isclose(mantissa, 5) else ""


def _short_decades(ax) -> None:
    """On a log axis spanning less than two decades matplotlib labels every minor tick; keep 2 and 5."""
    from matplotlib.ticker import FuncFormatter
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if lo > 0 and hi > 0 and np.log10(hi / lo) < 2:
            axis.set_minor_formatter(FuncFormatter(_mantissa_2_5))


def _run_history(hist: pd.DataFrame, run) -> pd.DataFrame:
    """The run's history rows, up to its hand-over for a method drawn alone."""
    h = hist[hist["key"] == run.key]
    until = getattr(run, "history_until", np.nan)
    return h[h["iteration"] <= until] if until is not None and np.isfinite(until) else h


#: the x axes of a convergence figure: name -> (history column, axis label)
_X_AXES = {"iteration": ("iteration", "iteration"), "time": ("seconds", "time [s]")}


def convergence(histories: pd.DataFrame, runs: pd.DataFrame, *, problem: str | None = None,
                references: dict | None = None, mode: str = "error", labels: dict[str, str] | None = None,
                methods: list[str] | None = None, rows: tuple[str, ...] = ROWS,
                x: tuple[str, ...] = ("iteration", "time"), width: float | None = None) -> Figure:
    """The convergence figure of one problem (module docstring).

    rows: which rows, from ROWS ("objective": the objective's distance to the reference; "error": the
    judged measure(s); "own": the solvers' own logged measures); x: the columns, "iteration" and/or
    "time"; width: the figure's width in inches with print fonts (COLUMN_WIDTH: one journal column).

    histories: :func:`workbench.study.load_histories` (columns key, iteration, seconds, objective,
    error_name, error, judged_name, judged_error); runs: :func:`workbench.study.load_results` rows
    (key, method, label, objective, judged_error, tol, accept; ``history_until`` where a method is
    drawn alone up to a hand-over); problem: which one (needed when ``runs`` hold several);
    references: method -> reference (an object with ``objective`` and ``method``, e.g.
    workbench.report.reference.Reference) or None; mode "error" draws |objective - reference|,
    "absolute" |objective| with the references dashed (without ``references``: |objective|)."""
    unknown_rows = [r for r in rows if r not in ROWS] + [c for c in x if c not in _X_AXES]
    if unknown_rows or not rows or not x:
        raise ValueError(f"convergence: rows take {', '.join(ROWS)} and x takes {', '.join(_X_AXES)} "
                         f"(at least one each); got rows={tuple(rows)}, x={tuple(x)}")
    with _style(width):
        return _convergence(histories, runs, problem, references, mode, labels, methods, tuple(rows), tuple(x), width)


def _convergence(histories, runs, problem, references, mode, labels, methods, wanted, xs, width) -> Figure:
    if problem is not None:
        runs = runs[runs["problem"] == problem]
    elif runs["problem"].nunique() > 1:
        raise ValueError("runs of several problems: name one (problem=...): "
                         + ", ".join(dict.fromkeys(runs["problem"])))
    problem = problem or (runs["problem"].iloc[0] if len(runs) else "")
    methods, labels = _order(runs, labels, methods)
    if references is None:
        references, mode = {}, "absolute"
    colors = _colors(methods)
    hist = histories[histories["key"].isin(runs["key"])] if len(histories) else histories
    judged_rows = [n for n in JUDGED if "judged_name" in hist and (hist["judged_name"] == n).any()]
    own = hist.loc[~hist["error_name"].isin(JUDGED), "error_name"].dropna() if len(hist) else pd.Series(dtype=str)
    own_rows = list(own.value_counts(sort=True).index[:MAX_OWN_ROWS])
    rows = [row for kind in ROWS if kind in wanted for row in
            {"objective": ["objective"], "error": [("judged", n) for n in judged_rows] or [("judged", "judged error")],
             "own": [("own", n) for n in own_rows]}[kind]]
    top = rows.index("objective") if "objective" in rows else None
    columns = [_X_AXES[c] for c in xs]
    size = (11 * len(columns) / 2, 2.9 * len(rows) + 1.3) if width is None else \
        (width, width * 0.62 * len(rows) / len(columns) + 0.9)
    fig = Figure(figsize=size, layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(rows), len(columns), squeeze=False))
    drawn, thresholds, spread = [], {}, False
    markers = {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(methods)}
    # a composite (a method with its hand-over: base_method differs) is dashed over its method alone
    composite = set(runs.loc[runs["method"] != runs["base_method"], "method"]) if "base_method" in runs else set()
    for method in [m for m in methods if m in set(runs["method"])]:
        mine, color = runs[runs["method"] == method], colors[method]
        ls = "--" if method in composite else "-"
        ref = references.get(method)
        offset = ref.objective if (mode == "error" and ref is not None) else 0.0
        have_ref = mode == "absolute" or ref is not None
        curves: dict[object, list[pd.DataFrame]] = {}
        ends = []
        judged_by = {judged_measure(run) for run in mine.itertuples()} - {None}
        for run in mine.itertuples():
            h = _run_history(hist, run)
            if h.empty:
                continue
            ends.append(h[["iteration", "seconds"]].max())
            one = h.drop_duplicates(subset=["iteration"], keep="last")
            if have_ref and one["objective"].notna().any():
                curves.setdefault("objective", []).append(one[["iteration", "seconds"]].assign(
                    y=(one["objective"] - offset).abs()))
            if "judged_error" in one and one["judged_error"].notna().any():
                name = one["judged_name"].iloc[0]
                judged_by.add(name)
                curves.setdefault(("judged", name), []).append(
                    one[["iteration", "seconds"]].assign(y=one["judged_error"]))
            for name, g in h[~h["error_name"].isin(JUDGED)].groupby("error_name"):
                g = g.drop_duplicates(subset=["iteration"], keep="last")
                curves.setdefault(("own", name), []).append(g[["iteration", "seconds"]].assign(y=g["error"]))
        for name in judged_by:
            thresholds.setdefault(name, set()).update(_threshold(run) for run in mine.itertuples())
        for col, (xname, _) in enumerate(columns):
            for r, row in enumerate(rows):
                if _draw(axes[r, col], curves.get(row, []), xname, color, f"curve:{method}", ls, markers[method]):
                    drawn.append(method)
                    spread |= len(curves.get(row, [])) > 1
            if not ends:
                continue
            x_end = float(np.median([e[xname] for e in ends]))
            if top is not None and have_ref and mine["objective"].notna().any():
                y = float(np.nanmedian((mine["objective"] - offset).abs()))
                if np.isfinite(y) and y > 0 and x_end > 0:
                    axes[top, col].plot([x_end], [y], "x", color=color, ms=8, mew=2, gid=f"returned:{method}")
            y = float(np.nanmedian(mine["judged_error"])) if mine["judged_error"].notna().any() else np.nan
            for r, row in enumerate(rows):
                if isinstance(row, tuple) and row[0] == "judged" and row[1] in judged_by and np.isfinite(y) \
                        and y > 0 and x_end > 0:
                    axes[r, col].plot([x_end], [y], "x", color=color, ms=8, mew=2, gid=f"returned:{method}")
    if mode == "absolute" and top is not None:
        shown = {ref.method: ref for ref in references.values() if ref is not None}
        for i, ref in enumerate(shown.values()):
            for ax in axes[top]:
                ax.axhline(abs(ref.objective), color="k", ls=("--", ":", "-.")[i % 3], lw=1)
    top_label = measure_label("objective" if mode == "error" else "|objective|")
    for r, row in enumerate(rows):
        for col, (_, xlabel) in enumerate(columns):
            ax = axes[r, col]
            if row == "objective":
                ylabel = top_label
            elif row[0] == "judged":
                ylabel = measure_label(row[1])
                for t in sorted(thresholds.get(row[1], ())):
                    ax.axhline(t, color="0.3", ls=":", lw=1.2, gid=f"threshold:{t:g}")
            else:
                ylabel = MEASURES.get(row[1], f"{row[1]} (solver's own)")
            ax.set(xlabel=xlabel, ylabel=ylabel)
            if any(line.get_gid() and line.get_gid().startswith(("curve:", "returned:")) for line in ax.lines):
                ax.set(xscale="log", yscale="log")
                _short_decades(ax)
                ax.grid(True, which="both", alpha=0.3)
            else:
                for line in list(ax.lines):
                    line.remove()
                no_ref = mode == "error" and all(v is None for v in references.values())
                if row != "objective":
                    why = f"no run logged\n{row[1]}"
                elif no_ref:
                    why = "no reference: no other\nmethod solved this problem\nin this formulation"
                else:
                    why = "no run logged\nits objective"
                ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=9 if width is None else 6,
                        transform=ax.transAxes)
                ax.set(xticks=[], yticks=[])
    handles = [Line2D([], [], color=colors[m], lw=2, ls="--" if m in composite else "-", marker=markers[m], ms=4,
                      mfc="none", label=labels[m]) for m in methods if m in drawn]
    if spread:  # a band only where some method has more than one repetition drawn
        handles.append(Patch(color="0.6", alpha=0.4, label="min-max over repetitions"))
    handles.append(Line2D([], [], color="k", marker="x", ls="", label="returned point (workbench measure)"))
    if thresholds:
        handles.append(Line2D([], [], color="0.3", ls=":", lw=1.2, label="acceptance threshold"))
    if top is not None and mode == "absolute" and any(v is not None for v in references.values()):
        handles.append(Line2D([], [], color="k", ls="--", lw=1, label="|reference objective|"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4 if width is None else 2, len(handles)),
               fontsize=8 if width is None else None)
    if width is None:
        fig.suptitle(f"{problem}: median over repetitions; judged rows: the workbench's measure of every method's "
                     "iterates", fontsize=10)
    return fig


# --------------------------------------------------------------------------- profiles

def performance_profile(results: pd.DataFrame, *, value: str = "time", xlabel: str | None = None,
                        title: str = "", width: float | None = None) -> Figure:
    """Dolan-More profiles rho_s(tau) of ``value`` ("time" or "iterations"), tau on a log2 axis.

    results: either problems x methods of the value (inf: not solved; NaN: the method cannot take the
    problem, left out of its fraction), as workbench.analysis.profiles.profile_values gives, or the
    rows of :func:`workbench.study.load_results`, accounted by the report's rule (solve time, a
    problem not solved never counts). width: inches, with print fonts (COLUMN_WIDTH: one journal column)."""
    from workbench.analysis.profiles import performance_profile as profile, results_profile_values

    if "status" in results.columns:
        results = results_profile_values(results, value)
    rho = profile(results)
    with _style(width):
        return _profile_figure(rho, value, xlabel, title, width)


def _profile_figure(rho: pd.DataFrame, value: str, xlabel: str | None, title: str, width: float | None) -> Figure:
    fig = Figure(figsize=(7, 4.5) if width is None else (width, 0.75 * width + 0.5), layout="constrained")
    ax = fig.subplots()
    taus = rho.index.to_numpy()
    right = max(2.0, float(taus.max()) * 1.5) if len(taus) else 2.0
    for i, method in enumerate(rho.columns):
        y = rho[method].to_numpy()
        if not np.isfinite(y).any():
            continue
        ax.step(np.append(taus, right), np.append(y, y[-1]), where="post", color=f"C{i % 10}", label=method,
                marker=_MARKERS[i % len(_MARKERS)], markevery=max(1, len(y) // 5), ms=4, mfc="none")
    xlabel = xlabel or f"ratio to the best {'solve time' if value == 'time' else value} (tau) [-]"
    ax.set(xlim=(1.0, right), ylim=(0.0, 1.02), xlabel=xlabel, ylabel=measure_label("rho"))
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    if ax.has_data():   # below the axes: a profile's lines reach every corner
        fig.legend(loc="outside lower center", ncols=2, fontsize=8 if width is None else None)
    else:
        ax.text(0.5, 0.5, "no method solved any problem", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------- scaling

def _scaling_pairs(results: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """One row per (problem, method): the median of ``columns`` over the solved repetitions."""
    if "status" in results.columns:
        results = results[results["status"] == "solved"]
    keys = ["problem", "method"] if "problem" in results else ["method", "n_contacts"]
    agg = {c: (c, "median") for c in columns}
    if "n_contacts" not in keys:
        agg["n_contacts"] = ("n_contacts", "first")
    return results.groupby(keys, sort=False).agg(**agg).reset_index()


def scaling_slopes(results: pd.DataFrame, columns: dict[str, str], *, labels: dict[str, str] | None = None,
                   methods: list[str] | None = None) -> pd.DataFrame:
    """Per method, the least-squares slope in log-log of each column of ``columns`` against
    n_contacts (the exponent k of value ~ contacts^k) and the number of points; index: labels."""
    from workbench.analysis.stats import loglog_slope

    methods, labels = _order(results, labels, methods)
    pairs = _scaling_pairs(results, list(columns))
    rows = []
    for method in methods:
        mine = pairs[pairs["method"] == method]
        if len(mine):
            rows.append({"method": labels[method], "points": len(mine),
                         **{f"{c} slope": loglog_slope(mine["n_contacts"], mine[c]) for c in columns}})
    return pd.DataFrame(rows).set_index("method") if rows else pd.DataFrame()


def scaling(results: pd.DataFrame, columns: dict[str, str] | None = None, *, labels: dict[str, str] | None = None,
            methods: list[str] | None = None, title: str = "", width: float | None = None) -> Figure:
    """Each column of ``columns`` (column -> axis label; default solve time and iterations) against
    the number of contacts, log-log, one panel per column and one line per method with its fitted
    slope. ``results``: load_results rows (the solved runs' medians per problem are drawn) or one row
    per (problem, method) with method, n_contacts and the columns. width: inches, with print fonts
    (COLUMN_WIDTH: one journal column)."""
    columns = columns or {c: measure_label(c) for c in ("solve_seconds", "iterations")}
    methods, labels = _order(results, labels, methods)
    pairs = _scaling_pairs(results, list(columns))
    slopes = scaling_slopes(results, columns, labels=labels, methods=methods)
    with _style(width):
        return _scaling_figure(pairs, slopes, columns, methods, labels, title, width)


def _scaling_figure(pairs, slopes, columns, methods, labels, title, width) -> Figure:
    colors = _colors(methods)
    size = (5.5 * len(columns), 4.5) if width is None else (width, width / len(columns) * 0.9 + 0.7)
    fig = Figure(figsize=size, layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(columns)))
    for method in methods:
        mine = pairs[pairs["method"] == method].sort_values("n_contacts")
        for ax, col in zip(axes, columns):
            k = slopes.loc[labels[method], f"{col} slope"] if labels[method] in slopes.index else np.nan
            x, y = mine["n_contacts"].to_numpy(dtype=float), mine[col].to_numpy(dtype=float)
            keep = np.isfinite(y) & (y > 0)
            if keep.any():
                ax.plot(x[keep], y[keep], "-", marker=_MARKERS[methods.index(method) % len(_MARKERS)], mfc="none",
                        color=colors[method],
                        label=f"{labels[method]} (slope {k:.2f})" if k == k else labels[method])
    for ax, (col, ylabel) in zip(axes, columns.items()):
        ax.set(xlabel="contacts", ylabel=ylabel)
        if ax.has_data():
            ax.set(xscale="log", yscale="log")
            ax.grid(True, which="both", alpha=0.3)
            # each panel's legend below it, off the data (the slopes differ from panel to panel)
            ax.legend(fontsize=8 if width is None else None, loc="upper center", bbox_to_anchor=(0.5, -0.22),
                      ncols=1, frameon=False)
        else:
            ax.text(0.5, 0.5, "no solved run to show", ha="center", va="center", transform=ax.transAxes)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------- time series

#: per-step columns drawn first (a simulation's tracked velocities, then its solver effort)
_SERIES_FIRST = ("v_slope", "rolling", "v_normal", "complementarity", "iterations", "contacts", "fixed_force",
                 "kinetic_energy")
#: per-step columns drawn on a log axis
_SERIES_LOG = ("complementarity",)


def time_series(steps: pd.DataFrame, *, title: str = "", max_panels: int = 6) -> Figure | None:
    """A simulation's per-step quantities (the per-step table a simulation records: load_histories
    of a simulation run) against ``t`` (or ``time``, ``step``), one line per ``method`` when the table
    has that column; a column ``X_analytic`` is drawn dashed black on X's panel; steps whose
    ``handover`` names another method that finished them are marked (triangles). None when there is
    nothing to plot."""
    x = next((c for c in ("t", "time", "step") if c in steps.columns), None)
    numeric = [c for c in steps.columns if c not in (x, "step", "repetition") and not c.endswith("_analytic")
               and pd.api.types.is_numeric_dtype(steps[c]) and steps[c].notna().any()]
    ys = ([c for c in _SERIES_FIRST if c in numeric] + [c for c in numeric if c not in _SERIES_FIRST])[:max_panels]
    if x is None or not ys:
        return None
    groups = list(steps.groupby("method", sort=False)) if "method" in steps else [("", steps)]
    fig = Figure(figsize=(9, 2.2 * len(ys) + 1.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(ys), 1, sharex=True))
    for i, (name, frame) in enumerate(groups):
        # steps finished by another method (a fallback, a polish) are marked on every panel
        handed = frame["handover"].map(lambda v: isinstance(v, str) and v != "") if "handover" in frame else None
        for ax, y in zip(axes, ys):
            values = frame[y].where(frame[y] > 0) if y in _SERIES_LOG else frame[y]
            # each method its marker, a few along the line: lines drawn on top of each other stay apart
            ax.plot(frame[x], values, "-", color=f"C{i % 10}", lw=1.2, label=str(name) or None,
                    marker=_MARKERS[i % len(_MARKERS)], markevery=(i, max(1, len(frame) // 8)), ms=4, mfc="none")
            if handed is not None and handed.any():
                ax.plot(frame.loc[handed, x], values[handed], "v", color=f"C{i % 10}", ms=5, ls="",
                        gid="handover", label="step finished by another method" if ax is axes[0] else None)
    first = groups[0][1]
    for ax, y in zip(axes, ys):
        if f"{y}_analytic" in first:
            ax.plot(first[x], first[f"{y}_analytic"], "--", color="k", lw=1, label="analytic")
        if y in _SERIES_LOG and ax.has_data():
            ax.set_yscale("log")
        ax.set_ylabel(measure_label(y))
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel(measure_label(x))
    handles, names = axes[0].get_legend_handles_labels()
    same = _coinciding(groups, ys)
    if same:  # said in words too: a reader of a print sees one line
        names = [n + (f" (same as {same[n]})" if n in same else "") for n in names]
    if handles:  # below the panels, off the data
        fig.legend(handles, names, loc="outside lower center", ncols=min(3, len(handles)), fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig


def _coinciding(groups, ys) -> dict[str, str]:
    """Methods whose every drawn series equals an earlier method's: name -> that method's name."""
    same = {}
    for i, (name, frame) in enumerate(groups):
        for other, earlier in groups[:i]:
            if len(frame) == len(earlier) and all(np.allclose(frame[y].to_numpy(dtype=float), earlier[y].to_numpy(
                    dtype=float), rtol=1e-12, atol=0, equal_nan=True) for y in ys):
                same[str(name)] = str(other)
                break
    return same


# --------------------------------------------------------------------------- one simulation

#: tracked velocities of single-body scenes (steps.csv of workbench simulate); their labels: MEASURES
_TRACKED = ("v_slope", "rolling", "v_normal")


def simulation_velocities(steps: pd.DataFrame, *, title: str = "") -> Figure:
    """The tracked velocities of a single-body scene against ``t`` (points), each with its analytic
    value ``X_analytic`` (line), one panel per velocity [m/s]."""
    keys = [k for k in _TRACKED if k in steps]
    fig = Figure(figsize=(7, 2.6 * len(keys) + 0.6), layout="constrained")
    axes = fig.subplots(len(keys), 1, sharex=True, squeeze=False)
    t = steps["t"].to_numpy()
    for ax, key in zip(axes[:, 0], keys):
        ax.plot(t, steps[key], "o", ms=2.5, label="simulated")
        ax.plot(t, steps[f"{key}_analytic"], "-", lw=1, label="analytic")
        ax.set_ylabel(measure_label(key))
        ax.grid(alpha=0.3)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    axes[0, 0].set_title(title)
    axes[-1, 0].set_xlabel(measure_label("t"))
    return fig


def simulation_steps(steps: pd.DataFrame, *, title: str = "", weight: float | None = None) -> Figure:
    """Contacts, solver iterations, complementarity max |g_n u_n| (Melanz et al. 2015 eq. 8; log axis)
    and the force on the fixed bodies [N] against ``t``, with the total ``weight`` [N] dashed when given."""
    t = steps["t"].to_numpy()
    fig = Figure(figsize=(10, 6.4), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True)
    axes[0, 0].plot(t, steps["contacts"])
    axes[0, 0].set_ylabel(measure_label("contacts"))
    axes[0, 1].plot(t, steps["iterations"])
    axes[0, 1].set_ylabel(measure_label("iterations"))
    compl = steps["complementarity"].to_numpy()
    axes[1, 0].semilogy(t, np.where(compl > 0, compl, np.nan))
    axes[1, 0].set_ylabel(measure_label("complementarity"))
    axes[1, 1].plot(t, steps["fixed_force"], label="simulated")
    if weight is not None:
        axes[1, 1].axhline(weight, color="k", lw=0.8, ls="--", label="total weight")
        fig.legend(*axes[1, 1].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    axes[1, 1].set_ylabel(measure_label("fixed_force"))
    for ax in axes[1]:
        ax.set_xlabel(measure_label("t"))
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return fig
