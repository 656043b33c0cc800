"""The first call and the thin path of a small solve (issue 33, items 1 and 3): a cold ``workbench solve``
loads only what its method needs and prints all it computed; the per-call shortcuts give the numbers
the long way gives, to the bit."""

import json
import subprocess
import sys

import numpy as np
import pytest

from factories import random_problem
from workbench import method as method_module
from workbench import metrics
from workbench.io import write_siconos_dat
from workbench.method import Method, _method, solve
from workbench.solvers import SOLVERS, SolveOptions

#: what a cold anti-relaxed APGD solve of a .dat file must not import: the conic description and
#: scipy's sparse linear algebra (a diagonal M or a local problem needs neither), pandas (no history),
#: cvxpy, matplotlib, h5py (a .dat file), the study worker (the parser reads the executors' names only)
NOT_NEEDED = ("scipy.sparse.linalg", "scipy.sparse.csgraph", "pandas", "cvxpy", "matplotlib", "h5py", "workbench.study.worker",
              "formulations.qp", "formulations.relaxed_dual")


def _timing_free(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in ("build_seconds", "solve_seconds", "compile_seconds",
                                                        "warm_up_seconds")}
    out["info"] = {k: v for k, v in record["info"].items() if "seconds" not in k}
    return out


def test_a_cold_solve_loads_only_its_method_and_prints_everything(tmp_path):
    """`python -m workbench.cli solve` of a local 4-contact file with anti-relaxed APGD in a new process
    imports none of NOT_NEEDED, and its --json output (printed before the process ends without the
    interpreter's teardown) is the record the same solve gives in this process."""
    problem = random_problem(4, 3, seed=7).as_local()
    path = tmp_path / "four.dat"
    write_siconos_dat(problem, path)
    args = ["solve", str(path), "-f", "anti-relaxed", "-s", "apgd", "--tol", "1e-8", "--json"]
    # the modules at the end of a command run in a new process (importtime misses importlib.import_module's)
    seen = subprocess.run([sys.executable, "-c", "import json, sys\nfrom workbench.cli import main\ncode = main(sys.argv[1:])\n"
                           "sys.stderr.write(json.dumps(sorted(sys.modules)))", *args], capture_output=True, text=True,
                          timeout=600)
    imported = json.loads(seen.stderr)
    assert "numba" in imported and "workbench.solvers.apgd" in imported
    loaded = [m for m in imported if m.startswith(NOT_NEEDED)]
    assert loaded == [], f"a cold solve imported {loaded}"
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)
    from workbench.io import load_problem
    here = Method("anti-relaxed", "apgd").solve(load_problem(path), SolveOptions(tol=1e-8, keep_history=False))
    assert printed["status"] == "solved" == here.status
    ours = {k: v for k, v in printed.items() if k not in ("problem", "n_contacts")}
    assert _timing_free(ours) == _timing_free(json.loads(json.dumps(
        {**here.record(point=False, history=False), "compile_seconds": None, "warm_up_seconds": None})))


@pytest.mark.parametrize("case", ["local", "global diagonal M", "global with joints", "global general M"])
def test_the_metrics_kernel_computes_the_relative_velocity_of_apply_n_to_the_bit(case):
    """metrics.evaluate's one compiled call (u = N nu + r with the problem's compiled operator, then the
    sums) gives the sums that relative_velocity's u gives, bit for bit, on every kind of problem."""
    problem = {"local": random_problem(6, 4, seed=3).as_local(),
               "global diagonal M": random_problem(6, 4, seed=3),
               "global with joints": random_problem(6, 4, seed=5, n_bilateral=2),
               "global general M": random_problem(6, 4, seed=3, diagonal_mass=False)}[case]
    nu = np.random.default_rng(1).normal(size=problem.n_unknowns)
    u = problem.relative_velocity(nu)
    n = u.shape[0]
    sums = metrics._measure_sums(nu, u, np.asarray(problem.r), problem.mu, problem.d, metrics.CCP_RESIDUAL_STEP,
                                 np.zeros(n), np.empty(n))
    got = metrics.evaluate(problem, nu)
    scale = metrics.normalisation(problem.norm_r, np.sqrt(sums[2]), np.sqrt(sums[3]))
    assert got["dual_objective"] == 0.5 * sums[0] and got["duality_gap"] == sums[1]
    assert got["siconos_error"] == np.sqrt(sums[4]) / scale and got["relaxed_error"] == np.sqrt(sums[5]) / scale
    # the kernel returns the violations themselves: max(0, -min u_n) and max_i dist(gamma_i, K_i)
    assert got["cone_violation"] == sums[9] and got["normal_velocity_violation"] == sums[8]
    assert problem.norm_r == pytest.approx(float(np.linalg.norm(problem.r)), rel=1e-14)


def test_the_one_call_solve_reuses_its_method_and_gives_what_a_new_method_gives(monkeypatch):
    """workbench.method.solve keeps one Method per names and parameters (by their JSON text), and a name
    registered anew gets a new one; its results equal those of a Method made for the call."""
    problem = random_problem(5, 3, seed=11)
    options = SolveOptions(tol=1e-8, keep_history=True)
    # an empty cache: the earlier tests of this worker may have filled it to the point where it is emptied
    monkeypatch.setattr(method_module, "_METHODS", {})
    first = _method("anti-relaxed", "pgs", {"anti_relaxation": "inner"})
    assert _method("anti-relaxed", "pgs", {"anti_relaxation": "inner"}) is first
    assert _method("anti-relaxed", "pgs", {}) is not first
    assert _method("anti-relaxed", "apgd", {"outer_patience": 3}) is not _method("anti-relaxed", "apgd", {"outer_patience": 3.0})
    kept = solve(problem, "anti-relaxed", "pgs", options).record()
    made = Method("anti-relaxed", "pgs").solve(problem, options).record()
    assert _timing_free({k: v for k, v in kept.items() if k != "history"}) == \
        _timing_free({k: v for k, v in made.items() if k != "history"})
    assert {k: v for k, v in kept["history"].items() if k != "seconds"} == \
        {k: v for k, v in made["history"].items() if k != "seconds"}
    monkeypatch.setitem(SOLVERS, "pgs", SOLVERS["pgs"] + "")   # the same entry: the same Method
    assert _method("anti-relaxed", "pgs", {"anti_relaxation": "inner"}) is first
    monkeypatch.setitem(SOLVERS, "pgs", "workbench.solvers.jacobi:JacobiSolver")
    assert _method("anti-relaxed", "pgs", {"anti_relaxation": "inner"}).solver.name == "jacobi"
