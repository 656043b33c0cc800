"""Anitescu and Hart 2003 Table 1 reproduced: LCP0 (Lemke) against LCP2 (one QP (15)) on the first step of the
210-disk cannonball (python3 -m benchmarks.reproduce.anitescu_hart_table1, from the repository root).

The scene is problems.lcp_scenes.cannonball(20, mu): 20 disks of diameter 3 on a fixed plank, 19 on
top, ... (210 disks, 590 contacts, zero gaps), h = 0.05, zero initial velocity, gravity; the
lcp-pyramid formulation with m_C = 2 (2D) gives a standard LCP of 2,360 unknowns. For each mu:

- LCP0: Lemke's method (workbench.solvers.lemke) capped at 10,000 pivots, the MAX ITER of the
  paper's PATH runs; the time, or the status it stopped with ("MAX ITER" for the pivot cap), and the
  pivots taken;
- LCP2: one QP (15) with Gamma = 0 (workbench.solvers.lcp2, Clarabel; ``--qp-solver osqp``): its time
  and the paper's residual error, the normal velocity |u_n| (= mu lambda) at the contacts with
  c_n > 0, as maximum and mean [m/s], all computed by the workbench from the returned impulses;
- with ``--lcp1`` also LCP1 (QP (15) repeated until Lambda changes by at most 1e-5 m/s, the paper's
  criterion; at most 100 outer iterations): status, LCP residual, outer and inner iterations, time.

Times are solve seconds (Lemke: the pivoting; LCP2: the QP solve, its one-off cvxpy compile and
solver set-up given apart as "build"); the paper's are Matlab + PATH on a 2000-era machine, so only
the pattern compares. Printed as a markdown table with the paper's numbers alongside. ``--n-bottom``
and ``--mu`` make smaller runs (``--n-bottom 6 --mu 0.1 0.8`` takes seconds).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from datetime import datetime, timezone

from problems.lcp_scenes import cannonball
from workbench.method import solve
from workbench.solvers import SolveOptions, StopCause
from workbench.solvers.lemke import SOLVED

#: Anitescu and Hart 2003 Table 1: mu -> (LCP0 CPU [s] or None for MAX ITER, LCP2 CPU [s], LCP2 residual error)
PAPER = {0.1: (29.76, 34.42, 0.06), 0.2: (None, 36.28, 0.12), 0.4: (None, 24.03, 0.07),
         0.6: (None, 20.40, 1e-8), 0.8: (None, 14.52, 8e-11)}
MAX_PIVOTS = 10_000
LAMBDA_TOL = 1e-5
#: LCP1's cap on outer iterations (QP solves)
MAX_OUTER = 100
TOL = 1e-8


def lcp0_status(result) -> str:
    """"solved" only for a complementary solution that passed both final checks (workbench.solvers.lemke);
    "MAX ITER" at the pivot cap; otherwise Lemke's own status (an inaccurate basis is not solved)."""
    if result.solver_status == SOLVED:
        return "solved"
    return "MAX ITER" if result.stop == StopCause.MAX_ITER else result.solver_status


def lcp0_cell(result) -> str:
    status = lcp0_status(result)
    if status != "solved":
        return f"{status} ({result.iterations} pivots, {result.solve_seconds:.1f} s)"
    return f"{result.solve_seconds:.2f} ({result.iterations} pivots, residual {result.metrics['lcp_residual']:.0e})"


def run(n_bottom: int, mus: list[float], max_pivots: int, qp_solver: str, lcp1: bool) -> list[dict]:
    rows = []
    for solver in ("lemke", "lcp2"):  # compile numba kernels and import cvxpy outside the timings
        solve(cannonball(3, 0.1), "lcp-pyramid", solver)
    for mu in mus:
        problem = cannonball(n_bottom, mu)
        lcp0 = solve(problem, "lcp-pyramid", "lemke", SolveOptions(tol=TOL, max_iter=max_pivots))
        lcp2 = solve(problem, "lcp-pyramid", "lcp2", SolveOptions(tol=TOL, params={"qp_solver": qp_solver}))
        row = {"mu": mu, "n": lcp0.info["lcp_size"], "lcp0": lcp0, "lcp2": lcp2}
        if lcp1:
            row["lcp1"] = solve(problem, "lcp-pyramid", "lcp1",
                                SolveOptions(tol=TOL, max_iter=MAX_OUTER,
                                             params={"qp_solver": qp_solver, "lambda_tol": LAMBDA_TOL}))
        rows.append(row)
        print(f"mu = {mu}: done", file=sys.stderr, flush=True)
    return rows


def paper_cells(mu: float, n_bottom: int) -> list[str]:
    if n_bottom != 20 or mu not in PAPER:
        return ["", "", ""]
    lcp0, lcp2, err = PAPER[mu]
    return ["MAX ITER" if lcp0 is None else f"{lcp0:.2f}", f"{lcp2:.2f}", f"{err:g}"]


def table(rows: list[dict], n_bottom: int, lcp1: bool) -> str:
    head = ["mu", "LCP0 s (ours)", "LCP2 s (ours; build)", "LCP2 error max / mean (ours)",
            "LCP0 CPU (paper)", "LCP2 CPU (paper)", "LCP2 error (paper)"]
    if lcp1:
        head.append("LCP1 (ours): status, outer / inner, s")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        lcp2 = row["lcp2"]
        m = lcp2.metrics
        cells = [f"{row['mu']:g}", lcp0_cell(row["lcp0"]),
                 f"{lcp2.solve_seconds:.3f} ({lcp2.build_seconds:.2f})",
                 f"{m.get('normal_velocity_error', float('nan')):.1e} / {m.get('mean_normal_velocity_error', float('nan')):.1e}",
                 *paper_cells(row["mu"], n_bottom)]
        if lcp1:
            r = row["lcp1"]
            cells.append(f"{r.status} (residual {r.metrics.get('lcp_residual', float('nan')):.0e}), "
                         f"{r.info.get('outer_iterations')} / {r.info.get('inner_iterations')}, {r.solve_seconds:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-bottom", type=int, default=20, help="disks on the plank (default 20: 210 disks)")
    parser.add_argument("--mu", type=float, nargs="+", default=sorted(PAPER), help="friction coefficients")
    parser.add_argument("--max-pivots", type=int, default=MAX_PIVOTS, help="Lemke's pivot cap (default 10,000)")
    parser.add_argument("--qp-solver", choices=("clarabel", "osqp"), default="clarabel")
    parser.add_argument("--lcp1", action="store_true", help="also run LCP1 (the outer iterations can be many)")
    args = parser.parse_args(argv)
    if args.n_bottom < 1 or args.max_pivots < 1 or any(mu < 0 for mu in args.mu):
        parser.error("--n-bottom and --max-pivots must be positive, --mu non-negative")
    t0 = time.perf_counter()
    rows = run(args.n_bottom, args.mu, args.max_pivots, args.qp_solver, args.lcp1)
    n_disks = args.n_bottom * (args.n_bottom + 1) // 2
    print(f"Anitescu and Hart 2003 Table 1: cannonball of {n_disks} disks ({args.n_bottom} on the bottom), first step, "
          f"h = 0.05, LCP of {rows[0]['n']} unknowns; Lemke capped at {args.max_pivots} pivots; "
          f"QP solver {args.qp_solver}.")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d}, {platform.node()} ({platform.processor() or platform.machine()}), "
          f"Python {platform.python_version()}; total {time.perf_counter() - t0:.0f} s\n")
    print(table(rows, args.n_bottom, args.lcp1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
