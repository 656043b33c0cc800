"""ADMM on local problems: the x-update's factorisation (CHOLMOD's Cholesky of W + rho I for an exactly
symmetric W, the symbolic analysis once per run and a numeric factorisation per penalty; SuperLU's LU
otherwise) and the penalty's step where no cone constraint is active (INACTIVE_STEP).

Oracles: the LU path itself (the same iteration with another factorisation of the same matrix: the same
iterates to round-off), the rule before INACTIVE_STEP (plain halving, ``inactive_step`` 0.5), the
workbench's own Siconos error of the returned point, and Newton's answer on the same problem (an
independent method)."""

import numpy as np
import pytest

from factories import nonsymmetric_local
from problems.stacks import box_pyramid
from workbench.judging import finalize
from workbench.method import Method, solve
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions
import workbench.solvers.admm as admm

needs_cholmod = pytest.mark.skipif(admm.cholmod() is None, reason="scikit-sparse (CHOLMOD) is not installed: "
                                   "admm factorises with SuperLU only")
TOL = 1e-8


def _local_pyramid() -> TimeStepProblem:
    p = box_pyramid(base=4, jitter=0.2, seed=1)
    return TimeStepProblem(W=p.N, q=p.r, mu=p.mu, d=p.d)


def _admm(problem, **params):
    return solve(problem, "anti-relaxed", "admm", SolveOptions(tol=TOL, max_iter=3000, params=params))


@needs_cholmod
def test_cholesky_and_lu_give_the_same_iterates_on_a_stack(monkeypatch):
    """A symmetric W goes to CHOLMOD (simplicial below SUPERNODAL_MIN_FLOPS, supernodal at or above);
    with CHOLMOD absent the run takes SuperLU's LU; the three reach the Siconos error 1e-8 in the same
    iterations (10 % margin: the factorisations round differently) at the same point, with Newton's
    relative velocities."""
    p = _local_pyramid()
    chol = _admm(p)
    assert chol.info["factorization"] == "cholmod (simplicial Cholesky of W + rho I)"
    monkeypatch.setattr(admm, "SUPERNODAL_MIN_FLOPS", 0.0)
    supernodal = _admm(p)
    assert supernodal.info["factorization"] == "cholmod (supernodal Cholesky of W + rho I)"
    monkeypatch.setattr(admm, "cholmod", lambda: None)
    lu = _admm(p)
    assert lu.info["factorization"] == "superlu (LU of W + rho I)"
    # the stack's impulses are not unique (four corner contacts a face: W is singular), its velocities are
    newton = solve(p, "ncp", "newton", SolveOptions(tol=1e-12))
    u_newton = p.N @ newton.nu + p.r
    for res in (chol, supernodal, lu):
        assert res.metrics["siconos_error"] <= TOL
        assert abs(res.iterations - lu.iterations) <= 0.1 * lu.iterations
        assert res.info["factorizations"] > 1          # residual balancing refactorised at least once
        assert np.linalg.norm(res.nu - lu.nu) <= 1e-6 * np.linalg.norm(lu.nu)
        assert np.linalg.norm(p.N @ res.nu + p.r - u_newton) <= 1e-6 * np.linalg.norm(p.r)


@needs_cholmod
def test_a_non_symmetric_W_takes_the_lu():
    """W symmetric only to 1e-4: not exactly, so the run takes SuperLU's LU, and still reaches 1e-8."""
    res = _admm(nonsymmetric_local())
    assert res.info["factorization"] == "superlu (LU of W + rho I)"
    assert res.metrics["siconos_error"] <= TOL


@needs_cholmod
def test_an_indefinite_W_hands_the_run_to_the_lu():
    """A symmetric W with a negative eigenvalue larger than the penalty: CHOLMOD finds W + rho I not
    positive definite, the run goes on with the LU of the same matrix and says so."""
    W = np.diag([2.0, 1.0, 1.0, 2.0, 1.0, 1.0])
    W[0, 3] = W[3, 0] = 3.0                              # eigenvalues of the normal pair: 5 and -1
    p = TimeStepProblem(W=W, q=np.array([-1.0, 0.1, 0.0, -1.0, 0.0, 0.1]), mu=np.array([0.5, 0.5]), d=3)
    res = _admm(p, rho=0.5)
    assert res.info["factorization"] == "superlu (LU of W + rho I; W + rho I is not positive definite)"
    assert res.info["factorizations"] >= 1


def test_where_no_constraint_is_active_rho_drops_at_once():
    """On a stack (most contacts sticking, W singular) the multiplier w is zero at a balancing check: rho
    is multiplied by INACTIVE_STEP there, and the run reaches 1e-8 in fewer iterations and fewer
    factorisations than with the halving of every other check, at Newton's relative velocities."""
    p = _local_pyramid()
    fast, halving = _admm(p), _admm(p, inactive_step=0.5)
    assert fast.metrics["siconos_error"] <= TOL and halving.metrics["siconos_error"] <= TOL
    assert fast.iterations < 0.6 * halving.iterations
    assert fast.info["factorizations"] < halving.info["factorizations"]
    assert fast.info["rho"] < halving.info["rho"]
    u_newton = p.N @ solve(p, "ncp", "newton", SolveOptions(tol=1e-12)).nu + p.r
    assert np.linalg.norm(p.N @ fast.nu + p.r - u_newton) <= 1e-6 * np.linalg.norm(p.r)


def test_a_run_whose_multiplier_is_never_zero_is_unchanged_by_the_step():
    """A random problem keeps constraints active at every check (here one changes rho: two
    factorisations): the record (iterates, counts, rho) is the same whatever inactive_step is."""
    from factories import random_problem
    p = random_problem(n_contacts=6, seed=0)
    a, b = _admm(p), _admm(p, inactive_step=0.5)
    assert a.info["factorizations"] == 2 and a.metrics["siconos_error"] <= TOL
    assert a.iterations == b.iterations and a.info["rho"] == b.info["rho"]
    assert np.array_equal(a.nu, b.nu)
    assert a.info["factorizations"] == b.info["factorizations"]


def test_a_step_that_makes_the_run_diverge_is_undone():
    """Balancing every 5 iterations, the step comes before the run has settled: the anti-relaxed
    iteration then diverges (its measure grows to overflow). The next check puts the run back where the
    step was taken, with rho as it was, and says so; the stack is solved, at Newton's velocities."""
    p = _local_pyramid()
    res = _admm(p, balance_every=5)
    assert res.info["inactive_step_undone"] > 5
    assert res.metrics["siconos_error"] <= TOL
    u_newton = p.N @ solve(p, "ncp", "newton", SolveOptions(tol=1e-12)).nu + p.r
    assert np.linalg.norm(p.N @ res.nu + p.r - u_newton) <= 1e-6 * np.linalg.norm(p.r)


def test_an_over_relaxed_run_halves_rho_as_before():
    """Over-relaxed (plain ADMM, alpha 1.6) the step where w = 0 is not taken: the record is the same
    whatever inactive_step is, and the stack is still solved."""
    p = _local_pyramid()
    a, b = _admm(p, acceleration=False), _admm(p, acceleration=False, inactive_step=0.5)
    assert a.metrics["siconos_error"] <= TOL
    assert a.iterations == b.iterations and a.info["rho"] == b.info["rho"] and np.array_equal(a.nu, b.nu)


@pytest.mark.parametrize("step", [0.0, -1.0, 1.5, float("nan")])
def test_inactive_step_outside_its_range_is_refused(step):
    from workbench.errors import InputError
    with pytest.raises(InputError, match="inactive_step"):
        _admm(_local_pyramid(), inactive_step=step)


@pytest.mark.parametrize("acceleration", [True, False])
def test_a_run_whose_iterates_leave_floating_point_stops_at_once(acceleration):
    """W x 1e-30 and q x 1e150: impulses of about 1e180, whose squares overflow. Both ADMM variants
    used to run 10,000 iterations of non-finite iterates to their cap; handed the problem as it is, the
    run now stops at the first (stop cause failed, info["diverged"]) and is not solved, while the same
    problem at unit scale is. Through workbench.method, which solves such a problem with its linear term
    divided by a power of two (TimeStepProblem.working_exponent), the iterates stay finite; what is left is
    a question of units (W x 1e-30: impulses 1e30 times the velocities), which the judge's scaled measures
    decide."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(9, 9))
    W = A @ A.T + 9 * np.eye(9)
    q = rng.normal(size=9)
    q[::3] = -np.abs(q[::3]) - 0.5
    unit = TimeStepProblem(W=W, q=q, mu=np.full(3, 0.3), d=3)
    wild = TimeStepProblem(W=W * 1e-30, q=q * 1e150, mu=np.full(3, 0.3), d=3)
    options = dict(acceleration=acceleration)
    assert _admm(unit, **options).status == "solved"
    method = Method("anti-relaxed", "admm", options)
    res = finalize(*method._execute(wild, SolveOptions(tol=1e-6, params=method.solver_params)), SolveOptions(tol=1e-6))
    assert res.status != "solved" and res.stop.value == "failed"
    assert res.iterations <= 2 and res.info["diverged"].startswith("non-finite iterate at iteration")
    assert wild.working_exponent != 0
    rescaled = solve(wild, "anti-relaxed", "admm", SolveOptions(tol=1e-6, params=options))
    assert "rescaled" in rescaled.info and "diverged" not in rescaled.info
    assert rescaled.status == "solved" or "balanced units" in rescaled.message
