"""The one run recorder every solver writes through: caps, best iterate, history and stop cause.

A solver makes a :class:`Recorder` when its timed part starts and ends with :meth:`Recorder.finish`,
which sets the result's ``stop`` (a :class:`~workbench.solvers.base.StopCause`), ``solve_seconds``
(wall time since the recorder started, up to :meth:`Recorder.stop_clock` where the solver calls it
once it has its point, so that wrapping the point into a result is not timed; or the backend's own
time, where the solver measured it) and ``history``. In between:

- caps: :meth:`Recorder.capped` says MAX_ITER once the run's iteration cap (the solver's
  ``Solver.max_iter(options)``: options.max_iter, else the solver's default) is reached and TIMEOUT
  once ``options.time_limit`` seconds of wall clock have passed; :meth:`Recorder.time_left` is what
  remains of the limit for a method handed the run (a fallback, a polish); :meth:`Recorder.affords`
  forecasts a stretch of work that cannot be interrupted (a sparse factorisation, an inner solve) by
  the duration of the last one like it, and says no when it would end more than FORECAST_SLACK past
  the limit: the solver then stops with TIMEOUT before it, and the result says so
  (``info["time_limit_forecast"]``);
- best iterate: :meth:`Recorder.offer` keeps a copy of the point with the smallest measure;
- history (only when ``options.keep_history``): :meth:`Recorder.record` appends one row of the fixed
  schema HISTORY_COLUMNS = iteration (int), seconds (float, wall time since the solve started),
  objective (float, NaN if unknown), error_name (str: the measure in ``error``, one per solver, e.g.
  "siconos_error", "ccp_residual", "lcp_residual", "max_res"), error (float), then the solver's
  declared extra columns. A solver without per-iteration information records one row for the point it
  returns.
- iterates for the judged error (only with a history): a solver that has its iterate nu (physical
  units) at a row passes it (``record(..., iterate=nu)``); the recorder keeps a copy of it at rows
  1-10 and then at most SAMPLES_PER_DECADE per decade of rows (row n kept when n >= 1.12 times the
  last kept row), and of the last one, so memory and the judging cost grow with the logarithm of the
  iterations. :func:`workbench.judging.judge_history` judges them after the clock stopped and
  writes the history's judged_error column.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from workbench.solvers.base import HandOver, SolveOptions, SolveResult, Solver, StopCause, execute, handover

if TYPE_CHECKING:  # pandas is imported when a history is asked for, not with the solvers
    import pandas as pd

__all__ = ["Recorder", "HISTORY_COLUMNS"]

#: the fixed history schema, name -> meaning (the solver's declared extras follow; a loaded history
#: puts the run's id before it: workbench.study.results.LOADED_HISTORY_COLUMNS)
HISTORY_COLUMNS = {
    "iteration": "iteration (outer iteration for fixed points and LCP1)",
    "seconds": "wall time since the solve started [s]",
    "objective": "the formulation's objective (NaN if the solver does not log it)",
    "error_name": "which error measure (relaxed_error, siconos_error, gap_rel, res_pri, ...)",
    "error": "its value",
}
#: iterates kept per decade of history rows for the judged error (after the first 10 rows)
SAMPLES_PER_DECADE = 20
#: the least time limit [s] handed on by :meth:`Recorder.time_left`: a positive one, since a limit of 0
#: means "no limit" to some backends (SCS's time_limit_secs)
MIN_TIME_LEFT = 1e-3
#: a stretch of work that cannot be interrupted is not started when, forecast by the last one like it,
#: it would end more than this [s] past the time limit: half of the 2 s past a limit within which every
#: solve returns (docs/threat-model.md, Time limits), the other half left for the forecast's error.
#: A forecast end within it lets the work start, so a run that would end before its limit never stops
#: early unless the same work takes more than FORECAST_SLACK less than it did the last time
FORECAST_SLACK = 1.0


#: the first factorisation of a run is forecast from its size by factorising leading principal blocks
#: of its matrix, of 1/64, 1/32, ... 1/2 of its order, until a forecast fits or the next probe would
#: cost more than PROBE_SHARE of the time left (:func:`forecast_first`); below PROBE_MIN unknowns it is
#: not forecast (it takes milliseconds)
PROBE_DIVISORS = (64, 32, 16, 8, 4, 2)
PROBE_SHARE = 0.25
PROBE_MIN = 2000
#: probes of less CPU time than this [s] do not measure the growth (the clock's and scheduler's noise)
PROBE_RESOLUTION = 5e-3
#: the growth exponent and its increase per doubling assumed until the probes measure them: a dense
#: factorisation's n^3, and about the increase of sphere packings' factorisations
PROBE_BETA, PROBE_DELTA = 3.0, 0.5


def forecast_first(matrix, factor, time_left: float | None) -> float | None:
    """The forecast duration [s] of ``factor(matrix)``, a sparse factorisation that cannot be
    interrupted and that no earlier one of the run forecasts, from the matrix's size: ``factor`` is
    timed on the matrix's leading principal blocks of n/64, n/32, ... n/2 rows (the same structure,
    smaller), and the last one's duration is extrapolated to n rows. The growth is not a power law: a
    sparse factorisation's fill grows faster as the block grows (on sphere packings the exponent of
    qdldl's CPU time in m grows severalfold from the smallest blocks to the largest), so the
    forecast over D doublings is t_m 2^(beta D + delta D^2 / 2): beta the exponent measured by the
    CPU times of the last two probes (1 to 4), delta its increase since the two before (at least 0),
    PROBE_BETA and PROBE_DELTA until the probes are long enough to measure them (PROBE_RESOLUTION);
    CPU times, so that a loaded machine does not bend the exponent, and the last probe's wall time as
    the unit. Probing stops as soon as the forecast fits ``time_left`` (what is left of the limit and
    FORECAST_SLACK), or when the next probe would cost more than PROBE_SHARE of it; so a run that fits
    spends little on probes (a half-size block is about a tenth of the whole), one that does not at
    most about a quarter of what is left. None without a limit, below PROBE_MIN rows, or when the
    first probe fails (a singular block: nothing is known)."""
    n = matrix.shape[0]
    if time_left is None or n < PROBE_MIN:
        return None
    matrix = matrix.tocsc()
    forecast, spent, probes, betas = None, 0.0, [], []
    for divisor in PROBE_DIVISORS:
        m = n // divisor
        block = matrix[:m, :m]
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            factor(block)
        except (RuntimeError, ValueError, ArithmeticError):      # a singular block: what is known so far
            return forecast
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        spent += wall
        if probes and min(cpu, probes[-1][1]) >= PROBE_RESOLUTION:
            betas.append(min(4.0, max(1.0, math.log(cpu / probes[-1][1]) / math.log(m / probes[-1][0]))))
        else:
            betas.clear()
        probes.append((m, cpu))
        beta = betas[-1] if betas else PROBE_BETA
        delta = max(0.0, betas[-1] - betas[-2]) if len(betas) > 1 else PROBE_DELTA
        doublings = math.log2(n / m)
        forecast = wall * 2.0 ** (beta * doublings + delta * doublings ** 2 / 2)
        left = time_left - spent
        if forecast <= left or wall * 2.0 ** (beta + delta) > PROBE_SHARE * left:
            return forecast
    return forecast


class Recorder:
    """Bookkeeping of one run (module docstring). ``error_name`` names the history's ``error`` column,
    ``extras`` the solver's own columns after it; ``max_iter`` is the run's iteration cap, the
    solver's ``max_iter(options)`` (None: none that :meth:`capped` checks)."""

    def __init__(self, options: SolveOptions, error_name: str, extras: tuple[str, ...] = (),
                 max_iter: int | None = None):
        self.keep = bool(options.keep_history)
        self.max_iter = max_iter
        self.time_limit = options.time_limit
        self.error_name = error_name
        self.extras = tuple(extras)
        self.rows: list[tuple] = []
        self.best_x: np.ndarray | None = None
        self.best_err = math.inf
        self.seconds: float | None = None
        self.samples: dict[int, np.ndarray] = {}
        self._next_sample = 0
        self._last: np.ndarray | None = None
        self.forecast: dict[str, float] | None = None
        # the clock starts last: the recorder's own set-up is bookkeeping, not the solver's work (on a
        # problem of a few contacts it is a visible part of the solve)
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds of wall clock since the recorder started."""
        return time.perf_counter() - self.t0

    def record(self, iteration: int, objective: float, error: float, *extras: Any,
               seconds: float | None = None, iterate: np.ndarray | None = None) -> None:
        """One history row (when histories are kept); ``seconds`` defaults to the elapsed time;
        ``iterate``: the row's nu, sampled for the judged error (module docstring)."""
        if not self.keep:
            return
        self.rows.append((int(iteration), self.elapsed() if seconds is None else float(seconds),
                          math.nan if objective is None else float(objective),
                          math.nan if error is None else float(error), *extras))
        if iterate is None:
            return
        row = len(self.rows) - 1
        if row >= self._next_sample:
            self.samples[row] = np.array(iterate, dtype=float)
            self._next_sample = row + 1 if row < 10 else math.ceil(row * 10 ** (1 / SAMPLES_PER_DECADE))
        elif self._last is None or self._last.shape != np.shape(iterate):
            self._last = np.array(iterate, dtype=float)
        else:
            np.copyto(self._last, iterate)
        self._last_row = row

    def capped(self, iteration: int, elapsed: float | None = None) -> StopCause | None:
        """MAX_ITER when ``iteration`` iterations reach the cap, TIMEOUT when the time limit has
        passed (``elapsed``: the caller's reading of the clock), else None."""
        if self.max_iter is not None and iteration >= self.max_iter:
            return StopCause.MAX_ITER
        return StopCause.TIMEOUT if self.timed_out(elapsed) else None

    def timed_out(self, elapsed: float | None = None) -> bool:
        """Whether the time limit has passed (``elapsed``: the caller's reading of the clock)."""
        return self.time_limit is not None and (self.elapsed() if elapsed is None else elapsed) >= self.time_limit

    def time_left(self) -> float | None:
        """Seconds of the time limit left now, at least MIN_TIME_LEFT (None: no time limit): the limit
        of a method the run hands over to (a fallback, a polish)."""
        return None if self.time_limit is None else max(self.time_limit - self.elapsed(), MIN_TIME_LEFT)

    def hand_over(self, declared: HandOver, target: Solver, model, options: SolveOptions, result: SolveResult, *,
                  warm: np.ndarray | None, source: str, reason: str, at_iteration: int, stop_before: StopCause,
                  error_before: float | Callable[[], float], keep_history: bool = False
                  ) -> tuple[SolveResult, bool, float]:
        """Hand the run over to ``target``, the solver ``declared`` (the first solver's
        :attr:`~workbench.solvers.base.Solver.hands_over_to`) names, on ``model``, the first method's
        (or, where ``declared.formulation`` names one, that formulation's model of its problem, built
        here, on the second method's time), the one way both hand-overs run: through
        :func:`~workbench.solvers.base.execute` (a breakdown of the second solver is its failed
        result, not the run's), from ``warm``, with what is left of the time limit
        (:meth:`time_left`), the second solver's own checked defaults and its own iteration cap
        (``max_iter`` None), a history only with ``keep_history``. Its record goes to
        ``result.handover`` (:func:`~workbench.solvers.base.handover`: when, why, what the first method
        reached alone, ``error_before``, which a callable gives after the second method ran, so its
        cost is not the first's).

        Whether the returned point is the second's (``used``): a fallback's whenever it returns one; a
        polish's only where its judged measure (siconos_error: polishes are of exact methods) is lower.
        Returns (the second method's result, used, that measure of its point: inf without one, NaN for
        a fallback, which does not compute it)."""
        import dataclasses

        from workbench.metrics import siconos_error

        at_seconds = self.elapsed()
        if declared.formulation is not None:
            from formulations import get_formulation
            form = get_formulation(declared.formulation)
            model = form.build(model.problem, next(k for k in target.model_kinds if k in form.builds))
        second = execute(target, model, dataclasses.replace(
            options, time_limit=self.time_left(), warm_start=warm, max_iter=None, keep_history=keep_history,
            params=target.check_params({}, model.kind)))
        before = float(error_before() if callable(error_before) else error_before)
        if declared.kind == "fallback":
            after, used = math.nan, second.nu is not None
        else:
            after = math.inf if second.nu is None else \
                float(siconos_error(model.problem, second.nu, model.problem.relative_velocity(second.nu)))
            used = after < before
        result.handover.append(handover(declared.kind, source, target.name, reason, at_iteration, at_seconds,
                                        stop_before, before, model.judged_by, used, second.iterations, second.stop))
        return second, used, after

    def affords_first(self, matrix, factor) -> bool:
        """:meth:`affords` for a run's first factorisation of ``matrix`` by ``factor``, forecast from its
        size (:func:`forecast_first`); a no is kept as ``info["time_limit_forecast"]`` with
        ``"by": "probes"``."""
        if self.time_limit is None:
            return True
        seconds = forecast_first(matrix, factor, self.time_limit + FORECAST_SLACK - self.elapsed())
        if self.affords(seconds):
            return True
        if self.forecast is None and seconds is not None:     # the limit passed while the probes ran
            self.forecast = {"at_seconds": self.elapsed(), "forecast_seconds": float(seconds)}
        if self.forecast is not None:
            self.forecast["by"] = "probes of its leading blocks (the run's first factorisation)"
        return False

    def affords(self, seconds: float | None) -> bool:
        """Whether a stretch of work that cannot be interrupted, forecast to take ``seconds`` (the
        duration of the last one like it; None: none yet), may start: always without a time limit;
        with one, while the limit has not passed and the forecast end is at most FORECAST_SLACK past
        it. A no from the forecast is kept for the result (``info["time_limit_forecast"]``); the
        solver then stops with TIMEOUT."""
        if self.time_limit is None:
            return True
        now = self.elapsed()
        if now >= self.time_limit:
            return False
        if seconds is None or now + seconds <= self.time_limit + FORECAST_SLACK:
            return True
        self.forecast = {"at_seconds": now, "forecast_seconds": float(seconds)}
        return False

    def offer(self, x: np.ndarray, err: float, force: bool = False) -> None:
        """Keep a copy of ``x`` when its measure ``err`` is the smallest so far (or ``force``)."""
        if err < self.best_err or force:
            self.best_err = err
            if self.best_x is None or self.best_x.shape != x.shape:
                self.best_x = np.array(x, dtype=float)
            else:
                np.copyto(self.best_x, x)

    def history(self) -> pd.DataFrame | None:
        """The rows as a DataFrame of the fixed schema (None when none were kept)."""
        if not self.rows:
            return None
        cols = ["iteration", "seconds", "objective", "error", *self.extras]
        import pandas as pd  # loaded with the first history: a solve without one never needs it

        frame = pd.DataFrame(self.rows, columns=cols)
        frame.insert(3, "error_name", self.error_name)
        return frame

    def stop_clock(self) -> None:
        """End the timed part: the solver has its point (what remains is bookkeeping)."""
        self.seconds = self.elapsed()

    def finish(self, result: SolveResult, stop: StopCause, seconds: float | None = None) -> SolveResult:
        """Stamp ``result`` with the stop cause, the solve time (``seconds``: the backend's own
        measurement, where it has one; else the recorder's, up to :meth:`stop_clock` when it was
        called) and the history."""
        result.stop = stop if type(stop) is StopCause else StopCause(stop)   # the enum's call costs 0.5 us
        if seconds is None:
            seconds = self.elapsed() if self.seconds is None else self.seconds
        result.solve_seconds = float(seconds)
        result.history = self.history()
        if self.forecast is not None:
            result.info["time_limit_forecast"] = self.forecast
        if self.samples or self._last is not None:
            if self._last is not None and self._last_row not in self.samples:
                self.samples[self._last_row] = self._last
            result.sampled_iterates = self.samples
        return result
