"""Loops over contacts on numba's thread pool whose results do not depend on the thread count.

Element-wise loops (a projection per contact, a row of a sparse product, an update of every entry)
give every entry by the same arithmetic whichever thread computes it, so they run in parallel as they
are. A reduction (a dot product, a norm) is summed over fixed blocks of :data:`BLOCK` entries - each
block in index order - and the block sums are added in block order: the same additions in the same
order for 1 thread or 64, so the sums, and every iterate built from them, are bit-identical for any
thread count (workbench.threads; tests/test_blocks.py). The blocks are the same when the loop runs
serially: below :data:`PARALLEL_MIN` entries (a problem of a few thousand contacts) the loop stays on the calling thread - the pool's start-up of several microseconds would cost
a solve of a few contacts more than its arithmetic - and sums the same blocks in the same order.

Each kernel is written once as a function of one block (entries [lo, hi)); ``*_parallel`` runs the
blocks under ``prange``, the plain one runs them in a loop (or whole, when element-wise).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange
from numba.np.ufunc.parallel import _launch_threads

# The thread pool must exist before a cached kernel that uses it is loaded from the on-disk cache:
# otherwise LLVM cannot resolve the pool's scheduling symbols (allocate_sched) and the process aborts.
# Compiling a parallel kernel starts the pool, loading one from the cache does not (numba 0.6x).
_launch_threads()

__all__ = ["BLOCK", "PARALLEL_MIN", "threaded", "n_blocks", "csr_matvec", "dot", "sum_squares", "norm"]

#: entries per block of a reduction (a multiple of 2 and 3: whole contacts of d = 2 or 3); fixed, so that
#: the sums do not depend on the thread count
BLOCK = 3072
#: below this many entries (or rows) a loop runs serially (module docstring)
PARALLEL_MIN = 4 * BLOCK


@njit(cache=True)
def threaded(n):
    """Whether a loop over ``n`` entries goes to the thread pool (with one thread it runs there on the
    calling thread; numba.get_num_threads() is not read here: a compiled function reading it cannot
    be cached on disk)."""
    return n >= PARALLEL_MIN


@njit(cache=True)
def n_blocks(n):
    return (n + BLOCK - 1) // BLOCK


@njit(cache=True)
def _rows(indptr, indices, data, x, out, lo, hi):
    for i in range(lo, hi):
        acc = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            acc += data[jj] * x[indices[jj]]
        out[i] = acc


@njit(cache=True, parallel=True)
def _csr_matvec_parallel(indptr, indices, data, x, out):
    n = out.shape[0]
    for b in prange(n_blocks(n)):
        _rows(indptr, indices, data, x, out, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True)
def csr_matvec(indptr, indices, data, x, out):
    """out = A x for A in CSR form, row by row (the order of scipy's own CSR product, so the sums are
    the same), compiled: scipy's ``A @ x`` spends about 5 microseconds dispatching before it
    multiplies, which a solve of a few contacts pays several times per iteration. Rows in parallel
    above PARALLEL_MIN rows; each row's sum is the same either way."""
    if threaded(out.shape[0]):
        _csr_matvec_parallel(indptr, indices, data, x, out)
    else:
        _rows(indptr, indices, data, x, out, 0, out.shape[0])


@njit(cache=True)
def _dot_block(x, y, lo, hi):
    acc = 0.0
    for k in range(lo, hi):
        acc += x[k] * y[k]
    return acc


@njit(cache=True, parallel=True)
def _dot_parallel(x, y, part):
    n = x.shape[0]
    for b in prange(part.shape[0]):
        part[b] = _dot_block(x, y, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True)
def dot(x, y):
    """x . y summed by blocks (module docstring): the same number for any thread count."""
    n = x.shape[0]
    nb = n_blocks(n)
    if threaded(n):
        part = np.empty(nb)
        _dot_parallel(x, y, part)
        acc = 0.0
        for b in range(nb):
            acc += part[b]
        return acc
    acc = 0.0
    for b in range(nb):
        acc += _dot_block(x, y, b * BLOCK, min(n, (b + 1) * BLOCK))
    return acc


@njit(cache=True)
def sum_squares(x):
    """x . x by blocks (:func:`dot`)."""
    return dot(x, x)


@njit(cache=True, parallel=True)
def _max_abs_parallel(x, part):
    n = x.shape[0]
    for b in prange(part.shape[0]):
        top = 0.0
        for k in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            top = max(top, abs(x[k]))
        part[b] = top


@njit(cache=True)
def _max_abs(x):
    n = x.shape[0]
    if threaded(n):
        part = np.empty(n_blocks(n))
        _max_abs_parallel(x, part)
        return part.max() if part.shape[0] else 0.0
    top = 0.0
    for k in range(n):
        top = max(top, abs(x[k]))
    return top


@njit(cache=True)
def _scaled_squares(x, scale, lo, hi):
    acc = 0.0
    for k in range(lo, hi):
        acc += (x[k] / scale) ** 2
    return acc


@njit(cache=True, parallel=True)
def _scaled_squares_parallel(x, scale, part):
    n = x.shape[0]
    for b in prange(part.shape[0]):
        part[b] = _scaled_squares(x, scale, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True)
def norm(x):
    """||x||_2, scaled by max |x_k| so that it neither overflows nor underflows; by blocks."""
    top = _max_abs(x)
    if not top > 0 or top == np.inf:
        return top
    n = x.shape[0]
    acc = 0.0
    if threaded(n):
        part = np.empty(n_blocks(n))
        _scaled_squares_parallel(x, top, part)
        for b in range(part.shape[0]):
            acc += part[b]
    else:
        for b in range(n_blocks(n)):
            acc += _scaled_squares(x, top, b * BLOCK, min(n, (b + 1) * BLOCK))
    return top * math.sqrt(acc)
