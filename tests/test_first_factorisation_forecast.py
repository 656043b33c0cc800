"""Issue 45, item 6: API time limits within +2 s for newton, admm and ipm at 10k-15k contacts. The
first factorisation of a run has no earlier one to be forecast by; it is forecast from its size by
factorising leading principal blocks of its matrix (workbench.solvers.recorder.forecast_first) and
not started when it would end too far past the limit (Recorder.affords_first). Variants: the
forecast on a deterministic clock (growth as a power, with an exponent that grows as the measured
factorisations' do, a block that is singular, no limit, a small matrix), and each of the three
solvers wired to it: stopped before the first factorisation when its forecast cannot be afforded,
and unchanged (same status, iterations and point) when it can."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from problems.synthetic import sphere_packing
from workbench.method import Method
from workbench.solvers import SolveOptions, StopCause
from workbench.solvers import recorder
from workbench.solvers.recorder import PROBE_MIN, forecast_first


class Clock:
    """A clock that only the fake factorisations advance: each costs ``cost(m)`` seconds of wall and
    CPU time, so that the forecasts are exact arithmetic, the same on any machine and load."""

    def __init__(self, cost):
        self.now, self.cost, self.sizes = 0.0, cost, []

    def factor(self, block):
        m = block.shape[0]
        self.sizes.append(m)
        self.now += self.cost(m)

    def read(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    def make(cost):
        c = Clock(cost)
        monkeypatch.setattr(recorder.time, "perf_counter", c.read)
        monkeypatch.setattr(recorder.time, "process_time", c.read)
        return c
    return make


N = 64_000
A = sp.identity(N, format="csc")


def growing(n0=1000.0, t0=0.01, beta0=1.4, delta=0.55):
    """A cost whose exponent grows by ``delta`` each doubling from beta0 at n0 rows (as qdldl's on a
    27,000-row sphere packing: 1.4, 1.6, 2.3, 3.0, 3.6); up to about 4 at the last doubling, past a
    dense factorisation's 3 as the fill sets in, as measured, never far past it."""
    def cost(m):
        x = math.log2(m / n0)
        return t0 * 2.0 ** (beta0 * x + delta * x * x / 2)
    return cost


@pytest.mark.parametrize("cost", [lambda m: 1e-12 * m ** 3, lambda m: 3e-9 * m ** 2, growing(),
                                  growing(delta=0.3), growing(beta0=1.8, delta=0.4)],
                         ids=["cube", "square", "growing", "growing-slower", "growing-faster"])
def test_a_first_factorisation_that_cannot_fit_is_forecast_past_the_time_left(clock, cost):
    """The whole would take more than the time left: the forecast says so, and probing spends at most
    about a quarter of the time left, never the whole."""
    whole = cost(N)
    left = whole / 4
    c = clock(cost)
    forecast = forecast_first(A, c.factor, left)
    assert forecast > left
    assert forecast >= 0.5 * whole            # an under-estimate never by more than half
    assert c.now <= 0.6 * left and max(c.sizes) <= N // 2


@pytest.mark.parametrize("cost", [lambda m: 1e-12 * m ** 3, growing(), growing(delta=0.3)],
                         ids=["cube", "growing", "growing-slower"])
def test_a_first_factorisation_that_fits_is_let_start_after_a_small_probe(clock, cost):
    """With ample time the forecast fits and the probes cost a small share of the factorisation."""
    whole = cost(N)
    c = clock(cost)
    forecast = forecast_first(A, c.factor, 20 * whole)
    assert forecast <= 20 * whole and c.now <= 0.2 * whole


def test_the_forecast_is_not_asked_without_a_limit_or_for_a_small_matrix(clock):
    c = clock(lambda m: 1.0)
    assert forecast_first(A, c.factor, None) is None
    assert forecast_first(sp.identity(PROBE_MIN - 1, format="csc"), c.factor, 1.0) is None
    assert c.sizes == []

    def singular(block):
        raise RuntimeError("Factor is exactly singular")
    assert forecast_first(A, singular, 1.0) is None


def test_the_forecast_measures_cpu_time_so_a_loaded_machine_does_not_bend_it(monkeypatch):
    """Wall time twice the CPU time (a machine loaded 2x): the exponent comes from CPU time, the unit
    from the wall time, so the forecast is twice the CPU forecast, not distorted by the load."""
    state = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(recorder.time, "perf_counter", lambda: state["wall"])
    monkeypatch.setattr(recorder.time, "process_time", lambda: state["cpu"])

    def factor(block, load=2.0):
        t = 1e-12 * block.shape[0] ** 3
        state["cpu"] += t
        state["wall"] += load * t
    f2 = forecast_first(A, factor, 1e-12 * N ** 3 / 4)
    state.update(wall=0.0, cpu=0.0)
    f1 = forecast_first(A, lambda b: factor(b, 1.0), 1e-12 * N ** 3 / 4)
    assert f2 == pytest.approx(2 * f1, rel=1e-6)


#: (formulation, solver): each factorises a matrix above PROBE_MIN rows first on this packing
FIRST = [("dual", "ipm"), ("dual", "admm"), ("ncp", "newton")]


@pytest.fixture(scope="module")
def packing():
    return sphere_packing(800, seed=3)


@pytest.mark.parametrize("formulation, solver", FIRST, ids=[s for _, s in FIRST])
def test_a_solver_does_not_start_a_first_factorisation_it_cannot_afford(monkeypatch, packing, formulation, solver):
    seen = []
    real = recorder.forecast_first

    def inflated(matrix, factor, time_left):
        seen.append(matrix.shape[0])
        return real(matrix, factor, time_left) + 1e9
    monkeypatch.setattr(recorder, "forecast_first", inflated)
    res = Method(formulation, solver).solve(packing, SolveOptions(tol=1e-12, time_limit=1000.0))
    assert seen and min(seen) >= PROBE_MIN
    assert res.stop is StopCause.TIMEOUT and res.status == "timeout", res.message
    assert res.iterations == 0
    forecast = res.info["time_limit_forecast"]
    assert forecast["forecast_seconds"] >= 1e9 and "first factorisation" in forecast["by"]


@pytest.mark.parametrize("formulation, solver", FIRST, ids=[s for _, s in FIRST])
def test_a_first_factorisation_that_fits_changes_nothing(packing, formulation, solver):
    """A limit the run keeps within: the same status, iterations and point as without a limit."""
    method = Method(formulation, solver)
    free = method.solve(packing, SolveOptions(tol=1e-8, max_iter=30))
    limited = method.solve(packing, SolveOptions(tol=1e-8, max_iter=30, time_limit=600.0))
    assert "time_limit_forecast" not in limited.info
    assert (limited.status, limited.iterations) == (free.status, free.iterations)
    assert np.array_equal(limited.nu, free.nu)
