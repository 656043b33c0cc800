"""Time to generate the settled and unsettled 320-sphere datasets (Mazhar et al. 2014 section 5.1).

    python -m benchmarks.bench_datasets [--out DIR] [--set KEY=VALUE ...] [--datasets settled,unsettled]

Runs :func:`problems.generator.generate_dataset` for each dataset (sequentially, in this process) into
DIR (default: a temporary folder, so the committed files are left alone), and prints a markdown table:
wall time, steps, step size, solver, contacts and kinetic energy of the stored step, mean and maximum
iterations per step, and the machine's core count and load average (other processes slow it down:
read the wall times with the load next to them). The target is at most 10 minutes for both on 2 cores;
results are recorded in README.md (Datasets).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from problems.generator import generate_dataset
from workbench.commands._args import key_value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="output folder (default: a temporary one)")
    p.add_argument("--datasets", default="settled,unsettled")
    p.add_argument("--set", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                   help="packing parameter passed to generate_dataset (h, duration, solver, ...)")
    args = p.parse_args(argv)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        rows = []
        total = 0.0
        for name in args.datasets.split(","):
            t0 = time.perf_counter()
            paths = generate_dataset(name, out, **dict(args.set))
            wall = time.perf_counter() - t0
            total += wall
            meta = json.loads(paths[1].read_text())
            g, s = meta["generator"], meta["settling"]
            rows.append(f"| {name} | {meta['n_bodies']} | {g['steps']} | {g['h']:g} | {g['formulation']} x "
                        f"{g['solver']} | {g['max_iter']} | {meta['n_contacts']} | {meta['kinetic_energy']:.4g} | "
                        f"{s['mean_iterations']:.1f} | {s['max_iterations']} | {wall:.1f} |")
        print(f"cores available: {os.cpu_count()}; load average (1, 5, 15 min) before: "
              f"{' '.join(f'{x:.1f}' for x in load)}, after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("| dataset | spheres | steps | h [s] | method | max iterations/step | contacts | kinetic energy [J] "
              "| mean iterations | max iterations | wall [s] |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(rows))
        print(f"total wall time: {total:.1f} s ({total / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
