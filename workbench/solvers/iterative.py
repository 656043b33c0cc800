"""Plumbing shared by the in-house iterative solvers (apgd, pgs, jacobi, bb, admm).

Every one of them solves the model of a formulation's :class:`~formulations.base.CCQOModel`,

    min_nu  1/2 nu^T N nu + (r + a)^T nu   s.t.  gamma_i in K_i,  lambda free          (Melanz et al. 2015 eq. 15)

with a = 0 for the relaxed dual (Melanz et al. 2015 eq. 14) and, for the anti-relaxed model, the shift
a_i = [mu_i ||u_t,i||, 0, 0] of the current relative velocity u = N nu + r (eqs. 27-28, algorithm lines
33-37; a plus sign). What is shared lives here, once: the operator N, the linear term, the stopping
measure, the caps, the best iterate, the history and the SolveResult; a solver only writes its update
rule (:meth:`IterativeSolver.iterate`), calling :meth:`IterativeRun.tick` once per iteration.

Operator. N is applied matrix-free through ``problem.apply_N`` (C^T (M^-1 (C x)) for global problems),
except for a relaxed local problem whose W is not symmetric (Siconos dumps W with asymmetry 1e-4..1e-3):
the relaxed dual is then the QP of the symmetric part W_s = (W + W^T)/2 (nu^T W nu = nu^T W_s nu), as for
the conic solvers, and the solvers iterate with W_s. The exact (anti-relaxed) problem is the
complementarity problem of W itself, judged by the Siconos error computed with W, so anti-relaxed runs
keep W.

Stopping measure (one per mode, consistent with :func:`workbench.judging.finalize`):

* relaxed (and the relaxed sub-problems of the outer anti-relaxation loop, with their fixed shift a):
  the residual is the CCP residual of Melanz et al. 2015 eq. 39, rho = ||nu - P(nu - g_d w)|| / g_d with
  w = N nu + r + a and g_d = 1e-6 (:func:`workbench.metrics.ccp_residual`); the measure is rho / s with
  s = max(||r||, ||nu||, ||u||), the normalisation of the ``relaxed_error`` that finalize judges. For a
  feasible nu, t -> ||nu - P(nu - t w)|| / t is non-increasing (Calamai and More 1987, lemma 2.2), so
  the natural-map error e_1 = ||nu - P(nu - w)|| / s <= rho / s: in exact arithmetic rho / s <= tol
  implies relaxed_error <= tol. In floating point, eq. 39 cannot resolve relative errors below about
  eps ||nu|| / (g_d s) ~ 2e-10 (the step g_d w vanishes against nu): rho / s is then rounding noise,
  too small or too large. So the run stops when rho / s <= max(tol, 1e-9) AND e_1 <= tol, e_1 being
  computed only once the first test passes (one more projection, near the end only): the point it
  stops at is the one finalize calls solved, for any tol.
* anti-relaxed: the Siconos error ||nu - P(nu - u_hat)|| / s, u_hat = u + a(u) (De Saxce velocity), from
  the u = N nu + r the solver already has: one projection, no call to metrics.evaluate.

The iterate with the smallest measure is kept and returned when a cap stops the run (Melanz et al. 2015
algorithm lines 19-23); a run that converges returns the iterate that passed the test.

Anti-relaxation, ``options.params["anti_relaxation"]`` (declared in ITERATIVE_PARAMS):

* "inner" (default): the shift is updated after every iteration from the current u (Melanz et al. 2015 lines
  33-37); the solver reads :attr:`IterativeRun.linear_term` after each :meth:`IterativeRun.tick`.
* "outer": a fixed-point (Picard) loop: solve the relaxed problem with a fixed shift a_j to the inner
  tolerance max(tol / 2, err_{j-1} / 10) (inexact early solves, exact later ones), set
  a_{j+1} = a(u(nu_j)), repeat until the Siconos error is <= tol, a cap stops it, or the error has not
  improved for ``outer_patience`` outer iterations ("stagnated": the shift stopped changing usefully).
  By nonexpansiveness of P, err_j <= inner error + ||a_{j+1} - a_j|| / s, so tol / 2 inner accuracy
  suffices once the shift has converged.

Caps, best iterate, history and stop cause go through the run's
:class:`~workbench.solvers.recorder.Recorder`: ``options.max_iter`` (default 10,000; in the outer mode it
counts all inner iterations) and ``options.time_limit`` [s, wall clock], both checked every iteration;
the result's ``stop`` is CONVERGED, MAX_ITER, TIMEOUT or (outer mode) STALLED.

History (``options.keep_history``): one row per iteration; objective = the dual objective 1/2 nu.(u + r)
from the u at hand; error = ``ccp_residual`` (eq. 39 with the gradient of the problem being solved,
N nu + r + a) for relaxed models, ``siconos_error`` for anti-relaxed ones, which also get the extra column
ccp_residual. When it is off nothing beyond the stopping measure is computed. Each row hands its iterate
to the recorder, which samples it for the history's judged_error column (workbench.solvers.recorder).
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numba import njit

from workbench import metrics
from workbench.metrics import _stopping_sums
from workbench.cones import project_unknowns
from workbench.errors import InputError
from workbench.params import Param
from workbench.problem import apply_operator, cached_property, intermediate_length  # noqa: F401 - the solvers' names
from workbench.blocks import dot, norm  # noqa: F401 - dot: the solvers' inner products
from workbench.solvers.base import OUTER_STOPS, SolveOptions, SolveResult, Solver, StopCause
from workbench.solvers.recorder import Recorder

__all__ = ["IterativeSolver", "IterativeRun", "CONVERGED", "MAX_ITER", "CHUNK_DONE", "NEEDS_L", "GO_ON", "count_and_check",
           "apply_operator", "intermediate_length", "stopping_measure", "measure_and_keep", "lipschitz_ratio",
           "ccp_rule", "unit_step_holds", "NOT_YET", "HOLDS", "CHECK_UNIT_STEP", "ANTI_RELAXATION_MODES", "ITERATIVE_PARAMS",
           "F_BEST", "F_MEASURE", "F_SCALE", "F_COPIED", "F_STEP", "F_NORM_R0", "F_TARGET", "F_OWN",
           "K_ITER", "K_STOP", "K_MAX_ITER", "K_D", "K_INNER", "K_STARTED", "K_OWN", "symmetrise_blocks"]

ANTI_RELAXATION_MODES = ("inner", "outer")
#: settings every iterative solver understands (options.params); a solver's ``params`` start with these
ITERATIVE_PARAMS = (
    Param("anti_relaxation", str, "inner", "anti-relaxed models: shift updated every iteration (inner) or by "
          "an outer fixed-point loop (outer)", ANTI_RELAXATION_MODES),
    Param("outer_patience", int, 10, "outer mode: stop after this many outer iterations without improvement"),
)
#: relative accuracy below which eq. 39 (g_d = 1e-6) is rounding noise (module docstring)
CCP_RESOLUTION = 1e-9
#: what a solver's compiled loop returns: its stopping test held, max_iter iterations are done, it did
#: the iterations asked of this call, or it needs a start for L (Melanz et al. 2015 line 6 gave no
#: positive finite ratio): :meth:`IterativeRun.drive` acts on each
CONVERGED, MAX_ITER, CHUNK_DONE, NEEDS_L = 0, 1, 2, 3
#: what :func:`count_and_check` returns when the loop goes on
GO_ON = -1
#: Named layout of the state a compiled loop (apgd, bb, jacobi, pgs) carries between its calls, as
#: Siconos names its iparam and dparam slots: two arrays, since every argument of a compiled call costs
#: its conversion (:meth:`IterativeRun.compiled_state` builds them; a solver's own slots start at F_OWN and
#: K_OWN and are named in its module). Numba freezes them into the compiled kernels, and its on-disk
#: cache keys on each kernel's own file: a change of a value here must touch the kernels' files too.
#: ``fs`` (float64): what :func:`measure_and_keep` keeps (the smallest measure so far, the last measure,
#: its scale s, 1.0 once a point was copied), then the measure's constants (its step, ||r||, the target).
F_BEST, F_MEASURE, F_SCALE, F_COPIED, F_STEP, F_NORM_R0, F_TARGET, F_OWN = range(8)
#: ``ks`` (int64): iterations done, the count at which the call returns, the iteration cap (-1: none),
#: d, inner (1: the shift a(u) follows every iteration), started (1 once the loop's first call set up).
K_ITER, K_STOP, K_MAX_ITER, K_D, K_INNER, K_STARTED, K_OWN = range(7)
#: about this many operations between two returns of a compiled loop without a history (a few
#: milliseconds: the time limit is checked between calls)
_CHUNK_WORK = 4_000_000


class IterativeRun:
    """State of one solve: operator, linear term, measure, caps, best iterate and history."""

    def __init__(self, model, options: SolveOptions, params: dict[str, Any], max_iter: int | None):
        self.problem = p = model.problem
        self.build_seconds = model.build_seconds
        self.options = options
        self.params = params
        self.d, self.n_c, self.n, self.m = p.d, p.n_contacts, p.n_unknowns, p.n_contact_unknowns
        self.mu = p.mu
        self.r0 = p.r
        self.norm_r0 = p.norm_r
        self.anti = bool(model.anti_relaxed)
        self.mode = params["anti_relaxation"] if self.anti else "relaxed"
        self.tol = float(options.tol)
        self.rec = Recorder(options, "siconos_error" if self.anti else "ccp_residual",
                            ("ccp_residual",) if self.anti else (), max_iter)
        self.k = 0                      # iterations done (all inner iterations in the outer mode)
        self.a = np.zeros(self.n)       # the shift in the linear term r + a
        self.target = self.tol          # the stopping tolerance of the current (sub-)problem
        self.stopped: StopCause | None = None  # MAX_ITER | TIMEOUT
        self.converged = False           # the current (sub-)problem met self.target
        self.error = math.inf            # the stopping measure of the last iterate tick() accounted
        self.info: dict[str, Any] = {}

    # ------------------------------------------------------------------ operator and data
    @cached_property
    def N_is_symmetric(self) -> bool:
        """N = C^T M^-1 C of a global problem is; a local W (Siconos dumps) may not be, beyond 1e-14."""
        if self.problem.is_global:
            return True
        W = self.problem.N
        asym = abs(W - W.T)
        return not (asym.nnz and asym.max() > 1e-14 * abs(W).max())

    @cached_property
    def _symmetrise(self) -> bool:
        """Relaxed local problem with a non-symmetric W: iterate with W_s (module docstring)."""
        return not self.anti and not self.N_is_symmetric

    @property
    def operator_is_symmetric(self) -> bool:
        """Whether the operator the solvers iterate with (apply_N, N_matrix) is symmetric."""
        return self.N_is_symmetric or self._symmetrise

    @cached_property
    def N_matrix(self) -> sp.csr_matrix:
        """N as a sparse matrix, formed once where a solver needs its entries and has no matrix-free
        form (pgs with a non-diagonal M, admm and pgs on local problems, where W is the data); W_s for a
        relaxed non-symmetric local problem."""
        N = self.problem.N
        return ((N + N.T) * 0.5).tocsr() if self._symmetrise else N

    def apply_N(self, x: np.ndarray) -> np.ndarray:
        """N x, matrix-free where the problem allows it."""
        return self.N_matrix @ x if self._symmetrise else self.problem.apply_N(x)

    @cached_property
    def _scratch(self) -> np.ndarray:
        """Work array of the stopping measure (the natural map), length n_unknowns."""
        return np.empty(self.n)

    @property
    def compiled_N(self) -> tuple:
        """The operator of :meth:`apply_N` as the arguments of :func:`apply_operator` (without its work
        array): ``problem.compiled_operator`` (N x = B (A x) or A x, workbench.problem), or W_s of a
        symmetrised relaxed local problem."""
        if not self._symmetrise:
            return self.problem.compiled_operator
        A = self.N_matrix
        return A.indptr, A.indices, A.data, A.indptr, A.indices, A.data, False

    @cached_property
    def diagonal_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric parts of the d x d contact diagonal blocks of N (n_c, d, d) and the joint
        diagonal entries (n_b,) (N is formed, sparse, only for joints with a non-diagonal M)."""
        S = self.problem.N_diagonal_blocks.copy()
        symmetrise_blocks(S)
        return S, metrics.joint_diagonal(self.problem)

    @property
    def linear_term(self) -> np.ndarray:
        """r + a for the current shift."""
        return self.r0 + self.a

    def project(self, x: np.ndarray) -> np.ndarray:
        """Projection onto K x R^{n_b} (workbench.cones)."""
        return project_unknowns(x, self.mu, self.d)

    def initial_point(self) -> np.ndarray:
        """options.warm_start (physical impulses) projected onto K x R^{n_b}, or 0.

        A cold start leaves the shift a = 0 (Melanz et al. 2015 line 4, r_0 = r). A warm start in the inner
        anti-relaxed mode also sets a = a(u(x0)): the shift of the point the run starts from, so that
        a warm start at the exact solution is already a fixed point (one product with N)."""
        w = self.options.warm_start
        if w is None:
            return np.zeros(self.n)
        w = np.asarray(w, dtype=float).reshape(-1)
        if w.shape[0] != self.n:
            raise InputError(f"warm start has length {w.shape[0]}, the problem has {self.n} unknowns")
        x = self.project(w)
        if self.mode == "inner":
            self.a = self.shift(self.apply_N(x) + self.r0)
        return x

    def shift(self, u: np.ndarray) -> np.ndarray:
        """The anti-relaxation shift a(u) = [mu_i ||u_t,i||, 0, 0]_i (0 for the joints)."""
        return metrics.de_saxce_shift(self.problem, u)

    def siconos_error(self, x: np.ndarray, u: np.ndarray, a: np.ndarray, scale: float | None = None) -> float:
        """The exact-problem error of workbench.metrics with a = a(u) at hand (``scale`` = s when the
        caller has it)."""
        return metrics.siconos_error(self.problem, x, u, shift=a, scale=scale)

    # ------------------------------------------------------------------ one iteration
    @property
    def measure_step(self) -> float:
        """The step s of the natural map x - P(x - s w) in the stopping measure: 1 for the Siconos
        error of inner anti-relaxed runs, g_d (Melanz et al. 2015 eq. 39) otherwise."""
        return 1.0 if self.mode == "inner" else metrics.CCP_RESIDUAL_STEP

    def tick(self, x: np.ndarray, u: np.ndarray) -> bool:
        """Account one iteration that produced the feasible iterate ``x`` with u = N x + r (no shift).

        Computes the stopping measure (module docstring; :func:`stopping_measure`), keeps the best
        iterate, records the history row and checks the caps. In the inner anti-relaxed mode it also
        sets the new shift a(u) (read it through :attr:`linear_term`). Returns True when the solver
        must stop."""
        self.k += 1
        # in inner runs a(u) is written into self.a in place: the IterativeRun owns that array
        err, scale, self.converged = stopping_measure(
            np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(u, dtype=float), self.a, self.mu, self.d,
            self.mode == "inner", self.measure_step, self.norm_r0, self.target, self._scratch)
        self.error = err
        rec = self.rec
        rec.offer(x, err, force=self.converged)
        elapsed = rec.elapsed()
        if rec.keep:
            self._record(x, u, err, scale, elapsed)
        if self.converged:
            return True
        self.stopped = rec.capped(self.k, elapsed)
        return self.stopped is not None

    def chunk(self, work_per_iteration: int) -> int:
        """Iterations per call of a compiled loop: 1 when a history is kept (a row per iteration), else
        :func:`chunk_of` ``work_per_iteration``."""
        return 1 if self.rec.keep else chunk_of(work_per_iteration)

    def compiled_state(self, chunk: int, floats: tuple = (), ints: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
        """The state arrays (fs, ks) of a compiled loop in the layout F_* and K_* (above), at the run's
        current count, measure and target, with the solver's own slots ``floats`` and ``ints`` after."""
        rec = self.rec    # tuples of plain numbers: a bool in a list made np.array 1 us slower per solve
        fs = np.array((rec.best_err, np.inf, 1.0, 0.0, self.measure_step, self.norm_r0, self.target) + tuple(floats))
        ks = np.array((self.k, self.k + chunk, -1 if rec.max_iter is None else rec.max_iter, self.d,
                       int(self.mode == "inner"), 0) + tuple(ints), dtype=np.int64)
        return fs, ks

    def drive(self, call, ks: np.ndarray, fs: np.ndarray, chunk: int, best_x: np.ndarray, current,
              lipschitz=None) -> None:
        """Run a solver's compiled loop to its end. ``call()`` makes one compiled call on the state
        ``fs``, ``ks`` (:meth:`compiled_state`) and returns its code (CONVERGED, MAX_ITER, CHUNK_DONE,
        NEEDS_L); ks[K_STOP] is moved ``chunk`` further after each. On NEEDS_L, ``lipschitz(L)`` stores
        the fallback start L (metrics.lipschitz_start) and the call is made again. After each call: the
        history row of ``current()`` = (x, u) when histories are kept, the stopping test, the caps. At
        the end the recorder gets a copy of ``best_x`` with its measure, as :func:`measure_and_keep`
        left them in ``fs``."""
        rec = self.rec

        def record(k):
            self.k = k
            self._record(*current(), fs[F_MEASURE], fs[F_SCALE], rec.elapsed())

        self.stopped = run_chunks(call, lipschitz, self.problem, rec, ks, chunk, record if rec.keep else None)
        self.k, self.converged = int(ks[K_ITER]), self.stopped is None
        if fs[F_COPIED]:
            rec.best_x, rec.best_err = best_x.copy(), float(fs[F_BEST])

    def _record(self, x: np.ndarray, u: np.ndarray, err: float, scale: float, elapsed: float) -> None:
        """One history row (module docstring) from the stopping measure ``err`` and its scale s."""
        objective = metrics.dual_objective(self.problem, x, u)
        if self.mode == "relaxed":
            self.rec.record(self.k, objective, err * scale, seconds=elapsed, iterate=x)
        elif self.mode == "inner":
            self.rec.record(self.k, objective, err, metrics.ccp_residual(self.problem, x, u + self.a),
                            seconds=elapsed, iterate=x)
        else:
            self.rec.record(self.k, objective, self.siconos_error(x, u, self.shift(u), scale), err * scale,
                            seconds=elapsed, iterate=x)

    # ------------------------------------------------------------------ outer anti-relaxation
    def fixed_point(self, solve_relaxed) -> np.ndarray:
        """The outer anti-relaxation loop (module docstring). ``solve_relaxed(x0)`` runs the solver on
        the relaxed problem with linear term r + self.a to ``self.target`` from x0 and returns its
        best iterate."""
        x = self.initial_point()
        u = self.apply_N(x) + self.r0
        a_next = self.shift(u)
        best_x, best_err = x, self.siconos_error(x, u, a_next)
        since_best, outer = 0, 0
        status = "stagnated"
        while True:
            outer += 1
            self.a = a_next
            self.target = max(0.5 * self.tol, 0.1 * best_err)
            self.rec.best_x, self.rec.best_err = None, np.inf
            x = solve_relaxed(x)
            u = self.apply_N(x) + self.r0
            a_next = self.shift(u)
            err = self.siconos_error(x, u, a_next)
            if err < best_err:
                best_x, best_err, since_best = x, err, 0
            else:
                since_best += 1
            if best_err <= self.tol:
                status = "converged"
                break
            if self.stopped is not None:
                status = self.stopped.value
                break
            if since_best >= int(self.params["outer_patience"]):
                break
        self.info.update(outer_iterations=outer, outer_status=status)
        self.rec.best_x, self.rec.best_err = best_x, best_err
        return best_x

    # ------------------------------------------------------------------ result
    def result(self, solver: str, formulation: str) -> SolveResult:
        """The SolveResult of the best iterate; finalize() adds the workbench's metrics."""
        rec = self.rec
        x = rec.best_x if rec.best_x is not None else np.zeros(self.n)
        if self.mode == "outer":
            status = self.info["outer_status"]
            stop = OUTER_STOPS[status]
        else:
            stop = StopCause.CONVERGED if self.converged else self.stopped
            status = stop.value
        p = self.problem
        info = dict(self.info, measure=rec.best_err, anti_relaxation=self.mode if self.anti else None)
        result = SolveResult(solver=solver, formulation=formulation, status="", solver_status=status, nu=x,
                             v=p.velocity(x) if p.is_global else None, iterations=self.k, info=info,
                             build_seconds=self.build_seconds)
        return rec.finish(result, stop)


@njit(cache=True)
def scaled_error(x_sq, u_sq, map_sq, norm_r0, step):
    """(err, s) of the stopping measure from ||x||^2, ||u||^2 and the squared natural map with ``step``:
    s = max(||r||, ||x||, ||u||) (1 when 0), err = ||map|| / step / s; err = inf when s overflowed (a
    diverged iterate, never converged: metrics.normalisation)."""
    scale = max(norm_r0, math.sqrt(x_sq), math.sqrt(u_sq))
    if not scale < math.inf:
        return math.inf, scale
    if not scale > 0:
        scale = 1.0
    return math.sqrt(map_sq) / step / scale, scale


#: what :func:`ccp_rule` says of a measure: not converged, converged, or converged if the natural map
#: with step 1 is within the target too (:func:`unit_step_holds`)
NOT_YET, HOLDS, CHECK_UNIT_STEP = 0, 1, 2


@njit(cache=True)
def ccp_rule(err, scale, inner, target):
    """The stopping rule, once for every loop (compiled, and on an array module: workbench.solvers
    .xp_first_order), on the measure err and its scale s (:func:`scaled_error`): an overflowed scale never
    converged; inner runs (err the Siconos error): HOLDS when err <= target; relaxed and outer runs (err
    eq. 39 / s): CHECK_UNIT_STEP when err <= max(target, CCP_RESOLUTION), the natural map with step 1
    then decides (:func:`unit_step_holds`); else NOT_YET."""
    if not scale < math.inf:
        return NOT_YET
    if inner:
        return HOLDS if err <= target else NOT_YET
    return CHECK_UNIT_STEP if err <= max(target, CCP_RESOLUTION) else NOT_YET


@njit(cache=True)
def unit_step_holds(map_sq, scale, target):
    """The second test of :func:`ccp_rule`: ||x - P(x - (u + a))|| / s <= target, from its square."""
    return math.sqrt(map_sq) / scale <= target


@njit(cache=True, inline="always")
def stopping_measure(x, u, a, mu, d, inner, step, norm_r0, target, scratch):
    """The stopping measure of :meth:`IterativeRun.tick` for compiled loops: (err, scale, converged) for the
    iterate x with u = N x + r_0 and the shift a (inner runs: a(u) written into a, err the Siconos
    error; relaxed and outer runs: a fixed, err eq. 39 / s; converged by :func:`ccp_rule`),
    s = max(||r||, ||x||, ||u||)."""
    err, scale = scaled_error(*_stopping_sums(x, u, a, step, mu, d, inner, scratch), norm_r0, step)
    rule = ccp_rule(err, scale, inner, target)
    if rule == CHECK_UNIT_STEP:
        return err, scale, unit_step_holds(_stopping_sums(x, u, a, 1.0, mu, d, False, scratch)[2], scale, target)
    return err, scale, rule == HOLDS


@njit(cache=True)
def measure_and_keep(x, u, a, mu, d, inner, scratch, best_x, fs):
    """:func:`stopping_measure` of x with the step, ||r|| and target in ``fs`` (layout F_*), and x copied
    into ``best_x`` when its measure is the smallest so far or it converged (IterativeRun.tick's best iterate);
    fs[F_BEST], fs[F_MEASURE], fs[F_SCALE] and fs[F_COPIED] (1.0 once a point was copied) are updated.
    Returns whether the run converged."""
    err, scale, converged = stopping_measure(x, u, a, mu, d, inner, fs[F_STEP], fs[F_NORM_R0], fs[F_TARGET], scratch)
    if err < fs[F_BEST] or converged:
        fs[F_BEST] = err
        best_x[:] = x
        fs[F_COPIED] = 1.0
    fs[F_MEASURE], fs[F_SCALE] = err, scale
    return converged


@njit(cache=True)
def count_and_check(x, u, a, mu, d, inner, scratch, best_x, fs, ks):
    """The end of one iteration of a compiled loop that produced x with u = N x + r_0: the count
    ks[K_ITER] goes up, then :func:`measure_and_keep` and the caps decide: CONVERGED, MAX_ITER
    (ks[K_MAX_ITER] iterations done; -1: no cap), CHUNK_DONE (the count reached ks[K_STOP]) or GO_ON."""
    ks[K_ITER] += 1
    if measure_and_keep(x, u, a, mu, d, inner, scratch, best_x, fs):
        return CONVERGED
    if ks[K_MAX_ITER] >= 0 and ks[K_ITER] >= ks[K_MAX_ITER]:
        return MAX_ITER
    return CHUNK_DONE if ks[K_ITER] >= ks[K_STOP] else GO_ON


@njit(cache=True)
def lipschitz_ratio(op, tmp, x0, N_diff):
    """||N (x0 - 1)|| / ||x0 - 1||, Melanz et al. 2015 algorithm line 6 for compiled loops (NaN when x0 = 1):
    x0 is overwritten with x0 - 1 and N_diff with its product; the caller falls back to
    :func:`workbench.metrics.lipschitz_start` when the ratio is not positive and finite."""
    for k in range(x0.shape[0]):
        x0[k] -= 1.0
    apply_operator(op, tmp, x0, N_diff)
    den = norm(x0)
    return norm(N_diff) / den if den > 0 else math.nan


def chunk_of(work_per_iteration: int) -> int:
    """Iterations per call of a compiled loop without a history: as many as make about _CHUNK_WORK
    operations, ``work_per_iteration`` each (the time limit is checked between calls)."""
    return max(1, _CHUNK_WORK // max(1, work_per_iteration))


def run_chunks(call, lipschitz, problem, rec: Recorder, ks: np.ndarray, chunk: int, record=None) -> StopCause | None:
    """Call a compiled loop until it ends: ``call()`` makes one compiled call on the state ``ks`` (layout
    K_*) and returns its code (CONVERGED, MAX_ITER, CHUNK_DONE, NEEDS_L); on NEEDS_L ``lipschitz(L)``
    stores the fallback start (metrics.lipschitz_start) and the call is made again; after each other
    call ``record(k)`` (a history row, when given), then the stopping test and the caps of ``rec``;
    ks[K_STOP] is moved ``chunk`` further between calls. Returns None when the loop converged, else the
    cap that stopped it (Recorder.capped)."""
    while True:
        code = call()
        if code == NEEDS_L:
            lipschitz(metrics.lipschitz_start(problem, math.nan))
            continue
        k = int(ks[K_ITER])
        if record is not None:
            record(k)
        if code == CONVERGED:
            return None
        stop = rec.capped(k)
        if stop is not None:
            return stop
        ks[K_STOP] = ks[K_ITER] + chunk


#: what a lean run's info["lean"] says
LEAN_NOTE = "the whole run in compiled calls, its arrays made there (IterativeSolver._lean_solve)"


@njit(cache=True)
def lean_state(fs, ks, max_iter, k_stop, target, norm_r0, d):
    """Write into ``fs``, ``ks`` the state of :meth:`IterativeRun.compiled_state` for a cold inner
    anti-relaxed run (no iteration done, no point kept, the Siconos error's step 1), the solver's own
    slots after the shared ones zero: a lean run's first call, in compiled code. The caller makes ``ks``
    zero: ks[K_D] = 0 (d is 2 or 3 once set) tells a compiled entry that its state is not set yet."""
    fs[:] = 0.0
    ks[:] = 0
    fs[F_BEST], fs[F_MEASURE], fs[F_SCALE], fs[F_COPIED] = np.inf, np.inf, 1.0, 0.0
    fs[F_STEP], fs[F_NORM_R0], fs[F_TARGET] = 1.0, norm_r0, target
    ks[K_ITER], ks[K_STOP], ks[K_MAX_ITER], ks[K_D], ks[K_INNER], ks[K_STARTED] = 0, k_stop, max_iter, d, 1, 0


@njit(cache=True)
def symmetrise_blocks(S):
    """S_i <- (S_i + S_i^T) / 2 in place for each d x d block of S (n_c, d, d): the symmetric parts of
    N's diagonal blocks that Gauss-Seidel's local solver takes (:attr:`IterativeRun.diagonal_blocks`,
    and a lean run's set-up in compiled code)."""
    for i in range(S.shape[0]):
        for j in range(S.shape[1]):
            for l in range(j + 1, S.shape[1]):
                s = 0.5 * (S[i, j, l] + S[i, l, j])
                S[i, j, l] = s
                S[i, l, j] = s


class LeanRun:
    """A lean run (:meth:`IterativeSolver.lean`): ``call()``, one compiled call of the solver's loop (the
    first sets up its state), ``start(L)`` to set the fallback start of Melanz et al. 2015 line 6 after
    NEEDS_L, the state ``fs``, ``ks``, the best iterate's row ``best_x`` and ``info()``, the solver's own
    info at the end."""
    __slots__ = ("call", "start", "fs", "ks", "best_x", "info")

    def __init__(self, call, start, fs, ks, best_x, info):
        self.call, self.start, self.fs, self.ks, self.best_x, self.info = call, start, fs, ks, best_x, info


class IterativeSolver(Solver):
    """Template of the in-house first-order solvers: ``solve`` builds the :class:`IterativeRun`, runs ``iterate``
    directly (relaxed, inner anti-relaxation) or inside the outer fixed-point loop, and returns
    ``run.result``. Subclasses set ``name``, ``summary``, ``params`` (ITERATIVE_PARAMS and their own)
    and write ``iterate``; adding one is one module and one line in workbench.solvers.SOLVERS."""

    model_kinds: ClassVar[tuple[str, ...]] = ("ccqo",)
    compiled: ClassVar[bool] = True
    condenses: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = ITERATIVE_PARAMS
    default_max_iter: ClassVar[int | None] = 10_000

    def solve(self, model, options: SolveOptions) -> SolveResult:
        if self.lean_fits(model, options):
            return self._lean_solve(model, options)
        run = IterativeRun(model, options, options.params, self.max_iter(options))
        t0 = time.perf_counter()     # wall clock: a CPU clock costs 8 us or more per reading on a VM
        self.setup(run)
        run.info["setup_seconds"] = time.perf_counter() - t0   # apart from the iterations' cost
        if run.mode == "outer":
            run.fixed_point(lambda x0: self._until_stop(run, x0))
        else:
            self._until_stop(run, run.initial_point())
        run.rec.stop_clock()
        return run.result(self.name, model.formulation)

    def lean_fits(self, model, options: SolveOptions) -> bool:
        """Whether the run takes the lean path (:meth:`_lean_solve`): the solver has one (:meth:`lean`),
        the model is anti-relaxed on a local problem (W as it is, in the inner mode), on the CPU, cold
        (no warm start) and without a history."""
        params = options.params
        return (self.has_lean and model.anti_relaxed and not options.keep_history and options.warm_start is None
                and not model.problem.is_global and params.get("anti_relaxation") == "inner"
                and params.get("device", "cpu") == "cpu")

    #: whether the solver writes :meth:`lean` and :meth:`iteration_work`
    has_lean: ClassVar[bool] = False

    def lean(self, W: sp.csr_matrix, r0: np.ndarray, mu: np.ndarray, d: int, max_iter: int, chunk: int,
             target: float, norm_r0: float, params: dict[str, Any]) -> LeanRun:
        """The solver's run in compiled calls, for :meth:`_lean_solve`: its buffers (one for the floats,
        one zero ``ks``) and its compiled entry, whose first call makes the state of :func:`lean_state`."""
        raise NotImplementedError

    def iteration_work(self, entries: int, n: int) -> int:
        """Operations of one iteration of the compiled loop: ``entries`` of the operator's products
        (both, for a chained one) and ``n`` unknowns (the chunk of :func:`chunk_of`)."""
        raise NotImplementedError

    def _lean_solve(self, model, options: SolveOptions) -> SolveResult:
        """The run of :meth:`solve` for a cold inner anti-relaxed run on a local problem without a
        history, with the same iterates, stopping test, caps and result: the solver's compiled loop
        makes its own state in its first call (:meth:`lean`), so that no IterativeRun and no state built
        from Python tuples is needed; the calls, caps and result go through the same
        :func:`run_chunks` and Recorder as every run. On a problem of a few contacts the general path's
        Python objects cost several times the iterations (docs/solvers-performance.md). The clock starts
        once the options are read and the local problem's given arrays fetched (W, r, mu: the data as
        read, as the dense Newton run and Siconos's driver take them); ||r||, the buffers and the
        iterations are on it."""
        p = model.problem
        r0, W, mu, d = p.r, p.N, p.mu, p.d
        chunk = chunk_of(self.iteration_work(2 * W.data.shape[0], r0.shape[0]))
        max_iter, tol = self.max_iter(options), float(options.tol)
        rec = Recorder(options, "siconos_error", ("ccp_residual",), max_iter)
        lean = self.lean(W, r0, mu, d, -1 if max_iter is None else max_iter, chunk, tol, p.norm_r, options.params)
        stop = run_chunks(lean.call, lean.start, p, rec, lean.ks, chunk) or StopCause.CONVERGED
        rec.stop_clock()
        copied = bool(lean.fs[F_COPIED])
        info = lean.info()
        info.update(measure=float(lean.fs[F_BEST]) if copied else math.inf, anti_relaxation="inner", lean=LEAN_NOTE)
        result = SolveResult(solver=self.name, formulation=model.formulation, status="", solver_status=stop.value,
                             nu=lean.best_x.copy() if copied else np.zeros(r0.shape[0]),
                             iterations=int(lean.ks[K_ITER]), info=info, build_seconds=model.build_seconds)
        return rec.finish(result, stop)

    def _until_stop(self, run: IterativeRun, x0: np.ndarray) -> np.ndarray:
        self.iterate(run, x0)
        return run.rec.best_x if run.rec.best_x is not None else x0

    def setup(self, run: IterativeRun) -> None:
        """Work done once per solve before the iterations (factorisations, scalings); timed."""

    @abstractmethod
    def iterate(self, run: IterativeRun, x0: np.ndarray) -> None:
        """Iterate from the feasible x0 on the problem with linear term ``run.linear_term`` (updated by
        run.tick in the inner anti-relaxed mode), calling ``run.tick(x, u)`` once per iteration with
        u = N x + r, until it returns True."""
