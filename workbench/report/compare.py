"""Compare two result sets method by method (``workbench report A_DIR B_DIR``): e.g. two versions of
a solver, or the same study on two machines.

Methods are matched by name and problems by name (a problem whose data differ between the two is
left out and named). Under the accounting rule of :mod:`workbench.analysis.accounting`, per (problem,
method) both can take: the ratio B / A of the times, its range from the fastest and slowest
repetitions (B min / A max to B max / A min), and whether the two are within noise (their min-max
intervals overlap). Per method: the geometric mean of the ratios with their range over problems,
how many are within noise, and the success rates of A and B on those problems.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from workbench.errors import InputError
from workbench.report import read_report_data, tables
from workbench.analysis.accounting import RULE
from workbench.report.document import Heading, Table, Text, spread, write_pages

__all__ = ["compare", "write_comparison"]


def compare(a, b) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """(per method, per problem and method shown, the numbers behind it, notes) for two ReportData."""
    pa, pb = a.pairs(), b.pairs()
    hashes_a = {p["problem"]: p.get("problem_hash") for p in a.plan["problems"]}
    hashes_b = {p["problem"]: p.get("problem_hash") for p in b.plan["problems"]}
    differ = [p for p in hashes_a if p in hashes_b and hashes_a[p] != hashes_b[p]]
    notes = [f"Left out, their data differ between A and B: {', '.join(differ)}."] if differ else []
    methods = [m for m in a.methods if m in b.methods]
    if not methods:
        raise InputError(f"{a.root} and {b.root} have no method in common (A: {', '.join(a.methods)}; "
                         f"B: {', '.join(b.methods)})")
    only = sorted(set(a.methods) ^ set(b.methods))
    if only:
        notes.append(f"Methods in only one of the two, not compared: {', '.join(only)}.")
    both = pa.merge(pb, on=["problem", "method"], suffixes=("_a", "_b"))
    both = both[both["method"].isin(methods) & ~both["problem"].isin(differ) & both["applicable_a"]
                & both["applicable_b"]]
    both = both.assign(ratio=both["time_b"] / both["time_a"],
                       ratio_min=both["time_min_b"] / both["time_max_a"],
                       ratio_max=both["time_max_b"] / both["time_min_a"],
                       noise=(np.maximum(both["time_min_a"], both["time_min_b"])
                              <= np.minimum(both["time_max_a"], both["time_max_b"])))
    rows = []
    for m in methods:
        mine = both[both["method"] == m]
        if mine.empty:
            continue
        r = mine["ratio"].to_numpy(dtype=float)
        rows.append({"method": a.labels[m], "problems": len(mine),
                     "B / A time": spread(float(np.exp(np.mean(np.log(r)))), float(r.min()), float(r.max())),
                     "within noise": f"{int(mine['noise'].sum())}/{len(mine)}",
                     "solved % A": 100.0 * mine["solved_a"].mean(), "solved % B": 100.0 * mine["solved_b"].mean()})
    per_method = pd.DataFrame(rows).set_index("method")
    detail = pd.DataFrame({
        "problem": both["problem"], "method": both["method"].map(a.labels),
        "A time [s]": [spread(t, lo, hi) for t, lo, hi in zip(both["time_a"], both["time_min_a"], both["time_max_a"])],
        "B time [s]": [spread(t, lo, hi) for t, lo, hi in zip(both["time_b"], both["time_min_b"], both["time_max_b"])],
        "B / A": [spread(r, lo, hi) for r, lo, hi in zip(both["ratio"], both["ratio_min"], both["ratio_max"])],
        "within noise": np.where(both["noise"], "yes", "no"),
        "status A / B": [f"{'solved' if x else 'not solved'} / {'solved' if y else 'not solved'}"
                         for x, y in zip(both["solved_a"], both["solved_b"])]}).set_index("problem")
    numbers = both[["problem", "method", "time_a", "time_min_a", "time_max_a", "time_b", "time_min_b", "time_max_b",
                    "ratio", "ratio_min", "ratio_max", "noise", "solved_a", "solved_b"]]
    return per_method, detail, numbers, notes


def _describe(label: str, res) -> str:
    sessions = res.store.sessions()
    last = sessions[-1] if sessions else {}
    return (f"{label}: {res.root} (study {res.plan['study']}, {len(res.recorded)} runs, {res.plan['repetitions']} "
            f"repetition(s), workbench {last.get('workbench', '?')}, {last.get('date', '?')}, "
            f"{last.get('cpu', '?')}).")


def write_comparison(a_dir, b_dir, out_dir=None) -> Path:
    """Write the comparison of the result sets ``a_dir`` (A) and ``b_dir`` (B); the path of index.html."""
    a, b = read_report_data(a_dir), read_report_data(b_dir)
    per_method, detail, numbers, notes = compare(a, b)
    out = Path(out_dir) if out_dir else Path("reports") / f"compare-{a.plan['study']}-{b.plan['study']}"
    out.mkdir(parents=True, exist_ok=True)
    blocks = [Text(_describe("A", a)), Text(_describe("B", b)), Text(RULE), *[Text(n) for n in notes],
              Heading(1, "Per method"),
              Text(f"B / A: geometric mean over the problems both can take of the ratio of {a.time_label}s (below 1: B "
                   "is faster), with its range over problems; within noise: problems whose min-max intervals over "
                   "repetitions overlap."),
              Table(per_method, "", tables.write_table(per_method, out, "per_method", "B against A per method")),
              Heading(1, "Per problem"),
              Table(detail, "Median (min-max) over repetitions; the ratio's range from the fastest and slowest "
                            "repetitions.", tables.write_table(detail, out, "per_problem", "B against A per problem",
                                                       numbers))]
    return write_pages(out, f"{a.plan['study']} (A) against {b.plan['study']} (B)", blocks)

