"""The one accounting rule every table, summary, profile and the conclusion of a report follow.

RULE (stated at the top of every report):

- A (problem, method) pair is *not applicable* when the method cannot take the problem (its
  formulation needs M and D and the problem is local) or its solver is not available on the machine
  (status "unavailable"). It is left out of that method's denominators everywhere and counted as a
  failure nowhere. So is a run killed while its worker warmed the method up (status "warm-up":
  compiling before the clock started, not the method's time); reports list those runs apart.
- Every other run counts. A run not solved within the time limit counts as the time limit
  (qpbenchmark's rule): its accounted time is the limit; a solved run's is its time (at most the limit).
- Over repetitions, a pair is *solved* when more than half of its repetitions are; its time is then
  the median of the accounted times, else the time limit; its spread is their minimum and maximum.
- A run finished by another method (a fallback, a polish: the store's ``handover``) counts for its
  method with what that method reached alone: the status its own point earned at the hand-over, by
  the same rule (its judged error then), and its time until then. The run as returned is the
  composite's (e.g. "ncp/pqn (+pgs fallback)"), a method of its own beside it (:func:`split_handovers`).
- Methods are compared only with methods that solve the same problem (relaxed, exact Coulomb, or
  LCP) at the same acceptance threshold (the judged error at most accept, or tol), and ranked on
  the problems every one of them can take ("common problems"), so a method is never ranked ahead
  for being inapplicable to a hard problem.

Functions here are pure: tables of runs in, tables out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.analysis.stats import shifted_geometric_mean
from workbench.status import NOT_METHODS_FAULT

__all__ = ["RULE", "RESOLUTION", "NOT_COUNTED", "warm_up_runs", "split_handovers", "pair_table", "problem_class", "Group",
           "comparison_groups", "summarise"]

#: the smallest gap between two methods' time ranges that tells them apart, relative to the shifted times
#: (t + shift): 5 % of the time where times are well above the shift, 5 % of the shift where they are far
#: below it (the shift is the study's scale under which times are not told apart, qpbenchmark's meaning)
RESOLUTION = 0.05

RULE = ("Accounting rule, used by every table, summary, profile and the conclusion: a (problem, method) pair "
        "is not applicable when the method cannot take the problem (a formulation that needs M and D on a local "
        "problem) or its solver is not available here; it is left out of that method's denominators and counted "
        "as a failure nowhere, as are runs killed while warming the method up before their clock started (listed "
        "apart). Every other run counts, and a run not solved within the time limit counts as the "
        "time limit (qpbenchmark's rule). Over repetitions a pair is solved when more than half of its "
        "repetitions are; its time is then their median, else the time limit; spreads are min-max over "
        "repetitions; the spread of a mean over problems is the interquartile range of that mean taken over "
        "each repetition alone (a study runs repetition k of every pair in round k, in a shuffled order); two "
        f"methods are within noise when these ranges overlap or their gap is under {RESOLUTION:.0%} of the times "
        "plus the shift. A run "
        "finished by another method (fallback, polish) counts for its method with what that "
        "method reached alone (its status and time at the hand-over); the run as returned counts for the "
        "composite, a row of its own named after the hand-over (e.g. \"(+pgs fallback)\"). Methods are ranked "
        "only against methods solving the same problem (relaxed, exact or LCP) at the same acceptance threshold, "
        "on the problems all of them can take.")

#: statuses of runs that count nowhere (RULE): the solver is not available here, or the run was killed
#: while its worker warmed the method up, before its clock started
NOT_COUNTED = NOT_METHODS_FAULT

#: a judged error that is missing (the run returned no point) counts as this: the relative error of
#: the zero impulse is at most 1
MISSING_ERROR = 1.0


#: columns of a run that describe the point it returned (unknown for the method alone when another
#: method's point was returned), besides the metrics
_POINT_COLUMNS = ("objective", "solver_objective")
#: numeric columns of a run that are not measures of its point
_NOT_POINT = ("n_contacts", "n_dof", "d", "tol", "accept", "max_iter", "time_limit", "repetition", "iterations",
              "build_seconds", "solve_seconds", "total_seconds", "wall_seconds", "steps", "max_contacts",
              "mean_iterations", "history_until")


def split_handovers(runs: pd.DataFrame, plan: dict) -> tuple[pd.DataFrame, dict]:
    """The runs and the plan with every method that handed over (any run with a ``handover``) split
    in two: the method alone, and the composite (method + the methods it handed over to) right after
    it, with the same formulation and threshold, so every table, profile, figure and the conclusion
    show both.

    A run of the method alone that handed over gets the first hand-over's status_alone, judged
    error (error_before, also in its measure's column), solve time (at_seconds; total: build + that),
    and history up to at_iteration (column ``history_until``); where the returned point is the other
    method's, the measures of the point (objective, metrics) are unknown for it (NaN). The composite's
    runs are the runs as returned, their iterations both methods' added. Adds the column ``base_method``
    (the method a row belongs to; a composite's is its method's), used to keep a method from being
    its own reference."""
    runs = runs.assign(base_method=runs["method"], history_until=np.nan) if len(runs) else runs
    if not len(runs) or "handover_detail" not in runs:
        return runs, plan
    details = runs["handover_detail"].map(lambda d: json.loads(d) if isinstance(d, str) else [])
    handed = details.map(bool)
    if not handed.any():
        return runs, plan
    point_cols = [c for c in runs.columns if c in _POINT_COLUMNS or (
        c not in _NOT_POINT and c != "judged_error" and pd.api.types.is_float_dtype(runs[c]))]
    methods, skipped, composites = [], list(plan["skipped"]), []
    alone = runs.copy()
    for m in plan["methods"]:
        methods.append(m)
        mine = runs["method"] == m["method"]
        if not (mine & handed).any():
            continue
        suffix = ", ".join(dict.fromkeys(f"+{h['to']} {h['kind']}" for d in details[mine] for h in d))
        comp = {**m, "method": f"{m['method']} ({suffix})", "label": f"{m['label']} ({suffix})"}
        methods.append(comp)
        skipped += [{**s, "method": comp["method"]} for s in plan["skipped"] if s["method"] == m["method"]]
        extra = details[mine].map(lambda d: sum(h.get("to_iterations") or 0 for h in d if h["used"]))
        composites.append(runs[mine].assign(method=comp["method"], label=comp["label"],
                                            iterations=runs.loc[mine, "iterations"] + extra))
        for i in runs.index[mine & handed]:
            first = details[i][0]
            if first["used"]:
                alone.loc[i, point_cols] = np.nan
            alone.loc[i, ["status", "history_until"]] = [first["status_alone"], first["at_iteration"]]
            alone.loc[i, "solve_seconds"] = first["at_seconds"]
            alone.loc[i, "judged_error"] = first["error_before"]
            if first["measure"] in alone:
                alone.loc[i, first["measure"]] = first["error_before"]
    alone["total_seconds"] = alone["build_seconds"] + alone["solve_seconds"]
    return pd.concat([alone, *composites], ignore_index=True), {**plan, "methods": methods, "skipped": skipped}


def _threshold(runs: pd.DataFrame) -> pd.Series:
    accept = pd.to_numeric(runs["accept"], errors="coerce") if "accept" in runs else np.nan
    return pd.Series(np.where(pd.notna(accept), accept, runs["tol"]), index=runs.index, dtype=float)


def pair_table(runs: pd.DataFrame, problems: list[dict], methods: list[dict], skipped: set[tuple[str, str]],
               time_column: str, time_limit: float) -> pd.DataFrame:
    """One row per (problem, method) of the plan: applicable, repetitions, solved ones, solved (the
    majority rule), time / iterations / judged error (median with min and max over repetitions, as
    the rule accounts them; the accounted time of each repetition too, by its index), the acceptance
    threshold, tags, series and contacts."""
    runs = runs.assign(threshold=_threshold(runs)) if len(runs) else runs
    by_pair = {k: g for k, g in runs.groupby(["problem", "method"], sort=False)} if len(runs) else {}
    rows = []
    for p in problems:
        for m in methods:
            mine = by_pair.get((p["problem"], m["method"]))
            threshold = m["accept"] if m.get("accept") is not None else m["tol"]
            row = {"problem": p["problem"], "method": m["method"], "label": m["label"], "threshold": threshold,
                   "tags": tuple(p.get("tags") or ()), "series": p.get("series"), "kind": p["kind"],
                   "n_contacts": p["n_contacts"]}
            if (p["problem"], m["method"]) in skipped:
                rows.append({**row, "applicable": False, "why": "not applicable", "reps": 0})
                continue
            counted = None if mine is None else ~mine["status"].isin(NOT_COUNTED)
            if mine is None or not counted.any():
                why = "not run" if mine is None else \
                    "unavailable" if (mine["status"] == "unavailable").any() else "killed while warming up"
                rows.append({**row, "applicable": False, "why": why, "reps": 0 if mine is None else len(mine)})
                continue
            mine = mine[counted]
            solved = (mine["status"] == "solved").to_numpy()
            t = pd.to_numeric(mine[time_column], errors="coerce").to_numpy(dtype=float)
            accounted = np.where(solved & np.isfinite(t), np.minimum(t, time_limit), time_limit)
            it = pd.to_numeric(mine["iterations"], errors="coerce").to_numpy(dtype=float)
            err = pd.to_numeric(mine["judged_error"], errors="coerce").to_numpy(dtype=float) \
                if "judged_error" in mine else np.full(len(mine), np.nan)
            err = np.where(np.isfinite(err), err, MISSING_ERROR)
            ok = 2 * solved.sum() > len(solved)
            rows.append({**row, "applicable": True, "why": "", "reps": len(mine), "solved_reps": int(solved.sum()),
                         "solved": bool(ok),
                         "time": float(np.median(accounted)) if ok else float(time_limit),
                         "time_min": float(accounted.min()), "time_max": float(accounted.max()),
                         "time_by_repetition": dict(zip(mine["repetition"].astype(int), accounted.tolist())),
                         "iterations": float(np.nanmedian(it[solved])) if ok and np.isfinite(it[solved]).any()
                         else np.inf,
                         "iterations_min": float(np.nanmin(it)) if np.isfinite(it).any() else np.nan,
                         "iterations_max": float(np.nanmax(it)) if np.isfinite(it).any() else np.nan,
                         "error": float(np.median(err)), "error_min": float(err.min()), "error_max": float(err.max())})
    out = pd.DataFrame(rows)
    out["solved"] = out.get("solved", pd.Series(False, index=out.index)).fillna(False).astype(bool)
    return out


def problem_class(formulation: str) -> str:
    """The problem a formulation solves: "relaxed" (the convex relaxation of Coulomb friction),
    "exact" (exact Coulomb friction) or "LCP" (friction cones replaced by pyramids)."""
    from formulations import get_formulation

    cls = get_formulation(formulation)
    return "LCP" if "lcp" in cls.builds else "exact" if cls.exact else "relaxed"


@dataclass(frozen=True)
class Group:
    """Methods compared with each other: the same problem class and acceptance threshold."""
    problem: str
    threshold: float
    methods: tuple

    @property
    def label(self) -> str:
        return f"{self.problem} problem, judged error <= {self.threshold:g}"

    @property
    def slug(self) -> str:
        return f"{self.problem.lower()}_{self.threshold:g}"


def comparison_groups(methods: list[dict]) -> list[Group]:
    """The methods grouped by problem class and acceptance threshold (methods that solve different
    problems, or are judged at different thresholds, are never ranked against each other);
    relaxed, exact, LCP, and loosest threshold first."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for m in methods:
        key = (problem_class(m["formulation"]), float(m["accept"] if m.get("accept") is not None else m["tol"]))
        groups.setdefault(key, []).append(m)
    order = {"relaxed": 0, "exact": 1, "LCP": 2}
    ranked = sorted(groups.items(), key=lambda kv: (order[kv[0][0]], -kv[0][1]))
    return [Group(p, t, tuple(ms)) for (p, t), ms in ranked]


def repetition_means(pairs: pd.DataFrame, shift: float) -> list[float]:
    """The shifted geometric mean of time over ``pairs`` (one method's rows) that each repetition
    alone gives: for repetition k, the mean of every pair's k-th accounted time (its median where
    the pair has no k-th counted repetition): what one run of the study could have reported. One slow
    repetition of one problem moves one of these means by its share only."""
    reps = sorted({k for by_rep in pairs["time_by_repetition"] for k in by_rep})
    return [shifted_geometric_mean([by_rep.get(k, t) for by_rep, t in zip(pairs["time_by_repetition"], pairs["time"])],
                                   shift) for k in reps]


def spread_of_mean(pairs: pd.DataFrame, shift: float, central: float) -> tuple[float, float]:
    """The spread of a method's mean time over repetitions: the interquartile range of
    :func:`repetition_means` (numpy's linear quantiles: with 5 repetitions the second fastest to the
    second slowest, so that one outlying repetition, a stall of the machine, decides nothing; with 3,
    halfway from the median to the extremes), widened to hold ``central``."""
    low, high = np.percentile(repetition_means(pairs, shift), [25, 75])
    return min(central, float(low)), max(central, float(high))


def summarise(pairs: pd.DataFrame, methods: list[dict], shift: float,
              error_shift: float) -> tuple[pd.DataFrame, list[str]]:
    """Per method of one threshold group: applicable problems, success rate over them, runs solved,
    and on the common problems the shifted geometric mean of time (spread: the interquartile range
    of the same mean taken over each repetition alone, :func:`spread_of_mean`) and of the judged error, each
    also relative to the best, and the rank. Returns the table (index: method name) and the common
    problems."""
    names = [m["method"] for m in methods]
    mine = pairs[pairs["method"].isin(names)]
    ranked = [n for n in names if mine.loc[mine["method"] == n, "applicable"].any()]
    app = mine[mine["applicable"]]
    common = [p for p, g in app.groupby("problem", sort=False) if set(ranked) <= set(g["method"])]
    rows = []
    for m in methods:
        own = app[app["method"] == m["method"]]
        row = {"method": m["method"], "label": m["label"], "problems": len(own),
               "not applicable": int((~mine.loc[mine["method"] == m["method"], "applicable"]).sum()),
               "solved %": 100.0 * own["solved"].mean() if len(own) else np.nan,
               "runs solved": f"{int(own['solved_reps'].sum())}/{int(own['reps'].sum())}" if len(own) else "0/0"}
        on_common = own[own["problem"].isin(common)]
        if m["method"] in ranked and common:
            central = shifted_geometric_mean(on_common["time"], shift)
            low, high = spread_of_mean(on_common, shift, central)
            row.update({"sgm time [s]": central, "sgm time low": low, "sgm time high": high,
                        "sgm error": shifted_geometric_mean(on_common["error"], error_shift)})
        rows.append(row)
    table = pd.DataFrame(rows).set_index("method")
    for col in ("sgm time [s]", "sgm time low", "sgm time high", "sgm error"):
        if col not in table:
            table[col] = np.nan
    best_t, best_e = table["sgm time [s]"].min(), table["sgm error"].min()
    table["time / best"] = table["sgm time [s]"] / best_t if best_t > 0 else np.nan
    table["error / best"] = table["sgm error"] / best_e if best_e > 0 else np.nan
    table["rank"] = table["sgm time [s]"].rank(method="min")
    return table, common


def warm_up_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs killed while warming their method up (status "warm-up"), for the report's own list:
    problem, method, message."""
    if not len(runs) or "status" not in runs:
        return pd.DataFrame(columns=["problem", "method", "message"])
    return runs.loc[runs["status"] == "warm-up", ["problem", "method", "message"]].reset_index(drop=True)
