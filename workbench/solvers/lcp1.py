"""LCP1 of Anitescu and Hart 2003: successive convex relaxation, the convex QP (15) re-solved until Lambda settles.

The QP (15) of Anitescu and Hart 2003, in the velocities, with Gamma_j >= 0 per contact:

    min_v 1/2 v^T M v - k^T v   s.t.  u_n,j + mu_j t_i . u_t,j >= -Gamma_j  (all contacts j, directions i),
                                      G^T v + b_G = 0,

u = D^T v + b (Anitescu and Hart 2003 writes n^T v + Delta and d_i^T v; b_t, usually 0, is carried along). Its
multiplier y_ji >= 0 of row (j, i) is an impulse y_ji (n_j + mu_j t_i), i.e. c_n,j = sum_i y_ji and
beta_ji = mu_j y_ji. The workbench solves the QP's dual in y, which needs only N (local problems
work too) and is built from the LCP model's blocks and its one pyramid construction
(formulations.lcp_pyramid: ``Pyramid.S``, ``LCPModel.edge_qp``):

    min_{y >= 0}  1/2 y^T Q y + (S^T q + Gamma (x) e)^T y,    Q = S^T H S,  H = T^T N_c T,  q = T^T r_c,

with S: y -> z (c_n = sum_i y_i, beta_i = mu y_i, lambda = 0). The velocity solution of (15) is unique
(M is SPD); the impulses need not be. Lambda(v) (eq. 17) is the model's ``slip``.

Outer loop (Anitescu and Hart 2003 section 4.A, steps 4-7): Gamma = 0; solve; Lambda^k = Lambda(v^k);
Gamma = mu Lambda^k; stop when ||Lambda^k - Lambda^(k-1)||_inf <= lambda_tol (params["lambda_tol"],
[m/s]; default tol times the velocity scale; the paper used 1e-5) or after options.max_iter outer
iterations (default 100). At a fixed point z = [c_n, beta, Lambda] solves the LCP (6)-(7); the
iteration is a contraction for small enough mu when the frictionless configuration can be
disassembled (Theorem 4.1), and need not converge otherwise. LCP2 (lcp2.py) stops after the first
solve.

Compiled once. The cvxpy problem (on O(1) data: y = impulse scale * x, Q and the linear term divided
by the velocity scale) is compiled with get_problem_data once; between outer iterations only its
linear term changes, so the QP solver object is set up once and updated in place through its own
API (workbench.solvers.compiled, the session the fixed points use too): Clarabel ``DefaultSolver.update(q=...)`` (presolve off, which data updates require) or OSQP
``update(q=...)`` (which also warm-starts from the previous solution); cvxpy's unpack_results maps
every solution back (build_seconds include the compile and the solver's set-up; solve_seconds the
outer loop). params["qp_solver"]: "clarabel" (default; tolerances max(tol^2, 1e-13), one
thread) or "osqp" (eps_abs = eps_rel = tol, solution polishing on). iterations = outer iterations;
info["inner_iterations"] = the QP solver's iterations summed over all solves; history (a
:class:`~workbench.solvers.recorder.Recorder`): one row per outer iteration, objective = the relaxed
dual objective at the impulses of z, error = lcp_residual, extras inner_iterations, lambda_change and
the normal-velocity error of Anitescu and Hart 2003; stop cause CONVERGED (Lambda settled, or LCP2's single solve),
MAX_ITER, TIMEOUT or FAILED (a QP solve failed).

Time limit: each QP solve gets the run's time left as the QP solver's own limit, which that solver
checks between its iterations; one iteration (a factorisation) cannot be interrupted. Before each
re-solve the run asks :meth:`~workbench.solvers.recorder.Recorder.affords` with two of the last
solve's iterations (the starting point's factorisation and one step: the least a solve does) and
stops with TIMEOUT, keeping the last point, when they would end too far past the limit; the first
solve, which no earlier one forecasts, is forecast from its size by qdldl's factorisations of the
leading blocks of its KKT matrix (:func:`kkt_pattern`, Recorder.affords_first), a stand-in for the QP
solver's own. Before anything is compiled, the address space the QP would map is checked against
the process's RLIMIT_AS (:func:`qp_would_not_fit`). The cvxpy
compile and the QP solver's set-up happen before the clock starts (build_seconds): they are not
counted in the limit, and they cannot be interrupted either.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from workbench.errors import InputError
from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.compiled import CompiledSession
from workbench.solvers.cvxpy_base import interior_point_tolerance
from workbench.solvers.recorder import Recorder

__all__ = ["LCP1Solver", "CompiledQP", "QP_SOLVERS"]

QP_SOLVERS = ("clarabel", "osqp")
#: the address space [bytes] the QP's compile, its solver's set-up and its solves map, per stored
#: entry of Q, and beyond them: measured as the growth of VmSize over the three on sphere packings of
#: 1,500, 4,500 and 6,000 spheres (Q of 1.6, 4.9 and 6.6 million entries: 183, 210 and 223 bytes an
#: entry, growing with the fill), with a margin for larger ones
QP_BYTES_PER_ENTRY, QP_BYTES_FLOOR = 256, 64 * 2**20


def qp_would_not_fit(Q: sp.spmatrix) -> str | None:
    """None, or why the QP of ``Q`` is not started: the address space it would map
    (QP_BYTES_PER_ENTRY per entry of Q, and QP_BYTES_FLOOR) exceeds what the process's RLIMIT_AS
    leaves (workbench.limits.address_space_left). Clarabel (Rust) aborts the process on an allocation
    that fails; one line is said instead, and the run is recorded as failed."""
    from workbench.limits import address_space_left
    left = address_space_left()
    needed = QP_BYTES_PER_ENTRY * Q.nnz + QP_BYTES_FLOOR
    if left is None or needed <= left:
        return None
    return (f"the QP of {Q.shape[0]:,} unknowns ({Q.nnz:,} entries) would need about {needed / 2**20:,.0f} MiB "
            f"of address space and {left / 2**20:,.0f} MiB is left under this process's limit (RLIMIT_AS, "
            "ulimit -v): not started")


def kkt_pattern(Q: sp.spmatrix) -> sp.csc_matrix:
    """The KKT matrix an interior-point or ADMM QP solver factorises for min 1/2 x^T Q x + c^T x,
    x >= 0: [[Q + I, I], [I, -I]], its rows interleaved (x_i beside its slack s_i), so that its leading
    blocks hold both and have its structure (the probes of workbench.solvers.recorder.forecast_first)."""
    n = Q.shape[0]
    Qc = sp.coo_matrix(Q)
    i = np.arange(n)
    rows = np.concatenate([2 * Qc.row, 2 * i, 2 * i, 2 * i + 1, 2 * i + 1])
    cols = np.concatenate([2 * Qc.col, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1])
    vals = np.concatenate([Qc.data, np.ones(n), np.ones(n), np.ones(n), -np.ones(n)])
    return sp.csc_matrix((vals, (rows, cols)), shape=(2 * n, 2 * n))


def _ldl(K: sp.spmatrix):
    import qdldl
    return qdldl.Solver(K)


class CompiledQP:
    """min 1/2 x^T Q x + c^T x s.t. x >= 0, compiled by cvxpy once (workbench.solvers.compiled);
    ``solve(c)`` re-solves with a new c through the QP solver's update API. Returns (x, inner
    iterations, cvxpy status)."""

    def __init__(self, Q: sp.spmatrix, c: np.ndarray, qp_solver: str, options: SolveOptions):
        import cvxpy as cp

        if qp_solver not in QP_SOLVERS:
            raise InputError(f"qp_solver must be one of {', '.join(QP_SOLVERS)}, got {qp_solver!r}")
        self.x = cp.Variable(c.shape[0], name="y_scaled")
        cvx = cp.Problem(cp.Minimize(0.5 * cp.quad_form(self.x, cp.psd_wrap(Q)) + c @ self.x), [self.x >= 0])
        if qp_solver == "clarabel":
            t = interior_point_tolerance(options.tol)
            opts = {"tol_gap_abs": t, "tol_gap_rel": t, "tol_feas": t, "tol_ktratio": min(1e-6, t), "max_threads": 1}
        else:
            opts = {"eps_abs": options.tol, "eps_rel": options.tol, "max_iter": 100000, "polishing": True}
        self.which = qp_solver
        self.session = CompiledSession(cvx, qp_solver, opts, verbose=options.verbose, warm_start=True)
        self.key = "c" if qp_solver == "clarabel" else "q"
        self.base = self.session.vector(self.key)
        self.cols = self.session.columns(self.x)
        if not np.allclose(self.base[self.cols], c, rtol=1e-12, atol=1e-14):
            # the layout of cvxpy's compiled data changed: fail loudly rather than solve a wrong QP
            raise RuntimeError("cvxpy's compiled linear term does not hold c at the variable's columns")
        self.current = c.copy()
        self.compile_seconds, self.setup_seconds = self.session.compile_seconds, self.session.setup_seconds

    def solve(self, c: np.ndarray, seconds_left: float | None = None) -> tuple[np.ndarray | None, int, str]:
        import cvxpy as cp

        if not np.array_equal(c, self.current):
            self.base[self.cols] = c
            self.session.update(self.key, self.base)
            self.current = c.copy()
        iters = self.session.solve(seconds_left)
        cvx = self.session.cvx
        ok = cvx.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) and self.x.value is not None
        return (np.asarray(self.x.value, dtype=float) if ok else None), iters, str(cvx.status)


class LCP1Solver(Solver):
    """Successive convex relaxation on an ``lcp`` model (module docstring)."""

    name = "lcp1"
    summary = "Anitescu and Hart 2003 LCP1: QP (15) with Gamma = mu Lambda(v) repeated to a fixed point (cvxpy, compiled once)"
    model_kinds = ("lcp",)
    compiled = True
    params = (
        Param("qp_solver", str, "clarabel", "the QP solver, updated in place between solves", QP_SOLVERS),
        Param("lambda_tol", float, None, "stop when Lambda changes by at most this [m/s] (None: tol x the "
              "velocity scale)"),
    )
    #: outer iterations when options.max_iter is None (LCP2 fixes them at 1)
    default_max_iter = 100

    def solve(self, model, options: SolveOptions) -> SolveResult:
        mu, m_C, n_c = model.problem.mu, model.m_C, model.problem.n_contacts
        sc = model.scale
        S = model.pyramid.S
        Q, base = model.edge_qp()
        Q = Q * (sc.impulse / sc.velocity)
        lambda_tol = options.tol * sc.velocity if options.params["lambda_tol"] is None \
            else float(options.params["lambda_tol"])
        too_large = qp_would_not_fit(Q)
        if too_large is not None:      # before cvxpy or the QP solver allocates anything
            result = self.new_result(model)
            result.message, result.solver_status = too_large, "not started"
            return Recorder(options, "lcp_residual").finish(result, StopCause.FAILED)
        qp = CompiledQP(Q, base / sc.velocity, options.params["qp_solver"], options)
        result = self.new_result(model)
        result.build_seconds += qp.compile_seconds + qp.setup_seconds
        result.info.update(compile_seconds=qp.compile_seconds, qp_setup_seconds=qp.setup_seconds)
        cap = self.max_iter(options)
        slip = np.zeros(n_c)
        inner, z, outer = 0, None, 0
        rec = Recorder(options, "lcp_residual", ("inner_iterations", "lambda_change", "normal_velocity_error",
                                                 "mean_normal_velocity_error", "active_contacts"))
        # LCP2 (one solve) is done after its solve; LCP1 stops at its cap
        stop = StopCause.CONVERGED if cap == 1 else StopCause.MAX_ITER
        least_solve = None
        for k in range(1, cap + 1):
            # a QP solve stops itself at its limit, but only between two of its iterations, each a
            # factorisation that cannot be interrupted: one forecast by the last solve's, plus its
            # starting point's, must end in time (Recorder.affords)
            if k > 1 and not rec.affords(least_solve):
                stop = StopCause.TIMEOUT
                break
            # the first solve's first iteration (a factorisation of the QP's KKT matrix) has no earlier
            # one to be forecast by: forecast from its size (Recorder.affords_first), by qdldl's LDL^T
            if k == 1 and options.time_limit is not None and not rec.affords_first(kkt_pattern(Q), _ldl):
                result.message = "the first QP solve's factorisation is forecast to end past the time limit"
                stop = StopCause.TIMEOUT
                break
            # each QP solve gets the run's time left as its own limit (its point, if any, is kept)
            left = None if options.time_limit is None else options.time_limit - rec.elapsed()
            t0 = rec.elapsed()
            x, iters, status = qp.solve((base + np.repeat(mu * slip, m_C)) / sc.velocity, left)
            least_solve = 2.0 * (rec.elapsed() - t0) / (iters + 1)
            inner += iters
            result.solver_status = status
            if x is None:
                timed_out = rec.timed_out()
                result.message = f"QP solve {k} {'stopped at the time limit' if timed_out else 'failed'} ({qp.which}: {status})"
                stop = StopCause.TIMEOUT if timed_out else StopCause.FAILED
                break
            outer = k
            z = S @ (sc.impulse * x)
            new = model.slip(z)
            z[model.i_lambda] = new
            change = float(np.abs(new - slip).max())
            slip = new
            if rec.keep:
                m = model.measures(z)
                rec.record(k, model.objective(*model.recover(z)), m["lcp_residual"], iters, change,
                           m["normal_velocity_error"], m["mean_normal_velocity_error"], m["active_contacts"])
            if change <= lambda_tol:
                result.solver_status = f"converged ({status})"
                stop = StopCause.CONVERGED
                break
            if rec.timed_out():
                stop = StopCause.TIMEOUT
                break
        result.iterations = outer
        result.info.update(outer_iterations=outer, inner_iterations=inner, lambda_tol=lambda_tol,
                           qp_solver=qp.which)
        if z is not None and x is not None:
            result.info["z"] = z
            result.nu, result.v = model.recover(z)
        return rec.finish(result, stop)
