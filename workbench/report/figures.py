"""Figures of a report (PNG, matplotlib's Agg canvas through the object API: no pyplot, no display).

Convergence (the form of seed 001 Figs. 1-4): per problem, every method's per-iteration history,
objective and residual against iteration and against time, log-log. The objective panel shows
|objective - reference| ("error" mode; the reference is per formulation, since the primal and dual
objectives are different numbers) or |objective| with the reference drawn as a dashed line
("absolute" mode, as the seed plots it). Every solver's history has one schema
(workbench.solvers.recorder.HISTORY_COLUMNS): iteration, seconds, objective, error_name, error; the
objective panel draws ``objective`` and the residual panel ``error``, named in the legend by the run's
``error_name``. Crosses mark the workbench's judged error and objective of the point each run returned.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from workbench.report.stats import loglog_slope

__all__ = ["convergence_figure", "scaling_figure", "profile_figure", "timeseries_figure", "first_column"]


def _colors(methods: list[str]) -> dict[str, str]:
    palette = [f"C{i}" for i in range(10)]
    return {m: palette[i % 10] for i, m in enumerate(methods)}


def first_column(columns, options) -> str | None:
    return next((c for c in options if c in columns), None)


def _positive_plot(ax, x, y, fmt: str, **kwargs) -> None:
    """Plot the points where both x and y are positive and finite (log-log axes show nothing else:
    e.g. |objective - reference| is 0 for the reference run itself)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if keep.any():
        ax.plot(x[keep], y[keep], fmt, **kwargs)


def _save(fig: Figure, path: Path) -> None:
    from workbench.files import atomic_output
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)


def convergence_figure(problem: str, runs: pd.DataFrame, histories: pd.DataFrame, references: dict[str, float],
                       mode: str, labels: dict[str, str], methods: list[str], path: Path) -> dict[str, tuple]:
    """One figure for ``problem`` (runs and histories of its first repetition); per method, the
    history columns drawn as (objective, residual) (None where the history has none)."""
    colors = _colors(methods)
    drawn = {}
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    axes = fig.subplots(2, 2)
    for run in runs.itertuples():
        method, color = run.method, colors[run.method]
        ref = references.get(run.formulation)
        # the long table has every solver's columns: keep the ones this run logged
        hist = histories[histories["key"] == run.key].dropna(axis=1, how="all") if len(histories) else histories
        has = len(hist) > 0
        obj_col = "objective" if has and "objective" in hist else None
        xs = {"iteration": hist["iteration"] if has else None, "time": hist["seconds"] if has else None}
        finals = {"iteration": run.iterations, "time": run.solve_seconds}
        have_ref = mode == "absolute" or ref is not None
        offset = ref if mode == "error" and ref is not None else 0.0
        y = (hist[obj_col] - offset).abs() if obj_col is not None and have_ref else None
        res = hist["error"] if has and "error" in hist else None
        res_name = str(hist["error_name"].iloc[0]) if res is not None else ""
        drawn[method] = (obj_col if y is not None else None, res_name or None)
        final_obj = abs(run.objective - offset) if have_ref and np.isfinite(run.objective) else np.nan
        for col, xname in enumerate(("iteration", "time")):
            x, fx = xs[xname], finals[xname]
            if x is not None and y is not None:
                _positive_plot(axes[0, col], x, y, "-", color=color, label=f"{labels[method]} [{obj_col}]")
            if x is not None and res is not None:
                _positive_plot(axes[1, col], x, res, "-", color=color, label=f"{labels[method]} [{res_name}]")
            if fx is not None:
                _positive_plot(axes[0, col], [fx], [final_obj], "x", color=color, ms=8)
                _positive_plot(axes[1, col], [fx], [run.judged_error], "x", color=color, ms=8)
    if mode == "absolute":
        for i, (formulation, ref) in enumerate(references.items()):
            for ax in axes[0]:
                ax.axhline(abs(ref), color="k", ls=("--", ":", "-.")[i % 3], lw=1,
                           label=f"reference |objective| ({formulation}) = {abs(ref):.4g}")
    ylabel = "|objective - reference|" if mode == "error" else "|objective|"
    for col, xlabel in enumerate(("iteration", "time [s]")):
        axes[0, col].set(xlabel=xlabel, ylabel=ylabel)
        axes[1, col].set(xlabel=xlabel, ylabel="residual (legend: column)")
    for ax in axes.flat:
        if ax.has_data():
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
        else:
            ax.text(0.5, 0.5, "nothing positive to show on log axes", ha="center", va="center",
                    transform=ax.transAxes)
    handles, names = axes[0, 0].get_legend_handles_labels()
    h2, n2 = axes[1, 0].get_legend_handles_labels()
    if handles or h2:
        fig.legend(handles + h2, names + n2, loc="outside lower center", ncols=2, fontsize=8)
    refs = ", ".join(f"{f}: {v:.6g}" for f, v in references.items()) or "none (no solved run)"
    fig.suptitle(f"{problem} — reference objective {refs}; x: the returned point (workbench measures)",
                 fontsize=10)
    _save(fig, path)
    return drawn


def scaling_figure(pairs: pd.DataFrame, labels: dict[str, str], methods: list[str], panels: list[tuple[str, str]],
                   path: Path) -> pd.DataFrame:
    """Columns of ``pairs`` against its n_contacts, log-log, one panel per (column, axis label) of
    ``panels`` and one line per method with its fitted slope; ``pairs`` has method, n_contacts and
    the columns (one row per problem and method). Returns the slopes."""
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
            _positive_plot(ax, mine["n_contacts"], mine[col], "o-", color=colors[method],
                           label=f"{labels[method]} (slope {k:.2f})" if k == k else labels[method])
        slopes.append(row)
    for ax, (col, ylabel) in zip(axes, panels):
        ax.set(xscale="log", yscale="log", xlabel="contacts", ylabel=ylabel)
        ax.grid(True, which="both", alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    _save(fig, path)
    return pd.DataFrame(slopes).set_index("method") if slopes else pd.DataFrame()


def profile_figure(rho: pd.DataFrame, path: Path, time_label: str) -> None:
    """Dolan-More performance profiles rho_s(tau), tau on a log2 axis."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    taus = rho.index.to_numpy()
    right = max(2.0, float(taus.max()) * 1.5) if len(taus) else 2.0
    for i, method in enumerate(rho.columns):
        x = np.append(taus, right)
        y = np.append(rho[method].to_numpy(), rho[method].to_numpy()[-1] if len(rho) else 0.0)
        ax.step(x, y, where="post", color=f"C{i % 10}", label=method)
    ax.set(xscale="log", xlim=(1.0, right), ylim=(0.0, 1.02), xlabel=f"tau (ratio to the best {time_label})",
           ylabel="rho(tau): fraction of problems")
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)


#: per-step columns drawn first (a simulation's tracked velocities, then its solver effort)
_SERIES_FIRST = ("v_slope", "rolling", "v_normal", "complementarity", "iterations", "contacts", "fixed_force",
                 "kinetic_energy")
#: per-step columns drawn on a log axis
_SERIES_LOG = ("complementarity",)


def timeseries_figure(table: pd.DataFrame, title: str, path: Path, max_panels: int = 6) -> bool:
    """Per-step quantities against ``t`` (or ``time``, ``step``), one line per ``method`` when the
    table has that column; a column ``X_analytic`` is drawn dashed black on X's panel. False when
    there is nothing to plot."""
    x = first_column(table.columns, ("t", "time", "step"))
    numeric = [c for c in table.columns if c not in (x, "step", "repetition") and not c.endswith("_analytic")
               and pd.api.types.is_numeric_dtype(table[c]) and table[c].notna().any()]
    ys = ([c for c in _SERIES_FIRST if c in numeric] + [c for c in numeric if c not in _SERIES_FIRST])[:max_panels]
    if x is None or not ys:
        return False
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
    _save(fig, path)
    return True
