"""Projected Jacobi with per-contact scaling (vectorised numpy), after Anitescu and Tasora's fixed-point
CCP iteration (seed 000 refs. [10, 11]).

    nu <- P_K( nu - omega E (N nu + r + a) ),   E = diag(eta_i I_d),  eta_i = d / trace(S_i)

with S_i the d x d diagonal block of N of contact i (eta_j = 1 / N_jj for a joint). Every contact
moves at once from the same nu: one product with N and one projection per iteration.

Why a scalar per contact and not the inverse block S_i^-1: a fixed point of nu = P(nu - omega B w)
satisfies -B w in the normal cone of K at nu, which is the CCP (-w in that normal cone) only when B
maps the normal cone into itself - true for a positive multiple of the identity on each cone, false
for a general SPD block. With E block-scalar the iteration is the projected gradient method in the
metric E^-1 (in which the projection onto a product of cones is still the Euclidean one per contact),
so it converges for omega < 2 / lambda_max(E^1/2 N E^1/2). The default omega is 1 / lambda_max,
estimated by 30 power iterations on E^1/2 N E^1/2 (power iteration underestimates lambda_max, so the
step stays below the 2 / lambda_max limit); options.params["omega"] overrides it.

Anti-relaxed runs update the shift a after each iteration (inner) or per outer loop
(workbench.solvers.iterative). options.params: omega (None: the estimate above), anti_relaxation,
outer_patience.
"""

from __future__ import annotations

import numpy as np

from workbench.errors import InputError
from workbench.solvers.iterative import IterativeSolver, Run

__all__ = ["JacobiSolver", "scaled_lambda_max"]

_POWER_ITERATIONS = 30


def scaled_lambda_max(run: Run, eta: np.ndarray, iterations: int = _POWER_ITERATIONS) -> float:
    """Power-iteration estimate of lambda_max(E^1/2 N E^1/2) with E = diag(eta) (a fixed seed)."""
    root = np.sqrt(eta)
    v = np.random.default_rng(0).standard_normal(run.n)
    v /= np.linalg.norm(v)
    lam = 0.0
    for _ in range(iterations):
        w = root * run.apply_N(root * v)
        lam = float(v @ w)
        nw = np.linalg.norm(w)
        if nw == 0:
            break
        v = w / nw
    return lam


class JacobiSolver(IterativeSolver):
    name = "jacobi"
    summary = "projected Jacobi with per-contact diagonal scaling (vectorised)"
    defaults = {"omega": None}

    def setup(self, run: Run) -> None:
        S, joints = run.diagonal_blocks
        trace = np.trace(S, axis1=1, axis2=2)
        if np.any(trace <= 0) or np.any(joints <= 0):
            raise InputError("jacobi: a contact or joint has a zero diagonal block in N")
        self._eta = np.concatenate([np.repeat(run.d / trace, run.d), 1.0 / joints])
        omega = run.params["omega"]
        if omega is None:
            omega = 1.0 / scaled_lambda_max(run, self._eta)
        elif not float(omega) > 0:
            raise InputError(f"jacobi: omega must be positive, got {omega}")
        self._step = float(omega) * self._eta
        run.info["omega"] = float(omega)

    def iterate(self, run: Run, x0: np.ndarray) -> None:
        x = x0
        u = run.apply_N(x) + run.r0
        while True:
            x = run.project(x - self._step * (u + run.a))
            u = run.apply_N(x) + run.r0
            if run.tick(x, u):
                break
