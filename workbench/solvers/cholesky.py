"""Sparse Cholesky by CHOLMOD (scikit-sparse, an optional extra; Chen, Davis, Hager and Rajamanickam
2008) for the solvers that factorise a symmetric positive definite matrix (ipm's body-space Schur
complement, admm's W + rho I): the module when it is installed, and the cost of a factorisation counted
from the matrix's pattern alone, before any numeric work, so that a choice made from it (which
factorisation, simplicial or supernodal) is the same on every machine."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["cholmod", "cholesky_flops"]


def cholmod():
    """scikit-sparse's CHOLMOD module, or None when it is not installed."""
    try:
        from sksparse import cholmod as module
    except ImportError:
        return None
    return module


def cholesky_flops(pattern: sp.csc_matrix, order: np.ndarray) -> float:
    """The flops of the Cholesky factorisation of a symmetric matrix of ``pattern`` (CSC, both triangles
    or the upper one) in the ``order`` of its rows and columns: sum_j c_j^2 over the column counts c_j of
    L (:func:`_column_counts`), counted from the pattern alone, without a numeric factorisation."""
    order = np.asarray(order, dtype=np.int64)
    counts = _column_counts(pattern.indptr, pattern.indices, order).astype(float)
    return float(counts @ counts)


@njit(cache=True)
def _column_counts(indptr, indices, order):
    """The column counts of the Cholesky factor L of P A P^T, A a symmetric matrix of pattern
    (indptr, indices) (CSC, n x n, both triangles or the upper one, diagonal included, indices in any
    order) and P the permutation that puts row order[k] of A at k, counted symbolically: the
    elimination tree by Liu's algorithm with path compression, then each row k of L as the union of the
    paths from the entries L_ik (i < k) up the tree to k (row subtrees); O(nnz(L)) time. The permutation
    is applied entry by entry (column k of P A P^T is column order[k] of A, its row j at position
    inverse[j]), so P A P^T is never formed."""
    n = order.shape[0]
    inverse = np.empty(n, dtype=np.int64)
    for k in range(n):
        inverse[order[k]] = k
    parent = -np.ones(n, dtype=np.int64)
    ancestor = -np.ones(n, dtype=np.int64)
    for k in range(n):
        column = order[k]
        for p in range(indptr[column], indptr[column + 1]):
            i = inverse[indices[p]]
            while i != -1 and i < k:
                following = ancestor[i]
                ancestor[i] = k
                if following == -1:
                    parent[i] = k
                i = following
    counts = np.ones(n, dtype=np.int64)
    mark = -np.ones(n, dtype=np.int64)
    for k in range(n):
        mark[k] = k
        column = order[k]
        for p in range(indptr[column], indptr[column + 1]):
            i = inverse[indices[p]]
            while i < k and mark[i] != k:      # L_ki is an entry: i is on a path to k
                counts[i] += 1
                mark[i] = k
                i = parent[i]
    return counts
