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
blocks under ``prange``, the plain one runs them in a loop (or whole, when element-wise). The two
drivers the other modules share are written once here and specialised per kernel:
:func:`over_contacts` (an element-wise loop over contacts, blocks of :data:`CONTACT_BLOCK` contacts)
and :func:`three_sums` (three reductions in one pass, added block by block).

The drivers and the reductions are inlined into their callers by numba (``inline="always"``): a
compiled function that contains a call to a parallel kernel, even on a branch not taken, is not
inlined by the compiler, and each call of it costs tens of nanoseconds of call and reference counting,
which a solve of a few contacts pays several times per iteration (docs/solvers-performance.md).
"""

from __future__ import annotations

import math
import types

import numpy as np
from numba import njit, prange, uint64
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.ufunc.parallel import _launch_threads

# The thread pool must exist before a cached kernel that uses it is loaded from the on-disk cache:
# otherwise LLVM cannot resolve the pool's scheduling symbols (allocate_sched) and the process aborts.
# Compiling a parallel kernel starts the pool, loading one from the cache does not (numba 0.6x).
try:
    _launch_threads()
except ValueError as _exc:      # NUMBA_THREADING_LAYER names a layer numba does not know or cannot load (tbb)
    import os

    from workbench.errors import InputError, printable
    raise InputError(f"NUMBA_THREADING_LAYER={printable(os.environ.get('NUMBA_THREADING_LAYER', ''))!r}: numba "
                     f"cannot start that threading layer ({printable(str(_exc).splitlines()[0])}); unset it, or name "
                     "an available one (default, safe, threadsafe, forksafe, omp, workqueue)") from None

__all__ = ["BLOCK", "CONTACT_BLOCK", "PARALLEL_MIN", "threaded", "n_blocks", "over_contacts", "three_sums",
           "csr_rows", "csr_matvec", "dot", "sum_squares", "norm", "max_abs", "borrowed"]

#: entries per block of a reduction (a multiple of 2 and 3: whole contacts of d = 2 or 3); fixed, so that
#: the sums do not depend on the thread count
BLOCK = 3072
#: below this many entries (or rows) a loop runs serially (module docstring)
PARALLEL_MIN = 4 * BLOCK
#: contacts per block of a loop over contacts (a block of entries when d = 3)
CONTACT_BLOCK = BLOCK // 3


@intrinsic
def borrowed(typingctx, array):
    """A view of ``array`` (same data, shape and strides) that holds no reference to its owner: its
    meminfo and parent are null, so numba's runtime neither counts references to it nor to the views
    taken of it.

    Numba counts a reference (an atomic add, then an atomic subtract) for each array argument of a
    compiled call that it does not inline, and for each view it makes; a loop over a few contacts that
    calls its helpers (the local solve, the stopping measure) several times per iteration spent more
    in those atomics than in its arithmetic (docs/solvers-performance.md). A compiled entry point
    borrows its arrays once and hands the borrowed views on.

    Borrow only the calling function's own arguments, which its caller holds for the whole call (an
    array made inside a function may be freed after its last use by name, while a borrowed view of it
    is still in use: such scratch is made by a caller and handed in), and never return a borrowed
    view or store it."""
    def codegen(context, builder, signature, args):
        view = cgutils.create_struct_proxy(signature.return_type)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()
    return array(array), codegen


@njit(cache=True)
def threaded(n):
    """Whether a loop over ``n`` entries goes to the thread pool (with one thread it runs there on the
    calling thread; numba.get_num_threads() is not read here: a compiled function reading it cannot
    be cached on disk)."""
    return n >= PARALLEL_MIN


@njit(cache=True)
def n_blocks(n):
    return (n + BLOCK - 1) // BLOCK


def _specialise(template, kernel, **names):
    """A copy of the plain function ``template`` in which the global ``kernel`` (and each of ``names``)
    is the given compiled function, compiled with numba like any kernel.

    numba does not cache a compiled function that takes another one as an argument (the argument's
    type differs from process to process: numba issues #2065 and #9609), so each kernel gets its own
    copy of the one driver written here. The copy is named after the kernel and filed under the
    kernel's source file, where numba keeps its cache: editing that file recompiles it, as it does the
    kernel."""
    name = f"{kernel.__name__}_{template.__name__.lstrip('_')}"
    code = template.__code__.replace(co_name=name, co_qualname=name,
                                     co_filename=kernel.py_func.__code__.co_filename)
    return types.FunctionType(code, {**template.__globals__, "kernel": kernel, **names}, name)


def _contacts_parallel(n_c, d, args):      # a template of _specialise: ``kernel`` is its global
    for b in prange((n_c + CONTACT_BLOCK - 1) // CONTACT_BLOCK):
        kernel(b * CONTACT_BLOCK, min(n_c, (b + 1) * CONTACT_BLOCK), d, args)


def _over_contacts(n, n_c, d, args):       # a template of _specialise: ``kernel``, ``parallel``
    if threaded(n):
        if d == 3:
            parallel(n_c, 3, args)
        else:
            parallel(n_c, d, args)
    elif d == 3:
        kernel(0, n_c, 3, args)
    else:
        kernel(0, n_c, d, args)


def over_contacts(kernel):
    """The compiled loop ``run(n, n_c, d, args)`` over the contacts 0..n_c-1 (n entries in all, joints
    included) of ``kernel(lo, hi, d, args)``, a compiled loop over the contacts [lo, hi) (entries
    d lo .. d hi - 1) that computes each contact from the arrays in the tuple ``args``: in blocks of
    :data:`CONTACT_BLOCK` contacts under ``prange`` when threaded(n), else in one call on the calling
    thread; each contact is computed by the same arithmetic either way. d = 3 is passed on as a
    constant, so that the compiler unrolls the kernel's loops over components (about twice as fast as
    with d known at run time): that is why ``args`` goes to the kernel as one tuple (spread into the
    call, it would turn the constant 3 into a variable). The serial driver is inlined into its caller:
    a solve of a few contacts calls it several times per iteration."""
    parallel = njit(cache=True, parallel=True)(_specialise(_contacts_parallel, kernel))
    return njit(cache=True, inline="always")(_specialise(_over_contacts, kernel, parallel=parallel))


def _three_sums_parallel(n, args, part):   # a template of _specialise: ``kernel`` is its global
    for b in prange(part.shape[0]):
        part[b, 0], part[b, 1], part[b, 2] = kernel(b * BLOCK, min(n, (b + 1) * BLOCK), *args)


def _three_sums(n, args):                  # a template of _specialise: ``kernel``, ``parallel``
    first = second = third = 0.0
    if threaded(n):
        part = np.empty((n_blocks(n), 3))
        parallel(n, args, part)
        for b in range(part.shape[0]):
            first += part[b, 0]
            second += part[b, 1]
            third += part[b, 2]
        return first, second, third
    for b in range(n_blocks(n)):           # the same block sums added in the same order, without an array
        x, y, z = kernel(b * BLOCK, min(n, (b + 1) * BLOCK), *args)
        first += x
        second += y
        third += z
    return first, second, third


def three_sums(kernel):
    """The compiled reduction ``run(n, args)`` of ``kernel(lo, hi, *args)``, a compiled function that
    returns three sums over the entries [lo, hi), over the entries 0..n-1: the sums of the blocks of
    :data:`BLOCK` entries (under ``prange`` when threaded(n)) added in block order, three independent
    chains of additions in one pass; the same three numbers for any thread count."""
    parallel = njit(cache=True, parallel=True)(_specialise(_three_sums_parallel, kernel))
    return njit(cache=True, inline="always")(_specialise(_three_sums, kernel, parallel=parallel))


@njit(cache=True, inline="always")
def _row_tail(indices, data, x, acc, start, end):
    """acc plus data[jj] x[indices[jj]] for jj in [start, end) (unsigned positions), left to right."""
    for k in range(start, end):
        jj = uint64(k)
        acc += data[jj] * x[uint64(indices[jj])]
    return acc


@njit(cache=True)
def csr_rows(indptr, indices, data, x, out, lo, hi):
    """out[i] = sum_jj data[jj] x[indices[jj]] for the rows [lo, hi), each sum left to right in the
    stored order (scipy's): one product and one addition at a time, the same roundings as scipy's CSR
    product (numba compiles without fast-math: no contraction into fused multiply-adds).

    Two rows advance together over their common length, then each finishes alone: two independent
    chains of additions, where one row's chain (an addition's latency per entry) bounds the loop. The
    positions and the column indices are unsigned integers: numba indexes with a signed integer by
    first testing it for a negative value (Python's wraparound), two tests per entry that cost more
    than the entry's arithmetic. The indices are a checked CSR matrix's (non-negative; a problem's
    matrices are checked on construction, workbench.problem). docs/solvers-performance.md (the CPU
    against its bound)."""
    i = lo
    while i + 1 < hi:
        p0, p1, p2 = uint64(indptr[i]), uint64(indptr[i + 1]), uint64(indptr[i + 2])
        m = min(p1 - p0, p2 - p1)
        s0 = s1 = 0.0
        for k in range(m):
            a, b = p0 + uint64(k), p1 + uint64(k)
            s0 += data[a] * x[uint64(indices[a])]
            s1 += data[b] * x[uint64(indices[b])]
        out[i] = _row_tail(indices, data, x, s0, p0 + m, p1)
        out[i + 1] = _row_tail(indices, data, x, s1, p1 + m, p2)
        i += 2
    if i < hi:
        out[i] = _row_tail(indices, data, x, 0.0, uint64(indptr[i]), uint64(indptr[i + 1]))


@njit(cache=True, parallel=True)
def _csr_matvec_parallel(indptr, indices, data, x, out):
    n = out.shape[0]
    for b in prange(n_blocks(n)):
        csr_rows(indptr, indices, data, x, out, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True, inline="always")
def csr_matvec(indptr, indices, data, x, out):
    """out = A x for A in CSR form, row by row (the order of scipy's own CSR product, so the sums are
    the same), compiled: scipy's ``A @ x`` spends about 5 microseconds dispatching before it
    multiplies, which a solve of a few contacts pays several times per iteration. Rows in parallel
    above PARALLEL_MIN rows; each row's sum is the same either way."""
    if threaded(out.shape[0]):
        _csr_matvec_parallel(indptr, indices, data, x, out)
    else:
        csr_rows(indptr, indices, data, x, out, 0, out.shape[0])


@njit(cache=True)
def _block_sum(x, y, scale, lo, hi):
    """sum_k x_k y_k over [lo, hi), or with ``scale`` (None: resolved when compiling) sum_k (x_k / scale)^2."""
    acc = 0.0
    for k in range(uint64(lo), uint64(hi)):    # unsigned: no wraparound test per entry (csr_rows)
        if scale is None:
            acc += x[k] * y[k]
        else:
            acc += (x[k] / scale) ** 2
    return acc


@njit(cache=True, parallel=True)
def _block_sums_parallel(x, y, scale, part):
    n = x.shape[0]
    for b in prange(part.shape[0]):
        part[b] = _block_sum(x, y, scale, b * BLOCK, min(n, (b + 1) * BLOCK))


@njit(cache=True, inline="always")
def _sum_by_blocks(x, y, scale):
    """The block sums of :func:`_block_sum` over all of x, added in block order (module docstring)."""
    n = x.shape[0]
    nb = n_blocks(n)
    if nb <= 1:             # one block: its sum as it is (0.0 + s is s; the loop below, without its calls)
        return _block_sum(x, y, scale, 0, n)
    acc = 0.0
    if threaded(n):
        part = np.empty(nb)
        _block_sums_parallel(x, y, scale, part)
        for b in range(nb):
            acc += part[b]
        return acc
    for b in range(nb):
        acc += _block_sum(x, y, scale, b * BLOCK, min(n, (b + 1) * BLOCK))
    return acc


@njit(cache=True, inline="always")
def dot(x, y):
    """x . y summed by blocks (module docstring): the same number for any thread count."""
    return _sum_by_blocks(x, y, None)


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def max_abs(x):
    n = x.shape[0]
    if threaded(n):
        part = np.empty(n_blocks(n))
        _max_abs_parallel(x, part)
        return part.max() if part.shape[0] else 0.0
    top = 0.0
    for k in range(n):
        top = max(top, abs(x[k]))
    return top


@njit(cache=True, inline="always")
def norm(x):
    """||x||_2, scaled by max |x_k| so that it neither overflows nor underflows; by blocks."""
    top = max_abs(x)
    if not top > 0 or top == np.inf:
        return top
    return top * math.sqrt(_sum_by_blocks(x, x, top))
