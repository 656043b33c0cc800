"""Siconos's frictional-contact solvers as side-by-side peers: the solver family ``siconos:NAME``.

NAME is any SICONOS_FRICTION_3D_NAME of Siconos numerics (NSGS, NSN_AC, NSN_FB, ADMM, FPP, EG,
ACLMFP, PROX, ...). Siconos is Debian's python3-siconos (4.4 or later; 4.5.0 here), built for the
system interpreter only (``apt-get install python3-siconos python3-scipy``), so each solve runs
:mod:`workbench.solvers.siconos_worker` in a subprocess of that interpreter (``SICONOS_PYTHON``,
/usr/bin/python3 or $WORKBENCH_SICONOS_PYTHON; isolated, -I, so that the worker's folder, which
holds this module, does not shadow the siconos package): the problem goes over as an .npz file (W = N sparse,
q = r, mu, the initial impulses), and r, u, Siconos's own error and iteration count, its return code
and the wall time of fc3d_driver come back (info["u_mismatch"]: Siconos's u against the workbench's
N r + q, relative; a check of the hand-over). A Solver crash kills the subprocess only. Results are
judged by the workbench's metrics like every other solver; Siconos's claims go to ``info``.

Model: :class:`formulations.ncp.NCPModel` (the exact problem, local form u = N nu + r). Problems with
joints have no fc3d form and are refused. Planar problems (d = 2) are embedded in 3D: each contact
gets a second tangent with W = W_tt of that contact on the diagonal, no coupling, q = 0. The
embedding is exact: on that direction u_t2 = r_t2, and Coulomb's law (stick: u_t = 0; slide:
u_t = -a r_t, a >= 0) forces (1 + a) r_t2 = 0, so r_t2 = 0 and the other components solve the
planar problem, with the same Siconos error.

Options: tol -> dparam[SICONOS_DPARAM_TOL] (on Siconos's own error), max_iter ->
iparam[SICONOS_IPARAM_MAX_ITER] (unset: the method's default), time_limit -> the subprocess is
killed time_limit + 1 s after it reported itself ready (Siconos imported, problem read; that start-up,
at most START_UP_SECONDS, is not counted in the limit and is recorded as info["startup_seconds"]), status
"timeout". ``params``: "iparam" / "dparam", maps of index
to value written into the SolverOptions. ``solve_seconds`` is fc3d_driver's wall time alone
(info["process_seconds"] includes start-up and the file transfer). Stop cause: CONVERGED (Siconos's
info 0), MAX_ITER (it used all of max_iter), STALLED (any other info), TIMEOUT, FAILED (the subprocess
died). History: one row for the returned point, error = Siconos's own error ("siconos_reported_error",
its claim; the workbench judges by its own siconos_error).

``get_solver("siconos:NAME")`` resolves through the family entry "siconos:*" of SOLVERS;
``list_solvers`` shows the members in ``LISTED``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from workbench.errors import InputError, UnsupportedError, unknown
from workbench.io.sparse_npz import encode_sparse
from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, StopCause
from workbench.solvers.ncp_base import NCPSolver
from workbench.solvers.recorder import Recorder

__all__ = ["SiconosSolver", "SICONOS_PYTHON", "LISTED", "probe"]

SICONOS_PYTHON = os.environ.get("WORKBENCH_SICONOS_PYTHON", "/usr/bin/python3")
WORKER = Path(__file__).with_name("siconos_worker.py")
#: the sparse .npz codec, loaded by the worker from its file (it cannot import the workbench)
CODEC = Path(__file__).parents[1] / "io" / "sparse_npz.py"
#: Siconos's info -> the stop cause: 0 is its own convergence; any other info is MAX_ITER when it used
#: every iteration options.max_iter allowed, else STALLED
SICONOS_STOPS = {0: StopCause.CONVERGED}
#: members shown by list_solvers (any other NAME Siconos knows works through get_solver)
LISTED = ("NSGS", "NSN_AC", "NSN_FB", "ADMM", "FPP", "EG", "ACLMFP", "PROX")
#: seconds allowed for the interpreter's start-up, Siconos's import and reading the problem; not part of a
#: time limit, which counts from the worker's "ready" line (imports are never inside a timed interval)
START_UP_SECONDS = 30.0
#: seconds a worker may take past its time limit to answer before it is killed (writing its answer)
GRACE_SECONDS = 1.0


def _run_worker(argv: list[str], time_limit: float | None) -> tuple[int | None, str, float]:
    """Run the worker: (exit code, or None when it was killed at its limit; its stderr; the seconds of its
    start-up). It prints "ready" once Siconos is imported and the problem read: the time limit (plus
    GRACE_SECONDS) counts from there, the start-up has START_UP_SECONDS of its own."""
    import selectors
    import time

    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err) as proc:
        def wait_line(seconds: float | None) -> bytes | None:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                return proc.stdout.readline() if sel.select(seconds) else None
        line = wait_line(START_UP_SECONDS if time_limit is not None else None)
        startup = time.monotonic() - t0
        try:
            if line is None:
                raise subprocess.TimeoutExpired(argv, START_UP_SECONDS)
            proc.wait(None if time_limit is None else time_limit + GRACE_SECONDS)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        err.seek(0)
        return code, err.read().decode("utf-8", "replace"), startup


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


@functools.lru_cache(maxsize=None)
def probe(python: str) -> tuple[dict | None, str]:
    """({"version", "methods"}, "") when ``python`` runs Siconos, else (None, why not)."""
    hint = "apt-get install python3-siconos python3-scipy"
    if not Path(python).is_file():
        return None, f"no interpreter {python} for Siconos ({hint})"
    try:
        proc = subprocess.run([python, "-I", str(WORKER), "--probe"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} could not be run for Siconos: {exc}"
    if proc.returncode != 0:
        return None, f"{python} cannot import siconos ({hint}): {_last_line(proc.stderr)}"
    return json.loads(proc.stdout), ""


def embed_3d(problem) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray]:
    """(W, q, index) of the 3D local problem: W = N, q = r for d = 3; for d = 2 the embedding of the
    module docstring, ``index`` being the 3D positions of the 2D unknowns."""
    W, q = problem.N.tocsc(), np.asarray(problem.r)
    if problem.d == 3:
        return W, q, np.arange(q.size)
    n_c = problem.n_contacts
    index = (3 * np.arange(n_c)[:, None] + np.arange(2)[None, :]).reshape(-1)
    P = sp.csc_matrix((np.ones(index.size), (index, np.arange(index.size))), shape=(3 * n_c, 2 * n_c))
    extra = np.zeros(3 * n_c)
    extra[2::3] = problem.N_diagonal_blocks[:, 1, 1]
    W3 = (P @ W @ P.T + sp.diags(extra)).tocsc()
    return W3, P @ q, index


class SiconosSolver(NCPSolver):
    params = (Param("iparam", dict, None, "{index: value} written into Siconos's SolverOptions.iparam"),
              Param("dparam", dict, None, "{index: value} written into Siconos's SolverOptions.dparam"))

    def __init__(self, method: str):
        self.method = method
        self.name = f"siconos:{method}"
        self.summary = f"Siconos fc3d {method} (Debian python3-siconos, in a subprocess)"
        info, _ = probe(SICONOS_PYTHON)
        if info is not None and method not in info["methods"]:
            raise InputError(f"Siconos {info['version']}: "
                             f"{unknown('solver', self.name, [f'siconos:{m}' for m in info['methods']])}")

    def availability(self) -> tuple[bool, str]:
        info, why = probe(SICONOS_PYTHON)
        return info is not None, why

    def solve(self, model, options: SolveOptions) -> SolveResult:
        problem = model.problem
        if problem.n_bilateral:
            raise UnsupportedError(f"{self.name} solves contacts only; {problem.name or 'this problem'} has "
                                   f"{problem.n_bilateral} joint unknowns")
        result = self.new_result(model)
        W, q, index = embed_3d(problem)
        r0 = np.zeros(q.size)
        if options.warm_start is not None:
            r0[index] = np.asarray(options.warm_start, dtype=float)
        pairs = {key: np.array([[int(i), v] for i, v in (options.params[key] or {}).items()],
                               dtype=float).reshape(-1, 2) for key in ("iparam", "dparam")}
        rec = Recorder(options, "siconos_reported_error")
        with tempfile.TemporaryDirectory(prefix="siconos_") as tmp:
            path_in, path_out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
            np.savez(path_in, **encode_sparse("W", W), q=q, mu=problem.mu, r0=r0,
                     method=self.method, tol=float(options.tol), max_iter=int(self.max_iter(options) or 0), **pairs)
            code, stderr, startup = _run_worker([SICONOS_PYTHON, "-I", str(WORKER), path_in, path_out, str(CODEC)],
                                                options.time_limit)
            result.info["process_seconds"] = rec.elapsed()
            result.info["startup_seconds"] = startup
            if code is None:
                result.message = (f"{self.name} killed after the time limit of {options.time_limit} s (counted from "
                                  f"the end of its start-up, which took {startup:.3g} s)")
                return rec.finish(result, StopCause.TIMEOUT)
            if code != 0:
                result.solver_status = "crash"
                result.message = f"{self.name} crashed (exit {code}): {_last_line(stderr)}"
                return rec.finish(result, StopCause.FAILED)
            out = dict(np.load(path_out))
        seconds = float(out["seconds"])
        result.iterations = int(out["iterations"])
        code = int(out["info"])
        result.solver_status = "converged" if code == 0 else f"not converged (info {code})"
        result.info.update(siconos_info=code, siconos_error=float(out["error"]))
        rec.record(result.iterations, None, float(out["error"]), seconds=seconds)
        stop = SICONOS_STOPS.get(code) or (StopCause.MAX_ITER if options.max_iter is not None
                                           and result.iterations >= options.max_iter else StopCause.STALLED)
        result.nu = np.asarray(out["r"])[index]
        # the u Siconos returns against the workbench's N nu + r (a check of the hand-over)
        u = problem.relative_velocity(result.nu)
        result.info["u_mismatch"] = float(np.linalg.norm(np.asarray(out["u"])[index] - u)
                                          / max(np.linalg.norm(u), np.linalg.norm(problem.r), 1e-300))
        result.v = problem.velocity(result.nu) if problem.is_global else None
        return rec.finish(result, stop, seconds)
