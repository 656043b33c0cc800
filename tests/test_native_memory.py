"""Issue 45, item 6: lcp1 and lcp2 aborted natively (Clarabel's Rust: "memory allocation of 343879168
bytes failed", SIGABRT) under an address-space cap of 4 GB on a 10,084-contact packing. Rule: the
address space a QP solve would map is forecast from Q's entries before cvxpy or the QP solver
allocates anything (workbench.solvers.lcp1.qp_would_not_fit, QP_BYTES_PER_ENTRY measured), checked
against what the process's RLIMIT_AS leaves (workbench.limits.address_space_left); when it would not
fit the run is failed with one line and the process lives. Variants: both solvers and both QP
solvers under a cap that leaves too little (in a child process, which must exit normally), the same
under a cap that leaves enough (not refused), the forecast's words, no cap."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import scipy.sparse as sp

from workbench.limits import address_space_left
from workbench.solvers import lcp1

CHILD = textwrap.dedent("""
    import json, resource, sys
    from problems.synthetic import sphere_packing
    from workbench.limits import address_space_left
    from workbench.method import Method
    from workbench.solvers import SolveOptions
    solver, qp_solver, room = sys.argv[1], sys.argv[2], int(sys.argv[3])
    method = Method("lcp-pyramid", solver, params={"qp_solver": qp_solver})
    method.warm_up()
    problem = sphere_packing(300, seed=3)
    method.formulation.build_checked(problem, method.kind, method.formulation_params).edge_qp()   # paid for
    with open("/proc/self/statm") as f:
        now = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (now + room, resource.getrlimit(resource.RLIMIT_AS)[1]))
    res = method.solve(problem, SolveOptions(tol=1e-8, time_limit=60.0))
    print(json.dumps({"status": res.status, "message": res.message, "left": address_space_left()}))
""")


def _child(solver: str, qp_solver: str, room: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, solver, qp_solver, str(room)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("solver", ["lcp2", "lcp1"])
@pytest.mark.parametrize("qp_solver", ["clarabel", "osqp"])
def test_a_qp_that_would_not_fit_the_address_space_is_one_line_not_an_abort(solver, qp_solver):
    proc = _child(solver, qp_solver, 40 * 2**20)        # 40 MiB left: the QP of 300 spheres needs more
    assert proc.returncode == 0, proc.stderr[-2000:]    # no SIGABRT (-6), no MemoryError traceback
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == "failed"
    assert "RLIMIT_AS" in out["message"] and "not started" in out["message"] and "\n" not in out["message"]


def test_a_qp_that_fits_is_not_refused():
    proc = _child("lcp2", "clarabel", 3 * 2**30)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] != "failed" and "RLIMIT_AS" not in (out["message"] or "")


def test_the_forecast_of_the_address_space(monkeypatch):
    Q = sp.random(1000, 1000, density=0.01, format="csr", random_state=1)
    monkeypatch.setattr("workbench.limits.address_space_left", lambda: None)
    assert lcp1.qp_would_not_fit(Q) is None                     # no cap: nothing to check
    needed = lcp1.QP_BYTES_PER_ENTRY * Q.nnz + lcp1.QP_BYTES_FLOOR
    monkeypatch.setattr("workbench.limits.address_space_left", lambda: needed)
    assert lcp1.qp_would_not_fit(Q) is None
    monkeypatch.setattr("workbench.limits.address_space_left", lambda: needed - 1)
    why = lcp1.qp_would_not_fit(Q)
    assert "1,000 unknowns" in why and "RLIMIT_AS" in why and "\n" not in why


def test_no_cap_reads_as_none():
    import resource
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        assert address_space_left() is None
    else:
        assert address_space_left() >= 0
