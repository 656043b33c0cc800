"""Accelerated projected gradient descent (APGD) with anti-relaxation, Melanz et al. 2015 section 2.3.

The algorithm, as printed (lines 1-39), for min f(gamma) = 1/2 gamma^T N gamma + r^T gamma over K:

    gamma_0 = 0 (or the warm start), gamma_hat_0 = 1, y_0 = gamma_0, r_0 = r, theta_0 = 1       (1-5)
    L = ||N (gamma_0 - gamma_hat_0)|| / ||gamma_0 - gamma_hat_0||,  t = 1 / L                      (6-7)
    for k = 0, 1, ...
        g = N y_k + r                                                                           (9)
        gamma_{k+1} = P_K(y_k - t g)                                                            (10)
        while f(gamma_{k+1}) > f(y_k) + g^T (gamma_{k+1} - y_k) + L/2 ||gamma_{k+1} - y_k||^2      (11)
            L = 2 L,  t = 1 / L,  gamma_{k+1} = P_K(y_k - t g)                                    (12-14)
        theta_{k+1} = (-theta_k^2 + theta_k sqrt(theta_k^2 + 4)) / 2                              (16)
        beta_{k+1} = theta_k (1 - theta_k) / (theta_k^2 + theta_{k+1})                            (17)
        y_{k+1} = gamma_{k+1} + beta_{k+1} (gamma_{k+1} - gamma_k)                               (18)
        residual of gamma_{k+1}; keep the best iterate; stop below the tolerance                  (19-26)
        if g^T (gamma_{k+1} - gamma_k) > 0:  y_{k+1} = gamma_{k+1}, theta_{k+1} = 1  (restart)     (27-30)
        L = 0.9 L,  t = 1 / L                                                                    (31-32)
        anti-relaxed: v_k = M^-1 (k + D gamma_{k+1}), r = r_0 + [mu_i ||u_t,i||, 0, 0]_i          (33-37)
    return the best iterate                                                                      (39)

Both tests (11) and (27) use the full gradient g = N y_k + r of the current problem, r included (and
shifted in anti-relaxed runs): dropping r there is the classic implementation error.

Implementation notes (why it differs from a literal transcription without changing the iterates):

* One product with N per iteration (plus one per backtracking step): N gamma_{k+1} is computed, and
  N y_{k+1} = N gamma_{k+1} + beta (N gamma_{k+1} - N gamma_k) is a linear combination of products
  already at hand, so g costs nothing.
* Test (11): f is quadratic, so f(gamma) - f(y) - g^T (gamma - y) = 1/2 delta^T N delta exactly with
  delta = gamma - y and g = N y + r; the test is evaluated in that form,
  delta^T (N gamma - N y) > L ||delta||^2, which is free of the cancellation of subtracting two
  nearly equal objective values. The paper prints ">=": with it the loop never ends when the projected
  step is null (delta = 0, e.g. gamma = y = 0 with every contact separating), so the strict
  inequality is used; the two differ only when both sides are equal.
* Anti-relaxation (33-37): u = D^T v_k + b = N gamma_{k+1} + r_0 on global and local problems alike
  (u = W gamma + q), from the product already computed; the shift a(u) is also what the Siconos error
  needs, so :meth:`IterativeRun.tick` computes it once (workbench.solvers.iterative).
* Residual (19): the measure of :mod:`workbench.solvers.iterative` - eq. 39 (g_d = 1e-6) divided by
  max(||r||, ||gamma||, ||u||) for relaxed runs, the Siconos error for anti-relaxed ones - and the
  iterate with the smallest one is returned (21-22).
* If N (gamma_0 - gamma_hat_0) = 0 (a warm start equal to 1, or N = 0 along it), L starts at the mean
  diagonal of N instead: any positive start works, the backtracking corrects it.
* Threads: the products, the three passes below and the stopping measure run over contacts on
  numba's pool for large problems, the sums by fixed blocks (workbench.blocks): the iterates are
  bit-identical for any thread count.
* Cost: besides the products with N and the residual, the vector work of an iteration is three
  compiled passes over preallocated float64 arrays - the gradient step with its projection (10, 14),
  the dot products of tests (11) and (27) (taken in the pass of N's last product, block by block, while
  each block of N gamma_{k+1} is in cache), and the momentum step (18) with u. The numpy expressions
  they replace made about twenty passes and as many temporaries, which at 10,000 contacts cost as
  much as half a product with N (benchmarks/timing/bench_iterative.py).
* The whole algorithm, lines 1-37, is one compiled call on one work array (:func:`_iterations`):
  Python allocates it and reads the state once per solve (per iteration with a history; per chunk
  of a few milliseconds of work when a time limit is to be checked). A solve of a few contacts is
  then a few microseconds of arithmetic, and what remains is the cost of that call.

options.params: anti_relaxation ("inner" | "outer"), outer_patience (workbench.solvers.iterative), device
(cpu | gpu | numpy: workbench.solvers.xp_first_order).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, uint64

from workbench.blocks import BLOCK, borrowed, csr_matvec, csr_rows, n_blocks, threaded, three_sums
from workbench.problem import borrowed_operator
from workbench.cones import projected_step
from workbench.solvers import xp_first_order
from workbench.solvers.iterative import (CHUNK_DONE, CONVERGED, F_OWN, ITERATIVE_PARAMS, K_D, K_INNER, K_ITER,
                                         K_MAX_ITER, K_OWN, K_STARTED, K_STOP, MAX_ITER, NEEDS_L, IterativeSolver,
                                         IterativeRun, LeanRun, apply_operator, intermediate_length, lean_state,
                                         lipschitz_ratio, measure_and_keep)

__all__ = ["APGDSolver"]


@njit(cache=True)
def _gradient_step(y, N_y, r, t, mu, d, out):
    """out = P(y - t g) with g = N y + r (lines 9-10, 14), P onto K x R^{n_b}: one pass, contacts in
    parallel on large problems (workbench.cones.projected_step)."""
    projected_step(y, N_y, r, None, t, mu, d, out, None)


@njit(cache=True)
def _terms_block(lo, hi, new, y, gamma, N_new, N_y, r):
    curvature = length = g_step = 0.0
    for k in range(uint64(lo), uint64(hi)):    # unsigned: no wraparound test per entry (csr_rows)
        delta = new[k] - y[k]
        curvature += delta * (N_new[k] - N_y[k])
        length += delta * delta
        g_step += (N_y[k] + r[k]) * (new[k] - gamma[k])
    return curvature, length, g_step


@njit(cache=True)
def _product_terms_block(lo, hi, ptr, idx, val, v, new, y, gamma, N_new, N_y, r):
    csr_rows(ptr, idx, val, v, N_new, lo, hi)
    return _terms_block(lo, hi, new, y, gamma, N_new, N_y, r)


_product_terms = three_sums(_product_terms_block)


@njit(cache=True)
def _product_and_test_terms(op, tmp, new, y, gamma, N_new, N_y, r):
    """N_new = N new (the products of workbench.problem.apply_operator, the same sums), then the two
    sides of test (11), delta^T (N new - N y) and delta^T delta with delta = new - y, and the product
    of the restart test (27), g^T (new - gamma) with g = N y + r. The sums are taken block by block in
    the pass of N's last product, each block of rows of N new summed as it is computed, while it is in
    cache: one loop over the thread pool instead of two. Summed by blocks (workbench.blocks): three
    independent chains of additions per block, the same sums for any thread count."""
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain = op
    if chain:
        csr_matvec(a_ptr, a_idx, a_val, new, tmp)
        return _product_terms(new.shape[0], (b_ptr, b_idx, b_val, tmp, new, y, gamma, N_new, N_y, r))
    return _product_terms(new.shape[0], (a_ptr, a_idx, a_val, new, new, y, gamma, N_new, N_y, r))


@njit(cache=True)
def _momentum_block(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u, lo, hi):
    for k in range(uint64(lo), uint64(hi)):    # unsigned: no wraparound test per entry (csr_rows)
        y[k] = new[k] + beta * (new[k] - gamma[k])
        N_y[k] = N_new[k] + beta * (N_new[k] - N_gamma[k])
        u[k] = N_new[k] + r0[k]


@njit(cache=True, parallel=True)
def _momentum_parallel(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u):
    n = new.shape[0]
    for b in prange(n_blocks(n)):
        _momentum_block(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True)
def _momentum(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u):
    """y = new + beta (new - gamma) and N y = N new + beta (N new - N gamma) (line 18), in place, and
    the velocity u = N new + r_0 of the new iterate (for IterativeRun.tick); in parallel on large problems."""
    if threaded(new.shape[0]):
        _momentum_parallel(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u)
    else:
        _momentum_block(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u, 0, new.shape[0])


#: rows of the work array: gamma and new (swapped), their products with N (swapped), y, N y, u,
#: the best iterate, the linear term r, the natural map of the stopping measure
_GAMMA, _N_GAMMA, _Y, _N_Y, _U, _BEST, _R, _SCRATCH, _ROWS = 0, 2, 4, 5, 6, 7, 8, 9, 10
#: APGD's own slots of the compiled state (workbench.solvers.iterative's F_* and K_* layout): the
#: Lipschitz estimate L and theta; backtracks, restarts and swaps of gamma and new
F_L, F_THETA = F_OWN, F_OWN + 1
K_BACKTRACKS, K_RESTARTS, K_SWAPS = K_OWN, K_OWN + 1, K_OWN + 2


@njit(cache=True)
def work_rows(work, n):
    """The (_ROWS, n) rows of the work array and the intermediate vector of the operator after them."""
    return work[:_ROWS * n].reshape((_ROWS, n)), work[_ROWS * n:]


@njit(cache=True)
def _start(op, tmp, x0, r0, a, work):
    """Lines 1-7: gamma_0 = y_0 = x0, their products with N, r = r_0 + a, and the ratio
    ||N (x0 - 1)|| / ||x0 - 1|| of line 6 (returned)."""
    gamma, N_gamma, diff = work[_GAMMA], work[_N_GAMMA], work[_SCRATCH]
    for k in range(x0.shape[0]):
        gamma[k] = x0[k]
        diff[k] = x0[k]
        work[_R, k] = r0[k] + a[k]
    apply_operator(op, tmp, gamma, N_gamma)
    work[_Y, :] = gamma
    work[_N_Y, :] = N_gamma
    return lipschitz_ratio(op, tmp, diff, work[_U])


@njit(cache=True)
def _iterations(op, mu, x0, r0, a, work, fs, ks):
    """The whole algorithm in one compiled call: lines 1-7 (:func:`_start`) on the first call, then
    lines 9-37 until the stopping test holds, max_iter iterations are done (-1: no cap) or the
    iteration count reaches k_stop (a history sampling point or a time check); later calls
    continue from the state in ``work`` (:func:`work_rows`: rows _GAMMA.. _SCRATCH of the length of
    r0, then the intermediate vector of the chained operator). The scalars travel in the two state
    arrays ``fs`` and ``ks`` of workbench.solvers.iterative's layout (F_*, K_*) with APGD's own slots
    F_L, F_THETA, K_BACKTRACKS, K_RESTARTS and K_SWAPS. gamma and new (rows 0 and 1) and their
    products (rows 2 and 3) are swapped every iteration (ks[K_SWAPS] counts the swaps: the current
    iterate is row ks[K_SWAPS] % 2). The stopping measure
    is that of :meth:`IterativeRun.tick`: inner runs the Siconos error with a = a(u) written into ``a`` and
    r = r_0 + a; relaxed runs (a fixed) eq. 39 / s <= max(target, CCP_RESOLUTION) and then the
    natural map with step 1 <= target. The best iterate is copied into row _BEST."""
    # the arrays borrowed once (workbench.blocks.borrowed): the calls of each iteration count no references
    op, mu, x0, r0, a = borrowed_operator(op), borrowed(mu), borrowed(x0), borrowed(r0), borrowed(a)
    work, fs, ks = borrowed(work), borrowed(fs), borrowed(ks)
    d, inner, max_iter, k_stop = ks[K_D], ks[K_INNER] != 0, ks[K_MAX_ITER], ks[K_STOP]
    rows, tmp = work_rows(work, r0.shape[0])
    if ks[K_STARTED] == 0:
        ratio = _start(op, tmp, x0, r0, a, rows)
        ks[K_STARTED] = 1
        if not (ratio > 0 and ratio < np.inf):
            return NEEDS_L
        fs[F_L] = ratio
    parity = ks[K_SWAPS] % 2
    gamma, new = rows[_GAMMA + parity], rows[_GAMMA + 1 - parity]
    N_gamma, N_new = rows[_N_GAMMA + parity], rows[_N_GAMMA + 1 - parity]
    y, N_y, u, best_x, r, scratch = rows[_Y], rows[_N_Y], rows[_U], rows[_BEST], rows[_R], rows[_SCRATCH]
    L, theta = fs[F_L], fs[F_THETA]
    while True:
        _gradient_step(y, N_y, r, 1.0 / L, mu, d, new)                                  # (9-10)
        curvature, length, g_step = _product_and_test_terms(op, tmp, new, y, gamma, N_new, N_y, r)
        while curvature > L * length:                                                    # (11)
            L *= 2.0                                                                     # (12-13)
            _gradient_step(y, N_y, r, 1.0 / L, mu, d, new)                              # (14)
            curvature, length, g_step = _product_and_test_terms(op, tmp, new, y, gamma, N_new, N_y, r)
            ks[K_BACKTRACKS] += 1
        theta_new = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))      # (16)
        beta = theta * (1.0 - theta) / (theta * theta + theta_new)                       # (17)
        _momentum(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u)                       # (18)
        ks[K_ITER] += 1                                                                  # (19-26)
        converged = measure_and_keep(new, u, a, mu, d, inner, scratch, best_x, fs)
        code = CHUNK_DONE
        if converged:
            code = CONVERGED
        elif max_iter >= 0 and ks[K_ITER] >= max_iter:
            code = MAX_ITER
        else:
            if g_step > 0:                                                               # (27-30)
                y[:] = new
                N_y[:] = N_new
                theta_new = 1.0
                ks[K_RESTARTS] += 1
            L *= 0.9                                                                     # (31-32)
            if inner:                                                                    # (33-37)
                for k in range(r.shape[0]):
                    r[k] = r0[k] + a[k]
            theta = theta_new
        gamma, new = new, gamma
        N_gamma, N_new = N_new, N_gamma
        ks[K_SWAPS] += 1
        if code != CHUNK_DONE or ks[K_ITER] >= k_stop:
            fs[F_L], fs[F_THETA] = L, theta
            return code


class APGDSolver(xp_first_order.OnDevice, IterativeSolver):
    name = "apgd"
    summary = "accelerated projected gradient with adaptive step, restart and anti-relaxation (Melanz et al. 2015 section 2.3)"
    params = ITERATIVE_PARAMS + (xp_first_order.DEVICE_PARAM, xp_first_order.THREADS_PARAM, xp_first_order.CHECK_PARAM)

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        """Lines 1-37 in :func:`_iterations`, called once (no history, and no time limit reached within
        a chunk of a few milliseconds of work), or once per iteration (history: a row per iteration).
        Python allocates the work arrays and reads the state between calls only. device = gpu or numpy:
        the same lines on an array module (workbench.solvers.xp_first_order)."""
        if run.params["device"] != "cpu":
            return xp_first_order.apgd(run, x0, run.params["device"])
        op, n = run.compiled_N, run.n
        work = np.empty(_ROWS * n + intermediate_length(op))       # one allocation: see _iterations
        chunk = run.chunk(self.iteration_work(op[2].size + op[5].size, n))
        fs, ks = run.compiled_state(chunk, floats=(0.0, 1.0), ints=(0, 0, 0))     # L, theta; counters

        def current():
            rows = work[:_ROWS * n].reshape(_ROWS, n)
            return rows[ks[K_SWAPS] % 2], rows[_U]

        def start(L):                                                                    # (6-7)
            fs[F_L] = L

        run.drive(lambda: _iterations(op, run.mu, x0, run.r0, run.a, work, fs, ks), ks, fs, chunk,
                  work[_BEST * n:(_BEST + 1) * n], current, start)
        run.info["backtracks"] = run.info.get("backtracks", 0) + int(ks[K_BACKTRACKS])
        run.info["restarts"] = run.info.get("restarts", 0) + int(ks[K_RESTARTS])
        run.info["lipschitz"] = float(fs[F_L])

    has_lean = True

    def iteration_work(self, entries: int, n: int) -> int:
        return entries + 10 * n

    def lean(self, W, r0, mu, d, max_iter, chunk, target, norm_r0, params) -> LeanRun:
        """:func:`_lean` on its two buffers, one made for the run."""
        n = r0.shape[0]
        floats, ks = np.empty(_FS + (2 + _ROWS) * n), np.zeros(K_OWN + 3, dtype=np.int64)
        ptr, idx, val = W.indptr, W.indices, W.data
        fs = floats[:_FS]

        def start(L):                                                                    # (6-7)
            fs[F_L] = L

        def info():
            return {"backtracks": int(ks[K_BACKTRACKS]), "restarts": int(ks[K_RESTARTS]), "lipschitz": float(fs[F_L])}

        best = _FS + (2 + _BEST) * n
        return LeanRun(lambda: _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, chunk, target, norm_r0, d),
                       start, fs, ks, floats[best:best + n], info)


#: the float state's length (fs: the shared slots and APGD's two); a lean run's buffer then holds x0, a and
#: the work rows (:func:`_lean`)
_FS = F_OWN + 2


@njit(cache=True)
def _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, k_stop, target, norm_r0, d):
    """One call of a lean run (IterativeSolver._lean_solve) on the local W in CSR (ptr, idx, val): its
    arrays are views of ``floats`` (fs, x0, the work rows: one allocation, made by the caller) and
    ``ks`` (zero from the caller); the first call (ks[K_D] still 0) sets the state of :func:`lean_state`
    with theta = 1, x0 = 0 and the shift a = 0; then :func:`_iterations`. Returns its code."""
    n = r0.shape[0]
    ptr, idx, val, mu, r0 = borrowed(ptr), borrowed(idx), borrowed(val), borrowed(mu), borrowed(r0)
    floats, ks = borrowed(floats), borrowed(ks)
    fs = floats[:_FS]
    x0 = floats[_FS:_FS + n]
    a = floats[_FS + n:_FS + 2 * n]
    work = floats[_FS + 2 * n:_FS + (2 + _ROWS) * n]
    if ks[K_D] == 0:
        lean_state(fs, ks, max_iter, k_stop, target, norm_r0, d)
        fs[F_THETA] = 1.0
        x0[:] = 0.0
        a[:] = 0.0
    return _iterations((ptr, idx, val, ptr, idx, val, False), mu, x0, r0, a, work, fs, ks)
