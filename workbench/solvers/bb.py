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

info: backtracks (line-search reductions, all iterations).
options.params: memory (M, default 10), anti_relaxation, outer_patience.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from workbench.errors import InputError
from workbench.metrics import lipschitz_estimate
from workbench.params import Param
from workbench.solvers.iterative import ITERATIVE_PARAMS, IterativeSolver, Run

__all__ = ["BBSolver"]

GAMMA, SIGMA_1, SIGMA_2 = 1e-4, 0.1, 0.9
_REFRESH = 100


class BBSolver(IterativeSolver):
    name = "bb"
    summary = "spectral projected gradient (Barzilai-Borwein steps, non-monotone GLL line search)"
    params = ITERATIVE_PARAMS + (Param("memory", int, 10, "non-monotone memory M (reference values kept)"),)

    def setup(self, run: Run) -> None:
        memory = int(run.params["memory"])
        if memory < 1:
            raise InputError(f"bb: memory must be >= 1, got {memory}")
        self._memory = memory
        run.info["backtracks"] = 0

    def iterate(self, run: Run, x0: np.ndarray) -> None:
        N = run.apply_N
        x = x0
        Nx = N(x)
        L0 = lipschitz_estimate(run.problem, x, N)           # Melanz et al. 2015 line 6
        sigma, sigma_min, sigma_max = 1.0 / L0, 1e-10 / L0, 1e10 / L0
        inner = run.mode == "inner"
        r = run.linear_term
        # reference values: f(nu_j) for a fixed linear term, (nu_j, 1/2 nu_j^T N nu_j) when it moves
        past: deque = deque(maxlen=self._memory)
        quad = 0.5 * (x @ Nx)
        past.append((x, quad) if inner else quad + r @ x)
        backtracks = 0
        while True:
            g = Nx + r
            d = run.project(x - sigma * g) - x
            Nd = N(d)
            gd, dNd = float(g @ d), float(d @ Nd)
            fx = quad + r @ x
            f_ref = max(q + r @ xj for xj, q in past) if inner else max(past)
            alpha = 1.0
            while fx + alpha * gd + 0.5 * alpha * alpha * dNd > f_ref + GAMMA * alpha * gd:
                alpha_q = -gd / dNd if dNd > 0 else 0.0
                alpha = alpha_q if SIGMA_1 * alpha <= alpha_q <= SIGMA_2 * alpha else 0.5 * alpha
                backtracks += 1
            x = x + alpha * d
            Nx = N(x) if run.k % _REFRESH == _REFRESH - 1 else Nx + alpha * Nd
            quad = 0.5 * (x @ Nx)
            if run.tick(x, Nx + run.r0):
                break
            if inner:
                r = run.linear_term
            past.append((x, quad) if inner else quad + r @ x)
            # alternate BB1 = s^T s / s^T y and BB2 = s^T y / y^T y (s = alpha d, y = N s: alpha cancels)
            step = (float(d @ d) / dNd if run.k % 2 else dNd / float(Nd @ Nd)) if dNd > 0 else sigma_max
            sigma = min(max(step, sigma_min), sigma_max)
        run.info["backtracks"] += backtracks
