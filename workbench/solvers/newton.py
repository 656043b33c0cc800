"""Nonsmooth (semismooth) Newton method on the Alart-Curnier function of the exact Coulomb problem.

Model: :class:`formulations.ncp.NCPModel` (the De Saxce problem; Alart-Curnier has the same solution
set: Signorini, Coulomb's disk, maximal dissipation). Per contact i, with u = N nu + r and the
per-contact step rho_i = d / trace(N_ii) [impulse per velocity, 1/(1/kg) = kg], which makes the
function homogeneous in units:

    xi_i    = gamma_n - rho_i u_n,                       (normal predictor)
    Phi_n   = gamma_n - max(0, xi_i),                    (Signorini)
    z_i     = gamma_t - rho_i u_t,   R_i = mu_i max(0, xi_i),
    Phi_t   = gamma_t - P_{B(R_i)}(z_i),                 (Coulomb disk of radius R_i)
    Phi_j   = rho_j u_j  for a joint j (rho_j = 1 / N_jj).

Phi(nu) = 0 iff nu solves the exact problem (Alart & Curnier 1991; Siconos NSN_AC, "STD" variant).
An element of the generalised Jacobian is J = A + B N with A, B block diagonal (d x d per contact):
on a sticking contact (||z|| <= R) Phi_t = rho u_t; on a sliding one
dPhi_t = dgamma_t - z_hat dR - (R / ||z||)(I - z_hat z_hat^T) dz; on an open contact Phi = gamma.
The Newton system J dnu = -Phi is sparse with N's pattern and is solved by a sparse LU of
J + eps_k I with eps_k = eps_rel * ||Phi|| / ||nu||_scale (a vanishing Levenberg-Marquardt shift that
keeps J invertible when N is singular, as it is for rigid bodies with more contact unknowns than
degrees of freedom, without spoiling the local superlinear rate). Globalisation: Armijo backtracking
on the merit psi = 1/2 ||Phi||^2 (psi(nu + t dnu) <= (1 - 2 sigma t) psi(nu), sigma = 1e-4, t halved
down to t_min = 2^-20; when no step decreases psi, the smallest is taken and counted).

N is the sparse matrix of the problem, formed once; up to DENSE_MAX unknowns (a few tens of
contacts) N is taken dense and the whole iteration (Alart-Curnier pass, J, LAPACK solve, line search,
the siconos_error stopping test) runs in one compiled call (:func:`_dense_newton`), where the sparse
assembly and SuperLU cost hundreds of microseconds of dispatch per iteration for microseconds of
arithmetic. A sparse LU of the augmented system
[[M, -C], [B C^T, A + eps I]] instead (the sparsity of M and C) was measured slower: on a packing of
1,845 contacts its LU took 0.45 s against 0.24 s (COLAMD ordering). The LU's fill grows faster than
the problem: at 10,000 contacts one iteration takes seconds. The method stops when the
workbench's siconos_error <= tol; caps: options.max_iter (default 200), options.time_limit (the
bookkeeping is workbench.solvers.ncp_base.NCPMethod's; history extra: merit psi). SuperLU's LU is one
native call that cannot be interrupted: each sparse iterate carries the last iteration's duration as
the forecast of the next (``Iterate.forecast``), so the run stops with TIMEOUT before an iteration that
would end too far past the limit; the first has no forecast.
Parameters (options.params): ``eps_rel`` (default 1e-2: on the singular N of the shared rigid problems
1e-8 and 1e-4 stalled on BoxesStack1 and Capsules, 1e-1 and 1 took more iterations).
"""

from __future__ import annotations

import math
import time
from typing import Iterator

import numpy as np
import scipy.sparse as sp
from numba import njit, uint64

from workbench.blocks import borrowed, sum_squares
from workbench.errors import InputError
from workbench.metrics import dual_objective, unknown_diagonal
from workbench.params import Param
from workbench.problem import condense_diagonal, csr_product, symmetric_part
from workbench.solvers.base import SolveOptions, SolveResult, StopCause, condensed_note
from workbench.solvers.iterative import _CHUNK_WORK, CHUNK_DONE, CONVERGED, dot, stopping_measure
from workbench.solvers.ncp_base import Iterate, NCPMethod
from workbench.solvers.recorder import Recorder

__all__ = ["NewtonSolver", "alart_curnier"]

ARMIJO_SIGMA = 1e-4
MIN_STEP = 2.0 ** -20


def contact_steps(problem) -> np.ndarray:
    """rho per unknown: d / trace(N_ii) on each contact's d entries, 1 / N_jj on joints; a zero or
    non-finite diagonal (a contact that no body can move) falls back to the mean."""
    diag = unknown_diagonal(problem)
    good = np.isfinite(diag) & (diag > 0)
    contacts = good[:problem.n_contact_unknowns]
    fill = diag[:problem.n_contact_unknowns][contacts].mean() if contacts.any() else 1.0
    return 1.0 / np.where(good, diag, fill)


def alart_curnier(problem, nu: np.ndarray, u: np.ndarray, rho: np.ndarray, jacobian: bool = True):
    """Phi(nu) of the module docstring and, if ``jacobian``, the block-diagonal A, B with
    dPhi = A dnu + B du, as (n_c, d, d) stacks for the contacts (joints: A = 0, B = rho_j); one compiled
    pass over the contacts (:func:`_alart_curnier`)."""
    n_c, d = problem.n_contacts, problem.d
    phi = np.empty(nu.shape[0])
    A = np.zeros((n_c if jacobian else 0, d, d))
    B = np.zeros_like(A)
    _alart_curnier(np.ascontiguousarray(nu, dtype=float), np.ascontiguousarray(u, dtype=float), rho, problem.mu,
                   d, phi, A, B, jacobian)
    return (phi, A, B) if jacobian else phi


@njit(cache=True)
def _alart_curnier(nu, u, rho, mu, d, phi, A, B, jacobian):
    """:func:`alart_curnier` contact by contact (A, B zero on entry). The tangential part z of a
    contact (d = 2 or 3: one or two entries) is held in scalars, z2 = 0 when d = 2: a solve of a few
    contacts calls this pass several times per iteration, and a work array allocated per call was a
    large part of its cost."""
    n_c = mu.shape[0]
    for i in range(n_c):
        o = d * i
        rc = rho[o]
        xi = nu[o] - rc * u[o]
        act = xi > 0
        R = mu[i] * max(xi, 0.0)
        z1 = nu[o + 1] - rc * u[o + 1]
        z2 = nu[o + 2] - rc * u[o + 2] if d == 3 else 0.0
        nz = np.sqrt(z1 * z1 + z2 * z2)
        stick = nz <= R and R > 0               # R = 0 (open or frictionless): Phi_t = gamma_t
        safe = nz if nz > 0 else 1.0
        phi[o] = nu[o] - max(xi, 0.0)
        phi[o + 1] = nu[o + 1] - (z1 if stick else R * z1 / safe)
        if d == 3:
            phi[o + 2] = nu[o + 2] - (z2 if stick else R * z2 / safe)
        if not jacobian:
            continue
        A[i, 0, 0] = 0.0 if act else 1.0
        B[i, 0, 0] = rc if act else 0.0
        ratio = 0.0 if stick else R / safe     # sliding (or R = 0): Phi_t = g_t - R z_hat
        dR = mu[i] if act and not stick else 0.0   # dR = mu (dg_n - rho du_n) where xi > 0
        for j in range(1, d):
            zj = z1 if j == 1 else z2
            for l in range(1, d):
                zl = z1 if l == 1 else z2
                eye = 1.0 if j == l else 0.0
                if stick:
                    B[i, j, l] = rc * eye
                else:
                    tang = eye - zj * zl / (safe * safe)
                    A[i, j, l] = eye - ratio * tang
                    B[i, j, l] = rc * ratio * tang
            A[i, j, 0] = -dR * zj / safe
            B[i, j, 0] = dR * rc * zj / safe
    for k in range(d * n_c, nu.shape[0]):
        phi[k] = rho[k] * u[k]


#: up to this many unknowns the Newton matrix is dense and the whole iteration compiled
#: (:func:`_dense_newton`): on a few contacts scipy's sparse assembly and SuperLU cost about 0.5 ms per
#: iteration, mostly dispatch
DENSE_MAX = 240


def newton_pattern(N: sp.csr_matrix, n_c: int, d: int) -> sp.csr_matrix:
    """The sparsity pattern of J = A + B N + eps I (A, B block diagonal over the contacts, diagonal on
    the joints): row block i holds the union of N's rows d i ... d i + d - 1, its diagonal block and the
    diagonal. CSR with sorted indices; the values are placeholders (:func:`_fill_newton_matrix`)."""
    n = N.shape[0]
    m = n_c * d
    groups = np.concatenate([np.arange(m) // d, n_c + np.arange(n - m)])   # contact block or joint of each row
    G = sp.csr_matrix((np.ones(n), (groups, np.arange(n))), shape=(n_c + n - m, n))
    P = G.T @ (G @ abs(N) + G) + sp.identity(n, format="csr")
    P = P.tocsr()
    P.sum_duplicates()
    P.sort_indices()
    return P


@njit(cache=True)
def _fill_newton_matrix(N_ptr, N_idx, N_val, J_ptr, J_idx, J_val, A, B, rho, eps, d, work):
    """J_val of J = A + B N + eps I on the pattern (J_ptr, J_idx) of :func:`newton_pattern`: per row, the
    row's combination of N's rows is scattered into ``work`` (length n, zero on entry and on exit) and
    gathered at the pattern's columns."""
    n_c = A.shape[0]
    n = J_ptr.shape[0] - 1
    for row in range(n):
        if row < n_c * d:
            i, j = row // d, row % d
            for l in range(d):
                b = B[i, j, l]
                if b != 0.0:
                    src = d * i + l
                    for jj in range(N_ptr[src], N_ptr[src + 1]):
                        work[N_idx[jj]] += b * N_val[jj]
            for l in range(d):
                work[d * i + l] += A[i, j, l]
        else:
            for jj in range(N_ptr[row], N_ptr[row + 1]):
                work[N_idx[jj]] += rho[row] * N_val[jj]
        work[row] += eps
        for jj in range(J_ptr[row], J_ptr[row + 1]):
            J_val[jj] = work[J_idx[jj]]
            work[J_idx[jj]] = 0.0


#: return codes of :func:`_dense_newton` besides iterative's CONVERGED and CHUNK_DONE, and of
#: :func:`_dense_call` when a contact's diagonal is not positive and finite (rho then comes from
#: :func:`contact_steps`'s fallback)
SINGULAR, NEEDS_STEPS = 4, 5
#: return code of :func:`_dense_start_condensed` when an entry of D^T M^-1 D or of its linear term is
#: not finite: the caller takes TimeStepProblem.condensed's route (which refuses it too)
NOT_FORMED = 6
#: ``build`` of :func:`_dense_call`: a later call of the run; the first, with N formed from its CSR
#: arrays; the first, with N already in the buffer (:func:`_dense_start_condensed`)
_RESUME, _FROM_CSR, _FORMED = 0, 1, 2
#: named layout of the dense loop's state ``fs``, the head of its buffer: the siconos_error and merit psi
#: of the current iterate, ||r||, and three counts held as floats (exact up to 2^53), so that the run's
#: state is one array (each array a compiled call hands back to Python is a numpy object made for it):
#: iterations done, the count at which the call returns, line-search failures
F_ERR, F_PSI, F_NORM_R, F_ITER, F_STOP, F_FAILURES = range(6)
_HEAD = F_FAILURES + 1
#: the start of a cold run (nu = 0), and rho when the compiled call computes it: empty arrays, so that
#: the compiled call has one signature
_NO_START = _NO_RHO = np.zeros(0)
#: the iteration count of a run without a cap
_NO_CAP = int(np.iinfo(np.int64).max)
#: rows of length n of the dense run's buffer, after fs, N, J, A and B (:func:`_dense_views`); a run
#: that condenses its global problem itself keeps the linear term r in one more row, _R
_NU, _U, _RHO, _PHI, _DNU, _TRIAL_NU, _TRIAL_U, _DU, _A, _SCRATCH, _VECTORS = range(11)
_R = _VECTORS


@njit(cache=True)
def _vectors_at(n, n_c, d):
    """Where the rows of length n start in the dense run's buffer, after fs, N, J, A and B."""
    return _HEAD + 2 * n * n + 2 * n_c * d * d


@njit(cache=True)
def _dense_buffer(n, n_c, d, stop, rho, rows):
    """The dense run's buffer (:func:`_dense_views`, ``rows`` vectors of length n), allocated in the
    compiled call rather than by numpy's calls from Python, which on a problem of a few contacts cost as
    much as the iterations: the state fs[F_*] zero but fs[F_STOP] = ``stop``; rho copied in when given
    (length n)."""
    floats = np.empty(_vectors_at(n, n_c, d) + rows * n)
    floats[:_HEAD] = 0.0
    floats[F_STOP] = stop
    if rho.shape[0] == n:
        o = _vectors_at(n, n_c, d) + _RHO * n
        floats[o:o + n] = rho
    return floats


@njit(cache=True)
def _dense_start(ptr, idx, val, r, mu, d, eps_rel, tol, start, stop, rho):
    """The first call of the dense run: its buffer (:func:`_dense_buffer`), rho computed unless given
    (``rho`` empty), then :func:`_dense_call`. Returns (code, floats)."""
    n = r.shape[0]
    floats = _dense_buffer(n, mu.shape[0], d, stop, rho, _VECTORS)
    code = _dense_call(ptr, idx, val, r, mu, d, eps_rel, tol, floats, start, _FROM_CSR, rho.shape[0] == n)
    return code, floats


@njit(cache=True)
def _dense_start_condensed(m_val, d_ptr, d_idx, d_val, k, b, mu, d, eps_rel, tol, start, stop, rho):
    """The first call of the dense run of a small global problem with a diagonal M (its stored values
    ``m_val``), condensed in it (TimeStepProblem.condensation_data's arrays): W = D^T M^-1 D and
    r = b + D^T M^-1 k by workbench.problem's :func:`condense_diagonal` (W in the J slot of the buffer)
    and :func:`symmetric_part` (into N), the numbers TimeStepProblem.condensed's local problem holds, r
    in the buffer's row _R; then :func:`_dense_call` as :func:`_dense_start`. Returns (code, floats):
    NOT_FORMED when an entry is not finite (floats empty)."""
    n_c = mu.shape[0]
    n = d * n_c
    floats = _dense_buffer(n, n_c, d, stop, rho, _VECTORS + 1)
    _, N, J, _, _, _ = _dense_views(floats, n, n_c, d)
    o = _vectors_at(n, n_c, d) + _R * n
    r = floats[o:o + n]
    condense_diagonal(m_val, d_ptr, d_idx, d_val, k, b, J, r)
    if not symmetric_part(J, r, N):
        return NOT_FORMED, np.empty(0)
    # D's arrays stand in for N's CSR arrays, which _FORMED does not read (the call keeps its signature)
    code = _dense_call(d_ptr, d_idx, d_val, r, mu, d, eps_rel, tol, floats, start, _FORMED, rho.shape[0] == n)
    return code, floats


def _first_global_call(problem, arrays, d, eps_rel, tol, start, stop) -> tuple:
    """The dense run's first compiled call on a global problem: (code, floats, (ptr, idx, val, r, mu) as
    its later calls take them, r None when in the buffer's row _R; how the problem was condensed or None). A small one (``arrays``,
    TimeStepProblem.condensation_data) is condensed as TimeStepProblem.condensed condenses it, to the
    same numbers: in the compiled call when M is diagonal (:func:`_dense_start_condensed`), else through
    the local problem of M's dense Cholesky factor; without either (joints, too large, a singular M, an
    overflow) N is formed sparse and rho is contact_steps's from D and M, not from the formed N, which
    differs from them by round-off. A contact no body moves (NEEDS_STEPS): contact_steps's fallback,
    then again (rho given, the call does not ask twice)."""
    mu = problem.mu
    if arrays is not None and problem.M_is_diagonal:
        code, floats = _dense_start_condensed(*arrays[2:], mu, d, eps_rel, tol, start, stop, _NO_RHO)
        if code == NEEDS_STEPS:
            code, floats = _dense_start_condensed(*arrays[2:], mu, d, eps_rel, tol, start, stop,
                                                  contact_steps(problem.condensed))
        if code != NOT_FORMED:     # r in the buffer's row _R: fetched by a later call only (a view costs)
            return code, floats, arrays[3:6] + (None, mu), IN_THE_CALL
    local, how = problem.condensed, None
    if local is None:
        source, rho = problem, contact_steps(problem)
    else:
        source, rho, how = local, _NO_RHO, THROUGH_CHOLESKY
    data = _dense_data(source)
    code, floats = _dense_start(*data, d, eps_rel, tol, start, stop, rho)
    if code == NEEDS_STEPS:
        code, floats = _dense_start(*data, d, eps_rel, tol, start, stop, contact_steps(source))
    return code, floats, data, how


#: how :func:`_first_global_call` condensed a global problem (info["condensed"], written after the clock
#: as workbench.method.Method writes it)
IN_THE_CALL, THROUGH_CHOLESKY = "a diagonal M, in the dense run's compiled call", "dense Cholesky of M"


def _dense_data(problem) -> tuple:
    """The arrays of the dense run: N's CSR arrays, r and mu."""
    W = problem.N
    return W.indptr, W.indices, W.data, problem.r, problem.mu


def _given_data(problem) -> tuple | None:
    """:func:`_dense_data` of a local problem, whose W, r and mu are its data as read: fetched before the
    clock, as the peer's driver is handed its problem object; None for a global problem, whose N is
    computed, on the clock."""
    return None if problem.is_global else _dense_data(problem)


def _dense_row(floats, row: int, n: int, n_c: int, d: int) -> np.ndarray:
    """One of the rows _NU ... _SCRATCH of the dense run's buffer, a view."""
    o = _vectors_at.py_func(n, n_c, d) + row * n      # the formula, without a compiled call's dispatch
    return floats[o:o + n]


@njit(cache=True)
def _dense_views(floats, n, n_c, d):
    """fs, N (n, n), J (n, n), A and B (n_c, d, d) and the vectors (_VECTORS, n) of the buffer."""
    o = _HEAD
    N = floats[o:o + n * n].reshape((n, n))
    J = floats[o + n * n:o + 2 * n * n].reshape((n, n))
    o += 2 * n * n
    A = floats[o:o + n_c * d * d].reshape((n_c, d, d))
    B = floats[o + n_c * d * d:o + 2 * n_c * d * d].reshape((n_c, d, d))
    o = _vectors_at(n, n_c, d)
    return floats[:_HEAD], N, J, A, B, floats[o:o + _VECTORS * n].reshape((_VECTORS, n))


@njit(cache=True)
def _dense_call(ptr, idx, val, r, mu, d, eps_rel, tol, floats, start, build, rho_given):
    """One call of the dense run on the views of ``floats`` (:func:`_dense_views`). The first
    (``build`` _FROM_CSR or _FORMED): N dense from its CSR arrays (ptr, idx, val; duplicates added) unless
    in the buffer already (_FORMED), ||r|| into fs[F_NORM_R]
    (by workbench.blocks.sum_squares, as TimeStepProblem.norm_r: the same number, without a Python
    call), nu = ``start`` (0 when empty), u = N nu + r and, unless ``rho_given`` (written into the buffer
    by the caller), rho of
    :func:`contact_steps` (d / trace(N_ii) on the contacts, 1 / N_jj on the joints; NEEDS_STEPS when one
    is not positive and finite: the caller then writes contact_steps's fallback and calls again); then
    :func:`_dense_newton`."""
    n = r.shape[0]
    n_c = mu.shape[0]
    # every array of the run borrowed once (workbench.blocks.borrowed): the helpers called per iteration
    # then count no references
    ptr, idx, val, r, mu, start = borrowed(ptr), borrowed(idx), borrowed(val), borrowed(r), borrowed(mu), borrowed(start)
    fs, N, J, A, B, rows = _dense_views(borrowed(floats), n, n_c, d)
    nu, u, rho = rows[_NU], rows[_U], rows[_RHO]
    if build == _FROM_CSR:
        N[:] = 0.0
        for i in range(n):
            for jj in range(ptr[i], ptr[i + 1]):
                N[i, idx[jj]] += val[jj]
    if build != _RESUME:
        fs[F_NORM_R] = math.sqrt(sum_squares(r))
    if build != _RESUME and not rho_given:
        for i in range(n_c):                  # metrics.unknown_diagonal's means, in its order
            t = 0.0
            for j in range(d):
                t += N[d * i + j, d * i + j]
            for j in range(d):
                rho[d * i + j] = t / d
        for k in range(n_c * d, n):
            rho[k] = N[k, k]
        for k in range(n):
            if not (np.isfinite(rho[k]) and rho[k] > 0):
                return NEEDS_STEPS
            rho[k] = 1.0 / rho[k]
    if build != _RESUME:
        for k in range(n):
            nu[k] = start[k] if start.shape[0] else 0.0
        _matvec(N, nu, u)
        for k in range(n):
            u[k] += r[k]
    return _dense_newton(N, r, mu, d, rho, eps_rel, tol, fs[F_NORM_R], nu, u, rows[_PHI], A, B, J, rows[_DNU],
                         rows[_TRIAL_NU], rows[_TRIAL_U], rows[_DU], rows[_A], rows[_SCRATCH], fs)


@njit(cache=True)
def _dense_newton(N, r, mu, d, rho, eps_rel, tol, norm_r, nu, u, phi, A, B, J, dnu, trial_nu, trial_u, du, a,
                  scratch, fs):
    """The Newton iteration of :class:`NewtonSolver` on a dense N, whole iterations in one compiled call.

    At each iterate (nu, u = N nu + r): Phi, A, B (:func:`_alart_curnier`), the merit psi and the
    workbench's siconos_error (:func:`workbench.solvers.iterative.stopping_measure`, the measure every
    other solver is judged by) go to ``fs``; the call returns CONVERGED when the error is <= tol,
    CHUNK_DONE when fs[F_ITER] reaches fs[F_STOP] (the driver then records, checks its caps and moves
    fs[F_STOP] on), SINGULAR when even the shifted J has a zero (or non-finite) pivot. Otherwise one
    Newton step: J = A + B N + eps_k I, dnu by Gaussian elimination with partial pivoting
    (:func:`_gauss_solve`), Armijo backtracking on psi, nu += t dnu and u = N nu + r afresh."""
    n = nu.shape[0]
    n_c = mu.shape[0]
    m = n_c * d
    while True:
        A[:] = 0.0
        B[:] = 0.0
        _alart_curnier(nu, u, rho, mu, d, phi, A, B, True)
        psi = 0.5 * dot(phi, phi)
        err, _, converged = stopping_measure(nu, u, a, mu, d, True, 1.0, norm_r, tol, scratch)
        fs[F_ERR], fs[F_PSI] = err, psi
        if converged:
            return CONVERGED
        if fs[F_ITER] >= fs[F_STOP]:
            return CHUNK_DONE
        for i in range(n_c):                      # J = A + B N, contact rows
            for j in range(d):
                row = d * i + j
                for col in range(uint64(n)):      # unsigned: no wraparound tests (blocks.csr_rows)
                    s = 0.0
                    for l in range(d):
                        s += B[i, j, l] * N[d * i + l, col]
                    J[row, col] = s
                for l in range(d):
                    J[row, d * i + l] += A[i, j, l]
        for k in range(m, n):                     # joint rows: Phi_j = rho_j u_j
            for col in range(n):
                J[k, col] = rho[k] * N[k, col]
        top = 1e-300
        for k in range(n):
            top = max(top, abs(nu[k]), abs(rho[k] * u[k]))
        eps = eps_rel * np.sqrt(2.0 * psi) / top
        for k in range(n):
            J[k, k] += eps
        for k in range(n):
            dnu[k] = -phi[k]
        if not _gauss_solve(J, dnu):              # exactly singular even with the shift: a larger one
            return SINGULAR
        _matvec(N, dnu, du)
        t = 1.0
        while True:
            for k in range(n):
                trial_nu[k] = nu[k] + t * dnu[k]
                trial_u[k] = u[k] + t * du[k]
            _alart_curnier(trial_nu, trial_u, rho, mu, d, scratch, A, B, False)
            trial_psi = 0.5 * dot(scratch, scratch)
            if trial_psi <= (1.0 - 2.0 * ARMIJO_SIGMA * t) * psi or t <= MIN_STEP:
                break
            t *= 0.5
        if trial_psi > psi:
            fs[F_FAILURES] += 1.0
        for k in range(n):
            nu[k] += t * dnu[k]
        _matvec(N, nu, u)                         # afresh rather than u + t du: no drift over many iterations
        for k in range(n):
            u[k] += r[k]
        fs[F_ITER] += 1.0


@njit(cache=True)
def _matvec(N, x, out):
    """out = N x for a dense N (unsigned indices: no wraparound tests, workbench.blocks.csr_rows)."""
    for i in range(uint64(N.shape[0])):
        acc = 0.0
        for j in range(uint64(N.shape[1])):
            acc += N[i, j] * x[j]
        out[i] = acc


@njit(cache=True)
def _gauss_solve(J, x):
    """Solve J y = x in place (x <- y) by Gaussian elimination with partial pivoting, J overwritten;
    False when a pivot is zero or not finite. Written out rather than LAPACK through numba's
    np.linalg.solve, whose compilation took about 20 s (once per machine) for a system of at most
    DENSE_MAX unknowns."""
    n = uint64(x.shape[0])     # unsigned positions: no wraparound tests (workbench.blocks.csr_rows)
    one = uint64(1)
    for c in range(n):
        p = c
        best = abs(J[c, c])
        for i in range(c + one, n):
            if abs(J[i, c]) > best:
                best, p = abs(J[i, c]), i
        if not (best > 0.0 and best < np.inf):
            return False
        if p != c:
            for j in range(c, n):
                J[c, j], J[p, j] = J[p, j], J[c, j]
            x[c], x[p] = x[p], x[c]
        for i in range(c + one, n):
            f = J[i, c] / J[c, c]
            if f != 0.0:
                for j in range(c + one, n):
                    J[i, j] -= f * J[c, j]
                x[i] -= f * x[c]
    for back in range(n):
        c = n - one - back
        acc = x[c]
        for j in range(c + one, n):
            acc -= J[c, j] * x[j]
        x[c] = acc / J[c, c]
    for c in range(n):
        if not np.isfinite(x[c]):
            return False
    return True


class NewtonSolver(NCPMethod):
    name = "newton"
    summary = "nonsmooth Newton on Alart-Curnier with Armijo line search (compiled Alart-Curnier pass; dense or sparse LU)"
    params = (Param("eps_rel", float, 1e-2, "relative Levenberg-Marquardt shift eps_k = eps_rel ||Phi|| / ||nu||"),)
    extras = ("merit",)
    #: a small global problem is condensed by the run itself (:func:`_first_call`), to the numbers
    #: workbench.method.Method's condensation gives, without its local problem's Python objects (on one
    #: contact they cost more than the run)
    condenses = False

    def solve(self, model, options: SolveOptions) -> SolveResult:
        """Up to DENSE_MAX unknowns the whole iteration runs compiled (:func:`_dense_newton`, called
        through :func:`_dense_start`, which allocates the run's buffer, and :func:`_dense_call`, which
        makes the dense N, rho and the start from N's CSR arrays in it); larger problems go through the
        template (:meth:`iterate`, a sparse LU per iteration)."""
        problem = model.problem
        n, n_c, d = problem.n_unknowns, problem.n_contacts, problem.d
        if n > DENSE_MAX:
            # SuperLU loaded here, before the clock; a dense solve never needs it (a cold process's
            # import of scipy.sparse.linalg is tens of milliseconds)
            import scipy.sparse.linalg  # noqa: F401
            return super().solve(model, options)
        result = self.new_result(model)
        warm = options.warm_start
        start = _NO_START if warm is None else np.ascontiguousarray(warm, dtype=float).reshape(-1)
        if warm is not None and start.shape[0] != n:
            raise InputError(f"warm start has length {start.shape[0]}, the problem has {n} unknowns")
        eps_rel, tol = float(options.params["eps_rel"]), float(options.tol)
        # a history keeps a row per iteration; without one a call makes as many iterations as about
        # _CHUNK_WORK operations (n^3 / 3 for the factorisation) before the caps are checked
        max_iter = self.max_iter(options)
        cap = max_iter if max_iter is not None else _NO_CAP
        chunk = 1 if options.keep_history else max(1, _CHUNK_WORK // max(1, n ** 3 // 3))
        first_stop = 0 if options.keep_history else min(chunk, cap)
        data = _given_data(problem)
        arrays = None if data else problem.condensation_data()      # a small global problem's M, D, k, b
        # the options read and checked, the clock starts (Recorder): from here every line is the solve's
        rec = Recorder(options, "siconos_error", self.extras, max_iter)
        if data:
            ptr, idx, val, r, mu = data
            condensed = None
            code, floats = _dense_start(ptr, idx, val, r, mu, d, eps_rel, tol, start, first_stop, _NO_RHO)
            if code == NEEDS_STEPS:          # a contact no body moves: contact_steps's fallback, then again
                code, floats = _dense_start(ptr, idx, val, r, mu, d, eps_rel, tol, start, first_stop,
                                            contact_steps(problem))
        else:
            code, floats, (ptr, idx, val, r, mu), condensed = _first_global_call(problem, arrays, d, eps_rel, tol,
                                                                                 start, first_stop)
        while True:
            if code == CONVERGED:            # the point is chosen: the clock stops at once (the rest is bookkeeping)
                rec.stop_clock()
            k = int(floats[F_ITER])
            if rec.keep:
                nu, u = _dense_row(floats, _NU, n, n_c, d), _dense_row(floats, _U, n, n_c, d)
                rec.record(k, dual_objective(problem, nu, u), floats[F_ERR], floats[F_PSI])
            if code == CONVERGED:
                stop = StopCause.CONVERGED
                break
            if code == SINGULAR:
                result.message, result.solver_status = "singular Newton system (even with the shift)", "diverged"
                stop = StopCause.FAILED
                break
            stop = rec.capped(k)
            if stop is not None:
                break
            floats[F_STOP] = min(k + chunk, cap)
            if r is None:                    # condensed in the first call: r is in the run's buffer
                r = _dense_row(floats, _R, n, n_c, d)
            code = _dense_call(ptr, idx, val, r, mu, d, eps_rel, tol, floats, start, _RESUME, True)
        if rec.seconds is None:
            rec.stop_clock()
        nu = _dense_row(floats, _NU, n, n_c, d).copy()
        result.nu, result.iterations = nu, k
        result.solver_status = result.solver_status or stop.value
        result.info["line_search_failures"] = int(floats[F_FAILURES])
        if problem.is_global:
            result.v = problem.velocity(nu)
        if condensed:
            result.info["condensed"] = condensed_note(condensed, problem.n_dof)
        return rec.finish(result, stop)

    def iterate(self, model, options: SolveOptions, result: SolveResult) -> Iterator[Iterate]:
        """The sparse iteration (above DENSE_MAX unknowns): J filled on a fixed pattern by one compiled
        pass, SuperLU's LU of it (J's CSR arrays read as CSC are J^T, factorised and solved transposed)."""
        import scipy.sparse.linalg as spla  # loaded by solve() before the clock
        problem = model.problem
        eps_rel = float(options.params["eps_rel"])
        N = problem.N.tocsr()
        n, d = problem.n_unknowns, problem.d
        P = newton_pattern(N, problem.n_contacts, d)
        J_val, work = np.empty(P.nnz), np.zeros(n)
        rho = contact_steps(problem)
        nu = np.zeros(n) if options.warm_start is None else np.array(options.warm_start, dtype=float)
        u = problem.relative_velocity(nu)
        phi, A, B = alart_curnier(problem, nu, u, rho)
        failures, seconds = 0, None
        try:
            while True:
                psi = 0.5 * float(phi @ phi)
                t0 = time.perf_counter()
                eps = eps_rel * np.sqrt(2 * psi) / max(float(np.abs(nu).max()), float(np.abs(rho * u).max()), 1e-300)
                _fill_newton_matrix(N.indptr, N.indices, N.data, P.indptr, P.indices, J_val, A, B, rho, eps, d, work)
                J_T = sp.csc_matrix((J_val, P.indices, P.indptr), shape=(n, n))
                fill = time.perf_counter() - t0
                # the last iteration's duration forecasts the next one's (its LU cannot be interrupted); the
                # first LU is forecast from J's size (Recorder.affords_first)
                yield Iterate(nu, u, (psi,), forecast=seconds,
                              first=(J_T, spla.splu) if seconds is None else None)
                t0 = time.perf_counter() - fill
                try:
                    dnu = spla.splu(J_T).solve(-phi, trans="T")
                except RuntimeError:  # exactly singular even with the shift
                    dnu = spla.lsqr(J_T.T, -phi)[0]
                if not np.all(np.isfinite(dnu)):
                    result.message = "non-finite Newton direction"
                    result.solver_status = "diverged"
                    return StopCause.FAILED
                du = csr_product(N, dnu)
                t = 1.0
                while True:
                    trial_phi = alart_curnier(problem, nu + t * dnu, u + t * du, rho, jacobian=False)
                    if 0.5 * trial_phi @ trial_phi <= (1 - 2 * ARMIJO_SIGMA * t) * psi or t <= MIN_STEP:
                        break
                    t *= 0.5
                if 0.5 * trial_phi @ trial_phi > psi:
                    failures += 1
                nu = nu + t * dnu
                u = csr_product(N, nu) + problem.r  # afresh rather than u + t du: no drift over many iterations
                phi, A, B = alart_curnier(problem, nu, u, rho)
                seconds = time.perf_counter() - t0
        finally:
            result.info["line_search_failures"] = failures
