"""Siconos's side of benchmarks.peers.bench_peers: a plain Siconos script, run by the system interpreter.

    /usr/bin/python3 -I benchmarks/peers/siconos_peer.py serve      (requests on stdin, one JSON object a line)
    /usr/bin/python3 -I benchmarks/peers/siconos_peer.py methods    (the solver names this Siconos has, per kind)

It imports numpy, scipy, h5py and siconos.numerics only (never the workbench), so what it times is what
a Siconos user gets. Each request names a file, its kind (local / global), its contact dimension d and a
Siconos solver; the script

1. reads the problem as Siconos reads it (untimed): a Siconos ``.dat`` file with Siconos's own reader
   (``frictionContact_new_from_filename`` / ``globalFrictionContact_new_from_filename``); an FCLib
   HDF5 file the way Siconos's FCLib reader builds it (``frictionContact_fclib_read``: W as a
   sparse-block matrix of d x d blocks through ``SBM_from_csparse``; ``globalFrictionContact_fclib_read``:
   M and H sparse, M expanded from one triangle as :func:`symmetric` says), since Debian's build has no
   FCLib reader. fc2d_driver takes dense or sparse-block
   storage only, so a 2D local problem stored as a CSparse matrix is turned into d x d blocks here too;
2. the first time it sees a (file, solver) pair, and before every solve when the request says "warm",
   solves once untimed with a few iterations on a problem read apart (the first driver call of a process
   costs far more than the next: library loading, first allocations; on small problems a solve right
   after other work pays for cold caches);
3. reads the problem again and times the solve (the process ends, exit code 1, if reading and solving
   run READ_ALLOWANCE seconds past the request's time limit); with "inner": n, n times, each on a problem read anew, the medians answered: ``call`` from the creation of the
   SolverOptions to the driver's return, ``solver`` the driver alone. 3D local problems go to
   fc3d_driver, 2D local ones to fc2d_driver, 3D global ones to gfc3d_driver. Siconos 4.4 has no 2D
   global solver: a 2D global problem is condensed by Siconos's own
   ``globalFrictionContact_reformulation_FrictionContact`` (timed, part of the solver time), put
   into 2 x 2 blocks (untimed, storage only) and solved by fc2d_driver (timed);
4. writes r (and v for global problems) to the .npz file named by the request and answers one JSON line
   with Siconos's return code, its own error and iteration count and the two times.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import warnings

import h5py
import numpy as np
import scipy.sparse as sp

try:   # the swig typemap that hands NM_SPARSE matrices to Python looks for this module by name
    import scipy.sparse.coo  # noqa: F401
except ImportError:
    pass
import siconos.numerics as sn

warnings.simplefilter("ignore")     # siconos warns of int32 -> int64 index conversions
#: iterations of the untimed first solve of a (file, solver) pair
WARM_ITER = 3
#: seconds allowed for that untimed solve
READ_SECONDS = 120.0
#: seconds allowed for reading the problem, on top of the time limit of the timed solve
READ_ALLOWANCE = 5.0
#: solver names by kind: every Siconos solver of that problem class whose constant exists here (the
#: GAMS ones need a GAMS licence; ENUM is exhaustive: small 2D problems only, see ENUM_MAX_CONTACTS)
CANDIDATES = {
    "fc3d": ("NSGS", "NSN_AC", "NSN_FB", "NSN_NM", "PROX", "ADMM", "FPP", "EG", "VI_FPP", "VI_EG", "ACLMFP",
             "DSFP", "HP", "TFP", "PFP", "NSGSV", "SOCLCP", "NSN_AC_TEST"),
    "fc2d": ("NSGS", "CPG", "LEMKE", "ENUM"),
    "gfc3d": ("NSGS_WR", "NSN_AC_WR", "PROX_WR", "ADMM_WR", "ADMM", "NSN_AC", "IPM", "NSGS", "DSFP_WR", "TFP_WR",
              "NSGSV_WR", "VI_FPP", "VI_EG", "ACLMFP"),
}
CANDIDATES["gfc2d"] = CANDIDATES["fc2d"]
PREFIX = {"fc3d": "SICONOS_FRICTION_3D_", "fc2d": "SICONOS_FRICTION_2D_", "gfc3d": "SICONOS_GLOBAL_FRICTION_3D_",
          "gfc2d": "SICONOS_FRICTION_2D_"}
ENUM_MAX_CONTACTS = 10


def family(kind: str, d: int) -> str:
    return ("g" if kind == "global" else "") + f"fc{d}d"


def methods() -> dict:
    return {fam: [m for m in names if hasattr(sn, PREFIX[fam] + m)] for fam, names in CANDIDATES.items()}


def csc64(A) -> sp.csc_matrix:
    """A as CSC with 64-bit indices (siconos's CS_INT; int32 would be converted with a warning)."""
    A = sp.csc_matrix(A)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    return A


def blocks(W, d: int):
    """The NumericsMatrix of W in d x d sparse blocks (Siconos's SBM_from_csparse)."""
    W = csc64(W)
    info, sbm = sn.SBM_from_csparse(d, W)
    if info:
        raise RuntimeError(f"SBM_from_csparse failed ({info})")
    return sn.NM_new_SBM(W.shape[0], W.shape[1], sbm), sbm


def fclib_matrix(g) -> sp.csc_matrix:
    """An FCLib sparse group (m, n, nz, p, i, x) as Siconos's FCLib reader takes it: nz = -1 CSC, nz = -2
    CSR, nz >= 0 triplet with i the row and p the column (as Siconos writes them)."""
    m, n, nz = (int(g[k][0]) for k in ("m", "n", "nz"))
    p, i, x = g["p"][()], g["i"][()], g["x"][()]
    if nz == -1:
        return sp.csc_matrix((x[:p[n]], i[:p[n]], p), shape=(m, n))
    if nz == -2:
        return sp.csr_matrix((x[:p[m]], i[:p[m]], p), shape=(m, n)).tocsc()
    return sp.coo_matrix((x[:nz], (i[:nz], p[:nz])), shape=(m, n)).tocsc()


def symmetric(M: sp.csc_matrix) -> sp.csc_matrix:
    """M, or T + T^T - diag(T) when M holds one triangle only: LMGC90 dumps (CubeH8,
    LMGC_GlobalFrictionContactProblem00046) store the upper triangle of the symmetric mass matrix, which
    Siconos's FCLib reader would take as the whole M, a different problem from the one the workbench
    reads (workbench.io.fclib expands it the same way); both sides must solve the same problem."""
    C = M.tocoo()
    off = C.row != C.col
    if not off.any() or not (np.all(C.row[off] < C.col[off]) or np.all(C.row[off] > C.col[off])):
        return M
    return (M + M.T - sp.diags(M.diagonal())).tocsc()


class Problem:
    """A problem as Siconos holds it; ``keep`` holds the arrays Siconos points into."""

    def __init__(self, path: str, kind: str, d: int, n_dof: int = 0):
        self.fam, self.n_dof = family(kind, d), n_dof
        self.keep = []
        if path.endswith((".hdf5", ".h5")):
            self.obj = self._fclib(path, kind)
        elif kind == "global":
            self.obj = sn.globalFrictionContact_new_from_filename(path)
        else:
            self.obj = sn.frictionContact_new_from_filename(path)
            if d == 2 and self.obj.M.storageType == sn.NM_SPARSE:
                self.obj = self.in_blocks(self.obj)
        self.n = self.obj.dimension * self.obj.numberOfContacts

    def in_blocks(self, local):
        M, sbm = blocks(sn.NM_csc(local.M), local.dimension)
        q, mu = np.array(local.q), np.array(local.mu)
        self.keep += [sbm, q, mu]
        return sn.FrictionContactProblem(local.dimension, M, q, mu)

    def _fclib(self, path: str, kind: str):
        with h5py.File(path, "r") as f:
            if kind == "local":
                g = f["fclib_local"]
                d = int(g["spacedim"][0])
                M, sbm = blocks(fclib_matrix(g["W"]), d)
                q, mu = g["vectors/q"][()], g["vectors/mu"][()]
                self.keep += [sbm, q, mu]
                return sn.FrictionContactProblem(d, M, q, mu)
            g = f["fclib_global"]
            p = sn.GlobalFrictionContactProblem()
            p.dimension = int(g["spacedim"][0])
            M, H = csc64(symmetric(fclib_matrix(g["M"]))), csc64(fclib_matrix(g["H"]))
            q, b, mu = g["vectors/f"][()], g["vectors/w"][()], g["vectors/mu"][()]
            p.numberOfContacts = mu.size
            p.M, p.H, p.q, p.b, p.mu = M, H, q, b, mu
            self.keep += [M, H, q, b, mu]
            return p


def solve(problem: Problem, method: str, tol: float, max_iter: int) -> dict:
    """One solve, timed; the answer (r, v, Siconos's info, error, iterations, seconds)."""
    fam, p, n = problem.fam, problem.obj, problem.n
    excluded = 0.0
    t0 = time.perf_counter()
    options = sn.SolverOptions(getattr(sn, PREFIX[fam] + method))
    options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = max_iter
    options.dparam[sn.SICONOS_DPARAM_TOL] = tol
    r, u = np.zeros(n), np.zeros(n)
    v = np.zeros(problem.n_dof) if fam == "gfc3d" else None
    t1 = time.perf_counter()
    if fam == "fc3d":
        info = sn.fc3d_driver(p, r, u, options)
    elif fam == "fc2d":
        info = sn.fc2d_driver(p, r, u, options)
    elif fam == "gfc3d":
        info = sn.gfc3d_driver(p, r, u, v, options)
    else:   # gfc2d: Siconos's own condensation, timed; the storage change, not
        local = sn.globalFrictionContact_reformulation_FrictionContact(p)
        c0 = time.perf_counter()
        local = problem.in_blocks(local)
        excluded = time.perf_counter() - c0
        info = sn.fc2d_driver(local, r, u, options)
    t2 = time.perf_counter()
    return {"info": int(info), "iterations": int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE]),
            "error": float(options.dparam[sn.SICONOS_DPARAM_RESIDU]), "solver_s": t2 - t1 - excluded,
            "call_s": t2 - t0 - excluded, "r": r, "v": v}


def guarded(seconds: float, fn, *args):
    """fn(*args), the process ending (exit code 1) if it runs past ``seconds``: faulthandler's watchdog
    thread ends it even inside Siconos's C code, and sleeps until then (the benchmark's own process
    sleeps too while it waits, so nothing wakes during a timed solve)."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        return fn(*args)
    finally:
        faulthandler.cancel_dump_traceback_later()


def read_and_solve(req: dict, n_dof: int) -> dict:
    """A problem read anew, then solved (timed). The watchdog is armed before the reading, so that its
    thread is asleep again when the clock starts."""
    problem = Problem(req["path"], req["kind"], int(req["d"]), n_dof)
    return solve(problem, req["method"], req["tol"], req["max_iter"])


def answer(req: dict, warm: set) -> dict:
    path, kind, d, method = req["path"], req["kind"], int(req["d"]), req["method"]
    n_dof = int(req.get("n_dof") or 0)
    if req.get("warm") or (path, method) not in warm:
        guarded(READ_SECONDS, solve, Problem(path, kind, d, n_dof), method, req["tol"], WARM_ITER)
        warm.add((path, method))
    runs = []
    for _ in range(int(req.get("inner", 1))):
        runs.append(guarded(req["time_limit"] + READ_ALLOWANCE, read_and_solve, req, n_dof))
    out = runs[-1]
    for key in ("solver_s", "call_s"):
        out[key] = float(np.median([run[key] for run in runs]))
    arrays = {"r": out.pop("r")}
    v = out.pop("v")
    if v is not None:
        arrays["v"] = v
    np.savez(req["out"], **arrays)
    return out


def serve() -> None:
    """Answer requests, one JSON line each; an error of Siconos is an answer {"failure": message}, a
    solve past its time limit ends the process (exit code 1)."""
    # Siconos's solvers print to the C stdout: the answers get a descriptor of their own, and fd 1 goes
    # to /dev/null
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    warm = set()
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "methods":
            out = methods()
        else:
            try:
                out = answer(req, warm)
            except Exception as exc:  # noqa: BLE001 - Siconos raises RuntimeError with its own message
                text = str(exc).strip().splitlines()
                out = {"failure": f"{type(exc).__name__}: {text[-1] if text else ''}"}
        answers.write(json.dumps(out) + "\n")
        answers.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["methods"]:
        print(json.dumps(methods()))
    elif sys.argv[1:] == ["serve"]:
        serve()
    else:
        sys.exit(__doc__)
