"""Export speed: writing a 10,000-contact time step in every format (python -m benchmarks.bench_export).

The problem is the shared generator's packing of 4,500 spheres in a box (problems.synthetic.sphere_packing,
about 10,000 contacts, 27,000 dof). Every format is written once per formulation it takes (model formats:
the relaxed dual and primal; data formats: raw and local) into a temporary folder; the table gives the wall
time of ``workbench.export.export`` (model building, factorisation and writing included) and the size of
the files written. ``--spheres N`` changes the size; MOSEK formats are left out without the mosek package.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from workbench.export import FORMATS, DATA_FORMULATIONS, MODELS, export


def formats() -> list[str]:
    try:
        import mosek  # noqa: F401
        return list(FORMATS)
    except ImportError:
        return [f for f in FORMATS if f not in ("ptf", "task")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spheres", type=int, default=4500, help="spheres in the packing (default 4500)")
    args = ap.parse_args(argv)
    from problems.synthetic import sphere_packing
    t0 = time.perf_counter()
    problem = sphere_packing(args.spheres, seed=0)
    print(f"problem: sphere packing, {problem.n_contacts} contacts, {problem.n_dof} dof, "
          f"built in {time.perf_counter() - t0:.2f} s\n")
    print("| format | formulation | seconds | MB written | files |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in formats():
            spec = FORMATS[fmt]
            for formulation in (MODELS if spec.kind == "model" else DATA_FORMULATIONS):
                out = Path(tmp) / f"{fmt}-{formulation}{spec.suffixes[0]}"
                t0 = time.perf_counter()
                files = export(problem, formulation, fmt, out)
                seconds = time.perf_counter() - t0
                size = sum(f.stat().st_size for f in files) / 1e6
                print(f"| {fmt} | {formulation} | {seconds:.2f} | {size:.1f} | {len(files)} |", flush=True)
                for f in files:
                    f.unlink()


if __name__ == "__main__":
    main()
