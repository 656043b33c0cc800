"""In-house iterative solvers (apgd, pgs, jacobi, bb, admm) on the relaxed and anti-relaxed dual CCQO.

Oracles: the analytic impulses of the rolling ball of Melanz et al. 2015 section 3.1, a literal transcription of
the APGD algorithm of Melanz et al. 2015 section 2.3 (and two mutants of it that drop r from the backtracking or
the restart test), the KKT conditions of the local cone QP of Gauss-Seidel, and Clarabel's objective on
random and real problems. Every number asserted is the workbench's own metric of the returned impulses.
"""

import numpy as np
import pytest

from factories import CORPUS, corpus, random_problem
from problems.scenes import rolling_ball_2d, rolling_ball_2d_exact_impulse, rolling_ball_2d_relaxed_impulse
from workbench.cli import main
from workbench.cones import project_unknowns
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.metrics import de_saxce_shift, siconos_error
from workbench.method import solve
from workbench.solvers import SolveOptions, StopCause
from workbench.solvers.pgs import local_factors, solve_local

SOLVERS = ["apgd", "pgs", "jacobi", "bb", "admm"]


def relative_gap(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


# ---------------------------------------------------------------------------------------- the ball
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("mode", ["inner", "outer"])
@pytest.mark.parametrize("local", [False, True])
def test_anti_relaxed_ball_gives_the_analytic_coulomb_impulse(solver, mode, local):
    """Melanz et al. 2015 section 3.1: [g h, -mu g h] = [0.0981, -0.01962], on the global (M, D, k) problem and on
    its local (W, q) form, where the tangential velocity is (W g + q)_t."""
    problem = rolling_ball_2d()
    if local:
        problem = problem.as_local()
    res = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-10, params={"anti_relaxation": mode}))
    assert res.status == "solved", (res.solver_status, res.metrics)
    np.testing.assert_allclose(res.nu, [0.0981, -0.01962], atol=1e-6)
    np.testing.assert_allclose(res.nu, rolling_ball_2d_exact_impulse(), atol=1e-9)
    assert res.metrics["siconos_error"] <= 1e-10
    assert res.info["anti_relaxation"] == mode


@pytest.mark.parametrize("solver", SOLVERS)
def test_relaxed_ball_gives_the_relaxed_optimum(solver):
    res = solve(rolling_ball_2d(), "dual", solver, SolveOptions(tol=1e-10))
    assert res.status == "solved"
    np.testing.assert_allclose(res.nu, rolling_ball_2d_relaxed_impulse(), atol=1e-9)
    # the relaxed answer launches the ball: it is not the Coulomb impulse
    assert abs(res.nu[0] - 0.0981) > 0.3


# ------------------------------------------------------------------- APGD as printed in Melanz et al. 2015
def literal_apgd(problem, iterations, anti=False, drop_r_in_backtracking=False, drop_r_in_restart=False):
    """Melanz et al. 2015 section 2.3, lines 1-38, transcribed with a dense N (the test oracle). The mutants use
    g - r = N y in place of g in the test of line 11 or of line 27. Returns the objective
    1/2 x^T N x + r_0^T x of every iterate and the numbers of backtracking steps and restarts."""
    N = problem.N.toarray()
    r0 = np.array(problem.r)
    r = r0.copy()

    def f(x):
        return 0.5 * x @ N @ x + x @ r

    gamma = np.zeros(r0.size)
    y, theta = gamma.copy(), 1.0
    L = np.linalg.norm(N @ (gamma - 1.0)) / np.linalg.norm(gamma - 1.0)
    values, backtracks, restarts = [], 0, 0
    for _ in range(iterations):
        g = N @ y + r
        g_bt = N @ y if drop_r_in_backtracking else g
        g_rs = N @ y if drop_r_in_restart else g
        new = project_unknowns(y - g / L, problem.mu, problem.d)
        while f(new) > f(y) + g_bt @ (new - y) + 0.5 * L * (new - y) @ (new - y):
            L *= 2.0
            new = project_unknowns(y - g / L, problem.mu, problem.d)
            backtracks += 1
        theta_new = 0.5 * (-theta ** 2 + theta * np.sqrt(theta ** 2 + 4.0))
        beta = theta * (1.0 - theta) / (theta ** 2 + theta_new)
        y = new + beta * (new - gamma)
        values.append(0.5 * new @ N @ new + new @ r0)
        if g_rs @ (new - gamma) > 0:
            y, theta_new = new, 1.0
            restarts += 1
        L *= 0.9
        if anti:
            r = r0 + de_saxce_shift(problem, N @ new + r0)
        gamma, theta = new, theta_new
    return np.array(values), backtracks, restarts


@pytest.mark.parametrize("formulation", ["dual", "anti-relaxed"])
def test_apgd_follows_the_seed_and_uses_the_full_gradient_in_backtracking_and_restart(formulation):
    """The solver's iterates, backtracking steps and restarts are those of the printed algorithm with
    g = N y + r in both tests; dropping r from either test gives a different run (so this test would
    catch the classic error)."""
    problem = random_problem(n_contacts=20, n_bodies=8, seed=1)
    anti = formulation == "anti-relaxed"
    res = solve(problem, formulation, "apgd", SolveOptions(tol=1e-15, max_iter=40))
    assert res.iterations == 40 and res.status == "max_iter"
    values = res.history["objective"].to_numpy()  # the dual objective
    scale = abs(values[-1])
    ref, backtracks, restarts = literal_apgd(problem, 40, anti)
    assert res.info["backtracks"] == backtracks > 0
    assert res.info["restarts"] == restarts > 0
    assert np.max(np.abs(values - ref)) <= 1e-12 * scale
    for mutant in ({"drop_r_in_backtracking": True}, {"drop_r_in_restart": True}):
        wrong, wrong_backtracks, wrong_restarts = literal_apgd(problem, 40, anti, **mutant)
        assert (wrong_backtracks, wrong_restarts) != (backtracks, restarts)
        assert np.max(np.abs(wrong - values)) > 1e-3 * scale


@pytest.mark.parametrize("formulation", ["dual", "anti-relaxed"])
def test_apgd_runs_the_same_iterations_with_and_without_a_history(formulation):
    """Without a history the compiled loop runs many iterations per call, with one it returns after
    each: the same run either way (iterates, step adaptations, stopping point)."""
    problem = random_problem(n_contacts=20, n_bodies=8, seed=4, diagonal_mass=False)
    runs = [solve(problem, formulation, "apgd", SolveOptions(tol=1e-7, keep_history=keep)) for keep in (True, False)]
    kept, bare = runs
    assert kept.status == bare.status == "solved" and bare.history is None
    assert (kept.iterations, kept.info["backtracks"], kept.info["restarts"]) == \
        (bare.iterations, bare.info["backtracks"], bare.info["restarts"])
    np.testing.assert_array_equal(kept.nu, bare.nu)


def test_newton_dense_and_sparse_systems_agree(monkeypatch):
    """Up to DENSE_MAX unknowns Newton assembles J = A + B N dense: the same Newton steps as the
    sparse assembly (to rounding), so the same iterations and solution."""
    import workbench.solvers.newton as newton
    problem = random_problem(n_contacts=12, n_bodies=6, seed=3, n_bilateral=2)
    dense = solve(problem, "ncp", "newton", SolveOptions(tol=1e-10))
    monkeypatch.setattr(newton, "DENSE_MAX", 0)
    sparse = solve(problem, "ncp", "newton", SolveOptions(tol=1e-10))
    assert dense.status == sparse.status == "solved"
    assert dense.iterations == sparse.iterations
    np.testing.assert_allclose(dense.nu, sparse.nu, atol=1e-9 * np.abs(sparse.nu).max())


def test_compiled_newton_same_iterates_with_and_without_history_and_honours_caps():
    """The compiled dense Newton runs a row per iteration with a history and whole chunks without one:
    the same iterates either way; the history's last row is the returned point's judged error; an
    iteration cap stops it where asked."""
    problem = random_problem(n_contacts=10, n_bodies=5, seed=7, n_bilateral=1)
    kept = solve(problem, "ncp", "newton", SolveOptions(tol=1e-12, keep_history=True))
    bare = solve(problem, "ncp", "newton", SolveOptions(tol=1e-12, keep_history=False))
    assert kept.status == bare.status == "solved" and bare.history is None
    assert kept.iterations == bare.iterations == len(kept.history) - 1
    np.testing.assert_array_equal(kept.nu, bare.nu)
    assert kept.history["error"].iloc[-1] == pytest.approx(kept.metrics["siconos_error"], rel=1e-9)
    capped = solve(problem, "ncp", "newton", SolveOptions(tol=1e-12, max_iter=2, keep_history=False))
    assert capped.status == "max_iter" and capped.iterations == 2


def test_apgd_returns_the_best_iterate_when_the_cap_stops_it():
    """Melanz et al. 2015 lines 19-23: the iterate with the smallest residual, not the last one."""
    # seed 4: the error rises above its minimum (1.6e-7, far from round-off) by the cap, on the
    # condensed problem (workbench.problem.CONDENSE_MAX_DOF) and on the sparse global path alike
    problem = random_problem(n_contacts=20, n_bodies=8, seed=4)
    res = solve(problem, "anti-relaxed", "apgd", SolveOptions(tol=1e-15, max_iter=40))
    assert set(res.history["error_name"]) == {"siconos_error"}
    errors = res.history["error"].to_numpy()
    assert errors[-1] > errors.min()  # the error is not monotone: the test can fail
    assert res.metrics["siconos_error"] == pytest.approx(errors.min(), rel=1e-9)


# ------------------------------------------------------------------------ random problems, Clarabel
@pytest.fixture(scope="module")
def joints_problem():
    """A general SPD mass matrix and two joints: exercises M^-1 by factorisation and free unknowns."""
    return random_problem(n_contacts=12, n_bodies=6, seed=3, diagonal_mass=False, n_bilateral=2)


@pytest.mark.parametrize("solver", SOLVERS)
def test_relaxed_solvers_reach_clarabel_objective_with_joints(joints_problem, solver):
    ref = solve(joints_problem, "dual", "clarabel", SolveOptions(tol=1e-9))
    res = solve(joints_problem, "dual", solver, SolveOptions(tol=1e-10, max_iter=200_000))
    assert res.status == "solved", (res.solver_status, res.metrics)
    assert relative_gap(res.metrics["dual_objective"], ref.metrics["dual_objective"]) <= 1e-8
    assert res.metrics["bilateral_violation"] <= 1e-8 * np.abs(joints_problem.r).max() + 1e-12


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("mode", ["inner", "outer"])
def test_anti_relaxed_solvers_reach_siconos_error_1e8(joints_problem, solver, mode):
    res = solve(joints_problem, "anti-relaxed", solver,
                SolveOptions(tol=1e-8, max_iter=200_000, params={"anti_relaxation": mode}))
    assert res.status == "solved", (res.solver_status, res.metrics)
    assert res.metrics["siconos_error"] <= 1e-8
    # the relaxed optimum is not a solution of the exact problem here, so the shift mattered
    relaxed = solve(joints_problem, "dual", "clarabel", SolveOptions(tol=1e-9))
    assert relaxed.metrics["siconos_error"] > 1e-4
    if mode == "outer":
        assert res.info["outer_iterations"] > 1


# ---------------------------------------------------------------------------------- Gauss-Seidel
def random_local_blocks(d, n, seed):
    """n random SPD d x d blocks (eigenvalues >= 0.1), friction coefficients in [0.1, 1.5] and the
    factors of the exact local solver: (rng, S, G, lam, mu)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d, d))
    mu = rng.uniform(0.1, 1.5, n)
    S, G, lam = local_factors(A @ np.transpose(A, (0, 2, 1)) + 0.1 * np.eye(d), mu)
    return rng, S, G, lam, mu


@pytest.mark.parametrize("d", [2, 3])
def test_pgs_local_solver_satisfies_the_kkt_conditions_exactly(d):
    """x* = argmin 1/2 x^T S x + c^T x over K_mu: x in K, s = S x + c in K^*, x . s = 0, for random SPD
    blocks and all three cases (apex, interior, boundary)."""
    n = 300
    rng, S, G, lam, mu = random_local_blocks(d, n, 0)
    out, work = np.empty(d), np.empty((4, d))
    cases = set()
    for i in range(n):
        c = rng.normal(size=d) * 3
        assert solve_local(S[i], G[i], lam[i], mu[i], c, out, work)
        s = S[i] @ out + c
        scale = np.linalg.norm(c)
        assert np.linalg.norm(out[1:]) <= mu[i] * out[0] + 1e-12 * scale
        assert mu[i] * np.linalg.norm(s[1:]) <= s[0] + 1e-9 * scale
        assert abs(out @ s) <= 1e-9 * scale * max(1.0, np.linalg.norm(out))
        cases.add("apex" if not out.any() else "interior" if np.linalg.norm(s) <= 1e-9 * scale else "boundary")
    assert cases == {"apex", "interior", "boundary"}


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_pgs_local_solver_is_homogeneous_in_c_down_to_underflow(d, scale):
    """x*(s c) = s x*(c) for s > 0 (the local problem (L) is positively homogeneous in c). With
    |c| ~ 1e-160 (a contact at rest, as met in a 2D granular flow) the squares of the secular equation
    underflow: Newton's derivative was exactly 0 (ZeroDivisionError in the compiled sweep) or the root
    inaccurate; at 1e160 they overflowed, and so did the apex test's sum of squares (a contact at the
    apex reported as having no root). Every case, with at least 20 on the boundary (c)."""
    n = 200
    rng, S, G, lam, mu = random_local_blocks(d, n, 5)
    ref, out, work = np.empty(d), np.empty(d), np.empty((4, d))
    boundary = 0
    for i in range(n):
        c = rng.normal(size=d) * 3
        assert solve_local(S[i], G[i], lam[i], mu[i], c, ref, work)
        s = S[i] @ ref + c
        boundary += bool(ref.any() and np.linalg.norm(s) > 1e-9 * np.linalg.norm(c))
        assert solve_local(S[i], G[i], lam[i], mu[i], scale * c, out, work)
        np.testing.assert_allclose(out / scale, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    assert boundary >= 20


@pytest.mark.parametrize("d", [2, 3])
def test_pgs_local_solver_hard_case(d):
    """A diagonal block with c_n = 0 and c_t != 0 (a resting contact of spheres, whose blocks are
    diagonal in the contact frame): the part of c^ along the positive eigenvector is zero and the
    secular equation has no root on either branch (the trust-region "hard case"); the solver returned
    no point, left the impulse unchanged and counted a local failure (five per sweep on a 2D granular
    flow of the corpus, whose PGS then stalled). The minimiser is at the pole: KKT to round-off, for
    the secular solver (d = 3, and d = 2 with its factors) and the wedge solver (d = 2), at any scale."""
    from workbench.solvers.pgs import _solve_secular, _solve_wedge
    rng = np.random.default_rng(3)
    work = np.empty((4, d))
    for _ in range(200):
        S = np.diag(rng.uniform(0.1, 3000.0, d))
        mu = rng.uniform(0.1, 1.5)
        S, G, lam = local_factors(S[None], np.array([mu]), secular=True)
        for scale in (1e-19, 1.0, 1e160):
            c = np.r_[0.0, rng.normal(size=d - 1)] * scale
            solvers = [lambda out: _solve_secular(S[0], G[0], lam[0], mu, c, out, work)]
            if d == 2:
                solvers.append(lambda out: _solve_wedge(S[0], mu, c, out) or True)
            for solver in solvers:
                out = np.empty(d)
                assert solver(out)
                x, s = out / scale, (S[0] @ out + c) / scale
                assert x[0] > 0 and np.linalg.norm(x[1:]) <= mu * x[0] * (1 + 1e-12)
                assert mu * np.linalg.norm(s[1:]) <= s[0] + 1e-9 * np.linalg.norm(c / scale)
                assert abs(x @ s) <= 1e-9 * np.linalg.norm(c / scale) * np.linalg.norm(x)


@pytest.mark.parametrize("end", ["apex", "unconstrained"])
def test_pgs_local_solver_at_the_ends_of_its_brackets(end):
    """Two ends of the secular method's brackets, where rounding decides the tests (a) and (b):
    c on the boundary of the dual cone (c_n / mu = ||c_t|| to the last digit: a resting contact whose
    velocity lies on the cone's edge; the minimiser is the apex) and c = -S x_b with x_b on the
    boundary of K (the unconstrained minimiser is x_b itself: a sliding contact at a converged sweep).
    About 3 % and 4 % of such problems had no root on either branch (psi(0) or phi(0) zero): the
    solver returned no point, PGS left the impulse unchanged and counted a local failure (2 and 34 in
    the corpus's two Capsules problems). Any scale of c, blocks of condition up to 1e4, mu from 0.01
    to 10."""
    rng = np.random.default_rng(17)
    out, work = np.empty(3), np.empty((4, 3))
    for _ in range(3000):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        ev = 10.0 ** rng.uniform(-4, 0, 3)
        S = (Q * ev) @ Q.T
        mu = 10.0 ** rng.uniform(-2, 1)
        theta, size = rng.uniform(0, 2 * np.pi), 10.0 ** rng.uniform(-150, 150)
        edge = np.array([1.0, np.cos(theta), np.sin(theta)])
        S_, G, lam = local_factors(S[None], np.array([mu]))
        if end == "apex":
            c = size * edge * np.array([1.0, 1.0 / mu, 1.0 / mu])
            assert solve_local(S_[0], G[0], lam[0], mu, c, out, work)
            assert np.linalg.norm(out) <= 1e-12 * np.linalg.norm(c) / ev.min()
        else:
            x_b = size * edge * np.array([1.0, mu, mu])
            assert solve_local(S_[0], G[0], lam[0], mu, -S @ x_b, out, work)
            np.testing.assert_allclose(out, x_b, rtol=1e-10, atol=1e-10 * np.abs(x_b).max())


def test_pgs_2d_wedge_solver_agrees_with_the_secular_solver():
    """For d = 2 the local problem (L) is solved in closed form on the wedge's faces (pgs._solve_wedge);
    the secular-equation solver (pgs._solve_secular, the d = 3 method, with its factors) is independent
    of it and gives the same minimiser to round-off, in every case, on random blocks and at scales where
    squares of c underflow."""
    from workbench.solvers.pgs import _solve_secular, _solve_wedge
    rng = np.random.default_rng(11)
    n = 400
    A = rng.normal(size=(n, 2, 2))
    mu = rng.uniform(0.05, 2.0, n)
    S, G, lam = local_factors(A @ np.transpose(A, (0, 2, 1)) + 0.1 * np.eye(2), mu, secular=True)
    wedge, secular, work = np.empty(2), np.empty(2), np.empty((4, 2))
    for scale in (1.0, 1e-160, 1e160):
        for i in range(n):
            c = rng.normal(size=2) * 3 * scale
            _solve_wedge(S[i], mu[i], c, wedge)
            assert _solve_secular(S[i], G[i], lam[i], mu[i], c, secular, work)
            np.testing.assert_allclose(wedge, secular, rtol=1e-10, atol=1e-12 * np.abs(secular).max(initial=0.0))


@pytest.mark.parametrize("formulation", ["dual", "anti-relaxed"])
def test_pgs_velocity_form_with_joints(formulation):
    """Diagonal M: the sweep never forms N (z = M^-1 C nu kept up to date), joints included."""
    problem = random_problem(n_contacts=12, n_bodies=6, seed=3, n_bilateral=2)
    res = solve(problem, formulation, "pgs", SolveOptions(tol=1e-10, max_iter=100_000))
    assert res.info["velocity_form"] and res.status == "solved"
    if formulation == "dual":
        ref = solve(problem, "dual", "clarabel", SolveOptions(tol=1e-9))
        assert relative_gap(res.metrics["dual_objective"], ref.metrics["dual_objective"]) <= 1e-8
    assert res.metrics["bilateral_violation"] <= 1e-9 * np.abs(problem.r).max()


@pytest.mark.parametrize("params", [{"omega": 1.3}, {"omega": 0.8}, {"random_order": True, "seed": 4}])
def test_pgs_sor_and_random_order_reach_the_same_optimum(params):
    """The reference is APGD to 1e-10, an independent first-order method: on this problem Clarabel at tol
    1e-9 ends "inaccurate" 1.6e-8 short of the optimum under one OpenBLAS kernel (Zen, 13 iterations)
    and reaches it under others (18), and ipm ends "inaccurate" too."""
    problem = random_problem(n_contacts=20, n_bodies=8, seed=2)
    ref = solve(problem, "dual", "apgd", SolveOptions(tol=1e-10, max_iter=200_000))
    res = solve(problem, "dual", "pgs", SolveOptions(tol=1e-10, max_iter=100_000, params=params))
    assert ref.status == "solved" and res.status == "solved"
    assert relative_gap(res.metrics["dual_objective"], ref.metrics["dual_objective"]) <= 1e-8


# ------------------------------------------------------------------------------ BB, ADMM settings
def test_bb_non_monotone_line_search_fires_and_bounds_the_objective(shared_data):
    """GLL: every accepted objective is below the maximum of the last M ones (M = 10), the sequence is
    not monotone, and the line search does backtrack; with M = 1 it is monotone (up to rounding).
    The ill-conditioned LMGC PerioBox (W of rank 72 of 180) makes the line search fire."""
    problem = load_problem(shared_data / "fclib/LMGC_100_PR_PerioBox-i00361-60-03000.hdf5")
    res = solve(problem, "dual", "bb", SolveOptions(tol=1e-10))
    assert res.status == "solved"
    assert res.info["backtracks"] > 0
    f = np.r_[0.0, res.history["objective"].to_numpy()]  # f(x0 = 0) = 0
    scale = abs(f[-1])
    assert all(f[k + 1] <= f[max(0, k - 9): k + 1].max() + 1e-12 * scale for k in range(f.size - 1))
    assert np.diff(f).max() > 1e-3 * scale
    mono = solve(problem, "dual", "bb", SolveOptions(tol=1e-10, params={"memory": 1}))
    assert mono.status == "solved" and mono.info["backtracks"] > res.info["backtracks"]
    assert np.diff(mono.history["objective"].to_numpy()).max() <= 1e-12 * scale


def test_bb_line_search_ends_when_rounding_leaves_no_descent(shared_data):
    """On the 2D granular flow (230 contacts, anti-relaxed) BB's line search once never ended: f(x) was
    evaluated by a different sum than its stored copy among the reference values, came out one
    rounding above all of them, and no step length could pass the test. With one evaluation of f for
    both, BB reaches the Siconos error 1e-8 (about 1,400 iterations), well inside its cap."""
    problem = load_problem(shared_data / "siconos/gfc2d_granularflowonwall_00230_00206.dat")
    res = solve(problem, "anti-relaxed", "bb", SolveOptions(tol=1e-8, max_iter=5_000, keep_history=False))
    assert res.status == "solved" and res.metrics["siconos_error"] <= 1e-8 and res.iterations < 5_000


def test_admm_residual_balancing_recovers_from_a_bad_rho():
    problem = random_problem(n_contacts=20, n_bodies=8, seed=0)
    ref = solve(problem, "dual", "clarabel", SolveOptions(tol=1e-9))
    rho0 = 1e-4 * float(problem.N.diagonal().mean())
    res = solve(problem, "dual", "admm", SolveOptions(tol=1e-10, max_iter=100_000, params={"rho": rho0}))
    assert res.status == "solved"
    assert res.info["factorizations"] > 1 and res.info["rho"] > 100 * rho0
    assert relative_gap(res.metrics["dual_objective"], ref.metrics["dual_objective"]) <= 1e-8


# ---------------------------------------------------------------------- options, history, caps
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("formulation", ["dual", "anti-relaxed"])
def test_warm_start_at_the_solution_stops_at_once(solver, formulation):
    problem = random_problem(n_contacts=12, n_bodies=6, seed=5)
    cold = solve(problem, formulation, solver, SolveOptions(tol=1e-9, max_iter=100_000))
    assert cold.status == "solved" and cold.iterations > 3
    warm = solve(problem, formulation, solver, SolveOptions(tol=1e-9, warm_start=cold.nu))
    assert warm.status == "solved" and warm.iterations <= 2


@pytest.mark.parametrize("solver", SOLVERS)
def test_history_columns_and_no_history_gives_the_same_run(solver):
    problem = random_problem(n_contacts=12, n_bodies=6, seed=5)
    on = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-9, max_iter=100_000))
    h = on.history
    assert list(h.columns) == ["iteration", "seconds", "objective", "error_name", "error", "ccp_residual",
                               "judged_name", "judged_error"]
    # the judged column (the workbench's own measure of sampled iterates) ends on the returned point
    assert h["judged_error"].dropna().iloc[-1] == pytest.approx(on.metrics["siconos_error"], rel=1e-9)
    assert len(h) == on.iterations and h["iteration"].tolist() == list(range(1, on.iterations + 1))
    assert np.all(np.diff(h["seconds"]) >= 0) and set(h["error_name"]) == {"siconos_error"}
    assert h["error"].iloc[-1] == pytest.approx(on.metrics["siconos_error"], rel=1e-9)
    assert h["objective"].iloc[-1] == pytest.approx(on.metrics["dual_objective"], rel=1e-9)
    off = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-9, max_iter=100_000, keep_history=False))
    assert off.history is None and off.iterations == on.iterations
    np.testing.assert_array_equal(off.nu, on.nu)
    relaxed = solve(problem, "dual", solver, SolveOptions(tol=1e-9, max_iter=100_000))
    assert list(relaxed.history.columns) == ["iteration", "seconds", "objective", "error_name", "error",
                                             "judged_name", "judged_error"]
    # the error column is Melanz et al. 2015 eq. 39 (g_d = 1e-6) of the returned iterate
    assert set(relaxed.history["error_name"]) == {"ccp_residual"}
    assert relaxed.history["error"].iloc[-1] == pytest.approx(relaxed.metrics["ccp_residual"], rel=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_caps_stop_the_run_and_are_reported(solver):
    problem = random_problem(n_contacts=20, n_bodies=8, seed=1)
    res = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-14, max_iter=3))
    assert (res.status, res.iterations) == ("max_iter", 3)
    res = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-14, time_limit=1e-9))
    # admm factorises before its first iteration, and a factorisation that would end past the limit is
    # not started (Recorder.affords_first): it stops at its start point, with no factorisation made
    first = 0 if solver == "admm" else 1
    assert (res.status, res.iterations) == ("timeout", first)
    assert solver != "admm" or res.info["factorizations"] == 0
    assert res.nu is not None and np.isfinite(res.metrics["siconos_error"])


@pytest.mark.parametrize("solver, params", [("apgd", {"nope": 1}), ("apgd", {"anti_relaxation": "middle"}),
                                            ("pgs", {"omega": 2.5}), ("admm", {"alpha": 0}),
                                            ("bb", {"memory": 0}), ("jacobi", {"omega": -1})])
def test_bad_settings_are_input_errors(solver, params):
    with pytest.raises(InputError):
        solve(rolling_ball_2d(), "anti-relaxed", solver, SolveOptions(params=params))


def test_cli_solve_writes_the_history(tmp_path, capsys):
    out = tmp_path / "history.csv"
    assert main(["solve", "scene:rolling-ball-2d", "--formulation", "anti-relaxed", "--solver", "apgd",
                 "--tol", "1e-10", "--history", str(out)]) == 0
    assert "solved" in capsys.readouterr().out
    import pandas as pd
    h = pd.read_csv(out)
    assert list(h.columns) == ["iteration", "seconds", "objective", "error_name", "error", "ccp_residual",
                               "judged_name", "judged_error"]
    assert h["error"].iloc[-1] <= 1e-10
    assert main(["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "pgs", "--param", "omega=3"]) == 2
    assert "omega" in capsys.readouterr().err


# ------------------------------------------------------------------------------ shared problems
BOXES, CAPSULES, CAPSULES_100, ONE_OBJECT = ("siconos/BoxesStack1-i100000-32.hdf5.dat", "fclib/Capsules-i125-1213.hdf5",
                                            "siconos/Capsules-i100-889.dat", "siconos/OneObject-i1028-138.hdf5.dat")
#: reference problems that need their own caps (degenerate or non-symmetric W): one test per problem and solver
HARD = [BOXES, CAPSULES, CAPSULES_100, ONE_OBJECT]
#: the other reference problems: one test per solver goes through all of them
EASY = ["fclib/Box_Stacks-i0122-82-5.hdf5", "fclib/CubeH8.hdf5", "fclib/LMGC_GlobalFrictionContactProblem00046.hdf5",
        "fclib/LMGC_100_PR_PerioBox-i00361-60-03000.hdf5", "siconos/Confeti-ex13-4contact-Fc3D-SBM.dat",
        "siconos/FC3D_Example1.dat", "siconos/FC3D_Example1_SBM.dat", "siconos/FrictionContact3D_1c.dat",
        "siconos/FrictionContactProblem00031.dat", "siconos/GFC3D_TwoRods1.dat"]


@pytest.fixture(scope="module")
def clarabel_objective():
    """(problem, Clarabel's relaxed dual objective to 1e-8) of a corpus problem, or of a reference
    problem under ``root``."""
    cache = {}

    def get(name, root=None):
        if name not in cache:
            problem = corpus()[name] if root is None else load_problem(root / name)
            cache[name] = problem, solve(problem, "dual", "clarabel", SolveOptions(tol=1e-8)).metrics["dual_objective"]
        return cache[name]
    return get


#: (problem, solver) pairs that need more than 10,000 iterations for the relaxed objective to 1e-6, with
#: their cap (first iterate within 1e-6, measured 2026-11-21 on BoxesStack1, cond(W) ~ 1e18, where both
#: converge at the sublinear rate of a degenerate problem: pgs 47,836, jacobi 382,277). The runs are
#: deterministic; the caps leave a margin of 40% or more.
#: BB's non-monotone steps on the ill-conditioned BoxesStack1 follow round-off: the same iterates to 12
#: digits over 60 iterations, then 1e-6 in the objective at iteration 10,300 (compiled sums) against
#: under 10,000 (numpy's BLAS sums), so its cap leaves room for either
SLOW_RELAXED = {(BOXES, "pgs"): 70_000, (BOXES, "jacobi"): pytest.param(550_000, marks=pytest.mark.slow),
                (BOXES, "bb"): 15_000}
#: (problem, solver) pairs that do not reach the exact-problem target within the caps below: the test
#: checks they report it (the benchmark reports the time each needs with a wall-clock cap)
SLOW_EXACT = {(BOXES, s) for s in ("pgs", "jacobi", "bb", "admm")} | \
    {(p, s) for p in (CAPSULES, CAPSULES_100, ONE_OBJECT) for s in ("jacobi", "bb", "admm")}


def check_honest_cap(res, tol):
    """A run stopped by its cap says so, and the error it reached (the workbench's) is above tol."""
    assert res.status == "max_iter" and res.stop == StopCause.MAX_ITER and res.iterations == 300
    assert tol < res.metrics["judged_error"] < 1


def relaxed_cases(names):
    for name in names:
        for solver in SOLVERS:
            cap = SLOW_RELAXED.get((name, solver))
            if cap is None:
                # on a non-symmetric W the stopping measure (of W_s, to 1e-11) is out of reach: a shorter cap
                cap = 3_000 if name in (CAPSULES, CAPSULES_100, ONE_OBJECT) and solver != "jacobi" else 10_000
            if isinstance(cap, int):
                cap = pytest.param(cap)
            yield pytest.param(name, solver, *cap.values, marks=cap.marks, id=f"{name}-{solver}")


def relaxed_gap(problem, ref, solver, cap):
    """The relaxed optimum to 1e-6 relative in the objective. tol 1e-11: PerioBox has ||gamma|| ~ 4e5
    against ||q|| ~ 0.8, so a relaxed error of 1e-9 leaves 1e-6 in the objective. Non-symmetric W
    (Capsules, OneObject, the corpus's) are solved as the QP of W_s and judged with W: "inaccurate" or
    "max_iter", with the objective right."""
    res = solve(problem, "dual", solver, SolveOptions(tol=1e-11, max_iter=cap, keep_history=False))
    return relative_gap(res.metrics["dual_objective"], ref), res


@pytest.mark.parametrize("name, solver, cap", list(relaxed_cases(CORPUS)))
def test_relaxed_solvers_agree_with_clarabel_on_small_problems(clarabel_objective, name, solver, cap):
    gap, res = relaxed_gap(*clarabel_objective(name), solver, cap)
    assert gap <= 1e-6, (res.status, res.iterations)


@pytest.mark.parametrize("name, solver, cap", list(relaxed_cases(HARD)))
def test_relaxed_solvers_agree_with_clarabel_on_hard_shared_problems(shared_data, clarabel_objective, name, solver, cap):
    gap, res = relaxed_gap(*clarabel_objective(name, shared_data), solver, cap)
    assert gap <= 1e-6, (res.status, res.iterations)


@pytest.mark.parametrize("solver", SOLVERS)
def test_relaxed_solver_agrees_with_clarabel_on_every_other_shared_problem(shared_data, clarabel_objective, solver):
    gaps = {name: relaxed_gap(*clarabel_objective(name, shared_data), solver, 10_000) for name in EASY}
    assert all(gap <= 1e-6 for gap, _ in gaps.values()), \
        {name: (gap, res.status, res.iterations) for name, (gap, res) in gaps.items() if gap > 1e-6}


def test_relaxed_jacobi_on_a_degenerate_problem_reports_its_cap(shared_data, clarabel_objective):
    """BoxesStack1 (cond(W) ~ 1e18) within 300 iterations: jacobi says it stopped at its cap, and the
    objective is indeed not there yet."""
    problem, ref = clarabel_objective(BOXES, shared_data)
    res = solve(problem, "dual", "jacobi", SolveOptions(tol=1e-11, max_iter=300))
    check_honest_cap(res, 1e-11)
    assert relative_gap(res.metrics["dual_objective"], ref) > 1e-3


def reaches_siconos_error_1e8(problem, solver):
    """The exact problem to a Siconos error of 1e-8 within 5,000 iterations: the run, if it failed.
    Reached, and judged solved - or refused by the judge only because the Siconos error, in the problem's
    own units, is 1e-8 while the scaled one is above sqrt(tol) (LMGC_100_PR_PerioBox: N's diagonal about
    1e-5; workbench.judging.contradiction, rule 3)."""
    res = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-8, max_iter=5_000, keep_history=False))
    judged = res.status == "solved" or "in the problem's units only" in res.message
    return None if judged and res.metrics["siconos_error"] <= 1e-8 else res


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", CORPUS)
def test_anti_relaxed_solvers_reach_siconos_error_1e8_on_small_problems(name, solver):
    res = reaches_siconos_error_1e8(corpus()[name], solver)
    assert res is None, (res.status, res.iterations, res.metrics["siconos_error"])


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", HARD)
def test_anti_relaxed_solvers_reach_siconos_error_1e8_on_hard_shared_problems(shared_data, name, solver):
    problem = load_problem(shared_data / name)
    if (name, solver) in SLOW_EXACT:
        check_honest_cap(solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-8, max_iter=300)), 1e-8)
        return
    res = reaches_siconos_error_1e8(problem, solver)
    assert res is None, (res.status, res.iterations, res.metrics["siconos_error"])


@pytest.mark.parametrize("solver", SOLVERS)
def test_anti_relaxed_solver_reaches_siconos_error_1e8_on_every_other_shared_problem(shared_data, solver):
    failed = {name: reaches_siconos_error_1e8(load_problem(shared_data / name), solver) for name in EASY}
    assert not any(failed.values()), {name: (res.status, res.iterations, res.metrics["siconos_error"])
                                      for name, res in failed.items() if res is not None}


def test_a_diverged_iterate_is_never_solved(shared_data):
    """ADMM with a small fixed penalty diverges on BoxesStack1 (W singular, the shifted iterates run off
    along K): the norms in the Siconos normalisation overflow, and error / inf = 0 once passed for an
    exact solution (status "solved" at iteration 171 with a dual objective of 9e306). Neither the
    stopping measure nor the workbench's verdict may accept such a point."""
    problem = load_problem(shared_data / BOXES)
    res = solve(problem, "anti-relaxed", "admm", SolveOptions(tol=1e-8, max_iter=400, keep_history=False,
                                                              params={"rho": 0.13, "balance_every": 10 ** 6}))
    assert res.status != "solved" and res.stop != StopCause.CONVERGED
    assert not res.metrics.get("judged_error", np.nan) <= 1e-8
    huge = np.full(problem.n_unknowns, 1e160)
    assert np.isnan(siconos_error(problem, huge, problem.apply_N(huge) + problem.r))


def test_accelerated_admm_reaches_the_same_optimum_and_restarts():
    """ADMM with and without acceleration (Goldstein et al. 2014, Algorithm 8) reach Clarabel's relaxed
    objective to 1e-8 on the same problem by different iterates, and the accelerated run restarts."""
    problem = random_problem(n_contacts=20, n_bodies=8, seed=0)
    ref = solve(problem, "dual", "clarabel", SolveOptions(tol=1e-9))
    runs = {a: solve(problem, "dual", "admm", SolveOptions(tol=1e-10, max_iter=100_000, params={"acceleration": a}))
            for a in (False, True)}
    for res in runs.values():
        assert res.status == "solved"
        assert relative_gap(res.metrics["dual_objective"], ref.metrics["dual_objective"]) <= 1e-8
    assert runs[True].info["restarts"] > 0 and runs[False].info["restarts"] == 0
    assert runs[True].iterations != runs[False].iterations


def test_accelerated_admm_solves_a_problem_plain_admm_does_not(shared_data):
    """OneObject (a held-out problem of benchmarks/peers/split.json, non-symmetric W): within 5,000
    iterations plain ADMM stays above the Siconos error 1e-8 and the accelerated one reaches it
    (docs/results/admm-acceleration.md: about 3,900 iterations)."""
    problem = load_problem(shared_data / ONE_OBJECT)
    runs = {a: solve(problem, "anti-relaxed", "admm", SolveOptions(tol=1e-8, max_iter=5_000, keep_history=False,
                                                                  params={"acceleration": a}))
            for a in (False, True)}
    assert runs[False].metrics["siconos_error"] > 1e-8 and runs[False].iterations == 5_000
    assert runs[True].metrics["siconos_error"] <= 1e-8 and runs[True].iterations < 4_500
