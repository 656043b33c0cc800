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
  to DRIFT_TOL and B^-1 (B p) = p to INVERSE_TOL on a fixed probe p (sparse products); otherwise
  B^-1 is refactorised from scratch (dense inverse, O(n^3), counted in ``refactorizations``).
Basic values within ZERO_TOL max(1, max x) of zero are set to zero so that degenerate rows tie
exactly, and so are round-off negatives down to -DRIFT_TOL max(1, max x), so that the ratio test
never steps backwards. The returned solution is recomputed from a sparse LU solve of B x = q with the final
basis, and the workbench judges it by the LCP residual like any other solver's.

Linear algebra: a dense explicit B^-1 (n x n, Fortran order) updated in place by a rank-one update
per pivot (a numba kernel that skips the zero entries of the pivot row), O(n^2) flops and 8 n^2
bytes: dense pivoting is inherent to this implementation and fine up to a few thousand unknowns
(the 210-disk cannonball of Anitescu and Hart 2003 has 2,360: 45 MB, a few ms per pivot); beyond that the
memory and the O(n^2) pivots make it impractical (use LCP1/LCP2 or the conic formulations).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

from workbench.errors import InputError
from workbench.lcp_metrics import lcp_residual
from workbench.solvers.base import SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.recorder import Recorder

__all__ = ["lemke", "LemkeOutcome", "LemkeSolver", "SOLVED", "INACCURATE", "RAY", "MAX_PIVOTS", "TIME_LIMIT"]

SOLVED, INACCURATE = "complementary solution", "inaccurate basis"
RAY, MAX_PIVOTS, TIME_LIMIT = "ray termination", "max pivots", "time limit"
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
    """sum_k Binv[:, idx[k]] vals[k]: B^-1 times a sparse column."""
    out = np.zeros(Binv.shape[0])
    for k in range(idx.shape[0]):
        c, v = idx[k], vals[k]
        for i in range(Binv.shape[0]):
            out[i] += Binv[i, c] * v
    return out


@njit(cache=True)
def _lexicographic_tie_break(Binv, tie, a, tol):  # pragma: no cover - compiled
    """The row of ``tie`` whose (B^-1)_i / a_i is lexicographically smallest (ties within tol)."""
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
    included."""
    z: np.ndarray | None
    status: str
    pivots: int
    refactorizations: int = 0


class _Basis:
    """The basis of the augmented system: variable ids 0..n-1 are w, n..2n-1 are z, 2n is z0."""

    def __init__(self, A: sp.csc_matrix, d: np.ndarray, q: np.ndarray):
        n = q.shape[0]
        self.n, self.A, self.d, self.q = n, A, d, q
        self.full = sp.hstack([sp.identity(n, format="csc"), -A, sp.csc_matrix(-d[:, None])], format="csc")
        self.var = np.arange(n)  # the variable basic in each row
        self.Binv = np.asfortranarray(np.eye(n))
        self.x = q.copy()
        self.z0_row = -1
        self.refactorizations = 0

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
        row = self.Binv[r, :] / a[r]
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

    def check_drift(self) -> None:
        """Refactorise B^-1 when the basic values no longer solve B x = q or B^-1 no longer inverts B
        (checked on a fixed probe vector)."""
        B = self.basis_matrix()
        probe = np.cos(np.arange(self.n))
        if (np.abs(B @ self.x - self.q).max() > DRIFT_TOL * (1.0 + np.abs(self.q).max())
                or np.abs(self.Binv @ (B @ probe) - probe).max() > INVERSE_TOL):
            self.Binv = np.asfortranarray(np.linalg.inv(B.toarray()))
            self.x = self.Binv @ self.q
            self._clean()
            self.refactorizations += 1

    def solution(self) -> np.ndarray:
        """z from a fresh sparse LU solve of B x = q with the current (complementary) basis."""
        x = spla.splu(self.basis_matrix()).solve(self.q)
        z = np.zeros(self.n)
        is_z = (self.var >= self.n) & (self.var < 2 * self.n)
        z[self.var[is_z] - self.n] = x[is_z]
        return z


def lemke(A, q, *, cover: np.ndarray | None = None, max_pivots: int | None = None,
          time_limit: float | None = None) -> LemkeOutcome:
    """Solve LCP(A, q) by Lemke's method (module docstring). A: (n, n) sparse or dense."""
    q = np.asarray(q, dtype=float).reshape(-1)
    n = q.shape[0]
    A = sp.csc_matrix(A, dtype=float)
    if A.shape != (n, n):
        raise InputError(f"LCP matrix has shape {A.shape}, expected {n} x {n}")
    d = np.ones(n) if cover is None else np.asarray(cover, dtype=float).reshape(-1)
    if d.shape != (n,) or not np.all(d > 0):
        raise InputError("the covering vector must have one positive entry per row")
    if n == 0 or q.min() >= 0:
        return LemkeOutcome(np.zeros(n), SOLVED, 0)
    cap = 10 * n if max_pivots is None else int(max_pivots)
    t0 = time.perf_counter()
    basis = _Basis(A, d, q)
    # z0 enters; the lexicographically smallest [q_i, e_i] / d_i leaves (the most negative q_i / d_i)
    r = basis.leaving_row(d, np.arange(n))
    entering = n + basis.pivot(r, -d, 2 * n)  # the complement of the w that left
    pivots = 1
    while True:
        if pivots >= cap:
            return LemkeOutcome(None, MAX_PIVOTS, pivots, basis.refactorizations)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            return LemkeOutcome(None, TIME_LIMIT, pivots, basis.refactorizations)
        a = basis.image(entering)
        top = np.abs(a).max()
        rows = np.flatnonzero(a > PIVOT_TOL * top) if top > 0 else np.zeros(0, dtype=int)
        if rows.size == 0:
            return LemkeOutcome(None, RAY, pivots, basis.refactorizations)
        r = basis.leaving_row(a, rows)
        left = basis.pivot(r, a, entering)
        pivots += 1
        if left == 2 * n or basis.x[basis.z0_row] == 0.0:
            # z0 left, or it is basic at (a round-off) zero: either way w = A z + q, z ⊥ w
            z = basis.solution()
            ok = lcp_residual(z, A @ z + q) <= ACCURACY_TOL * max(1.0, float(np.abs(q).max()))
            return LemkeOutcome(z, SOLVED if ok else INACCURATE, pivots, basis.refactorizations)
        entering = left + n if left < n else left - n
        if pivots % CHECK_EVERY == 0 or abs(a[r]) < SMALL_PIVOT * top:
            basis.check_drift()


class LemkeSolver(Solver):
    """LCP0: Lemke's method on the dimensionless LCP of an ``lcp`` model (formulations.lcp_pyramid).
    iterations = pivots; solver_status: complementary solution | inaccurate basis | ray termination |
    max pivots | time limit; stop cause CONVERGED, STALLED (inaccurate basis), FAILED (ray), MAX_ITER,
    TIMEOUT. History: one row for the final basis (error: lcp_residual of its z on the dimensionless LCP;
    pivots have no objective)."""

    name = "lemke"
    summary = "Lemke's complementary pivoting, lexicographic (dense; up to a few thousand unknowns)"
    accepts = ("lcp",)
    compiled = True

    def solve(self, model, options: SolveOptions) -> SolveResult:
        A_s, q_s = model.scaled
        rec = Recorder(options, "lcp_residual")
        out = lemke(A_s, q_s, max_pivots=self.max_iter(options), time_limit=options.time_limit)
        seconds = rec.elapsed()
        result = self.new_result(model)
        result.solver_status, result.iterations = out.status, out.pivots
        result.info.update(pivots=out.pivots, refactorizations=out.refactorizations, lcp_size=model.size)
        stop = _STOPS[out.status]
        if out.z is None:
            result.message = f"{out.status} after {out.pivots} pivots"
            rec.record(out.pivots, None, None, seconds=seconds)
            return rec.finish(result, stop, seconds)
        rec.record(out.pivots, None, lcp_residual(out.z, A_s @ out.z + q_s), seconds=seconds)
        z = out.z * model.z_unit
        result.info["z"] = z
        result.nu, result.v = model.recover(z)
        return rec.finish(result, stop, seconds)


_STOPS = {SOLVED: StopCause.CONVERGED, INACCURATE: StopCause.STALLED, RAY: StopCause.FAILED,
          MAX_PIVOTS: StopCause.MAX_ITER, TIME_LIMIT: StopCause.TIMEOUT}
