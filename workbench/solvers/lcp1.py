"""LCP1 of seed 003: successive convex relaxation, the convex QP (15) re-solved until Lambda settles.

The QP (15) of seed 003, in the velocities, with Gamma_j >= 0 per contact:

    min_v 1/2 v^T M v - k^T v   s.t.  u_n,j + mu_j t_i . u_t,j >= -Gamma_j  (all contacts j, directions i),
                                      G^T v + b_G = 0,

u = D^T v + b (seed 003 writes n^T v + Delta and d_i^T v; b_t, usually 0, is carried along). Its
multiplier y_ji >= 0 of row (j, i) is an impulse y_ji (n_j + mu_j t_i), i.e. c_n,j = sum_i y_ji and
beta_ji = mu_j y_ji. The workbench solves the QP's dual in y, which needs only N (local problems
work too) and is built from the LCP model's blocks (formulations.lcp_pyramid):

    min_{y >= 0}  1/2 y^T Q y + (S^T q + Gamma (x) e)^T y,    Q = S^T H S,  H = T^T N_c T,  q = T^T r_c,

with S: y -> z (c_n = sum_i y_i, beta_i = mu y_i, lambda = 0). The velocity solution of (15) is unique
(M is SPD); the impulses need not be. Lambda(v) (eq. 17) is the model's ``slip``.

Outer loop (seed 003 section 4.A, steps 4-7): Gamma = 0; solve; Lambda^k = Lambda(v^k);
Gamma = mu Lambda^k; stop when ||Lambda^k - Lambda^(k-1)||_inf <= lambda_tol (params["lambda_tol"],
[m/s]; default tol times the velocity scale; the seed used 1e-5) or after options.max_iter outer
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
info["inner_iterations"] = the QP solver's iterations summed over all solves; history: one row per
outer iteration.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

from workbench.errors import InputError
from workbench.solvers.base import SolveOptions, SolveResult, Solver
from workbench.solvers.compiled import CompiledSession
from workbench.solvers.cvxpy_base import interior_point_tolerance

__all__ = ["LCP1Solver", "CompiledQP", "QP_SOLVERS"]

QP_SOLVERS = ("clarabel", "osqp")


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

    def solve(self, c: np.ndarray) -> tuple[np.ndarray | None, int, str]:
        import cvxpy as cp

        if not np.array_equal(c, self.current):
            self.base[self.cols] = c
            self.session.update(self.key, self.base)
            self.current = c.copy()
        iters = self.session.solve()
        cvx = self.session.cvx
        ok = cvx.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and self.x.value is not None
        return (np.asarray(self.x.value, dtype=float) if ok else None), iters, str(cvx.status)


class LCP1Solver(Solver):
    """Successive convex relaxation on an ``lcp`` model (module docstring)."""

    name = "lcp1"
    summary = "seed 003 LCP1: QP (15) with Gamma = mu Lambda(v) repeated to a fixed point (cvxpy, compiled once)"
    accepts = ("lcp",)
    #: outer iterations when options.max_iter is None (LCP2 fixes it at 1)
    default_outer = 100

    def outer_cap(self, options: SolveOptions) -> int:
        return self.default_outer if options.max_iter is None else int(options.max_iter)

    def solve(self, model, options: SolveOptions) -> SolveResult:
        mu, m_C, n_c = model.problem.mu, model.m_C, model.problem.n_contacts
        sc = model.scale
        n_y = n_c * m_C
        S = sp.csr_matrix((np.concatenate([np.ones(n_y), np.repeat(mu, m_C)]),
                           (np.concatenate([np.repeat(model.i_n, m_C), model.i_beta.ravel()]),
                            np.concatenate([np.arange(n_y), np.arange(n_y)]))), shape=(model.size, n_y))
        Q = (S.T @ model.H @ S).tocsr()
        Q = ((Q + Q.T) * (0.5 * sc.impulse / sc.velocity)).tocsr()
        base = S.T @ model.q
        lambda_tol = float(options.params.get("lambda_tol", options.tol * sc.velocity))
        qp = CompiledQP(Q, base / sc.velocity, options.params.get("qp_solver", "clarabel"), options)
        result = SolveResult(solver=self.name, formulation=model.formulation, status="failed",
                             build_seconds=model.build_seconds + qp.compile_seconds + qp.setup_seconds)
        result.info.update(compile_seconds=qp.compile_seconds, qp_setup_seconds=qp.setup_seconds)
        cap = self.outer_cap(options)
        slip = np.zeros(n_c)
        rows, inner, z = [], 0, None
        t0 = time.perf_counter()
        for k in range(1, cap + 1):
            x, iters, status = qp.solve((base + np.repeat(mu * slip, m_C)) / sc.velocity)
            inner += iters
            result.solver_status = status
            if x is None:
                result.message = f"QP solve {k} failed ({qp.which}: {status})"
                break
            z = S @ (sc.impulse * x)
            new = model.slip(z)
            z[model.i_lambda] = new
            change = float(np.abs(new - slip).max())
            slip = new
            rows.append({"outer": k, "inner_iterations": iters, "elapsed": time.perf_counter() - t0,
                         "lambda_change": change, **model.measures(z)})
            if change <= lambda_tol:
                result.solver_status = f"converged ({status})"
                break
            if time.perf_counter() - t0 > (options.time_limit or np.inf):
                result.info["stopped"] = "timeout"
                break
        else:
            result.info["stopped"] = None if cap == 1 else "max_iter"
        result.solve_seconds = time.perf_counter() - t0
        result.iterations = len(rows)
        result.info.update(outer_iterations=len(rows), inner_iterations=inner, lambda_tol=lambda_tol,
                           qp_solver=qp.which)
        result.history = pd.DataFrame(rows) if rows else None
        if z is not None and x is not None:
            result.info["z"] = z
            result.nu, result.v = model.recover(z)
        return result
