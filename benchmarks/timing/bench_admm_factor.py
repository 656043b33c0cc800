"""ADMM's factorisation of W + rho I on local problems (workbench.solvers.admm, issue 47 item 2):
SuperLU's LU against CHOLMOD's simplicial and supernodal Cholesky, and what it changes in a whole solve.

    python -m benchmarks.timing.bench_admm_factor [--write]

Part 1, the factorisations (where SUPERNODAL_MIN_FLOPS comes from). For W = N of the sphere packings of
problems/datasets (scaling-*, settled-00320, filling-01000: none of them in bench_peers's split) and of
the generated stacks, with rho = the mean diagonal of W (admm's start): the flops of the Cholesky
counted from W's pattern in CHOLMOD's order (workbench.solvers.cholesky.cholesky_flops); the seconds of
one numeric factorisation (median of FACTOR_REPEATS; CHOLMOD's symbolic analysis, done once per run, is
not in it) and of one solve with the factor (median of SOLVE_REPEATS), for SuperLU's LU with admm's
ordering and for CHOLMOD's simplicial and supernodal Cholesky.

Part 2, the solves. Every local problem of more than 10 contacts in bench_peers's split (its corpus files
and generated stacks, with their half), solved by anti-relaxed ``admm`` to the Siconos error 1e-8 from a
freshly read problem, with CHOLMOD (the default when W is exactly symmetric) and with SuperLU's LU
(CHOLMOD withheld): build + solve seconds, median of SOLVE_RUNS after an untimed solve, and the
iterations, which are the same up to the factorisations' round-off.

Seconds depend on the machine and its load (the header gives both); the flops and iterations do not.
Without ``--write`` the page is printed only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

#: the packings of part 1 (problems/datasets), smallest first
PACKINGS = ("dataset:scaling-00128", "dataset:scaling-00192", "dataset:scaling-00256", "dataset:scaling-00512", "dataset:filling-01000", "dataset:settled-00320",
            "dataset:scaling-01024", "dataset:scaling-02048", "dataset:scaling-02560")
FACTOR_REPEATS, SOLVE_REPEATS, SOLVE_RUNS = 5, 20, 3
TOL = 1e-8
SMALL = 10


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def factorisations(name: str, W) -> dict:
    """Part 1's row of one matrix W (CSR)."""
    import scipy.sparse as sp
    from workbench.solvers.admm import _lu
    from workbench.solvers.cholesky import cholesky_flops, cholmod
    W = sp.csc_matrix(W)
    W.sort_indices()
    n = W.shape[0]
    rho = float(W.diagonal().mean())
    A = (W + rho * sp.identity(n, format="csc")).tocsc()
    b = np.random.default_rng(0).standard_normal(n)
    row = {"problem": name, "n": n, "nnz": int(W.nnz)}
    lu = _lu(A)
    row["superlu"] = {"factor_s": _median_seconds(lambda: _lu(A), FACTOR_REPEATS),
                      "solve_s": _median_seconds(lambda: lu.solve(b), SOLVE_REPEATS)}
    module = cholmod()
    for mode in ("simplicial", "supernodal"):
        factor = module.analyze(W, mode=mode)
        if mode == "simplicial":
            row["flops"] = cholesky_flops(W, factor.P())
        factor.cholesky_inplace(W, beta=rho)
        row[mode] = {"factor_s": _median_seconds(lambda: factor.cholesky_inplace(W, beta=rho), FACTOR_REPEATS),
                     "solve_s": _median_seconds(lambda: factor(b), SOLVE_REPEATS)}
    return row


def solves(rel: str, half: str, p) -> dict:
    """Part 2's row of one local problem."""
    from benchmarks.peers.measure import fresh
    from workbench.method import solve
    from workbench.solvers import SolveOptions
    import workbench.solvers.admm as admm
    row = {"problem": rel, "half": half, "contacts": p.n_contacts}
    with_cholmod = admm.cholmod
    for name, module in (("cholmod", with_cholmod), ("superlu", lambda: None)):
        admm.cholmod = module
        try:
            runs = []
            for _ in range(SOLVE_RUNS + 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = solve(fresh(p), "anti-relaxed", "admm", SolveOptions(tol=TOL, keep_history=False))
                runs.append(res.build_seconds + res.solve_seconds)
        finally:
            admm.cholmod = with_cholmod
        err = res.metrics.get("siconos_error")
        row[name] = {"seconds": float(np.median(runs[1:])), "iterations": int(res.iterations),
                     "reached": bool(err is not None and err <= TOL), "factorization": res.info.get("factorization"),
                     "factorizations": int(res.info.get("factorizations", 0))}
    return row


def measure() -> dict:
    from benchmarks.peers.bench_peers import corpus, generated_stacks, load_split
    from workbench.solvers.cholesky import cholmod
    from workbench.sources import load
    if cholmod() is None:
        sys.exit("scikit-sparse (CHOLMOD) is not installed: nothing to compare (pip install -e '.[cholmod]')")
    split = load_split()
    with tempfile.TemporaryDirectory(prefix="bench_admm_factor_") as folder:
        stacks = generated_stacks(Path(folder))
        problems = [(rel, p) for rel, _, p in corpus("*")[0] + stacks
                    if rel in split and not p.is_global and p.n_contacts > SMALL]
        factor_rows = [factorisations(name, load(name).N) for name in PACKINGS]
        factor_rows += [factorisations(rel, p.N) for rel, _, p in stacks if p.n_contacts > SMALL]
        for row in factor_rows:
            print(f"{row['problem']}: flops {row['flops']:.3g}", file=sys.stderr, flush=True)
        solve_rows = []
        for rel, p in problems:
            solve_rows.append(solves(rel, split[rel], p))
            print(f"{rel}: {solve_rows[-1]['cholmod']['seconds']:.4g} s against {solve_rows[-1]['superlu']['seconds']:.4g} s",
                  file=sys.stderr, flush=True)
    return {"factorisations": factor_rows, "solves": solve_rows, "tol": TOL}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def _geomean(values) -> float | None:
    values = list(values)
    return float(np.exp(np.mean(np.log(values)))) if values else None


def render(data: dict) -> str:
    from workbench.solvers.admm import SUPERNODAL_MIN_FLOPS
    lines = ["Part 1: one numeric factorisation of W + rho I (rho the mean diagonal of W) and one solve with it, "
             "milliseconds, medians; the flops of the Cholesky counted from W's pattern in CHOLMOD's order. admm "
             f"takes the supernodal Cholesky from {SUPERNODAL_MIN_FLOPS:.0e} flops on, the simplicial one below.", "",
             "| W of | n | nonzeros | Cholesky flops | SuperLU LU factor / solve | simplicial factor / solve | "
             "supernodal factor / solve | faster Cholesky |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in data["factorisations"]:
        cells = [f"{_ms(r[k]['factor_s'])} / {_ms(r[k]['solve_s'])}" for k in ("superlu", "simplicial", "supernodal")]
        faster = min(("simplicial", "supernodal"), key=lambda k: r[k]["factor_s"])
        lines.append(f"| {r['problem']} | {r['n']:,} | {r['nnz']:,} | {r['flops']:.3g} | " + " | ".join(cells)
                     + f" | {faster} |")
    lines += ["", f"Part 2: anti-relaxed admm to the Siconos error {data['tol']:g}, build + solve seconds (median of "
              f"{SOLVE_RUNS} after an untimed solve, each from a freshly read problem), with CHOLMOD and with "
              "SuperLU's LU; ratio = CHOLMOD's seconds / the LU's.", "",
              "| half | problems | both reached | same iterations | geometric mean ratio |", "|---|---:|---:|---:|---:|"]
    for half in ("tuning", "held-out"):
        rows = [r for r in data["solves"] if r["half"] == half]
        both = [r for r in rows if r["cholmod"]["reached"] and r["superlu"]["reached"]]
        same = sum(r["cholmod"]["iterations"] == r["superlu"]["iterations"] for r in rows)
        g = _geomean(r["cholmod"]["seconds"] / r["superlu"]["seconds"] for r in both)
        lines.append(f"| {half} | {len(rows)} | {len(both)} | {same} | {'-' if g is None else f'{g:.2f}'} |")
    lines += ["", "| problem | half | contacts | factorisation | iterations (LU) | factorisations | CHOLMOD [ms] | "
              "LU [ms] | ratio |", "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in sorted(data["solves"], key=lambda r: (r["half"], r["contacts"], r["problem"])):
        c, s = r["cholmod"], r["superlu"]
        its = f"{c['iterations']:,}" + ("" if c["iterations"] == s["iterations"] else f" ({s['iterations']:,})")
        reach = "" if c["reached"] and s["reached"] else " (not reached)"
        lines.append(f"| {r['problem']} | {r['half']} | {r['contacts']:,} | {c['factorization']} | {its}{reach} | "
                     f"{c['factorizations']} | {_ms(c['seconds'])} | {_ms(s['seconds'])} | "
                     f"{c['seconds'] / s['seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write docs/results/admm-factor.* and its copy in "
                                                          "docs/solvers-performance.md")
    args = ap.parse_args(argv)
    data = measure()
    if not args.write:
        print(render(data))
        return 0
    from benchmarks.timing import bench_admm_factor  # the renderer by its importable name, also under python -m
    from workbench.provenance import ROOT, embed, write_results
    command = "python -m benchmarks.timing.bench_admm_factor" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    print(write_results("admm-factor", data, bench_admm_factor.render, command).read_text())
    embed(ROOT / "docs" / "solvers-performance.md", "admm-factor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
