"""ADMM on the dual CCQO with residual balancing of the penalty rho.

Splitting (Boyd et al. 2011, section 5; scaled dual variable w):

    min_{x, z}  1/2 x^T N x + (r + a)^T x + I_{K x R^{n_b}}(z)   s.t.  x = z

    x^{k+1} = (N + rho I)^-1 (rho (z^k - w^k) - r - a)          (one sparse factorisation per rho, below)
    x^      = alpha x^{k+1} + (1 - alpha) z^k                    (over-relaxation, alpha in (0, 2))
    z^{k+1} = P(x^ + w^k)                                         (one cone projection)
    w^{k+1} = w^k + x^ - z^{k+1}

Acceleration (Goldstein, O'Donoghue, Setzer and Baraniuk 2014, "Fast alternating direction optimization
methods", Algorithm 8: Nesterov's extrapolation with restart, for problems that are only weakly convex,
as the CCQO is; Siconos's fc3d_admm accelerates the same way), on by default: the x- and z-updates start
from extrapolated points (z^, w^) instead of (z^k, w^k),

    c_k = ||w^{k+1} - w^_k||^2 + ||z^{k+1} - z^_k||^2                 (the combined residual)
    c_k < eta c_{k-1}:  t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2,
                        (z^, w^)_{k+1} = (z, w)^{k+1} + (t_k - 1) / t_{k+1} ((z, w)^{k+1} - (z, w)^k)
    otherwise (restart): t_{k+1} = 1, (z^, w^)_{k+1} = (z, w)^{k+1}, c_k <- c_{k-1} / eta

with eta = ETA_RESTART; a change of rho restarts too. Goldstein et al. use no over-relaxation, and
over-relaxed extrapolation (alpha 1.6) stalled on a pile of thin plates, so alpha is 1 with acceleration unless
set. Measured on the held-out half of benchmarks/peers/split.json (docs/solvers-performance.md): fewer
iterations to the Siconos error 1e-8 on stacks, arches and capsules; more on problems plain ADMM solves
in about 12 iterations.

A fixed point has x = z, rho w = -(N z + r + a) and z = P(z + w), i.e. -(N z + r + a) in the normal
cone of K at z: the CCP, also for a non-symmetric W (anti-relaxed local problems; the LU does not need
symmetry). The iterate judged and returned is z (feasible); u = N z + r costs one product with N per
iteration. The start is z^0 = x^0 = the (projected) warm start or 0 and w^0 = -(N z^0 + r + a) / rho,
the multiplier that is optimal if z^0 is.

Residual balancing (Boyd et al. 2011, eq. 3.13; He, Yang and Wang 2000), every ``balance_every``
iterations: rho <- 2 rho when the primal residual exceeds 10 times the dual one, rho <- rho / 2 in the
opposite case, w divided (resp. multiplied) by the same factor so that the unscaled multiplier rho w
is kept, and the factorisation below redone. The residuals are normalised as in OSQP (Stellato et al.
2020) so that the comparison does not depend on the units of N (impulses against velocities):
primal = ||x - z|| / max(||x||, ||z||), dual = rho ||z^{k+1} - z^k|| / ||rho w|| = ||z^{k+1} - z^k|| / ||w||
(with acceleration z^_k for z^k: the point the x-update started from).
rho^0 = mean diagonal of N (from its diagonal blocks; options.params["rho"] overrides).

No active constraint. When w = 0 at a balancing check (x^ + w^ fell inside K: no cone constraint acts
at z, and the dual residual's normalisation ||w|| is zero), the iteration is, while that lasts, the
proximal-point method on the unconstrained quadratic, z^{k+1} = (N + rho I)^-1 (rho z^k - r - a), whose
error shrinks by rho / (lambda_i + rho) along each eigenvector of N (eigenvalue lambda_i). A smaller rho
is then faster on every component, and the slow ones are the small lambda_i of a nearly singular N: a
stack, whose bodies rest on several contacts each, has many. Halving rho every ``balance_every``
iterations takes many factorisations to get there, so in that case rho is multiplied by INACTIVE_STEP
at once (not below INACTIVE_FLOOR rho^0; options.params["inactive_step"] sets the factor). When
constraints become active again the primal residual grows and the usual balancing raises rho. A run
whose multiplier is never zero at a check (most problems) is unchanged by it. Two limits:

- local problems only (W + rho I factorised as it is): the Woodbury x-update of a global problem,
  below, divides by rho, and its round-off grows as rho falls;
- without over-relaxation only (alpha = 1, the default with acceleration): over-relaxed, the step is
  z^{k+1} = alpha x^{k+1} + (1 - alpha) z^k, whose error shrinks by |1 - alpha lambda_i / (lambda_i + rho)|,
  which tends to |1 - alpha|, not 0, as rho falls (plain ADMM's alpha 1.6 stalled on the box pyramids
  with the step), so an over-relaxed run halves rho there as at any other check.

The step is guarded: the anti-relaxed inner run follows the shift a(u) every iteration, a fixed-point
iteration that a small rho can make diverge (measured: the step taken after a few iterations instead of
at the first check sent a box pyramid's iterates to nan). From the first step on, a check whose
stopping measure is not below the one where the step was taken (or not finite) puts the run back
there: z, the shift and rho as they were, w = 0 as it was, the factorisation redone, and no more such
steps in that run (info["inactive_step_undone"]: the iteration). Outside such a step, an iterate that is
not finite ends the run at once (stop cause failed, info["diverged"]): nothing can make it finite again.

The x-update without N on global problems (Woodbury, N = C^T M^-1 C, any SPD M):

    (N + rho I)^-1 b = (b - C^T (rho M + C C^T)^-1 C b) / rho,

so the matrix factorised is rho M + C C^T (n_dof x n_dof, the body-to-body coupling: much sparser than
N, which couples every pair of contacts sharing a body) and an x-update costs a sparse solve and two
products with C. That matrix is symmetric positive definite: it gets a sparse LDL^T (QDLDL with its
AMD ordering, the factorisation of OSQP), computed symbolically once and numerically again when rho
changes. At 10,025 contacts (27,000 dof) it takes 4.7 s and a solve 0.02 s, against 26 s and 0.07 s
for SuperLU's LU with the minimum-degree ordering of A + A^T (benchmarks/timing/bench_iterative.py machine).
On local problems W is the data, and N + rho I = W + rho I (W_s for a relaxed non-symmetric W). An
exactly symmetric W (a Delassus matrix: positive semidefinite) gets CHOLMOD's sparse Cholesky when
scikit-sparse is installed: W's pattern is analysed once per run (fill-reducing order, symbolic
factorisation) and each penalty is one numeric factorisation of W + rho I on it (CHOLMOD adds rho I
itself); simplicial below SUPERNODAL_MIN_FLOPS (counted from the pattern, workbench.solvers.cholesky),
supernodal from there. It is cheaper than SuperLU's LU, factorisation and solves, and takes the same
iterates to round-off (measured by benchmarks/timing/bench_admm_factor.py, docs/solvers-performance.md). A W that is not exactly
symmetric, or one whose W + rho I turns out not positive definite (not a Delassus matrix), gets
SuperLU's LU; info["factorization"] says which.

Time limit: a factorisation is one native call that cannot be interrupted. The first, in the set-up,
has no forecast; before each one after a change of rho the run asks
:meth:`~workbench.solvers.recorder.Recorder.affords` with the duration of the last one and stops
with TIMEOUT (its best point) when it would end too far past the limit.

options.params: rho (None: mean diagonal of N), alpha (None: 1 with acceleration, 1.6 without),
acceleration (True), balance_every (20), inactive_step (None: INACTIVE_STEP), anti_relaxation,
outer_patience. info: rho (final), factorizations, restarts (of the acceleration), factorization (local
problems: which one).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
import qdldl
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from workbench.errors import InputError
from workbench.metrics import mean_diagonal
from workbench.params import Param
from workbench.solvers.base import StopCause
from workbench.solvers.cholesky import cholesky_flops, cholmod
from workbench.solvers.iterative import ITERATIVE_PARAMS, IterativeSolver, IterativeRun

__all__ = ["ADMMSolver"]

MU_BALANCE, TAU_BALANCE = 10.0, 2.0
#: balancing when the multiplier w is zero (no cone constraint active): rho times INACTIVE_STEP, not
#: below INACTIVE_FLOOR times its start (W + rho I of a singular W stays well conditioned enough)
INACTIVE_STEP, INACTIVE_FLOOR = 1e-3, 1e-6
#: W + rho I of a local problem gets CHOLMOD's supernodal Cholesky from this many flops on (counted from
#: W's pattern), the simplicial one below: between the generated sphere packings where each is the faster
#: (scaling-00192, 1.7e7 flops, simplicial; scaling-00256, 3.9e7, supernodal; bench_admm_factor)
SUPERNODAL_MIN_FLOPS = 3e7
#: the restart test's factor (Goldstein et al. 2014 eta; Siconos's fc3d_admm uses the same 0.999)
ETA_RESTART = 0.999


class ADMMSolver(IterativeSolver):
    name = "admm"
    summary = ("ADMM (x = z splitting, sparse LDL^T of rho M + C C^T, Cholesky or LU of W + rho I, "
               "residual balancing)")
    params = ITERATIVE_PARAMS + (
        Param("rho", float, None, "initial penalty (None: the mean diagonal of N)"),
        Param("alpha", float, None, "over-relaxation, in (0, 2) (None: 1 with acceleration, 1.6 without)"),
        Param("balance_every", int, 20, "iterations between residual-balancing updates of rho"),
        Param("inactive_step", float, None, "factor of rho at a balancing check where no cone constraint is "
              "active (w = 0), in (0, 1] (None: INACTIVE_STEP; 0.5: plain halving)"),
        Param("acceleration", bool, True, "Nesterov extrapolation of (z, w) with restart on the combined "
              "residual (Goldstein et al. 2014, Algorithm 8)"),
    )

    def setup(self, run: IterativeRun) -> None:
        alpha = run.params["alpha"]
        alpha = float((1.0 if run.params["acceleration"] else 1.6) if alpha is None else alpha)
        if not 0.0 < alpha < 2.0:
            raise InputError(f"admm: alpha must lie in (0, 2), got {alpha}")
        self._alpha = alpha
        self._every = max(1, int(run.params["balance_every"]))
        step = run.params["inactive_step"]
        self._inactive_step = INACTIVE_STEP if step is None else float(step)
        if not 0.0 < self._inactive_step <= 1.0:
            raise InputError(f"admm: inactive_step must lie in (0, 1], got {step}")
        p = run.problem
        self._ldl = None
        if p.is_global:        # Woodbury (module docstring): never forms N
            self._C, self._CT, self._CCt = p.C, p.C.T.tocsr(), (p.C @ p.C.T).tocsc()
        else:
            self._N = run.N_matrix
            self._eye = sp.identity(run.n, format="csc")
            self._chol = _cholesky_analysis(self._N)
            run.info["factorization"] = (f"cholmod ({self._chol[2]} Cholesky of W + rho I)" if self._chol
                                         else "superlu (LU of W + rho I)")
        rho = run.params["rho"]
        if rho is None:
            rho = mean_diagonal(p)
        if not (np.isfinite(float(rho)) and float(rho) > 0):
            raise InputError(f"admm: rho must be positive, got {rho}")
        self._solve = None
        self._rho_start = float(rho)
        self._factor(run, float(rho))
        run.info["factorizations"] = 1 if self._solve is not None else 0

    def _factor(self, run: IterativeRun, rho: float) -> None:
        """The solver of (N + rho I) x = b for this rho (one sparse factorisation); the first one is
        forecast from its size (Recorder.affords_first), and not started when it would end too far past
        the limit (then ``self._solve`` stays None and the run stops with TIMEOUT)."""
        self._rho = rho
        run.info["rho"] = rho
        p = run.problem
        if p.is_global:
            A = (rho * p.M + self._CCt).tocsc()
            if self._ldl is None and not run.rec.affords_first(A, qdldl.Solver):
                return
        elif self._chol:
            _, N, mode = self._chol
            if self._solve is None and not run.rec.affords_first(
                    N, lambda block: cholmod().cholesky(block, beta=rho, mode=mode)):
                return
        else:
            A = (self._N + rho * self._eye).tocsc()
            if self._solve is None and not run.rec.affords_first(A, _lu):
                return
        t0 = time.perf_counter()
        if p.is_global:
            if self._ldl is None:
                self._ldl = qdldl.Solver(A)
            else:
                self._ldl.update(A)     # same pattern: the ordering and symbolic factorisation are kept
            ldl, C, CT = self._ldl, self._C, self._CT
            self._solve = lambda b: (b - CT @ ldl.solve(C @ b)) / rho
        elif self._chol:
            factor, N, mode = self._chol
            try:
                factor.cholesky_inplace(N, beta=rho)
                # the simplicial factorisation is LDL^T, which does not fail on an indefinite matrix
                definite = mode == "supernodal" or bool(np.all(factor.D() > 0.0))
            except cholmod().CholmodNotPositiveDefiniteError:
                definite = False
            if definite:
                self._solve = factor
            else:       # W is not positive semidefinite (not a Delassus matrix): the LU, for the rest of the run
                self._chol = None
                run.info["factorization"] = "superlu (LU of W + rho I; W + rho I is not positive definite)"
                self._solve = _lu((self._N + rho * self._eye).tocsc()).solve
        else:
            self._solve = _lu(A).solve
        self._factor_seconds = time.perf_counter() - t0   # the forecast of the next one (Recorder.affords)

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        if self._solve is None:      # the first factorisation was forecast to end too far past the limit
            run.stopped = StopCause.TIMEOUT
            return
        accelerate = bool(run.params["acceleration"])
        alpha = self._alpha
        r = run.linear_term
        z = x0
        Nz = run.apply_N(z)
        w = -(Nz + r) / self._rho
        z_hat, w_hat, t, c_last = z, w, 1.0, np.inf
        run.info["restarts"] = 0
        # the Woodbury x-update of a global problem divides by rho: its round-off grows as rho falls
        self._step_taken, self._step_allowed = None, not run.problem.is_global
        while True:
            x = self._solve(self._rho * (z_hat - w_hat) - r)
            xh = alpha * x + (1.0 - alpha) * z_hat
            z_old, w_old, z_from = z, w, z_hat
            z = run.project(xh + w_hat)
            w = w_hat + xh - z
            if accelerate:
                # Goldstein et al. 2014, Algorithm 8: extrapolate while the combined residual
                # ||w - w^||^2 + ||z - z^||^2 falls by ETA_RESTART, else restart from the new point
                dw, dz = w - w_hat, z - z_hat
                c = float(np.dot(dw, dw) + np.dot(dz, dz))
                if c < ETA_RESTART * c_last:
                    t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                    beta = (t - 1.0) / t_next
                    z_hat, w_hat, t, c_last = z + beta * (z - z_old), w + beta * (w - w_old), t_next, c
                else:
                    z_hat, w_hat, t, c_last = z, w, 1.0, c_last / ETA_RESTART
                    run.info["restarts"] += 1
            else:
                z_hat, w_hat = z, w
            Nz = run.apply_N(z)
            if run.tick(z, Nz + run.r0):
                break
            if not run.error < np.inf and self._step_taken is None and not np.isfinite(z).all():
                # a non-finite iterate stays so (inf - inf is nan) and no guarded step can restore the run:
                # it diverged; without this stop it ran to its iteration cap or time limit on nan
                run.stopped = StopCause.FAILED
                run.info["diverged"] = f"non-finite iterate at iteration {run.k}"
                break
            if run.mode == "inner":
                r = run.linear_term
            if run.k % self._every == 0:
                primal = np.linalg.norm(x - z) / max(np.linalg.norm(x), np.linalg.norm(z), 1e-300)
                dual = np.linalg.norm(z - z_from) / max(np.linalg.norm(w), 1e-300)
                tau, step = 1.0, self._step_taken
                if step is not None and not run.error <= step.error:
                    # the run diverged after the step (module docstring): back to where it was taken
                    z, w, rho_then = step.z, np.zeros_like(step.z), step.rho   # w was 0 there
                    run.a[:] = step.a
                    r = run.linear_term if run.mode == "inner" else r
                    tau, self._step_taken, self._step_allowed = rho_then / self._rho, None, False
                    run.info["inactive_step_undone"] = run.k
                elif w.any() or alpha != 1.0 or not self._step_allowed:
                    if primal > MU_BALANCE * dual or dual > MU_BALANCE * primal:
                        tau = TAU_BALANCE if primal > dual else 1.0 / TAU_BALANCE
                else:   # no active constraint: a proximal-point step (module docstring), rho much smaller
                    tau = max(self._inactive_step, min(1.0, INACTIVE_FLOOR * self._rho_start / self._rho))
                    if tau != 1.0 and step is None:
                        self._step_taken = _Step(self._rho, z.copy(), run.a.copy(), run.error)
                if tau != 1.0:
                    if not run.rec.affords(self._factor_seconds):  # a factorisation cannot be interrupted
                        run.stopped = StopCause.TIMEOUT
                        break
                    w = w / tau
                    z_hat, w_hat, t, c_last = z, w, 1.0, np.inf
                    self._factor(run, self._rho * tau)
                    run.info["factorizations"] += 1


class _Step(NamedTuple):
    """Where the first step of rho by INACTIVE_STEP was taken (w was 0 there): rho, z and the shift a
    then, and the stopping measure there (what the run must stay below)."""
    rho: float
    z: np.ndarray
    a: np.ndarray
    error: float


def _cholesky_analysis(N: sp.csr_matrix):
    """(CHOLMOD's symbolic analysis of W, W in CSC, "simplicial" or "supernodal") for an exactly
    symmetric W when scikit-sparse is installed, else None (SuperLU's LU). Supernodal where the
    factorisation costs at least SUPERNODAL_MIN_FLOPS, counted from W's pattern in CHOLMOD's
    fill-reducing order (the same choice on every machine)."""
    module = cholmod()
    if module is None:
        return None
    if not N.has_canonical_format:
        N = N.copy()
        N.sum_duplicates()
    W = N.tocsc()
    # exactly symmetric: W's CSC arrays (its columns) are its CSR arrays (its rows), both canonical
    if not all(np.array_equal(a, b) for a, b in ((W.indptr, N.indptr), (W.indices, N.indices), (W.data, N.data))):
        return None
    analysis = module.analyze(W, mode="simplicial")
    mode = "simplicial"
    if cholesky_flops(W, analysis.P()) >= SUPERNODAL_MIN_FLOPS:
        analysis, mode = module.analyze(W, mode="supernodal"), "supernodal"
    return analysis, W, mode


def _lu(A):
    """SuperLU's LU of the local problem's N + rho I (its symmetric pattern ordered by MMD on A^T + A)."""
    return spla.splu(A, permc_spec="MMD_AT_PLUS_A")
