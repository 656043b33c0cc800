"""Lemke's complementary pivoting method (LCP0 of Anitescu and Hart 2003) for a standard LCP.

LCP(A, q): w = A z + q, 0 <= z ⊥ w >= 0. Lemke's method works on the augmented system

    w - A z - d z0 = q,   w, z, z0 >= 0,   w ⊥ z,

with a covering vector d > 0 (default all ones). It starts from the basis {w} (B = I); if q >= 0,
z = 0 solves the LCP. Otherwise z0 enters and the row of the most negative q_i / d_i leaves, which
makes every basic value non-negative (an almost complementary basis). Then it repeats: the
complement of the variable that just left enters; the minimum-ratio test over the rows with a
positive entry a_i in the entering column B^-1 col picks the leaving row. It ends when
- z0 leaves the basis, or stays basic at value zero (a degenerate step, or a round-off zero; it
  would otherwise wander on at z0 = 0 and may meet a ray): the solution ("complementary solution"),
  unless z recomputed from that basis misses the LCP by more than ACCURACY_TOL max(1, ||q||_inf) in
  ||min(z, w)||_inf ("inaccurate basis": round-off led the pivoting astray; z is returned all the
  same, and the workbench judges it);
- the entering column has no positive entry: "ray termination" (no solution found; for the
  copositive-plus class this proves infeasibility; the LCP (6)-(7) of Anitescu and Hart 2003 with Delta >= 0 is
  solvable by Lemke's method (its ref. [3]), so there a ray signals numerical trouble);
- the pivot cap (options.max_iter, default 10 n) is reached: "max pivots"; or the time limit:
  "time limit".

Degeneracy (the contact LCP is heavily degenerate: q has zero rows, touching contacts tie) is
handled by the lexicographic minimum-ratio test: among the rows tying at the minimum ratio
x_i / a_i the row whose [x_i, (B^-1)_i] / a_i is lexicographically smallest leaves. The rows of
B^-1 are linearly independent, so the choice is unique and no basis repeats (no cycling; Cottle,
Pang and Stone, The Linear Complementarity Problem, 1992, section 4.9). Ties are decided with the
relative tolerance TIE_TOL on dimensionless data; z0 leaves whenever it ties (that ends the method).

Round-off (the Delassus matrix of a real contact problem is singular: cond(A) reached 1e18 on a
shared box stack). Three guards, each a documented departure from exact arithmetic:
- an entry of the entering column counts as positive only above PIVOT_TOL ||a||_inf (smaller ones
  are round-off images of zeros; pivoting on them destroyed B^-1 on that box stack);
- among tied rows, pivots below STABLE_PIVOT times the largest tied pivot are passed over before
  the lexicographic rule (a tiny a_i makes (B^-1)_i / a_i huge, so the exact rule would favour
  exactly the unstable pivots);
- after a pivot below SMALL_PIVOT ||a||_inf, and every CHECK_EVERY pivots, B^-1 is checked: B x = q
  to DRIFT_TOL and B^-1 (B p) = p to INVERSE_TOL on a fixed, exactly representable probe p;
  otherwise B^-1 is refactorised from scratch (counted in ``refactorizations``).
Basic values within ZERO_TOL max(1, max x) of zero are set to zero so that degenerate rows tie
exactly, and so are round-off negatives down to -DRIFT_TOL max(1, max x), so that the ratio test
never steps backwards.

Machine independence. Every floating-point operation on the pivot path is either elementwise
(correctly rounded, so the same on every x86-64 CPU) or a compiled loop in a fixed order (numba,
no fast-math): the images B^-1 col, the rank-one update, the drift check's products, and the
refactorisation, a Gauss-Jordan inverse with partial pivoting (first row on ties) of the block of
B that is not an identity column (B^-1 follows from it by sparse products). Nothing on that path
goes through BLAS or LAPACK, whose results change with the thread count and the kernel, so the
pivot sequence is a function of (A, q) alone; ``pivot_hash`` (BLAKE2b of the (entering variable,
leaving row) pairs) identifies it. Exactly tied ratios are decided by the lexicographic rule, ties
left after it by the lowest row index.

The final basis is solved twice: by the compiled inverse with two steps of iterative refinement
(the returned z), and independently by a sparse LU (SuperLU) with iterative refinement. The
outcome is a "complementary solution" only when both z satisfy the LCP to ACCURACY_TOL
max(1, ||q||_inf) in ||min(z, w)||_inf and the basic values are non-negative to that tolerance;
otherwise "inaccurate basis" (z is returned all the same and the workbench judges it; it is never
a solution). ``roundoff`` = True flags a run whose path cannot be trusted to be a property of the
data: ``pivot_divide=False`` repeats the pivoting with another, equally valid rounding of the pivot
row (multiplication by the reciprocal pivot), and a caller that sees the two outcomes differ knows
that the outcome depends on round-off (benchmarks.reproduce does this).

Linear algebra: a dense explicit B^-1 (n x n, Fortran order) updated in place by a rank-one update
per pivot (a numba kernel that skips the zero entries of the pivot row), O(n^2) flops and 8 n^2
bytes: dense pivoting is inherent to this implementation and fine up to a few thousand unknowns
(the 210-disk cannonball of Anitescu and Hart 2003 has 2,360: 45 MB, a few ms per pivot); beyond that the
memory and the O(n^2) pivots make it impractical (use LCP1/LCP2 or the conic formulations).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

from workbench.errors import InputError
from workbench.lcp_metrics import lcp_residual
from workbench.params import Param
from workbench.solvers.base import SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.recorder import Recorder

__all__ = ["lemke", "LemkeOutcome", "LemkeSolver", "SOLVED", "INACCURATE", "RAY", "MAX_PIVOTS", "TIME_LIMIT",
           "SINGULAR"]

SOLVED, INACCURATE = "complementary solution", "inaccurate basis"
RAY, MAX_PIVOTS, TIME_LIMIT = "ray termination", "max pivots", "time limit"
#: the refactorisation met an exactly singular basis (round-off led the pivoting there)
SINGULAR = "singular basis"
#: a final basis whose z misses the LCP by more than this (relative to max(1, ||q||_inf)) is "inaccurate"
ACCURACY_TOL = 1e-6
#: an entry of the entering column counts as positive above PIVOT_TOL * its largest magnitude
PIVOT_TOL = 1e-8
#: relative tolerance for ties in the (lexicographic) minimum-ratio test
TIE_TOL = 1e-12
#: among tied rows, pivots below STABLE_PIVOT * (the largest tied pivot) are passed over
STABLE_PIVOT = 1e-3
#: a pivot below SMALL_PIVOT * ||a||_inf is followed by a drift check at once
SMALL_PIVOT = 1e-6
#: basic values below ZERO_TOL * max(1, max x) are round-off zeros of degenerate rows
ZERO_TOL = 1e-12
CHECK_EVERY = 50
DRIFT_TOL = 1e-9
#: refactorise when B^-1 (B p) misses the probe p by more than this (relative)
INVERSE_TOL = 1e-7
#: iterative-refinement steps of the final basis solves
REFINE_STEPS = 2


@njit(cache=True)
def _rank_one_update(Binv, u, row):  # pragma: no cover - compiled
    """Binv -= u row^T in place, skipping the zero entries of row (rows of B^-1 are sparse)."""
    n = Binv.shape[0]
    for j in range(Binv.shape[1]):
        rj = row[j]
        if rj != 0.0:
            for i in range(n):
                Binv[i, j] -= u[i] * rj


@njit(cache=True)
def _combine_columns(Binv, idx, vals):  # pragma: no cover - compiled
    """sum_k Binv[:, idx[k]] vals[k]: B^-1 times a sparse column, summed in the order of k."""
    out = np.zeros(Binv.shape[0])
    for k in range(idx.shape[0]):
        c, v = idx[k], vals[k]
        for i in range(Binv.shape[0]):
            out[i] += Binv[i, c] * v
    return out


@njit(cache=True)
def _matvec(Binv, x):  # pragma: no cover - compiled
    """Binv x, column by column in a fixed order (BLAS's order changes with threads and kernel)."""
    out = np.zeros(Binv.shape[0])
    for j in range(Binv.shape[1]):
        xj = x[j]
        if xj != 0.0:
            for i in range(Binv.shape[0]):
                out[i] += Binv[i, j] * xj
    return out


@njit(cache=True)
def _gauss_jordan_inverse(M):  # pragma: no cover - compiled
    """(M^-1, True) by Gauss-Jordan elimination with partial pivoting (the first row of the largest
    magnitude), or (garbage, False) if a pivot column is exactly zero. M: (k, k), copied."""
    k = M.shape[0]
    A = M.copy()
    inv = np.eye(k)
    for c in range(k):
        p, best = c, abs(A[c, c])
        for i in range(c + 1, k):
            if abs(A[i, c]) > best:
                p, best = i, abs(A[i, c])
        if best == 0.0:
            return inv, False
        if p != c:
            for j in range(k):
                A[c, j], A[p, j] = A[p, j], A[c, j]
                inv[c, j], inv[p, j] = inv[p, j], inv[c, j]
        piv = A[c, c]
        for j in range(k):
            A[c, j] /= piv
            inv[c, j] /= piv
        for i in range(k):
            f = A[i, c]
            if i != c and f != 0.0:
                for j in range(c, k):
                    A[i, j] -= f * A[c, j]
                for j in range(k):
                    inv[i, j] -= f * inv[c, j]
    return inv, True


@njit(cache=True)
def _lexicographic_tie_break(Binv, tie, a, tol):  # pragma: no cover - compiled
    """The row of ``tie`` whose (B^-1)_i / a_i is lexicographically smallest (ties within tol; the
    lowest row of ``tie`` among those left after every column)."""
    alive = np.ones(tie.shape[0], dtype=np.bool_)
    left = tie.shape[0]
    for j in range(Binv.shape[1]):
        m = np.inf
        for k in range(tie.shape[0]):
            if alive[k]:
                m = min(m, Binv[tie[k], j] / a[tie[k]])
        bound = m + tol * max(1.0, abs(m))
        for k in range(tie.shape[0]):
            if alive[k] and Binv[tie[k], j] / a[tie[k]] > bound:
                alive[k] = False
                left -= 1
        if left == 1:
            break
    for k in range(tie.shape[0]):
        if alive[k]:
            return tie[k]
    return tie[0]


@dataclass
class LemkeOutcome:
    """z: the solution (None unless status is SOLVED or INACCURATE); pivots: basis changes, the first
    included; pivot_hash: BLAKE2b (16 hex digits) of the pivot sequence; residual: ||min(z, w)||_inf of
    the returned z and check_residual that of the independent recomputation of the final basis
    (module docstring), both None without a final basis."""
    z: np.ndarray | None
    status: str
    pivots: int
    refactorizations: int = 0
    pivot_hash: str = ""
    residual: float | None = None
    check_residual: float | None = None


class _Basis:
    """The basis of the augmented system: variable ids 0..n-1 are w, n..2n-1 are z, 2n is z0."""

    def __init__(self, A: sp.csc_matrix, d: np.ndarray, q: np.ndarray, divide: bool):
        n = q.shape[0]
        self.n, self.A, self.d, self.q, self.divide = n, A, d, q, divide
        self.full = sp.hstack([sp.identity(n, format="csc"), -A, sp.csc_matrix(-d[:, None])], format="csc")
        self.var = np.arange(n)  # the variable basic in each row
        # B^-1 = I, written in place: np.asfortranarray(np.eye(n)) wrote n^2 entries twice (eye, then
        # its Fortran copy), which on 7,220 unknowns took seconds before the first clock check
        self.Binv = np.zeros((n, n), order="F")
        self.Binv[np.diag_indices(n)] = 1.0
        self.x = q.copy()
        self.z0_row = -1
        self.refactorizations = 0
        # an exactly representable probe (np.cos would differ in the last bit between SIMD paths)
        self.probe = 1.0 + (np.arange(n) % 7) / 8.0

    def image(self, var: int) -> np.ndarray:
        """B^-1 times the column of ``var`` in [I, -A, -d]."""
        lo, hi = self.full.indptr[var], self.full.indptr[var + 1]
        return _combine_columns(self.Binv, self.full.indices[lo:hi], self.full.data[lo:hi])

    def leaving_row(self, a: np.ndarray, rows: np.ndarray) -> int:
        """Lexicographic minimum-ratio test over ``rows`` (module docstring)."""
        ratio = self.x[rows] / a[rows]
        best = ratio.min()
        tie = rows[ratio <= best + TIE_TOL * max(1.0, abs(best))]
        if self.z0_row in tie:
            return self.z0_row
        tie = tie[a[tie] >= STABLE_PIVOT * a[tie].max()]
        return int(tie[0]) if tie.size == 1 else int(_lexicographic_tie_break(self.Binv, tie, a, TIE_TOL))

    def pivot(self, r: int, a: np.ndarray, entering: int) -> int:
        """Make ``entering`` basic in row r (a = its image); returns the variable that left."""
        row = self.Binv[r, :] / a[r] if self.divide else self.Binv[r, :] * (1.0 / a[r])
        u = a.copy()
        u[r] -= 1.0  # row r becomes row / a_r, every other row i loses a_i * row
        _rank_one_update(self.Binv, u, row)
        theta = self.x[r] / a[r]
        self.x -= theta * a
        self.x[r] = theta
        self._clean()
        leaving = int(self.var[r])
        self.var[r] = entering
        if entering == 2 * self.n:
            self.z0_row = r
        return leaving

    def _clean(self) -> None:
        """Round-off zeros of the basic values to exact zeros (module docstring)."""
        top = max(1.0, float(self.x.max()))
        self.x[(np.abs(self.x) < ZERO_TOL * top) | ((self.x < 0) & (self.x > -DRIFT_TOL * top))] = 0.0

    def basis_matrix(self) -> sp.csc_matrix:
        return self.full[:, self.var].tocsc()

    def check_drift(self) -> bool:
        """Refactorise B^-1 when the basic values no longer solve B x = q or B^-1 no longer inverts B
        (checked on the probe vector); False if the basis is exactly singular."""
        B = self.basis_matrix()
        if (np.abs(B @ self.x - self.q).max() > DRIFT_TOL * (1.0 + np.abs(self.q).max())
                or np.abs(_matvec(self.Binv, B @ self.probe) - self.probe).max() > INVERSE_TOL):
            if not self.refactorize(B):
                return False
            self.x = _matvec(self.Binv, self.q)
            self._clean()
        return True

    def refactorize(self, B: sp.csc_matrix) -> bool:
        """B^-1 afresh, without BLAS: with W the rows whose basic variable is w_i (identity columns) and
        R the others, the structural columns C (z's and z0's) give x_C = C_R^-1 b_R and
        x_w(i) = b_i - C_i x_C, so only the |R| x |R| block C_R is inverted (module docstring)."""
        n = self.n
        is_w = self.var < n
        pos_c = np.flatnonzero(~is_w)
        rows_r = np.setdiff1d(np.arange(n), self.var[is_w])
        C = B[:, pos_c].tocsr()
        G, ok = _gauss_jordan_inverse(C[rows_r].toarray())
        self.refactorizations += 1
        if not ok:
            return False
        Binv = np.zeros((n, n), order="F")
        Binv[np.ix_(pos_c, rows_r)] = G
        pos_w = np.flatnonzero(is_w)
        rows_w = self.var[pos_w]
        Binv[pos_w, rows_w] = 1.0
        Binv[np.ix_(pos_w, rows_r)] = -(C[rows_w] @ G)  # sparse x dense: compiled loops, no BLAS
        self.Binv = Binv
        return True

    def _z(self, x: np.ndarray) -> np.ndarray:
        z = np.zeros(self.n)
        is_z = (self.var >= self.n) & (self.var < 2 * self.n)
        z[self.var[is_z] - self.n] = x[is_z]
        return z

    def solution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(z, basic values, the check's basic values) of the final basis: a fresh compiled inverse with
        iterative refinement, and an independent SuperLU solve with refinement; None if singular."""
        B = self.basis_matrix()
        if not self.refactorize(B):
            return None
        x = _matvec(self.Binv, self.q)
        for _ in range(REFINE_STEPS):
            x = x + _matvec(self.Binv, self.q - B @ x)
        try:
            lu = spla.splu(B)
        except RuntimeError:  # exactly singular for SuperLU: the check fails
            return self._z(x), x, np.full(self.n, np.nan)
        y = lu.solve(self.q)
        for _ in range(REFINE_STEPS):
            y = y + lu.solve(self.q - B @ y)
        return self._z(x), x, y


def _pivot_hash(pairs: list[int]) -> str:
    return hashlib.blake2b(np.asarray(pairs, dtype=np.int64).tobytes(), digest_size=8).hexdigest()


def lemke(A, q, *, cover: np.ndarray | None = None, max_pivots: int | None = None,
          time_limit: float | None = None, pivot_divide: bool = True) -> LemkeOutcome:
    """Solve LCP(A, q) by Lemke's method (module docstring). A: (n, n) sparse or dense;
    pivot_divide=False: the pivot row multiplied by 1 / a_r instead of divided by a_r (the round-off probe)."""
    q = np.asarray(q, dtype=float).reshape(-1)
    n = q.shape[0]
    A = sp.csc_matrix(A, dtype=float)
    if A.shape != (n, n):
        raise InputError(f"LCP matrix has shape {A.shape}, expected {n} x {n}")
    d = np.ones(n) if cover is None else np.asarray(cover, dtype=float).reshape(-1)
    if d.shape != (n,) or not np.all(d > 0):
        raise InputError("the covering vector must have one positive entry per row")
    if n == 0 or q.min() >= 0:
        return LemkeOutcome(np.zeros(n), SOLVED, 0, pivot_hash=_pivot_hash([]), residual=0.0, check_residual=0.0)
    cap = 10 * n if max_pivots is None else int(max_pivots)
    t0 = time.perf_counter()
    basis = _Basis(A, d, q, pivot_divide)
    # z0 enters; the lexicographically smallest [q_i, e_i] / d_i leaves (the most negative q_i / d_i)
    r = basis.leaving_row(d, np.arange(n))
    entering = n + basis.pivot(r, -d, 2 * n)  # the complement of the w that left
    sequence = [2 * n, r]
    pivots = 1

    def ended(status: str) -> LemkeOutcome:
        return LemkeOutcome(None, status, pivots, basis.refactorizations, _pivot_hash(sequence))

    while True:
        if pivots >= cap:
            return ended(MAX_PIVOTS)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            return ended(TIME_LIMIT)
        a = basis.image(entering)
        top = np.abs(a).max()
        rows = np.flatnonzero(a > PIVOT_TOL * top) if top > 0 else np.zeros(0, dtype=int)
        if rows.size == 0:
            return ended(RAY)
        r = basis.leaving_row(a, rows)
        sequence += [entering, r]
        left = basis.pivot(r, a, entering)
        pivots += 1
        if left == 2 * n or basis.x[basis.z0_row] == 0.0:
            # z0 left, or it is basic at (a round-off) zero: either way w = A z + q, z ⊥ w
            return _final(basis, A, q, pivots, _pivot_hash(sequence))
        entering = left + n if left < n else left - n
        if (pivots % CHECK_EVERY == 0 or abs(a[r]) < SMALL_PIVOT * top) and not basis.check_drift():
            return ended(SINGULAR)


def _final(basis: _Basis, A: sp.csc_matrix, q: np.ndarray, pivots: int, pivot_hash: str) -> LemkeOutcome:
    """The outcome of a complementary final basis, checked twice (module docstring)."""
    solved = basis.solution()
    if solved is None:
        return LemkeOutcome(None, SINGULAR, pivots, basis.refactorizations, pivot_hash)
    z, x, y = solved
    tol = ACCURACY_TOL * max(1.0, float(np.abs(q).max()))
    z_check = basis._z(y)
    residual, check = lcp_residual(z, A @ z + q), lcp_residual(z_check, A @ z_check + q)
    feasible = min(x.min(), y.min()) >= -tol  # NaN (a singular check) compares False
    ok = residual <= tol and check <= tol and bool(feasible)
    return LemkeOutcome(z, SOLVED if ok else INACCURATE, pivots, basis.refactorizations, pivot_hash,
                        residual, check)


class LemkeSolver(Solver):
    """LCP0: Lemke's method on the dimensionless LCP of an ``lcp`` model (formulations.lcp_pyramid).
    iterations = pivots; solver_status: complementary solution | inaccurate basis | ray termination |
    singular basis | max pivots | time limit; stop cause CONVERGED, STALLED (inaccurate basis: z is
    kept for the workbench to judge, never a solution), FAILED (ray, singular), MAX_ITER, TIMEOUT.
    info: pivots, refactorizations, pivot_hash, and for a final basis its residual and the
    independent recomputation's (check_residual). params["pivot_divide"]=False runs the round-off
    probe (module docstring). History: one row for the final basis (error: lcp_residual of its z on the dimensionless LCP;
    pivots have no objective)."""

    name = "lemke"
    summary = "Lemke's complementary pivoting, lexicographic (dense; up to a few thousand unknowns)"
    model_kinds = ("lcp",)
    compiled = True
    params = (
        Param("pivot_divide", bool, True, "divide the pivot row by the pivot (False: multiply by its "
              "reciprocal, the round-off probe)"),
    )

    def solve(self, model, options: SolveOptions) -> SolveResult:
        A_s, q_s = model.scaled
        rec = Recorder(options, "lcp_residual")
        out = lemke(A_s, q_s, max_pivots=self.max_iter(options), time_limit=options.time_limit,
                    pivot_divide=options.params["pivot_divide"])
        seconds = rec.elapsed()
        result = self.new_result(model)
        result.solver_status, result.iterations = out.status, out.pivots
        result.info.update(pivots=out.pivots, refactorizations=out.refactorizations, pivot_hash=out.pivot_hash,
                           lcp_size=model.size)
        stop = _STOPS[out.status]
        if out.z is None:
            result.message = f"{out.status} after {out.pivots} pivots"
            rec.record(out.pivots, None, None, seconds=seconds)
            return rec.finish(result, stop, seconds)
        result.info.update(residual=out.residual, check_residual=out.check_residual)
        if out.status != SOLVED:
            result.message = (f"{out.status} after {out.pivots} pivots: residual {out.residual:.1e}, "
                              f"recomputed {out.check_residual:.1e}")
        rec.record(out.pivots, None, out.residual, seconds=seconds)
        z = out.z * model.z_unit
        result.info["z"] = z
        result.nu, result.v = model.recover(z)
        return rec.finish(result, stop, seconds)


_STOPS = {SOLVED: StopCause.CONVERGED, INACCURATE: StopCause.STALLED, RAY: StopCause.FAILED, SINGULAR: StopCause.FAILED,
          MAX_PIVOTS: StopCause.MAX_ITER, TIME_LIMIT: StopCause.TIMEOUT}
