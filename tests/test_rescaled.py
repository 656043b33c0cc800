"""Problems whose linear term is far from 1 (TimeStepProblem.working_exponent): every in-house method
solves them rescaled by a power of two and is judged on the problem itself. The references are the
unit problem's solutions by methods outside the one tested (Clarabel through cvxpy, or another
in-house method), times the same power of two: the Coulomb problem is positively homogeneous."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from workbench.io import load_problem
from workbench.method import solve
from workbench.problem import SAFE_EXPONENT, TimeStepProblem
from workbench.solvers import SolveOptions
from workbench.shared_data import reference_files

#: powers of two of the linear term: past SAFE_EXPONENT on both sides, and where squares leave the doubles
POWERS = (-990, -450, 450, 990)
#: the exact methods tested, each with the method whose unit solution is its reference
EXACT = (("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("anti-relaxed", "bb"), ("anti-relaxed", "jacobi"),
         ("anti-relaxed", "admm"), ("ncp", "newton"), ("ncp", "pqn"))


def unit_local(n=3, seed=1, mu=0.3) -> TimeStepProblem:
    """A local problem, W symmetric positive definite (entries about 10), every contact approaching."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3 * n, 3 * n))
    q = rng.normal(size=3 * n)
    q[::3] = -np.abs(q[::3]) - 0.5
    return TimeStepProblem(W=sp.csr_matrix(A @ A.T + 3 * n * np.eye(3 * n)), q=q, mu=np.full(n, mu), d=3)


def unit_global(n=3, seed=2, mu=0.5) -> TimeStepProblem:
    """A global problem of 2 bodies (diagonal M), every contact approaching."""
    rng = np.random.default_rng(seed)
    D = sp.csr_matrix(rng.normal(size=(12, 3 * n)))
    m = rng.uniform(0.5, 2.0, 12)
    v = rng.normal(size=12)
    b = np.zeros(3 * n)
    b[::3] = -np.abs(D.T @ v)[::3] - 1.0
    return TimeStepProblem(M=sp.diags(m), D=D, k=m * v, b=b, mu=np.full(n, mu), d=3, h=0.01)


def times(p: TimeStepProblem, e: int) -> TimeStepProblem:
    """``p`` with its linear term times 2^e (exact)."""
    if p.is_global:
        return TimeStepProblem(M=p.M, D=p.D, k=np.ldexp(p.k, e), b=np.ldexp(p.b, e), mu=p.mu, d=p.d, h=p.h)
    return TimeStepProblem(W=p.N, q=np.ldexp(p.r, e), mu=p.mu, d=p.d)


@pytest.fixture(scope="module")
def references():
    """The unit problems' exact solutions by two methods (the dual fixed point on Clarabel, Newton) and
    the relaxed one by Clarabel, to 1e-8 (the relaxed one to 1e-7, where Clarabel's own stop lands)."""
    out = {}
    for kind, p in (("local", unit_local()), ("global", unit_global())):
        for form, slv in (("dual-fixed-point", "clarabel"), ("ncp", "newton"), ("dual", "clarabel")):
            res = solve(p, form, slv, SolveOptions(tol=1e-7 if form == "dual" else 1e-8))
            assert res.status == "solved", (kind, form, slv, res.message)
            out[kind, form, slv] = res
    return out


def distance(x, ref) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def test_the_exponent_is_zero_within_the_safe_range_and_brings_the_data_near_one():
    p = unit_local()
    assert p.working_exponent == 0
    for e in (-SAFE_EXPONENT + 10, SAFE_EXPONENT - 10):
        assert times(p, e).working_exponent == 0
    for e in POWERS:
        big = times(p, e)
        w = big.working_exponent
        assert abs(w - e) <= 8, (e, w)           # W's entries are about 2^4: e_u - floor(e_w / 2)
        scaled = big.rescaled(w)
        assert scaled.working_exponent == 0
        assert np.array_equal(scaled.r, np.ldexp(p.r, e - w))    # only exponents change
        assert (scaled.N != big.N).nnz == 0
    zero = TimeStepProblem(W=unit_local().N, q=np.zeros(9), mu=np.full(3, 0.3), d=3)
    assert zero.working_exponent == 0


def test_every_shared_problem_is_solved_as_it_is(shared_data):
    """The corpus's problems are all within the safe range: nothing of their runs changes."""
    for path in reference_files():
        assert load_problem(path).working_exponent == 0, path.name


@pytest.mark.parametrize("method", EXACT, ids=lambda m: m[1])
@pytest.mark.parametrize("e", POWERS)
def test_every_exact_method_solves_a_far_linear_term(references, method, e):
    for kind, unit in (("local", unit_local()), ("global", unit_global())):
        res = solve(times(unit, e), *method, SolveOptions(tol=1e-9))
        assert res.status == "solved", (kind, res.message, res.metrics)
        assert "rescaled" in res.info
        ref = references[kind, "dual-fixed-point", "clarabel"].nu
        assert distance(np.ldexp(res.nu, -e), ref) <= 1e-5, (kind, res.metrics)
        if kind == "global":
            v_ref = references[kind, "dual-fixed-point", "clarabel"].v
            assert distance(np.ldexp(res.v, -e), v_ref) <= 1e-5


@pytest.mark.parametrize("e", POWERS)
def test_the_interior_point_solves_a_far_relaxed_problem(references, e):
    for kind, unit in (("local", unit_local()), ("global", unit_global())):
        res = solve(times(unit, e), "dual", "ipm", SolveOptions(tol=1e-6))   # where it stalls (its docstring)
        assert res.status == "solved", (kind, res.message)
        assert distance(np.ldexp(res.nu, -e), references[kind, "dual", "clarabel"].nu) <= 1e-5


def test_the_history_objective_and_a_warm_start_are_in_the_problems_units(references):
    """2^450: the dual objective is about 2^900, still a double; the history's last objective is the
    returned point's, and a warm start at the solution (in the problem's units) ends at once."""
    e = 450
    p = times(unit_local(), e)
    res = solve(p, "ncp", "newton", SolveOptions(tol=1e-10, keep_history=True))
    assert res.status == "solved"
    last = res.history["objective"].iloc[-1]
    assert math.isfinite(last) and last == pytest.approx(res.metrics["dual_objective"], rel=1e-12)
    assert res.history["judged_error"].iloc[-1] == pytest.approx(res.metrics["siconos_error"], rel=1e-9)
    star = np.ldexp(references["local", "dual-fixed-point", "clarabel"].nu, e)
    warm = solve(p, "ncp", "newton", SolveOptions(tol=1e-8, warm_start=star))
    assert warm.status == "solved" and warm.iterations <= 1
