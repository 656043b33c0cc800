"""Friction cones and their projections, vectorised over contacts.

The friction cone of contact i (seed 001 eq. 13b, seed 000 eq. 11) with friction coefficient mu_i is

    K_i = { x = [x_n, x_t] in R^d :  ||x_t|| <= mu_i x_n },

its dual cone K_i^* = { y : mu_i ||y_t|| <= y_n } and its polar K_i° = -K_i^* (seed 001 eq. 13c).
Arrays of points have shape (n_c, d) with the normal component first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_friction_cone", "project_dual_cone", "distance_to_cone", "project_unknowns"]


def project_friction_cone(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``x`` (n_c, d) onto K_{mu_i}.

    Three cases per contact, with s = ||x_t||:
      s <= mu x_n         -> x (inside);
      mu s <= -x_n        -> 0 (in the polar cone);
      otherwise           -> x_n' = (x_n + mu s) / (1 + mu^2),  x_t' = mu x_n' x_t / s.
    mu = 0 gives the ray {x_t = 0, x_n >= 0}.
    """
    x = np.asarray(x, dtype=float)
    mu = np.asarray(mu, dtype=float)
    xn = x[:, 0]
    xt = x[:, 1:]
    s = np.sqrt(np.einsum("ij,ij->i", xt, xt))
    out = np.zeros_like(x)
    inside = s <= mu * xn
    polar = mu * s <= -xn
    side = ~(inside | polar)
    out[inside] = x[inside]
    if np.any(side):
        m = mu[side]
        pn = (xn[side] + m * s[side]) / (1.0 + m * m)
        out[side, 0] = pn
        # side implies s > 0 (s = 0 is either inside for x_n >= 0 or polar for x_n <= 0)
        out[side, 1:] = (m * pn / s[side])[:, None] * xt[side]
    return out


def project_dual_cone(y: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Projection onto the dual cone K^* = {mu ||y_t|| <= y_n}.

    Moreau's decomposition with respect to K^* (whose polar is -K): y = P_K*(y) - P_K(-y).
    """
    y = np.asarray(y, dtype=float)
    return y + project_friction_cone(-y, mu)


def distance_to_cone(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """||x_i - P_K(x_i)|| per contact (zero inside the cone)."""
    diff = x - project_friction_cone(x, mu)
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def project_unknowns(nu: np.ndarray, mu: np.ndarray, d: int) -> np.ndarray:
    """Projection of a full vector of unknowns nu = [gamma; lambda] onto K x R^{n_b}:
    contacts onto their friction cones, bilateral impulses left free (seed 001 eq. 21)."""
    out = np.array(nu, dtype=float, copy=True)
    m = mu.shape[0] * d
    out[:m] = project_friction_cone(out[:m].reshape(-1, d), mu).reshape(-1)
    return out
