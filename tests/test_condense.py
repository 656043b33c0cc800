"""Condensed small global problems (workbench.problem.TimeStepProblem.condensed, Method's condensed
path): the same method on the equivalent local problem (W, q) = (D^T M^-1 D, b + D^T M^-1 k) from a
dense Cholesky factor of M, judged on the global problem as before.

Checked: on every global file of the corpus within the thresholds, the condensed and the sparse
global path (thresholds set to 0) give the same status and, at equal iterations, the same impulses,
velocities and metrics to round-off; an analytic one-contact case (a sliding sphere, with a diagonal M
and with the same M in rotated coordinates, which is not diagonal); a singular M, a problem with
joints or beyond the thresholds, and the solvers outside the in-house CCQO/NCP methods are not
condensed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import workbench.problem as problem_module
from workbench.errors import ProblemDataError
from workbench.io import load_problem
from workbench.method import Method
from workbench.metrics import CCP_RESIDUAL_STEP, normalisation
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions

#: the corpus's global files within CONDENSE_MAX_DOF and CONDENSE_MAX_UNKNOWNS
SMALL_GLOBAL = ("siconos/GFC3D_Example0.dat", "siconos/GFC3D_Example00.dat", "siconos/GFC3D_Example00_badly_scaled.dat",
                "siconos/GFC3D_Example0_SBM.dat", "siconos/GFC3D_Example1.dat", "siconos/GFC3D_OneContact.dat",
                "siconos/GFC3D_TwoRods1.dat", "fclib/CubeH8.hdf5", "fclib/LMGC_GlobalFrictionContactProblem00046.hdf5")
#: the in-house methods of the formulations defined on the local problem
METHODS = (("anti-relaxed", "apgd"), ("anti-relaxed", "bb"), ("anti-relaxed", "pgs"), ("anti-relaxed", "jacobi"),
           ("anti-relaxed", "admm"), ("dual", "apgd"), ("ncp", "newton"), ("ncp", "pqn"))
OPTIONS = SolveOptions(tol=1e-8, max_iter=3000, keep_history=False)


def round_off(metric: str, scale: float, nu: np.ndarray) -> float:
    """How far a metric of two solves that differ by round-off may differ: 1e-12 of its unit's scale,
    S = max(||r||, ||nu||, ||u||) (Siconos's normalisation; u = N nu + r carries round-off of order
    eps ||r|| even where u is 0, a sticking contact), S / g_d for eq. 39's residual, ||nu|| S for the
    energies; the errors are relative already."""
    if metric in ("siconos_error", "siconos_error_q", "relaxed_error", "judged_error") or metric.startswith("scaled_"):
        return 1e-12    # relative already; the scaled measures are in balanced units (N's diagonal blocks 1)
    if metric == "ccp_residual":
        return 1e-12 * scale / CCP_RESIDUAL_STEP
    if metric in ("normal_velocity_violation", "cone_violation"):
        return 1e-12 * scale
    return 1e-12 * scale * np.linalg.norm(nu)       # objectives, duality gap, complementarity


def fresh(p: TimeStepProblem) -> TimeStepProblem:
    return TimeStepProblem(M=p.M, D=p.D, k=p.k, b=p.b, mu=p.mu, d=p.d, h=p.h, name=p.name)


def sparse_path(monkeypatch) -> None:
    monkeypatch.setattr(problem_module, "CONDENSE_MAX_DOF", 0)


@pytest.fixture(scope="module")
def small_global(shared_data):
    return {name: load_problem(shared_data / name) for name in SMALL_GLOBAL}


@pytest.mark.parametrize("name", SMALL_GLOBAL)
def test_corpus_files_condensed_agree_with_the_sparse_path(name, small_global, monkeypatch):
    p0 = small_global[name]
    assert p0.is_global and p0.condensable
    for form, slv in METHODS:
        method = Method(form, slv)
        condensed = method.solve(fresh(p0), OPTIONS)
        with monkeypatch.context() as m:
            sparse_path(m)
            p = fresh(p0)
            assert not p.condensable
            sparse = method.solve(p, OPTIONS)
        what = f"{name} {form}/{slv}"
        assert "condensed" in condensed.info and "condensed" not in sparse.info, what
        assert condensed.status == sparse.status, what
        assert condensed.judged_name == sparse.judged_name, what
        scale = np.linalg.norm(sparse.nu)
        if condensed.iterations == sparse.iterations:
            assert np.linalg.norm(condensed.nu - sparse.nu) <= 1e-8 * scale, what
            assert np.allclose(condensed.v, sparse.v, rtol=1e-8, atol=1e-10 * np.abs(sparse.v).max()), what
            p = fresh(p0)
            scale = normalisation(p.norm_r, np.linalg.norm(sparse.nu), np.linalg.norm(p.relative_velocity(sparse.nu)))
            for key, value in sparse.metrics.items():      # every metric, computed on the global problem
                assert condensed.metrics[key] == pytest.approx(value, rel=1e-9, abs=round_off(key, scale, sparse.nu)), \
                    (what, key)
        else:                                              # round-off moved a stopping test: both solved
            assert sparse.status == "solved", what
            assert condensed.metrics["judged_error"] <= OPTIONS.tol, what
            assert np.linalg.norm(condensed.nu - sparse.nu) <= 1e-4 * scale, what
        assert condensed.v is not None and condensed.v.shape == (p0.n_dof,), what


def sliding_sphere(rotate: bool) -> tuple[TimeStepProblem, np.ndarray, np.ndarray]:
    """A unit sphere (mass 1, inertia 0.4, radius 1) sliding at 2 m/s on a plane, h = 0.01 s,
    g = 9.81, mu = 0.2 (workbench.method's warm-up problem): it keeps sliding, so gamma_n = g h,
    gamma_t1 = -mu g h (against the slip), gamma_t2 = 0, and v = M^-1 (k + D gamma). With ``rotate``
    the dofs are expressed in a rotated basis Q (M' = Q^T M Q, not diagonal; v' = Q^T v)."""
    h, g, mu = 0.01, 9.81, 0.2
    mass = np.array([1.0, 1.0, 1.0, 0.4, 0.4, 0.4])
    D = np.zeros((6, 3))
    D[2, 0] = D[0, 1] = D[4, 1] = D[1, 2] = 1.0
    D[3, 2] = -1.0
    k = mass * np.array([2.0, 0, 0, 0, 0, 0]) + h * np.array([0, 0, -g, 0, 0, 0])
    gamma = np.array([g * h, -mu * g * h, 0.0])
    v = (k + D @ gamma) / mass
    M = np.diag(mass)
    if rotate:
        Q, _ = np.linalg.qr(np.random.default_rng(7).normal(size=(6, 6)))
        M, D, k, v = Q.T @ M @ Q, Q.T @ D, Q.T @ k, Q.T @ v
    problem = TimeStepProblem(M=sp.csr_matrix(M), D=D, k=k, mu=[mu], d=3, h=h, name="sliding sphere")
    return problem, gamma, v


@pytest.mark.parametrize("rotate", [False, True])
@pytest.mark.parametrize("form, slv", [("anti-relaxed", "apgd"), ("anti-relaxed", "pgs"), ("ncp", "newton")])
def test_analytic_sliding_sphere_condensed(rotate, form, slv):
    problem, gamma, v = sliding_sphere(rotate)
    assert problem.condensable and problem.M_is_diagonal != rotate
    res = Method(form, slv).solve(problem, SolveOptions(tol=1e-10, keep_history=False))
    assert "condensed" in res.info and res.status == "solved"
    assert np.allclose(res.nu, gamma, atol=1e-8) and np.allclose(res.v, v, atol=1e-8)
    assert res.metrics["primal_objective"] == pytest.approx(0.5 * v @ problem.M @ v - problem.k @ v, rel=1e-9)


def test_singular_M_is_not_condensed():
    """M = [[1, 1], [1, 1]] (+ a unit dof) is symmetric with a positive diagonal, and singular: no
    Cholesky factor, so the problem keeps the sparse global path, which refuses the singular M."""
    M = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    problem = TimeStepProblem(M=M, D=np.eye(3), k=np.array([0.0, 0.0, -1.0]), mu=[0.3], d=3)
    assert not problem.condensable and problem.condensed is None
    with pytest.raises(ProblemDataError, match="M is singular"):    # bad input, exit 2, as before
        Method("anti-relaxed", "apgd").solve(problem, OPTIONS)


def test_joints_size_and_other_solvers_are_not_condensed(monkeypatch):
    problem, _, _ = sliding_sphere(rotate=True)
    with_joint = TimeStepProblem(M=problem.M, D=problem.D, k=problem.k, mu=problem.mu, d=3,
                                 G=np.eye(6)[:, :1], b_G=np.zeros(1))
    assert not with_joint.condensable
    for form, slv in (("lcp-pyramid", "lemke"), ("dual", "ipm")):  # their own model, a KKT system with M
        res = Method(form, slv).solve(problem, OPTIONS)
        assert res.status == "solved" and "condensed" not in res.info, slv
    monkeypatch.setattr(problem_module, "CONDENSE_MAX_UNKNOWNS", 2)
    assert not sliding_sphere(rotate=True)[0].condensable


def test_a_condensed_diagonal_mass_keeps_exact_entries_exact():
    """Melanz et al. 2015 eq. 46: the planar ball's first step has N = diag(1, 3.5) and r = (-0.0981, 2) exactly
    (M = diag(1, 1, 0.4)); the condensation of a diagonal M applies M^-1 without square roots, so they stay exact
    (with L = sqrt(M) the 3.5 came out as 3.5000000000000004)."""
    from workbench import sources
    p = sources.load("scene:rolling-ball-2d")
    assert p.condensable
    assert p.N.toarray().tolist() == [[1.0, 0.0], [0.0, 3.5]]
    assert [round(float(x), 12) for x in p.r] == [-0.0981, 2.0]


def still_sphere_with_a_free_contact() -> TimeStepProblem:
    """The sliding sphere with a second contact that no dof moves (D's columns zero, so N's block is
    zero): the dense Newton run's step for it comes from contact_steps's fallback (NEEDS_STEPS)."""
    problem, _, _ = sliding_sphere(rotate=False)
    D = np.hstack([problem.D.toarray(), np.zeros((6, 3))])
    return TimeStepProblem(M=problem.M, D=D, k=problem.k, mu=[0.2, 0.5], d=3, h=problem.h, name="two contacts")


@pytest.mark.parametrize("history", [False, True])
def test_newton_condenses_in_its_run_to_the_bits_of_the_local_problem(small_global, history):
    """The dense Newton run condenses a global problem with a diagonal M itself (its compiled call forms
    W and q with workbench.problem's condense_diagonal and symmetric_part): the same iterations and the
    same impulses, to the bit, as the same method on TimeStepProblem.condensed's local problem, cold, warm
    started, capped (later calls of the run: one iteration per call with a history) and with a contact
    no body moves; a non-diagonal M goes through the local problem of its Cholesky factor."""
    method = Method("ncp", "newton")
    cases = [fresh(p) for p in small_global.values()] + [still_sphere_with_a_free_contact()]
    for p in cases:
        for options in (SolveOptions(tol=1e-10, keep_history=history),
                        SolveOptions(tol=1e-10, keep_history=history, max_iter=2),
                        SolveOptions(tol=1e-10, keep_history=history, warm_start=np.full(p.n_unknowns, 1e-3))):
            own = method.solve(fresh(p), options)
            local = method.solve(p.condensed, options)
            how = "a diagonal M, in the dense run's compiled call" if p.M_is_diagonal else "dense Cholesky of M"
            assert how in own.info["condensed"], p.name
            assert own.iterations == local.iterations and own.stop == local.stop, p.name
            assert np.array_equal(own.nu, local.nu), p.name
            if history:
                assert np.array_equal(own.history["error"].to_numpy(), local.history["error"].to_numpy()), p.name


def test_the_condensed_local_problem_sets_every_slot(small_global):
    """TimeStepProblem.condensed makes its local problem through the slot setters (problem._trusted_local):
    every slot is set, the global data None, the local data and the shared fields those of the problem."""
    assert set(problem_module._LOCAL_SLOTS) == set(TimeStepProblem.__slots__) - {"__dict__"}
    p = fresh(small_global["siconos/GFC3D_Example00.dat"])
    local = p.condensed
    assert not local.is_global and local.G is None and local.k is None
    assert local.name == p.name and local.h == p.h and np.array_equal(local.mu, p.mu) and local.d == p.d
    assert np.array_equal(local.N.toarray(), p.N.toarray()) and np.array_equal(local.r, p.r)
    assert not local.r.flags.writeable and not local.N.data.flags.writeable
