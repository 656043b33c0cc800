"""The time-step problem of a nonsmooth rigid multibody simulator (Mazhar et al. 2014 section 3, Melanz et al. 2015 eqs. 6-13).

One time step of the DVI/CCP time stepper reads (Mazhar et al. 2014 eqs. 8, 14; Melanz et al. 2015 eq. 7)

    M v = k + D gamma + G lambda,          k = M v^l + h f,
    u   = D^T v + b                          (relative velocity at the contacts, [n, t...] per contact)
    0   = G^T v + b_G                        (bilateral constraints, optional)
    K_i ∋ gamma_i ⊥ u_i + [mu_i ||u_t,i||, 0, 0] ∈ K_i^*   (exact Coulomb, De Saxce form)

with the friction cone K_i = {||gamma_t|| <= mu_i gamma_n}. Eliminating v gives the "local" form

    u = N nu + r,   N = C^T M^-1 C,   r = b + C^T M^-1 k,   C = [D G],   nu = [gamma; lambda]

(Melanz et al. 2015 eqs. 12-13, Mazhar et al. 2014 eqs. 18-19). FCLib calls the global data M, H (= D), f (= k), w (= b) and
the local data W (= N), q (= r). A *local* problem is one where only W, q and mu are known; it is the
same type with the primal data absent.

Units: impulses gamma [N s], velocities [m/s], so N has units [m/(N s^2)] = 1/kg and r is a velocity.
"""

from __future__ import annotations

import hashlib
import math
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import scipy.sparse as sp
from numba import njit

from workbench.errors import ProblemDataError
from workbench.blocks import csr_matvec  # the compiled product (also importable from here, as before workbench.blocks)
from workbench.blocks import borrowed, sum_squares

if TYPE_CHECKING:  # loaded where a general M is factorised: a cold solve with a diagonal M never needs it
    import scipy.sparse.linalg as spla

__all__ = ["TimeStepProblem", "check_compressed", "problem_digest", "cached_property", "apply_operator",
           "intermediate_length", "CONDENSE_MAX_DOF", "CONDENSE_MAX_UNKNOWNS", "symmetric_part",
           "condense_diagonal"]

#: A global problem without joints of at most this many degrees of freedom and CONDENSE_MAX_UNKNOWNS
#: contact unknowns d n_c is condensed to its local problem through a dense Cholesky factor of M
#: (TimeStepProblem.condensed), which costs O(n_dof^3 + n_dof (d n_c)^2) against the sparse path's
#: scipy.sparse overhead (a sparse LU of M, the products M^-1 D and D^T per call). Measured by
#: `python -m benchmarks.timing.bench_condense --calls 100 --sweep-calls 20` (2026-11-28 21:00 UTC, 2 cores
#: AMD EPYC, load 0.3-0.5), APGD to 1e-8, whole Method.solve(), condensed / sparse: 3 contacts on a
#: banded M (bandwidth 24) 0.32 at 96 dofs, 0.42 at 162, 0.55 at 216, 0.69 at 288, 1.00 at 384 (the
#: dense factor's n_dof^3 catches up); the corpus's global files within both limits 0.3-0.7.
CONDENSE_MAX_DOF = 256
#: the largest d n_c of a condensed problem (CONDENSE_MAX_DOF's command): on rigid bodies (diagonal
#: M, 6 dofs each) condensed / sparse 0.67 at 9 unknowns, 0.84 at 54, 1.00 at 120, 1.05 at 162 and
#: 246 (a dense W iterated where the sparse path chains D^T and M^-1 D); on the banded M of 162 dofs
#: below 1 up to 246 (the sparse path forms N there too).
CONDENSE_MAX_UNKNOWNS = 120


class cached_property:  # noqa: N801 - a drop-in for functools.cached_property
    """functools.cached_property without the lock Python 3.11 takes on every first access (3.12 removed
    it): the value computed on first access goes into the instance's ``__dict__``, where later reads
    find it before this descriptor. A solve of a few contacts makes several first accesses on a fresh
    problem (r, ||r||, the compiled operator, ...); the lock cost about 0.3 us each."""

    def __init__(self, func):
        self.func = func
        self.attrname = None
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__

    def __set_name__(self, owner, name):
        self.attrname = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.attrname] = self.func(instance)
        return value


def _real_array(name: str, x) -> np.ndarray:
    """``x`` as an array after checking it holds real numbers: a complex value is refused rather than
    cut to its real part, and strings, records and objects are refused rather than parsed."""
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ProblemDataError(f"{name} is not an array of numbers ({exc})") from None
    if a.dtype.kind == "c":
        raise ProblemDataError(f"{name} has complex values; only real numbers are accepted")
    if a.dtype.kind not in "biuf" or a.dtype.fields is not None:
        raise ProblemDataError(f"{name} must hold real numbers, got dtype {a.dtype}")
    return a


def _vector(name: str, x, n: int | None) -> np.ndarray:
    a = _real_array(name, x)
    if a.ndim > 1:
        raise ProblemDataError(f"{name} must be a vector (1-D), got shape {a.shape}")
    a = np.array(a, dtype=float).reshape(-1)
    if n is not None and a.shape[0] != n:
        raise ProblemDataError(f"{name} has length {a.shape[0]}, expected {n}")
    if not np.all(np.isfinite(a)):
        raise ProblemDataError(f"{name} contains NaN or Inf")
    a.setflags(write=False)
    return a


def check_compressed(indptr, indices, n_outer: int, n_inner: int, name: str, n_data: int | None = None) -> int:
    """The number of stored entries after checking that ``indptr``, ``indices`` describe a compressed
    sparse matrix (CSR: n_outer rows of n_inner columns; CSC: the other way round).

    indptr: n_outer + 1 integers rising from 0 to nnz; indices: nnz integers in [0, n_inner);
    n_data, when given, must be nnz too. Checked with numpy before scipy sees the arrays: scipy's
    compiled routines (sorting, summing duplicates, conversions) trust them, and a decreasing pointer
    or an index outside the matrix makes them write outside their buffers."""
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    for part, a in (("pointers", indptr), ("indices", indices)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise ProblemDataError(f"{name}: sparse {part} must be a 1-D integer array, got "
                                   f"shape {a.shape} dtype {a.dtype}")
        if a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max:
            raise ProblemDataError(f"{name}: sparse {part} hold values beyond any matrix size")
    if indptr.shape[0] != n_outer + 1:
        raise ProblemDataError(f"{name}: {indptr.shape[0]} sparse pointers for {n_outer} rows/columns, "
                               f"expected {n_outer + 1}")
    indptr = indptr.astype(np.int64, copy=False)
    if indptr[0] != 0:
        raise ProblemDataError(f"{name}: sparse pointers must start at 0, got {indptr[0]}")
    falls = np.flatnonzero(np.diff(indptr) < 0)
    if falls.size:
        raise ProblemDataError(f"{name}: sparse pointers decrease at position {falls[0] + 1} "
                               f"({indptr[falls[0]]} then {indptr[falls[0] + 1]})")
    nnz = int(indptr[-1])
    if indices.shape[0] != nnz or (n_data is not None and n_data != nnz):
        stored = f"{indices.shape[0]} indices" + ("" if n_data is None else f" and {n_data} values")
        raise ProblemDataError(f"{name}: the sparse pointers end at {nnz} but {stored} are stored")
    if nnz and (indices.min() < 0 or indices.max() >= n_inner):
        bad = indices[(indices < 0) | (indices >= n_inner)][0]
        raise ProblemDataError(f"{name}: sparse index {bad} outside [0, {n_inner})")
    return nnz


def _check_sparse(name: str, A) -> None:
    """Check a scipy sparse matrix's own arrays (:func:`check_compressed`) before scipy converts it."""
    if A.format in ("csr", "csc", "bsr"):
        rows, cols = A.shape
        if A.format == "bsr":
            rows, cols = rows // A.blocksize[0], cols // A.blocksize[1]
        outer, inner = (cols, rows) if A.format == "csc" else (rows, cols)
        check_compressed(A.indptr, A.indices, outer, inner, name, n_data=A.data.shape[0])
    elif A.format == "coo":
        for axis, idx in enumerate(A.coords):
            if idx.shape != A.data.shape or (idx.size and (idx.min() < 0 or idx.max() >= A.shape[axis])):
                raise ProblemDataError(f"{name}: sparse coordinates outside the {A.shape} matrix")


def _matrix(name: str, A, shape: tuple[int | None, int | None]) -> sp.csr_matrix:
    if sp.issparse(A):
        _real_array(name, np.empty(0, dtype=A.dtype))
        _check_sparse(name, A)
    else:
        A = _real_array(name, A)
        if A.ndim != 2:
            raise ProblemDataError(f"{name} must be a 2-D matrix, got {A.ndim} dimension(s)")
    S = sp.csr_matrix(A, dtype=float, copy=True)
    for axis, (got, want) in enumerate(zip(S.shape, shape)):
        if want is not None and got != want:
            raise ProblemDataError(f"{name} has shape {S.shape}, expected {shape[0]} x {shape[1]} "
                                   f"(dimension {axis} is {got}, expected {want})")
    if not np.all(np.isfinite(S.data)):
        raise ProblemDataError(f"{name} contains NaN or Inf")
    S.sum_duplicates()
    S.eliminate_zeros()
    for arr in (S.data, S.indices, S.indptr):
        arr.setflags(write=False)
    return S


@njit(cache=True)
def symmetric_part(W, q, S):
    """S = (W + W^T) / 2 (W square; exactly symmetric then, a zero entry +0.0), for a condensed problem
    (:attr:`TimeStepProblem.condensed`, the dense Newton run's own condensation); False, S partly
    written, when an entry of W or q is not finite."""
    m = W.shape[0]
    for i in range(m):
        if not np.isfinite(q[i]):
            return False
        for j in range(m):
            s = (W[i, j] + W[j, i]) * 0.5
            if not np.isfinite(s):
                return False
            S[i, j] = s if s != 0 else 0.0
    return True


@njit(cache=True)
def _symmetric_csr(W, q):
    """(indptr, indices, data) of the nonzero entries of :func:`symmetric_part` in CSR, int32 indices,
    rows in order; empty arrays when an entry of W or q is not finite."""
    m = W.shape[0]
    S = np.empty((m, m))
    if not symmetric_part(W, q, S):
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0)
    count = 0
    for i in range(m):
        for j in range(m):
            if S[i, j] != 0:
                count += 1
    indptr = np.zeros(m + 1, np.int32)
    indices = np.empty(count, np.int32)
    data = np.empty(count)
    c = 0
    for i in range(m):
        for j in range(m):
            if S[i, j] != 0:
                indices[c] = j
                data[c] = S[i, j]
                c += 1
        indptr[i + 1] = c
    return indptr, indices, data


@njit(cache=True)
def condense_diagonal(m_val, indptr, indices, data, k, b, W, q):
    """W = D^T M^-1 D and q = b + D^T M^-1 k for a diagonal M in canonical CSR (its stored values
    ``m_val`` are then its diagonal, in row order; M^-1_ii = 1 / M_ii, the division
    :attr:`TimeStepProblem._M_inv_diag` makes) and D in canonical CSR (rows the dofs): W[a, c] sums
    (D_ia M^-1_ii) D_ic, and q_a sums D_ia (k_i M^-1_ii), over the dofs i in increasing order from 0,
    so the bits depend on no BLAS, kernel or thread count; no square roots, so an N with exact entries
    (Melanz et al. 2015 eq. 46) stays exact. W (m, m) and q (m) are overwritten."""
    W[:] = 0.0
    q[:] = 0.0
    for i in range(indptr.shape[0] - 1):
        weight = 1.0 / m_val[i]
        load = k[i] * weight
        for aa in range(indptr[i], indptr[i + 1]):
            a, scaled = indices[aa], data[aa] * weight
            q[a] += data[aa] * load
            for cc in range(indptr[i], indptr[i + 1]):
                W[a, indices[cc]] += scaled * data[cc]
    for a in range(q.shape[0]):
        q[a] = b[a] + q[a]


@njit(cache=True)
def _diagonal_condensation(m_val, indptr, indices, data, k, b, m):
    """(indptr, indices, data, q): W = D^T M^-1 D (:func:`condense_diagonal`, M diagonal, its stored
    values ``m_val``) in CSR as :func:`_symmetric_csr` gives it, and q = b + D^T M^-1 k, for D in
    canonical CSR with ``m`` columns; empty arrays (and q) when an entry overflows."""
    W = np.empty((m, m))
    q = np.empty(m)
    condense_diagonal(m_val, indptr, indices, data, k, b, W, q)
    indptr_W, indices_W, data_W = _symmetric_csr(W, q)
    return indptr_W, indices_W, data_W, q


#: the binary exponent beyond which a solver is not handed a problem as it is: impulses or velocities
#: near 2^SAFE_EXPONENT (about 1e120) or 2^-SAFE_EXPONENT have squares near the ends of the double range
#: (2^1023, 2^-1022), where the norms of every stopping test overflow or lose their digits
#: (:attr:`TimeStepProblem.working_exponent`)
SAFE_EXPONENT = 400
#: :func:`_largest_exponent` of a vector of zeros
NO_EXPONENT = -(1 << 30)


@njit(cache=True)
def _largest_exponent(x):
    """The binary exponent (math.frexp's: |x_k| < 2^e) of the largest |x_k|; NO_EXPONENT when all are 0."""
    top = NO_EXPONENT
    for k in range(x.shape[0]):
        m, e = math.frexp(x[k])
        if m != 0 and e > top:
            top = e
    return top


#: the attributes of a scipy csr_matrix (scipy 1.17) and a reference instance made by its constructor,
#: for :func:`canonical_csr`
_CSR_REFERENCE = sp.csr_matrix((np.zeros(0), np.zeros(0, np.int32), np.zeros(2, np.int32)), shape=(1, 1))
_CSR_TRUSTED = set(vars(_CSR_REFERENCE)) == {"_shape", "maxprint", "indptr", "indices", "data"}


def canonical_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n: int) -> sp.csr_matrix:
    """The n x n csr_matrix of arrays a compiled pass of this module made canonical (int32 indices,
    sorted within rows, no duplicates, float data): with scipy's own attributes (those its constructor
    sets, checked once against an instance it made) but without its checks, which cost more than a
    one-contact solve; scipy's constructor where its attributes differ from those known here."""
    if not _CSR_TRUSTED:
        return sp.csr_matrix((data, indices, indptr), shape=(n, n))
    A = object.__new__(sp.csr_matrix)
    vars(A).update(_shape=(n, n), maxprint=_CSR_REFERENCE.maxprint, indptr=indptr, indices=indices, data=data)
    return A


@njit(cache=True)
def _csr_diagonal_blocks(indptr, indices, data, d, n_c, blocks):
    """blocks[i] += the d x d diagonal block of contact i of a CSR matrix (duplicates summed), one
    pass over the rows of the contact unknowns."""
    for row in range(d * n_c):
        i, a = row // d, row % d
        for jj in range(indptr[row], indptr[row + 1]):
            col = indices[jj]
            if col // d == i:
                blocks[i, a, col - d * i] += data[jj]


@njit(cache=True)
def _weighted_column_blocks(ptr, idx, val, w, d, blocks):
    """blocks[i, a, c] = sum_k D[k, d i + a] w[k] D[k, d i + c] for D in CSC form with sorted row
    indices (D_i^T M^-1 D_i for a diagonal M^-1 = diag(w)): a merge of the two columns' rows."""
    for i in range(blocks.shape[0]):
        for a in range(d):
            ca = d * i + a
            for c in range(a, d):
                cc = d * i + c
                p, q, acc = ptr[ca], ptr[cc], 0.0
                while p < ptr[ca + 1] and q < ptr[cc + 1]:
                    if idx[p] == idx[q]:
                        acc += val[p] * w[idx[p]] * val[q]
                        p += 1
                        q += 1
                    elif idx[p] < idx[q]:
                        p += 1
                    else:
                        q += 1
                blocks[i, a, c] = acc
                blocks[i, c, a] = acc


@njit(cache=True, inline="always")
def apply_operator(op, tmp, x, out):
    """out = N x for the operator ``op`` of :attr:`TimeStepProblem.compiled_operator` (row by row, in
    the order of scipy's CSR product, so that the sums are those of :meth:`TimeStepProblem.apply_N`);
    ``tmp`` holds the intermediate A x of a chained operator (length :func:`intermediate_length`)."""
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain = op
    if chain:
        csr_matvec(a_ptr, a_idx, a_val, x, tmp)
        csr_matvec(b_ptr, b_idx, b_val, tmp, out)
    else:
        csr_matvec(a_ptr, a_idx, a_val, x, out)


@njit(cache=True, inline="always")
def borrowed_operator(op):
    """The operator ``op`` of :func:`apply_operator` with its arrays borrowed (workbench.blocks.borrowed),
    for a compiled loop that applies it every iteration; only of an operator given to the caller."""
    return (borrowed(op[0]), borrowed(op[1]), borrowed(op[2]), borrowed(op[3]), borrowed(op[4]), borrowed(op[5]),
            op[6])


def intermediate_length(op: tuple) -> int:
    """Length of the work array ``tmp`` of :func:`apply_operator` for the operator ``op`` (0 unchained)."""
    return op[0].shape[0] - 1 if op[6] else 0


def csr_product(A: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """A x for a CSR matrix A and a vector x (:func:`csr_matvec`)."""
    out = np.empty(A.shape[0])
    csr_matvec(A.indptr, A.indices, A.data, np.ascontiguousarray(x, dtype=float), out)
    return out


class TimeStepProblem:
    """One time step of the frictional-contact problem; immutable and validated on construction.

    Global (primal data known): give ``M``, ``D``, ``k`` and optionally ``b``, ``G``, ``b_G``.
    Local (only the Delassus data known): give ``W`` and ``q``.

    Parameters
    ----------
    mu : (n_c,) friction coefficients, >= 0.
    d : contact dimension, 3 (normal + 2 tangents) or 2 (normal + 1 tangent, planar problems).
    M : (n_dof, n_dof) symmetric positive definite mass matrix (sparse; diagonal is the fast path).
    D : (n_dof, d n_c) contact Jacobian, one block of d columns [n, t1, t2] per contact.
    k : (n_dof,) momentum with applied impulse, M v^l + h f  [N s].
    b : (d n_c,) stabilisation term, Phi/h in the normal slots  [m/s]. Defaults to 0.
    G : (n_dof, n_b) bilateral (joint) Jacobian; b_G its stabilisation term (n_b,).
    W, q : local data, u = W gamma + q.
    h : step size [s], when known.
    name, metadata : provenance (file, generator parameters, ...).
    """

    __slots__ = ("_mu", "_d", "_M", "_D", "_k", "_b", "_G", "_bG", "_W", "_q", "_h", "_name",
                 "_metadata", "__dict__")

    def __init__(self, *, mu, d: int = 3, M=None, D=None, k=None, b=None, G=None, b_G=None,
                 W=None, q=None, h: float | None = None, name: str = "",
                 metadata: Mapping[str, Any] | None = None):
        if d not in (2, 3):
            raise ProblemDataError(f"contact dimension d must be 2 or 3, got {d}")
        mu = _vector("mu", mu, None)
        n_c = mu.shape[0]
        if np.any(mu < 0):  # n_c = 0 is allowed: a time step without contacts (free flight)
            raise ProblemDataError(f"mu must be >= 0 (min is {mu.min():g})")
        m = d * n_c
        is_global = M is not None or D is not None or k is not None
        if is_global and (W is not None or q is not None):
            raise ProblemDataError("give either the global data (M, D, k) or the local data (W, q), not both")
        if is_global:
            if M is None or D is None or k is None:
                missing = [n for n, x in (("M", M), ("D", D), ("k", k)) if x is None]
                raise ProblemDataError(f"global problem lacks {', '.join(missing)}")
            M = _matrix("M", M, (None, None))
            n_dof = M.shape[0]
            if M.shape[1] != n_dof:
                raise ProblemDataError(f"M must be square, got shape {M.shape}")
            D = _matrix("D", D, (n_dof, m))
            k = _vector("k", k, n_dof)
            b = _vector("b", np.zeros(m) if b is None else b, m)
            diag = M.diagonal()
            if np.any(diag <= 0):
                raise ProblemDataError("M must be positive definite (it has a non-positive diagonal entry)")
            asym = abs(M - M.T)
            if asym.nnz and asym.max() > 1e-10 * abs(M).max():
                raise ProblemDataError("M must be symmetric")
            if G is not None:
                G = _matrix("G", G, (n_dof, None))
                b_G = _vector("b_G", np.zeros(G.shape[1]) if b_G is None else b_G, G.shape[1])
                if G.shape[1] == 0:
                    G, b_G = None, None
            elif b_G is not None:
                raise ProblemDataError("b_G given without G")
        else:
            if W is None or q is None:
                raise ProblemDataError("a problem needs either M, D, k (global) or W, q (local)")
            if b is not None or G is not None or b_G is not None:
                raise ProblemDataError("b, G and b_G belong to global problems; a local problem has W and q only")
            W = _matrix("W", W, (m, m))
            q = _vector("q", q, m)
        if h is not None:
            h = float(h)
            if not (np.isfinite(h) and h > 0):
                raise ProblemDataError(f"step size h must be positive, got {h}")
        self._mu, self._d, self._M, self._D, self._k, self._b = mu, d, M, D, k, b
        self._G, self._bG, self._W, self._q, self._h = G, b_G, W, q, h
        self._name = str(name)
        self._metadata = MappingProxyType(dict(metadata or {}))

    def __setattr__(self, key, value):
        if key.startswith("_") and key in TimeStepProblem.__slots__ and hasattr(self, key):
            raise AttributeError("TimeStepProblem is immutable")
        object.__setattr__(self, key, value)

    # ------------------------------------------------------------------ plain data
    mu = property(lambda self: self._mu, doc="friction coefficients (n_c,)")
    d = property(lambda self: self._d, doc="contact dimension, 2 or 3")
    M = property(lambda self: self._M, doc="mass matrix (CSR) or None for a local problem")
    D = property(lambda self: self._D, doc="contact Jacobian (CSR, n_dof x d n_c) or None")
    k = property(lambda self: self._k, doc="M v^l + h f, or None")
    b = property(lambda self: self._b, doc="contact stabilisation term (d n_c,), or None")
    G = property(lambda self: self._G, doc="bilateral Jacobian (CSR, n_dof x n_b) or None")
    b_G = property(lambda self: self._bG, doc="bilateral stabilisation term (n_b,) or None")
    h = property(lambda self: self._h, doc="step size [s] when known")
    name = property(lambda self: self._name)
    metadata = property(lambda self: self._metadata)

    @property
    def is_global(self) -> bool:
        """True when the primal data M, D, k are known."""
        return self._M is not None

    @property
    def kind(self) -> str:
        return "global" if self.is_global else "local"

    @property
    def n_contacts(self) -> int:
        return self._mu.shape[0]

    @property
    def n_dof(self) -> int | None:
        return self._M.shape[0] if self.is_global else None

    @property
    def n_bilateral(self) -> int:
        return 0 if self._G is None else self._G.shape[1]

    @cached_property
    def n_contact_unknowns(self) -> int:
        """d n_c, the length of gamma."""
        return self._d * self.n_contacts

    @cached_property
    def n_unknowns(self) -> int:
        """d n_c + n_b, the length of nu = [gamma; lambda]."""
        return self.n_contact_unknowns + self.n_bilateral

    def require_global(self, what: str) -> None:
        """Raise a clear error when ``what`` needs M and D but this is a local problem."""
        if not self.is_global:
            from workbench.errors import UnsupportedError
            raise UnsupportedError(f"{what} needs the primal data M, D, k, but {self.name or 'this problem'} "
                                   "is a local problem (only W, q, mu are known)")

    # ------------------------------------------------------------------ mass matrix
    @cached_property
    def _M_diagonal(self) -> np.ndarray:
        """M's diagonal, read once (scipy's ``diagonal()`` costs microseconds, which a small solve pays)."""
        return self._M.diagonal()

    @cached_property
    def M_is_diagonal(self) -> bool:
        """Whether M is diagonal: the constructor makes M canonical CSR (no duplicates, no explicit zeros)
        with every diagonal entry positive, so stored, and M is diagonal exactly when it stores n_dof
        entries (no pass over its indices; a compiled one cost a microsecond per fresh problem)."""
        M = self._M
        return M is not None and M.data.shape[0] == M.indptr.shape[0] - 1

    @cached_property
    def _M_inv_diag(self) -> np.ndarray:
        # a diagonal M's stored values are its diagonal, in row order (canonical CSR): no scipy call
        return 1.0 / (self._M.data if self.M_is_diagonal else self._M_diagonal)

    @cached_property
    def _M_factor(self):
        import scipy.sparse.linalg as spla  # here: a diagonal M, the common case, never loads it (0.1 s)
        try:
            return spla.factorized(self._M.tocsc())
        except RuntimeError as exc:  # singular M
            raise ProblemDataError(f"M is singular: {exc}") from None

    @cached_property
    def _condensation(self) -> tuple | None:
        """(L, X, z) with M = L L^T (dense Cholesky), X = L^-1 D, z = L^-1 k, for a global problem without
        joints within CONDENSE_MAX_DOF and CONDENSE_MAX_UNKNOWNS; (None, None, None) for a diagonal M,
        whose W is summed from D's sparse arrays in a fixed order (:func:`_diagonal_condensation`: no
        square roots, so an N with exact entries, such as Melanz et al. 2015 eq. 46, stays exact, and no
        BLAS); None otherwise, and
        None when M is singular or numerically so (a pivot L_jj^2 <= n_dof eps max_i M_ii): such a
        problem keeps the sparse path, which reports a singular M as it always did."""
        if self.condensation_data() is None:
            return None
        if self.M_is_diagonal:
            return None, None, None     # D^T M^-1 D from D's sparse arrays (:func:`_diagonal_condensation`)
        from scipy.linalg.lapack import dpotrf, dtrtrs  # LAPACK itself: the wrappers' checks cost more here
        M = self._M.toarray()
        L, info = dpotrf(M, lower=1, clean=1)
        pivots = np.diagonal(L)
        if info != 0 or not np.all(pivots * pivots > M.shape[0] * np.finfo(float).eps * M.diagonal().max()):
            return None
        X, _ = dtrtrs(L, self._D.toarray(), lower=1)
        z, _ = dtrtrs(L, self._k, lower=1)
        return L, X, z

    def condensation_data(self) -> tuple | None:
        """(M's indptr, indices, data, D's indptr, indices, data, k, b) of a global problem without joints
        within CONDENSE_MAX_DOF and CONDENSE_MAX_UNKNOWNS, the problems :attr:`condensed` condenses
        (M permitting: not singular); None for any other. The data as given (canonical CSR): for
        :func:`condense_diagonal` (when :attr:`M_is_diagonal`), here and in a solver that
        condenses in its own compiled call (workbench.solvers.newton's dense run)."""
        D = self._D
        if D is None or self._G is not None or D.shape[0] > CONDENSE_MAX_DOF or D.shape[1] > CONDENSE_MAX_UNKNOWNS:
            return None
        M = self._M
        return M.indptr, M.indices, M.data, D.indptr, D.indices, D.data, self._k, self._b

    @property
    def condensable(self) -> bool:
        """True when this global problem is condensed through a dense factor of M (:attr:`condensed`)."""
        return self.condensed is not None

    @cached_property
    def working_exponent(self) -> int:
        """e such that the solvers work on this problem with its linear term divided by 2^e
        (:meth:`rescaled`; workbench.method.Method.solve): 0 for nearly every problem.

        The Coulomb problem is positively homogeneous: q (or k, b, b_G) divided by s divides the
        solution's impulses and velocities by s and leaves every relative error of workbench.metrics as
        it is; with s = 2^e exactly so (only exponents change). From the data alone (nothing a solver
        computes, so nothing of a solve's work is done before its clock): the velocities' binary exponent
        e_u from q (from b, b_G and D M^-1 k: e(k) - e(M) + e(C)), the Delassus matrix's e_w from W (from
        2 e(C) - e(M)), the impulses' e_u - e_w, each from the largest entry. When either is beyond
        SAFE_EXPONENT, e = e_u - floor(e_w / 2) brings the velocities to about 2^(e_w / 2) and the
        impulses to 2^(-e_w / 2), as near 1 as one common factor brings both; 0 when both are within it,
        when the linear term is 0 (the solution is 0) or when that factor would bring neither nearer."""
        top = _largest_exponent
        if not self.is_global:
            e_u, e_w = top(self._q), top(self._W.data)
        else:
            e_c = max(top(self._D.data), NO_EXPONENT if self._G is None else top(self._G.data))
            e_m = top(self._M.data)
            e_u = max(top(self._b), NO_EXPONENT if self._G is None else top(self._bG), top(self._k) - e_m + e_c)
            e_w = 2 * e_c - e_m
        if e_u < NO_EXPONENT // 2 or e_w < NO_EXPONENT // 2:
            return 0
        e_r = e_u - e_w
        if max(abs(e_u), abs(e_r)) <= SAFE_EXPONENT:
            return 0
        e = e_u - e_w // 2
        return e if max(abs(e_u - e), abs(e_r - e)) < max(abs(e_u), abs(e_r)) else 0

    def rescaled(self, e: int) -> "TimeStepProblem":
        """This problem with its linear term divided by 2^e: q (local), or k, b and b_G (global); mu,
        W, M, D and G as they are. Its solution is this problem's divided by 2^e (:attr:`working_exponent`),
        exactly but for entries pushed below the smallest normal double."""
        def down(x):
            return None if x is None else np.ldexp(x, -int(e))
        common = {"mu": self._mu, "d": self._d, "h": self._h, "name": self._name, "metadata": self._metadata}
        if self.is_global:
            return TimeStepProblem(M=self._M, D=self._D, k=down(self._k), b=down(self._b), G=self._G,
                                   b_G=down(self._bG), **common)
        return TimeStepProblem(W=self._W, q=down(self._q), **common)

    @cached_property
    def condensed(self) -> "TimeStepProblem | None":
        """The local problem (W, q) of a small global one (CONDENSE_MAX_DOF), W = D^T M^-1 D = X^T X
        and q = b + D^T M^-1 k = b + X^T z from the dense Cholesky factor M = L L^T (X = L^-1 D,
        z = L^-1 k), or for a diagonal M summed from D's sparse arrays in a fixed order (no BLAS); None
        where :attr:`_condensation` is (too large, joints, a singular M) or where W or q overflowed. Its
        arrays derive from this problem's checked data, so it is built without the constructor's checks
        of outside data (they cost more than a small solve)."""
        arrays = self.condensation_data()
        if arrays is None:
            return None
        if self.M_is_diagonal:
            # the sums, (W + W^T) / 2, the finiteness checks and the CSR arrays in one compiled pass (in
            # numpy a dozen calls on a few contacts cost several times the solve;
            # docs/solvers-performance.md, the lean path)
            indptr, indices, data, q = _diagonal_condensation(*arrays[2:], self._D.shape[1])
        else:
            factors = self._condensation
            if factors is None:
                return None
            _, X, z = factors
            q = self._b + X.T @ z
            indptr, indices, data = _symmetric_csr(np.ascontiguousarray(X.T @ X), q)
        if indptr.shape[0] == 0:            # W or q overflowed
            return None
        for a in (data, indices, indptr, q):
            a.setflags(write=False)
        return _trusted_local(self._mu, self._d, canonical_csr(indptr, indices, data, q.shape[0]), q, self._h,
                              self._name, self._metadata)

    def solve_M(self, x: np.ndarray) -> np.ndarray:
        """M^-1 x for a vector or a dense (n_dof, k) block (a small M through its dense Cholesky factor)."""
        self.require_global("M^-1")
        if self.M_is_diagonal:
            return x * (self._M_inv_diag if x.ndim == 1 else self._M_inv_diag[:, None])
        if self._condensation is not None:
            from scipy.linalg.lapack import dpotrs
            return dpotrs(self._condensation[0], x, lower=1)[0]
        if x.ndim == 1:
            return self._M_factor(x)
        return np.column_stack([self._M_factor(c) for c in x.T])

    # ------------------------------------------------------------------ C = [D G], N, r
    @cached_property
    def C(self) -> sp.csr_matrix:
        """Full constraint Jacobian [D G] (n_dof x (d n_c + n_b))."""
        self.require_global("C = [D G]")
        return self._D if self._G is None else sp.hstack([self._D, self._G], format="csr")

    @cached_property
    def _C_T(self) -> sp.csr_matrix:
        return self.C.T.tocsr()

    @cached_property
    def r(self) -> np.ndarray:
        """Linear term r = [b; b_G] + C^T M^-1 k (Melanz et al. 2015 eq. 13), FCLib local q."""
        if not self.is_global:
            return self._q
        if self.condensable:
            return self.condensed.r
        bb = self._b if self._G is None else np.concatenate([self._b, self._bG])
        out = bb + self._C_T @ self.solve_M(self._k)
        out.setflags(write=False)
        return out

    @cached_property
    def norm_r(self) -> float:
        """||r||, the first term of the normalisation of the natural-map errors (workbench.metrics): the
        square root of the blocked sum of squares (workbench.blocks.sum_squares) that gives ||nu|| and ||u||
        there, so the three norms are summed alike, the same for any BLAS and thread count, and a compiled
        solver that sums r itself (the dense Newton run) gets this number to the bit."""
        return math.sqrt(sum_squares(self.r))

    @cached_property
    def compiled_operator(self) -> tuple:
        """N as the CSR arrays of two chained products, (A.indptr, A.indices, A.data, B.indptr,
        B.indices, B.data, chain) with N x = B (A x) when ``chain`` (a global problem with a diagonal M:
        A = M^-1 C, B = C^T, the products of :meth:`apply_N`) and N x = A x otherwise (W of a local
        problem; N formed once, sparse, for a general M or a condensed problem): the operator of the
        compiled solvers."""
        if self.is_global and self.M_is_diagonal and not self.condensable:
            A, B = self._MinvC, self._C_T
        else:
            A = B = self.N
        return A.indptr, A.indices, A.data, B.indptr, B.indices, B.data, A is not B

    @cached_property
    def N(self) -> sp.csr_matrix:
        """Delassus (Schur) matrix N = C^T M^-1 C as a sparse matrix (Melanz et al. 2015 eq. 12); W when local.

        Formed once on demand; solvers should prefer :meth:`apply_N`, which never forms it.
        """
        if not self.is_global:
            return self._W
        if self.condensable:
            return self.condensed.N
        if self.M_is_diagonal:
            N = (self._C_T @ sp.diags(self._M_inv_diag) @ self.C).tocsr()
        else:
            N = sp.hstack([sp.csr_matrix(self._C_T @ X) for _, X in self._solve_M_columns(self.C)], format="csr")
        N = ((N + N.T) * 0.5).tocsr()  # exactly symmetric: cvxpy/solvers expect it
        N.sum_duplicates()
        return N

    def _solve_M_columns(self, A: sp.spmatrix, width: int = 384):
        """(start, M^-1 A[:, start:start + width] as a dense block) over the columns of A: a general
        (non-diagonal) M couples the dofs, so M^-1 A fills in; blocks keep the memory at
        n_dof x width instead of n_dof x n_columns."""
        A = A.tocsc()
        for start in range(0, A.shape[1], width):
            yield start, self.solve_M(A[:, start:start + width].toarray())

    @cached_property
    def _MinvC(self) -> sp.csr_matrix | None:
        return (sp.diags(self._M_inv_diag) @ self.C).tocsr() if self.M_is_diagonal else None

    @cached_property
    def MinvC_T(self) -> sp.csr_matrix | None:
        """(M^-1 C)^T in CSR form for a diagonal M (None otherwise): row j holds column j of M^-1 C, as
        ``_C_T`` holds the columns of C (Gauss-Seidel in velocity form, workbench.solvers.pgs)."""
        return (self._C_T @ sp.diags(self._M_inv_diag)).tocsr() if self.M_is_diagonal else None

    def apply_N(self, x: np.ndarray) -> np.ndarray:
        """N x without forming N: C^T (M^-1 (C x)) for global problems, W x for local ones and with the
        condensed W for a small global one (:attr:`condensed`; vectors through :func:`csr_product`)."""
        product = csr_product if np.ndim(x) == 1 else (lambda A, X: A @ X)
        if not self.is_global:
            return product(self._W, x)
        if self.condensable:
            return product(self.N, x)
        if self._MinvC is not None:
            return product(self._C_T, product(self._MinvC, x))
        return self._C_T @ self.solve_M(self.C @ x)

    @cached_property
    def N_operator(self) -> spla.LinearOperator:
        """N as a matrix-free scipy LinearOperator."""
        import scipy.sparse.linalg as spla
        n = self.n_unknowns
        return spla.LinearOperator((n, n), matvec=self.apply_N, rmatvec=self.apply_N, dtype=float)

    @cached_property
    def N_diagonal_blocks(self) -> np.ndarray:
        """The d x d diagonal blocks of N, one per contact, shape (n_c, d, d) (for Gauss-Seidel,
        preconditioners and scaling). Computed without forming N."""
        d, n_c = self._d, self.n_contacts
        if not self.is_global:
            W = self._W
            blocks = np.zeros((n_c, d, d))
            _csr_diagonal_blocks(W.indptr, W.indices, W.data, d, n_c, blocks)
            return blocks
        D = self._D.tocsc()
        if self.M_is_diagonal:
            D = D.copy() if D is self._D else D
            D.sum_duplicates()      # sorted row indices, no duplicates: the merge below needs them
            blocks = np.empty((n_c, d, d))
            _weighted_column_blocks(D.indptr, D.indices, D.data, np.ascontiguousarray(self._M_inv_diag, dtype=float),
                                    d, blocks)
            return blocks
        blocks = np.empty((n_c, d, d))
        for start, X in self._solve_M_columns(D, width=128 * d):
            m = X.shape[1] // d
            Dd = D[:, start:start + m * d].toarray()
            blocks[start // d:start // d + m] = np.einsum("kia,kib->iab", Dd.reshape(-1, m, d), X.reshape(-1, m, d))
        return blocks

    # ------------------------------------------------------------------ kinematics
    def relative_velocity(self, nu: np.ndarray) -> np.ndarray:
        """u = N nu + r, i.e. D^T v + b (and G^T v + b_G for the bilateral rows)."""
        return self.apply_N(nu) + self.r

    def velocity(self, nu: np.ndarray) -> np.ndarray:
        """v = M^-1 (k + C nu) (Mazhar et al. 2014 eq. 9 / 14b)."""
        self.require_global("the velocity v")
        return self.solve_M(self._k + self.C @ nu)

    def contacts(self, x: np.ndarray) -> np.ndarray:
        """View of the contact part of a vector of unknowns as an (n_c, d) array."""
        return np.asarray(x)[: self.n_contact_unknowns].reshape(self.n_contacts, self._d)

    def with_linear_term(self, r: np.ndarray) -> "TimeStepProblem":
        """The local problem (N, r') with the same N and a new linear term (anti-relaxation shifts r)."""
        return TimeStepProblem(mu=self._mu, d=self._d, W=self.N, q=r, h=self._h,
                               name=self._name, metadata=dict(self._metadata))

    def as_local(self) -> "TimeStepProblem":
        """The local (W, q) form of this problem (forms N)."""
        if not self.is_global:
            return self
        if self.n_bilateral:
            raise ProblemDataError("a problem with bilateral constraints has no FCLib-local form")
        return self.with_linear_term(self.r)

    # ------------------------------------------------------------------ description
    def summary(self) -> dict[str, Any]:
        """Size and data ranges, as printed by ``workbench info``."""
        out: dict[str, Any] = {
            "name": self._name,
            "kind": self.kind,
            "n_contacts": self.n_contacts,
            "d": self._d,
            "n_dof": self.n_dof,
            "n_bilateral": self.n_bilateral,
            "mu_min": float(self._mu.min()) if self.n_contacts else None,
            "mu_max": float(self._mu.max()) if self.n_contacts else None,
            "h": self._h,
        }
        if self.is_global:
            out.update(nnz_M=int(self._M.nnz), nnz_D=int(self._D.nnz), M_diagonal=bool(self.M_is_diagonal))
            if self._G is not None:
                out["nnz_G"] = int(self._G.nnz)
        else:
            out["nnz_W"] = int(self._W.nnz)
        return out

    def __repr__(self) -> str:
        s = self.summary()
        return (f"TimeStepProblem({s['name']!r}, {s['kind']}, n_contacts={s['n_contacts']}, d={s['d']}, "
                f"n_dof={s['n_dof']}, n_bilateral={s['n_bilateral']})")


#: the slots :func:`_trusted_local` sets, in the order of its values, and their setters
_LOCAL_SLOTS = ("_mu", "_d", "_M", "_D", "_k", "_b", "_G", "_bG", "_W", "_q", "_h", "_name", "_metadata")
_SLOT_SETTERS = tuple(getattr(TimeStepProblem, key).__set__ for key in _LOCAL_SLOTS)


def _trusted_local(mu, d, W, q, h, name, metadata) -> TimeStepProblem:
    """The local problem (W, q) of arrays derived from a checked problem's (its ``condensed``), made
    without the constructor's checks of outside data, which cost more than a small solve: its slots
    set directly (M, D, k, b, G, b_G None), in one pass over their setters."""
    local = object.__new__(TimeStepProblem)
    for setter, value in zip(_SLOT_SETTERS, (mu, d, None, None, None, None, None, None, W, q, h, name, metadata)):
        setter(local, value)
    return local


def problem_digest(problem: TimeStepProblem) -> str:
    """SHA-256 of the problem's data (d, h, mu and the global or local arrays; not its name or
    metadata), the same for the same numbers whichever file format they came from."""
    h = hashlib.sha256()

    def add(label: str, x) -> None:
        h.update(label.encode())
        if x is None:
            h.update(b"none")
        elif sp.issparse(x):
            S = sp.csr_matrix(x)
            S.sort_indices()
            for part in (np.array(S.shape, dtype=np.int64), S.indptr.astype(np.int64),
                         S.indices.astype(np.int64), S.data.astype(np.float64)):
                h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(np.ascontiguousarray(np.asarray(x, dtype=np.float64)).tobytes())

    add("d", problem.d)
    add("h", problem.h)
    add("mu", problem.mu)
    if problem.is_global:
        for label in ("M", "D", "k", "b", "G", "b_G"):
            add(label, getattr(problem, label))
    else:
        add("W", problem.N)
        add("q", problem.r)
    return h.hexdigest()
