"""Small random time-step problems for tests (not a physical scene: random sparse Jacobians)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from workbench.problem import TimeStepProblem


def random_problem(n_contacts=6, n_bodies=4, d=3, *, seed=0, diagonal_mass=True, n_bilateral=0,
                   mu=0.3, gap=0.0):
    """A global problem with 6 dof per body, contacts between random body pairs, gravity-like k."""
    rng = np.random.default_rng(seed)
    n_dof = 6 * n_bodies
    m = d * n_contacts
    rows, cols, vals = [], [], []
    for c in range(m):  # test data: a loop over columns is fine here
        bodies = rng.choice(n_bodies, size=2, replace=False)
        for j, body in enumerate(bodies):
            dofs = 6 * body + rng.choice(6, size=3, replace=False)
            rows += list(dofs)
            cols += [c] * 3
            vals += list((1 if j == 0 else -1) * rng.normal(size=3))
    D = sp.csr_matrix((vals, (rows, cols)), shape=(n_dof, m))
    if diagonal_mass:
        M = sp.diags(rng.uniform(0.5, 2.0, n_dof))
    else:
        B = sp.random(n_dof, n_dof, density=0.2, random_state=seed)
        M = (B @ B.T + sp.eye(n_dof) * n_dof * 0.1).tocsr()
        M = ((M + M.T) * 0.5).tocsr()
    v = rng.normal(size=n_dof) * 0.3
    f = np.zeros(n_dof)
    f[1::6] = -9.81
    h = 0.01
    b = np.zeros(m)
    b[::d] = gap / h
    kwargs = {}
    if n_bilateral:
        kwargs["G"] = sp.random(n_dof, n_bilateral, density=0.3, random_state=seed + 1) + \
            sp.eye(n_dof, n_bilateral)
        kwargs["b_G"] = rng.normal(size=n_bilateral) * 0.01
    return TimeStepProblem(M=M, D=D, k=M @ v + h * f, b=b, mu=np.full(n_contacts, mu), d=d, h=h,
                           name=f"random-{seed}", **kwargs)
