import numpy as np
import pytest

from factories import random_problem
from problems.scenes import rolling_ball_2d, rolling_ball_2d_exact_impulse, rolling_ball_2d_relaxed_impulse
from workbench import metrics
from workbench.cones import distance_to_cone, project_dual_cone, project_friction_cone, project_unknowns


@pytest.mark.parametrize("d", [2, 3])
def test_projection_is_the_moreau_decomposition(d):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, d)) * 3
    mu = rng.choice([0.0, 0.1, 0.5, 2.0], size=500)
    p = project_friction_cone(x, mu)
    polar = x - p  # must lie in the polar cone -K^* and be orthogonal to p
    assert distance_to_cone(p, mu).max() < 1e-12
    np.testing.assert_allclose(project_friction_cone(p, mu), p, atol=1e-14)
    np.testing.assert_allclose(np.einsum("ij,ij->i", p, polar), 0, atol=1e-12)
    np.testing.assert_allclose(project_friction_cone(polar, mu), 0, atol=1e-12)  # polar projects to 0
    np.testing.assert_allclose(project_dual_cone(-polar, mu), -polar, atol=1e-12)  # -polar in K^*


def test_projection_known_points():
    mu = np.array([0.5, 0.5, 0.5, 0.0])
    x = np.array([[1.0, 0.3, 0.0], [-1.0, 0.1, 0.0], [0.0, 2.0, 0.0], [1.0, 5.0, 0.0]])
    p = project_friction_cone(x, mu)
    np.testing.assert_allclose(p[0], x[0])
    np.testing.assert_allclose(p[1], 0)
    # (0, 2): n' = (0 + 0.5*2)/(1.25) = 0.8, t' = 0.5*0.8 = 0.4
    np.testing.assert_allclose(p[2], [0.8, 0.4, 0.0])
    np.testing.assert_allclose(p[3], [1.0, 0.0, 0.0])


def test_ball_metrics_tell_exact_from_relaxed():
    p = rolling_ball_2d()
    exact = metrics.evaluate(p, rolling_ball_2d_exact_impulse())
    relaxed = metrics.evaluate(p, rolling_ball_2d_relaxed_impulse())
    assert exact["siconos_error"] < 1e-14 and exact["complementarity"] < 1e-15
    assert relaxed["relaxed_error"] < 1e-14 and abs(relaxed["duality_gap"]) < 1e-14
    # the relaxed solution launches the ball: u_n = mu ||u_t|| > 0 while gamma_n > 0
    assert relaxed["siconos_error"] > 0.1 and relaxed["complementarity"] > 0.1
    assert exact["relaxed_error"] > 1e-3
    np.testing.assert_allclose(relaxed["dual_objective"], -0.5 * 0.4981 ** 2 / 1.14, rtol=1e-12)


def test_primal_plus_dual_objective_identity():
    # for any nu: primal(v(nu)) + dual(nu) + 1/2 k^T M^-1 k = nu^T u
    p = random_problem(seed=5, n_bilateral=2)
    nu = np.random.default_rng(2).normal(size=p.n_unknowns)
    m = metrics.evaluate(p, nu)
    const = 0.5 * p.k @ p.solve_M(p.k)
    np.testing.assert_allclose(m["primal_objective"] + m["dual_objective"] + const, m["duality_gap"], rtol=1e-10)


def test_reference_distance_and_ccp_residual_definition():
    p = rolling_ball_2d()
    g = rolling_ball_2d_relaxed_impulse()
    m = metrics.evaluate(p, g * 1.01, reference=g)
    np.testing.assert_allclose(m["reference_distance"], 0.01, rtol=1e-10)
    # eq. 39 at a point inside the cone: the residual is the gradient norm
    inside = np.array([1.0, 0.0])
    grad = p.relative_velocity(inside)
    np.testing.assert_allclose(metrics.ccp_residual(p, inside, grad), np.linalg.norm(grad), rtol=1e-6)


@pytest.mark.parametrize("d, n_bilateral", [(3, 0), (3, 2), (2, 1)])
def test_stopping_sums_are_the_norms_of_the_natural_maps(d, n_bilateral):
    """The one-pass sums of the iterative solvers' stopping tests equal the norms built from
    natural_map and de_saxce_shift: eq. 39 with a fixed shift, and the Siconos map with a(u)."""
    p = random_problem(n_contacts=7, n_bodies=5, d=d, n_bilateral=n_bilateral, seed=3)
    rng = np.random.default_rng(0)
    nu = project_unknowns(rng.standard_normal(p.n_unknowns), p.mu, p.d)
    u = p.relative_velocity(nu)
    fixed = metrics.de_saxce_shift(p, rng.standard_normal(p.n_unknowns))
    scratch = np.empty(p.n_unknowns)
    sums = metrics.stopping_sums(p, nu, u, fixed.copy(), 1e-6, False, scratch)
    np.testing.assert_allclose(sums[:2], [nu @ nu, u @ u], rtol=1e-13)
    expected = np.linalg.norm(metrics.natural_map(p, nu, u + fixed, 1e-6))
    np.testing.assert_allclose(np.sqrt(sums[2]), expected, rtol=1e-12)
    shift = np.zeros(p.n_unknowns)
    sums = metrics.stopping_sums(p, nu, u, shift, 1.0, True, scratch)
    np.testing.assert_allclose(shift, metrics.de_saxce_shift(p, u), rtol=1e-14)
    np.testing.assert_allclose(np.sqrt(sums[2]), np.linalg.norm(metrics.natural_map(p, nu, u + shift)), rtol=1e-12)
    assert np.sqrt(sums[2]) > 1e-3 * np.linalg.norm(u)   # a point off the solution: the test can fail
