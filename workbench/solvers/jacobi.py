"""Projected Jacobi with per-contact scaling (a compiled loop), after Anitescu and Tasora's fixed-point
CCP iteration (Melanz et al. 2015 refs. [10, 11]).

    nu <- P_K( nu - omega E (N nu + r + a) ),   E = diag(eta_i I_d),  eta_i = d / trace(S_i)

with S_i the d x d diagonal block of N of contact i (eta_j = 1 / N_jj for a joint). Every contact
moves at once from the same nu: one product with N and one projection per iteration.

Why a scalar per contact and not the inverse block S_i^-1: a fixed point of nu = P(nu - omega B w)
satisfies -B w in the normal cone of K at nu, which is the CCP (-w in that normal cone) only when B
maps the normal cone into itself - true for a positive multiple of the identity on each cone, false
for a general SPD block. With E block-scalar the iteration is the projected gradient method in the
metric E^-1 (in which the projection onto a product of cones is still the Euclidean one per contact),
so it converges for omega < 2 / lambda_max(E^1/2 N E^1/2) (the projected gradient method with a
constant step below 2 / L decreases the objective monotonically; Bertsekas, Nonlinear Programming,
sec. 2.3).
The default omega is 0.95 times 2 / (lambda_max + lambda_min), the optimal constant step of the
gradient method on a quadratic (Polyak, Introduction to Optimization, 1987, chapter 1): 1.9 /
lambda_max on the singular N of granular problems, about 1 / lambda_max on well-conditioned ones,
where 1.9 / lambda_max would make the top eigenmode oscillate (contraction 0.9 instead of near 0). The spectrum
is computed densely for n <= 300 unknowns; above, lambda_max by Lanczos (ARPACK eigsh, relative
accuracy 1e-6) and lambda_min = 0. Against the former default 1 / lambda_max (30 power iterations)
it takes 1.5 to 2 times fewer iterations on the ill-conditioned problems (measured 2026-11-21, first
iterate within 1e-6 of the relaxed objective: BoxesStack1 725,485 -> 382,277, OneObject 14,921 ->
7,854; Siconos error 1e-8: PerioBox 503 -> 264, a 1,064-contact packing 16,464 -> 8,807) and about
as many on the well-conditioned ones. Where the operator iterated with is not symmetric (an
anti-relaxed local problem keeps W, which Siconos dumps with asymmetry 1e-4..1e-3), the QP argument
does not apply and the default is 1 / lambda_max of the symmetric part. The estimate is rounded to 20
significant bits, so the last digits of LAPACK's and ARPACK's eigenvalues, which move with the BLAS,
never reach the iterates. options.params["omega"] overrides either.

Anti-relaxed runs update the shift a after each iteration (inner) or per outer loop
(workbench.solvers.iterative). The iteration and its stopping measure run in one compiled loop
(:func:`_iterations`); Python touches it once per solve. options.params: omega (None: the estimate above), anti_relaxation,
outer_patience, device (cpu | gpu | numpy: workbench.solvers.xp_first_order).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from workbench.blocks import borrowed
from workbench.errors import InputError
from workbench.problem import borrowed_operator
from workbench.metrics import unknown_diagonal
from workbench.params import Param
from workbench.cones import _project_rows
from workbench.solvers import xp_first_order
from workbench.solvers.iterative import (GO_ON, ITERATIVE_PARAMS, K_D, K_INNER, K_STARTED, IterativeRun,
                                         IterativeSolver, apply_operator, count_and_check, intermediate_length)

__all__ = ["JacobiSolver", "scaled_spectrum_bounds"]

#: the default step is this fraction of the optimal one 2 / (lambda_max + lambda_min), for a symmetric operator
_STEP_FRACTION = 0.95
_DENSE_UP_TO = 300


def scaled_spectrum_bounds(run: IterativeRun, eta: np.ndarray, W: sp.spmatrix | None = None) -> tuple[float, float]:
    """(lambda_min, lambda_max) of E^1/2 N_s E^1/2 with E = diag(eta) and N_s the symmetric part of the
    operator (N itself on global problems; of ``W`` when given). Dense for small problems (lambda_min
    clipped at 0); otherwise lambda_max by Lanczos and lambda_min taken as 0, the value of the
    singular N of any problem with more contact unknowns than degrees of freedom (granular packings)."""
    root = np.sqrt(eta)
    if run.n <= _DENSE_UP_TO:      # N (formed once per problem, sparse) or W, densely
        A = (run.problem.N if W is None else W).toarray()
        ev = np.linalg.eigvalsh(root[:, None] * (0.5 * (A + A.T)) * root[None, :])
        return max(float(ev[0]), 0.0), float(ev[-1])
    if W is None:
        def apply(x):
            return root * run.apply_N(root * x)
    else:
        Wt = W.T.tocsr()

        def apply(x):
            y = root * x
            return root * (0.5 * (W @ y + Wt @ y))
    op = spla.LinearOperator((run.n, run.n), matvec=apply, dtype=float)
    v0 = np.random.default_rng(0).standard_normal(run.n)       # a fixed start: reproducible runs
    return 0.0, float(spla.eigsh(op, k=1, which="LA", tol=1e-6, v0=v0, return_eigenvectors=False)[0])


#: significant bits the estimated step keeps (:func:`_coarse`)
_STEP_BITS = 20


def _coarse(omega: float) -> float:
    """``omega`` rounded to :data:`_STEP_BITS` significant bits (a relative change of at most 1e-6, far
    below what the spectrum estimate means for the step): LAPACK's and ARPACK's eigenvalues differ in
    their last digits with the BLAS kernel and thread count, and this keeps those digits out of the
    iterates, so a run's iterations and status do not depend on the BLAS. Not finite: as it is."""
    if not math.isfinite(omega):
        return omega
    mantissa, exponent = math.frexp(omega)
    return math.ldexp(round(mantissa * (1 << _STEP_BITS)) / (1 << _STEP_BITS), exponent)


class JacobiSolver(xp_first_order.OnDevice, IterativeSolver):
    name = "jacobi"
    summary = "projected Jacobi with per-contact diagonal scaling (compiled loop)"
    params = ITERATIVE_PARAMS + (
        Param("omega", float, None, "step (None: 0.95 x 2 / (lambda_max + lambda_min), module docstring)"),
        xp_first_order.DEVICE_PARAM, xp_first_order.THREADS_PARAM, xp_first_order.CHECK_PARAM)

    def setup(self, run: IterativeRun) -> None:
        diag = unknown_diagonal(run.problem)
        if np.any(diag <= 0):
            raise InputError("jacobi: a contact or joint has a zero diagonal block in N")
        self._eta = 1.0 / diag
        omega = run.params["omega"]
        if omega is None:
            W = None if run.problem.is_global else run.N_matrix
            lam_min, lam_max = scaled_spectrum_bounds(run, self._eta, W)
            omega = _coarse(2.0 * _STEP_FRACTION / (lam_max + lam_min) if run.operator_is_symmetric else 1.0 / lam_max)
        elif not float(omega) > 0:
            raise InputError(f"jacobi: omega must be positive, got {omega}")
        self._step = float(omega) * self._eta
        run.info["omega"] = float(omega)

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        """The iterations in :func:`_iterations`: one compiled call (one per history row, or per chunk
        of a few milliseconds of work when a time limit is to be checked); device = gpu or numpy: the
        same iteration on an array module (workbench.solvers.xp_first_order)."""
        if run.params["device"] != "cpu":
            return xp_first_order.jacobi(run, x0, self._step, run.params["device"])
        op, n = run.compiled_N, run.n
        x = np.array(x0, dtype=float)
        work = np.empty(_ROWS * n + intermediate_length(op))
        chunk = run.chunk(op[2].size + op[5].size + 10 * n)
        fs, ks = run.compiled_state(chunk)
        run.drive(lambda: _iterations(op, run.mu, x, run.r0, run.a, self._step, work, fs, ks), ks, fs, chunk,
                  work[_BEST * n:(_BEST + 1) * n], lambda: (x, work[_U * n:(_U + 1) * n]))


#: rows of the work array (then the intermediate vector of the operator): u, the natural map, the best iterate
_U, _SCRATCH, _BEST, _ROWS = 0, 1, 2, 3


@njit(cache=True)
def _iterations(op, mu, x, r0, a, step, work, fs, ks):
    """x <- P(x - step (u + a)), u = N x + r_0 and the stopping measure (:func:`measure_and_keep`) until
    it holds, the iteration cap is reached or the count reaches ks[K_STOP] (:func:`count_and_check`); one compiled call,
    x updated in place. ``work``: the rows _U, _SCRATCH, _BEST, then the intermediate vector of the
    operator; ``fs`` and ``ks``: the state of workbench.solvers.iterative's layout (F_*, K_*)."""
    # the arrays borrowed once (workbench.blocks.borrowed): the calls of each iteration count no references
    op, mu, x, r0, a = borrowed_operator(op), borrowed(mu), borrowed(x), borrowed(r0), borrowed(a)
    step, work, fs, ks = borrowed(step), borrowed(work), borrowed(fs), borrowed(ks)
    n = x.shape[0]
    u, scratch, best_x = work[_U * n:(_U + 1) * n], work[_SCRATCH * n:(_SCRATCH + 1) * n], work[_BEST * n:(_BEST + 1) * n]
    tmp = work[_ROWS * n:]
    d, inner = ks[K_D], ks[K_INNER] != 0
    m = mu.shape[0] * d
    if ks[K_STARTED] == 0:
        apply_operator(op, tmp, x, u)
        for k in range(n):
            u[k] += r0[k]
        ks[K_STARTED] = 1
    while True:
        for k in range(n):
            x[k] -= step[k] * (u[k] + a[k])
        _project_rows(x[:m], mu, d, x[:m])            # the joints (after the contacts) are free
        apply_operator(op, tmp, x, u)
        for k in range(n):
            u[k] += r0[k]
        code = count_and_check(x, u, a, mu, d, inner, scratch, best_x, fs, ks)
        if code != GO_ON:
            return code
