"""Accelerated projected gradient descent (APGD) with anti-relaxation, seed 000 section 2.3.

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
  nearly equal objective values. The seed prints ">=": with it the loop never ends when the projected
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

options.params: anti_relaxation ("inner" | "outer"), outer_patience (workbench.solvers.iterative).
"""

from __future__ import annotations

import numpy as np

from workbench.solvers.iterative import IterativeSolver, Run

__all__ = ["APGDSolver"]


class APGDSolver(IterativeSolver):
    name = "apgd"
    summary = "accelerated projected gradient with adaptive step, restart and anti-relaxation (seed 000 section 2.3)"
    defaults = {}

    def iterate(self, run: Run, x0: np.ndarray) -> None:
        N, project = run.apply_N, run.project
        r = run.linear_term
        gamma = x0
        N_gamma = N(gamma)
        diff = gamma - 1.0                                                  # gamma_0 - gamma_hat_0
        L = float(np.linalg.norm(N(diff)) / np.linalg.norm(diff))
        if not (np.isfinite(L) and L > 0):
            S, joints = run.diagonal_blocks
            L = float((np.trace(S, axis1=1, axis2=2).sum() + joints.sum()) / run.n) or 1.0
        y, N_y, theta = gamma, N_gamma, 1.0
        backtracks = restarts = 0
        while True:
            g = N_y + r                                                     # (9)
            t = 1.0 / L
            new = project(y - t * g)                                        # (10)
            N_new = N(new)
            delta = new - y
            while delta @ (N_new - N_y) > L * (delta @ delta):              # (11)
                L *= 2.0                                                    # (12-13)
                new = project(y - (1.0 / L) * g)                            # (14)
                N_new = N(new)
                delta = new - y
                backtracks += 1
            theta_new = 0.5 * (-theta * theta + theta * np.sqrt(theta * theta + 4.0))   # (16)
            beta = theta * (1.0 - theta) / (theta * theta + theta_new)                  # (17)
            step = new - gamma
            y = new + beta * step                                           # (18)
            N_y = N_new + beta * (N_new - N_gamma)
            if run.tick(new, N_new + run.r0):                               # (19-26)
                break
            if g @ step > 0:                                                # (27-30)
                y, N_y, theta_new = new, N_new, 1.0
                restarts += 1
            L *= 0.9                                                        # (31-32)
            if run.mode == "inner":                                         # (33-37)
                r = run.linear_term
            gamma, N_gamma, theta = new, N_new, theta_new
        run.info["backtracks"] = run.info.get("backtracks", 0) + backtracks
        run.info["restarts"] = run.info.get("restarts", 0) + restarts
        run.info["lipschitz"] = L
