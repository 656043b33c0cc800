"""Issue 45, class 1: judging that cannot underflow or overflow. "Solved" means the same at any scale
of W, q, mu and the masses (1e-300 ... 1e300): the judge reads every measure on the scaled problem
(workbench.metrics.scaled_measures), refuses a point its measures contradict each other about, and
calls a point whose scaled measures cannot be formed (inf, nan, mu eps >= 1) "inaccurate" with the
reason. Variants: the judge alone on points known right or wrong at every scale; every solver on
small problems at random scales (hypothesis), each "solved" checked against the unscaled problem;
the two reproducers of the issue."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from test_contract import SOLVER_NAMES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import metrics
from workbench.judging import finalize
from workbench.method import formulations_for, solve
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions
from workbench.solvers.base import SolveResult

SCALES = [10.0 ** k for k in (-300, -200, -100, -30, -5, 0, 5, 30, 100, 200, 300)]


def approaching(n=3, *, seed=1, w=1.0, q=1.0, mu=0.5) -> TimeStepProblem:
    """A local problem, W symmetric positive definite, every contact approaching (q_n < 0)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3 * n, 3 * n))
    W = np.einsum("ik,jk->ij", A, A) + 3 * n * np.eye(3 * n)   # not BLAS: the same bits under every kernel
    qq = rng.normal(size=3 * n)
    qq[::3] = -np.abs(qq[::3]) - 0.5
    return TimeStepProblem(W=sp.csr_matrix(W * w), q=qq * q, mu=np.full(n, mu), d=3, name="approaching")


def global_with_masses(n=3, *, seed=2, mass=1.0, mu=0.5) -> TimeStepProblem:
    """A global problem of 2 bodies whose masses (and momenta) are scaled by ``mass``: N scales by
    1/mass, r is unchanged, the impulses scale by mass."""
    rng = np.random.default_rng(seed)
    D = sp.csr_matrix(rng.normal(size=(12, 3 * n)))
    m = rng.uniform(0.5, 2.0, 12)
    v = rng.normal(size=12)
    b = np.zeros(3 * n)
    b[::3] = -np.abs(D.T @ v)[::3] - 1.0       # approaching: u_n(0) = D^T v + b < 0
    return TimeStepProblem(M=sp.diags(m * mass), D=D, k=m * mass * v, b=b, mu=np.full(n, mu), d=3, h=0.01,
                           name="masses")


def judge(problem: TimeStepProblem, formulation: str, nu: np.ndarray, tol: float = 1e-6) -> SolveResult:
    """finalize on ``nu`` as the returned point of ``formulation``'s model (the judge alone: the
    model's data scales play no part in judging)."""
    model = SimpleNamespace(problem=problem, relaxed=formulation == "dual", own_metrics=None,
                            judged_by="relaxed_error" if formulation == "dual" else "siconos_error",
                            objective=lambda nu, v: 0.0)
    return finalize(SolveResult(solver="given", formulation=formulation, status="", nu=np.array(nu, dtype=float)),
                    model, SolveOptions(tol=tol))


@pytest.fixture(scope="module")
def base_solutions():
    """The exact (ncp/newton) and relaxed (dual/clarabel) solutions of the unscaled problem."""
    p = approaching()
    out = {}
    for formulation, solver in (("ncp", "newton"), ("dual", "clarabel")):
        res = solve(p, formulation, solver, SolveOptions(tol=1e-7))
        assert res.status == "solved"
        out[formulation] = res.nu
    return out


@pytest.mark.parametrize("formulation", ["ncp", "dual"])
@pytest.mark.parametrize("w", SCALES)
@pytest.mark.parametrize("q", [1e-300, 1.0, 1e300])
def test_the_judge_gives_the_same_status_at_every_scale(base_solutions, formulation, w, q):
    """The solution, twice it, half of it and 0, scaled to the problem W w, q q (impulses x q / w):
    the status at scale 1 (solved for the solution only) is the status at every scale."""
    star = base_solutions[formulation]
    base = approaching()
    scaled = approaching(w=w, q=q)
    for factor in (1.0, 2.0, 0.5, 0.0):
        want = judge(base, formulation, factor * star, tol=1e-7).status
        assert want == ("solved" if factor == 1.0 else "inaccurate")
        with np.errstate(all="ignore"):
            point = factor * star * (q / w)
        if not np.isfinite(point).all() or (point == 0).all() != (factor == 0):
            continue   # the scaled solution itself is out of floating point (q / w = 1e600)
        got = judge(scaled, formulation, point, tol=1e-7)
        assert got.status == want, (factor, got.metrics, got.message)


def test_reproducer_mu_1e300_ncp_newton_is_not_solved():
    """Issue 45: mu = 1e300, every contact approaching; the exact formulation used to return 0 with
    judged error 0.0 (relaxed error 1.0 beside it). Now: inaccurate, because the cone is a half-space in
    floating point, and the reason is given."""
    res = solve(approaching(6, mu=1e300), "ncp", "newton", SolveOptions())
    assert res.status != "solved"
    assert "half-space in floating point" in res.message and "\n" not in res.message
    # and by every mu at or above 1/eps, never at a mu below it that the scaled measures can judge
    for mu in (metrics.HALF_SPACE_MU, 1e20, 1e300, np.finfo(float).max):
        assert judge(approaching(mu=mu), "ncp", np.zeros(9)).status == "inaccurate"
    assert judge(approaching(mu=1e15), "ncp", np.zeros(9)).status == "inaccurate"   # q_n < 0: 0 is wrong


def test_reproducer_w_1e300_dual_clarabel_is_judged_on_the_scaled_problem(base_solutions):
    """Issue 45: W x 1e300 with dual/clarabel. Whatever point comes back, solved means the scaled
    relaxed error is within tol; the plain error (impulses of 1e-300 beside velocities of 1) cannot
    tell, and twice the solution, whose plain error underflows to about 0, is refused."""
    p = approaching(6, w=1e300)
    res = solve(p, "dual", "clarabel", SolveOptions())
    assert res.status in ("solved", "inaccurate")
    if res.status == "solved":
        assert res.metrics["scaled_relaxed_error"] <= 1e-6
        base = approaching(6)
        assert metrics.evaluate(base, res.nu * 1e300)["relaxed_error"] <= 1e-4
    star = solve(approaching(6), "dual", "clarabel", SolveOptions(tol=1e-9)).nu
    wrong = judge(p, "dual", 2 * star * 1e-300)
    assert wrong.metrics["relaxed_error"] < 1e-6          # the plain measure is fooled ...
    assert wrong.status == "inaccurate"                   # ... the judge is not
    assert "scaled_relaxed_error" in wrong.message and "\n" not in wrong.message


def test_measures_that_cannot_be_formed_are_never_solved():
    p = approaching()
    assert judge(p, "dual", np.full(9, 1e308)).status == "inaccurate"        # u = W nu + q overflows
    light = global_with_masses(mass=1e-308)      # N = D^T M^-1 D overflows
    with np.errstate(all="ignore"):
        res = judge(light, "dual", np.zeros(9))
    assert res.status == "inaccurate" and "cannot be formed" in res.message


#: how much further a scaled measure may be on the unscaled problem than on the scaled one: the two
#: problems' balanced units (powers of two from N's diagonal, metrics.scaled_measures) each round the
#: exact ratio of their units by a factor of up to sqrt 2, so they differ per contact by t in [1/2, 2],
#: which changes a normalised error by at most max(t, 1/t)^2 (the units factor's own bound)
UNITS_REROUNDED = 4.0

EXPONENTS = st.sampled_from([-300, -150, -30, 0, 30, 150, 300])


@pytest.mark.parametrize("solver", SOLVER_NAMES)
@settings(max_examples=4, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(w=EXPONENTS, q=EXPONENTS, mu=st.sampled_from([0.0, 1e-300, 0.3, 1e10, 1e300]), mass=EXPONENTS,
       kind=st.sampled_from(["local", "global"]))
def test_every_solver_at_every_scale_is_solved_only_at_a_solution(solver, w, q, mu, mass, kind):
    """Any scale of W, q, mu and the masses: a "solved" point, mapped back to the unscaled problem, is
    a solution there to the judge's contract, and mu eps >= 1 is never solved. No exception escapes.

    The contract (workbench.judging.contradiction, rules 2 and 3): each scaled measure of a solved
    point is within min(tol kappa bound, sqrt(tol)), kappa the scaled problem's units factor, bound 1
    (1 + mu for an exact point's normal violation). Read on the unscaled problem it holds within
    :data:`UNITS_REROUNDED`. A point solved in units far from the problem's own (kappa large) is so
    within sqrt(tol) only: half the digits asked may go to the choice of units
    (judging.unit_free_floor), and where a run lands inside that band is round-off (the BLAS's)."""
    formulation = formulations_for(solver)[0].name
    if kind == "local":
        problem, base, back = approaching(w=10.0 ** w, q=10.0 ** q, mu=mu), approaching(mu=mu), (w - q)
    else:
        problem, base, back = global_with_masses(mass=10.0 ** mass, mu=mu), global_with_masses(mu=mu), -mass
    tol = 1e-6
    try:
        res = solve(problem, formulation, solver, SolveOptions(tol=tol, time_limit=20))
    except Exception as e:   # noqa: BLE001 - only the workbench's one-line refusals may escape
        from workbench.errors import InputError
        assert isinstance(e, InputError), repr(e)
        return
    if res.status != "solved":
        return
    assert mu < metrics.HALF_SPACE_MU
    if abs(back) > 300:
        return    # the solution of the scaled problem is 10^back times one of the unscaled: not a float
    point = res.nu * 10.0 ** back
    assert np.isfinite(point).all()
    if res.judged_name not in ("siconos_error", "relaxed_error"):
        # a model judged by its own measure (the LCP model on its pyramid): rule 1 only, so the plain
        # normal velocity of the unscaled problem is what is checked
        un = base.contacts(base.relative_velocity(point))[:, 0]
        assert un.min() >= -1e-4 * max(1.0, np.linalg.norm(base.r)), (un, res.metrics)
        return
    scaled, reason = metrics.scaled_measures(base, point)
    assert reason is None, reason
    exact = res.judged_name == "siconos_error"
    allowed = min(tol * res.metrics["units_factor"], tol ** 0.5)   # sqrt(tol): judging.unit_free_floor
    for name, bound in ((f"scaled_{res.judged_name}", 1.0), ("scaled_cone_violation", 1.0),
                        ("scaled_normal_violation", 1.0 + mu if exact else 1.0)):
        assert scaled[name] <= UNITS_REROUNDED * allowed * bound, (name, scaled[name], allowed, res.metrics)


def test_the_refusal_names_its_kind_and_finalize_decides_by_it(monkeypatch):
    """judging.contradiction returns a Refusal (kind, reason); finalize records a refusal of a run
    outside tol only when its kind says the measures cannot be formed - by the kind, not by the words
    of the reason (a reason worded otherwise, or a contradiction quoting those words, decides nothing)."""
    from workbench import judging
    from types import SimpleNamespace as NS

    p = approaching()
    kinds = {}
    for name, problem, nu in (("unformable", approaching(mu=1e300), np.zeros(9)),
                              ("inf", p, np.full(9, 1e308)),
                              ("contradicts", approaching(6, w=1e300), np.ones(18) * 1e-302)):
        res = SolveResult(solver="given", formulation="ncp", status="", nu=nu, metrics={"judged_error": 0.0})
        model = NS(problem=problem, relaxed=False, own_metrics=None, judged_by="siconos_error")
        with np.errstate(all="ignore"):
            kinds[name] = judging.contradiction(problem, res, model, 1e-6)
    assert kinds["unformable"].kind == kinds["inf"].kind == judging.UNFORMABLE
    assert kinds["contradicts"].kind in (judging.CONTRADICTS, judging.UNIT_BOUND)
    for refusal in kinds.values():
        assert isinstance(refusal.reason, str) and "\n" not in refusal.reason

    # the decision follows the kind: an UNFORMABLE refusal worded without the old phrase is recorded on a
    # run far from tol; a CONTRADICTS refusal that quotes the phrase is not (it changed nothing there)
    far = 1e3 * np.ones(9)
    for kind, words, recorded in ((judging.UNFORMABLE, "no scale exists", True),
                                  (judging.CONTRADICTS, "cannot be formed", False)):
        monkeypatch.setattr(judging, "contradiction", lambda *a, k=kind, w=words: judging.Refusal(k, w))
        res = judge(p, "dual", far)
        assert res.status == "inaccurate"
        assert ("judge_refused" in res.info) is recorded and (words in (res.message or "")) is recorded
