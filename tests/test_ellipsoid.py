"""Ellipsoid contact geometry (problems.ellipsoid) against analytic cases and an independent search,
and the ellipsoid's mass properties (problems.rigid)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from problems.contact import detect
from problems.ellipsoid import cylinder_gaps, ellipsoid_matrices, pair_gaps
from problems.rigid import ELLIPSOID, SPHERE, Bodies, Planes, World, axis_angle_quat, quat_to_matrix

I3 = np.eye(3)[None]


def _random_rotations(rng, n):
    q = rng.normal(size=(n, 4))
    return quat_to_matrix(q / np.linalg.norm(q, axis=1)[:, None])


def _surface(centre, rot, semi, angles):
    """The surface point of polar/azimuth ``angles`` of an ellipsoid."""
    th, ph = angles
    return centre + rot @ (semi * np.array([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)]))


def test_spheres_are_the_sphere_case():
    d = np.array([[0.3, 0.4, 0.0], [0.0, 0.0, 0.25]])
    normal, phi, ra, rb = pair_gaps(d, 0.1 ** 2 * np.repeat(I3, 2, 0), 0.2 ** 2 * np.repeat(I3, 2, 0))
    np.testing.assert_allclose(phi, [0.5 - 0.3, 0.25 - 0.3], rtol=0, atol=1e-15)  # apart, then overlapping
    np.testing.assert_allclose(normal, d / np.linalg.norm(d, axis=1)[:, None], atol=1e-15)
    np.testing.assert_allclose(ra, 0.1 * normal, atol=1e-15)
    np.testing.assert_allclose(rb, -0.2 * normal, atol=1e-15)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_axis_aligned_ellipsoids_along_an_axis(axis):
    """Along a common principal axis the gap is |d| - a_A - a_B (those semi-axes), apart or overlapping
    (overlap through the thinnest axes: that is also the least translation apart)."""
    semi_a, semi_b = np.array([0.3, 0.5, 0.4]), np.array([0.2, 0.35, 0.25])
    sa, sb = ellipsoid_matrices(I3, semi_a[None]), ellipsoid_matrices(I3, semi_b[None])
    for dist in (2.0, semi_a[axis] + semi_b[axis] - 0.01 if axis == 0 else 1.5):
        d = np.zeros((1, 3))
        d[0, axis] = dist
        normal, phi, ra, rb = pair_gaps(d, sa, sb)
        assert phi[0] == pytest.approx(dist - semi_a[axis] - semi_b[axis], abs=1e-14)
        np.testing.assert_allclose(normal[0], np.eye(3)[axis], atol=1e-14)
        np.testing.assert_allclose(d[0] + rb[0] - ra[0], phi[0] * normal[0], atol=1e-14)  # support points


def test_separated_pairs_agree_with_a_search_over_the_surfaces():
    """The gap of rotated ellipsoids apart equals the least distance between their surfaces found by an
    independent search (Nelder-Mead over the surface parameters, many starts); the support points are
    that far apart along the normal."""
    rng = np.random.default_rng(3)
    for _ in range(4):
        rot = _random_rotations(rng, 2)
        semi = rng.uniform(0.3, 1.0, size=(2, 3))
        d = rng.normal(size=3)
        d *= rng.uniform(1.2, 2.5) / np.linalg.norm(d)
        normal, phi, ra, rb = pair_gaps(d[None], ellipsoid_matrices(rot[:1], semi[:1]), ellipsoid_matrices(rot[1:], semi[1:]))
        best = min(minimize(lambda u: np.linalg.norm(_surface(np.zeros(3), rot[0], semi[0], u[:2])
                                                     - _surface(d, rot[1], semi[1], u[2:])),
                            rng.uniform(0, np.pi, 4), method="Nelder-Mead",
                            options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 5000}).fun for _ in range(25))
        assert phi[0] == pytest.approx(best, abs=1e-9)
        np.testing.assert_allclose(d + rb[0] - ra[0], phi[0] * normal[0], atol=1e-12)


def test_rotation_and_translation_invariance():
    rng = np.random.default_rng(5)
    rot = _random_rotations(rng, 2)
    semi = rng.uniform(0.2, 0.6, size=(2, 3))
    d = np.array([0.9, -0.2, 0.35])
    sa, sb = ellipsoid_matrices(rot[:1], semi[:1]), ellipsoid_matrices(rot[1:], semi[1:])
    n0, phi0, ra0, rb0 = pair_gaps(d[None], sa, sb)
    Q = _random_rotations(rng, 1)[0]
    moved = ellipsoid_matrices(Q[None] @ rot, semi)  # both rotated by Q about any point, then translated
    n1, phi1, ra1, rb1 = pair_gaps((Q @ d)[None], moved[:1], moved[1:])
    assert phi1[0] == pytest.approx(phi0[0], abs=1e-13)
    np.testing.assert_allclose(n1[0], Q @ n0[0], atol=1e-12)
    np.testing.assert_allclose(ra1[0], Q @ ra0[0], atol=1e-12)
    np.testing.assert_allclose(rb1[0], Q @ rb0[0], atol=1e-12)


def test_ellipsoid_on_a_plane_lowest_point():
    """Tilted by alpha about y, an ellipsoid (a, b, c) at height z reaches down sqrt(a^2 sin^2 alpha +
    c^2 cos^2 alpha): the gap to the floor and the lowest point are analytic."""
    a, b, c, alpha, z = 0.3, 0.2, 0.5, 0.7, 0.6
    bodies = Bodies.create(shape=[ELLIPSOID], size=[[a, b, c]], mass=1.0, mu=0.5, x=[[1.0, 2.0, z]],
                           orientation=[axis_angle_quat([0, 1, 0], alpha)])
    contacts = detect(World(bodies, Planes.create([[0, 0, 0]], [[0, 0, 1]], 0.5), envelope=1.0))
    reach = np.hypot(a * np.sin(alpha), c * np.cos(alpha))
    assert contacts.n == 1 and contacts.phi[0] == pytest.approx(z - reach, abs=1e-14)
    assert contacts.rb[0, 2] == pytest.approx(-reach, abs=1e-14)
    assert contacts.rb[0, 1] == pytest.approx(0.0, abs=1e-14)
    # the lowest point of the tilted ellipse x = a cos t cos alpha + c sin t sin alpha, z = -a cos t sin alpha + c sin t cos alpha
    t = np.arctan2(-c * np.cos(alpha), a * np.sin(alpha))
    assert contacts.rb[0, 0] == pytest.approx(a * np.cos(t) * np.cos(alpha) + c * np.sin(t) * np.sin(alpha), abs=1e-14)


def test_inside_a_cylinder():
    """A sphere: Phi = R - rho - r. An upright ellipsoid at the bottom: R - z0 - c. A rotated one: the
    farthest point from the axis found by an independent search over its surface."""
    axis = np.array([0.0, 1.0, 0.0])
    phi, out, rb = cylinder_gaps(np.array([[0.5, 0.3, -0.6]]), 0.1 ** 2 * I3, axis, 1.0)
    assert phi[0] == pytest.approx(1.0 - np.hypot(0.5, 0.6) - 0.1, abs=1e-14)
    np.testing.assert_allclose(out[0], np.array([0.5, 0, -0.6]) / np.hypot(0.5, 0.6), atol=1e-14)
    semi = np.array([[0.09, 0.05, 0.1]])
    phi, out, rb = cylinder_gaps(np.array([[0.0, 0.2, -0.85]]), ellipsoid_matrices(I3, semi), axis, 1.0)
    assert phi[0] == pytest.approx(1.0 - 0.85 - 0.1, abs=1e-14)
    rng = np.random.default_rng(7)
    rot = _random_rotations(rng, 1)
    semi = np.array([0.3, 0.1, 0.2])
    y = np.array([0.4, 0.1, -0.5])
    phi, out, rb = cylinder_gaps(y[None], ellipsoid_matrices(rot, semi[None]), axis, 1.0)
    best = max(-minimize(lambda u: -np.hypot(*_surface(y, rot[0], semi, u)[[0, 2]]), rng.uniform(0, np.pi, 2),
                         method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-13}).fun for _ in range(20))
    assert phi[0] == pytest.approx(1.0 - best, abs=1e-9)
    assert np.hypot(*(y + rb[0])[[0, 2]]) == pytest.approx(best, abs=1e-9)


def test_ellipsoid_mass_properties():
    """J = m/5 (b^2 + c^2, a^2 + c^2, a^2 + b^2), checked by a midpoint-rule integral over the body;
    the bounding radius is the largest semi-axis."""
    a, b, c, m = 0.9, 0.5, 0.3, 2.0
    body = Bodies.create(shape=[ELLIPSOID], size=[[a, b, c]], mass=m, mu=0.1, x=[[0, 0, 0]])
    k = (np.arange(120) + 0.5) / 120 * 2 - 1
    X, Y, Z = np.meshgrid(a * k, b * k, c * k, indexing="ij")
    inside = (X / a) ** 2 + (Y / b) ** 2 + (Z / c) ** 2 <= 1
    X, Y, Z = X[inside], Y[inside], Z[inside]
    integral = m * np.array([np.mean(Y ** 2 + Z ** 2), np.mean(X ** 2 + Z ** 2), np.mean(X ** 2 + Y ** 2)])
    np.testing.assert_allclose(body.inertia[0], integral, rtol=2e-3)
    np.testing.assert_allclose(body.inertia[0], m / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b]), rtol=1e-15)
    assert body.radius[0] == a


def test_ellipsoids_and_spheres_touch_each_other():
    """An ellipsoid and a sphere side by side along x: one contact with gap d - a - R, A the lower index."""
    bodies = Bodies.create(shape=[SPHERE, ELLIPSOID], size=[[0.2, 0.2, 0.2], [0.4, 0.1, 0.3]], mass=1.0, mu=0.3,
                           x=[[0.0, 0.0, 0.0], [0.61, 0.0, 0.0]])
    contacts = detect(World(bodies, Planes.create(np.zeros((0, 3)), np.zeros((0, 3)), 0.3), envelope=0.05))
    assert contacts.n == 1 and (contacts.a[0], contacts.b[0]) == (0, 1)
    assert contacts.phi[0] == pytest.approx(0.61 - 0.2 - 0.4, abs=1e-14)
