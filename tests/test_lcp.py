"""The LCP / pyramid family of Anitescu and Hart 2003 (issue 5): the lcp-pyramid formulation and its mixed LCP
(6)-(7), Lemke's method (LCP0), the successive convex relaxation LCP1 and its first step LCP2, the
paper's scenes and its residuals."""

import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from factories import random_problem
from formulations.lcp_pyramid import mixed_lcp, pyramid_directions
from problems.lcp_scenes import cannonball, hexagonal_pyramid, hexagonal_pyramid_listed_solutions
from problems.scenes import rolling_ball_2d, rolling_ball_2d_exact_impulse, rolling_ball_2d_relaxed_impulse
from workbench.errors import InputError, UnsupportedError
from workbench.io import load_problem
from workbench.lcp_metrics import lcp_residual
from workbench.method import solve
from workbench.solvers import SolveOptions, StopCause
from workbench.solvers.lemke import MAX_PIVOTS, RAY, SOLVED, lemke

TIGHT = SolveOptions(tol=1e-9)


def brute_force_lcp(A, q):
    """Every solution of LCP(A, q) by enumerating the 2^n complementary bases (a degenerate solution,
    with z_i = w_i = 0, is found from several bases and listed once)."""
    n = q.shape[0]
    found = []
    for mask in itertools.product([False, True], repeat=n):
        basic = np.flatnonzero(mask)
        z = np.zeros(n)
        if basic.size:
            try:
                z[basic] = np.linalg.solve(A[np.ix_(basic, basic)], -q[basic])
            except np.linalg.LinAlgError:
                continue
        w = A @ z + q
        if z.min() >= -1e-12 and w.min() >= -1e-12 and not any(np.allclose(z, f, atol=1e-12) for f in found):
            found.append(z)
    return found


def random_p_matrix(rng, n):
    """A P-matrix: positive definite symmetric part plus a skew part, or a diagonally dominant
    non-symmetric matrix with a positive diagonal (both have positive principal minors)."""
    if rng.random() < 0.5:
        B, S = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        return B @ B.T + 0.1 * np.eye(n) + (S - S.T)
    A = rng.standard_normal((n, n))
    np.fill_diagonal(A, np.abs(A).sum(axis=1) + rng.uniform(0.1, 1.0, n))
    return A


def test_lemke_matches_brute_force_on_random_p_matrix_lcps():
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(1, 8))
        A = random_p_matrix(rng, n)
        q = rng.standard_normal(n)
        q[rng.random(n) < 0.2] = 0.0  # degenerate rows
        (expected,) = brute_force_lcp(A, q)  # a P-matrix LCP has exactly one solution
        out = lemke(A, q)
        assert out.status == SOLVED
        np.testing.assert_allclose(out.z, expected, rtol=1e-10, atol=1e-12)


def test_lemke_reports_ray_termination_and_max_pivots():
    # w = -z - 1 >= 0 has no solution with z >= 0: the z0 column has no positive entry left
    assert lemke(np.array([[-1.0]]), np.array([-1.0])).status == RAY
    rng = np.random.default_rng(0)
    A, q = random_p_matrix(rng, 6) + 5 * np.eye(6), -np.ones(6)
    assert lemke(A, q).pivots > 2
    capped = lemke(A, q, max_pivots=2)
    assert capped.status == MAX_PIVOTS and capped.z is None
    with pytest.raises(InputError):
        lemke(np.eye(2), np.ones(3))
    with pytest.raises(InputError):
        lemke(np.eye(2), -np.ones(2), cover=np.array([1.0, 0.0]))


def test_rolling_ball_lemke_and_lcp1_are_exact_lcp2_is_the_relaxed_solution():
    """In 2D the pyramid is the cone: Lemke and the converged LCP1 give the exact Coulomb impulse
    of Melanz et al. 2015 (sliding, full friction); one QP (15) with Gamma = 0 is the relaxed problem (the
    ball is launched, u_n = mu |u_t|)."""
    problem = rolling_ball_2d()
    for solver in ("lemke", "lcp1"):
        result = solve(problem, "lcp-pyramid", solver, TIGHT)
        assert result.status == "solved", (solver, result.metrics)
        np.testing.assert_allclose(result.nu, rolling_ball_2d_exact_impulse(), rtol=1e-7)
    lcp2 = solve(problem, "lcp-pyramid", "lcp2", TIGHT)
    np.testing.assert_allclose(lcp2.nu, rolling_ball_2d_relaxed_impulse(), rtol=1e-7)
    assert lcp2.status == "inaccurate"
    # its normal-velocity error is mu * lambda, the paper's Table 1 measure
    u = problem.relative_velocity(lcp2.nu)
    assert lcp2.metrics["normal_velocity_error"] == pytest.approx(0.2 * abs(u[1]), rel=1e-6)


@pytest.mark.parametrize("kwargs", [dict(n_contacts=4, n_bodies=3, seed=1, n_bilateral=2),
                                    dict(n_contacts=5, n_bodies=4, seed=2, diagonal_mass=False),
                                    dict(n_contacts=4, n_bodies=3, d=2, seed=3, n_bilateral=1, gap=0.002)])
def test_reduced_lcp_solution_solves_the_mixed_lcp(kwargs):
    """The standard LCP eliminates v (and the joint impulses): its solution, mapped back, satisfies
    the mixed LCP (6)-(7) assembled independently from M, D, G, k, b."""
    problem = random_problem(**kwargs)
    m_C = 2 if problem.d == 2 else 6
    options = SolveOptions(tol=1e-9, params={"m_C": m_C})
    mixed = mixed_lcp(problem, m_C)
    for solver in ("lemke", "lcp1"):
        result = solve(problem, "lcp-pyramid", solver, options)
        assert result.status == "solved", (solver, result.metrics)
        z = result.info["z"]
        eq, w = mixed.residuals(result.v, result.nu[problem.n_contact_unknowns:], z)
        scale = np.abs(mixed.rhs).max()
        assert np.abs(eq).max() <= 1e-10 * scale
        assert lcp_residual(z / np.abs(z).max(), w / np.abs(w).max()) <= 1e-7


def test_hexagonal_pyramid_solution_set_is_not_convex():
    """Anitescu and Hart 2003 section 3: both listed solutions solve the mixed LCP (6)-(7), their average does not."""
    mu, h = 0.2, 0.01
    problem = hexagonal_pyramid(mu=mu, h=h)
    mixed = mixed_lcp(problem, 4)
    maps = mixed.maps

    def point(c_n, lam):
        z = np.zeros(maps.T.shape[1])
        z[maps.i_n], z[maps.i_lambda] = c_n, lam
        return z

    v0, none = np.zeros(problem.n_dof), np.zeros(0)
    (a, la), (b, lb) = hexagonal_pyramid_listed_solutions(h=h)
    for z in (point(a, la), point(b, lb)):
        eq, w = mixed.residuals(v0, none, z)
        assert np.abs(eq).max() <= 1e-15 and lcp_residual(z, w) <= 1e-15
    z = 0.5 * (point(a, la) + point(b, lb))
    eq, w = mixed.residuals(v0, none, z)
    assert np.abs(eq).max() <= 1e-15  # the average balances momentum ...
    # ... but lambda = 1/2 > 0 while mu c_n - e^T beta = mu h m g / 6 > 0: complementarity fails
    assert lcp_residual(z, w) == pytest.approx(min(0.5, mu * h * 9.81 / 6), rel=1e-12)
    # Lemke finds a solution (a third one: two opposite vertices carry the weight)
    result = solve(problem, "lcp-pyramid", "lemke", TIGHT)
    assert result.status == "solved"
    assert problem.contacts(result.nu)[:, 0].sum() == pytest.approx(h * 9.81, rel=1e-12)
    np.testing.assert_allclose(result.v, 0.0, atol=1e-15)


@pytest.mark.parametrize("name", ["siconos/FrictionContact3D_1c.dat", "siconos/Confeti-ex13-4contact-Fc3D-SBM.dat"])
def test_pyramid_converges_to_the_cone_solution_as_m_C_grows(shared_data, name):
    """Normal impulses of the pyramid LCP (Lemke) against the exact Coulomb solution on the round
    cone (nonsmooth Newton, independent code): the relative gap shrinks as the pyramid refines (with
    nested direction sets; not necessarily at every doubling, since a sliding direction that lies on
    an edge of a coarse pyramid is already exact there), and so does the De Saxce error on the cone."""
    problem = load_problem(shared_data / name)
    cone = solve(problem, "ncp", "newton", SolveOptions(tol=1e-12))
    assert cone.status == "solved"
    reference = problem.contacts(cone.nu)[:, 0]
    gaps, errors = [], []
    for m_C in (4, 8, 32, 64):
        result = solve(problem, "lcp-pyramid", "lemke", SolveOptions(tol=1e-10, params={"m_C": m_C}))
        assert result.status == "solved", (m_C, result.metrics)
        gaps.append(np.linalg.norm(problem.contacts(result.nu)[:, 0] - reference) / np.linalg.norm(reference))
        errors.append(result.metrics["siconos_error"])
    assert all(b <= a * (1 + 1e-6) for a, b in zip(gaps, gaps[1:])), gaps
    assert gaps[-1] <= gaps[0] / 50, gaps
    assert errors[-1] <= errors[0] / 15, errors


def test_pyramid_directions_are_symmetric_and_checked():
    for m_C in (4, 6, 8):
        t = pyramid_directions(3, m_C)
        np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0)
        np.testing.assert_allclose(t[m_C // 2:], -t[:m_C // 2], atol=1e-15)  # t_(i + m_C/2) = -t_i
    np.testing.assert_array_equal(pyramid_directions(2, 2), [[1.0], [-1.0]])
    for d, m_C in ((3, 5), (3, 2), (2, 4), (3, 4.0)):
        with pytest.raises(InputError):
            pyramid_directions(d, m_C)
    with pytest.raises(UnsupportedError):
        solve(rolling_ball_2d(), "lcp-pyramid", "clarabel")
    with pytest.raises(InputError):
        solve(rolling_ball_2d(), "lcp-pyramid", "lcp2", SolveOptions(params={"qp_solver": "nope"}))


@pytest.mark.parametrize("n_bottom, n_disks, n_contacts", [(6, 21, 51), (16, 136, 376), (20, 210, 590)])
def test_cannonball_arrangements_of_seed_003(n_bottom, n_disks, n_contacts):
    """n disks on the plank, n - 1 on top, ...: every disk touches its row neighbours and the two
    below it, the bottom row the plank (3 n (n - 1) / 2 + n contacts), all with zero gap."""
    problem = cannonball(n_bottom, mu=0.2)
    assert problem.n_dof == 3 * n_disks and problem.n_contacts == n_contacts
    assert np.abs(problem.b).max() <= 1e-12
    assert problem.h == 0.05 and problem.d == 2


def test_cannonball_lcp0_lcp1_lcp2():
    """21 disks: Lemke solves the LCP; LCP1 converges to a solution (Anitescu and Hart 2003 Figure 3, mu = 0.05);
    LCP2 leaves a normal-velocity error at low friction that vanishes at high friction (Table 1)."""
    low = cannonball(6, mu=0.05)
    lcp0 = solve(low, "lcp-pyramid", "lemke", TIGHT)
    lcp1 = solve(low, "lcp-pyramid", "lcp1", SolveOptions(tol=1e-9, params={"lambda_tol": 1e-12}))
    lcp2 = solve(low, "lcp-pyramid", "lcp2", TIGHT)
    assert lcp0.status == "solved" and lcp0.metrics["normal_velocity_error"] <= 1e-12
    assert lcp1.status == "solved" and lcp1.info["outer_iterations"] > 1
    assert lcp1.info["inner_iterations"] >= lcp1.info["outer_iterations"]
    assert len(lcp1.history) == lcp1.iterations == lcp1.info["outer_iterations"]
    assert lcp2.iterations == 1 and lcp2.metrics["normal_velocity_error"] >= 1e-4
    np.testing.assert_allclose(lcp1.v, lcp0.v, atol=1e-7)  # the velocity solution is unique here
    high = cannonball(6, mu=0.8)
    exact = solve(high, "lcp-pyramid", "lemke", TIGHT)
    one_qp = solve(high, "lcp-pyramid", "lcp2", TIGHT)
    assert one_qp.status == "solved" and one_qp.metrics["normal_velocity_error"] <= 1e-9
    np.testing.assert_allclose(one_qp.v, exact.v, atol=1e-8)


def test_lcp1_with_osqp_agrees_with_clarabel():
    problem = rolling_ball_2d()
    result = solve(problem, "lcp-pyramid", "lcp1", SolveOptions(tol=1e-9, params={"qp_solver": "osqp"}))
    assert result.info["qp_solver"] == "osqp"
    np.testing.assert_allclose(result.nu, rolling_ball_2d_exact_impulse(), rtol=1e-6)


def test_lcp_model_works_on_local_problems():
    """The LCP needs N only: the local form of a problem gives the same impulses."""
    problem = random_problem(n_contacts=4, n_bodies=3, seed=4)
    a = solve(problem, "lcp-pyramid", "lemke", TIGHT)
    b = solve(problem.as_local(), "lcp-pyramid", "lemke", TIGHT)
    assert a.status == b.status == "solved"
    np.testing.assert_allclose(a.nu, b.nu, rtol=1e-8, atol=1e-12)
    assert b.v is None


def test_table1_reproduction_runs_from_one_command():
    """benchmarks/reproduce/anitescu_hart_table1.py (here on 6 disks): one markdown row per mu, the paper's
    numbers beside ours only for the 210-disk arrangement it reports."""
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "benchmarks.reproduce.anitescu_hart_table1", "--n-bottom", "3", "--mu", "0.1", "0.8"],
                         cwd=repo, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [line.split("|")[1:-1] for line in out.stdout.splitlines() if line.startswith("| 0.")]
    assert [r[0].strip() for r in rows] == ["0.1", "0.8"]
    assert all("pivots" in r[1] for r in rows) and all(not r[4].strip() for r in rows)
    spec = importlib.util.spec_from_file_location("table1", repo / "benchmarks" / "reproduce" / "anitescu_hart_table1.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with pytest.raises(SystemExit) as bad:  # argparse: one line on stderr, exit code 2
        script.main(["--n-bottom", "0"])
    assert bad.value.code == 2


def test_lemke_names_its_pivot_sequence_and_both_roundings_solve_a_p_matrix_lcp():
    """The pivot hash is a function of (A, q); the round-off probe (pivot row times 1 / pivot) ends on the
    same solution of a well-conditioned P-matrix LCP; the final basis is checked by an independent solve."""
    rng = np.random.default_rng(12)
    A = random_p_matrix(rng, 7)
    q = rng.standard_normal(7)
    a, b, probe = lemke(A, q), lemke(A, q), lemke(A, q, pivot_divide=False)
    assert a.status == SOLVED and a.pivot_hash == b.pivot_hash and len(a.pivot_hash) == 16
    assert probe.status == SOLVED
    np.testing.assert_allclose(probe.z, a.z, rtol=1e-10, atol=1e-12)
    assert a.residual <= 1e-12 and a.check_residual <= 1e-12
    assert lemke(A, q + 1.0).pivot_hash != a.pivot_hash or (q + 1.0).min() >= 0


def test_an_inaccurate_basis_is_never_read_as_solved():
    from types import SimpleNamespace

    from benchmarks.reproduce.anitescu_hart_table1 import lcp0_status
    from workbench.solvers.lemke import INACCURATE
    result = SimpleNamespace(solver_status=INACCURATE, stop=StopCause.STALLED, info={"z": np.zeros(3)})
    assert lcp0_status(result) == INACCURATE
    assert lcp0_status(SimpleNamespace(solver_status="max pivots", stop=StopCause.MAX_ITER, info={})) == "MAX ITER"


def test_the_lcp2_error_is_given_under_each_statistic_the_paper_may_mean():
    """Anitescu and Hart 2003 Table 1 does not say which statistic over the contacts its "LCP2 residual
    error" is: max, mean, 2-norm and rms of |u_n| over the active contacts (c_n > 1e-6 max c_n), by hand."""
    import numpy as np

    from benchmarks.reproduce.anitescu_hart_2003 import ERROR_STATISTICS, error_statistics
    from workbench.lcp_metrics import normal_velocity_error

    c_n = np.array([1.0, 0.5, 1e-9, 0.0])           # the last two are not active
    u_n = np.array([0.3, -0.4, 7.0, 9.0])
    got = error_statistics(normal_velocity_error(c_n, u_n))
    assert set(got) == set(ERROR_STATISTICS)
    assert got["max"] == pytest.approx(0.4) and got["mean"] == pytest.approx(0.35)
    assert got["2-norm"] == pytest.approx(0.5) and got["rms"] == pytest.approx(0.5 / np.sqrt(2))
