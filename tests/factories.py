"""Small random time-step problems for tests (not a physical scene: random sparse Jacobians)."""

from __future__ import annotations

import functools
from pathlib import Path

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


def nonsymmetric_local(n_contacts=5, *, seed=4, skew=1e-4, mu=0.5):
    """A local problem (W, q) whose W has a skew part of ``skew`` times its largest entry, as the
    Siconos dumps of Capsules and OneObject have (7e-4 .. 6e-5): W = N + skew max|N| (A - A^T)."""
    p = random_problem(n_contacts, 4, seed=seed, mu=mu)
    N = p.N.toarray()
    A = np.random.default_rng(seed).normal(size=N.shape)
    W = N + skew * np.abs(N).max() * (A - A.T) / np.abs(A - A.T).max()
    return TimeStepProblem(W=sp.csr_matrix(W), q=p.r, mu=p.mu, d=p.d, name=f"nonsymmetric-{seed}")


#: the names of :func:`corpus`'s problems (known without building them, for parametrizing)
CORPUS = ("packing", "packing-local", "box-on-plane", "ball-2d", "random-2d", "joints", "dense-mass", "nonsymmetric")


@functools.cache
def corpus() -> dict[str, TimeStepProblem]:
    """Small problems with the features of the reference problems (3D and 2D, global and local,
    diagonal and dense M, joints, a degenerate W of four coplanar box corners, a non-symmetric W), for
    tests that must run without the reference data. Deterministic; built in well under a second."""
    from problems.scenes import rolling_ball_2d
    from problems.synthetic import sphere_packing
    from workbench.sources import load
    packing = sphere_packing(24, seed=1)
    problems = {
        "packing": packing,
        "packing-local": packing.as_local(),
        "box-on-plane": load("scene:box-on-plane"),
        "ball-2d": rolling_ball_2d(),
        "random-2d": random_problem(6, 4, d=2, seed=5),
        "joints": random_problem(6, 4, seed=2, n_bilateral=3),
        "dense-mass": random_problem(5, 4, seed=3, diagonal_mass=False),
        "nonsymmetric": nonsymmetric_local(),
    }
    assert tuple(problems) == CORPUS
    return problems


def write_samples(folder) -> dict[str, Path]:
    """Small problem files written by the workbench's own writers, one per format the readers take:
    FCLib HDF5 global 3D and 2D and local 3D, Siconos .dat (sparse-block) local 3D and global 3D.
    For tests of what a reader does with a file (spoiled copies, sizes), not of the writers."""
    from pathlib import Path

    from problems.scenes import rolling_ball_2d
    from workbench.io import write_fclib, write_siconos_dat
    folder = Path(folder)
    global_3d = random_problem(3, 2, seed=1)
    files = {"fclib-global-3d": (folder / "global-3d.hdf5", write_fclib, global_3d),
             "fclib-global-2d": (folder / "global-2d.hdf5", write_fclib, rolling_ball_2d()),
             "fclib-local-3d": (folder / "local-3d.hdf5", write_fclib, global_3d.as_local()),
             "dat-local-3d": (folder / "local-3d.dat", write_siconos_dat, global_3d.as_local()),
             "dat-global-3d": (folder / "global-3d.dat", write_siconos_dat, global_3d)}
    for path, write, problem in files.values():
        write(problem, path)
    return {name: path for name, (path, _, _) in files.items()}
