"""Ellipsoid contact geometry by support functions, compiled per contact (Koziara 2017 sec. 8.1 drum).

An ellipsoid with centre x, body-to-world rotation A and semi-axes (a, b, c) is
{x + A E u : |u| <= 1}, E = diag(a, b, c); with Sigma = A E^2 A^T its support function is
h(n) = n . x + sigma(n), sigma(n) = sqrt(n^T Sigma n), attained at the support point
x + Sigma n / sigma(n) (the point of the surface whose outward normal is n). A sphere of radius R is
the case Sigma = R^2 I.

- Ellipsoid on a plane {p : m . (p - p0) >= 0}: the lowest point along m is x - Sigma m / sigma(m), so
  the gap is Phi = m . (x - p0) - sigma(m) (exact, closed form).
- Ellipsoid inside a circular cylinder of radius R about the axis through c along the unit a: the
  surface point farthest from the axis maximises the radial distance, max over the ellipsoid of
  max over unit e perpendicular to a of e . (p - c) = max_theta f(theta),
  f(theta) = e(theta) . (x - c) + sigma(e(theta)), e(theta) = cos theta e1 + sin theta e2; then
  Phi = R - f(theta*), the contact normal is -e(theta*) (towards the axis) and the contact point the
  support point along e(theta*). f is maximised by safeguarded Newton steps from the direction of the
  centre (exact there for a sphere).
- Two ellipsoids A and B, d = x_B - x_A: the signed distance of two convex bodies (the distance when
  apart, minus the penetration depth when they overlap) is the maximum over unit n of
  g(n) = n . d - sigma_A(n) - sigma_B(n), the separation of the two support planes of normal n
  (the support function of the Minkowski difference). At the maximum the tangential gradient
  g'(n) - (n . g'(n)) n vanishes, i.e. the support points x_A + Sigma_A n / sigma_A and
  x_B - Sigma_B n / sigma_B are joined by a multiple of n: the common normal. g is 1-homogeneous,
  so n . g' = g, and its Hessian is H = -sum_K (Sigma_K / sigma_K - Sigma_K n n^T Sigma_K / sigma_K^3),
  negative semidefinite; on the unit sphere the Riemannian Hessian is P H P - g P (P = I - n n^T),
  negative definite on the tangent plane when g >= 0 (apart: g is concave on the unit ball and the
  maximum unique). Newton steps in a tangent basis start from d / |d| (exact for spheres and for
  axis-aligned ellipsoids along an axis); where the Hessian is not negative definite (overlap) the
  step uses P H P alone, and every step is halved until g does not decrease.

Lengths in m; directions unit vectors in the world frame.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ellipsoid_matrices", "plane_gap", "pair_gaps", "cylinder_gaps"]

#: Newton steps at most per contact (they converge quadratically in a few; the cap is a safeguard)
MAX_NEWTON = 50
#: stop when the tangential gradient is below this times the scale of the pair (round-off level)
_RELATIVE_TOL = 1e-13


def ellipsoid_matrices(rotations: np.ndarray, semi_axes: np.ndarray) -> np.ndarray:
    """Sigma_j = A_j diag(a_j^2, b_j^2, c_j^2) A_j^T (n, 3, 3) [m^2]."""
    return np.einsum("nij,nj,nkj->nik", rotations, semi_axes * semi_axes, rotations)


def plane_gap(x: np.ndarray, sigma: np.ndarray, point: np.ndarray, normal: np.ndarray):
    """Gaps Phi (n, p) [m] of ellipsoids (centres x (n, 3), Sigma (n, 3, 3)) above planes (points
    (p, 3), unit normals (p, 3)) and the offsets (n, p, 3) from each centre to its lowest point."""
    s_m = np.einsum("nij,pj->npi", sigma, normal)
    width = np.sqrt(np.einsum("npi,pi->np", s_m, normal))
    phi = x @ normal.T - np.einsum("pd,pd->p", point, normal)[None, :] - width
    return phi, -s_m / width[:, :, None]


@njit(cache=True)
def _tangent_basis(n):
    """Two unit vectors t1, t2 with (n, t1, t2) orthonormal."""
    k = 0
    if abs(n[1]) < abs(n[k]):
        k = 1
    if abs(n[2]) < abs(n[k]):
        k = 2
    e = np.zeros(3)
    e[k] = 1.0
    t1 = e - n[k] * n
    t1 /= np.sqrt(t1 @ t1)
    t2 = np.cross(n, t1)
    return t1, t2


@njit(cache=True)
def _separation(n, d, sa, sb):
    """g(n / |n|) of the module docstring."""
    n = n / np.sqrt(n @ n)
    return n @ d - np.sqrt(n @ (sa @ n)) - np.sqrt(n @ (sb @ n))


@njit(cache=True)
def _common_normal(d, sa, sb):
    """The maximiser n of g on the unit sphere, by safeguarded Newton steps from d / |d|."""
    length = np.sqrt(d @ d)
    n = d / length if length > 0 else np.array([0.0, 0.0, 1.0])
    scale = length + np.sqrt(np.trace(sa)) + np.sqrt(np.trace(sb))
    for _ in range(MAX_NEWTON):
        san, sbn = sa @ n, sb @ n
        wa, wb = np.sqrt(n @ san), np.sqrt(n @ sbn)
        g = n @ d - wa - wb
        grad = d - san / wa - sbn / wb
        hess = -(sa / wa - np.outer(san, san) / wa ** 3) - (sb / wb - np.outer(sbn, sbn) / wb ** 3)
        t1, t2 = _tangent_basis(n)
        r1, r2 = t1 @ grad, t2 @ grad
        if np.sqrt(r1 * r1 + r2 * r2) <= _RELATIVE_TOL * scale:
            break
        k11, k12, k22 = t1 @ (hess @ t1), t1 @ (hess @ t2), t2 @ (hess @ t2)
        if not (k11 - g < 0.0 and (k11 - g) * (k22 - g) - k12 * k12 > 0.0):
            g = 0.0  # not negative definite (overlap): P H P alone, negative definite on the tangent plane
        k11, k22 = k11 - g, k22 - g
        det = k11 * k22 - k12 * k12
        s1 = -(k22 * r1 - k12 * r2) / det
        s2 = -(k11 * r2 - k12 * r1) / det
        step = s1 * t1 + s2 * t2
        size = np.sqrt(step @ step)
        if size > 0.5:  # at most about 30 degrees at once
            step *= 0.5 / size
        before = _separation(n, d, sa, sb)
        trial = n
        for _ in range(60):
            trial = n + step
            if _separation(trial, d, sa, sb) >= before:
                break
            step *= 0.5
        n = trial / np.sqrt(trial @ trial)
    return n


@njit(cache=True)
def pair_gaps(d, sigma_a, sigma_b):
    """For pairs of ellipsoids (offsets d = x_B - x_A (m, 3), Sigma_A, Sigma_B (m, 3, 3)): the common
    normals n (m, 3) from A to B, the gaps Phi (m,) [m] and the offsets r_A, r_B (m, 3) from each
    centre to its support point (module docstring)."""
    m = d.shape[0]
    normal = np.empty((m, 3))
    phi = np.empty(m)
    ra = np.empty((m, 3))
    rb = np.empty((m, 3))
    for c in range(m):
        n = _common_normal(d[c], sigma_a[c], sigma_b[c])
        san, sbn = sigma_a[c] @ n, sigma_b[c] @ n
        wa, wb = np.sqrt(n @ san), np.sqrt(n @ sbn)
        normal[c] = n
        phi[c] = n @ d[c] - wa - wb
        ra[c] = san / wa
        rb[c] = -sbn / wb
    return normal, phi, ra, rb


@njit(cache=True)
def _radial_reach(theta, y, s, e1, e2):
    """f(theta), f'(theta), f''(theta) of the module docstring and e(theta)."""
    e = np.cos(theta) * e1 + np.sin(theta) * e2
    de = -np.sin(theta) * e1 + np.cos(theta) * e2
    w = np.sqrt(e @ (s @ e))
    se, sde = s @ e, s @ de
    f = e @ y + w
    df = de @ y + de @ se / w
    ddf = -(e @ y) + (de @ sde - e @ se) / w - (de @ se) ** 2 / w ** 3
    return f, df, ddf, e


@njit(cache=True)
def cylinder_gaps(y, sigma, axis, radius):
    """For ellipsoids with centres at y (n, 3) relative to a point of the cylinder's axis (unit
    ``axis``), Sigma (n, 3, 3), inside a cylinder of ``radius`` [m]: the gaps Phi (n,) [m], the
    outward radial directions e (n, 3) (the contact normal is -e) and the offsets (n, 3) from each
    centre to its point farthest from the axis (module docstring)."""
    n = y.shape[0]
    e1, e2 = _tangent_basis(axis)
    phi = np.empty(n)
    out = np.empty((n, 3))
    rb = np.empty((n, 3))
    for j in range(n):
        yj, s = y[j], sigma[j]
        theta = np.arctan2(yj @ e2, yj @ e1)
        scale = np.sqrt(yj @ yj) + np.sqrt(np.trace(s))
        f, df, ddf, e = _radial_reach(theta, yj, s, e1, e2)
        f2, df2, ddf2, e2_ = f, df, ddf, e
        for _ in range(MAX_NEWTON):
            if abs(df) <= _RELATIVE_TOL * scale:
                break
            step = -df / ddf if ddf < 0.0 else np.sign(df) * 0.1
            step = min(max(step, -0.5), 0.5)
            for _ in range(60):
                f2, df2, ddf2, e2_ = _radial_reach(theta + step, yj, s, e1, e2)
                if f2 >= f:
                    break
                step *= 0.5
            theta += step
            f, df, ddf, e = f2, df2, ddf2, e2_
        phi[j] = radius - f
        out[j] = e
        se = s @ e
        rb[j] = se / np.sqrt(e @ se)
    return phi, out, rb
