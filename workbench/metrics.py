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

The judge (workbench.judging) also reads :func:`scaled_measures`: the same natural-map errors, cone and
normal-velocity violations on the *scaled* problem (each contact's impulses and velocities scaled by
powers of two that give its block of N a unit mean diagonal, then all by one power of two that makes
the largest entry about 1), so that they mean the same at any scale of N, r, mu and the masses and
cannot underflow or overflow; or the reason they cannot be formed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, uint64

from workbench.blocks import dot, sum_squares, three_sums
from workbench.cones import project_contact_at, projected_step
from workbench.problem import TimeStepProblem, apply_operator, intermediate_length

__all__ = ["evaluate", "dual_objective", "ccp_residual", "natural_map", "de_saxce_shift", "stopping_sums",
           "tangential_speed", "normalisation", "siconos_error", "joint_diagonal", "unknown_diagonal", "mean_diagonal", "lipschitz_estimate", "lipschitz_start",
           "scaled_measures", "SCALED_MEASURES", "CCP_RESIDUAL_STEP"]

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


@njit(cache=True, inline="always")
def _natural_map(nu, w, a, step, mu, d, out):
    """out = nu - P(nu - step (w + a)), a (None: 0) nonzero in the normal entries only (cones.projected_step)."""
    return projected_step(nu, w, None, a, step, mu, d, out, nu)


@njit(cache=True)
def _squares_block(lo, hi, nu, u, out):
    nu_sq = u_sq = map_sq = 0.0
    for k in range(uint64(lo), uint64(hi)):    # unsigned: no wraparound test per entry (csr_rows)
        nu_sq += nu[k] * nu[k]
        u_sq += u[k] * u[k]
        map_sq += out[k] * out[k]
    return nu_sq, u_sq, map_sq


_squares = three_sums(_squares_block)


@njit(cache=True, inline="always")
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


@njit(cache=True)
def _block_mean_diagonal(blocks):
    """trace(B_i) / d on the d entries of each contact i, from the (n_c, d, d) blocks B_i (compiled: a
    solve of a few contacts spent more in numpy's trace and repeat than in its iterations)."""
    n_c, d = blocks.shape[0], blocks.shape[1]
    out = np.empty(n_c * d)
    for i in range(n_c):
        t = 0.0
        for j in range(d):
            t += blocks[i, j, j]
        for j in range(d):
            out[d * i + j] = t / d
    return out


def unknown_diagonal(problem: TimeStepProblem, contacts_only: bool = False) -> np.ndarray:
    """Per unknown, the mean diagonal entry trace(N_ii) / d of its contact's block (repeated on the d
    entries), then N_jj at each joint (unless ``contacts_only``): the diagonal scaling of Jacobi's step
    and Newton's rho, without forming N."""
    contacts = _block_mean_diagonal(problem.N_diagonal_blocks)
    return contacts if contacts_only or not problem.n_bilateral else np.concatenate([contacts, joint_diagonal(problem)])


def mean_diagonal(problem: TimeStepProblem, contacts_only: bool = False) -> float:
    """The mean diagonal entry of N over all unknowns (or the contact unknowns only); 1 when it is not
    positive and finite. A local problem (no joints) sums W's diagonal entries in one compiled pass over
    its rows (the mean of its blocks' traces over d, without forming the blocks: a solve of a few contacts
    spent more in them than in its iterations)."""
    if not problem.is_global:
        W, size = problem.N, problem.n_contact_unknowns
        n = _csr_diagonal_sum(W.indptr, W.indices, W.data, size) / size if size else 0.0
    else:
        diag = unknown_diagonal(problem, contacts_only)
        n = float(np.add.reduce(diag) / diag.size) if diag.size else 0.0     # diag.mean()'s sum, without its 2 us
    return n if np.isfinite(n) and n > 0 else 1.0


@njit(cache=True)
def _csr_diagonal_sum(indptr, indices, data, n):
    """The sum of the diagonal entries of the first n rows of a CSR matrix (duplicates summed)."""
    total = 0.0
    for row in range(n):
        for jj in range(indptr[row], indptr[row + 1]):
            if indices[jj] == row:
                total += data[jj]
    return total


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
def _violations(nu, u, mu, d, scratch):
    """max_i dist(gamma_i, K_i) and max(0, -min_i u_n,i) (``scratch``: a work array of nu's length)."""
    cone_sq, min_un = 0.0, np.inf
    for i in range(mu.shape[0]):
        o = d * i
        min_un = min(min_un, u[o])
        project_contact_at(nu, o, mu[i], scratch, o, d)
        dist = 0.0
        for j in range(d):
            dist += (nu[o + j] - scratch[o + j]) ** 2
        cone_sq = max(cone_sq, dist)
    return math.sqrt(cone_sq), max(0.0, -min_un)


@njit(cache=True)
def _measure_sums(nu, u, r, mu, d, g_d, a, scratch):
    """The sums and extremes :func:`evaluate` needs, in compiled passes (a solve of a few contacts
    would otherwise spend more time in the numpy calls of its metrics than in its iterations):
    nu.(u + r), nu.u, ||nu||^2, ||u||^2, the squared natural maps of the Siconos error (a = a(u)), of
    the relaxed error (a = 0, step 1) and of eq. 39 (step g_d), max_i |gamma_n,i u_n,i|,
    max(0, -min_i u_n,i) and max_i dist(gamma_i, K_i). ``a`` (zeros) and ``scratch`` are work arrays of the length of nu."""
    for k in range(nu.shape[0]):
        scratch[k] = u[k] + r[k]
    dual2, gap = dot(nu, scratch), dot(nu, u)
    _write_de_saxce_shift(u, mu, d, a)
    sic_sq = sum_squares(_natural_map(nu, u, a, 1.0, mu, d, scratch))
    rel_sq = sum_squares(_natural_map(nu, u, None, 1.0, mu, d, scratch))
    ccp_sq = sum_squares(_natural_map(nu, u, None, g_d, mu, d, scratch))
    compl = 0.0
    for i in range(mu.shape[0]):
        compl = max(compl, abs(nu[d * i] * u[d * i]))
    cone, normal = _violations(nu, u, mu, d, scratch)
    return dual2, gap, sum_squares(nu), sum_squares(u), sic_sq, rel_sq, ccp_sq, compl, normal, cone


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
    dual2, gap, nu_sq, u_sq, sic_sq, rel_sq, ccp_sq, compl, normal, cone = sums
    out: dict[str, float] = {"dual_objective": 0.5 * dual2}
    if problem.is_global:
        v = problem.velocity(nu)
        with np.errstate(over="ignore", invalid="ignore"):     # beyond the doubles' range: inf, or nan for inf - inf
            out["primal_objective"] = float(0.5 * v @ (problem.M @ v) - problem.k @ v)
    out["duality_gap"] = gap
    norm_r = problem.norm_r
    scale = normalisation(norm_r, math.sqrt(nu_sq), math.sqrt(u_sq))
    if not _SAFE_SQUARES[0] < scale < _SAFE_SQUARES[1] and np.isfinite(nu).all() and np.isfinite(u).all():
        # squares that over- or underflow: the same errors of the vectors divided by one power of two
        # (exact), which makes the largest entry about 1
        nu_c, u_c, r_c = _power_of_two_scaled(nu, u, r, np.zeros(n, dtype=np.int64))
        sums_c = _measure_sums(nu_c, u_c, r_c, mu, problem.d, float(g_d), np.zeros(n), np.empty(n))
        scale = normalisation(np.linalg.norm(r_c), math.sqrt(sums_c[2]), math.sqrt(sums_c[3]))
        sic_sq, rel_sq = sums_c[4], sums_c[5]
        norm_r = float(np.linalg.norm(r_c))
    out["siconos_error"] = math.sqrt(sic_sq) / scale
    out["siconos_error_q"] = out["siconos_error"] * scale / (norm_r if norm_r > 0 else 1.0)
    out["relaxed_error"] = math.sqrt(rel_sq) / scale
    out["ccp_residual"] = math.sqrt(ccp_sq) / g_d
    out["complementarity"] = compl
    out["normal_velocity_violation"] = normal
    out["cone_violation"] = cone
    if problem.n_bilateral:
        out["bilateral_violation"] = float(np.abs(u[problem.n_contact_unknowns:]).max())
    if reference is not None:
        ref = np.asarray(reference, dtype=float).reshape(-1)
        den = np.linalg.norm(ref)
        out["reference_distance"] = float(np.linalg.norm(nu - ref) / (den if den > 0 else 1.0))
    return out


#: the measures of :func:`scaled_measures` (all Siconos-normalised on the scaled problem)
SCALED_MEASURES = ("scaled_siconos_error", "scaled_relaxed_error", "scaled_cone_violation",
                   "scaled_normal_violation", "units_factor")

#: mu at or above this makes a cone a half-space in floating point: mu eps >= 1, so mu ||u_t|| swamps
#: u_n in the De Saxce velocity and ||gamma_t|| <= mu gamma_n tells nothing beyond gamma_n >= 0
HALF_SPACE_MU = 1.0 / np.finfo(float).eps


@njit(cache=True)
def _exponents(diag, e):
    """e[k] = the integer with 2^e ~ 1 / sqrt(diag[k]) (diag = m 2^x, m in [0.5, 1): e = -(x // 2)); an
    unknown whose diagonal is 0 (a contact between fixed bodies) gets the median exponent of the others
    (truncated to an integer). False when ``diag`` holds inf or nan."""
    positive = 0
    for k in range(diag.shape[0]):
        if not math.isfinite(diag[k]):
            return False
        if diag[k] > 0:
            positive += 1
    known = np.empty(positive)
    j = 0
    for k in range(diag.shape[0]):
        if diag[k] > 0:
            e[k] = -(math.frexp(diag[k])[1] // 2)
            known[j] = e[k]
            j += 1
    fill = int(np.median(known)) if positive else 0
    for k in range(diag.shape[0]):
        if not diag[k] > 0:
            e[k] = fill
    return True


#: exponents below the largest entry's past which an entry becomes 0 (beyond the subnormals' 2^-1074)
_LOWEST_SHIFT = -1100


@njit(cache=True)
def _top_exponent(x, e, sign, top):
    """max(top, the binary exponent of x[k] 2^(sign e[k]) over the nonzero x[k])."""
    for k in range(x.shape[0]):
        m, ex = math.frexp(x[k])
        if m != 0:
            top = max(top, ex + sign * e[k])
    return top


@njit(cache=True)
def _shifted(x, e, sign, top):
    """x[k] 2^(sign e[k] - top), exact (only exponents change) except what falls below 2^_LOWEST_SHIFT of
    the largest entry, which becomes 0."""
    out = np.empty(x.shape[0])
    for k in range(x.shape[0]):
        m, ex = math.frexp(x[k])
        out[k] = math.ldexp(m, min(max(ex + sign * e[k] - top, _LOWEST_SHIFT), 0))
    return out


@njit(cache=True)
def _power_of_two_scaled(nu, u, r, e):
    """nu 2^-e, u 2^e and r 2^e (e per entry), all divided by the one power of two 2^top that brings
    their largest entry to [0.5, 1): exact in floating point (only exponents change; what falls below
    2^-1100 of the largest entry becomes 0)."""
    top = _top_exponent(r, e, 1, _top_exponent(u, e, 1, _top_exponent(nu, e, -1, -(1 << 30))))
    top = 0 if top == -(1 << 30) else top
    return _shifted(nu, e, -1, top), _shifted(u, e, 1, top), _shifted(r, e, 1, top)


@njit(cache=True)
def _all_finite(x):
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return False
    return True


#: why scaled_measures cannot be formed, by the code _scaled_sums returns
_UNFORMABLE = {1: "the impulses hold inf or nan", 2: "r (q) hold inf or nan", 3: "u = N nu + r hold inf or nan",
               4: "the diagonal of N is not finite (overflow in N = D^T M^-1 D, or inf/nan in the data)"}


@njit(cache=True)
def _scaled_sums(nu, u, r, diag, mu, d):
    """The sums of :func:`scaled_measures`, compiled (a solve of a few contacts otherwise spent most of
    its call in the numpy calls of this check): (code, ||map_siconos'||, ||map_relaxed'||, cone violation',
    normal violation', ||r'||, ||nu'||, ||u'||, max_k |e_k|) on the scaled vectors ('); code 0, or the key
    of :data:`_UNFORMABLE` that says why they cannot be formed."""
    code = 1 if not _all_finite(nu) else 2 if not _all_finite(r) else 3 if not _all_finite(u) else 0
    if code:
        return code, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0
    e = np.zeros(diag.shape[0], dtype=np.int64)
    if not _exponents(diag, e):
        return 4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0
    nu_s, u_s, r_s = _power_of_two_scaled(nu, u, r, e)
    a = np.zeros(nu.shape[0])
    out = np.empty(nu.shape[0])
    _write_de_saxce_shift(u_s, mu, d, a)
    sic = math.sqrt(sum_squares(_natural_map(nu_s, u_s, a, 1.0, mu, d, out)))
    rel = math.sqrt(sum_squares(_natural_map(nu_s, u_s, None, 1.0, mu, d, out)))
    cone, normal = _violations(nu_s, u_s, mu, d, out)
    e_max = 0
    for k in range(e.shape[0]):
        e_max = max(e_max, abs(e[k]))
    return (0, sic, rel, cone, normal, math.sqrt(sum_squares(r_s)), math.sqrt(sum_squares(nu_s)),
            math.sqrt(sum_squares(u_s)), e_max)



#: normalisations between which the sums of squares of evaluate neither overflow nor lose the
#: natural map to underflow; outside, the errors are computed again on vectors scaled by a power of two
_SAFE_SQUARES = (1e-140, 1e140)


def scaled_measures(problem: TimeStepProblem, nu: np.ndarray) -> tuple[dict[str, float], str | None]:
    """The natural-map errors (Siconos and relaxed), the cone violation and the normal-velocity
    violation of ``nu`` on the scaled problem, each divided by the Siconos normalisation
    (:func:`normalisation`) of the scaled vectors; and None, or the reason they cannot be formed
    (then the dict is empty and no point can be judged solved). ``units_factor`` is kappa =
    max_i max(D_i^2, D_i^-2): scaling a contact's units by t changes a natural-map error, and the
    Siconos normalisation, by factors between min(t, 1/t) and max(t, 1/t), so in exact arithmetic the
    scaled errors are at most kappa times the plain ones (and at least 1/kappa of them).

    The scaled problem: with D = diag(2^e_i) per contact (and per joint), e_i from the mean diagonal
    of the block (:func:`unknown_diagonal`), N' = D N D, r' = D r, nu' = D^-1 nu, u' = D u = N' nu' + r';
    then r', nu', u' are all divided by one power of two c that brings their largest entry to [0.5, 1).
    Both scalings are exact in floating point (powers of two), map each cone K_mu onto itself and keep
    the De Saxce shift (mu ||D_i u_t,i|| = D_i mu ||u_t,i||): a solution of one problem is a solution of
    the other, and impulses and velocities are in commensurate units whatever N's scale (the plain
    siconos_error adds an impulse to a velocity). Sums of squares of entries at most 1 cannot overflow;
    what underflows is below 2^-1022 of the largest entry.

    It cannot be formed when nu, u = N nu + r, r or N's diagonal hold inf or nan, or a friction
    coefficient is not finite or mu eps >= 1 (:data:`HALF_SPACE_MU`): that cone is a half-space in
    floating point and the De Saxce velocity u_n + mu ||u_t|| loses u_n."""
    nu = np.ascontiguousarray(nu, dtype=float).reshape(-1)
    mu = np.ascontiguousarray(problem.mu, dtype=float)
    if not np.isfinite(mu).all():
        return {}, "a friction coefficient is not finite"
    if mu.size and mu.max() >= HALF_SPACE_MU:
        i = int(np.argmax(mu))
        return {}, (f"mu = {mu[i]:.3g} at contact {i} makes its cone a half-space in floating point "
                    f"(mu eps >= 1)")
    r = np.ascontiguousarray(problem.r, dtype=float)
    with np.errstate(all="ignore"):
        u = np.ascontiguousarray(problem.relative_velocity(nu), dtype=float)
    code, sic, rel, cone, normal, norm_r, norm_nu, norm_u, e_max = _scaled_sums(
        nu, u, r, np.ascontiguousarray(unknown_diagonal(problem), dtype=float), mu, problem.d)
    if code:
        return {}, _UNFORMABLE[code]
    scale = normalisation(norm_r, norm_nu, norm_u)
    return {"scaled_siconos_error": sic / scale, "scaled_relaxed_error": rel / scale,
            "scaled_cone_violation": cone / scale, "scaled_normal_violation": normal / scale,
            "units_factor": math.ldexp(1.0, min(2 * int(e_max), 1023))}, None
