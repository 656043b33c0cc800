"""Primal-dual interior-point method with Nesterov-Todd scaling and Mehrotra's predictor-corrector,
in-house, for the relaxed dual (Melanz et al. 2015 eq. 14; Mazhar et al. 2014 eq. 15):

    min_nu 1/2 nu^T N nu + r^T nu   s.t.  gamma_i in K_i = {||gamma_t,i|| <= mu_i gamma_n,i},  lambda free.

Variables. With nu = S x, S = diag(1, mu_i, mu_i) per contact (1 on the joints), K_i becomes the
standard second-order cone Q = {||x_t|| <= x_n} (self-dual), also for mu_i = 0 (then nu_t = 0 whatever
x_t), and the problem is min 1/2 x^T P x + c^T x, x in Q^{n_c} x R^{n_b}, with P = S N S, c = S r.
Its optimality conditions are z = P x + c, x in Q, z in Q, x o z = 0 (Jordan product per cone; z = 0
on the joints): z is the scaled relative velocity S u.

Iteration (Vandenberghe's CVXOPT notes, section on second-order cones; Mehrotra 1992). With the
Nesterov-Todd scaling W (per cone, symmetric, W z = W^-1 x = lambda) and H = W^-2:

    (P + H) dx = -(P x + c - z) + W^-1 (lambda o)^-1 r_c,       dz = W^-1 (lambda o)^-1 r_c - H dx

once with r_c = -lambda o lambda (affine direction, largest step alpha_a), once with
r_c = sigma mu e - lambda o lambda - (W^-1 dx_a) o (W dz_a), sigma = (1 - alpha_a)^3,
mu = x^T z / n_c. Then one centrality corrector (Gondzio 1996, here per second-order cone): when that
direction's step alpha to the boundary is below 1, the scaled products v = (W^-1 x') o (W z') at the
trial point of step alpha + 0.3 get their Jordan eigenvalues v_0 -+ ||v_1|| moved into
[0.1, 10] sigma mu, and the direction solved with r_c = t - v (no residual part, the same factors)
is added when it lengthens the step by at least 0.03; the step is 0.99 of the way to the boundary of Q.
The corrector costs one more solve with the factors of the iteration, and takes an iteration or a few
off a run on most problems of the corpus. The system with P + H is solved
through a sparse quasi-definite matrix K, factorised once per iteration by qdldl (LDL^T, AMD ordering
and symbolic analysis once per solve); every solve of the iteration reuses the factors, with one step of
iterative refinement. Global problems: K = [H, S C^T; C S, -rho M] (n + n_dof; C = [D G]), whose Schur complement
is P + H, so N is never formed; without joints and with scikit-sparse installed, K is solved
through its body-space Schur complement rho M + (C S) H^-1 (C S)^T by CHOLMOD instead (:class:`_BodySchur`;
on the 2,560-sphere packing about twice as fast, the same iterates) when that complement's Cholesky
costs at least _SCHUR_MIN_FLOPS (counted from its pattern before any factorisation; below, qdldl on K
is as fast: ``info["factorization"]`` says which and why), handing over to qdldl on K for
the rest of the run when its refined solves lose accuracy (``info["factorization"]`` says which). Local problems: K = P + H with W (symmetrised W_s for a relaxed
non-symmetric W). The joints' rows have no barrier (H = 0) and get 1e-10 on K's diagonal, removed
again by the refinement.

Scaling and starting point: the IPM works with P = S N S / rho and c = S r / gamma (rho the mean
diagonal of S N S, gamma the root mean square of S r), whose solution x = (rho / gamma) S^-1 nu is of
order 1; x from (P + I) x = -c and z = P x + c, each moved into Q by adding t e with
t = 1 + max(0, max_i (||x_t,i|| - x_n,i)) (e = (1, 0, ..., 0) per cone).

Point offered. Every iterate x is strictly inside Q: the contacts that separate (or stick) keep
impulses (velocities) of the order of mu / the other member, which the natural-map error sees. Each
iteration therefore offers :meth:`IterativeRun.tick` one projected-gradient step from nu = S x,
P_K(nu - t (N nu + r)) with t = 1 / (mean diagonal of N), which puts them on their faces exactly (one
more product with N; on the relaxed duals of 320-sphere packings it saves 3-4 of 25-28 iterations).
The IPM itself continues from x. Through :meth:`IterativeRun.tick` (u = N nu + r), the stopping measure, the best
iterate, caps and history are those of the other in-house solvers (workbench.solvers.iterative). The
run stops STALLED when a step length falls below 1e-10, the complementarity mu stops decreasing or
an iterate reaches the boundary of Q (rounding: in double precision, at mu ~ 1e-10 on the scaled
problem, the relaxed error reached is then 1e-9 to 1e-6, as Clarabel's on the same problems).

Anti-relaxed models run the outer fixed-point loop of workbench.solvers.iterative (each relaxed
sub-problem, with its fixed shift, solved by this IPM): the inner mode changes r after every
iteration, which an interior-point method cannot follow, so ``anti_relaxation`` takes "outer" only.
The warm start is not used (an interior-point method starts from the centre of the cone).

Time limit: a factorisation is one native call that cannot be interrupted; before each one the run
asks :meth:`~workbench.solvers.recorder.Recorder.affords` with the duration of the last one, and
stops with TIMEOUT (its best point) when it would end too far past the limit. The run's first one
(the starting point's) has no forecast: it starts whenever the limit has not passed.
"""

from __future__ import annotations

import time

import numpy as np
import qdldl
import scipy.sparse as sp
from numba import njit

from workbench import blocks, metrics
from workbench.params import Param
from workbench.solvers.base import StopCause
from workbench.solvers.cholesky import cholesky_flops, cholmod
from workbench.solvers.iterative import ITERATIVE_PARAMS, IterativeSolver, IterativeRun

__all__ = ["IPMSolver"]

_FRACTION = 0.99            # of the step to the boundary of Q
_CORRECTOR_REACH = 0.3      # the centrality corrector aims at the step alpha + this (Gondzio's delta_alpha)
_CORRECTOR_GAIN = 0.1       # and is kept when the step grows by at least this fraction of the reach
_BETA = (0.1, 10.0)         # the band, in units of sigma mu, of the scaled products' Jordan eigenvalues
_MIN_STEP = 1e-10           # below it the iteration has stalled (rounding)
_REFINE = 5                 # iterative refinement steps at most, per solve


# The cone-wise operations, per cone of (n_c, d) arrays, compiled: each iteration makes a few dozen of
# them, and on a packing of a thousand contacts numpy's per-call cost and temporaries were about as
# large as the arithmetic. numpy's error model: a division by zero near the end of a run gives inf or
# NaN (which the step and stall tests read), as the numpy code did, not an exception.

@njit(cache=True, error_model="numpy")
def _jordan(a, b):
    """a o b per cone (rows of (n_c, d) arrays): (a^T b, a_0 b_1 + b_0 a_1)."""
    out = np.empty_like(a)
    for k in range(a.shape[0]):
        acc = 0.0
        for j in range(a.shape[1]):
            acc += a[k, j] * b[k, j]
        out[k, 0] = acc
        for j in range(1, a.shape[1]):
            out[k, j] = a[k, 0] * b[k, j] + b[k, 0] * a[k, j]
    return out


@njit(cache=True, inline="always", error_model="numpy")
def _det_at(a, k):
    """a_0^2 - ||a_1||^2 of cone k, as (a_0 - ||a_1||)(a_0 + ||a_1||): no cancellation near the boundary."""
    acc = 0.0
    for j in range(1, a.shape[1]):
        acc += a[k, j] * a[k, j]
    t = np.sqrt(acc)
    return (a[k, 0] - t) * (a[k, 0] + t)


@njit(cache=True, error_model="numpy")
def _jordan_solve(lam, rhs):
    """u with lam o u = rhs per cone (lam inside Q)."""
    out = np.empty_like(rhs)
    for k in range(rhs.shape[0]):
        acc = lam[k, 0] * rhs[k, 0]
        for j in range(1, rhs.shape[1]):
            acc -= lam[k, j] * rhs[k, j]
        u0 = acc / _det_at(lam, k)
        out[k, 0] = u0
        for j in range(1, rhs.shape[1]):
            out[k, j] = (rhs[k, j] - u0 * lam[k, j]) / lam[k, 0]
    return out


@njit(cache=True, error_model="numpy")
def _inside(a):
    """Whether every cone's a is strictly inside Q (det > 0)."""
    for k in range(a.shape[0]):
        if not _det_at(a, k) > 0.0:
            return False
    return True


@njit(cache=True, error_model="numpy")
def _max_step(x, dx):
    """The largest alpha with x + alpha dx in Q for every cone (x inside): the first root of
    det(x + alpha dx) = a alpha^2 + 2 b alpha + c, written c / (-b + sqrt(b^2 - a c)) to avoid
    cancellation; inf when no cone's boundary is met."""
    best = np.inf
    for k in range(x.shape[0]):
        a = _det_at(dx, k)
        b = x[k, 0] * dx[k, 0]
        for j in range(1, x.shape[1]):
            b -= x[k, j] * dx[k, j]
        c = _det_at(x, k)
        disc = b * b - a * c
        if a < 0.0 or (b < 0.0 and disc >= 0.0):
            best = min(best, c / (-b + np.sqrt(max(disc, 0.0))))
    return best


@njit(cache=True, error_model="numpy")
def _centrality_correction(W_inv, W, x, z, dx, dz, step, target):
    """Per cone, t - v: v = (W^-1 (x + step dx)) o (W (z + step dz)), the scaled complementarity
    products at the trial step, and t the same with its Jordan eigenvalues v_0 -+ ||v_1|| moved into
    the band _BETA times ``target`` (sigma mu); the right-hand side of Gondzio's corrector."""
    n_c, d = x.shape
    out = np.empty((n_c, d))
    a, b = np.empty(d), np.empty(d)
    low, high = _BETA[0] * target, _BETA[1] * target
    for k in range(n_c):
        for i in range(d):
            sa = 0.0
            sb = 0.0
            for j in range(d):
                sa += W_inv[k, i, j] * (x[k, j] + step * dx[k, j])
                sb += W[k, i, j] * (z[k, j] + step * dz[k, j])
            a[i], b[i] = sa, sb
        v0 = 0.0
        for j in range(d):
            v0 += a[j] * b[j]
        norm = 0.0
        for j in range(1, d):
            out[k, j] = a[0] * b[j] + b[0] * a[j]     # v_1 for now
            norm += out[k, j] * out[k, j]
        norm = np.sqrt(norm)
        first = min(max(v0 - norm, low), high)
        second = min(max(v0 + norm, low), high)
        out[k, 0] = 0.5 * (first + second) - v0
        shrink = 0.5 * (second - first) / norm - 1.0 if norm > 0.0 else -1.0
        for j in range(1, d):
            out[k, j] *= shrink
    return out


@njit(cache=True, error_model="numpy")
def _times(A, x):
    """A_k x_k per cone ((n_c, d, d) blocks, (n_c, d) vectors)."""
    out = np.empty_like(x)
    for k in range(x.shape[0]):
        for i in range(x.shape[1]):
            acc = 0.0
            for j in range(x.shape[1]):
                acc += A[k, i, j] * x[k, j]
            out[k, i] = acc
    return out


def _into_cone(x: np.ndarray) -> None:
    """x += t e per cone with t = 1 + max(0, max ||x_t|| - x_n), in place (the starting point)."""
    t = np.max(np.linalg.norm(x[:, 1:], axis=1) - x[:, 0])
    x[:, 0] += 1.0 + max(t, 0.0)


@njit(cache=True, error_model="numpy")
def _nt_scaling(x, z):
    """Per cone: W, W^-1 (d x d, symmetric) with W z = W^-1 x = lambda, lambda, and the products
    H = W^-2 and W^2 (the KKT blocks and their inverses). W = eta B(w): the hyperbolic rotation of
    w = (x/sqrt(det x) + J z/sqrt(det z)) / (2 gamma) (det w = 1, J = diag(1, -1, ..)) times
    eta = (det x / det z)^(1/4); W^-1 = B with w_t negated, over eta."""
    n_c, d = x.shape
    W, W_inv, H, W2 = np.empty((n_c, d, d)), np.empty((n_c, d, d)), np.empty((n_c, d, d)), np.empty((n_c, d, d))
    lam = np.empty((n_c, d))
    w = np.empty(d)
    for k in range(n_c):
        det_x, det_z = _det_at(x, k), _det_at(z, k)
        sx, sz = np.sqrt(det_x), np.sqrt(det_z)
        acc = 0.0
        for j in range(d):
            acc += (x[k, j] / sx) * (z[k, j] / sz)
        gamma = np.sqrt(0.5 * (1.0 + acc))
        w[0] = (x[k, 0] / sx + z[k, 0] / sz) / (2.0 * gamma)
        for j in range(1, d):
            w[j] = (x[k, j] / sx - z[k, j] / sz) / (2.0 * gamma)
        eta = (det_x / det_z) ** 0.25
        W[k, 0, 0] = eta * w[0]
        W_inv[k, 0, 0] = w[0] / eta
        for i in range(1, d):
            W[k, 0, i] = W[k, i, 0] = eta * w[i]
            W_inv[k, 0, i] = W_inv[k, i, 0] = -w[i] / eta
            for j in range(1, d):
                t = (1.0 if i == j else 0.0) + w[i] * w[j] / (1.0 + w[0])
                W[k, i, j] = eta * t
                W_inv[k, i, j] = t / eta
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += W[k, i, j] * z[k, j]
            lam[k, i] = acc
            for j in range(d):
                h = 0.0
                q = 0.0
                for l in range(d):
                    h += W_inv[k, i, l] * W_inv[k, l, j]
                    q += W[k, i, l] * W[k, l, j]
                H[k, i, j] = h
                W2[k, i, j] = q
    return W, W_inv, lam, H, W2


class IPMSolver(IterativeSolver):
    name = "ipm"
    summary = ("primal-dual interior-point method, Nesterov-Todd scaling and Mehrotra predictor-corrector, "
               "sparse LDL^T of the KKT system (relaxed problems)")

    #: its KKT system on a global problem holds M (never N): not the local problem's, so never condensed
    condenses = False
    params = (Param("anti_relaxation", str, "outer", "anti-relaxed models: the shift is updated by an outer "
                    "fixed-point loop (an interior-point method cannot follow a shift that moves every iteration)",
                    ("outer",)),) + ITERATIVE_PARAMS[1:]

    def setup(self, run: IterativeRun) -> None:
        p, d, n_c, n = run.problem, run.d, run.n_c, run.n
        s = np.ones(n)
        s[:n_c * d].reshape(n_c, d)[:, 1:] = np.asarray(run.mu, dtype=float)[:, None]
        self._S = s
        # P = S N S / rho with rho its mean diagonal: the starting point's unit margin fits the data
        rho = float(np.mean(s * s * metrics.unknown_diagonal(p)))
        self._step = 1.0 / metrics.mean_diagonal(p)
        self._rho = rho if np.isfinite(rho) and rho > 0 else 1.0
        m = n_c * d
        rows = np.repeat(np.arange(m).reshape(n_c, d), d, axis=1).ravel()
        cols = np.tile(np.arange(m).reshape(n_c, d), (1, d)).ravel()
        upper = rows <= cols
        rows, cols = rows[upper], cols[upper]
        self._H_src = np.flatnonzero(upper)     # entries (cone, row, column) of the blocks in K's upper part
        if p.is_global:
            # KKT system [H, S C^T; C S, -rho M] (n + n_dof): its Schur complement is P + H
            CS = sp.csr_matrix(p.C @ sp.diags(s))
            const = sp.bmat([[sp.csc_matrix((n, n)), CS.T], [None, -self._rho * p.M]], format="csc")
            size = n + p.M.shape[0]
        else:
            const = sp.csc_matrix(sp.diags(s) @ run.N_matrix @ sp.diags(s)) / self._rho
            size = n
        const = sp.triu(const, format="csc")
        const.sum_duplicates()
        # the pattern of K: the constant part, the cones' blocks and the diagonal of the first n rows
        diag = np.arange(n)
        H_pat = sp.csc_matrix((np.ones(rows.size + n), (np.r_[rows, diag], np.r_[cols, diag])), shape=(size, size))
        K = (abs(const) + H_pat).tocsc()
        K.sort_indices()
        const.sort_indices()
        self._K, self._size = K, size
        self._const = np.zeros(K.nnz)
        self._const[_positions(K, const)] = const.data
        self._H_at = _entry_positions(K, rows, cols)
        self._diag_at = _entry_positions(K, diag, diag)
        self._F = None
        self._factor_seconds = None     # no forecast of the first factorisation (module docstring)
        # without joints, a global problem's K is solved through its body-space Schur complement by
        # CHOLMOD when scikit-sparse is installed (_BodySchur); else qdldl factorises K itself
        self._schur = None
        run.info["factorization"] = "qdldl (KKT)"
        if p.is_global and not p.n_bilateral and cholmod() is not None:
            pattern = _BodySchur.complement_pattern(CS, p.M, d)
            analysis = cholmod().analyze(pattern)
            flops = cholesky_flops(pattern, analysis.P())
            layout = _BodySchur.layout(CS, n_c, d) if flops >= _SCHUR_MIN_FLOPS else None
            if layout is not None:
                self._schur = _BodySchur(CS, self._rho * p.M, n_c, d, layout, pattern, analysis)
                run.info["factorization"] = "cholmod (body-space Schur complement)"
            elif flops < _SCHUR_MIN_FLOPS:
                run.info["factorization"] += (f": the body-space complement's Cholesky ({flops:.3g} flops) is "
                                              f"below {_SCHUR_MIN_FLOPS:.0e}, where qdldl on K is as fast")

    @staticmethod
    def _stall(run: IterativeRun) -> None:
        """End a relaxed run STALLED; in the outer anti-relaxation loop, end only this sub-problem (its
        best iterate goes back to the loop, which judges progress by itself)."""
        if run.mode != "outer":
            run.stopped = StopCause.STALLED

    def _factor(self, H_blocks: np.ndarray | None, reg: np.ndarray, H_inv: np.ndarray | None = None) -> None:
        """K with the blocks H (None: the identity; ``H_inv`` their inverses W^2) and the
        regularisation ``reg`` on the first n diagonal entries, factorised (the symbolic analysis once
        per solve)."""
        self._fill(H_blocks, reg)
        K = self._K
        t0 = time.perf_counter()
        if self._schur is not None:
            self._schur.update(H_inv)
            self._F = self._schur
        elif self._F is None:
            self._F = qdldl.Solver(K, upper=True)
        else:
            self._F.update(K, upper=True)
        self._factor_seconds = time.perf_counter() - t0   # the forecast of the next one (Recorder.affords)

    def _fill(self, H_blocks: np.ndarray | None, reg: np.ndarray) -> None:
        """K's values: the blocks H (None: the identity) and the regularisation ``reg``."""
        K = self._K
        K.data[:] = self._const
        if H_blocks is None:
            K.data[self._diag_at] += 1.0
        else:
            K.data[self._H_at] += H_blocks.reshape(-1)[self._H_src]
        K.data[self._diag_at] += reg

    def _affords_first(self, run: IterativeRun, reg: np.ndarray) -> bool:
        """Whether the run's first factorisation (the starting point's, with the identity blocks) may
        start, forecast from its size (Recorder.affords_first) by the same factorisation of its matrix's
        leading blocks: CHOLMOD's Cholesky of the Schur complement Sigma, or qdldl's LDL^T of K."""
        if self._schur is not None:
            return run.rec.affords_first(self._schur.sigma(None), lambda block: cholmod().cholesky(block))
        self._fill(None, reg)
        return run.rec.affords_first(self._K, lambda block: qdldl.Solver(block, upper=True))

    def _solve(self, rhs: np.ndarray, reg: np.ndarray) -> np.ndarray:
        """K^-1 rhs for K without its regularisation, by iterative refinement: up to _REFINE steps,
        while the residual decreases and exceeds 1e-14 ||rhs||."""
        K, F = self._K, self._F
        full = np.zeros(self._size)
        full[:rhs.size] = rhs
        shift = np.zeros(self._size)
        shift[:rhs.size] = reg
        sol = F.solve(full)
        small = 1e-14 * np.linalg.norm(full, np.inf)
        last = np.inf
        res = np.empty(self._size)
        for _ in range(_REFINE):
            _upper_residual(K.indptr, K.indices, K.data, shift, sol, full, res)
            size = np.linalg.norm(res, np.inf)
            if not size < last or size <= small:
                break
            sol += F.solve(res)
            last = size
        self._residual = max(self._residual, min(size, last) / max(np.linalg.norm(full, np.inf), 1e-300))
        return sol[:rhs.size]

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        n_c, d, n = run.n_c, run.d, run.n
        m = n_c * d
        S, rho, step = self._S, self._rho, self._step
        r = run.linear_term
        # nu = (gamma / rho) S x: c = S r / gamma, gamma the root mean square of S r (module docstring)
        gamma = float(blocks.norm(S * r)) / np.sqrt(n) or 1.0
        c = S * r / gamma
        unit = gamma / rho

        def P_times(x):
            return S * run.apply_N(S * x) / rho

        # the joints' rows carry no barrier: a small regularisation keeps K quasi-definite there
        reg = np.zeros(n)
        reg[m:] = 1e-10
        self._F = None
        self._residual = 0.0
        if not run.rec.affords(self._factor_seconds):     # outer mode: the last sub-problem's forecasts it
            run.stopped = StopCause.TIMEOUT
            return
        if self._factor_seconds is None and not self._affords_first(run, reg):   # the first: from its size
            run.stopped = StopCause.TIMEOUT
            return
        self._factor(None, reg)
        x = self._solve(-c, reg)
        z = P_times(x) + c
        _into_cone(x[:m].reshape(n_c, d))
        _into_cone(z[:m].reshape(n_c, d))
        z[m:] = 0.0
        mu_prev = np.inf
        e = np.zeros((n_c, d))
        e[:, 0] = 1.0
        while True:
            nu = unit * S * x
            nu = run.project(nu - step * (run.apply_N(nu) + r))       # the point offered (docstring)
            if run.tick(nu, run.apply_N(nu) + run.r0):
                return
            xc, zc = x[:m].reshape(n_c, d), z[:m].reshape(n_c, d)
            mu = float(blocks.dot(x[:m], z[:m])) / n_c     # by blocks: the same on every BLAS (stall test)
            if not (_inside(xc) and _inside(zc)):     # rounding put a point on the boundary
                self._stall(run)
                return
            if not run.rec.affords(self._factor_seconds):   # a factorisation cannot be interrupted
                run.stopped = StopCause.TIMEOUT
                return
            W, W_inv, lam, H, W2 = _nt_scaling(xc, zc)
            self._factor(H, reg, W2)
            r_d = P_times(x) + c - z

            def direction(r_c, residual=True):
                v = _times(W_inv, _jordan_solve(lam, r_c))
                rhs = -r_d if residual else np.zeros(n)
                rhs[:m] += v.ravel()
                dx = self._solve(rhs, reg)
                dz = np.zeros(n)
                dz[:m] = (v - _times(H, dx[:m].reshape(n_c, d))).ravel()
                return dx, dz

            def predictor_corrector():
                lam_sq = _jordan(lam, lam)
                dx, dz = direction(-lam_sq)
                dxc, dzc = dx[:m].reshape(n_c, d), dz[:m].reshape(n_c, d)
                alpha = min(1.0, _max_step(xc, dxc), _max_step(zc, dzc))
                sigma = (1.0 - alpha) ** 3
                second = _jordan(_times(W_inv, dxc), _times(W, dzc))
                dx, dz = direction(sigma * mu * e - lam_sq - second)
                dxc, dzc = dx[:m].reshape(n_c, d), dz[:m].reshape(n_c, d)
                alpha = min(_max_step(xc, dxc), _max_step(zc, dzc))
                if alpha < 1.0:                           # one centrality corrector (module docstring)
                    trial = min(1.0, alpha + _CORRECTOR_REACH)
                    # its small right-hand side is solved to a larger relative residual: not a sign that
                    # the body-space complement lost accuracy (the step test judges the corrector)
                    judged = self._residual
                    cx, cz = direction(_centrality_correction(W_inv, W, xc, zc, dxc, dzc, trial, sigma * mu),
                                       residual=False)
                    self._residual = judged
                    cx += dx
                    cz += dz
                    grown = min(_max_step(xc, cx[:m].reshape(n_c, d)), _max_step(zc, cz[:m].reshape(n_c, d)))
                    if grown >= alpha + _CORRECTOR_GAIN * _CORRECTOR_REACH:
                        dx, dz, alpha = cx, cz, grown
                return dx, dz, min(1.0, _FRACTION * alpha)

            self._residual = 0.0
            dx, dz, alpha = predictor_corrector()
            if self._schur is not None and (self._residual > _SCHUR_RESIDUAL or alpha < _MIN_STEP or not mu < mu_prev):
                # the body-space complement loses accuracy when H^-1 spans too many orders of
                # magnitude (the refined solves' residual shows it): the rest of the run factorises
                # K itself (recorded in info)
                self._schur = self._F = None
                run.info["factorization"] += f", then qdldl (KKT) from iteration {run.k}"
                self._factor(H, reg)
                dx, dz, alpha = predictor_corrector()
            if alpha < _MIN_STEP or not mu < mu_prev:
                self._stall(run)
                return
            mu_prev = mu
            x = x + alpha * dx
            z = z + alpha * dz


#: the body-space path is taken when no contact's columns of C touch more rows than this (two rigid
#: bodies: 12); beyond, the dense per-contact blocks of its assembly would grow too large
_SCHUR_MAX_ROWS = 48
#: relative residual of the refined KKT solves above which the body-space path hands over to qdldl
#: (qdldl's refined solves reach about 1e-14)
_SCHUR_RESIDUAL = 1e-10
#: the body-space path is taken when the Cholesky of its complement Sigma costs at least this many
#: flops (sum over L's columns of their squared counts, from Sigma's pattern and CHOLMOD's ordering:
#: deterministic). Below it CHOLMOD's supernodal factorisation is dominated by its fixed costs and
#: qdldl's LDL^T of the larger K is as fast or faster: on generated lattice packings of spheres
#: (problems.synthetic.sphere_packing) the two are even at about 3e7 flops (500 spheres) and the
#: complement is 5x and 29x faster at 2,000 and 6,000 spheres (docs/solvers-performance.md)
_SCHUR_MIN_FLOPS = 3e7


class _BodySchur:
    """Solves of K = [H, S C^T; C S, -rho M] (no joints) through the body-space Schur complement

        Sigma = rho M + (C S) H^-1 (C S)^T    (n_dof x n_dof, symmetric positive definite):
        Sigma dy = (C S) H^-1 a - b,   dx = H^-1 (a - (C S)^T dy)    for K [dx; dy] = [a; b],

    with H^-1 block diagonal (one d x d block per cone) and Sigma factorised by CHOLMOD's supernodal
    Cholesky (Chen, Davis, Hager and Rajamanickam 2008). Sigma couples bodies that share a contact,
    the pattern of rho M + C C^T, and has n_dof rows against K's n + n_dof. The symbolic analysis is
    done once; each update assembles Sigma's values on that fixed pattern in one compiled pass
    (:func:`_assemble_schur`: per contact, the dense product V_i H_i^-1 V_i^T of its columns V_i of C S
    restricted to the rows they touch)."""

    def __init__(self, CS: sp.csr_matrix, rho_M: sp.spmatrix, n_c: int, d: int, layout, pattern: sp.csc_matrix,
                 analysis):
        n = CS.shape[1]
        self.n, self.d, self.n_c = n, d, n_c
        self.CS, self.CS_T = CS.tocsr(), CS.T.tocsr()
        self.rows, self.V, self.count = layout
        self.pattern = pattern
        self.at = _entry_positions(self.pattern, self.rows[:, :, None], self.rows[:, None, :])
        M = rho_M.tocoo()
        self.base = np.zeros(self.pattern.nnz)
        np.add.at(self.base, _entry_positions(self.pattern, M.row, M.col), M.data)
        self.H_inv = sp.bsr_matrix((np.ones((n_c, d, d)), np.arange(n_c), np.arange(n_c + 1)), shape=(n, n)).tocsr()
        self.factor = analysis

    @staticmethod
    def complement_pattern(CS: sp.spmatrix, M: sp.spmatrix, d: int) -> sp.csc_matrix:
        """Sigma's pattern (CSC, sorted, ones): M's, and every pair of rows of C S that one contact's
        columns touch (its block V_i H_i^-1 V_i^T)."""
        A = sp.coo_matrix(CS)
        touches = sp.csr_matrix((np.ones(A.nnz), (A.col // d, A.row)), shape=(-(-CS.shape[1] // d), CS.shape[0]))
        pattern = (abs(sp.csc_matrix(M)) + touches.T @ touches).tocsc()
        pattern.sum_duplicates()
        pattern.data[:] = 1.0
        pattern.sort_indices()
        return pattern

    @staticmethod
    def layout(CS: sp.spmatrix, n_c: int, d: int):
        """(rows, V, count): per contact the rows of C S its columns touch (padded with the last one),
        V_i (zero-padded) and their count; None when a contact touches more than _SCHUR_MAX_ROWS rows."""
        A = sp.coo_matrix(CS)
        contact = A.col // d
        keys = contact * np.int64(CS.shape[0]) + A.row       # (contact, row) pairs, vectorised grouping
        pairs = np.unique(keys)
        count = np.bincount(pairs // CS.shape[0], minlength=n_c).astype(np.int64)
        width = int(count.max()) if count.size else 0
        if width == 0 or width > _SCHUR_MAX_ROWS:
            return None
        start = np.r_[0, np.cumsum(count)[:-1]]
        owner = pairs // CS.shape[0]
        rank = np.arange(pairs.size) - start[owner]
        rows = np.empty((n_c, width), dtype=np.int64)
        rows[:] = (pairs % CS.shape[0])[np.minimum(start + count - 1, pairs.size - 1)][:, None]  # pad: the last row
        rows[owner, rank] = pairs % CS.shape[0]
        V = np.zeros((n_c, width, d))
        np.add.at(V, (contact, rank[np.searchsorted(pairs, keys)], A.col % d), A.data)
        return rows, V, count

    def sigma(self, H_inv: np.ndarray | None) -> sp.csc_matrix:
        """Sigma for the blocks H^-1 = W^2 (None: the identity), assembled on its pattern."""
        if H_inv is None:
            H_inv = np.ascontiguousarray(np.broadcast_to(np.eye(self.d), (self.n_c, self.d, self.d)))
        self.H_inv.data[:] = H_inv.reshape(-1)
        _assemble_schur(self.base, self.V, self.count, self.at, H_inv, self.pattern.data)
        return self.pattern

    def update(self, H_inv: np.ndarray | None) -> None:
        """Factorise Sigma for the blocks H^-1 = W^2 (None: the identity)."""
        self.factor.cholesky_inplace(self.sigma(H_inv))

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        a, b = rhs[:self.n], rhs[self.n:]
        Ha = self.H_inv @ a
        dy = self.factor(self.CS @ Ha - b)
        return np.concatenate([Ha - self.H_inv @ (self.CS_T @ dy), dy])


@njit(cache=True)
def _assemble_schur(base, V, count, at, H_inv, out):
    """out = base + sum_i V_i H_inv_i V_i^T scattered at the positions ``at`` (module's _BodySchur)."""
    out[:] = base
    n_c, width, d = V.shape
    T = np.empty((width, d))
    for i in range(n_c):
        k = count[i]
        for a in range(k):
            for c in range(d):
                acc = 0.0
                for l in range(d):
                    acc += V[i, a, l] * H_inv[i, l, c]
                T[a, c] = acc
        for a in range(k):
            for b in range(k):
                acc = 0.0
                for c in range(d):
                    acc += T[a, c] * V[i, b, c]
                out[at[i, a, b]] += acc


@njit(cache=True)
def _upper_residual(ptr, idx, val, shift, x, rhs, out):
    """out = rhs - (K - diag(shift)) x for the symmetric K given by its upper triangle in CSC (ptr, idx,
    val): one pass over the stored entries, each off-diagonal one used for both of its positions (the
    refinement's residual, without forming K's transpose or lower half)."""
    for i in range(x.shape[0]):
        out[i] = rhs[i] + shift[i] * x[i]
    for j in range(x.shape[0]):
        xj = x[j]
        acc = 0.0
        for p in range(ptr[j], ptr[j + 1]):
            i = idx[p]
            out[i] -= val[p] * xj
            if i != j:
                acc += val[p] * x[i]
        out[j] -= acc


def _entry_positions(K: sp.csc_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Where in K.data the entries (rows[k], cols[k]) lie (K in CSC with sorted indices, holding them):
    the keys column * size + row of K's entries are increasing."""
    size = np.int64(K.shape[0])
    keys = np.repeat(np.arange(K.shape[1], dtype=np.int64), np.diff(K.indptr)) * size + K.indices
    return np.searchsorted(keys, np.asarray(cols, dtype=np.int64) * size + rows)


def _positions(K: sp.csc_matrix, A: sp.csc_matrix) -> np.ndarray:
    """Where in K.data each entry of A.data lies (A in CSC, K's pattern holding A's)."""
    A = A.tocoo()
    return _entry_positions(K, A.row, A.col)
