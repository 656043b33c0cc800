"""The plainest Siconos script, to check benchmarks/peers/siconos_peer.py's times against:

    /usr/bin/python3 benchmarks/peers/siconos_plain.py FILE.dat METHOD [REPETITIONS]

reads a local Siconos .dat problem with Siconos's reader, solves it once untimed, then REPETITIONS times
(default 20), each on a problem read anew, to Siconos error 1e-8; prints one JSON line with the
driver's seconds (median, min, max) and Siconos's info of the last solve.
"""

import json
import os
import statistics
import sys
import time

import numpy as np
import siconos.numerics as sn


def once(path: str, method: str) -> tuple[float, int]:
    problem = sn.frictionContact_new_from_filename(path)
    d = problem.dimension
    n = d * problem.numberOfContacts
    options = sn.SolverOptions(getattr(sn, f"SICONOS_FRICTION_{d}D_{method}"))
    options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = 100000
    options.dparam[sn.SICONOS_DPARAM_TOL] = 1e-8
    r, u = np.zeros(n), np.zeros(n)
    driver = sn.fc3d_driver if d == 3 else sn.fc2d_driver
    t0 = time.perf_counter()
    info = driver(problem, r, u, options)
    return time.perf_counter() - t0, info


if __name__ == "__main__":
    # some Siconos solvers print to the C stdout: the answer keeps a descriptor of its own
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    path, method = sys.argv[1], sys.argv[2]
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    once(path, method)
    times, info = [], None
    for _ in range(repetitions):
        seconds, info = once(path, method)
        times.append(seconds)
    answer.write(json.dumps({"median": statistics.median(times), "min": min(times), "max": max(times), "info": info}) + "\n")
    answer.close()
