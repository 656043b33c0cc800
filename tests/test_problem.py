import numpy as np
import pytest
import scipy.sparse as sp

from factories import random_problem
from problems.scenes import rolling_ball_2d
from workbench.errors import ProblemDataError, UnsupportedError
from workbench.problem import TimeStepProblem


def test_rolling_ball_N_and_r_match_seed_000_eqs_46_47():
    p = rolling_ball_2d()
    np.testing.assert_allclose(p.N.toarray(), [[1.0, 0.0], [0.0, 3.5]])
    np.testing.assert_allclose(p.r, [-0.0981, 2.0])
    assert p.kind == "global" and p.d == 2 and p.n_contacts == 1 and p.n_dof == 3


@pytest.mark.parametrize("diagonal_mass", [True, False])
@pytest.mark.parametrize("n_bilateral", [0, 3])
@pytest.mark.parametrize("n_contacts", [5, 300])  # 300: several column blocks of M^-1 C for a general M
def test_matrix_free_N_equals_C_T_Minv_C(diagonal_mass, n_bilateral, n_contacts):
    p = random_problem(n_contacts=n_contacts, n_bodies=12, seed=3, diagonal_mass=diagonal_mass, n_bilateral=n_bilateral)
    C = p.C.toarray()
    N_dense = C.T @ np.linalg.solve(p.M.toarray(), C)
    x = np.random.default_rng(1).normal(size=p.n_unknowns)
    np.testing.assert_allclose(p.apply_N(x), N_dense @ x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p.N.toarray(), N_dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p.N_operator @ x, N_dense @ x, rtol=1e-10, atol=1e-12)
    r_expected = np.concatenate([p.b, p.b_G if n_bilateral else []]) + C.T @ np.linalg.solve(p.M.toarray(), p.k)
    np.testing.assert_allclose(p.r, r_expected, rtol=1e-10, atol=1e-12)
    blocks = p.N_diagonal_blocks
    for i in range(p.n_contacts):
        np.testing.assert_allclose(blocks[i], N_dense[3 * i:3 * i + 3, 3 * i:3 * i + 3], rtol=1e-10, atol=1e-12)


def test_local_problem_blocks_and_refusals():
    g = random_problem(seed=2)
    loc = g.as_local()
    assert loc.kind == "local" and loc.n_dof is None
    np.testing.assert_allclose(loc.N_diagonal_blocks, g.N_diagonal_blocks, rtol=1e-12)
    x = np.ones(loc.n_unknowns)
    np.testing.assert_allclose(loc.relative_velocity(x), g.relative_velocity(x), rtol=1e-10)
    with pytest.raises(UnsupportedError, match="local problem"):
        loc.velocity(x)


def test_problem_is_immutable():
    p = rolling_ball_2d()
    with pytest.raises(AttributeError):
        p._mu = np.zeros(1)
    with pytest.raises(ValueError):
        p.mu[0] = 1.0
    with pytest.raises(ValueError):
        p.r[0] = 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(mu=[0.1], d=3, W=np.eye(3), q=[np.nan, 0, 0]), "NaN"),
    (dict(mu=[-0.1], d=3, W=np.eye(3), q=np.zeros(3)), "mu must be >= 0"),
    (dict(mu=[0.1], d=3, W=np.eye(4), q=np.zeros(3)), "shape"),
    (dict(mu=[], d=3, W=np.eye(3), q=np.zeros(3)), "W has shape"),  # zero contacts: W must be 0 x 0
    (dict(mu=[0.1], d=4, W=np.eye(4), q=np.zeros(4)), "2 or 3"),
    (dict(mu=[0.1], d=3, M=np.eye(2), D=np.ones((2, 3)), k=[0, np.inf]), "NaN or Inf"),
    (dict(mu=[0.1], d=3, M=-np.eye(2), D=np.ones((2, 3)), k=[0, 0]), "positive definite"),
    (dict(mu=[0.1], d=3, M=[[1, 0.5], [0, 1]], D=np.ones((2, 3)), k=[0, 0]), "symmetric"),
    (dict(mu=[0.1], d=3, M=np.eye(2), D=np.ones((2, 3))), "lacks k"),
    (dict(mu=[0.1], d=3, M=np.eye(2), D=np.ones((2, 3)), k=[0, 0], W=np.eye(3), q=np.zeros(3)), "not both"),
])
def test_bad_data_is_refused_with_a_message(kwargs, message):
    with pytest.raises(ProblemDataError, match=message):
        TimeStepProblem(**kwargs)


def test_sparse_inputs_of_any_format():
    p = TimeStepProblem(M=sp.coo_matrix(np.eye(3)), D=sp.csc_matrix(np.ones((3, 3))), k=np.zeros(3), mu=[0.5])
    assert p.M_is_diagonal
    np.testing.assert_allclose(p.N.toarray(), 3 * np.ones((3, 3)))
