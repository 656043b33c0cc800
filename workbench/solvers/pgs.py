"""Projected Gauss-Seidel / SOR over contacts with an exact local solver (numba kernel).

One sweep visits the contacts (and then the joints) in order, or in a random order per sweep, and
replaces the impulse of each by the exact solution of its one-contact problem with the others frozen.
For contact i with the d x d diagonal block S_i of N (its symmetric part) and
w_i = (N nu + r + a)_i the current local velocity:

    x* = argmin_{x in K_i} 1/2 x^T S_i x + c^T x,     c = w_i - S_i nu_i,                       (L)

then nu_i <- P_K(nu_i + omega (x* - nu_i)) (the projection is only active for omega > 1: for
omega <= 1 the point lies on the segment between two points of K_i). A fixed point has x* = nu_i, i.e.
K_i ∋ nu_i ⊥ w_i ∈ K_i^*: the CCP, whatever omega and the order. Writing c with S_i instead of the full
block also makes the skew part of a non-symmetric W block (Siconos dumps) enter through w_i only,
so the fixed points are those of W itself. Joints (free, scalar): lambda_j <- lambda_j - omega w_j / N_jj.

Inner anti-relaxation: w_i is the velocity (N nu + r)_i plus [mu_i ||w_t,i||, 0, 0] from the same,
current velocity, just before the contact is solved - the per-contact form of Melanz et al. 2015 lines 33-37
(a Gauss-Seidel update of the shift). The outer mode and relaxed runs use the fixed linear term r + a.

Exact solution of (L) for d = 2, mu > 0: K_i is a wedge with two edges, so the minimiser is the apex,
the unconstrained minimiser -S_i^-1 c or the minimiser on the better edge, in closed form
(:func:`_solve_wedge`). For d = 3 (and any d), mu > 0: with T = diag(mu, 1, ..) the cone becomes the Lorentz cone
Q = {x0 >= ||x_t||} in x~ = T x, the objective 1/2 x~^T A x~ + c~^T x~ with A = T^-1 S T^-1, c~ = T^-1 c.
Three cases:
  (a) c~ in Q (= Q^*): x* = 0;
  (b) the unconstrained minimiser -A^-1 c~ lies in Q: it is x~*;
  (c) otherwise x~* is on the boundary: A x~ + c~ = lambda R x~ with R = diag(1, -1, ..), lambda > 0
      (the multiplier s = A x~ + c~ in Q, orthogonal to x~), x~^T R x~ = 0, x~0 > 0.
With A = L L^T and L^-1 R L^-T = V diag(Lam) V^T (one eigenvalue Lam_+ > 0, the others < 0: the inertia
of R), G = V^T L^-1, c^ = G c~: x~(lambda) = G^T z, z_j = -c^_j / (1 - lambda Lam_j) and
x~^T R x~ = phi(lambda) = sum_j Lam_j c^_j^2 / (1 - lambda Lam_j)^2. phi increases on (0, 1/Lam_+), and
psi(m) = sum_j Lam_j c^_j^2 / (m - Lam_j)^2 (phi with lambda = 1/m, times lambda^2) increases on
(0, Lam_+): each branch has at most one root, found by safeguarded Newton (bisection when Newton leaves
the bracket) to machine precision; the root with x~0 > 0 (the KKT point of Q rather than of -Q) is
the minimiser - the problem is strictly convex, so it is unique (:func:`_solve_secular`); when
neither branch has a sign change, the answer sits at an end of a bracket that rounding excluded (the
apex, or the unconstrained minimiser on the boundary: :func:`_bracket_end`). G and Lam are computed once per solve,
contact by contact in compiled d x d arithmetic (Cholesky, triangular inverse, cyclic Jacobi
eigen-decomposition); a sweep costs one pass over the rows of N plus O(d^2) per contact.
For mu = 0: x* = [max(0, -c_n / S_nn), 0, 0]. A block whose smallest eigenvalue is below 1e-12 times
the largest gets S_i + eps I (the c = w - S_i nu_i form turns it into a proximal step: the fixed points
do not change).

Matrix-free sweep (global problems with a diagonal M, e.g. every rigid-body scene): N is never formed.
The sweep keeps z = M^-1 C nu, reads (N nu)_row = C[:, row] . z from the sparse column of C and, after
updating unknown row by delta, adds delta M^-1 C[:, row] to z (Chrono's PSOR in velocity form): a sweep
costs two passes over the nonzeros of C instead of one over those of N, which has many more when
bodies carry several contacts. z is recomputed from nu before every sweep (one product) so that
rounding cannot drift. Otherwise (local problems: W is the data; a non-diagonal M, whose M^-1 C is
dense) the sweep reads the rows of N, formed once, sparse (problem.N; W_s for a relaxed non-symmetric
W). Diagonal blocks S_i come from problem.N_diagonal_blocks, which does not form N either.

Stopping: after each sweep u = N nu + r is formed (one product: C^T z, or N nu) and judged by the
measure of IterativeRun.tick (workbench.solvers.iterative.stopping_measure). Sweeps, products and measure run in
one compiled loop (:func:`_iterations`); Python touches it once per solve (once per sweep when a
history is kept or the order is random).

options.params: omega (relaxation, 0 < omega < 2, default 1), random_order (default False), seed
(random order seed, default 0), anti_relaxation, outer_patience.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from workbench.blocks import borrowed
from workbench.cones import project_contact
from workbench.errors import InputError
from workbench.params import Param
from workbench.problem import _csr_diagonal_blocks, csr_matvec
from workbench.solvers.iterative import (F_OWN, GO_ON, ITERATIVE_PARAMS, K_D, K_INNER, K_OWN, K_STARTED, IterativeRun,
                                         IterativeSolver, LeanRun, count_and_check, intermediate_length, lean_state,
                                         symmetrise_blocks)

__all__ = ["PGSSolver", "local_factors", "solve_local"]

_NEWTON_MAX = 100


@njit(cache=True)
def _secular_root(ch2, lam, inverted, pole):
    """Root in (0, pole) of the increasing function phi (inverted=False) or psi (inverted=True) of
    the module docstring, negative at 0: Newton from 0, bisection of the bracket [lo, hi] whenever
    the Newton point leaves it; stops when the Newton step or the bracket reaches round-off."""
    lo, hi = 0.0, pole
    t = 0.0
    for _ in range(_NEWTON_MAX):
        f = 0.0
        df = 0.0
        for j in range(lam.shape[0]):
            den = (t - lam[j]) if inverted else (1.0 - t * lam[j])
            term = lam[j] * ch2[j] / (den * den)
            f += term
            df += (-2.0 if inverted else 2.0 * lam[j]) * term / den     # > 0 term by term
        if f < 0.0:
            lo = t
        elif f > 0.0:
            hi = t
        else:
            return t
        newton = t - f / df
        if lo < newton < hi:
            if abs(newton - t) <= 4e-16 * newton:
                return newton
            t = newton
        else:
            t = 0.5 * (lo + hi)
        if hi - lo <= 4e-16 * hi:
            return t
    return t


@njit(cache=True)
def solve_local(S, G, lam, mu, c, out, work):
    """Exact minimiser of 1/2 x^T S x + c^T x over K_mu (module docstring) into ``out``; G and lam are
    the factors of :func:`local_factors` for this contact (not read for d = 2: :func:`_solve_wedge`),
    ``work`` a (4, d) scratch array. Returns False if no boundary root has x~0 > 0 (d = 3; rare, and
    counted in info["local_failures"]; ``out`` is then left unchanged). Written with explicit loops: d <= 3, where a BLAS call
    costs more than the arithmetic."""
    d = c.shape[0]
    if mu == 0.0:
        for j in range(d):
            out[j] = 0.0
        out[0] = max(0.0, -c[0] / S[0, 0])
        return True
    if d == 2:
        _solve_wedge(S, mu, c, out)
        return True
    return _solve_secular(S, G, lam, mu, c, out, work)


@njit(cache=True)
def _solve_wedge(S, mu, c, out):
    """(L) for d = 2, mu > 0, in closed form: the 2D cone K_mu = {|x_t| <= mu x_n} is a wedge with the
    two edges v = (1, +-mu), so the minimiser of the strictly convex objective is (a) the apex when c
    is in the dual cone (c_n >= mu |c_t|), else (b) the unconstrained minimiser -S^-1 c when it lies in
    K_mu, else (c) the minimiser on the better edge, t v with t = -c.v / v^T S v > 0; the edges are
    compared by -c.v / sqrt(v^T S v), the square root of twice their objective's decrease, with no
    square of c (a contact at rest has |c| ~ 1e-158). No factors, no iteration."""
    if c[0] / mu >= abs(c[1]):                              # (a), as the secular solver tests it
        out[0] = 0.0
        out[1] = 0.0
        return
    s00, s01, s11 = S[0, 0], 0.5 * (S[0, 1] + S[1, 0]), S[1, 1]
    det = s00 * s11 - s01 * s01
    x0 = (s01 * c[1] - s11 * c[0]) / det                    # (b) -S^-1 c
    x1 = (s01 * c[0] - s00 * c[1]) / det
    if mu * x0 >= abs(x1):
        out[0] = x0
        out[1] = x1
        return
    best, t_best, slope = -1.0, 0.0, 0.0
    for sign in (1.0, -1.0):                                # (c) the edges
        v1 = sign * mu
        cv = c[0] + v1 * c[1]
        if cv < 0.0:
            vsv = s00 + 2.0 * v1 * s01 + v1 * v1 * s11
            gain = -cv / np.sqrt(vsv)
            if gain > best:
                best, t_best, slope = gain, -cv / vsv, v1
    out[0] = t_best
    out[1] = t_best * slope


@njit(cache=True)
def _secular_pole(ch, G, lam, big, mu, out, z, cand):
    """(c) of :func:`_solve_secular` when c^_+ = 0 (the last component, along the eigenvector of the
    positive eigenvalue Lam_+; a diagonal block with c_n = 0, as at a resting contact of spheres):
    phi and psi are negative on their whole branches and the multiplier is the pole lambda = 1 / Lam_+
    itself, the "hard case" of trust-region subproblems. There z_j = -c^_j / (1 - Lam_j / Lam_+) for
    the negative eigenvalues and z_+ = +-sqrt(-sum_j Lam_j z_j^2 / Lam_+), so that x~^T R x~ = 0; the
    sign with x~0 > 0 is the minimiser (s = lambda R x~ is then in Q and orthogonal to x~). Computed
    for c^ / ``big`` and scaled back, as the roots are. False when neither sign has x~0 > 0."""
    d = ch.shape[0]
    top = lam[d - 1]
    acc = 0.0
    for j in range(d - 1):
        z[j] = -(ch[j] / big) / (1.0 - lam[j] / top)
        acc -= lam[j] * z[j] * z[j]
    root = math.sqrt(acc / top)
    best0 = 0.0
    for sign in (1.0, -1.0):
        z[d - 1] = sign * root
        best0 = _keep_candidate(G, z, big, mu, cand, out, best0)
    return best0 > 0.0


@njit(cache=True, inline="always")
def _unconstrained(G, ch, cand):
    """x~_u = -G^T c^ into cand: the unconstrained minimiser, in the coordinates x~ = T x."""
    d = ch.shape[0]
    for l in range(d):
        acc = 0.0
        for j in range(d):
            acc -= G[j, l] * ch[j]
        cand[l] = acc


@njit(cache=True, inline="always")
def _from_tilde(cand, mu, out):
    """x = T^-1 x~ into ``out`` (T = diag(mu, 1, ..))."""
    out[0] = cand[0] / mu
    for j in range(1, cand.shape[0]):
        out[j] = cand[j]


@njit(cache=True, inline="always")
def _keep_candidate(G, z, scale, mu, cand, out, best0):
    """x~ = G^T z times ``scale`` into cand; when x~0 > best0, x = T^-1 x~ into ``out``. Returns the
    larger x~0."""
    d = z.shape[0]
    for l in range(d):
        acc = 0.0
        for j in range(d):
            acc += G[j, l] * z[j]
        cand[l] = acc * scale
    if cand[0] <= best0:
        return best0
    _from_tilde(cand, mu, out)
    return cand[0]


@njit(cache=True)
def _tangential_norm(v):
    """||v_t|| = ||(v_1, .., v_{d-1})|| by hypot, which squares nothing: no overflow at |v| ~ 1e160
    (the sum of squares overflowed, and a contact at the apex was reported as having no root)."""
    acc = 0.0
    for j in range(1, v.shape[0]):
        acc = math.hypot(acc, v[j])
    return acc


@njit(cache=True)
def _solve_secular(S, G, lam, mu, c, out, work):
    """:func:`solve_local` for mu > 0 by the secular equation of the module docstring (any d; used for
    d = 3)."""
    d = c.shape[0]
    ch = work[0]
    ch2 = work[1]
    z = work[2]
    cand = work[3]
    if c[0] / mu >= _tangential_norm(c):                   # (a) c~ in Q: the apex
        for j in range(d):
            out[j] = 0.0
        return True
    for j in range(d):                                     # c^ = G c~
        acc = G[j, 0] * c[0] / mu
        for l in range(1, d):
            acc += G[j, l] * c[l]
        ch[j] = acc
    _unconstrained(G, ch, cand)                            # (b) x~ = -G^T c^
    if cand[0] >= _tangential_norm(cand):
        _from_tilde(cand, mu, out)
        return True
    top = lam[d - 1]                                       # (c) the positive eigenvalue (ascending)
    # phi and psi are homogeneous in c^: their roots are found for c^ / max|c^_j|, so that a tiny c
    # (a contact at rest, |c^| ~ 1e-158) does not underflow c^_j^2 and Newton's derivative to zero
    big = 0.0
    for j in range(d):
        big = max(big, abs(ch[j]))
    phi0 = 0.0
    psi0 = 0.0
    for j in range(d):
        ch2[j] = (ch[j] / big) ** 2
        phi0 += lam[j] * ch2[j]
        psi0 += ch2[j] / lam[j]
    if ch2[d - 1] == 0.0:              # c^ has no part along the positive eigenvector: the hard case
        return _secular_pole(ch, G, lam, big, mu, out, z, cand)
    best0 = 0.0
    for branch in range(2):
        if (phi0 if branch == 0 else psi0) >= 0.0:
            continue
        root = _secular_root(ch2, lam, branch == 1, 1.0 / top if branch == 0 else top)
        for j in range(d):
            z[j] = -ch[j] / (1.0 - root * lam[j]) if branch == 0 else -ch[j] * root / (root - lam[j])
        best0 = _keep_candidate(G, z, 1.0, mu, cand, out, best0)
    if best0 > 0.0:
        return True
    return _bracket_end(c, ch, ch2, G, lam, phi0, psi0, mu, out, cand)


@njit(cache=True)
def _bracket_end(c, ch, ch2, G, lam, phi0, psi0, mu, out, cand):
    """(c) when neither branch gave a point: the solution sits at an end of the brackets, where no open
    interval holds a sign change, and tests (a) or (b) rejected it by a rounding error:

    - psi(0) = 0 with c~0 > 0 (lambda = infinity): c~ on the boundary of Q, the apex x = 0 is the
      minimiser (c^T x >= 0 on K). A contact at rest whose velocity lies on the cone's edge to the last
      digit is such a case;
    - phi(0) = x~_u^T R x~_u = 0 with x~_u0 > 0 (lambda = 0): the unconstrained minimiser
      x~_u = -G^T c^ on the boundary of Q, its projection onto Q the minimiser (phi(0) >= 0: x~_u in
      Q; phi(0) < 0 so small that branch 0 found no root: outside by that rounding, and the projection
      is the minimiser to the same relative accuracy). A sliding contact at a converged sweep is such a
      case.

    "= 0" is phi(0) or psi(0) at least -1e-10 times the sum of the magnitudes of its terms. Else False
    (no point)."""
    d = ch.shape[0]
    phi_size = 0.0
    psi_size = 0.0
    for j in range(d):
        phi_size += abs(lam[j]) * ch2[j]
        psi_size += ch2[j] / abs(lam[j])
    if c[0] > 0.0 and psi0 >= -1e-10 * psi_size:
        for j in range(d):
            out[j] = 0.0
        return True
    if phi0 < -1e-10 * phi_size:
        return False
    _unconstrained(G, ch, cand)
    if cand[0] <= 0.0:
        return False
    # onto Q: ((x0 + |x_t|) / 2) (1, x_t / |x_t|), with |x_t| by hypot (cones.project_contact squares
    # x_t, which underflows at the scales of a contact at rest that this solver is homogeneous down to)
    t = _tangential_norm(cand)
    if t > cand[0]:
        half = 0.5 * (cand[0] + t)
        cand[0] = half
        for j in range(1, d):
            cand[j] *= half / t
    _from_tilde(cand, mu, out)
    return True


@njit(cache=True)
def _update_contact(i, w, x, mu, S, G, lam, omega, anti, d, c, xs, trial, work):
    """Gauss-Seidel update of contact i (in place on x) from its current local velocity w (overwritten):
    anti-relaxation shift, local problem (L), over-relaxation. False if (L) had no boundary root (x is
    then left unchanged)."""
    base = d * i
    if anti:                                               # per-contact anti-relaxation shift
        st = 0.0
        for j in range(1, d):
            st += w[j] * w[j]
        w[0] += mu[i] * np.sqrt(st)
    for j in range(d):
        acc = w[j]
        for l in range(d):
            acc -= S[i, j, l] * x[base + l]
        c[j] = acc
    if not solve_local(S[i], G[i], lam[i], mu[i], c, xs, work):
        return False
    if omega == 1.0:
        for j in range(d):
            x[base + j] = xs[j]
        return True
    for j in range(d):
        trial[j] = x[base + j] + omega * (xs[j] - x[base + j])
    if omega > 1.0:
        project_contact(trial, mu[i], xs)
        for j in range(d):
            trial[j] = xs[j]
    for j in range(d):
        x[base + j] = trial[j]
    return True


@njit(cache=True)
def _slice_dot(ptr, idx, val, v, k):
    """Row (CSR) or column (CSC) k of a compressed sparse matrix dotted with v."""
    acc = 0.0
    for p in range(ptr[k], ptr[k + 1]):
        acc += val[p] * v[idx[p]]
    return acc


@njit(cache=True)
def _local_velocity(rlin, indptr, indices, data, v, i, d, w):
    """w = rlin_i + rows d i .. d i + d - 1 of the compressed arrays (indptr, indices, data) times v: the
    local velocity of contact i (N's rows times x, or C's columns times z = M^-1 C x)."""
    for j in range(d):
        w[j] = rlin[d * i + j] + _slice_dot(indptr, indices, data, v, d * i + j)


@njit(cache=True)
def _sweep(indptr, indices, data, x, rlin, mu, S, G, lam, joint_diag, order, omega, anti, d, n_c, local):
    """One Gauss-Seidel sweep in ``order`` (contacts < n_c, then joints), in place on x, reading the rows
    of N (CSR); ``local`` (_LOCAL_ROWS, d) is the scratch of the local solves. Returns the number of
    local problems without a boundary root."""
    w, c, xs, trial, work, _ = _local_rows(borrowed(local))
    failures = 0
    for idx in range(order.shape[0]):
        i = order[idx]
        if i < n_c:
            _local_velocity(rlin, indptr, indices, data, x, i, d, w)
            if not _update_contact(i, w, x, mu, S, G, lam, omega, anti, d, c, xs, trial, work):
                failures += 1
        else:
            row = d * n_c + (i - n_c)
            x[row] -= omega * (rlin[row] + _slice_dot(indptr, indices, data, x, row)) / joint_diag[i - n_c]
    return failures


@njit(cache=True)
def _sweep_velocity(cp, ci, cx, bp, bi, bx, z, x, rlin, mu, S, G, lam, joint_diag, order, omega, anti, d, n_c,
                    local):
    """The same sweep without N: with z = M^-1 C x kept up to date, (N x)_row = C[:, row] . z, and
    updating unknown row by delta adds delta M^-1 C[:, row] to z. C (cp, ci, cx) and B = M^-1 C (bp, bi,
    bx) are CSC; x and z are updated in place."""
    w, c, xs, trial, work, old = _local_rows(borrowed(local))
    failures = 0
    for idx in range(order.shape[0]):
        i = order[idx]
        if i < n_c:
            _local_velocity(rlin, cp, ci, cx, z, i, d, w)
            old[:] = x[d * i:d * i + d]
            if not _update_contact(i, w, x, mu, S, G, lam, omega, anti, d, c, xs, trial, work):
                failures += 1
                continue
            for j in range(d):
                row = d * i + j
                delta = x[row] - old[j]
                if delta != 0.0:
                    for p in range(bp[row], bp[row + 1]):
                        z[bi[p]] += bx[p] * delta
        else:
            row = d * n_c + (i - n_c)
            delta = -omega * (rlin[row] + _slice_dot(cp, ci, cx, z, row)) / joint_diag[i - n_c]
            x[row] += delta
            for p in range(bp[row], bp[row + 1]):
                z[bi[p]] += bx[p] * delta
    return failures


#: rows of the scratch of the local solves (length d each): the local velocity w, c, the local solution,
#: the relaxed trial, solve_local's work (4 rows), the contact's previous impulse
_LOCAL_ROWS = 9


@njit(cache=True, inline="always")
def _local_rows(local):
    """w, c, xs, trial, work (4, d) and old of the scratch ``local`` (_LOCAL_ROWS, d)."""
    return local[0], local[1], local[2], local[3], local[4:8], local[8]


#: rows of the work array: z = M^-1 C x (velocity form), u, the natural map, the best iterate
_Z, _U, _SCRATCH, _BEST, _ROWS = 0, 1, 2, 3, 4
#: PGS's own slots of the compiled state (workbench.solvers.iterative's F_* and K_* layout): local
#: failures, the number of contacts n_c
K_FAILURES, K_N_C = K_OWN, K_OWN + 1


@njit(cache=True)
def _iterations(op, cols, velocity, x, r0, rlin, a, mu, S, G, lam, joint_diag, order, omega, work, fs, ks):
    """Sweeps, each followed by u = N x + r_0 and the stopping measure (:func:`stopping_measure`), until
    it holds, the sweep cap is reached or the count reaches ks[K_STOP] (:func:`count_and_check`); one compiled call.

    ``op`` is the operator of IterativeRun.compiled_N: in the velocity form (``velocity``) A = M^-1 C and
    B = C^T chained, and ``cols`` = the CSR arrays of C^T and (M^-1 C)^T (the columns of C and of M^-1 C);
    otherwise N (or W_s) itself, whose rows the sweep reads. ``work`` rows: _Z, _U, _SCRATCH, _BEST.
    ``fs`` and ``ks``: the state of workbench.solvers.iterative's layout (F_*, K_*) with PGS's own slots
    K_FAILURES and K_N_C."""
    d, n_c, anti = ks[K_D], ks[K_N_C], ks[K_INNER] != 0
    # the scratch of the local solves, owned here and handed to each sweep; every other array borrowed
    # once (workbench.blocks.borrowed): the calls per contact and per sweep then count no references
    local = np.empty((_LOCAL_ROWS, d))
    a_ptr, a_idx, a_val = borrowed(op[0]), borrowed(op[1]), borrowed(op[2])
    b_ptr, b_idx, b_val = borrowed(op[3]), borrowed(op[4]), borrowed(op[5])
    cp, ci, cx = borrowed(cols[0]), borrowed(cols[1]), borrowed(cols[2])
    bp, bi, bx = borrowed(cols[3]), borrowed(cols[4]), borrowed(cols[5])
    x, r0, rlin, a, mu = borrowed(x), borrowed(r0), borrowed(rlin), borrowed(a), borrowed(mu)
    S, G, lam, joint_diag, order = borrowed(S), borrowed(G), borrowed(lam), borrowed(joint_diag), borrowed(order)
    work, fs, ks = borrowed(work), borrowed(fs), borrowed(ks)
    n = r0.shape[0]
    z, u, scratch, best_x = work[_Z, :a_ptr.shape[0] - 1], work[_U, :n], work[_SCRATCH, :n], work[_BEST, :n]
    if velocity and ks[K_STARTED] == 0:
        csr_matvec(a_ptr, a_idx, a_val, x, z)
    ks[K_STARTED] = 1
    while True:
        if velocity:
            ks[K_FAILURES] += _sweep_velocity(cp, ci, cx, bp, bi, bx, z, x, rlin, mu, S, G, lam, joint_diag, order,
                                              omega, anti, d, n_c, local)
            csr_matvec(a_ptr, a_idx, a_val, x, z)              # M^-1 C x afresh: no drift
            csr_matvec(b_ptr, b_idx, b_val, z, u)
        else:
            ks[K_FAILURES] += _sweep(a_ptr, a_idx, a_val, x, rlin, mu, S, G, lam, joint_diag, order, omega, anti, d, n_c,
                                     local)
            csr_matvec(a_ptr, a_idx, a_val, x, u)
        for k in range(u.shape[0]):
            u[k] += r0[k]
        code = count_and_check(x, u, a, mu, d, anti, scratch, best_x, fs, ks)
        if code != GO_ON:
            return code


def local_factors(S: np.ndarray, mu: np.ndarray, secular: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-contact data of the exact local solver: the (regularised) blocks S (n_c, d, d),
    G = V^T L^-1 and the eigenvalues Lam (ascending, the last one positive) of the module docstring.
    Contacts with mu = 0 get identity factors (their local problem is solved without them), and so do
    all contacts for d = 2 (:func:`_solve_wedge` needs none) unless ``secular`` (the secular solver's
    factors, for a test that compares the two)."""
    S = np.array(S, dtype=float)
    n_c, d, _ = S.shape
    G, lam = np.empty((n_c, d, d)), np.empty((n_c, d))
    _factors_into(S, np.ascontiguousarray(mu, dtype=float), G, lam, np.empty((4, d, d)), np.empty((2, d)), secular)
    return S, G, lam


@njit(cache=True)
def _symmetric_eig(A, w, V):
    """Eigenvalues (ascending, into w) and eigenvectors (the columns of V) of the small symmetric
    matrix A (d <= 3; A is overwritten) by cyclic Jacobi rotations, to round-off: for 2 x 2 and 3 x 3
    blocks a few sweeps of explicit arithmetic cost less than one LAPACK call."""
    d = A.shape[0]
    for j in range(d):
        for l in range(d):
            V[j, l] = 1.0 if j == l else 0.0
    for _ in range(50):
        off = 0.0
        diag = 0.0
        for j in range(d):
            diag += A[j, j] * A[j, j]
            for l in range(j + 1, d):
                off += A[j, l] * A[j, l]
        if off <= 1e-36 * diag or off == 0.0:
            break
        for p_ in range(d - 1):
            for q in range(p_ + 1, d):
                if A[p_, q] == 0.0:
                    continue
                theta = (A[q, q] - A[p_, p_]) / (2.0 * A[p_, q])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                c = 1.0 / np.sqrt(t * t + 1.0)
                s_ = t * c
                for k in range(d):                       # A <- J^T A J, V <- V J
                    akp, akq = A[k, p_], A[k, q]
                    A[k, p_], A[k, q] = c * akp - s_ * akq, s_ * akp + c * akq
                for k in range(d):
                    apk, aqk = A[p_, k], A[q, k]
                    A[p_, k], A[q, k] = c * apk - s_ * aqk, s_ * apk + c * aqk
                for k in range(d):
                    vkp, vkq = V[k, p_], V[k, q]
                    V[k, p_], V[k, q] = c * vkp - s_ * vkq, s_ * vkp + c * vkq
    for j in range(d):
        w[j] = A[j, j]
    for j in range(1, d):                                # insertion sort, columns of V alongside
        k = j
        while k > 0 and w[k - 1] > w[k]:
            w[k - 1], w[k] = w[k], w[k - 1]
            for m in range(d):
                V[m, k - 1], V[m, k] = V[m, k], V[m, k - 1]
            k -= 1


@njit(cache=True)
def _local_factors(S, mu, G, lam):
    """:func:`local_factors` contact by contact, compiled (S regularised in place), with explicit
    d x d arithmetic (Cholesky, triangular inverse, Jacobi eigen-decompositions): a solve of a few
    contacts would otherwise pay the fixed cost of a dozen batched numpy calls."""
    d = S.shape[1]
    _factors_into(S, mu, G, lam, np.empty((4, d, d)), np.empty((2, d)), False)


@njit(cache=True)
def _factors_into(S, mu, G, lam, squares, rows, secular):
    """:func:`_local_factors` with its scratch given: ``squares`` (4, d, d) and ``rows`` (2, d), all
    arrays borrowed (workbench.blocks.borrowed), as the eigen-decompositions are two calls per contact;
    for d = 2 the secular solver's factors only when ``secular``."""
    S, mu, G, lam, squares, rows = borrowed(S), borrowed(mu), borrowed(G), borrowed(lam), borrowed(squares), borrowed(rows)
    n_c, d = S.shape[0], S.shape[1]
    A, V, Linv, B = squares[0], squares[1], squares[2], squares[3]
    ev, tinv = rows[0], rows[1]
    tinv[:] = 1.0
    for i in range(n_c):
        A[:, :] = S[i]
        _symmetric_eig(A, ev, V)
        if ev[0] <= 1e-12 * ev[d - 1]:
            eps = 1e-12 * max(ev[d - 1], 1e-300) - min(ev[0], 0.0)
            for j in range(d):
                S[i, j, j] += eps
        for j in range(d):
            for l in range(d):
                G[i, j, l] = 1.0 if j == l else 0.0
            lam[i, j] = -1.0 if j < d - 1 else 1.0
        if mu[i] <= 0 or (d == 2 and not secular):
            continue
        tinv[0] = 1.0 / mu[i]
        for j in range(d):                                   # A = T^-1 S T^-1 = L L^T (Cholesky)
            for l in range(d):
                A[j, l] = tinv[j] * S[i, j, l] * tinv[l]
        for j in range(d):
            for l in range(j + 1):
                acc = A[j, l]
                for k in range(l):
                    acc -= B[j, k] * B[l, k]
                B[j, l] = np.sqrt(acc) if j == l else acc / B[l, l]
            for l in range(j + 1, d):
                B[j, l] = 0.0
        for j in range(d):                                   # Linv = L^-1 (forward substitution)
            for l in range(d):
                if l > j:
                    Linv[j, l] = 0.0
                    continue
                acc = 1.0 if j == l else 0.0
                for k in range(l, j):
                    acc -= B[j, k] * Linv[k, l]
                Linv[j, l] = acc / B[j, j]
        for j in range(d):                                   # A = Linv R Linv^T, R = diag(1, -1, ..)
            for l in range(d):
                acc = Linv[j, 0] * Linv[l, 0]
                for k in range(1, d):
                    acc -= Linv[j, k] * Linv[l, k]
                A[j, l] = acc
        _symmetric_eig(A, ev, V)
        for j in range(d):                                   # G = V^T Linv
            lam[i, j] = ev[j]
            for l in range(d):
                acc = 0.0
                for k in range(d):
                    acc += V[k, j] * Linv[k, l]
                G[i, j, l] = acc


def _omega(params) -> float:
    """The relaxation omega of ``params``, in (0, 2)."""
    omega = float(params["omega"])
    if not 0.0 < omega < 2.0:
        raise InputError(f"pgs: omega must lie in (0, 2), got {omega}")
    return omega


#: the fs slots of a lean run: the shared ones (PGS has none of its own)
_FS = F_OWN


def _lean_floats(n: int, n_c: int, d: int) -> int:
    """Length of a lean run's buffer: fs, x, a, the work rows, S and G (n_c, d, d), Lam (n_c, d)."""
    return _FS + (2 + _ROWS) * n + 2 * n_c * d * d + n_c * d


@njit(cache=True)
def _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, k_stop, target, norm_r0, d, omega):
    """One call of a lean run (IterativeSolver._lean_solve) on the local W in CSR (ptr, idx, val), in
    the contacts' own order: its arrays are views of ``floats`` (fs, x, a, the work rows, the local
    factors: :func:`_lean_floats`) and ``ks`` (zero from the caller; the sweep order after the state).
    The first call (ks[K_D] still 0) sets the state of :func:`lean_state`, nu = 0, a = 0 and the set-up
    of :meth:`PGSSolver.setup` (the symmetric parts of W's diagonal blocks, :func:`_local_factors`; a
    local problem has no joints); then :func:`_iterations`."""
    n, n_c = r0.shape[0], mu.shape[0]
    ptr, idx, val, mu, r0 = borrowed(ptr), borrowed(idx), borrowed(val), borrowed(mu), borrowed(r0)
    floats, ks = borrowed(floats), borrowed(ks)
    fs = floats[:_FS]
    x, a = floats[_FS:_FS + n], floats[_FS + n:_FS + 2 * n]
    o = _FS + 2 * n
    work = floats[o:o + _ROWS * n].reshape((_ROWS, n))
    o += _ROWS * n
    S = floats[o:o + n_c * d * d].reshape((n_c, d, d))
    G = floats[o + n_c * d * d:o + 2 * n_c * d * d].reshape((n_c, d, d))
    o += 2 * n_c * d * d
    lam = floats[o:o + n_c * d].reshape((n_c, d))
    joints = floats[o:o]                    # none on a local problem
    order = ks[K_N_C + 1:]
    if ks[K_D] == 0:
        lean_state(fs, ks, max_iter, k_stop, target, norm_r0, d)
        ks[K_N_C] = n_c
        S[:] = 0.0
        _csr_diagonal_blocks(ptr, idx, val, d, n_c, S)
        symmetrise_blocks(S)
        _local_factors(S, mu, G, lam)
        for k in range(order.shape[0]):
            order[k] = k
        x[:] = 0.0
        a[:] = 0.0
    none = np.zeros(1, dtype=np.int32)
    cols = (none, none, np.zeros(0), none, none, np.zeros(0))
    return _iterations((ptr, idx, val, ptr, idx, val, False), cols, False, x, r0, r0, a, mu, S, G, lam, joints,
                       order, omega, work, fs, ks)


class PGSSolver(IterativeSolver):
    name = "pgs"
    summary = "projected Gauss-Seidel / SOR over contacts, exact local solver (numba)"
    params = ITERATIVE_PARAMS + (
        Param("omega", float, 1.0, "relaxation (SOR), in (0, 2)"),
        Param("random_order", bool, False, "sweep the contacts in a random order each time"),
        Param("seed", int, 0, "seed of the random order"),
    )

    has_lean = True

    def lean_fits(self, model, options) -> bool:
        """IterativeSolver.lean_fits, in the contacts' own order (a random order is drawn in Python
        before each sweep)."""
        return super().lean_fits(model, options) and not options.params["random_order"]

    def iteration_work(self, entries: int, n: int) -> int:
        return entries + 30 * n

    def lean(self, W, r0, mu, d, max_iter, chunk, target, norm_r0, params) -> LeanRun:
        """:func:`_lean` on its two buffers, one made for the run."""
        omega = _omega(params)
        n, n_c = r0.shape[0], mu.shape[0]
        floats = np.empty(_lean_floats(n, n_c, d))
        ks = np.zeros(K_N_C + 1 + n_c, dtype=np.int64)      # the state, then the sweep order
        ptr, idx, val = W.indptr, W.indices, W.data
        best = _FS + (2 + _BEST) * n
        return LeanRun(lambda: _lean(ptr, idx, val, mu, r0, floats, ks, max_iter, chunk, target, norm_r0, d, omega),
                       None, floats[:_FS], ks, floats[best:best + n],
                       lambda: {"local_failures": int(ks[K_FAILURES]), "velocity_form": False})

    def setup(self, run: IterativeRun) -> None:
        omega = _omega(run.params)
        p = run.problem
        S, joints = run.diagonal_blocks
        if np.any(joints <= 0):
            raise InputError("pgs: a joint has a zero diagonal entry in N (redundant or empty joint)")
        # velocity form (never forms N) for a diagonal M; the rows of N otherwise (module docstring)
        self._velocity = p.is_global and p.M_is_diagonal
        if self._velocity:     # the columns of C and of M^-1 C: rows of C^T and (M^-1 C)^T (CSR)
            C_T, B_T = p._C_T, p.MinvC_T
            self._cols = (C_T.indptr, C_T.indices, C_T.data, B_T.indptr, B_T.indices, B_T.data)
        else:
            none = np.zeros(1, dtype=np.int32)
            self._cols = (none, none, np.zeros(0), none, none, np.zeros(0))
        self._S, self._G, self._lam = local_factors(S, run.mu)
        self._joints = joints
        self._omega = omega
        self._rng = np.random.default_rng(int(run.params["seed"])) if run.params["random_order"] else None
        run.info["local_failures"] = 0
        run.info["velocity_form"] = self._velocity

    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        """The sweeps in :func:`_iterations`: one compiled call (or one per history row, or per sweep
        with random_order, whose order Python draws), Python reading the state between calls only."""
        n = run.n
        x = np.array(x0, dtype=float)
        n_items = run.n_c + (run.n - run.m)
        order = np.arange(n_items)
        anti = run.mode == "inner"
        op = run.compiled_N
        work = np.empty((_ROWS, max(n, intermediate_length(op))))
        chunk = 1 if self._rng is not None else run.chunk(op[2].size + op[5].size + 4 * self._cols[2].size + 30 * n)
        fs, ks = run.compiled_state(chunk, ints=(0, run.n_c))          # local failures, n_c
        args = (op, self._cols, self._velocity, x, run.r0, run.r0 if anti else run.linear_term, run.a, run.mu,
                self._S, self._G, self._lam, self._joints)

        def call():
            sweep_order = order if self._rng is None else self._rng.permutation(n_items)
            return _iterations(*args, sweep_order, self._omega, work, fs, ks)

        run.drive(call, ks, fs, chunk, work[_BEST, :n], lambda: (x, work[_U, :n]))
        run.info["local_failures"] += int(ks[K_FAILURES])
