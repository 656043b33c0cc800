"""The report of a study's results: ``index.md`` and ``index.html`` with PNG figures and CSV + LaTeX
tables, written from a results directory alone (``workbench report RESULTS_DIR``).

Sections, chosen and ordered by the study's ``[report] sections``:

- ``summary``: per method, runs, success rate, methods' non-applicable problems, and the shifted
  geometric mean of time (qpbenchmark's convention, :mod:`workbench.report.stats`); success per tag.
- ``seed``: the numbers the seeds report (the study's ``[[report.seed]]``) beside the measured ones.
- ``tables``: problem x method tables of status, objective, iterations, build and solve time and
  the final residuals (the workbench's metrics), medians over repetitions.
- ``convergence``: per problem, objective and residual against iteration and time (seed 001 Figs. 1-4).
- ``scaling``: time and iterations against contacts, log-log, fitted slope per method (seed 001 Fig. 5);
  for simulations, the largest complementarity error and the mean iterations per step against the
  largest number of contacts (seed 000 Fig. 11).
- ``profiles``: Dolan-More performance profiles of the time to the study's tolerance.
- ``timeseries``: for simulation runs (dynamic scenes), the per-step quantities against time, one
  figure per scene with every method, analytic curves dashed.

The header (what was run, statuses), the methods and the provenance are always there. Only rows of
the current plan are reported: rows left by an earlier version of the study stay on disk but are
counted as stale, never mixed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.report import figures, tables
from workbench.report.document import Code, Figure, Heading, Table, Text, render_html, render_markdown
from workbench.report.stats import iterations_to_reference, pair_times, performance_profile
from workbench.study.store import ResultStore

__all__ = ["write_report", "load_results", "Results"]

_NUMERIC = ("objective", "solver_objective", "iterations", "build_seconds", "solve_seconds", "wall_seconds",
            "judged_error", "siconos_error", "relaxed_error", "ccp_residual", "complementarity", "analytic_error",
            "max_contacts", "mean_iterations", "n_contacts", "steps")
#: problem x method tables: (row column, file name, caption)
_TABLES = (("objective", "objective", "Objective of the formulation at the returned point"),
           ("iterations", "iterations", "Iterations"),
           ("build_seconds", "build_seconds", "Build time [s] (model and compilation)"),
           ("solve_seconds", "solve_seconds", "Solve time [s]"),
           ("judged_error", "judged_error", "Judged error (relaxed error, or Siconos error for exact formulations)"),
           ("siconos_error", "siconos_error", "Siconos error (exact Coulomb natural map)"),
           ("ccp_residual", "ccp_residual", "CCP residual (seed 000 eq. 39)"),
           ("complementarity", "complementarity", "Complementarity max |gamma_n u_n| (seed 000 eq. 8; simulations: "
                                                  "the largest over steps)"),
           ("analytic_error", "analytic_error", "Simulations: largest deviation of a tracked velocity from the "
                                                "analytic solution [m/s]"))


@dataclass
class Results:
    """A results directory, restricted to the rows of its current plan."""
    root: Path
    plan: dict
    runs: pd.DataFrame
    stale: int
    store: ResultStore

    @property
    def methods(self) -> list[str]:
        return [m["method"] for m in self.plan["methods"]]

    @property
    def labels(self) -> dict[str, str]:
        return {m["method"]: m["label"] for m in self.plan["methods"]}

    @property
    def problems(self) -> list[str]:
        return [p["problem"] for p in self.plan["problems"]]

    @property
    def options(self) -> dict:
        return self.plan["report"]

    @property
    def time_column(self) -> str:
        return "total_seconds" if self.options["time"] == "total" else "solve_seconds"

    @property
    def time_label(self) -> str:
        return "build + solve time [s]" if self.options["time"] == "total" else "solve time [s]"

    @property
    def static(self) -> pd.DataFrame:
        """The runs of single time-step problems (not simulations)."""
        return self.runs[self.runs["kind"] != "simulation"]

    @property
    def skipped(self) -> set[tuple[str, str]]:
        return {(s["problem"], s["method"]) for s in self.plan["skipped"]}

    def references(self) -> dict[str, dict[str, float]]:
        """problem -> formulation -> reference objective: the reference method's (median over its
        solved repetitions) when the study names one of that formulation and it solved the problem,
        else the lowest median objective among solved methods of that formulation."""
        solved = self.static[self.static["status"] == "solved"]
        med = solved.groupby(["problem", "formulation", "method"])["objective"].median()
        ref_method = self.options.get("reference_method")
        out: dict[str, dict[str, float]] = {}
        for (problem, formulation), values in med.groupby(level=["problem", "formulation"]):
            by_method = values.droplevel(["problem", "formulation"])
            value = by_method[ref_method] if ref_method in by_method.index else by_method.min()
            out.setdefault(problem, {})[formulation] = float(value)
        return out


def load_results(results_dir) -> Results:
    """Read a results directory (InputError when it is not one)."""
    store = ResultStore(results_dir)
    plan = store.read_json("plan.json")
    runs = store.read_runs()
    keys = [r["key"] for r in plan["runs"]]
    n_all = len(runs)
    if n_all:
        order = {k: i for i, k in enumerate(keys)}
        runs = runs[runs["key"].isin(order)].copy()
        runs = runs.iloc[np.argsort(runs["key"].map(order).to_numpy())].reset_index(drop=True)
        for col in _NUMERIC:
            if col in runs:
                runs[col] = pd.to_numeric(runs[col], errors="coerce")
        # a solver that could not run did no iterations in no time: show '-', not 0
        runs.loc[runs["status"] == "unavailable", ["iterations", "build_seconds", "solve_seconds"]] = np.nan
        runs["total_seconds"] = runs["build_seconds"] + runs["solve_seconds"]
    return Results(root=store.root, plan=plan, runs=runs, stale=n_all - len(runs), store=store)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


# --------------------------------------------------------------------------- sections

def _header(res: Results) -> list:
    plan, runs = res.plan, res.runs
    blocks = [Text(plan["description"])] if plan.get("description") else []
    planned = len(plan["runs"])
    text = (f"{len(runs)} of {planned} planned runs recorded ({len(plan['problems'])} problems x "
            f"{len(plan['methods'])} methods x {plan['repetitions']} repetition(s); time limit "
            f"{plan['time_limit']:g} s per run).")
    if len(runs) < planned:
        text += " The study is incomplete: run it again to finish (recorded runs are kept)."
    if res.stale:
        text += f" {res.stale} rows from earlier versions of the study are not reported."
    for missing in plan.get("missing", []):
        text += f" A problem group was skipped: {missing}."
    if plan["skipped"]:
        text += (f" {len(plan['skipped'])} (problem, method) pairs were not planned because the "
                 "formulation cannot take the problem (e.g. primal on a local problem).")
    blocks.append(Text(text))
    if len(runs):
        counts = runs["status"].value_counts()
        blocks.append(Text("Statuses: " + ", ".join(f"{s} {n}" for s, n in counts.items()) + ". A run is "
                           "solved when the workbench's own error measure of the impulses it returned is "
                           "within the method's acceptance threshold; solver claims are recorded only."))
    return blocks


def _summary(res: Results, out: Path) -> list:
    o = res.options
    table = tables.summary(res.runs, res.problems, res.plan["methods"], res.skipped, res.time_column,
                           res.plan["time_limit"], o["shift"])
    blocks = [Heading(1, "Summary"),
              Text(f"Shifted geometric mean of the {res.time_label} over all {len(res.problems)} problems, "
                   f"shift {o['shift']:g} s, a problem not solved counting as the time limit "
                   f"({res.plan['time_limit']:g} s) (qpbenchmark's definition; 'sgm / best' = 1 for the "
                   "best method). Success rate: % of the method's runs solved."),
              Table(table, "Per method.", tables.write_table(table, out, "summary", "Summary per method"))]
    by_tag = tables.tag_success(res.runs, res.methods, res.labels) if len(res.runs) else None
    if by_tag is not None:
        blocks.append(Table(by_tag, "Success rate (% of runs solved) per tag.",
                            tables.write_table(by_tag, out, "success_by_tag", "Success rate per tag")))
    return blocks


def _tables(res: Results, out: Path) -> list:
    blocks = [Heading(1, "Results per problem"),
              Text("Medians over repetitions; '-' where a method has no such value (not applicable, "
                   "failed, or not yet run).")]
    status = tables.status_pivot(res.runs, res.methods, res.labels)
    blocks.append(Table(status, "Status.", tables.write_table(status, out, "status", "Status")))
    for column, name, caption in _TABLES:
        if column not in res.runs or res.runs[column].isna().all():
            continue
        t = tables.pivot(res.runs, column, res.methods, res.labels)
        blocks.append(Table(t, caption + ".", tables.write_table(t, out, name, caption)))
    return blocks


def _convergence(res: Results, out: Path) -> list:
    o = res.options
    refs = res.references()
    first = res.static[res.static["repetition"] == 0]
    histories = res.store.read_histories(first["key"])
    blocks = [Heading(1, "Convergence"),
              Text(f"Per problem, first repetition. Top: {'|objective - reference|' if o['convergence'] == 'error' else '|objective|'} "
                   "against iteration and time; bottom: the residual each solver logs. Reference: "
                   + (f"method {o['reference_method']} where it solved the problem, else " if o.get("reference_method") else "")
                   + "the best (lowest) objective among solved runs of the same formulation. "
                   "Crosses: the returned point, as the workbench measures it.")]
    ref_table = pd.DataFrame(refs).T.reindex(res.problems)
    ref_table.index.name = "problem"
    blocks.append(Table(ref_table, "Reference objectives per formulation.",
                        tables.write_table(ref_table, out, "reference_objectives", "Reference objectives")))
    for problem in dict.fromkeys(first["problem"]):
        mine = first[first["problem"] == problem]
        path = f"figures/convergence-{_slug(problem)}.png"
        figures.convergence_figure(problem, mine, histories, refs.get(problem, {}), o["convergence"], res.labels,
                                   res.methods, out / path)
        blocks.append(Figure(path, f"Convergence on {problem}"))
    return blocks


def _scaling(res: Results, out: Path) -> list:
    blocks = [Heading(1, "Scaling")]
    solved = res.static[res.static["status"] == "solved"]
    if solved["n_contacts"].nunique() >= 2:
        pairs = (solved.groupby(["problem", "method"])
                 .agg(n_contacts=("n_contacts", "first"), time=(res.time_column, "median"),
                      iterations=("iterations", "median")).reset_index())
        path = "figures/scaling.png"
        slopes = figures.scaling_figure(pairs, res.labels, res.methods,
                                        [("time", res.time_label), ("iterations", "iterations")], out / path)
        blocks += [Text(f"{res.time_label.capitalize()} and iterations of solved runs (medians over "
                        "repetitions) against the number of contacts; slope of the least-squares line "
                        "in log-log, i.e. the exponent k of time ~ contacts^k."),
                   Figure(path, "Scaling with the number of contacts"),
                   Table(slopes, "Fitted log-log slopes.",
                         tables.write_table(slopes, out, "scaling_slopes", "Fitted log-log slopes"))]
    sims = res.runs[(res.runs["kind"] == "simulation") & (res.runs["status"] == "solved")]
    for source, mine in sims.groupby("source", sort=False):  # one figure per scene swept over sizes
        if mine["max_contacts"].nunique() < 2:
            continue
        scene = source.partition(":")[2]
        pairs = (mine.groupby(["problem", "method"])
                 .agg(n_contacts=("max_contacts", "first"), complementarity=("complementarity", "median"),
                      mean_iterations=("mean_iterations", "median")).reset_index())
        path = f"figures/scaling-{_slug(scene)}.png"
        slopes = figures.scaling_figure(pairs, res.labels, res.methods,
                                        [("complementarity", "largest complementarity max |g_n u_n|"),
                                         ("mean_iterations", "mean iterations per step")], out / path)
        blocks += [Text(f"Simulations of {scene} (the form of seed 000 Fig. 11): the largest complementarity "
                        "error over all steps and the mean iterations per step against the largest number of "
                        "contacts, for simulations whose every step was solved."),
                   Figure(path, f"{scene}: complementarity and iterations against contacts"),
                   Table(slopes, f"Fitted log-log slopes ({scene}).",
                         tables.write_table(slopes, out, f"scaling_slopes_{_slug(scene)}", "Fitted log-log slopes"))]
    if len(blocks) == 1:
        blocks.append(Text("Needs solved runs on problems of at least two sizes."))
    return blocks


def _profiles(res: Results, out: Path) -> list:
    times = pair_times(res.runs, res.time_column).unstack("method") if len(res.runs) else pd.DataFrame()
    times = times.reindex(index=res.problems, columns=res.methods).fillna(np.inf)
    times.columns = [res.labels[m] for m in times.columns]
    rho = performance_profile(times)
    path = "figures/performance_profile.png"
    figures.profile_figure(rho, out / path, res.time_label)
    marks = performance_profile(times, taus=[1.0, 2.0, 10.0, np.inf]).T
    marks.columns = ["rho(1)", "rho(2)", "rho(10)", "rho(inf)"]
    marks.index.name = "method"
    rho_file = tables.write_table(rho, out, "performance_profile", "Performance profile")
    return [Heading(1, "Performance profiles"),
            Text(f"Dolan-More profiles of the {res.time_label} to the study's tolerance over "
                 f"{len(res.problems)} problems: rho(tau) is the fraction of problems a method solves within "
                 "tau times the best method's time; a run not solved (or not applicable) never counts. "
                 "rho(1): fastest; rho(inf): success rate over problems."),
            Figure(path, "Performance profiles"),
            Table(marks, "Profile values.", {"CSV (whole profile)": rho_file["CSV"]})]


def _timeseries(res: Results, out: Path) -> list:
    blocks = [Heading(1, "Time series")]
    runs = res.runs[(res.runs["kind"] == "simulation") & (res.runs["repetition"] == 0)]
    if runs.empty:
        return blocks + [Text("No simulation in this study (a [[problems]] group with scenario = ...).")]
    histories = res.store.read_histories(runs["key"])
    blocks.append(Text("Per scene, the per-step quantities of every method's simulation (first repetition) "
                       "against time; dashed black: the analytic solution where the scene has one."))
    for problem in dict.fromkeys(runs["problem"]):
        keys = runs.loc[runs["problem"] == problem, "key"]
        table = histories[histories["key"].isin(keys)] if len(histories) else histories
        if table.empty:
            continue
        table = table.assign(method=table["method"].map(res.labels))
        path = f"figures/timeseries-{_slug(problem)}.png"
        if figures.timeseries_figure(table, problem, out / path):
            blocks.append(Figure(path, f"{problem} per step"))
    return blocks


def _seed(res: Results, out: Path) -> list:
    entries = res.options.get("seed") or []
    if not entries:
        return []
    refs = res.references()
    rows = []
    for e in entries:
        runs = res.runs[res.runs["method"] == e["method"]]
        if e.get("problem"):
            runs = runs[runs["problem"] == e["problem"]]
        elif e.get("tag"):
            runs = runs[runs["tags"].fillna("").str.split(",").apply(lambda tags: e["tag"] in tags)]
        if e["quantity"] == "iterations_to_reference":
            values = [_iterations_to_reference(res, run, refs, e["rel_tol"]) for run in runs.itertuples()]
        else:
            values = pd.to_numeric(runs[e["quantity"]], errors="coerce") if e["quantity"] in runs else []
        values = pd.Series(values, dtype=float).dropna()
        where = e.get("problem") or (f"tag {e['tag']}" if e.get("tag") else "all problems")
        rows.append({"what": e["what"], "source": e["source"], "method": res.labels[e["method"]],
                     "problems": where, "seed": e["value"],
                     "measured": float(values.median()) if len(values) else np.nan, "runs": len(values)})
    table = pd.DataFrame(rows).set_index("what")
    return [Heading(1, "Seed results beside this study's"),
            Text("Each number the seeds report, beside the median of what this study measured for it (runs: how "
                 "many runs gave a value; '-' where none did, e.g. data not generated or the method unavailable). "
                 "Iterations to reference: the first iteration whose objective is within rel_tol of the reference "
                 "objective (section Convergence)."),
            Table(table, "Seed and measured values.", tables.write_table(table, out, "seed", "Seed and measured values"))]


def _iterations_to_reference(res: Results, run, refs: dict, rel_tol: float) -> float:
    ref = refs.get(run.problem, {}).get(run.formulation)
    history = res.store.read_histories([run.key])
    if ref is None or "objective" not in history:
        return float("nan")
    return iterations_to_reference(history["iteration"], history["objective"], ref, rel_tol)


def _methods_and_provenance(res: Results, out: Path) -> list:
    methods = pd.DataFrame(res.plan["methods"]).set_index("method")
    blocks = [Heading(1, "Methods"), Table(methods, "", tables.write_table(methods, out, "methods", "Methods"))]
    sessions = res.store.sessions()
    if sessions:
        rows = [{"session": s["session"], "date": s["date"], "host": s["host"], "cpu": s["cpu"],
                 "cores": s["cores"], "executor": f"{s['executor']} x{s['jobs']}", "workbench": s["workbench"],
                 "python": s["python"], **s["packages"]} for s in sessions]
        table = pd.DataFrame(rows).set_index("session")
        solvers = pd.DataFrame({"version": sessions[-1]["solvers"]})
        solvers.index.name = "solver"
        blocks += [Heading(1, "Provenance"),
                   Table(table, "Sessions that produced these results.",
                         tables.write_table(table, out, "sessions", "Sessions")),
                   Table(solvers, "Solver packages (latest session).")]
    blocks += [Heading(2, "Study file"), Code(_study_text(res))]
    return blocks


def _study_text(res: Results) -> str:
    path = res.root / "study.toml"
    return path.read_text(encoding="utf-8") if path.is_file() else "(not saved)"


SECTIONS = {"summary": _summary, "seed": _seed, "tables": _tables, "convergence": _convergence, "scaling": _scaling,
            "profiles": _profiles, "timeseries": _timeseries}


def write_report(results_dir, out_dir=None) -> Path:
    """Write the report of ``results_dir`` to ``out_dir`` (default reports/<study name>/); the path of
    index.html."""
    res = load_results(results_dir)
    out = Path(out_dir) if out_dir else Path("reports") / res.plan["study"]
    out.mkdir(parents=True, exist_ok=True)
    blocks = _header(res)
    if len(res.runs):
        for name in res.options["sections"]:
            blocks += SECTIONS[name](res, out)
    blocks += _methods_and_provenance(res, out)
    title = f"Study {res.plan['study']}"
    from workbench.files import atomic_output
    with atomic_output(out / "index.md") as tmp:
        tmp.write_text(render_markdown(title, blocks), encoding="utf-8")
    index = out / "index.html"
    with atomic_output(index) as tmp:
        tmp.write_text(render_html(title, blocks), encoding="utf-8")
    return index
