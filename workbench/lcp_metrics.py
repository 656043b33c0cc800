"""Measures of a candidate solution of a linear complementarity problem (LCP), from arrays alone.

LCP(A, q): find z with w = A z + q and 0 <= z ⊥ w >= 0 (componentwise). The workbench judges the
LCP formulation (formulations.lcp_pyramid) with these, in addition to workbench.metrics, which
judges the impulses on the cone problem.

- ``lcp_residual`` ||min(z, w)||_inf: zero exactly when z solves the LCP (min(z_i, w_i) = 0 means
  z_i >= 0, w_i >= 0 and one of them zero); it measures negative entries and complementarity alike.
  Callers pass dimensionless z and w (each entry divided by its unit), so the number is unit-free.
- ``normal_velocity_error``: the error Anitescu and Hart 2003 reports for LCP2 (section 4.B, Table 1): at the
  contacts with c_n > 0 the normal velocity should vanish; the QP (15) with Gamma = 0 leaves
  u_n = mu lambda there. Computed as |u_n| at the contacts whose normal impulse exceeds
  ``active_tol`` times the largest one (so an interior-point method's 1e-10 impulses on separating
  contacts do not count as active), in the units of u_n [m/s]. The paper does not say which statistic
  over the contacts its Table 1 gives (its nearby wording is "average normal velocity error"), so each
  is returned: the maximum, the mean, the 2-norm and the root mean square.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lcp_residual", "normal_velocity_error", "ACTIVE_TOL"]

#: a contact is active (c_n > 0 in Anitescu and Hart 2003) when c_n > ACTIVE_TOL * max(c_n)
ACTIVE_TOL = 1e-6


def lcp_residual(z: np.ndarray, w: np.ndarray) -> float:
    """||min(z, w)||_inf."""
    return float(np.abs(np.minimum(z, w)).max()) if z.size else 0.0


def normal_velocity_error(c_n: np.ndarray, u_n: np.ndarray, active_tol: float = ACTIVE_TOL) -> dict[str, float]:
    """Max, mean, 2-norm and rms of |u_n| over the active contacts, and their number (module docstring)."""
    top = float(c_n.max()) if c_n.size else 0.0
    active = c_n > active_tol * top if top > 0 else np.zeros(c_n.shape, dtype=bool)
    err = np.abs(u_n[active])
    return {"normal_velocity_error": float(err.max()) if err.size else 0.0,
            "mean_normal_velocity_error": float(err.mean()) if err.size else 0.0,
            "norm2_normal_velocity_error": float(np.linalg.norm(err)),
            "rms_normal_velocity_error": float(np.sqrt(np.mean(err * err))) if err.size else 0.0,
            "active_contacts": float(active.sum())}
