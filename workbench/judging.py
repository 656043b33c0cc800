"""Judging: the workbench's own verdict on a solver's returned point, the same for every solver.

:func:`finalize` is step 5 of the run contract (ARCHITECTURE.md): after
:func:`workbench.solvers.base.execute` returned, it computes the workbench's metrics
(:mod:`workbench.metrics`) of the returned impulses, names the measure the run is judged by
(:func:`judged_name`: the ``judged_by`` every model declares, one of workbench.status.JUDGED_MEASURES:
relaxed_error for relaxed formulations, siconos_error for exact ones, a model's own, such as the LCP
model's lcp_residual) and judges the status from it against ``options.accept`` (the judged statuses
of the one table, workbench.status); each hand-over gets the status its first method's point earns alone
(``status_alone``) by the same rule, and the history its judged_error column
(:func:`judge_history`). A solver's own claims stay in the result, recorded and never trusted.

It sits beside :class:`workbench.method.Method` (the method layer, above the solvers): solvers
record a hand-over's ``error_before`` and ``measure`` (workbench.solvers.base.handover) and never
judge; the judging happens here, once, for every run.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from workbench import metrics
from workbench.solvers.base import SolveOptions, SolveResult, StopCause
from workbench.status import CAP_REACHED, EVALUATED, FAILED, INACCURATE, JUDGED_MEASURES, SOLVED

__all__ = ["finalize", "contradiction", "Refusal", "UNFORMABLE", "CONTRADICTS", "UNIT_BOUND", "DISAGREE",
           "judge_history", "judged_name", "judged_error", "JUDGED_MEASURES", "JUDGE_BUDGET", "CAPS", "unit_free_floor"]


def judged_name(model) -> str:
    """The name of the measure a model's runs are judged by, as every model declares it
    (``judged_by``, one of workbench.status.JUDGED_MEASURES): relaxed_error for relaxed formulations,
    siconos_error for exact ones, a model's own (the LCP model's lcp_residual, from its own_metrics)."""
    return model.judged_by


#: seconds judge_history may spend judging sampled iterates (the rest of them stay NaN)
JUDGE_BUDGET = 0.25

#: the kinds of :class:`Refusal`: the scaled measures cannot be formed (inf, nan, mu eps >= 1: no point
#: of the problem is judged solved, whatever its judged error); they contradict the judged measure
#: beyond what the units allow; or they exceed the floor every unit system keeps (sqrt(tol))
UNFORMABLE, CONTRADICTS, UNIT_BOUND = "unformable", "contradicts", "unit_bound"


class Refusal(NamedTuple):
    """Why the judge refuses "solved" to a point: ``kind`` (UNFORMABLE, CONTRADICTS, UNIT_BOUND)
    decides what the result records; ``reason`` is the one line it records."""
    kind: str
    reason: str


#: the statuses of the stop causes that name a cap (workbench.status: cap reached)
CAPS = {StopCause(name): name for name in CAP_REACHED}

#: how the judge's reason begins where a point's measures contradict each other (rules 2 and 3 of
#: :func:`contradiction`), so that a message, a row or a count can tell such a refusal from the others
DISAGREE = "the measures disagree"


def finalize(result: SolveResult, model, options: SolveOptions) -> SolveResult:
    """Compute the workbench's metrics on ``result.nu`` and judge the status.

    A point within ``accept`` is "solved" whatever the solver says. Otherwise a cap that stopped the
    solver (``result.stop`` MAX_ITER or TIMEOUT) is the status; else "inaccurate" when a point came
    back, "failed" when none did. Each hand-over gets the status its first method's point earns alone
    (status_alone), by the same rule; the history gets its judged_error column (:func:`judge_history`).
    ``result.judged_name`` names the measure of ``metrics["judged_error"]`` (None when no point came
    back to judge).
    """
    problem = model.problem
    cap = CAPS.get(result.stop)
    threshold = options.tol if options.accept is None else options.accept
    for h in result.handover:
        err = h["error_before"]
        h["status_alone"] = SOLVED if err <= threshold else (
            CAPS.get(StopCause(h["stop_before"])) or (INACCURATE if np.isfinite(err) else FAILED))
    if result.nu is None or not np.isfinite(result.nu).all():
        result.nu = None
        result.status = cap or FAILED
        judge_history(result, model)
        return result
    result.metrics = metrics.evaluate(problem, result.nu)
    # an objective that is one of the metrics (the dual objective of the CCQO models) is read from them
    metric = getattr(model.objective, "metric", None)
    result.objective = result.metrics[metric] if metric else model.objective(result.nu, result.v)
    # a model judged by a measure of its own (the LCP model: its complementarity residual) adds its
    # own measures
    name = judged_name(model)
    if name not in EVALUATED:
        result.metrics.update(model.own_metrics(result))
    err = result.metrics[name]
    result.metrics["judged_error"] = err
    result.judged_name = name
    refused = contradiction(problem, result, model, threshold)
    if err <= threshold and refused is None:
        result.status = SOLVED
    else:
        result.status = cap or INACCURATE
    # a refusal is recorded where it changed the status, and always where no point of the problem
    # could be judged (the reason a run far from tol is not judged either)
    if refused is not None and (err <= threshold or refused.kind == UNFORMABLE):
        result.info["judge_refused"] = refused.reason
        result.message = f"not solved: {refused.reason}" + (f"; {result.message}" if result.message else "")
    judge_history(result, model)
    return result


def contradiction(problem, result: SolveResult, model, threshold: float) -> Refusal | None:
    """None when every measure the workbench reports for ``result.nu`` agrees that it is solved;
    else the :class:`Refusal`: its kind (the rule below that refused: UNFORMABLE, CONTRADICTS,
    UNIT_BOUND) and the reason, in one line, why a point within ``threshold`` on its judged measure is not.
    Adds the scaled measures (workbench.metrics.scaled_measures) to ``result.metrics``.

    The judged measure (Siconos's, in the problem's own units) is the convention the published
    comparisons use; the scaled measures are the same errors in balanced units (N's diagonal blocks
    1), which cannot under- or overflow and mean the same at any scale of N, r, mu and the masses.
    The rules, for the scaled counterpart of the judged measure, the scaled cone violation and the
    scaled normal-velocity violation (u_n >= 0 at every solution of the relaxed and exact problems):

    1. formable: where they cannot be formed (inf, nan, mu eps >= 1) no point is solved;
    2. agreement: each at most ``threshold`` times the units factor kappa - what a point within
       ``threshold`` in the problem's units has in exact arithmetic (metrics.scaled_measures; the normal
       violation of an exact problem's point (1 + max mu) times that, as its natural map allows); beyond
       it the judged measure was lost to floating point (a cone swamping u_n, an error underflowing);
    3. a floor in any units: each at most :func:`unit_free_floor` (sqrt(threshold)), so that no choice
       of units (N scaled by 1e300: impulses of 1e-302 beside velocities of 1) and no large mu (whose
       De Saxce natural map at a point that leaves u_n < 0 is only about |u_n| / mu) turns a point
       wrong by a large fraction into "solved".

    A model judged by a measure of its own (the LCP model on its pyramid) needs rule 1 only."""
    scaled, reason = metrics.scaled_measures(problem, result.nu)
    if reason is not None:
        return Refusal(UNFORMABLE, f"the scaled measures cannot be formed: {reason}")
    result.metrics.update(scaled)
    if getattr(model, "own_metrics", None) is not None:
        return None
    # a natural-map error e bounds dist(nu, K) by e, and -u_n by e (relaxed: u = map + a point of K*)
    # or by (1 + mu) e (exact: the De Saxce shift mu ||u_t|| moves with u_t)
    mu_max = float(np.max(problem.mu, initial=0.0))
    checks = {"scaled_relaxed_error" if model.relaxed else "scaled_siconos_error": 1.0, "scaled_cone_violation": 1.0,
              "scaled_normal_violation": 1.0 if model.relaxed else 1.0 + mu_max}
    judged = f"{judged_name(model)} {result.metrics['judged_error']:.3g}"
    for name, bound in checks.items():
        agree, floor = threshold * scaled["units_factor"] * bound, unit_free_floor(threshold)
        if not scaled[name] <= agree:
            return Refusal(CONTRADICTS, f"{DISAGREE}: {judged} is within {threshold:.3g} but {name} is "
                           f"{scaled[name]:.3g}, more than the units allow ({agree:.3g})")
        if not scaled[name] <= floor:
            return Refusal(UNIT_BOUND, f"{DISAGREE}: {judged} is within {threshold:.3g} in the problem's units "
                           f"only; {name} (balanced units) is {scaled[name]:.3g}, above sqrt(tol) = {floor:.3g}")
    return None



def unit_free_floor(threshold: float) -> float:
    """The largest scaled error a solved point may have in any units: sqrt(threshold), at least
    ``threshold`` (half the digits asked may go to the problem's choice of units, never more)."""
    return max(threshold, threshold ** 0.5)


def judge_history(result: SolveResult, model) -> None:
    """Add to ``result.history`` the columns judged_name (the measure the run is judged by,
    :func:`judged_name`) and judged_error: that measure of the row's iterate, computed by the workbench
    the same way for every solver, so that histories of different solvers compare like with like.

    Where it comes from, per row: the iterates the recorder sampled (workbench.solvers.recorder: at
    most about 20 per decade of rows, and the last) are judged here by workbench.metrics.evaluate, as
    the returned point is, after the solve's clock stopped; a row whose ``error`` is already that
    measure, computed by workbench.metrics from the iterate (error_name equal to judged_name: the
    exact methods' siconos_error, the LCP solvers' lcp_residual), keeps it; the last row of a solver
    that exposes no iterates (conic backends, Siconos) gets the returned point's value, which is that
    row's point. Any other row: NaN (the solver's own ``error`` stays in its column, never judged), and so
    are the samples left when JUDGE_BUDGET seconds are spent (coarse to fine: a large problem's history
    is thinned, its run never pushed past its hard time limit)."""
    samples, result.sampled_iterates = result.sampled_iterates or {}, None
    h = result.history
    if h is None or not len(h):
        return
    name = judged_name(model)
    judged = np.full(len(h), np.nan)
    if name in EVALUATED:
        rows = sorted(r for r in samples if r < len(h))
        # coarse to fine (every 8th sample, then every 4th, ...), the last row first, within a budget:
        # a large problem cannot push its run past the hard time limit while its history is judged
        order = list(dict.fromkeys(rows[-1:] + [r for stride in (8, 4, 2, 1) for r in rows[::stride]]))
        t0 = time.perf_counter()
        for row in order:
            if time.perf_counter() - t0 > JUDGE_BUDGET:
                break
            if np.all(np.isfinite(samples[row])):
                judged[row] = metrics.evaluate(model.problem, samples[row])[name]
    same = np.isnan(judged) & (h["error_name"] == name).to_numpy()
    import pandas as pd  # histories are DataFrames; a solve without one never loads pandas

    judged[same] = pd.to_numeric(h["error"], errors="coerce").to_numpy(dtype=float)[same]
    if np.isnan(judged[-1]) and not samples and "judged_error" in result.metrics:
        judged[-1] = result.metrics["judged_error"]
    result.history = h.assign(judged_name=name, judged_error=judged)
