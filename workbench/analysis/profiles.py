"""Performance profile (Dolan and More, Math. Program. 91, 2002): with t_{p,s} the time method s takes
to solve problem p to the study's tolerance (infinity when it does not), the ratio
r_{p,s} = t_{p,s} / min_s t_{p,s} and

    rho_s(tau) = |{p : r_{p,s} <= tau}| / n_p,

the fraction of problems that s solves within a factor tau of the best method. rho_s(1) is the
fraction on which s is fastest, rho_s(inf) its success rate. Problems no method solves stay in n_p.
A problem the method cannot take (NaN in the table: not applicable, see
:mod:`workbench.analysis.accounting`) is left out of that method's n_p and of the best time.

Pure functions of tables: the accounted (problem, method) pairs or the rows of
:func:`workbench.study.load_results` in, problems x methods tables and rho_s(tau) out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.analysis.accounting import pair_table

__all__ = ["profile_values", "results_profile_values", "performance_ratios", "performance_profile", "MIN_TIME"]

#: floor on times entering a ratio (a clock can read 0 s for a trivial solve)
MIN_TIME = 1e-9


def profile_values(pairs: pd.DataFrame, methods: list[str], value: str) -> pd.DataFrame:
    """Problems x methods of ``value`` ("time" or "iterations") for the performance profile: the
    pair's value when solved, inf when not, NaN when not applicable (left out of the denominator)."""
    mine = pairs[pairs["method"].isin(methods)]
    v = mine[value].where(mine["solved"], np.inf).where(mine["applicable"], np.nan)
    table = pd.Series(v.to_numpy(dtype=float), index=pd.MultiIndex.from_frame(mine[["problem", "method"]]))
    table = table.unstack("method").reindex(columns=methods)
    return table.reindex(list(dict.fromkeys(mine["problem"])))


def results_profile_values(results: pd.DataFrame, value: str) -> pd.DataFrame:
    """Problems x methods of ``value`` under the accounting rule, from load_results rows (solve time;
    columns: the methods' labels)."""
    first = results.drop_duplicates("problem")
    problems = [{"problem": p.problem, "tags": tuple(str(p.tags).split(",")) if p.tags else (), "series": p.series,
                 "kind": p.kind, "n_contacts": p.n_contacts} for p in first.itertuples()]
    methods = [{"method": m.method, "label": m.label, "tol": m.tol, "accept": None if pd.isna(m.accept) else m.accept}
               for m in results.drop_duplicates("method").itertuples()]
    pairs = pair_table(results, problems, methods, set(), "solve_seconds", float(results["time_limit"].max()))
    table = profile_values(pairs, [m["method"] for m in methods], value)
    table.columns = [m["label"] for m in methods]
    return table


def performance_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """r_{p,s} for a problems x methods table of times (inf = not solved, NaN = not applicable,
    which stays NaN)."""
    t = np.clip(times.to_numpy(dtype=float), MIN_TIME, None)
    with np.errstate(invalid="ignore"):
        best = np.nanmin(np.where(np.isnan(t), np.inf, t), axis=1, keepdims=True) if t.size \
            else np.ones((len(t), 1))
        r = np.where(np.isfinite(best), t / best, np.where(np.isnan(t), np.nan, np.inf))
    return pd.DataFrame(r, index=times.index, columns=times.columns)


def performance_profile(times: pd.DataFrame, taus=None) -> pd.DataFrame:
    """rho_s(tau), index tau, one column per method. ``taus`` defaults to every finite ratio (the
    steps of the profile) and 1."""
    r = performance_ratios(times)
    if taus is None:
        finite = r.to_numpy()[np.isfinite(r.to_numpy())]
        taus = np.unique(np.concatenate([[1.0], finite]))
    taus = np.asarray(taus, dtype=float)
    rho = {}
    for s in r.columns:
        v = r[s].to_numpy()
        n_p = int((~np.isnan(v)).sum())  # the problems s can take
        # a ratio of inf (not solved) never counts, not even at tau = inf
        rho[s] = [(np.isfinite(v) & (v <= tau)).sum() / n_p if n_p else np.nan for tau in taus]
    return pd.DataFrame(rho, index=pd.Index(taus, name="tau"))
