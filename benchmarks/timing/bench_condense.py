"""Condensing a small global problem (issue 33 item 1): the dense-Cholesky path of
workbench.problem.TimeStepProblem.condensed against the sparse global path, per call.

    python -m benchmarks.timing.bench_condense [--calls N] [--sweep-calls N]

1. Corpus: every global file of the corpus within the thresholds (CONDENSE_MAX_DOF,
   CONDENSE_MAX_UNKNOWNS) and the two smallest beyond them, with the in-house exact methods of
   bench_peers (apgd, bb, pgs, newton) to 1e-8: the whole ``Method.solve()`` of a fresh problem object
   (made outside the clock), the two paths interleaved call by call, medians over ``--calls``
   (default 200); each path's status and iterations and ||nu_condensed - nu_sparse|| / ||nu_sparse||.
2. Sweep (the thresholds' measurement): made-up problems, 3 contacts and n_dof from 96 to 384 with a
   banded M (bandwidth 24, a finite-element mass matrix's kind), then n_c from 3 to 82 on rigid
   bodies (diagonal M, 6 dofs each) and on the banded M of 162 dofs; APGD, medians over
   ``--sweep-calls`` (default 30) of each path, the thresholds lifted or set to 0.

Prints only (no docs page); the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
import warnings

import numpy as np
import scipy.sparse as sp

import workbench.problem as problem_module
from workbench.problem import TimeStepProblem

#: the corpus's global files: within the thresholds, then the two smallest beyond them
FILES = ("siconos/GFC3D_Example0.dat", "siconos/GFC3D_Example00.dat", "siconos/GFC3D_Example00_badly_scaled.dat",
         "siconos/GFC3D_Example0_SBM.dat", "siconos/GFC3D_Example1.dat", "siconos/GFC3D_OneContact.dat",
         "siconos/GFC3D_TwoRods1.dat", "fclib/CubeH8.hdf5", "fclib/LMGC_GlobalFrictionContactProblem00046.hdf5",
         "fclib/Box_Stacks-i0122-82-5.hdf5", "siconos/gfc2d_granularflowonwall_00069_00350.dat")
METHODS = (("anti-relaxed", "apgd"), ("anti-relaxed", "bb"), ("anti-relaxed", "pgs"), ("ncp", "newton"))


@contextlib.contextmanager
def path(condensed: bool | None):
    """The thresholds as they are (None), lifted (True: every problem condensed) or 0 (False: none)."""
    kept = problem_module.CONDENSE_MAX_DOF, problem_module.CONDENSE_MAX_UNKNOWNS
    if condensed is not None:
        problem_module.CONDENSE_MAX_DOF = problem_module.CONDENSE_MAX_UNKNOWNS = 10**9 if condensed else 0
    try:
        yield
    finally:
        problem_module.CONDENSE_MAX_DOF, problem_module.CONDENSE_MAX_UNKNOWNS = kept


def interleaved(make, method, options, calls: int, paths: tuple) -> dict:
    """Per path: the median seconds of ``method.solve(make(), options)`` and its last result."""
    seconds, results = {p: [] for p in paths}, {}
    for _ in range(calls):
        for p in paths:
            with path(p):
                problem = make()
                t0 = time.perf_counter()
                results[p] = method.solve(problem, options)
                seconds[p].append(time.perf_counter() - t0)
    return {p: (statistics.median(seconds[p]), results[p]) for p in paths}


def corpus(calls: int) -> None:
    from benchmarks.peers.measure import fresh
    from workbench.io import load_problem
    from workbench.method import Method
    from workbench.shared_data import shared_data_dir
    from workbench.solvers import SolveOptions

    options = SolveOptions(tol=1e-8, keep_history=False, time_limit=5.0)
    print("| problem | n_dof | d n_c | M | method | condensed us | sparse us | statuses | iterations | rel. diff nu |")
    print("|---|---:|---:|---|---|---:|---:|---|---|---:|")
    for name in FILES:
        p0 = load_problem(shared_data_dir() / name)
        for form, slv in METHODS:
            method = Method(form, slv)
            out = interleaved(lambda: fresh(p0), method, options, calls, (None, False))
            (t_c, a), (t_s, b) = out[None], out[False]
            both = a.nu is not None and b.nu is not None
            diff = np.linalg.norm(a.nu - b.nu) / np.linalg.norm(b.nu) if both else np.nan
            label = f"{t_c * 1e6:.1f}" if "condensed" in a.info else f"{t_c * 1e6:.1f} (not condensed)"
            print(f"| {name} | {p0.n_dof} | {p0.n_contact_unknowns} | {'diagonal' if p0.M_is_diagonal else 'general'} "
                  f"| {slv} | {label} | {t_s * 1e6:.1f} | {a.status}/{b.status} | {a.iterations}/{b.iterations} "
                  f"| {diff:.1e} |")


def banded_M(n: int) -> sp.csr_matrix:
    band = sp.diags([np.full(n - k, -0.1) for k in range(1, 25)], list(range(1, 25)), shape=(n, n))
    return (band + band.T + 6.0 * sp.eye(n)).tocsr()


def made_up(n_c: int, M: sp.csr_matrix, rng) -> dict:
    """n_c contacts, each between two of the n_dof / 6 bodies' translational dofs."""
    n = M.shape[0]
    rows, cols = [], []
    for i in range(n_c):
        a, b = rng.choice(n // 6, 2, replace=False)
        for j in range(3):
            rows += [6 * a + j, 6 * b + j]
            cols += [3 * i + j] * 2
    D = sp.csr_matrix((rng.normal(size=len(rows)), (rows, cols)), shape=(n, 3 * n_c))
    return dict(M=M, D=D, k=rng.normal(size=n), mu=np.full(n_c, 0.3))


def sweep(calls: int) -> None:
    from workbench.method import Method
    from workbench.solvers import SolveOptions

    rng = np.random.default_rng(0)
    method, options = Method("anti-relaxed", "apgd"), SolveOptions(tol=1e-8, keep_history=False, time_limit=5.0)
    cases = [("banded", 3, banded_M(n)) for n in (96, 162, 216, 288, 384)]
    cases += [("diagonal", n_c, sp.diags(rng.uniform(1, 2, 6 * n_c)).tocsr()) for n_c in (3, 9, 18, 27, 40, 54, 82)]
    cases += [("banded", n_c, banded_M(162)) for n_c in (9, 27, 40, 54, 82)]
    print("| M | n_dof | d n_c | condensed us | sparse us | status | iterations |")
    print("|---|---:|---:|---:|---:|---|---|")
    for kind, n_c, M in cases:
        data = made_up(n_c, M, rng)
        out = interleaved(lambda: TimeStepProblem(**data), method, options, calls, (True, False))
        (t_c, a), (t_s, b) = out[True], out[False]
        print(f"| {kind} | {M.shape[0]} | {3 * n_c} | {t_c * 1e6:.1f} | {t_s * 1e6:.1f} | {a.status}/{b.status} "
              f"| {a.iterations}/{b.iterations} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="timed calls per path, corpus (default 200)")
    ap.add_argument("--sweep-calls", type=int, default=30, help="timed calls per path, sweep (default 30)")
    args = ap.parse_args(argv)
    from workbench.method import Method
    for form, slv in METHODS:
        Method(form, slv).warm_up(history=False)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"CONDENSE_MAX_DOF {problem_module.CONDENSE_MAX_DOF}, CONDENSE_MAX_UNKNOWNS "
          f"{problem_module.CONDENSE_MAX_UNKNOWNS}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus(args.calls)
        print()
        sweep(args.sweep_calls)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
