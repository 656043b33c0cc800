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
  needs, so :meth:`Run.tick` computes it once (workbench.solvers.iterative).
* Residual (19): the measure of :mod:`workbench.solvers.iterative` - eq. 39 (g_d = 1e-6) divided by
  max(||r||, ||gamma||, ||u||) for relaxed runs, the Siconos error for anti-relaxed ones - and the
  iterate with the smallest one is returned (21-22).
* If N (gamma_0 - gamma_hat_0) = 0 (a warm start equal to 1, or N = 0 along it), L starts at the mean
  diagonal of N instead: any positive start works, the backtracking corrects it.
* Cost: besides the products with N and the residual, the vector work of an iteration is three
  compiled passes over preallocated float64 arrays - the gradient step with its projection (10, 14),
  the dot products of tests (11) and (27), and the momentum step (18) with u. The numpy expressions
  they replace made about twenty passes and as many temporaries, which at 10,000 contacts cost as
  much as half a product with N (benchmarks/bench_iterative.py).

options.params: anti_relaxation ("inner" | "outer"), outer_patience (workbench.solvers.iterative).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from workbench.cones import project_contact_at
from workbench.metrics import _stopping_sums, lipschitz_estimate
from workbench.solvers.iterative import CCP_RESOLUTION, IterativeSolver, Run, apply_operator

__all__ = ["APGDSolver"]


@njit(cache=True)
def _step_contacts(y, N_y, r, t, mu, d, out):
    for i in range(mu.shape[0]):
        o = d * i
        for j in range(d):
            out[o + j] = y[o + j] - t * (N_y[o + j] + r[o + j])
        project_contact_at(out, o, mu[i], out, o, d)


@njit(cache=True)
def _gradient_step(y, N_y, r, t, mu, d, out):
    """out = P(y - t g) with g = N y + r (lines 9-10, 14), P onto K x R^{n_b}: one pass."""
    if d == 3:      # a constant: the compiler unrolls the loops over components (workbench.cones)
        _step_contacts(y, N_y, r, t, mu, 3, out)
    else:
        _step_contacts(y, N_y, r, t, mu, d, out)
    for k in range(mu.shape[0] * d, y.shape[0]):
        out[k] = y[k] - t * (N_y[k] + r[k])


@njit(cache=True, fastmath={"reassoc"})
def _test_terms(new, y, gamma, N_new, N_y, r):
    """The two sides of test (11), delta^T (N new - N y) and delta^T delta with delta = new - y, and
    the product of the restart test (27), g^T (new - gamma) with g = N y + r, in one pass. The sums
    may be reordered (fastmath reassoc): in order, each is a chain of dependent additions, two to
    three times slower than the memory traffic."""
    curvature = length = g_step = 0.0
    for k in range(new.shape[0]):
        delta = new[k] - y[k]
        curvature += delta * (N_new[k] - N_y[k])
        length += delta * delta
        g_step += (N_y[k] + r[k]) * (new[k] - gamma[k])
    return curvature, length, g_step


@njit(cache=True)
def _momentum(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u):
    """y = new + beta (new - gamma) and N y = N new + beta (N new - N gamma) (line 18), in place, and
    the velocity u = N new + r_0 of the new iterate (for Run.tick)."""
    for k in range(new.shape[0]):
        y[k] = new[k] + beta * (new[k] - gamma[k])
        N_y[k] = N_new[k] + beta * (N_new[k] - N_gamma[k])
        u[k] = N_new[k] + r0[k]


#: what _iterations returns: the run met its target, reached max_iter, or did the iterations asked
CONVERGED, MAX_ITER, CHUNK_DONE = 0, 1, 2


@njit(cache=True)
def _iterations(op, mu, d, r0, r, a, inner, step, norm_r0, target, max_iter, k_stop,
                bufs, N_bufs, y, N_y, u, scratch, best_x, fs, ks):
    """Lines 9-37 (one loop, compiled) until the stopping test holds, ``max_iter`` iterations are done
    (-1: no cap) or the iteration count reaches ``k_stop`` (a history sampling point or a time check).

    bufs = (gamma, new), N_bufs = (N gamma, N new), swapped every iteration, as the Python loop did
    (ks[3] counts the swaps: the caller swaps its references when odd). fs = [L, theta, best measure,
    measure, scale] and ks = [k, backtracks, restarts, swaps, offered] are read and updated. The
    stopping measure is that of :meth:`Run.tick`: inner runs the Siconos error with a = a(u) written
    into ``a`` and r = r_0 + a; relaxed runs (a fixed) eq. 39 / s <= max(target, CCP_RESOLUTION) and
    then the natural map with step 1 <= target. The best iterate is copied into ``best_x``."""
    gamma, new = bufs
    N_gamma, N_new = N_bufs
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain, tmp = op
    L, theta = fs[0], fs[1]
    while True:
        _gradient_step(y, N_y, r, 1.0 / L, mu, d, new)                                  # (9-10)
        apply_operator(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain, tmp, new, N_new)
        curvature, length, g_step = _test_terms(new, y, gamma, N_new, N_y, r)
        while curvature > L * length:                                                    # (11)
            L *= 2.0                                                                     # (12-13)
            _gradient_step(y, N_y, r, 1.0 / L, mu, d, new)                              # (14)
            apply_operator(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain, tmp, new, N_new)
            curvature, length, g_step = _test_terms(new, y, gamma, N_new, N_y, r)
            ks[1] += 1
        theta_new = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))      # (16)
        beta = theta * (1.0 - theta) / (theta * theta + theta_new)                       # (17)
        _momentum(new, gamma, N_new, N_gamma, beta, r0, y, N_y, u)                       # (18)
        ks[0] += 1                                                                       # (19-26)
        x_sq, u_sq, map_sq = _stopping_sums(new, u, a, step, mu, d, inner, scratch)
        scale = max(norm_r0, math.sqrt(x_sq), math.sqrt(u_sq))
        if not scale > 0:
            scale = 1.0
        err = math.sqrt(map_sq) / step / scale
        if inner:
            converged = err <= target
        else:
            converged = (err <= max(target, CCP_RESOLUTION)
                         and math.sqrt(_stopping_sums(new, u, a, 1.0, mu, d, False, scratch)[2]) / scale <= target)
        if err < fs[2] or converged:
            fs[2] = err
            best_x[:] = new
            ks[4] = 1
        fs[3], fs[4] = err, scale
        code = CHUNK_DONE
        if converged:
            code = CONVERGED
        elif max_iter >= 0 and ks[0] >= max_iter:
            code = MAX_ITER
        else:
            if g_step > 0:                                                               # (27-30)
                y[:] = new
                N_y[:] = N_new
                theta_new = 1.0
                ks[2] += 1
            L *= 0.9                                                                     # (31-32)
            if inner:                                                                    # (33-37)
                for k in range(r.shape[0]):
                    r[k] = r0[k] + a[k]
            theta = theta_new
        gamma, new = new, gamma
        N_gamma, N_new = N_new, N_gamma
        ks[3] += 1
        if code != CHUNK_DONE or ks[0] >= k_stop:
            fs[0], fs[1] = L, theta
            return code


class APGDSolver(IterativeSolver):
    name = "apgd"
    summary = "accelerated projected gradient with adaptive step, restart and anti-relaxation (Melanz et al. 2015 section 2.3)"

    def iterate(self, run: Run, x0: np.ndarray) -> None:
        """Lines 1-7 here; lines 9-37 in :func:`_iterations`, called once (no history: in chunks of
        about a few milliseconds of work between checks of the time limit) or once per iteration
        (history: a row per iteration)."""
        mu, d = np.ascontiguousarray(run.mu, dtype=float), run.d
        rec, op = run.rec, run.compiled_N
        gamma = np.array(x0, dtype=float)           # own buffers: gamma and new are swapped every iteration
        N_gamma = run.apply_compiled_N(gamma)
        L = lipschitz_estimate(run.problem, gamma, run.apply_compiled_N)                 # (6-7)
        y, N_y = gamma.copy(), N_gamma.copy()
        bufs, N_bufs = (gamma, np.empty_like(gamma)), (N_gamma, np.empty_like(gamma))
        u, best_x, r = np.empty_like(gamma), np.empty_like(gamma), run.linear_term
        inner = run.mode == "inner"
        fs = np.array([L, 1.0, rec.best_err, np.inf, 1.0])
        ks = np.zeros(5, dtype=np.int64)
        ks[0] = run.k
        cap = -1 if rec.max_iter is None else rec.max_iter
        chunk = 1 if rec.keep else max(1, 4_000_000 // (op[2].size + op[5].size + 10 * gamma.size))
        while True:
            ks[3] = 0
            code = _iterations(op, mu, d, run.r0, r, run.a, inner, run.measure_step, run.norm_r0, run.target,
                               cap, ks[0] + chunk, bufs, N_bufs, y, N_y, u, run._scratch, best_x, fs, ks)
            if ks[3] % 2:
                bufs, N_bufs = bufs[::-1], N_bufs[::-1]
            run.k = int(ks[0])
            run.converged = code == CONVERGED
            if rec.keep:
                run._record(bufs[0], u, fs[3], fs[4], rec.elapsed())
            if run.converged:
                break
            run.stopped = rec.capped(run.k)
            if run.stopped is not None:
                break
        if ks[4]:
            rec.best_x, rec.best_err = best_x, float(fs[2])
        run.info["backtracks"] = run.info.get("backtracks", 0) + int(ks[1])
        run.info["restarts"] = run.info.get("restarts", 0) + int(ks[2])
        run.info["lipschitz"] = float(fs[0])
