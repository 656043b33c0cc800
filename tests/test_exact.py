"""Exact Coulomb (issue 4): fixed points on the relaxed models compiled once, projected quasi-Newton
(Koziara 2017), nonsmooth Newton, and Siconos as a peer; analytic answers and agreement between
independent methods, every result judged by the workbench's siconos_error."""

import cvxpy as cp
import numpy as np
import pytest

from factories import CORPUS, corpus, random_problem
from problems.scenes import rolling_ball_2d, rolling_ball_2d_exact_impulse
from workbench.errors import InputError, UnsupportedError
from formulations import get_formulation
from workbench.io import load_problem
from workbench.metrics import siconos_error
from workbench.problem import TimeStepProblem
from workbench.method import solve
from workbench.solvers import SOLVERS, SolveOptions, get_solver, list_solvers
from workbench.solvers import siconos as siconos_module

HAS_SICONOS = siconos_module.probe(siconos_module.SICONOS_PYTHON)[0] is not None
needs_siconos = pytest.mark.skipif(not HAS_SICONOS, reason="python3-siconos is not installed for the system Python")

FIXED_POINTS = [(f, s) for f in ("dual-fixed-point", "primal-fixed-point") for s in ("clarabel", "scs")]


# ----------------------------------------------------------------------------------- the 2D ball
@pytest.mark.parametrize("formulation, solver", FIXED_POINTS)
def test_fixed_point_gives_the_analytic_ball_impulse(formulation, solver):
    res = solve(rolling_ball_2d(), formulation, solver, SolveOptions(tol=1e-9))
    assert res.status == "solved", res.message
    np.testing.assert_allclose(res.nu, rolling_ball_2d_exact_impulse(), rtol=1e-6)
    np.testing.assert_allclose(res.nu, [0.0981, -0.01962], rtol=1e-6)
    # the outer map contracts by mu^2 * 3.5 / (1 + 3.5 mu^2) = 0.123 per step: about ten steps from
    # the relaxed start (siconos error 0.1) to 1e-9
    assert 6 <= res.info["outer_iterations"] <= 15
    assert res.iterations == sum(res.info["inner_iterations"]) > res.info["outer_iterations"]
    assert res.history["shift_change"].iloc[-1] <= 0.5e-9
    # the relaxed model, same solver, launches the ball instead
    relaxed = solve(rolling_ball_2d(), formulation.replace("-fixed-point", ""), solver, SolveOptions(tol=1e-9))
    assert np.abs(relaxed.nu - rolling_ball_2d_exact_impulse()).max() > 0.3
    assert relaxed.metrics["siconos_error"] > 0.1


@pytest.mark.parametrize("formulation, solver", [("dual-fixed-point", "clarabel"), ("primal-fixed-point", "scs")])
def test_fixed_point_compiles_the_problem_once(monkeypatch, formulation, solver):
    calls = []
    compile_ = cp.Problem.get_problem_data

    def counting(self, *args, **kwargs):
        calls.append(1)
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "get_problem_data", counting)
    p = random_problem(n_contacts=10, n_bodies=6, seed=4, gap=-0.001)
    res = solve(p, formulation, solver, SolveOptions(tol=1e-7))
    assert res.status == "solved"
    assert res.info["outer_iterations"] >= 4
    assert len(calls) == 1
    assert res.info["compile_seconds"] > 0 and len(res.info["outer_seconds"]) == res.info["outer_iterations"]


def test_fixed_point_outer_cap_is_reported():
    res = solve(rolling_ball_2d(), "dual-fixed-point", "clarabel",
                SolveOptions(tol=1e-9, params={"outer_max_iter": 2, "polish": False}))
    assert res.status == "max_iter" and res.info["outer_iterations"] == 2 and res.info["polish"] is None
    assert 1e-3 < res.metrics["siconos_error"] < 0.1  # two steps from the relaxed start
    # with the polish (default) Newton finishes from there, and says so
    res = solve(rolling_ball_2d(), "dual-fixed-point", "clarabel", SolveOptions(tol=1e-9, params={"outer_max_iter": 2}))
    polish = res.info["polish"]
    assert res.status == "solved" and res.info["outer_stop"] == "max_iter"
    assert polish["accepted"] and polish["iterations"] >= 1 and 1e-3 < polish["error_before"] < 0.1
    # the same measure at the same point (round-off apart: both are near 1e-12)
    assert polish["error_after"] == pytest.approx(res.metrics["siconos_error"], rel=1e-3)
    assert "polished by newton" in res.solver_status
    hist = res.history
    assert list(hist["phase"]) == ["outer"] * 2 + ["polish"] * (polish["iterations"] + 1)
    assert np.all(np.diff(hist["iteration"]) >= 0) and np.all(np.diff(hist["seconds"]) >= 0)
    assert set(hist["error_name"]) == {"siconos_error"}


def test_anderson_mixing_solves_a_linear_fixed_point_in_n_plus_one_steps():
    from workbench.solvers.fixed_point import AndersonMixing

    rng = np.random.default_rng(0)
    n = 4
    A = rng.standard_normal((n, n))
    A *= 0.9 / np.abs(np.linalg.eigvals(A)).max()  # a contraction, slow for the plain map
    b = rng.standard_normal(n)
    fixed = np.linalg.solve(np.eye(n) - A, b)
    x, mixing = np.zeros(n), AndersonMixing(n)
    for _ in range(n + 2):  # full memory: the affine map's fixed point after n + 1 evaluations (exact)
        x = mixing.step(x, A @ x + b, 1.0)
    np.testing.assert_allclose(x, fixed, rtol=1e-8)
    plain = np.zeros(n)
    for _ in range(n + 2):
        plain = AndersonMixing(0).step(plain, A @ plain + b, 1.0)
    assert np.linalg.norm(plain - fixed) > 1e-3 * np.linalg.norm(fixed)


def test_lcp1_and_the_fixed_points_share_the_compile_once_session(monkeypatch):
    from workbench.solvers import compiled

    built = []
    init = compiled.CompiledSession.__init__

    def counting(self, cvx, backend, *args, **kwargs):
        built.append(backend)
        init(self, cvx, backend, *args, **kwargs)

    monkeypatch.setattr(compiled.CompiledSession, "__init__", counting)
    p = random_problem(n_contacts=8, n_bodies=5, seed=7, gap=-0.001)
    assert solve(p, "lcp-pyramid", "lcp1", SolveOptions(tol=1e-7)).info["outer_iterations"] >= 2
    assert solve(p, "dual-fixed-point", "scs", SolveOptions(tol=1e-7)).info["outer_iterations"] >= 2
    assert built == ["clarabel", "scs"]  # one session per run, re-solved in place


@pytest.mark.parametrize("case", [dict(d=3), dict(d=2), dict(d=3, diagonal_mass=False, n_bilateral=2)])
def test_fixed_points_newton_and_pqn_agree_on_random_problems(case):
    p = random_problem(n_contacts=12, n_bodies=6, seed=21, gap=-0.001, **case)
    opts = SolveOptions(tol=1e-8)
    newton = solve(p, "ncp", "newton", SolveOptions(tol=1e-12))
    assert newton.status == "solved"
    # Clarabel's inner solves stop near a natural-map error of 1e-8 (interior point): its fixed point is
    # asked for 1e-7
    runs = [solve(p, "dual-fixed-point", "clarabel", SolveOptions(tol=1e-7)),
            solve(p, "primal-fixed-point", "scs", opts), solve(p, "ncp", "pqn", opts)]
    if not p.n_bilateral:  # SCS on the dual with joints needs the 100,000-iteration cap: not for a quick test
        runs.append(solve(p, "dual-fixed-point", "scs", opts))
    for res in runs:
        assert res.status == "solved", (res.formulation, res.solver, res.metrics["siconos_error"])
        np.testing.assert_allclose(res.nu, newton.nu, atol=2e-5 * np.abs(newton.nu).max())


# ------------------------------------------------------------- fixed points on corpus problems
def newton_reference(problem):
    ref = solve(problem, "ncp", "newton", SolveOptions(tol=1e-12))
    assert ref.status == "solved"
    return ref


def assert_same_velocities(problem, res, ref, rtol=1e-6):
    u, u_ref = problem.relative_velocity(res.nu), problem.relative_velocity(ref.nu)
    assert np.linalg.norm(u - u_ref) <= rtol * max(np.linalg.norm(u_ref), np.linalg.norm(problem.r))


@pytest.mark.parametrize("name, formulation, solver", [
    ("fclib/Box_Stacks-i0122-82-5.hdf5", "dual-fixed-point", "clarabel"),     # global
    ("fclib/Box_Stacks-i0122-82-5.hdf5", "primal-fixed-point", "scs"),        # global, the primal
    ("siconos/OneObject-i1028-138.hdf5.dat", "dual-fixed-point", "clarabel"),  # non-symmetric W
    ("siconos/OneObject-i1028-138.hdf5.dat", "dual-fixed-point", "scs"),
    ("siconos/FrictionContactProblem00374.dat", "dual-fixed-point", "scs"),    # 2D
])
def test_pure_fixed_points_reach_1e_8_on_corpus_problems(shared_data, name, formulation, solver):
    """Without the polish: the outer map itself gets there (on OneObject through the splitting of W's
    skew part, formulations.dual_fixed_point); judged by the workbench's siconos_error."""
    check_pure_fixed_point(load_problem(shared_data / name), formulation, solver)


@pytest.mark.parametrize("name, formulation, solver", [
    ("packing", "dual-fixed-point", "clarabel"), ("packing", "primal-fixed-point", "scs"),
    ("nonsymmetric", "dual-fixed-point", "clarabel"), ("random-2d", "dual-fixed-point", "scs")])
def test_pure_fixed_points_reach_1e_8_on_small_problems(name, formulation, solver):
    check_pure_fixed_point(corpus()[name], formulation, solver)


def check_pure_fixed_point(p, formulation, solver):
    name = p.name
    res = solve(p, formulation, solver, SolveOptions(tol=1e-8, time_limit=60, params={"polish": False}))
    assert res.status == "solved" and res.metrics["siconos_error"] <= 1e-8
    assert res.info["polish"] is None and res.info["outer_stop"] == "converged"
    assert res.history["error"].iloc[-1] == pytest.approx(res.metrics["siconos_error"], rel=1e-9)
    if "OneObject" in name:
        assert res.info["outer_iterations"] > 5
        # W's skew part is 6e-5 of W: solving the symmetric part alone stalled at 1.2e-6 (measured)
        model_skew = get_formulation("dual-fixed-point").build(p, "cvxpy-fixed-point").info["skew_norm"]
        assert 1e-5 < model_skew / np.abs(p.N).max() < 1e-3
    if "OneObject" not in name:  # OneObject has several solutions in u (NON_UNIQUE_U below)
        assert_same_velocities(p, res, newton_reference(p))


def test_non_symmetric_w_is_solved_as_it_is_not_as_its_symmetric_part(shared_data):
    p = load_problem(shared_data / "siconos/OneObject-i1028-138.hdf5.dat")
    W = p.N
    sym = TimeStepProblem(W=((W + W.T) * 0.5).tocsr(), q=p.r, mu=p.mu, d=p.d)
    res = solve(p, "dual-fixed-point", "clarabel", SolveOptions(tol=1e-8, params={"polish": False}))
    # the answer is a solution for W (the workbench's siconos_error uses W), not for its symmetric part
    assert res.status == "solved" and res.metrics["siconos_error"] <= 1e-8
    assert siconos_error(sym, res.nu, sym.relative_velocity(res.nu)) > 1e-7


def test_the_polish_finishes_an_interior_point_stall_at_the_cone_apex(shared_data):
    """FrictionContactProblem00031: five contacts closed with zero impulse and zero velocity; Clarabel
    returns both about 7e-8 (siconos error 3e-7) however often the shift is updated."""
    p = load_problem(shared_data / "siconos/FrictionContactProblem00031.dat")
    pure = solve(p, "dual-fixed-point", "clarabel", SolveOptions(tol=1e-8, params={"polish": False}))
    assert pure.status == "inaccurate" and 1e-7 < pure.metrics["siconos_error"] < 1e-6
    assert pure.info["outer_stop"] == "settled"
    res = solve(p, "dual-fixed-point", "clarabel", SolveOptions(tol=1e-8))
    assert res.status == "solved" and res.info["polish"]["accepted"]
    assert res.info["polish"]["error_before"] == pytest.approx(pure.metrics["siconos_error"], rel=1e-6)
    assert res.info["polish"]["iterations"] <= 3
    np.testing.assert_allclose(res.nu, newton_reference(p).nu, atol=1e-10 * np.abs(p.r).max())


@pytest.mark.slow
def test_damping_breaks_the_cycle_of_a_map_that_does_not_contract(shared_data):
    p = load_problem(shared_data / "fclib/Capsules-i125-1213.hdf5")
    res = solve(p, "dual-fixed-point", "clarabel", SolveOptions(tol=1e-8, time_limit=60, params={"polish": False}))
    assert res.status == "solved" and res.info["outer_stop"] == "converged"
    assert res.info["dampings"] and res.info["dampings"][0][1] == pytest.approx(0.7)
    undamped = solve(p, "dual-fixed-point", "clarabel", SolveOptions(
        tol=1e-8, params={"polish": False, "stall_window": 1000, "outer_max_iter": 40}))
    assert undamped.status == "max_iter" and undamped.metrics["siconos_error"] > 1e-6


# ---------------------------------------------------------------------------------- PQN, Newton
PROBLEMS = {
    "ball": rolling_ball_2d,
    "random-3d": lambda: random_problem(n_contacts=20, n_bodies=8, seed=1, gap=-0.001),
    "random-2d": lambda: random_problem(n_contacts=20, n_bodies=8, d=2, seed=2, mu=0.5),
    "random-joints-full-M": lambda: random_problem(n_contacts=10, n_bodies=5, seed=3, diagonal_mass=False,
                                                   n_bilateral=3),
    "random-local": lambda: random_problem(n_contacts=15, n_bodies=6, seed=4, mu=0.8).as_local(),
}


@pytest.mark.parametrize("solver", ["newton", "pqn"])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_newton_and_pqn_reach_1e_10(solver, name):
    p = PROBLEMS[name]()
    res = solve(p, "ncp", solver, SolveOptions(tol=1e-10))
    assert res.status == "solved", res.message
    assert res.metrics["siconos_error"] <= 1e-10
    assert res.history["error"].iloc[-1] == pytest.approx(res.metrics["siconos_error"], rel=1e-6)
    if name == "ball":
        np.testing.assert_allclose(res.nu, rolling_ball_2d_exact_impulse(), rtol=1e-8)


def test_newton_converges_superlinearly_on_a_random_problem():
    res = solve(PROBLEMS["random-3d"](), "ncp", "newton", SolveOptions(tol=1e-14))
    err = res.history["error"].to_numpy()  # siconos_error
    assert res.status == "solved" and res.iterations <= 12
    # once close (1e-3) and above round-off (1e-12), each step at least raises the error to the power 1.5
    close = np.flatnonzero((err[:-1] < 1e-3) & (err[:-1] > 1e-12))
    assert close.size >= 2
    assert np.all(err[close + 1] < err[close] ** 1.5)


def test_pqn_seed_merit_and_relative_delta():
    p = PROBLEMS["random-3d"]()
    res = solve(p, "ncp", "pqn", SolveOptions(tol=1e-6, params={"gamma": 1e-16, "delta": 0.01, "delta_mode": "max"}))
    # Algorithm 1's own test g(R) < gamma (eq. 40) stopped it, not the workbench's tol
    assert res.history["merit"].iloc[-1] < 1e-16 <= res.history["merit"].iloc[-2]
    assert res.metrics["siconos_error"] < 1e-8
    W_ii = np.einsum("cii->ci", p.N_diagonal_blocks).ravel()
    mean = W_ii.mean()
    assert res.info["delta"] == pytest.approx(0.01 * W_ii.max() / mean, rel=1e-12)  # W scaled to unit mean


def test_pqn_falls_back_on_gauss_seidel_when_it_stops():
    p = PROBLEMS["random-3d"]()
    res = solve(p, "ncp", "pqn", SolveOptions(tol=1e-8, max_iter=2))
    if "pgs" in SOLVERS:
        assert res.info["fallback"]["solver"] == "pgs" and "fallback" in res.message
        assert res.status == "solved"
    else:
        assert res.status == "max_iter" and "fallback pgs unavailable" in res.message
    assert solve(p, "ncp", "pqn", SolveOptions(tol=1e-8, max_iter=2, params={"fallback": None})).status == "max_iter"


# ---------------------------------------------------------------------------------------- Siconos
def test_siconos_family_is_resolved_and_listed():
    names = [s.name for s in list_solvers()]
    assert {"siconos:NSGS", "siconos:NSN_AC", "newton", "pqn"} <= set(names)
    slv = get_solver("siconos:NSGS")
    assert slv.name == "siconos:NSGS" and slv.model_kinds == ("ncp",)


def test_siconos_unavailable_is_reported_with_the_reason(monkeypatch):
    monkeypatch.setattr(siconos_module, "SICONOS_PYTHON", "/nonexistent/python3")
    ok, why = get_solver("siconos:NSGS").availability()
    assert not ok and "/nonexistent/python3" in why and "python3-siconos" in why
    res = solve(rolling_ball_2d(), "ncp", "siconos:NSGS")
    assert res.status == "unavailable" and res.message == why


@needs_siconos
def test_siconos_unknown_member_and_joints_are_refused():
    with pytest.raises(InputError, match="unknown solver 'siconos:NOPE'"):
        get_solver("siconos:NOPE")
    with pytest.raises(UnsupportedError, match="joint"):
        solve(PROBLEMS["random-joints-full-M"](), "ncp", "siconos:NSGS")


@needs_siconos
@pytest.mark.parametrize("method", ["NSGS", "NSN_AC"])
def test_siconos_solves_the_planar_ball_through_the_3d_embedding(method):
    res = solve(rolling_ball_2d(), "ncp", f"siconos:{method}", SolveOptions(tol=1e-12))
    assert res.status == "solved"
    np.testing.assert_allclose(res.nu, rolling_ball_2d_exact_impulse(), rtol=1e-9)


@needs_siconos
def test_siconos_take_off_claim_on_a_tiny_q_is_recorded_not_trusted():
    """The planar ball's local problem with q scaled by s: the answer is s times the ball's impulse
    (homogeneity). At s = 1e-19 every q_n is above Siconos's absolute take-off threshold -DBL_EPSILON:
    it returns r = 0 after 0 iterations claiming error 0; the workbench judges that point (the error of
    r = 0 on the unscaled ball: the ball approaches) and does not call it solved. At s = 1e-6 the
    embedding gives the answer."""
    ball = rolling_ball_2d().as_local()
    for s in (1e-19, 1e-6):
        p = TimeStepProblem(W=ball.N, q=s * ball.r, mu=ball.mu, d=2)
        res = solve(p, "ncp", "siconos:NSGS", SolveOptions(tol=1e-10))
        if s < 1e-16:
            assert res.info["siconos_error"] == 0 and res.iterations == 0 and not np.any(res.nu)
            at_zero = siconos_error(ball, np.zeros(2), ball.r)
            assert res.status == "inaccurate" and res.metrics["siconos_error"] == pytest.approx(at_zero, rel=1e-9)
            assert at_zero > 0.01
        else:
            assert res.status == "solved" and res.iterations > 0
            np.testing.assert_allclose(res.nu / s, rolling_ball_2d_exact_impulse(), rtol=1e-8)


@needs_siconos
def test_siconos_own_error_is_the_workbench_siconos_error():
    p = PROBLEMS["random-local"]()
    res = solve(p, "ncp", "siconos:NSGS", SolveOptions(tol=1e-5))
    assert res.info["siconos_info"] == 0 and res.iterations > 1
    assert res.info["siconos_error"] == pytest.approx(res.metrics["siconos_error"], rel=1e-6)
    assert res.info["u_mismatch"] < 1e-12  # its u is the workbench's N r + q
    assert 0 < res.solve_seconds < res.info["process_seconds"]


# ----------------------------------------------------------------------- every shared problem
GLOBAL = ["fclib/Box_Stacks-i0122-82-5.hdf5", "fclib/CubeH8.hdf5", "fclib/LMGC_GlobalFrictionContactProblem00046.hdf5",
          "siconos/GFC3D_TwoRods1.dat"]
LOCAL = ["fclib/LMGC_100_PR_PerioBox-i00361-60-03000.hdf5", "siconos/Confeti-ex13-4contact-Fc3D-SBM.dat",
         "siconos/FC3D_Example1.dat", "siconos/FC3D_Example1_SBM.dat", "siconos/FrictionContact3D_1c.dat",
         "siconos/FrictionContactProblem00031.dat", "siconos/OneObject-i1028-138.hdf5.dat"]
SLOW = ["fclib/Capsules-i125-1213.hdf5", "siconos/BoxesStack1-i100000-32.hdf5.dat", "siconos/Capsules-i100-889.dat"]
#: problems with several exact solutions: methods that converge reach different u (measured: PerioBox,
#: PQN vs Newton ||du|| / ||u|| = 1e-2; OneObject, NSN_AC vs Newton 2e-2), all with siconos error < 1e-8
NON_UNIQUE_U = {"LMGC_100_PR_PerioBox-i00361-60-03000", "OneObject-i1028-138.hdf5"}
EXACT_TOL = 1e-8


def exact_methods(problem):
    out = [("ncp", "newton"), ("ncp", "pqn"), ("dual-fixed-point", "clarabel")]
    if problem.is_global:
        out.append(("primal-fixed-point", "clarabel"))
    if HAS_SICONOS and not problem.n_bilateral:  # Siconos's fc3d solvers take contacts only
        out += [("ncp", "siconos:NSN_AC"), ("ncp", "siconos:NSGS")]
    out += [("anti-relaxed", s) for s in ("apgd", "pgs") if s in SOLVERS]
    return out


def check_exact_methods_agree(problem):
    # Siconos's default caps (NSGS 1000 sweeps) are below what the harder problems need
    runs = {m: solve(problem, *m, SolveOptions(tol=EXACT_TOL, max_iter=20_000 if m[1].startswith("siconos") else None))
            for m in exact_methods(problem)}
    for (form, slv), res in runs.items():
        err = res.metrics.get("siconos_error", np.inf)
        # converged means siconos error < 1e-8, judged by the workbench whatever the solver says, and
        # the scaled measures agreeing (workbench.judging.contradiction; a refusal gives its reason)
        refused = res.info.get("judge_refused")
        assert (res.status == "solved") == (err <= EXACT_TOL and refused is None), (form, slv, res.status, err, refused)
        assert refused is None or refused in res.message
    # Newton on Alart-Curnier converges on every shared problem (measured, issue 4)
    assert runs[("ncp", "newton")].status == "solved"
    ref = runs[("ncp", "newton")]
    u_ref = problem.relative_velocity(ref.nu)
    scale = max(np.linalg.norm(u_ref), np.linalg.norm(problem.r))
    # the impulses are compared too where N is well conditioned (CubeH8, LMGC...00046, FC3D_Example1,
    # FrictionContact3D_1c, FrictionContactProblem00031: cond(N) < 10); with cond(N) up to 1e19 (more
    # contact unknowns than freedoms, redundant contacts) solutions of the same u differed by 1e-1 in r
    unique_r = problem.n_unknowns <= 300 and np.linalg.cond(problem.N.toarray()) < 1e3
    far = []
    for key, res in runs.items():
        if res.status == "solved":
            du = np.linalg.norm(problem.relative_velocity(res.nu) - u_ref) / scale
            dr = np.linalg.norm(res.nu - ref.nu) / np.linalg.norm(ref.nu) if unique_r else 0.0
            if du > 1e-6 or dr > 1e-5:  # measured: dr <= 5e-7 (APGD on LMGC...00046)
                far.append((key, du, dr))
    if problem.name in NON_UNIQUE_U:  # the same error level is all that can be asked
        assert sum(res.status == "solved" for res in runs.values()) >= 2
    else:
        assert not far, far


@pytest.mark.parametrize("name", CORPUS)
def test_exact_methods_agree_on_small_problems(name):
    check_exact_methods_agree(corpus()[name])


@pytest.mark.parametrize("name", GLOBAL + LOCAL)
def test_exact_methods_agree_on_shared_problems(shared_data, name):
    check_exact_methods_agree(load_problem(shared_data / name))


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_exact_methods_agree_on_the_slow_shared_problems(shared_data, name):
    check_exact_methods_agree(load_problem(shared_data / name))
