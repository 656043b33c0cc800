"""Figures of a report, each written as PNG (shown) and SVG (for print), through matplotlib's object
API on the Agg canvas (no pyplot, no display).

Convergence (the form of Mazhar et al. 2014 Figs. 1-4): per problem, one column against iteration and one
against time, log-log. The top row is |objective - reference| ("error" mode; the reference of each
method's runs comes from the other methods or a dedicated reference run,
:mod:`workbench.report.reference`) or |objective| with the reference dashed ("absolute" mode, as the
Mazhar et al. 2014 plot it); below, one row per error measure the histories log (one definition per panel: the
schema's ``error_name``). Each method is its median curve over repetitions with a band from the
minimum to the maximum (per iteration, over the repetitions that reached it; against time, at the
median time of that iteration, as benchopt plots it, and shaded from the fastest to the slowest
repetition's time); a cross marks the point it returned (median
over repetitions of the workbench's measure, at the curve's last iteration or time), on the
objective row and on the row of the measure the run is judged by. A panel with nothing to draw says
why.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from workbench.report.stats import loglog_slope

__all__ = ["convergence_figure", "scaling_figure", "profile_figure", "timeseries_figure", "judged_measure",
           "save", "MAX_ERROR_ROWS"]

#: error measures drawn per problem (rows below the objective), the most common first
MAX_ERROR_ROWS = 3
#: the measures a run can be judged by (workbench.solvers.finalize)
_JUDGED = ("relaxed_error", "siconos_error", "lcp_residual")


def _colors(methods: list[str]) -> dict[str, str]:
    palette = [f"C{i}" for i in range(10)]
    return {m: palette[i % 10] for i, m in enumerate(methods)}


def save(fig: Figure, path: Path) -> dict[str, str]:
    """Write ``path`` (PNG) and the same figure as SVG beside it; {"SVG": svg file name}."""
    from workbench.files import atomic_output
    path.parent.mkdir(parents=True, exist_ok=True)
    svg = path.with_suffix(".svg")
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)
    with atomic_output(svg) as tmp:
        fig.savefig(tmp)
    return {"SVG": svg.name}


def judged_measure(run) -> str | None:
    """Which workbench measure the run's judged error is (its value equals that metric's)."""
    judged = getattr(run, "judged_error", np.nan)
    for name in _JUDGED:
        v = getattr(run, name, np.nan)
        if v is not None and np.isfinite(judged) and np.isfinite(v) and np.isclose(v, judged, rtol=1e-12, atol=0):
            return name
    return None


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


def _draw(ax, curves: list[pd.DataFrame], xname: str, color: str) -> bool:
    band = _band([c[np.isfinite(c["y"]) & (c["y"] > 0)] for c in curves])
    if band is None:
        return False
    band = band[band[xname] > 0]
    if band.empty:
        return False
    ax.plot(band[xname], band["median"], "-", color=color, lw=1.4)
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


def convergence_figure(problem: str, runs: pd.DataFrame, histories: pd.DataFrame, references: dict,
                       mode: str, labels: dict[str, str], methods: list[str], path: Path) -> dict:
    """One figure for ``problem``: ``runs`` (every repetition), ``histories`` in the schema of
    :mod:`workbench.study.results`, ``references`` method -> Reference or None. Returns the files
    written and, per method, what was drawn: {"files": ..., "drawn": {method: {"objective": bool,
    "errors": [names]}}, "rows": [error names]}."""
    colors = _colors(methods)
    hist = histories[histories["key"].isin(runs["key"])] if len(histories) else histories
    names = list(hist["error_name"].dropna().value_counts(sort=True).index[:MAX_ERROR_ROWS]) if len(hist) else []
    rows = ["objective"] + names
    fig = Figure(figsize=(11, 2.9 * len(rows) + 1.3), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(rows), 2, squeeze=False))
    drawn: dict[str, dict] = {}
    present = []
    for method in [m for m in methods if m in set(runs["method"])]:
        mine, color = runs[runs["method"] == method], colors[method]
        ref = references.get(method)
        offset = ref.objective if (mode == "error" and ref is not None) else 0.0
        have_ref = mode == "absolute" or ref is not None
        info = drawn.setdefault(method, {"objective": False, "errors": []})
        present.append(method)
        obj_curves, ends = [], []
        by_error: dict[str, list[pd.DataFrame]] = {}
        for run in mine.itertuples():
            h = hist[hist["key"] == run.key]
            if h.empty:
                continue
            ends.append(h[["iteration", "seconds"]].max())
            one = h.drop_duplicates(subset=["iteration"], keep="last")
            if have_ref and one["objective"].notna().any():
                obj_curves.append(one[["iteration", "seconds"]].assign(y=(one["objective"] - offset).abs()))
            for name, g in h.groupby("error_name"):
                g = g.drop_duplicates(subset=["iteration"], keep="last")
                by_error.setdefault(name, []).append(g[["iteration", "seconds"]].assign(y=g["error"]))
        for col, xname in enumerate(("iteration", "seconds")):
            if _draw(axes[0, col], obj_curves, xname, color):
                info["objective"] = True
            for r, name in enumerate(names, start=1):
                if _draw(axes[r, col], by_error.get(name, []), xname, color) and name not in info["errors"]:
                    info["errors"].append(name)
            if not ends:
                continue
            x_end = float(np.median([e[xname] for e in ends]))
            if have_ref:
                y = float(np.nanmedian((mine["objective"] - offset).abs())) if mine["objective"].notna().any() \
                    else np.nan
                if np.isfinite(y) and y > 0 and x_end > 0:
                    axes[0, col].plot([x_end], [y], "x", color=color, ms=8, mew=2)
            judged = {judged_measure(run) for run in mine.itertuples()}
            for r, name in enumerate(names, start=1):
                y = float(np.nanmedian(mine["judged_error"])) if name in judged else np.nan
                if np.isfinite(y) and y > 0 and x_end > 0:
                    axes[r, col].plot([x_end], [y], "x", color=color, ms=8, mew=2)
    if mode == "absolute":
        shown = {}
        for ref in references.values():
            if ref is not None:
                shown[ref.method] = ref
        for i, ref in enumerate(shown.values()):
            for ax in axes[0]:
                ax.axhline(abs(ref.objective), color="k", ls=("--", ":", "-.")[i % 3], lw=1)
    top = "|objective - reference|" if mode == "error" else "|objective|"
    for r, name in enumerate(rows):
        for col, xlabel in enumerate(("iteration", "time [s]")):
            ax = axes[r, col]
            ax.set(xlabel=xlabel, ylabel=top if r == 0 else name)
            if ax.has_data():
                ax.set(xscale="log", yscale="log")
                _short_decades(ax)
                ax.grid(True, which="both", alpha=0.3)
            else:
                no_ref = mode == "error" and all(v is None for v in references.values())
                if r:
                    why = f"no run logged\n{name}"
                elif no_ref:
                    why = "no reference: no other\nmethod solved this problem\nin this formulation"
                else:
                    why = "no run logged\nits objective"
                ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=9, transform=ax.transAxes)
                ax.set(xticks=[], yticks=[])
    handles = [Line2D([], [], color=colors[m], lw=2, label=labels[m]) for m in present
               if drawn[m]["objective"] or drawn[m]["errors"]]
    handles += [Patch(color="0.6", alpha=0.4, label="min-max over repetitions"),
                Line2D([], [], color="k", marker="x", ls="", label="returned point (workbench measure)")]
    if mode == "absolute":
        handles.append(Line2D([], [], color="k", ls="--", lw=1, label="|reference objective|"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize=8)
    fig.suptitle(f"{problem}: median over repetitions", fontsize=10)
    files = save(fig, path)
    return {"files": files, "drawn": drawn, "rows": names}


def scaling_figure(pairs: pd.DataFrame, labels: dict[str, str], methods: list[str], panels: list[tuple[str, str]],
                   path: Path, title: str = "") -> tuple[pd.DataFrame, dict[str, str]]:
    """Columns of ``pairs`` against its n_contacts, log-log, one panel per (column, axis label) of
    ``panels`` and one line per method with its fitted slope; ``pairs`` has method, n_contacts and
    the columns (one row per problem and method). Returns the slopes and the files written."""
    colors = _colors(methods)
    fig = Figure(figsize=(5.5 * len(panels), 4.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    slopes = []
    for method in methods:
        mine = pairs[pairs["method"] == method].sort_values("n_contacts")
        if mine.empty:
            continue
        row = {"method": labels[method], "points": len(mine)}
        for ax, (col, ylabel) in zip(axes, panels):
            k = loglog_slope(mine["n_contacts"], mine[col])
            row[f"{col} slope"] = k
            x, y = mine["n_contacts"].to_numpy(dtype=float), mine[col].to_numpy(dtype=float)
            keep = np.isfinite(y) & (y > 0)
            if keep.any():
                ax.plot(x[keep], y[keep], "o-", color=colors[method],
                        label=f"{labels[method]} (slope {k:.2f})" if k == k else labels[method])
        slopes.append(row)
    for ax, (col, ylabel) in zip(axes, panels):
        ax.set(xlabel="contacts", ylabel=ylabel)
        if ax.has_data():
            ax.set(xscale="log", yscale="log")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "no solved run to show", ha="center", va="center", transform=ax.transAxes)
    if title:
        fig.suptitle(title, fontsize=10)
    files = save(fig, path)
    return (pd.DataFrame(slopes).set_index("method") if slopes else pd.DataFrame()), files


def profile_figure(rho: pd.DataFrame, path: Path, xlabel: str, title: str) -> dict[str, str]:
    """Dolan-More performance profiles rho_s(tau), tau (a ratio) on a log2 axis."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    taus = rho.index.to_numpy()
    right = max(2.0, float(taus.max()) * 1.5) if len(taus) else 2.0
    for i, method in enumerate(rho.columns):
        y = rho[method].to_numpy()
        if not np.isfinite(y).any():
            continue
        ax.step(np.append(taus, right), np.append(y, y[-1]), where="post", color=f"C{i % 10}", label=method)
    ax.set(xlim=(1.0, right), ylim=(0.0, 1.02), xlabel=xlabel, ylabel="fraction of its problems (rho)")
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    if ax.has_data():
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no method solved any problem", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title, fontsize=10)
    return save(fig, path)


#: per-step columns drawn first (a simulation's tracked velocities, then its solver effort)
_SERIES_FIRST = ("v_slope", "rolling", "v_normal", "complementarity", "iterations", "contacts", "fixed_force",
                 "kinetic_energy")
#: per-step columns drawn on a log axis
_SERIES_LOG = ("complementarity",)


def timeseries_figure(table: pd.DataFrame, title: str, path: Path, max_panels: int = 6) -> dict[str, str] | None:
    """Per-step quantities against ``t`` (or ``time``, ``step``), one line per ``method`` when the
    table has that column; a column ``X_analytic`` is drawn dashed black on X's panel. The other
    files written, or None when there is nothing to plot."""
    x = next((c for c in ("t", "time", "step") if c in table.columns), None)
    numeric = [c for c in table.columns if c not in (x, "step", "repetition") and not c.endswith("_analytic")
               and pd.api.types.is_numeric_dtype(table[c]) and table[c].notna().any()]
    ys = ([c for c in _SERIES_FIRST if c in numeric] + [c for c in numeric if c not in _SERIES_FIRST])[:max_panels]
    if x is None or not ys:
        return None
    groups = list(table.groupby("method", sort=False)) if "method" in table else [("", table)]
    fig = Figure(figsize=(9, 2.2 * len(ys) + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(ys), 1, sharex=True))
    for i, (name, frame) in enumerate(groups):
        for ax, y in zip(axes, ys):
            values = frame[y].where(frame[y] > 0) if y in _SERIES_LOG else frame[y]
            ax.plot(frame[x], values, "-", color=f"C{i % 10}", lw=1.2, label=str(name) or None)
    first = groups[0][1]
    for ax, y in zip(axes, ys):
        if f"{y}_analytic" in first:
            ax.plot(first[x], first[f"{y}_analytic"], "--", color="k", lw=1, label="analytic")
        if y in _SERIES_LOG and ax.has_data():
            ax.set_yscale("log")
        ax.set_ylabel(y)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("t [s]" if x == "t" else x)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    return save(fig, path)
