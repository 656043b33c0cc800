"""The lean path of the first-order solvers (IterativeSolver._lean_solve), the dense Newton run built in
one compiled call, the compiled symmetric part of a small global problem's condensation, and the build
time every iterative result carries.

Oracle: the general path itself (IterativeRun, its Recorder and the state built in Python), run on the
same problem: the lean path must give the same record (iterates, counts, measure, status) to the last
bit; and, for the rho fallback and the condensation, an independent solver or numpy's arithmetic.
"""

import numpy as np
import pytest

from factories import corpus, random_problem
from workbench import problem as problem_module
from workbench.method import solve
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions, StopCause
from workbench.solvers.iterative import IterativeSolver

LEAN = ["apgd", "bb", "pgs"]
OPTIONS = [dict(tol=1e-8), dict(tol=1e-8, max_iter=7), dict(tol=1e-13, max_iter=2000)]


def _comparable(result) -> dict:
    record = result.record()
    for key in ("build_seconds", "solve_seconds"):
        record.pop(key)
    for key in ("setup_seconds", "lean"):
        record["info"].pop(key, None)
    return record


def _general(monkeypatch, problem, solver, options):
    with monkeypatch.context() as m:
        m.setattr(IterativeSolver, "lean_fits", lambda self, model, options: False)
        return solve(problem, "anti-relaxed", solver, options)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else (a[k] == b[k] or a[k] != a[k] and b[k] != b[k])
        for k in a)


@pytest.mark.parametrize("solver", LEAN)
@pytest.mark.parametrize("name", ["packing-local", "box-on-plane", "ball-2d", "random-2d", "dense-mass", "nonsymmetric"])
def test_a_lean_run_is_the_general_run(monkeypatch, name, solver):
    """Cold, inner anti-relaxed, without a history, on a local problem (or a small global one, solved
    on its condensed local problem): the lean path, and the same record as the general path."""
    problem = corpus()[name]
    for given in OPTIONS:
        options = SolveOptions(keep_history=False, **given)
        lean = solve(problem, "anti-relaxed", solver, options)
        assert "lean" in lean.info, (name, given)
        general = _general(monkeypatch, problem, solver, options)
        assert "lean" not in general.info
        assert _same(_comparable(lean), _comparable(general)), (name, given)


@pytest.mark.parametrize("solver", LEAN)
def test_a_lean_run_takes_the_fallback_start_when_line_6_gives_no_ratio(monkeypatch, solver):
    """N (x0 - 1) = 0 at x0 = 0 (a W whose rows sum to zero): Melanz et al. 2015 line 6 gives no ratio,
    the run starts from the mean diagonal (NEEDS_L), in the lean path as in the general one."""
    W = np.array([[2.0, -1.0, -1.0], [-1.0, 2.0, -1.0], [-1.0, -1.0, 2.0]])
    problem = TimeStepProblem(W=W, q=np.array([-1.0, 0.3, 0.1]), mu=[0.5], d=3)
    options = SolveOptions(tol=1e-10, keep_history=False)
    lean = solve(problem, "anti-relaxed", solver, options)
    general = _general(monkeypatch, problem, solver, options)
    assert "lean" in lean.info and lean.status == "solved"
    assert _same(_comparable(lean), _comparable(general))


@pytest.mark.parametrize("solver", LEAN)
def test_a_lean_run_stops_at_its_time_limit_between_chunks(solver):
    """A run longer than one compiled chunk checks the time limit between chunks, as the general path
    does: it stops with TIMEOUT, past the limit by at most about a chunk, and returns its best point."""
    problem = random_problem(n_contacts=400, n_bodies=160, seed=2).as_local()
    result = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-300, time_limit=0.05, keep_history=False))
    assert "lean" in result.info
    assert result.stop == StopCause.TIMEOUT and result.iterations > 0
    assert 0.05 <= result.solve_seconds < 1.0
    assert np.isfinite(result.metrics["siconos_error"])


def test_what_a_lean_run_does_not_take(monkeypatch):
    """A history, a warm start, the outer mode and the relaxed model take the general path."""
    problem = corpus()["packing-local"]
    cold = solve(problem, "anti-relaxed", "bb", SolveOptions(tol=1e-8, keep_history=False))
    for options in (SolveOptions(tol=1e-8, keep_history=True),
                    SolveOptions(tol=1e-8, keep_history=False, warm_start=cold.nu),
                    SolveOptions(tol=1e-8, keep_history=False, params={"anti_relaxation": "outer"})):
        assert "lean" not in solve(problem, "anti-relaxed", "bb", options).info
    assert "lean" not in solve(problem, "dual", "bb", SolveOptions(tol=1e-8, keep_history=False)).info


@pytest.mark.parametrize("solver", ["apgd", "bb", "pgs", "jacobi", "admm"])
def test_every_iterative_result_carries_its_build_time(solver):
    """The formulation's build (and a small global problem's condensation, part of it) is in the
    result's build_seconds, which the benchmarks add to the solve time; it was dropped (0.0) before."""
    problem = corpus()["box-on-plane"]
    result = solve(problem, "anti-relaxed", solver, SolveOptions(tol=1e-8, keep_history=False))
    assert "condensed" in result.info
    assert result.build_seconds > 0


def test_newton_takes_the_fallback_rho_of_a_contact_no_body_moves():
    """A contact whose diagonal block of W is zero (no body moves it) has no d / trace(W_ii): the dense
    run asks for contact_steps's fallback (the mean of the others) and solves the problem; the impulses
    are those of an independent solver (the anti-relaxed BB)."""
    W = np.zeros((6, 6))
    W[:3, :3] = [[2.0, 0.1, 0.0], [0.1, 1.5, 0.2], [0.0, 0.2, 1.0]]
    problem = TimeStepProblem(W=W, q=np.array([-1.0, 0.3, 0.1, 0.5, 0.0, 0.0]), mu=[0.5, 0.5], d=3)
    newton = solve(problem, "ncp", "newton", SolveOptions(tol=1e-10, keep_history=False))
    bb = solve(problem, "anti-relaxed", "bb", SolveOptions(tol=1e-10, keep_history=False))
    assert newton.status == bb.status == "solved"
    np.testing.assert_allclose(newton.nu, bb.nu, atol=1e-8)


def test_newton_refuses_a_warm_start_of_the_wrong_length():
    from workbench.errors import InputError
    problem = corpus()["packing-local"]
    with pytest.raises(InputError, match="warm start has length 2"):
        solve(problem, "ncp", "newton", SolveOptions(warm_start=np.zeros(2)))


def test_the_condensed_matrix_is_numpys_symmetric_part_in_csr():
    """(W + W^T) / 2 of the condensation, its nonzero entries in CSR (rows in order, a zero row kept),
    the same numbers as numpy's; empty arrays when an entry of W or q is not finite."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((6, 6))
    W[4, :] = W[:, 4] = 0.0                          # a contact no body moves: a zero row and column
    q = rng.standard_normal(6)
    indptr, indices, data = problem_module._symmetric_csr(W, q)
    dense = np.zeros((6, 6))
    for i in range(6):
        dense[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
    np.testing.assert_array_equal(dense, (W + W.T) * 0.5)
    assert indptr[5] == indptr[4] and indptr[-1] == 36 - 11
    for bad_W, bad_q in ((W * 1e308 * 10, q), (W, np.where(np.arange(6) == 2, np.nan, q))):
        assert problem_module._symmetric_csr(bad_W, bad_q)[0].shape == (0,)


def test_the_diagonal_condensation_is_the_products_of_the_sparse_path():
    """With a diagonal M (found by a compiled pass over its indices), condensed's W and q are D^T M^-1 D
    and b + D^T M^-1 k: numpy's to round-off on random data, and exact on data whose products are exact
    (integers over powers of two); a matrix with an entry off its diagonal is not diagonal."""
    import scipy.sparse as sp
    p = random_problem(4, 3, seed=9)
    assert p.M_is_diagonal and p.condensable
    D, minv = p.D.toarray(), 1.0 / p.M.diagonal()
    W = D.T @ (D * minv[:, None])
    np.testing.assert_allclose(p.condensed.N.toarray(), (W + W.T) / 2, rtol=1e-14, atol=1e-15 * abs(W).max())
    np.testing.assert_allclose(p.condensed.r, p.b + D.T @ (minv * p.k), rtol=1e-14, atol=1e-15 * abs(p.k).max())
    rng = np.random.default_rng(2)
    D = rng.integers(-3, 4, size=(6, 3)).astype(float)
    exact = TimeStepProblem(M=sp.diags([1.0, 2.0, 4.0, 0.5, 1.0, 8.0]), D=D, k=rng.integers(-5, 6, 6).astype(float),
                            mu=[0.3], d=3)
    minv = 1.0 / exact.M.diagonal()
    np.testing.assert_array_equal(exact.condensed.N.toarray(), D.T @ (D * minv[:, None]))
    np.testing.assert_array_equal(exact.condensed.r, D.T @ (minv * exact.k))
    M = sp.diags([1.0, 2.0, 4.0, 0.5, 1.0, 8.0]).tolil()
    M[0, 1] = M[1, 0] = 0.1
    assert not TimeStepProblem(M=M, D=D, k=exact.k, mu=[0.3], d=3).M_is_diagonal


def test_the_diagonal_condensation_sums_over_the_dofs_in_order():
    """The bits of a diagonal-M condensation are those of one stated order, summed here in plain
    Python: W[a, c] = sum over the dofs i = 0, 1, ... of (D_ia / M_ii) D_ic, symmetrised as (W + W^T) / 2,
    and q_a = b_a + sum_i D_ia (k_i / M_ii); so they depend on no BLAS (numpy's products do)."""
    p = random_problem(5, 4, seed=21)
    assert p.M_is_diagonal and p.condensable
    D, minv, k, b = p.D.toarray(), 1.0 / p.M.diagonal(), p.k, p.b
    n_dof, m = D.shape
    W, q = np.zeros((m, m)), np.zeros(m)
    for a in range(m):
        for i in range(n_dof):
            if D[i, a] != 0:
                q[a] += D[i, a] * (k[i] * minv[i])
                for c in range(m):
                    if D[i, c] != 0:
                        W[a, c] += (D[i, a] * minv[i]) * D[i, c]
    np.testing.assert_array_equal(p.condensed.N.toarray(), (W + W.T) * 0.5)
    np.testing.assert_array_equal(p.condensed.r, b + q)


def test_a_canonical_csr_matrix_is_what_scipys_constructor_makes():
    """problem.canonical_csr, which skips scipy's checks, gives a matrix with the constructor's attributes
    and values, which scipy's own operations take as theirs."""
    import scipy.sparse as sp
    indptr, indices, data = problem_module._symmetric_csr(np.array([[2.0, 1.0], [1.0, 0.0]]), np.ones(2))
    fast = problem_module.canonical_csr(indptr, indices, data, 2)
    made = sp.csr_matrix((data, indices, indptr), shape=(2, 2))
    assert problem_module._CSR_TRUSTED and type(fast) is type(made) and vars(fast).keys() == vars(made).keys()
    assert fast.shape == made.shape and fast.nnz == made.nnz == 3 and fast.has_canonical_format
    np.testing.assert_array_equal((fast @ np.array([1.0, 2.0])), made @ np.array([1.0, 2.0]))
    np.testing.assert_array_equal((fast.T.tocsr() - made).toarray(), np.zeros((2, 2)))
