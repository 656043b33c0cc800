"""Projected quasi-Newton method of Koziara 2017 (Koziara, Algorithm 1) for the exact Coulomb problem.

Model: :class:`formulations.ncp.NCPModel`. The method works on the dimensionless data of the model
(x = nu / impulse scale, y = u / velocity scale, y = W x + q with W = N impulse/velocity, mean W_ii = 1),
because the natural map R - proj_K(R - F(R)) of Koziara 2017 adds impulses and velocities with unit step.
Vectors are [normal, tangent...] per contact here; the paper writes [T, N].

Root finding (Koziara 2017 eq. 15): C(x) = F(y) + m(x - F(y)) = 0, x in K, where F is the De Saxce
velocity [y_n + mu ||y_t||, y_t] (eq. 11) and m(S) = S - proj_K(S) = proj_{K°}(S) (eqs. 14, 18).
Smoothing (section 4): the polar projection through the spectral values
lambda_1 = (-S_n - mu ||S_t||) / (1 + mu^2), lambda_2 = (||S_t|| - mu S_n) / (1 + mu^2) (eq. 20) and
vectors u_1 = [-1, -mu w], u_2 = [-mu, w], w = S_t / ||S_t|| (eqs. 21-22):
m_w(S) = g_1 u_1 + g_2 u_2 with g_1 = (lambda_1 + sqrt(lambda_1^2 + 4 w^2)) / 2,
g_2 = (lambda_2 + sqrt(lambda_2^2 + 4 mu^2 w^2)) / 2 (eqs. 24-25, 31), and F_w with the smoothed norm
sqrt(||y_t||^2 + w^2) - w (eq. 39); w here is omega. Gradient of m_w (eqs. 27, 34-38):
[[d, c w^T], [c w, a I + (b - a) w w^T]] with a, b, c, d of eqs. 35-38 (for mu = 0: a = b = 1, c = 0,
section 4.1.1). Linearisation (eqs. 42-49): grad C = X W + Y, X = (I - Y) grad F_w, Y = grad m_w.

Algorithm 1: repeat
    (a) y = W x + q;  (b) C_w and A = X W + Y + delta I;
    (c) dx = A^-1 C_w by GMRES, absolute accuracy eps ||C_w||, at most m iterations, restart 20,
        preconditioned by the inverted 3x3 diagonal blocks of A (X_i W_ii + Y_i + delta I);
    (d) x = proj_K(x - dx)
until the stopping test holds or k = n, then (3) fall back on Gauss-Seidel.
W is applied matrix-free (problem.apply_N); its diagonal blocks come from problem.N_diagonal_blocks.
Joints (not in the paper): C_j = y_j (their "cone" is R, whose polar is {0}), preconditioned by 1.

Stopping test: the workbench's siconos_error <= tol (the measure every exact method is judged by);
with ``gamma`` given, Algorithm 1's own test g(R) < gamma on the merit of eq. 40,
g = sum_i C_i^T W_ii^-1 C_i / sum_i q_i^T W_ii^-1 q_i (contacts; C unsmoothed), which is recorded in the
history either way.

Defaults (Koziara 2017 Table 1): n = 1000 iterations (options.max_iter), omega = 1e-3 gamma (gamma =
``gamma`` or tol), delta = 0, m = 10, eps = 0.25, GMRES restart 20, at most 100000 matrix-vector products
in total. ``delta_mode`` (section 8.1.2): "absolute" (delta added as given, in units of the scaled
W) or "min" / "avg" / "max" (delta times min / mean / max of the scaled W_ii; "avg" equals "absolute"
here since the scaled mean is 1). Fallback: ``fallback`` names the in-house solver run on the same model (the
NCP model is the anti-relaxed CCQO) from the last iterate when PQN does not converge (default "pgs",
projected Gauss-Seidel; None disables it); the result then says so in message, info["fallback"] and
its hand-over record (SolveResult.handover: what PQN reached alone, by the Siconos error, and when).
The bookkeeping (siconos_error per iterate, caps, history with the extras merit and matvecs, stop
cause) is workbench.solvers.ncp_base.NCPMethod's.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import scipy.sparse.linalg as spla

from workbench.cones import project_unknowns
from workbench.metrics import de_saxce_shift, natural_map
from workbench.params import Param
from workbench.solvers.admm import ADMMSolver
from workbench.solvers.apgd import APGDSolver
from workbench.solvers.base import HandOver, SolveOptions, SolveResult, StopCause
from workbench.solvers.bb import BBSolver
from workbench.solvers.jacobi import JacobiSolver
from workbench.solvers.ncp_base import Iterate, NCPMethod
from workbench.solvers.pgs import PGSSolver
from workbench.solvers.recorder import Recorder

__all__ = ["PQNSolver", "smoothed_residual"]

#: the in-house solvers of the anti-relaxed CCQO that may finish a PQN run, by name (imported, not
#: looked up in the registry, which lists PQN itself)
_FALLBACK_SOLVERS = {cls.name: cls for cls in (PGSSolver, JacobiSolver, APGDSolver, BBSolver, ADMMSolver)}
#: the values of the ``fallback`` parameter (None: no fallback)
FALLBACKS = (*_FALLBACK_SOLVERS, None)


def _gdot(lam: np.ndarray, root: np.ndarray) -> np.ndarray:
    """g'(lambda / s) = (1 + lambda / sqrt(lambda^2 + 4 s^2)) / 2 written with root = that sqrt;
    root = 0 only for s = 0, lambda = 0 (mu = 0), where the one-sided values average to 1/2."""
    return 0.5 * (1.0 + np.divide(lam, root, out=np.zeros_like(lam), where=root > 0))


def smoothed_residual(x: np.ndarray, y: np.ndarray, mu: np.ndarray, omega: float):
    """C_w and the per-contact blocks X, Y of Koziara 2017 (module docstring) for contact arrays
    x, y of shape (n_c, d). Returns (C (n_c, d), X (n_c, d, d), Y (n_c, d, d))."""
    n_c, d = x.shape
    yt = y[:, 1:]
    sq = np.sqrt(np.einsum("ij,ij->i", yt, yt) + omega * omega)
    F = y.copy()
    F[:, 0] += mu * (sq - omega)
    gradF = np.broadcast_to(np.eye(d), (n_c, d, d)).copy()
    gradF[:, 0, 1:] = (mu / sq)[:, None] * yt
    S = x - F
    St = S[:, 1:]
    nt = np.sqrt(np.einsum("ij,ij->i", St, St))
    w = np.zeros_like(St)
    w[:, 0] = 1.0  # any unit vector where S_t = 0: the tangential terms cancel there (g_2 = mu g_1)
    np.divide(St, nt[:, None], out=w, where=nt[:, None] > 0)
    k = 1.0 + mu * mu
    lam1 = (-S[:, 0] - mu * nt) / k
    lam2 = (nt - mu * S[:, 0]) / k
    root1 = np.sqrt(lam1 * lam1 + 4 * omega * omega)
    root2 = np.sqrt(lam2 * lam2 + 4 * (mu * omega) ** 2)
    g1 = 0.5 * (lam1 + root1)
    g2 = 0.5 * (lam2 + root2)
    m_s = np.empty_like(S)
    m_s[:, 0] = -g1 - mu * g2
    m_s[:, 1:] = (g2 - mu * g1)[:, None] * w
    gd1 = _gdot(lam1, root1)
    gd2 = _gdot(lam2, root2)
    denom = root2 + mu * root1
    a = 0.5 * (1.0 + np.divide(lam2 + mu * lam1, denom, out=np.zeros_like(denom), where=denom > 0))
    b = (mu * mu * gd1 + gd2) / k
    c = mu * (gd1 - gd2) / k
    dd = (gd1 + mu * mu * gd2) / k
    frictionless = mu == 0  # section 4.1.1: the tangential direction is not smoothed
    a = np.where(frictionless, 1.0, a)
    b = np.where(frictionless, 1.0, b)
    c = np.where(frictionless, 0.0, c)
    Y = np.empty((n_c, d, d))
    Y[:, 0, 0] = dd
    Y[:, 0, 1:] = c[:, None] * w
    Y[:, 1:, 0] = c[:, None] * w
    Y[:, 1:, 1:] = a[:, None, None] * np.eye(d - 1) + (b - a)[:, None, None] * (w[:, :, None] * w[:, None, :])
    X = np.einsum("cij,cjk->cik", np.eye(d) - Y, gradF)
    return F + m_s, X, Y


def _inverse_blocks(blocks: np.ndarray) -> np.ndarray:
    """Inverses of a stack of small blocks; pseudo-inverses where a block is singular."""
    try:
        return np.linalg.inv(blocks)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(blocks)


class PQNSolver(NCPMethod):
    name = "pqn"
    summary = "projected quasi-Newton with smoothing and block-preconditioned GMRES (Koziara 2017, Algorithm 1)"
    default_max_iter = 1000     # n of Koziara 2017 Table 1 (the common cap: options.max_iter, --max-iter)
    params = (
        Param("gamma", float, None, "Algorithm 1's own test g(R) < gamma (None: siconos_error <= tol)"),
        Param("omega_factor", float, 1e-3, "smoothing omega = omega_factor x (gamma or tol)"),
        Param("delta", float, 0.0, "regularisation delta"),
        Param("delta_mode", str, "absolute", "how delta is scaled (section 8.1.2)", ("absolute", "min", "avg", "max")),
        Param("m", int, 10, "GMRES iterations per step"),
        Param("eps", float, 0.25, "GMRES relative accuracy"),
        Param("restart", int, 20, "GMRES restart"),
        Param("max_matvec", int, 100_000, "cap on products with W, in total"),
        Param("fallback", str, "pgs", "solver run on the exact problem from the last iterate when PQN does not "
              "converge (null: no fallback)", FALLBACKS),
    )
    extras = ("merit", "matvecs")
    #: Algorithm 1, line 3: the solver its ``fallback`` parameter names, on the same model
    hands_over_to = HandOver("fallback", "fallback")

    def iterate(self, model, options: SolveOptions, result: SolveResult) -> Iterator[Iterate]:
        problem = model.problem
        p = options.params
        n, m, d, n_c = problem.n_unknowns, problem.n_contact_unknowns, problem.d, problem.n_contacts
        alpha, vel = model.scale.impulse, model.scale.velocity
        to_w = alpha / vel
        q = problem.r / vel
        mu = problem.mu
        W_blocks = problem.N_diagonal_blocks * to_w
        W_inv = _inverse_blocks(W_blocks)
        q_c = q[:m].reshape(n_c, d)
        merit_den = float(np.einsum("ci,cij,cj->", q_c, W_inv, q_c)) or 1.0
        gamma = p["gamma"]
        omega = p["omega_factor"] * (options.tol if gamma is None else float(gamma))
        diag_w = np.einsum("cii->ci", W_blocks)
        delta = float(p["delta"]) * {"absolute": 1.0, "min": diag_w.min(), "avg": diag_w.mean(),
                                     "max": diag_w.max()}[p["delta_mode"]]
        restart = min(int(p["restart"]), int(p["m"]))
        matvecs = 0
        merit = np.nan

        def apply_W(v):
            nonlocal matvecs
            matvecs += 1
            return problem.apply_N(v) * to_w

        x = np.zeros(n) if options.warm_start is None else np.asarray(options.warm_start, dtype=float) / alpha
        x = project_unknowns(x, mu, d)
        try:
            while True:
                y = apply_W(x) + q                                                   # (a)
                C = natural_map(problem, x, y + de_saxce_shift(problem, y))
                C_c = C[:m].reshape(n_c, d)
                merit = float(np.einsum("ci,cij,cj->", C_c, W_inv, C_c)) / merit_den
                yield Iterate(alpha * x, vel * y, (merit, matvecs), None if gamma is None else merit < float(gamma))
                if not np.all(np.isfinite(x)):
                    result.solver_status = "diverged"
                    return StopCause.FAILED
                if matvecs >= p["max_matvec"]:
                    result.solver_status = "max_matvec"
                    return StopCause.MAX_ITER
                Cw_c, X, Y = smoothed_residual(x[:m].reshape(n_c, d), y[:m].reshape(n_c, d), mu, omega)   # (b)
                Cw = np.concatenate([Cw_c.reshape(-1), y[m:]])
                P_inv = _inverse_blocks(np.einsum("cij,cjk->cik", X, W_blocks) + Y + delta * np.eye(d))

                def apply_A(v, X=X, Y=Y):
                    Wv = apply_W(v)
                    out = Wv + delta * v  # joints: X = I, Y = 0
                    vc, Wvc = v[:m].reshape(n_c, d), Wv[:m].reshape(n_c, d)
                    out[:m] = (np.einsum("cij,cj->ci", X, Wvc) + np.einsum("cij,cj->ci", Y, vc)).reshape(-1) \
                        + delta * v[:m]
                    return out

                def apply_P(v, P_inv=P_inv):
                    out = v.copy()
                    out[:m] = np.einsum("cij,cj->ci", P_inv, v[:m].reshape(n_c, d)).reshape(-1)
                    return out

                A = spla.LinearOperator((n, n), matvec=apply_A, dtype=float)
                Pm = spla.LinearOperator((n, n), matvec=apply_P, dtype=float)
                dx, _ = spla.gmres(A, Cw, rtol=0.0, atol=p["eps"] * float(np.linalg.norm(Cw)), restart=restart,
                                   maxiter=-(-int(p["m"]) // restart), M=Pm)                       # (c)
                x = project_unknowns(x - dx, mu, d)                                                     # (d)
        finally:
            result.info.update(matvecs=matvecs, merit=merit, omega=omega, delta=delta)

    def conclude(self, model, options: SolveOptions, result: SolveResult, stop: StopCause,
                 rec: Recorder) -> StopCause:
        """Algorithm 1, line 3: Gauss-Seidel (``fallback``) on the exact problem from the last PQN
        iterate when PQN did not converge. The NCP model is the anti-relaxed CCQO (formulations.ncp), so
        the fallback solver takes it as it is, with what is left of the time limit (none after a
        timeout: then there is no fallback). The fallback is warmed up with PQN
        (workbench.method.Method.warm_up hands over to it), so its compilation is never inside the limit."""
        result.info["pqn_stop"] = result.solver_status
        name = options.params["fallback"]
        if stop == StopCause.CONVERGED or name is None:
            return stop
        if stop == StopCause.TIMEOUT:  # no time is left: a fallback would only overrun the limit
            result.message = f"PQN reached the time limit; no time left for the {name} fallback"
            return stop
        warm = result.nu if result.nu is not None and np.all(np.isfinite(result.nu)) else None
        # what PQN reached alone, by the measure every exact method is judged by (evaluated after the
        # fallback ran: its cost is not PQN's)
        fb, _, _ = rec.hand_over(
            self.hands_over_to, _FALLBACK_SOLVERS[name](), model, options, result, warm=warm,
            source=f"{model.formulation}/{self.name}", reason=f"PQN stopped ({result.solver_status}) without converging",
            at_iteration=result.iterations, stop_before=stop,
            error_before=lambda: np.inf if warm is None else model.error(warm, model.problem.relative_velocity(warm)))
        result.info["fallback"] = {"solver": name, "stop": fb.stop.value if fb.stop else None,
                                   "iterations": fb.iterations, "message": fb.message}
        if fb.nu is None:
            result.message = f"PQN stopped ({result.solver_status}); fallback {name} returned nothing ({fb.message})"
            return stop
        result.nu = fb.nu
        result.message = f"PQN stopped ({result.solver_status}) after {result.iterations} iterations; " \
                         f"result of the {name} fallback ({fb.iterations} iterations)"
        return fb.stop or stop
