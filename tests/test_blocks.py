"""workbench.blocks: the compiled kernels run over contacts on numba's thread pool, and their results do
not depend on the thread count - the project's rule that nothing may change with it. Iterates, iteration
counts and metrics are compared bit for bit between 1 and 2 threads on a problem above the parallel
threshold (skipped where numba's pool has one thread)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from workbench import blocks
from workbench.metrics import evaluate
from workbench.method import Method
from workbench.solvers import SolveOptions
from workbench.sources import load


@numba.njit
def _scale_through_borrowed(A, factor):
    """Scales the strided view A through a borrowed view of it, by rows handed to a helper; returns
    its shape and strides and the sum of the borrowed view's entries afterwards."""
    B = blocks.borrowed(A)
    for i in range(B.shape[0]):
        _scale_row(B[i], factor)
    return B.shape, B.strides, B.sum()


@numba.njit
def _scale_row(row, factor):
    for j in range(row.shape[0]):
        row[j] *= factor


def test_a_borrowed_view_is_the_same_array():
    """workbench.blocks.borrowed: the same data, shape and strides (a strided view of a larger array
    included), so writes through it and its slices land in the owner's memory."""
    owner = np.arange(24.0).reshape(4, 6)
    A = owner[::2, 1::2]                               # not contiguous
    expected = A * 3.0
    shape, strides, total = _scale_through_borrowed(A, 3.0)
    assert shape == A.shape and strides == A.strides
    assert np.array_equal(A, expected) and total == expected.sum()
    assert owner[1, 0] == 6.0 and owner[0, 0] == 0.0     # entries outside the view untouched


def test_kernels_against_numpy():
    rng = np.random.default_rng(3)
    n = 5 * blocks.PARALLEL_MIN + 17                   # whole blocks, a partial one, threaded
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    assert blocks.dot(x, y) == pytest.approx(float(x @ y), rel=1e-12)
    assert blocks.norm(x) == pytest.approx(float(np.linalg.norm(x)), rel=1e-12)
    assert blocks.norm(np.zeros(3)) == 0.0 and blocks.dot(x[:5], y[:5]) == pytest.approx(float(x[:5] @ y[:5]))
    A = sp.csr_matrix((rng.standard_normal(3 * n), (np.repeat(np.arange(n), 3), rng.integers(0, n, 3 * n))),
                      shape=(n, n))
    out = np.empty(n)
    blocks.csr_matvec(A.indptr, A.indices, A.data, x, out)
    assert np.array_equal(out, A @ x)                  # row by row, in scipy's order: the same sums
    # rows of 0 ... 40 entries (the four-at-a-time part of the sums and its remainder), values spread
    # over many magnitudes so that a changed order of additions would change the roundings
    per_row = rng.integers(0, 41, n)
    cols = rng.integers(0, n, per_row.sum())
    B = sp.csr_matrix((rng.standard_normal(cols.shape[0]) * 10.0 ** rng.integers(-8, 9, cols.shape[0]),
                       cols, np.concatenate([[0], np.cumsum(per_row)])), shape=(n, n))
    blocks.csr_matvec(B.indptr, B.indices, B.data, x, out)
    assert np.array_equal(out, B @ x)


@pytest.fixture(scope="module")
def large():
    problem = load("dataset:scaling-02560")          # about 9,000 contacts: above blocks.PARALLEL_MIN entries
    assert problem.n_unknowns > blocks.PARALLEL_MIN
    return problem


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba's pool has one thread here")
@pytest.mark.parametrize("solver", ["apgd", "jacobi", "bb"])
def test_same_iterates_for_any_thread_count(large, solver):
    method = Method("dual", solver)
    before = numba.get_num_threads()
    runs = []
    try:
        for n in (1, 2):
            numba.set_num_threads(n)
            res = method.solve(large, SolveOptions(tol=1e-4, max_iter=40))
            runs.append((res.iterations, res.status, res.nu, evaluate(large, res.nu)))
    finally:
        numba.set_num_threads(before)
    (k1, s1, nu1, m1), (k2, s2, nu2, m2) = runs
    assert (k1, s1) == (k2, s2) and k1 > 0
    assert np.array_equal(nu1, nu2)
    assert m1 == m2
