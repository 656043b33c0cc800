"""ADMM with and without acceleration (Goldstein et al. 2014, Algorithm 8; workbench.solvers.admm) on
the problems of bench_peers's split (issue 47 item 2), judged on its held-out half.

    python -m benchmarks.timing.bench_admm [--max-iter N] [--write]

Every problem of benchmarks/peers/split.json (the corpus's files with contacts and the generated
stacks, each with its half and size class) is solved as the anti-relaxed CCQO by ``admm`` in four
variants (VARIANTS): ``acceleration`` false (plain ADMM, over-relaxed with alpha 1.6), true (alpha 1,
the default), accelerated with rho halved, as at any other balancing check, where no cone constraint
is active (``inactive_step`` 0.5 instead of the default INACTIVE_STEP: the rule before it), and
accelerated with a constant penalty rho = ||W||_1 (the largest column sum of |W|; residual balancing
off: one factorisation), each from a freshly read problem, to the Siconos error
1e-8 within ``--max-iter`` iterations (no time limit: the counts do not depend on the load). The figure
is the iteration count, which the variants pay for with the same work (one x-update solve with the
factor, one product with N, one cone projection; acceleration adds four vector updates and two inner
products; balancing a factorisation when rho changes); a variant that misses 1e-8 is "not reached",
and a ratio to plain ADMM is taken only where both reach it. Per half: the geometric mean of each
variant's iterations over plain ADMM's, and how many problems each reaches. Without ``--write`` the
page is printed only.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import warnings
from pathlib import Path

#: the accuracy both variants must reach (bench_peers's exact target)
TOL = 1e-8
#: (name, params; "W1" in place of a value: ||W||_1 of the problem)
VARIANTS = (("plain", {"acceleration": False}), ("accelerated", {}),
            ("accelerated, halving rho where w = 0", {"inactive_step": 0.5}),
            ("constant rho, 1-norm of W", {"rho": "W1", "balance_every": 10**9}))


def measure(max_iter: int) -> dict:
    from benchmarks.peers.bench_peers import corpus, generated_stacks, load_split
    from benchmarks.peers.measure import fresh
    from workbench.method import solve
    from workbench.solvers import SolveOptions

    split = load_split()
    with tempfile.TemporaryDirectory(prefix="bench_admm_") as folder:
        problems = corpus("*")[0] + generated_stacks(Path(folder))
        rows = []
        for rel, _, p in problems:
            if rel not in split:
                continue
            row = {"problem": rel, "contacts": p.n_contacts, "half": split[rel]}
            for name, params in VARIANTS:
                params = {k: (_norm_1(p) if v == "W1" else v) for k, v in params.items()}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = solve(fresh(p), "anti-relaxed", "admm",
                                SolveOptions(tol=TOL, max_iter=max_iter, keep_history=False, params=params))
                err = res.metrics.get("siconos_error")
                row[name] = {"iterations": int(res.iterations), "status": res.status,
                             "reached": bool(err is not None and err <= TOL),
                             "error": None if err is None or not math.isfinite(err) else float(err)}
            rows.append(row)
            print(f"{rel}: " + ", ".join(f"{name} {row[name]['iterations']}" for name, _ in VARIANTS),
                  file=sys.stderr, flush=True)
    return {"rows": rows, "max_iter": max_iter, "tol": TOL}


def _norm_1(p) -> float:
    """||W||_1: the largest column sum of |W| (W = N, from its sparse form)."""
    return float(abs(p.N).sum(axis=0).max())


def summary(rows: list[dict], variant: str = "accelerated") -> dict:
    """Geometric mean of ``variant`` / plain iterations over the rows both reach, and the counts."""
    both = [r for r in rows if r["plain"]["reached"] and r[variant]["reached"]]
    ratios = [r[variant]["iterations"] / r["plain"]["iterations"] for r in both]
    return {"problems": len(rows), "both": len(both),
            "plain_reached": sum(r["plain"]["reached"] for r in rows),
            "variant_reached": sum(r[variant]["reached"] for r in rows),
            "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
            "fewer": sum(q < 1 for q in ratios), "more": sum(q > 1 for q in ratios)}


def _variants(data: dict) -> list[str]:
    """The variants a record holds, plain first (a record may predate a variant)."""
    return [name for name, _ in VARIANTS if all(name in r for r in data["rows"])]


def groups(data: dict) -> list[tuple[str, list[dict]]]:
    """The rows by half, problems of at most 10 contacts apart (bench_peers's small class)."""
    out = []
    for half in ("tuning", "held-out"):
        for small in (False, True):
            rows = [r for r in data["rows"] if r["half"] == half and (r["contacts"] <= 10) == small]
            out.append((f"{half}, {'at most 10 contacts' if small else 'over 10 contacts'}", rows))
    return out


def _cell(v: dict) -> str:
    return f"{v['iterations']:,}" if v["reached"] else f"not reached ({v['status']}, {v['iterations']:,})"


def render(data: dict) -> str:
    others = _variants(data)[1:]
    lines = [f"Anti-relaxed ADMM to the Siconos error {data['tol']:g}, at most {data['max_iter']:,} iterations: plain "
             "(alpha 1.6, residual balancing), accelerated (Goldstein et al. 2014, Algorithm 8; alpha 1; the default), "
             "accelerated with rho halved where no cone constraint is active (inactive_step 0.5, the rule before "
             "INACTIVE_STEP) and accelerated with a constant rho, the 1-norm of W (no balancing: one factorisation). "
             "Iterations, which do not "
             "depend on the load. Ratio: the variant's iterations / plain ADMM's, where both reach the target.", "",
             "| group | variant | problems | plain reached | variant reached | geometric mean ratio | fewer / more |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, rows in groups(data):
        for v in others:
            s = summary(rows, v)
            g = "-" if s["geomean"] is None else f"{s['geomean']:.2f} over {s['both']}"
            lines.append(f"| {name} | {v} | {s['problems']} | {s['plain_reached']} | {s['variant_reached']} | {g} | "
                         f"{s['fewer']} / {s['more']} |")
    head = " | ".join(["plain"] + [f"{v} | ratio" for v in others])
    lines += ["", f"| problem | half | contacts | {head} |", "|---|---|---:|" + "---:|" * (1 + 2 * len(others))]
    for r in sorted(data["rows"], key=lambda r: (r["half"], r["contacts"], r["problem"])):
        cells = [_cell(r["plain"])]
        for v in others:
            both = r["plain"]["reached"] and r[v]["reached"]
            cells += [_cell(r[v]), f"{r[v]['iterations'] / r['plain']['iterations']:.2f}" if both else "-"]
        lines.append(f"| {r['problem']} | {r['half']} | {r['contacts']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-iter", type=int, default=5000, help="iteration cap of each run (default 5000)")
    ap.add_argument("--write", action="store_true", help="write docs/results/admm-acceleration.* and its copy in "
                                                          "docs/solvers-performance.md")
    args = ap.parse_args(argv)
    if args.max_iter < 1:
        ap.error("--max-iter must be positive")
    data = measure(args.max_iter)
    if not args.write:
        print(render(data))
        return 0
    from benchmarks.timing import bench_admm  # the renderer by its importable name, also under python -m
    from workbench.provenance import ROOT, embed, write_results
    command = "python -m benchmarks.timing.bench_admm" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    print(write_results("admm-acceleration", data, bench_admm.render, command).read_text())
    embed(ROOT / "docs" / "solvers-performance.md", "admm-acceleration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
