"""Anitescu and Hart 2003, Table 1: LCP0 (Lemke) against LCP2 (one QP) on the cannonball
(``python -m benchmarks.reproduce anitescu-hart-2003``; the table's runs: :mod:`benchmarks.reproduce.anitescu_hart_table1`)."""

from __future__ import annotations

from benchmarks.reproduce.common import _say
from workbench.method import solve
from workbench.report.reproduction import row
from workbench.solvers import SolveOptions


# --------------------------------------------------------------------------- Anitescu and Hart 2003

def lcp2_error(mu: float, n_bottom: int = 20) -> tuple[float, float]:
    """LCP2's normal-velocity error (max, mean) [m/s] on the first step of the cannonball
    (Anitescu and Hart 2003 Table 1), computed by the workbench from the returned impulses."""
    from benchmarks.reproduce.anitescu_hart_table1 import TOL
    from problems.lcp_scenes import cannonball

    res = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lcp2", SolveOptions(tol=TOL))
    return float(res.metrics["normal_velocity_error"]), float(res.metrics["mean_normal_velocity_error"])


#: the statistics over the active contacts that Anitescu and Hart's "LCP2 residual error" may be, and the
#: keys of workbench.lcp_metrics.normal_velocity_error that hold them
ERROR_STATISTICS = {"max": "normal_velocity_error", "2-norm": "norm2_normal_velocity_error",
                    "mean": "mean_normal_velocity_error", "rms": "rms_normal_velocity_error"}


def error_statistics(metrics: dict) -> dict[str, float]:
    """LCP2's normal-velocity error [m/s] under each statistic of ERROR_STATISTICS (the row's choices)."""
    return {name: float(metrics[key]) for name, key in ERROR_STATISTICS.items()}


#: the quick run's cannonball: 55 disks (10 on the plank), a few hundred pivots; the CI's machine-independence test
QUICK_CANNONBALL = 10


def lemke_outcome(n_bottom: int, mu: float, cap: int, lcp0) -> tuple[str, str, str | None]:
    """(status, shown, round-off note) of LCP0 on the cannonball: ``lcp0`` is the run with the pivot row
    divided by the pivot; the round-off probe repeats it with the row multiplied by the reciprocal
    (workbench.solvers.lemke), and where the two end differently the note says so: the outcome is
    then a property of the rounding, not of the method and the data."""
    from benchmarks.reproduce.anitescu_hart_table1 import TOL, lcp0_status
    from problems.lcp_scenes import cannonball

    status = lcp0_status(lcp0)
    probe = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lemke",
                  SolveOptions(tol=TOL, max_iter=cap, params={"pivot_divide": False}))
    probe_status = lcp0_status(probe)
    shown = (f"{status} after {lcp0.iterations:,} pivots (pivot sequence {lcp0.info['pivot_hash']}), "
             f"{lcp0.solve_seconds:.1f} s"
             + (f", LCP residual {lcp0.metrics['lcp_residual']:.0e}" if status == "solved" else "")
             + f"; round-off probe: {probe_status} after {probe.iterations:,} pivots")
    same = probe_status == status
    note = None if same else (f"the same pivoting with the pivot row rounded otherwise (times 1 / pivot) ends "
                              f"{probe_status} after {probe.iterations:,} pivots")
    return status, shown, note


def anitescu_hart(args) -> dict:
    from benchmarks.reproduce.anitescu_hart_table1 import MAX_PIVOTS, PAPER, TOL, lcp0_status, run
    from problems.lcp_scenes import cannonball

    n_bottom, mus = (QUICK_CANNONBALL, [0.1, 0.8]) if args.quick else (20, sorted(PAPER))
    cap = 2_000 if args.quick else MAX_PIVOTS
    reduced = (f"quick run: {n_bottom * (n_bottom + 1) // 2} disks ({n_bottom} on the plank), cap {cap:,} pivots"
               if args.quick else None)
    rows = []
    measured = run(n_bottom, mus, cap, "clarabel", lcp1=False)
    for r in measured:
        mu, lcp0, lcp2 = r["mu"], r["lcp0"], r["lcp2"]
        paper_cpu, paper_lcp2_cpu, paper_err = PAPER[mu]
        status, shown, roundoff = lemke_outcome(n_bottom, mu, cap, lcp0)
        solved = status == "solved"
        paper_status = "MAX ITER" if paper_cpu is None else "solved"
        if status == "MAX ITER" and paper_status == "solved" and not args.quick:
            _say(f"mu = {mu}: Lemke again with the cap at {args.extra_cap:,} pivots")
            more = solve(cannonball(n_bottom, mu), "lcp-pyramid", "lemke", SolveOptions(tol=TOL, max_iter=args.extra_cap))
            shown += ("; with the cap at {:,}: ".format(args.extra_cap)
                      + f"{lcp0_status(more)} after {more.iterations:,} pivots ({more.solve_seconds:.1f} s)")
        where = "Table 1"
        diff = ("Lemke's method of the workbench (complementary pivoting, lexicographic ratio test) for PATH's "
                "Lemke: no PATH licence here; pivot sequences of two implementations differ")
        both_fail = paper_status == status == "MAX ITER"
        rows.append(row(f"LCP0 (Lemke) outcome, mu = {mu:g}", where, paper_status, status, {"rule": "same"},
                        criterion=f"solved within {cap:,} pivots (the paper's MAX ITER is PATH's 10,000); "
                                  "solved: a complementary basis whose solution, recomputed, satisfies the LCP",
                        differences=diff, shown=shown, obstacle=reduced, roundoff=roundoff,
                        failure=(f"both stop at the pivot cap (MAX ITER: the paper's PATH at 10,000, here {cap:,})"
                                 if both_fail else None)))
        rows.append(row(f"LCP0 CPU time [s], mu = {mu:g}", where, paper_cpu if paper_cpu is not None else "MAX ITER",
                        round(lcp0.solve_seconds, 2) if solved else None,
                        {"rule": "not_comparable",
                         "reason": "Matlab + PATH on a 2000-era machine against compiled Python now: only the pattern compares"},
                        criterion="CPU seconds of the solve", differences=diff,
                        shown=None if solved else f"{status} ({lcp0.solve_seconds:.1f} s)"))
        errors = error_statistics(lcp2.metrics)
        rule = {"rule": "factor", "factor": 3.0} if paper_err > 1e-6 else {"rule": "below", "threshold": 1e-6}
        rows.append(row(f"LCP2 residual error [m/s], mu = {mu:g}", where, paper_err, errors["max"], rule,
                        criterion="normal velocity error mu lambda at the contacts with c_n > 0 (the paper's), "
                                  "under each statistic over the contacts: the paper does not say which (its "
                                  "nearby wording, for the 136-disk run, is 'average normal velocity error')",
                        differences="one QP (15) solved by Clarabel (PATH in the paper) to 1e-8", obstacle=reduced,
                        choices={"name": "error statistic", "values": errors}))
        rows.append(row(f"LCP2 CPU time [s], mu = {mu:g}", where, paper_lcp2_cpu, round(lcp2.solve_seconds, 3),
                        {"rule": "not_comparable", "reason": "other machine, language and QP solver"},
                        criterion="CPU seconds of the QP solve (its cvxpy compile apart)",
                        differences="Clarabel for PATH"))
    return {"title": "Anitescu and Hart 2003, Table 1: LCP0 (Lemke) against LCP2 (one QP) on the cannonball",
            "setup": (f"First step of the {n_bottom * (n_bottom + 1) // 2}-disk cannonball ({n_bottom} disks of "
                      "diameter 3 on a fixed plank, h = 0.05 s, zero initial velocity; "
                      "problems.lcp_scenes.cannonball), lcp-pyramid formulation (2D, m_C = 2), "
                      f"LCP of {measured[0]['n']:,} unknowns; Lemke capped at {cap:,} pivots, the paper's MAX ITER. "
                      "Lemke's pivoting involves no BLAS (workbench.solvers.lemke): its pivot sequence, named by "
                      "a hash, is the same for every BLAS thread count and kernel (tests/test_reproduction.py). "
                      "Rules: LCP0 outcome must be the same, and is not reproduced (depends on round-off) where "
                      "the round-off probe (the pivot row rounded otherwise) ends differently; LCP2's error must be within a factor 3 of the paper's "
                      "where the paper's is above 1e-6 and below 1e-6 where the paper's is, under each statistic over the "
                      "contacts (max, 2-norm, mean, rms: 'depends on error statistic' where they differ); an outcome "
                      "where both stop at MAX ITER is a reproduced failure, not counted with the reproductions."),
            "rows": rows}
