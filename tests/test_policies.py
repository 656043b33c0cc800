"""Solver policies written once (issue 34, item 5): the iteration cap, the time left for a method
handed the run, the named compiled state, the stop-cause tables and the polish through execute."""

import time

import numpy as np
import pytest

from formulations import get_formulation
from problems.scenes import rolling_ball_2d
from workbench.method import solve
from workbench.solvers import SOLVERS, SolveOptions, StopCause, get_solver
from workbench.solvers import iterative
from workbench.solvers.cvxpy_base import CvxpySolver
from workbench.solvers.recorder import MIN_TIME_LEFT, Recorder
from workbench.sources import load

#: each registered solver's cap when options.max_iter is unset (None: the backend's own default)
DEFAULT_CAPS = {"clarabel": None, "scs": 100_000, "mosek": None, "newton": 200, "pqn": 1000, "lemke": None,
                "lcp1": 100, "lcp2": 1, "apgd": 10_000, "pgs": 10_000, "jacobi": 10_000, "bb": 10_000,
                "admm": 10_000, "ipm": 10_000}


@pytest.mark.parametrize("name", sorted(DEFAULT_CAPS))
def test_one_iteration_cap_per_solver(name):
    solver = get_solver(name)
    options = SolveOptions(params=solver.check_params({}))
    assert solver.max_iter(options) == DEFAULT_CAPS[name]
    options.max_iter = 7
    assert solver.max_iter(options) == (1 if name == "lcp2" else 7)   # LCP2 is one QP solve by definition


def test_every_registered_solver_has_its_cap_listed():
    assert {n for n in SOLVERS if not n.endswith(":*")} == set(DEFAULT_CAPS)


def test_the_cap_stops_a_run_where_it_says():
    res = solve(rolling_ball_2d(), "dual", "apgd", SolveOptions(tol=1e-14, max_iter=3))
    assert res.stop == StopCause.MAX_ITER and res.iterations == 3
    cannonball = load("generator:cannonball", n_bottom=3, mu=0.3)     # PQN needs more than 1,000 iterations
    res = solve(cannonball, "ncp", "pqn", SolveOptions(tol=1e-9, max_iter=2, params={"fallback": None}))
    assert res.stop == StopCause.MAX_ITER and res.iterations == 2


def test_time_left_is_the_limit_less_the_clock_floored():
    assert Recorder(SolveOptions(), "e").time_left() is None
    rec = Recorder(SolveOptions(time_limit=0.05), "e")
    assert MIN_TIME_LEFT < rec.time_left() <= 0.05
    time.sleep(0.06)
    assert rec.time_left() == MIN_TIME_LEFT


def test_compiled_state_puts_each_value_in_its_named_slot():
    problem = rolling_ball_2d()
    model = get_formulation("dual").build(problem, "ccqo")
    run = iterative.IterativeRun(model, SolveOptions(tol=1e-5), {"anti_relaxation": "inner", "outer_patience": 10}, 123)
    fs, ks = run.compiled_state(5, floats=(0.5, 2.5), ints=(9,))
    assert fs.shape == (iterative.F_OWN + 2,) and ks.shape == (iterative.K_OWN + 1,) and ks.dtype == np.int64
    assert fs[iterative.F_BEST] == np.inf and fs[iterative.F_COPIED] == 0.0
    assert fs[iterative.F_STEP] == run.measure_step and fs[iterative.F_NORM_R0] == run.norm_r0
    assert fs[iterative.F_TARGET] == 1e-5 and list(fs[iterative.F_OWN:]) == [0.5, 2.5]
    assert ks[iterative.K_ITER] == 0 and ks[iterative.K_STOP] == 5 and ks[iterative.K_MAX_ITER] == 123
    assert ks[iterative.K_D] == problem.d and ks[iterative.K_INNER] == 0 and ks[iterative.K_STARTED] == 0
    assert ks[iterative.K_OWN] == 9


def test_cvxpy_status_words_map_to_stop_causes_after_the_caps():
    import cvxpy as cp
    judge = CvxpySolver.stop_cause
    free = SolveOptions()
    assert judge(cp.OPTIMAL, 10, 1.0, free) == StopCause.CONVERGED
    assert judge(cp.OPTIMAL_INACCURATE, 10, 1.0, free) == StopCause.STALLED
    assert judge(cp.USER_LIMIT, 10, 1.0, free) == StopCause.STALLED
    assert judge(cp.INFEASIBLE, 10, 1.0, free) == StopCause.FAILED
    # a cap is judged from what the solver did, before its word
    assert judge(cp.OPTIMAL, 10, 1.0, SolveOptions(max_iter=10)) == StopCause.MAX_ITER
    assert judge(cp.USER_LIMIT, 3, 0.995, SolveOptions(time_limit=1.0)) == StopCause.TIMEOUT


def test_a_polish_that_breaks_down_fails_alone(monkeypatch):
    """The fixed point's Newton polish runs through execute, like PQN's fallback: Newton raising is the
    polish's failed result (recorded in the hand-over), the outer loop's point is judged as it is."""
    from workbench.solvers.newton import NewtonSolver

    def broken(self, model, options):
        raise FloatingPointError("a breakdown")

    monkeypatch.setattr(NewtonSolver, "solve", broken)
    res = solve(rolling_ball_2d(), "dual-fixed-point", "clarabel", SolveOptions(tol=1e-9, params={"outer_max_iter": 2}))
    polish = res.info["polish"]
    assert res.status == "max_iter" and res.info["outer_stop"] == "max_iter"
    assert polish["stopped"] == StopCause.FAILED and not polish["accepted"] and polish["iterations"] == 0
    assert 1e-3 < res.metrics["siconos_error"] < 0.1     # two outer steps from the relaxed start
    (h,) = res.handover
    assert h["kind"] == "polish" and h["to"] == "newton" and not h["used"]
    assert h["stop_before"] == "max_iter" and h["to_stop"] == "failed" and h["status_alone"] == "max_iter"
