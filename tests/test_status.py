"""The one status table (workbench.status): its groups are what the judge, the accounting and
conformance act on, and every model a formulation builds declares the measure it is judged by."""

import numpy as np
import pytest

from problems.scenes import rolling_ball_2d
from workbench import status
from workbench.judging import CAPS, finalize
from workbench.solvers import STATUSES, SolveOptions, SolveResult, StopCause


def test_the_table_is_read_by_every_reader():
    from workbench.analysis.accounting import NOT_COUNTED
    from workbench.plot import JUDGED
    from workbench.report.conformance import STATUS_ORDER

    assert STATUSES == status.ORDER
    assert status.ORDER[0] == status.SOLVED and len(set(status.ORDER)) == len(status.ORDER)
    assert set(CAPS.values()) == set(status.CAP_REACHED) == {"max_iter", "timeout"}
    assert all(StopCause(name) in CAPS for name in status.CAP_REACHED)
    assert NOT_COUNTED == status.NOT_METHODS_FAULT == ("unavailable", "warm-up")
    assert STATUS_ORDER == tuple(s for s in status.ORDER if s != "warm-up")
    assert JUDGED == status.JUDGED_MEASURES
    # the judge gives exactly the judged statuses; the runner the others
    assert status.JUDGED == ("solved", "inaccurate", "max_iter", "timeout", "failed")
    assert set(status.PRODUCED_NOTHING) == {"failed", "crash", "unavailable", "warm-up"}
    assert len({s.letter for s in status.TABLE}) == len(status.TABLE) and status.letter("nonsense") == "?"


@pytest.mark.parametrize("formulation, kind, measure", [
    ("dual", "cvxpy", "relaxed_error"), ("primal", "cvxpy", "relaxed_error"),
    ("dual", "ccqo", "relaxed_error"), ("anti-relaxed", "ccqo", "siconos_error"),
    ("ncp", "ncp", "siconos_error"), ("dual-fixed-point", "cvxpy-fixed-point", "siconos_error"),
    ("lcp-pyramid", "lcp", "lcp_residual")])
def test_every_model_declares_its_judged_measure(formulation, kind, measure):
    from formulations import get_formulation
    model = get_formulation(formulation).build(rolling_ball_2d(), kind)
    assert model.judged_by == measure and measure in status.JUDGED_MEASURES


@pytest.mark.parametrize("stop, nu, expected", [
    (StopCause.MAX_ITER, None, "max_iter"), (StopCause.TIMEOUT, None, "timeout"),
    (StopCause.FAILED, None, "failed"), (StopCause.STALLED, "far", "inaccurate"),
    (StopCause.MAX_ITER, "far", "max_iter"), (StopCause.MAX_ITER, "zero", None)])
def test_the_judge_gives_the_judged_statuses_by_the_table(stop, nu, expected):
    """A point far from the solution is inaccurate (or the cap that stopped it); no point is failed
    (or the cap); the point nu = 0 of the rolling ball is judged by the model's declared measure."""
    from formulations import get_formulation
    problem = rolling_ball_2d()
    model = get_formulation("dual").build(problem, "ccqo")
    point = {None: None, "far": np.full(problem.n_unknowns, 1e3), "zero": np.zeros(problem.n_unknowns)}[nu]
    res = finalize(SolveResult(solver="x", formulation="dual", status="failed", nu=point, stop=stop),
                   model, SolveOptions(tol=1e-8))
    assert res.status in status.JUDGED
    if expected is not None:
        assert res.status == expected
    if point is not None:
        assert res.judged_name == "relaxed_error"
        assert res.metrics["judged_error"] == res.metrics["relaxed_error"]
