"""The interior-point path on time steps that are hard for it, with an analytic answer to check."""

import numpy as np

from problems.dynamic_scenes import filling
from problems.stepper import Simulation
from workbench.method import solve
from workbench.solvers import SolveOptions


def separating_step():
    """The filling test's step at t = 0.1 s (50 spheres, seed 0): 19 contacts, every one separating
    (r in the interior of the dual cone: mu ||r_t|| < r_n), so the relaxed and exact solutions are
    gamma = 0 (unique: r^T gamma > 0 for every nonzero gamma in the cones). Clarabel stalls on it at gap tolerance 1e-12
    (InsufficientProgress at 10 iterations), the case that stopped filling simulations."""
    scene = filling(n=50, duration=0.1, seed=0)
    sim = Simulation(scene.world, scene.h, "dual", "scs", SolveOptions(keep_history=False))
    for _ in range(10):
        sim.step()
    problem, _, _ = sim.problem()
    return problem


def test_clarabel_on_a_step_whose_contacts_all_separate_returns_zero_impulses():
    problem = separating_step()
    r = problem.r.reshape(-1, problem.d)
    assert problem.n_contacts >= 10
    assert (problem.mu * np.linalg.norm(r[:, 1:], axis=1) < 1e-6 * r[:, 0]).all()
    result = solve(problem, "dual", "clarabel", SolveOptions(tol=1e-6))
    assert result.status == "solved", (result.status, result.message, result.info)
    assert np.abs(result.nu).max() <= 1e-6 * np.abs(r).max() / problem.N_diagonal_blocks[:, 0, 0].min()
    assert "then Solved" in result.info["solver_raw_status"] or result.info["solver_raw_status"] == "Solved"
