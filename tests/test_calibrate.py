"""benchmarks.calibrate's fits on synthetic measures with a known answer (no packing is made here)."""

import math

import numpy as np
import pytest

from benchmarks.calibrate import fit_monotone, fit_power, scaling_exponent


def test_bisection_finds_the_floor_of_a_falling_step_count():
    # a contact count that falls with the floor width: 1000 / w^2 contacts, floored to an integer;
    # 77 contacts are met for w in (sqrt(1000/78), sqrt(1000/77)] = (3.5806, 3.6037]
    calls = []

    def count(w):
        calls.append(w)
        return math.floor(1000.0 / w ** 2)

    fit = fit_monotone(count, 77, 2.0, 8.0, width=1e-3)
    assert count(fit.value) == 77 and fit.residual == 0
    assert math.sqrt(1000 / 78) < fit.value <= math.sqrt(1000 / 77)
    # bisection: at most 2 + log2(6 / 1e-3) evaluations, each recorded once
    assert len(fit.evaluations) == len(set(calls)) <= 2 + math.ceil(math.log2(6 / 1e-3))


def test_bisection_reports_the_residual_when_the_count_skips_the_target():
    # a count that jumps 10 at a time never equals 77: the bracket closes on the jump and the
    # residual says how far the nearer side is
    # (80 for w in (10/9, 1.25], 70 for w in (1.25, 10/7])
    fit = fit_monotone(lambda w: 10 * math.floor(10.0 / w), 77, 1.0, 4.0, width=1e-4)
    assert fit.hi - fit.lo <= 1e-4
    assert fit.lo <= 1.25 < fit.hi
    assert fit.value == fit.lo and fit.residual == 3.0


def test_bisection_refuses_a_bracket_that_does_not_cross():
    with pytest.raises(ValueError, match="does not cross"):
        fit_monotone(lambda w: 100 - w, 77, 1.0, 10.0, width=0.1)
    with pytest.raises(ValueError, match="bad bracket"):
        fit_monotone(lambda w: w, 1, 2.0, 1.0, width=0.1)


def test_measured_exponent_and_power_fit_recover_a_known_mass():
    # an objective -0.0116 * m^1 (linear in m) sampled at three masses: slope 1, and -0.0232 at m = 2
    masses = [0.5, 1.0, 4.0]
    objective = [-0.0116 * m for m in masses]
    p = scaling_exponent(masses, objective)
    assert p == pytest.approx(1.0, abs=1e-12)
    assert fit_power(-0.0116, -0.0232, p) == pytest.approx(2.0, rel=1e-12)
    # and a quadratic law is told apart from a linear one
    assert scaling_exponent(masses, [3.0 * m ** 2 for m in masses]) == pytest.approx(2.0, abs=1e-12)
    assert fit_power(3.0, 12.0, 2.0) == pytest.approx(2.0, rel=1e-12)


def test_scaling_and_power_fit_refuse_what_has_no_answer():
    with pytest.raises(ValueError):
        scaling_exponent([1.0, 1.0], [2.0, 3.0])
    with pytest.raises(ValueError):
        scaling_exponent([1.0, 2.0], [-1.0, 1.0])
    with pytest.raises(ValueError):
        fit_power(-0.01, 0.02, 1.0)
    assert np.isfinite(fit_power(1.0, 1.0, 0.5))
