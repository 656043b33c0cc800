"""Quality measures of a candidate solution, computed by the workbench from the impulses alone.

Every solver, whatever it claims about its own convergence, is judged by these functions applied to
the impulses it returns; they exist once, here. Notation: nu = [gamma; lambda] the unknowns,
u = N nu + r the relative velocity (D^T v + b at the contacts, G^T v + b_G at the joints).

Measures (all evaluated on the exact, unrelaxed Coulomb problem unless stated):

- ``dual_objective``   1/2 nu^T N nu + r^T nu: objective of the relaxed dual CCQO (Mazhar et al. 2014 eq. 24,
  Melanz et al. 2015 eq. 14), whatever formulation produced nu.
- ``primal_objective`` 1/2 v^T M v - k^T v with v = M^-1 (k + C nu): objective of the relaxed primal
  (Mazhar et al. 2014 eq. 23); global problems only. At the relaxed optimum,
  primal = -dual - 1/2 k^T M^-1 k (strong duality of the CCQO).
- ``duality_gap``      nu^T u = sum_i gamma_i . u_i. For any nu, primal + dual + 1/2 k^T M^-1 k = nu^T u,
  so this is the Lagrangian gap of the relaxed pair; 0 at the relaxed optimum.
- ``siconos_error``    || nu - P(nu - u_hat) ||_2 / max(||r||, ||nu||, ||u||), with the De Saxce velocity
  u_hat_i = u_i + [mu_i ||u_t,i||, 0, 0] and P the projection onto K x R^{n_b}: the natural map of the
  exact Coulomb problem (Siconos fc3d_compute_error). ``siconos_error_q`` divides by ||r|| (= ||q||)
  only, as the published FCLib comparisons and older Siconos releases do.
- ``relaxed_error``    the same natural map and normalisation with u instead of u_hat: the error of the
  relaxed CCP (Mazhar et al. 2014 eq. 13), by which relaxed formulations are judged.
- ``ccp_residual``     ||(nu - P(nu - g_d (N nu + r))) / g_d||_2 (Melanz et al. 2015 eq. 39), the projected-gradient
  residual of the relaxed CCQO, with g_d = 1e-6 (the "small value" of Melanz et al. 2015; Chrono's APGD uses it).
  Units of velocity [m/s].
- ``complementarity``  max_i |gamma_n,i u_n,i|: the complementarity error of the unrelaxed normal
  condition 0 <= u_n ⊥ gamma_n >= 0 (Melanz et al. 2015 eq. 8) [J]. The relaxed solution leaves
  u_n = mu ||u_t|| > 0 where gamma_n > 0, so it shows there.
- ``normal_velocity_violation`` max(0, -min_i u_n,i): separating-velocity violation [m/s].
- ``cone_violation``   max_i dist(gamma_i, K_i) [N s].
- ``bilateral_violation`` ||G^T v + b_G||_inf [m/s], when there are joints.
- ``reference_distance`` ||nu - nu_ref|| / ||nu_ref||, when a reference solution is given.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from workbench.blocks import dot, sum_squares, three_sums
from workbench.cones import project_contact_at, projected_step
from workbench.problem import TimeStepProblem, apply_operator, intermediate_length

__all__ = ["evaluate", "dual_objective", "ccp_residual", "natural_map", "de_saxce_shift", "stopping_sums",
           "tangential_speed", "normalisation", "siconos_error", "joint_diagonal", "unknown_diagonal", "mean_diagonal", "lipschitz_estimate", "lipschitz_start",
           "CCP_RESIDUAL_STEP"]

#: g_d of Melanz et al. 2015 eq. 39.
CCP_RESIDUAL_STEP = 1e-6


def tangential_speed(problem: TimeStepProblem, u: np.ndarray) -> np.ndarray:
    """||u_t,i|| per contact (n_c,), the slip speed."""
    ut = problem.contacts(u)[:, 1:]
    return np.sqrt(np.einsum("ij,ij->i", ut, ut))


@njit(cache=True)
def _write_de_saxce_shift(u, mu, d, a):
    """a[d i] = mu_i ||u_t,i|| for every contact i (the other entries of a are left as they are)."""
    for i in range(mu.shape[0]):
        o = d * i
        ut = 0.0
        for j in range(1, d):
            ut += u[o + j] * u[o + j]
        a[o] = mu[i] * np.sqrt(ut)


def de_saxce_shift(problem: TimeStepProblem, u: np.ndarray) -> np.ndarray:
    """The vector [mu_i ||u_t,i||, 0, 0]_i padded with zeros for the joints (length n_unknowns).

    Adding it to u gives the De Saxce velocity; adding it to r is anti-relaxation (Melanz et al. 2015 eq. 15,
    alpha_i = mu_i lambda_i with lambda_i = ||u_t,i||, eq. 28), with a plus sign.
    """
    u = np.ascontiguousarray(u, dtype=float)
    if u.shape != (problem.n_unknowns,):
        raise ValueError(f"velocity of shape {u.shape}; the problem has {problem.n_unknowns} unknowns")
    s = np.zeros(problem.n_unknowns)
    _write_de_saxce_shift(u, np.ascontiguousarray(problem.mu, dtype=float), problem.d, s)
    return s


def dual_objective(problem: TimeStepProblem, nu: np.ndarray, u: np.ndarray | None = None) -> float:
    """1/2 nu^T N nu + r^T nu, using u = N nu + r when given (1/2 nu.(u + r))."""
    if u is None:
        u = problem.relative_velocity(nu)
    return float(0.5 * nu @ (u + problem.r))


@njit(cache=True)
def _natural_map(nu, w, a, step, mu, d, out):
    """out = nu - P(nu - step (w + a)), a (None: 0) nonzero in the normal entries only (cones.projected_step)."""
    return projected_step(nu, w, None, a, step, mu, d, out, nu)


@njit(cache=True)
def _squares_block(lo, hi, nu, u, out):
    nu_sq = u_sq = map_sq = 0.0
    for k in range(lo, hi):
        nu_sq += nu[k] * nu[k]
        u_sq += u[k] * u[k]
        map_sq += out[k] * out[k]
    return nu_sq, u_sq, map_sq


_squares = three_sums(_squares_block)


@njit(cache=True)
def _stopping_sums(nu, u, a, step, mu, d, de_saxce, out):
    if de_saxce:                    # a_i = [mu_i ||u_t,i||, 0, 0] from this u
        _write_de_saxce_shift(u, mu, d, a)
    _natural_map(nu, u, a, step, mu, d, out)
    # a pass of its own (fused into the map, it ran two to four times slower), by blocks (workbench.blocks)
    return _squares(nu.shape[0], (nu, u, out))


def stopping_sums(problem: TimeStepProblem, nu: np.ndarray, u: np.ndarray, shift: np.ndarray, step: float,
                  de_saxce: bool, scratch: np.ndarray) -> tuple[float, float, float]:
    """(||nu||^2, ||u||^2, ||nu - P(nu - step (u + a))||^2) in two compiled passes without temporaries, for
    the stopping tests of the iterative solvers (workbench.solvers.iterative), which need them every
    iteration; ``scratch`` (length n_unknowns) receives the natural map.

    ``shift`` holds a, zero outside the normal entries: the anti-relaxation shift (fixed), 0 for the
    relaxed problem, or with ``de_saxce`` it is overwritten with a(u) = [mu_i ||u_t,i||, 0, 0]_i, so that
    the third sum is the squared Siconos natural map of the exact problem (u + a(u) = u_hat). step = g_d
    gives Melanz et al. 2015 eq. 39 (times g_d); step = 1 the natural-map errors. The sums are by blocks
    (workbench.blocks): the same for any thread count."""
    return _stopping_sums(nu, u, shift, float(step), np.ascontiguousarray(problem.mu, dtype=float), problem.d,
                          bool(de_saxce), scratch)


def natural_map(problem: TimeStepProblem, nu: np.ndarray, w: np.ndarray, step: float = 1.0) -> np.ndarray:
    """nu - P(nu - step * w), with P the projection onto K x R^{n_b} (workbench.cones).

    One compiled pass without temporaries: the iterative solvers' stopping measures evaluate it every
    iteration."""
    nu, w = np.ascontiguousarray(nu, dtype=float), np.ascontiguousarray(w, dtype=float)
    if nu.shape != (problem.n_unknowns,) or w.shape != nu.shape:
        raise ValueError(f"natural map of vectors of shapes {nu.shape} and {w.shape}; the problem has "
                         f"{problem.n_unknowns} unknowns")
    return _natural_map(nu, w, None, float(step), np.ascontiguousarray(problem.mu, dtype=float), problem.d,
                        np.empty_like(nu))


def normalisation(norm_r: float, norm_nu: float, norm_u: float) -> float:
    """Siconos's normalisation of the natural-map errors, max(||r||, ||nu||, ||u||) (1 when all are 0),
    from the three norms; NaN when one overflowed (a diverged iterate): a relative error divided by
    inf would be 0, and such a point would pass for an exact solution."""
    s = max(float(norm_r), float(norm_nu), float(norm_u))
    if s == math.inf or s != s:
        return math.nan
    return s if s > 0 else 1.0


def siconos_error(problem: TimeStepProblem, nu: np.ndarray, u: np.ndarray, shift: np.ndarray | None = None,
                  scale: float | None = None) -> float:
    """||nu - P(nu - (u + a))|| / max(||r||, ||nu||, ||u||) with a the De Saxce shift a(u) (or ``shift``),
    u = N nu + r already computed: the ``siconos_error`` of :func:`evaluate` alone, for the methods that
    need it every iteration (``scale``: the normalisation, when the caller has it)."""
    a = de_saxce_shift(problem, u) if shift is None else shift
    nm = float(np.linalg.norm(natural_map(problem, nu, u + a)))
    if scale is None:
        scale = normalisation(np.linalg.norm(problem.r), np.linalg.norm(nu), np.linalg.norm(u))
    return nm / scale


def joint_diagonal(problem: TimeStepProblem) -> np.ndarray:
    """The diagonal entries of N at the joint unknowns (n_b,): G_j^T M^-1 G_j without forming N where M
    is diagonal, else from N (formed, sparse)."""
    if not problem.n_bilateral:
        return np.zeros(0)
    if problem.is_global and problem.M_is_diagonal:
        joints = problem.G.multiply(problem.G).T @ problem.solve_M(np.ones(problem.n_dof))
    else:
        joints = problem.N.diagonal()[problem.n_contact_unknowns:]
    return np.asarray(joints, dtype=float).ravel()


def unknown_diagonal(problem: TimeStepProblem, contacts_only: bool = False) -> np.ndarray:
    """Per unknown, the mean diagonal entry trace(N_ii) / d of its contact's block (repeated on the d
    entries), then N_jj at each joint (unless ``contacts_only``): the diagonal scaling of Jacobi's step
    and Newton's rho, without forming N."""
    per_contact = np.trace(problem.N_diagonal_blocks, axis1=1, axis2=2) / problem.d
    contacts = np.repeat(per_contact, problem.d)
    return contacts if contacts_only or not problem.n_bilateral else np.concatenate([contacts, joint_diagonal(problem)])


def mean_diagonal(problem: TimeStepProblem, contacts_only: bool = False) -> float:
    """The mean diagonal entry of N over all unknowns (or the contact unknowns only); 1 when it is not
    positive and finite."""
    diag = unknown_diagonal(problem, contacts_only)
    n = float(diag.mean()) if diag.size else 0.0
    return n if np.isfinite(n) and n > 0 else 1.0


def lipschitz_estimate(problem: TimeStepProblem, x0: np.ndarray, apply_N=None) -> float:
    """Melanz et al. 2015 algorithm line 6: L = ||N (x0 - x_hat)|| / ||x0 - x_hat|| with x_hat = 1, the initial
    step estimate of the projected-gradient methods; the mean diagonal of N when that is not positive
    and finite (any positive start works where the method backtracks). ``apply_N`` (default
    problem.apply_N) is the operator the method iterates with."""
    diff = np.asarray(x0, dtype=float) - 1.0
    return lipschitz_start(problem, float(np.linalg.norm((apply_N or problem.apply_N)(diff)) / np.linalg.norm(diff)))


def lipschitz_start(problem: TimeStepProblem, ratio: float) -> float:
    """The start of :func:`lipschitz_estimate` from the ratio ||N (x0 - x_hat)|| / ||x0 - x_hat|| (a
    compiled solver computes it itself): the ratio, or the mean diagonal of N when it is not positive
    and finite."""
    return ratio if math.isfinite(ratio) and ratio > 0 else mean_diagonal(problem)


def ccp_residual(problem: TimeStepProblem, nu: np.ndarray, grad: np.ndarray,
                 g_d: float = CCP_RESIDUAL_STEP) -> float:
    """Melanz et al. 2015 eq. 39 for the gradient ``grad`` = N nu + r (or N nu + r + a when anti-relaxed)."""
    return float(np.linalg.norm(natural_map(problem, nu, grad, g_d)) / g_d)


@njit(cache=True)
def _measure_sums(nu, u, r, mu, d, g_d, a, scratch):
    """The sums and extremes :func:`evaluate` needs, in compiled passes (a solve of a few contacts
    would otherwise spend more time in the numpy calls of its metrics than in its iterations):
    nu.(u + r), nu.u, ||nu||^2, ||u||^2, the squared natural maps of the Siconos error (a = a(u)), of
    the relaxed error (a = 0, step 1) and of eq. 39 (step g_d), max_i |gamma_n,i u_n,i|, min_i u_n,i
    and max_i dist(gamma_i, K_i)^2. ``a`` (zeros) and ``scratch`` are work arrays of the length of nu."""
    for k in range(nu.shape[0]):
        scratch[k] = u[k] + r[k]
    dual2, gap = dot(nu, scratch), dot(nu, u)
    _write_de_saxce_shift(u, mu, d, a)
    sic_sq = sum_squares(_natural_map(nu, u, a, 1.0, mu, d, scratch))
    rel_sq = sum_squares(_natural_map(nu, u, None, 1.0, mu, d, scratch))
    ccp_sq = sum_squares(_natural_map(nu, u, None, g_d, mu, d, scratch))
    compl, min_un, cone_sq = 0.0, np.inf, 0.0
    for i in range(mu.shape[0]):
        o = d * i
        compl = max(compl, abs(nu[o] * u[o]))
        min_un = min(min_un, u[o])
        project_contact_at(nu, o, mu[i], scratch, o, d)
        dist = 0.0
        for j in range(d):
            dist += (nu[o + j] - scratch[o + j]) ** 2
        cone_sq = max(cone_sq, dist)
    return dual2, gap, sum_squares(nu), sum_squares(u), sic_sq, rel_sq, ccp_sq, compl, min_un, cone_sq


@njit(cache=True)
def _velocity_and_sums(op, tmp, nu, r, mu, d, g_d, a, scratch, u):
    """u = N nu + r into ``u`` with the operator ``op`` of TimeStepProblem.compiled_operator (N nu =
    B (A nu), or A nu; ``tmp`` the intermediate A nu), then :func:`_measure_sums`: one compiled call
    for the metrics of a problem whose TimeStepProblem.apply_N makes these same products (a local
    problem, a global one with a diagonal M), so u is the one relative_velocity gives, to the bit."""
    apply_operator(op, tmp, nu, u)
    for k in range(u.shape[0]):
        u[k] += r[k]
    return _measure_sums(nu, u, r, mu, d, g_d, a, scratch)


def evaluate(problem: TimeStepProblem, nu: np.ndarray, *, reference: np.ndarray | None = None,
             g_d: float = CCP_RESIDUAL_STEP) -> dict[str, float]:
    """All measures of the module docstring for the unknowns ``nu`` (length n_unknowns)."""
    nu = np.ascontiguousarray(nu, dtype=float).reshape(-1)
    n = nu.shape[0]
    if n != problem.n_unknowns:
        raise ValueError(f"solution has length {n}, the problem has {problem.n_unknowns} unknowns")
    r = np.asarray(problem.r, dtype=float)
    mu = np.ascontiguousarray(problem.mu, dtype=float)
    if problem.is_global and not problem.M_is_diagonal and not problem.condensable:   # N nu through M's factor
        u = problem.relative_velocity(nu)
        sums = _measure_sums(nu, u, r, mu, problem.d, float(g_d), np.zeros(n), np.empty(n))
    else:
        op, u = problem.compiled_operator, np.empty(n)
        sums = _velocity_and_sums(op, np.empty(intermediate_length(op)), nu, r, mu, problem.d,
                                  float(g_d), np.zeros(n), np.empty(n), u)
    dual2, gap, nu_sq, u_sq, sic_sq, rel_sq, ccp_sq, compl, min_un, cone_sq = sums
    out: dict[str, float] = {"dual_objective": 0.5 * dual2}
    if problem.is_global:
        v = problem.velocity(nu)
        out["primal_objective"] = float(0.5 * v @ (problem.M @ v) - problem.k @ v)
    out["duality_gap"] = gap
    norm_r = problem.norm_r
    scale = normalisation(norm_r, math.sqrt(nu_sq), math.sqrt(u_sq))
    out["siconos_error"] = math.sqrt(sic_sq) / scale
    out["siconos_error_q"] = out["siconos_error"] * scale / (norm_r if norm_r > 0 else 1.0)
    out["relaxed_error"] = math.sqrt(rel_sq) / scale
    out["ccp_residual"] = math.sqrt(ccp_sq) / g_d
    out["complementarity"] = compl
    out["normal_velocity_violation"] = max(0.0, -min_un)
    out["cone_violation"] = math.sqrt(cone_sq)
    if problem.n_bilateral:
        out["bilateral_violation"] = float(np.abs(u[problem.n_contact_unknowns:]).max())
    if reference is not None:
        ref = np.asarray(reference, dtype=float).reshape(-1)
        den = np.linalg.norm(ref)
        out["reference_distance"] = float(np.linalg.norm(nu - ref) / (den if den > 0 else 1.0))
    return out
