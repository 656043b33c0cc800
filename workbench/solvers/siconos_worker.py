"""Runs one Siconos fc3d solve in the interpreter that has python3-siconos (Debian's system Python).

Never imported by the workbench: :mod:`workbench.solvers.siconos` runs it as a script,

    /usr/bin/python3 -I siconos_worker.py IN.npz OUT.npz CODEC.py    one solve
    /usr/bin/python3 -I siconos_worker.py --probe            prints {"version", "methods"} as JSON

so it imports nothing but numpy, scipy and siconos (a crash of a Siconos solver, which happens,
kills this process only), and the workbench's sparse .npz codec (workbench/io/sparse_npz.py, loaded
from the file CODEC.py). IN.npz holds the 3D local problem u = W r + q (W in CSC, by that codec), mu, the
initial r, the method NAME of SICONOS_FRICTION_3D_NAME, tol, max_iter (0: Siconos's default) and
iparam/dparam overrides (index, value pairs). OUT.npz receives r, u, info (0: Siconos says it
converged), iterations, error (Siconos's own), seconds (fc3d_driver alone). It prints "ready" on stdout
just before fc3d_driver: the caller's time limit counts from that line.
"""

import importlib.util
import json
import sys
import time

PREFIX = "SICONOS_FRICTION_3D_"


def probe():
    import siconos
    import siconos.numerics as sn

    methods = sorted(k[len(PREFIX):] for k in dir(sn)
                     if k.startswith(PREFIX) and not k.endswith("_STR") and isinstance(getattr(sn, k), int)
                     and hasattr(sn, k + "_STR"))
    print(json.dumps({"version": str(getattr(siconos, "version", "?")), "methods": methods}))


def solve(path_in, path_out, codec_path):
    import numpy as np
    import siconos.numerics as sn

    spec = importlib.util.spec_from_file_location("sparse_npz", codec_path)
    codec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(codec)
    z = np.load(path_in)
    m = int(z["q"].shape[0])
    W = codec.decode_sparse(z, "W")
    problem = sn.FrictionContactProblem(3, W, np.array(z["q"]), np.array(z["mu"]))
    options = sn.SolverOptions(getattr(sn, PREFIX + str(z["method"])))
    options.dparam[sn.SICONOS_DPARAM_TOL] = float(z["tol"])
    if int(z["max_iter"]) > 0:
        options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(z["max_iter"])
    for index, value in z["iparam"]:
        options.iparam[int(index)] = int(value)
    for index, value in z["dparam"]:
        options.dparam[int(index)] = float(value)
    r = np.array(z["r0"], dtype=float)
    u = np.zeros(m)
    print("ready", flush=True)  # the caller's time limit starts now (imports and reading are done)
    t0 = time.perf_counter()
    info = sn.fc3d_driver(problem, r, u, options)
    seconds = time.perf_counter() - t0
    np.savez(path_out, r=r, u=u, info=int(info), iterations=int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE]),
             error=float(options.dparam[sn.SICONOS_DPARAM_RESIDU]), seconds=seconds)


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        probe()
    else:
        solve(*sys.argv[1:4])
