"""Spectral projected gradient (SPG2 of Birgin, Martinez and Raydan 2000) with Barzilai-Borwein steps and
the non-monotone line search of Grippo, Lampariello and Lucidi (1986).

For f(nu) = 1/2 nu^T N nu + (r + a)^T nu over K x R^{n_b}, iteration k:

    d_k = P(nu_k - sigma_k g_k) - nu_k,                         g_k = N nu_k + r + a
    alpha = 1; while f(nu_k + alpha d_k) > max_{0 <= j < M} f(nu_{k-j}) + gamma alpha g_k^T d_k:
        alpha <- alpha_q if sigma_1 alpha <= alpha_q <= sigma_2 alpha else alpha / 2      (backtrack)
    nu_{k+1} = nu_k + alpha d_k
    sigma_{k+1} = s^T s / s^T y = ||d_k||^2 / d_k^T N d_k              (BB1, odd k)
              or s^T y / y^T y = d_k^T N d_k / ||N d_k||^2             (BB2, even k)
    clipped to [sigma_min, sigma_max]

with alpha_q the minimiser of the quadratic interpolating f(nu_k), g_k^T d_k and f(nu_k + alpha d_k),
and the paper's constants M = 10, gamma = 1e-4, sigma_1 = 0.1, sigma_2 = 0.9; sigma_min, sigma_max =
1e-10 / L_0, 1e10 / L_0 with L_0 the Lipschitz estimate of Melanz et al. 2015 line 6 (sigma_0 = 1 / L_0).
nu_{k+1} is feasible (a convex combination of nu_k and a projection, alpha <= 1).

Alternating the two Barzilai-Borwein steps (Dai and Fletcher 2005, "alternate BB") rather than BB1
alone: on the stacks of ../shared/data (BoxesStack1, N ill-conditioned) BB1 alone stalls near 4e-5
relative objective error after 20,000 iterations, the alternation reaches 1e-6 in about 6,000, and it
was not slower on the other shared problems (measured 2026-11-21).

f is quadratic, so one product N d_k per iteration gives everything: f along the ray is
f(nu_k) + alpha g^T d + alpha^2 / 2 d^T N d (every trial of the line search is free and alpha_q is the
exact minimiser along d), N nu_{k+1} = N nu_k + alpha N d_k, and y = N s makes both steps independent
of alpha.
N nu is recomputed from scratch every 100 iterations so that rounding cannot accumulate in it.

Anti-relaxed runs (inner mode) change r + a after each iteration; the non-monotone reference values
max f(nu_{k-j}) are then re-evaluated with the current linear term from the stored nu_{k-j} and
1/2 nu_{k-j}^T N nu_{k-j}, so the line search always compares values of one function. Both steps
use y = N s (not g_{k+1} - g_k, which would include the change of shift).

The iteration, its line search and the stopping measure run in one compiled loop (:func:`_iterations`,
the reference values in a ring buffer); Python touches it once per solve (once per iteration with a
history, once per few milliseconds of work when a time limit is to be checked).

info: backtracks (line-search reductions, all iterations).
options.params: memory (M, default 10), anti_relaxation, outer_patience.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.blocks import BLOCK, borrowed
from workbench.problem import borrowed_operator
from workbench.cones import _project_rows
from workbench.errors import InputError
from workbench.params import Param
from workbench.solvers.iterative import (dot, CHUNK_DONE, CONVERGED, F_OWN, ITERATIVE_PARAMS, K_D, K_INNER, K_ITER,
                                         K_MAX_ITER, K_OWN, K_STARTED, K_STOP, MAX_ITER, NEEDS_L, IterativeRun,
                                         IterativeSolver, LeanRun, apply_operator, intermediate_length, lean_state,
                                         lipschitz_ratio, measure_and_keep)

__all__ = ["BBSolver"]

GAMMA, SIGMA_1, SIGMA_2 = 1e-4, 0.1, 0.9
_REFRESH = 100


class BBSolver(IterativeSolver):
    name = "bb"
    summary = "spectral projected gradient (Barzilai-Borwein steps, non-monotone GLL line search)"
    params = ITERATIVE_PARAMS + (Param("memory", int, 10, "non-monotone memory M (reference values kept)"),)

    def setup(self, run: IterativeRun) -> None:
        self._memory = _memory(run.params)
        run.info["backtracks"] = 0

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        """The iterations in :func:`_iterations`: one compiled call (one per history row, or per chunk
        of a few milliseconds of work when a time limit is to be checked)."""
        op, n, memory = run.compiled_N, run.n, self._memory
        x = np.array(x0, dtype=float)
        work = np.empty(_ROWS * n + intermediate_length(op))
        past = np.empty((memory, n + 1))       # nu_j and 1/2 nu_j^T N nu_j (inner runs), f(nu_j) in column n
        chunk = run.chunk(self.iteration_work(op[2].size + op[5].size, n))
        fs, ks = run.compiled_state(chunk, floats=(0.0, 0.0, 0.0, 0.0), ints=(0, 0))   # sigmas, f; counters

        def start(L):                                        # Melanz et al. 2015 line 6, fallback
            fs[F_SIGMA] = 1.0 / L

        run.drive(lambda: _iterations(op, run.mu, x, run.r0, run.a, work, past, fs, ks), ks, fs, chunk,
                  work[_BEST * n:(_BEST + 1) * n], lambda: (x, work[_U * n:(_U + 1) * n]), start)
        run.info["backtracks"] += int(ks[K_BACKTRACKS])

    has_lean = True

    def iteration_work(self, entries: int, n: int) -> int:
        return entries + 12 * n

    def lean(self, W, r0, mu, d, max_iter, chunk, target, norm_r0, params) -> LeanRun:
        """:func:`_lean` on its two buffers, one made for the run."""
        n, memory = r0.shape[0], _memory(params)
        floats, ks = np.empty(_lean_floats(n, memory)), np.zeros(K_OWN + 2, dtype=np.int64)
        ptr, idx, val = W.indptr, W.indices, W.data
        fs = floats[:_FS]

        def start(L):                                        # Melanz et al. 2015 line 6, fallback
            fs[F_SIGMA] = 1.0 / L

        best = _FS + (2 + _BEST) * n
        return LeanRun(lambda: _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, chunk, target, norm_r0, d, memory),
                       start, fs, ks, floats[best:best + n], lambda: {"backtracks": int(ks[K_BACKTRACKS])})


def _memory(params) -> int:
    """The non-monotone memory M of ``params``, at least 1."""
    memory = int(params["memory"])
    if memory < 1:
        raise InputError(f"bb: memory must be >= 1, got {memory}")
    return memory


#: rows of the work array (then the intermediate vector of the operator)
_NX, _R, _D, _ND, _U, _SCRATCH, _BEST, _ROWS = 0, 1, 2, 3, 4, 5, 6, 7
#: BB's own slots of the compiled state (workbench.solvers.iterative's F_* and K_* layout): the step
#: sigma, its bounds, 1/2 x^T N x of the current x; line-search backtracks, reference values stored
F_SIGMA, F_SIGMA_MIN, F_SIGMA_MAX, F_QUAD = F_OWN, F_OWN + 1, F_OWN + 2, F_OWN + 3
K_BACKTRACKS, K_STORED = K_OWN, K_OWN + 1


@njit(cache=True)
def _value(quad, r, x):
    """f(x) = 1/2 x^T N x + r^T x from quad = 1/2 x^T N x: the one evaluation of f, so that the current
    point and its stored copy give the same number to the last bit (else rounding could put f(x)
    above every reference value and the line search would never end)."""
    return quad + dot(r, x)


@njit(cache=True)
def _reference(past, count, r, inner):
    """max_j f(nu_j) over the ``count`` stored values; in inner runs re-evaluated with the current
    linear term r from nu_j and 1/2 nu_j^T N nu_j (module docstring)."""
    n = r.shape[0]
    best = -np.inf
    for j in range(count):
        if not inner:
            value = past[j, n]
        elif n <= BLOCK:             # dot's one block, in its order, without a slice (ten times faster)
            linear = 0.0
            for k in range(n):
                linear += r[k] * past[j, k]
            value = past[j, n] + linear
        else:
            value = _value(past[j, n], r, past[j, :n])
        best = max(best, value)
    return best


@njit(cache=True)
def _iterations(op, mu, x, r0, a, work, past, fs, ks):
    """The module docstring's iteration until the stopping measure (:func:`measure_and_keep`) holds,
    max_iter iterations are done (-1: no cap) or the count reaches k_stop; one compiled call, x
    updated in place. ``past`` is the ring buffer of the non-monotone reference values (ks[K_STORED] of
    them stored). ``fs`` and ``ks``: the state of workbench.solvers.iterative's layout (F_*, K_*) with
    BB's own slots F_SIGMA, F_SIGMA_MIN, F_SIGMA_MAX, F_QUAD, K_BACKTRACKS and K_STORED. The first call
    sets sigma_0 = 1 / L_0 from line 6 of Melanz et al. 2015, or returns NEEDS_L when that gives no
    positive finite L_0: the caller then sets fs[F_SIGMA] = 1 / L_0 and calls again."""
    # the arrays borrowed once (workbench.blocks.borrowed): the calls of each iteration count no references
    op, mu, x, r0, a = borrowed_operator(op), borrowed(mu), borrowed(x), borrowed(r0), borrowed(a)
    work, past, fs, ks = borrowed(work), borrowed(past), borrowed(fs), borrowed(ks)
    n = x.shape[0]
    rows, tmp = work[:_ROWS * n].reshape((_ROWS, n)), work[_ROWS * n:]
    Nx, r, dv, Nd, u, scratch, best_x = rows[_NX], rows[_R], rows[_D], rows[_ND], rows[_U], rows[_SCRATCH], rows[_BEST]
    d, inner, max_iter, k_stop, memory = ks[K_D], ks[K_INNER] != 0, ks[K_MAX_ITER], ks[K_STOP], past.shape[0]
    m = mu.shape[0] * d
    if ks[K_STARTED] == 0:
        ks[K_STARTED] = 1
        apply_operator(op, tmp, x, Nx)
        for k in range(n):
            r[k] = r0[k] + a[k]
            scratch[k] = x[k]
        ratio = lipschitz_ratio(op, tmp, scratch, Nd)
        if not (ratio > 0 and ratio < np.inf):
            return NEEDS_L
        fs[F_SIGMA] = 1.0 / ratio
    if ks[K_STORED] == 0:                                    # sigma bounds and the first reference value
        fs[F_SIGMA_MIN], fs[F_SIGMA_MAX] = 1e-10 * fs[F_SIGMA], 1e10 * fs[F_SIGMA]
        fs[F_QUAD] = 0.5 * dot(x, Nx)
        past[0, :n] = x
        past[0, n] = fs[F_QUAD] if inner else _value(fs[F_QUAD], r, x)
        ks[K_STORED] = 1
    sigma, sigma_min, sigma_max = fs[F_SIGMA], fs[F_SIGMA_MIN], fs[F_SIGMA_MAX]
    while True:
        for k in range(n):                                   # d = P(x - sigma g) - x, g = N x + r
            dv[k] = x[k] - sigma * (Nx[k] + r[k])
        _project_rows(dv[:m], mu, d, dv[:m])
        gd = 0.0
        for k in range(n):
            dv[k] -= x[k]
            gd += (Nx[k] + r[k]) * dv[k]
        apply_operator(op, tmp, dv, Nd)
        dNd = dot(dv, Nd)
        fx = _value(fs[F_QUAD], r, x)
        f_ref = _reference(past, min(ks[K_STORED], memory), r, inner)
        alpha = 1.0
        while fx + alpha * gd + 0.5 * alpha * alpha * dNd > f_ref + GAMMA * alpha * gd and alpha > 0:
            alpha_q = -gd / dNd if dNd > 0 else 0.0
            alpha = alpha_q if SIGMA_1 * alpha <= alpha_q <= SIGMA_2 * alpha else 0.5 * alpha
            ks[K_BACKTRACKS] += 1
        for k in range(n):
            x[k] += alpha * dv[k]
        if ks[K_ITER] % _REFRESH == _REFRESH - 1:                 # N x afresh: no accumulated rounding
            apply_operator(op, tmp, x, Nx)
        else:
            for k in range(n):
                Nx[k] += alpha * Nd[k]
        for k in range(n):
            u[k] = Nx[k] + r0[k]
        ks[K_ITER] += 1
        if measure_and_keep(x, u, a, mu, d, inner, scratch, best_x, fs):
            return CONVERGED
        if max_iter >= 0 and ks[K_ITER] >= max_iter:
            return MAX_ITER
        if inner:
            for k in range(n):
                r[k] = r0[k] + a[k]
        fs[F_QUAD] = 0.5 * dot(x, Nx)
        slot = ks[K_STORED] % memory
        past[slot, :n] = x
        past[slot, n] = fs[F_QUAD] if inner else _value(fs[F_QUAD], r, x)
        ks[K_STORED] += 1
        # alternate BB1 = s^T s / s^T y and BB2 = s^T y / y^T y (s = alpha d, y = N s: alpha cancels)
        if dNd > 0:
            step = dot(dv, dv) / dNd if ks[K_ITER] % 2 else dNd / dot(Nd, Nd)
        else:
            step = sigma_max
        sigma = min(max(step, sigma_min), sigma_max)
        fs[F_SIGMA] = sigma
        if ks[K_ITER] >= k_stop:
            return CHUNK_DONE


#: the float state's length (fs: the shared slots and BB's four), then the lean run's buffer holds x, a,
#: the work rows and the reference values (:func:`_lean`)
_FS = F_OWN + 4


def _lean_floats(n: int, memory: int) -> int:
    return _FS + (2 + _ROWS) * n + memory * (n + 1)


@njit(cache=True)
def _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, k_stop, target, norm_r0, d, memory):
    """One call of a lean run (IterativeSolver._lean_solve) on the local W in CSR (ptr, idx, val): its
    arrays are views of ``floats`` (fs, then x, a, the work rows, the reference values: one
    allocation, made by the caller) and ``ks`` (zero from the caller); the first call (ks[K_D] still 0)
    sets the state of :func:`lean_state` and nu = 0, a = 0; then :func:`_iterations`. Returns its code."""
    n = r0.shape[0]
    ptr, idx, val, mu, r0 = borrowed(ptr), borrowed(idx), borrowed(val), borrowed(mu), borrowed(r0)
    floats, ks = borrowed(floats), borrowed(ks)
    fs = floats[:_FS]
    x, a = floats[_FS:_FS + n], floats[_FS + n:_FS + 2 * n]
    work = floats[_FS + 2 * n:_FS + (2 + _ROWS) * n]
    past = floats[_FS + (2 + _ROWS) * n:_FS + (2 + _ROWS) * n + memory * (n + 1)].reshape((memory, n + 1))
    if ks[K_D] == 0:
        lean_state(fs, ks, max_iter, k_stop, target, norm_r0, d)
        x[:] = 0.0
        a[:] = 0.0
    return _iterations((ptr, idx, val, ptr, idx, val, False), mu, x, r0, a, work, past, fs, ks)
