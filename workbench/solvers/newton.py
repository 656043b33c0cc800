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
contacts) J is assembled and factorised dense instead (LAPACK), where the sparse assembly and SuperLU
cost hundreds of microseconds of dispatch per iteration for microseconds of arithmetic. A sparse LU of the augmented system
[[M, -C], [B C^T, A + eps I]] instead (the sparsity of M and C) was measured slower: on a packing of
1,845 contacts its LU took 0.45 s against 0.24 s (COLAMD ordering). The LU's fill grows faster than
the problem: at 10,000 contacts one iteration takes seconds. The method stops when the
workbench's siconos_error <= tol; caps: options.max_iter (default 200), options.time_limit (the
bookkeeping is workbench.solvers.ncp_base.NCPMethod's; history extra: merit psi).
Parameters (options.params): ``eps_rel`` (default 1e-2: on the singular N of the shared rigid problems
1e-8 and 1e-4 stalled on BoxesStack1 and Capsules, 1e-1 and 1 took more iterations).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

from workbench.metrics import unknown_diagonal
from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, StopCause
from workbench.solvers.ncp_base import Iterate, NCPMethod

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
    """:func:`alart_curnier` contact by contact (A, B zero on entry)."""
    n_c = mu.shape[0]
    z = np.empty(d)
    for i in range(n_c):
        o = d * i
        rc = rho[o]
        xi = nu[o] - rc * u[o]
        act = xi > 0
        R = mu[i] * max(xi, 0.0)
        nz = 0.0
        for j in range(1, d):
            z[j] = nu[o + j] - rc * u[o + j]
            nz += z[j] * z[j]
        nz = np.sqrt(nz)
        stick = nz <= R and R > 0               # R = 0 (open or frictionless): Phi_t = gamma_t
        safe = nz if nz > 0 else 1.0
        phi[o] = nu[o] - max(xi, 0.0)
        for j in range(1, d):
            phi[o + j] = nu[o + j] - (z[j] if stick else R * z[j] / safe)
        if not jacobian:
            continue
        A[i, 0, 0] = 0.0 if act else 1.0
        B[i, 0, 0] = rc if act else 0.0
        ratio = 0.0 if stick else R / safe     # sliding (or R = 0): Phi_t = g_t - R z_hat
        dR = mu[i] if act and not stick else 0.0   # dR = mu (dg_n - rho du_n) where xi > 0
        for j in range(1, d):
            for l in range(1, d):
                eye = 1.0 if j == l else 0.0
                if stick:
                    B[i, j, l] = rc * eye
                else:
                    tang = eye - z[j] * z[l] / (safe * safe)
                    A[i, j, l] = eye - ratio * tang
                    B[i, j, l] = rc * ratio * tang
            A[i, j, 0] = -dR * z[j] / safe
            B[i, j, 0] = dR * rc * z[j] / safe
    for k in range(d * n_c, nu.shape[0]):
        phi[k] = rho[k] * u[k]


def block_diagonal(blocks: np.ndarray, tail: np.ndarray) -> sp.csr_matrix:
    """Sparse block-diagonal matrix from (n_c, d, d) blocks followed by the diagonal ``tail``."""
    n_c, d, _ = blocks.shape
    bsr = sp.bsr_matrix((blocks, np.arange(n_c), np.arange(n_c + 1)), shape=(n_c * d, n_c * d))
    return sp.block_diag([bsr, sp.diags(tail)], format="csr") if tail.size else bsr.tocsr()


#: up to this many unknowns the Newton matrix is assembled and factorised dense (LAPACK): on a few
#: contacts scipy's sparse assembly and SuperLU cost about 0.5 ms per iteration, mostly dispatch
DENSE_MAX = 240


def newton_matrix(A: np.ndarray, B: np.ndarray, rho_joints: np.ndarray, N, N_dense: np.ndarray | None):
    """J = A + B N with A, B block diagonal ((n_c, d, d) stacks, joints: A = 0, B = rho_j): dense
    when ``N_dense`` is given, else sparse (CSR)."""
    if N_dense is None:
        return block_diagonal(A, np.zeros(rho_joints.size)) + block_diagonal(B, rho_joints) @ N
    n_c, d, _ = A.shape
    m = n_c * d
    J = np.empty_like(N_dense)
    J[:m] = np.matmul(B, N_dense[:m].reshape(n_c, d, -1)).reshape(m, -1)
    J[m:] = rho_joints[:, None] * N_dense[m:]
    rows = np.arange(m).reshape(n_c, d)
    J[rows[:, :, None], rows[:, None, :]] += A
    return J


class NewtonSolver(NCPMethod):
    name = "newton"
    summary = "nonsmooth Newton on Alart-Curnier with Armijo line search (compiled Alart-Curnier pass; dense or sparse LU)"
    params = (Param("eps_rel", float, 1e-2, "relative Levenberg-Marquardt shift eps_k = eps_rel ||Phi|| / ||nu||"),)
    default_max_iter = 200
    extras = ("merit",)

    def iterate(self, model, options: SolveOptions, result: SolveResult) -> Iterator[Iterate]:
        problem = model.problem
        eps_rel = float(options.params["eps_rel"])
        N = problem.N.tocsr()
        n, m = problem.n_unknowns, problem.n_contact_unknowns
        N_dense = N.toarray() if n <= DENSE_MAX else None
        rho = contact_steps(problem)
        nu = np.zeros(n) if options.warm_start is None else np.array(options.warm_start, dtype=float)
        u = problem.relative_velocity(nu)
        phi, A, B = alart_curnier(problem, nu, u, rho)
        failures = 0
        try:
            while True:
                psi = 0.5 * float(phi @ phi)
                yield Iterate(nu, u, (psi,))
                J = newton_matrix(A, B, rho[m:], N, N_dense)
                eps = eps_rel * np.sqrt(2 * psi) / max(float(np.abs(nu).max()), float(np.abs(rho * u).max()), 1e-300)
                try:
                    if N_dense is None:
                        dnu = spla.splu((J + eps * sp.eye(n)).tocsc()).solve(-phi)
                    else:
                        dnu = np.linalg.solve(J + eps * np.eye(n), -phi)
                except (RuntimeError, np.linalg.LinAlgError):  # exactly singular even with the shift
                    dnu = spla.lsqr(J, -phi)[0]
                if not np.all(np.isfinite(dnu)):
                    result.message = "non-finite Newton direction"
                    result.solver_status = "diverged"
                    return StopCause.FAILED
                du = N @ dnu if N_dense is None else N_dense @ dnu
                t = 1.0
                while True:
                    trial_phi = alart_curnier(problem, nu + t * dnu, u + t * du, rho, jacobian=False)
                    if 0.5 * trial_phi @ trial_phi <= (1 - 2 * ARMIJO_SIGMA * t) * psi or t <= MIN_STEP:
                        break
                    t *= 0.5
                if 0.5 * trial_phi @ trial_phi > psi:
                    failures += 1
                nu = nu + t * dnu
                u = (N @ nu if N_dense is None else N_dense @ nu) + problem.r  # afresh rather than u + t du: no drift over many iterations
                phi, A, B = alart_curnier(problem, nu, u, rho)
        finally:
            result.info["line_search_failures"] = failures
