"""The scenes of Anitescu and Hart 2003 (Anitescu and Hart): a configuration with a nonconvex LCP solution set and
the 2D cannonball arrangements of its numerical section, as single time steps.

``hexagonal_pyramid`` (Anitescu and Hart 2003 section 3, Figure 1). A rigid body of mass m resting on a fixed
table on the six vertices of its regular hexagonal base: contact j at p_j = (rho cos(j pi/3),
rho sin(j pi/3), -H) from the centre of mass C, normal n = z, frame [z, x, y]; generalised
coordinates the translation of C and the rotation about C, M = diag(m, m, m, J) with J symmetric
positive definite (the paper leaves it free; the default diag(0.25, 0.25, 0.4) kg m^2 is a choice).
Zero initial velocity, gravity, zero gaps. Since p_1 + p_3 + p_5 = p_2 + p_4 + p_6 = (0, 0, -3H)
(eqs. 10-11), v = 0 with zero friction impulses and either
  1. c_n = h m g / 3 at contacts 1, 3, 5, 0 at 2, 4, 6, lambda = 0 at 1, 3, 5 and 1 at 2, 4, 6, or
  2. the same with the odd and even contacts exchanged,
solves the LCP (6)-(7), while their average (c_n = h m g / 6, lambda = 1/2 everywhere) violates
mu c_n - e^T beta >= 0 ⊥ lambda >= 0 as soon as mu > 0: the solution set is nonconvex.
``hexagonal_pyramid_listed_solutions`` returns the two as (c_n, lambda) per contact.

``cannonball`` (Anitescu and Hart 2003 section 4.B). Disks of diameter 3 m in the plane: n on a long fixed plank
(the line y = 0), touching in a row, n - 1 in the grooves on top of them, and so on up to one:
n (n + 1) / 2 disks (21, 136 and 210 for n = 6, 16, 20). Row k (from 0) has its centres at
x = R (1 + 2 i + k), y = R (1 + k sqrt 3): every disk touches its row neighbours and the two disks
below it (hexagonal packing). Mass 1 kg per disk (the paper gives none; a common mass scale does not
change the velocities), a uniform disk's J = m R^2 / 2, d = 2, gravity g = 9.81 m/s^2, zero initial
velocity, h = 0.05 s. Contacts are the disk pairs (k-d tree, scipy.spatial.cKDTree.query_pairs) and
disk-plank pairs with a gap below ``envelope``. Frames follow problems.contact: n from body A to
body B (A the lower index; the plank is A), t = (n_y, -n_x). With r_A = R n, r_B = -R n the
offsets to the contact point, the Jacobian blocks are (Melanz et al. 2015 eq. 5 in 2D)
    body B: n column (n, 0), t column (t, R);     body A: n column (-n, 0), t column (-t, R),
so that D^T v is the relative velocity of the contact points [m/s] (t . (v_B - v_A) + R (w_A + w_B)).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from problems.scenes import GRAVITY
from workbench.errors import InputError
from workbench.limits import fixed_work
from workbench.problem import TimeStepProblem

__all__ = ["hexagonal_pyramid", "hexagonal_pyramid_listed_solutions", "cannonball"]


def hexagonal_pyramid(mu: float = 0.2, h: float = 0.01, mass: float = 1.0, rho: float = 1.0,
                      height: float = 0.25, inertia=(0.25, 0.25, 0.4)) -> TimeStepProblem:
    """The single step of Anitescu and Hart 2003 section 3 (module docstring); ``height`` is H, the height of the
    centre of mass above the base [m]; ``inertia`` the diagonal of J [kg m^2]."""
    angle = np.arange(6) * np.pi / 3.0
    p = np.column_stack([rho * np.cos(angle), rho * np.sin(angle), np.full(6, -height)])
    frame = np.eye(3)[[2, 0, 1]]  # rows n = z, t1 = x, t2 = y
    D = np.zeros((6, 18))
    for j in range(6):  # 6 contacts x 3 directions: the translation part and p_j x direction
        D[:3, 3 * j:3 * j + 3] = frame.T
        D[3:, 3 * j:3 * j + 3] = np.cross(p[j], frame).T
    M = sp.diags(np.concatenate([np.full(3, mass), np.asarray(inertia, dtype=float)]))
    k = np.zeros(6)
    k[2] = -h * mass * GRAVITY
    return TimeStepProblem(M=M, D=D, k=k, mu=np.full(6, mu), d=3, h=h, name="hexagonal-pyramid",
                           metadata={"scene": "hexagonal_pyramid", "mu": mu, "h": h, "mass": mass,
                                     "reference": "Anitescu and Hart 2003 section 3"})


fixed_work(hexagonal_pyramid, bodies=1, contacts=6)   # one pyramid on its six base corners


def hexagonal_pyramid_listed_solutions(h: float = 0.01, mass: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The two solutions listed in Anitescu and Hart 2003 section 3 as (c_n, lambda) per contact (beta = 0, v = 0)."""
    third = h * mass * GRAVITY / 3.0
    odd = np.arange(6) % 2 == 0  # contacts 1, 3, 5 of the paper
    return [(np.where(odd, third, 0.0), np.where(odd, 0.0, 1.0)),
            (np.where(odd, 0.0, third), np.where(odd, 1.0, 0.0))]


def _cannonball_centres(n_bottom: int, radius: float) -> np.ndarray:
    rows = np.repeat(np.arange(n_bottom), np.arange(n_bottom, 0, -1))
    first = np.concatenate([[0], np.cumsum(np.arange(n_bottom, 1, -1))])
    i = np.arange(rows.shape[0]) - first[rows]
    return np.column_stack([radius * (1.0 + 2.0 * i + rows), radius * (1.0 + rows * np.sqrt(3.0))])


def cannonball(n_bottom: int, mu: float, h: float = 0.05, diameter: float = 3.0, mass: float = 1.0,
               envelope: float | None = None) -> TimeStepProblem:
    """The first step of the cannonball arrangement with ``n_bottom`` disks on the plank (module
    docstring). ``envelope``: contacts are kept up to this gap [m] (default 1e-6 diameter)."""
    if isinstance(n_bottom, bool) or not isinstance(n_bottom, (int, np.integer)) or n_bottom < 1:
        raise InputError(f"n_bottom must be a positive integer, got {n_bottom!r}")
    if not (np.isfinite(mu) and mu >= 0):
        raise InputError(f"mu must be a non-negative number, got {mu!r}")
    if not (np.isfinite(h) and h > 0 and np.isfinite(diameter) and diameter > 0 and mass > 0):
        raise InputError("h, diameter and mass must be positive")
    R = 0.5 * diameter
    env = 1e-6 * diameter if envelope is None else float(envelope)
    x = _cannonball_centres(int(n_bottom), R)
    n = x.shape[0]
    pairs = cKDTree(x).query_pairs(2.0 * R + env, output_type="ndarray")
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))] if pairs.size else np.zeros((0, 2), dtype=np.int64)
    a_pair, b_pair = pairs[:, 0], pairs[:, 1]
    dvec = x[b_pair] - x[a_pair]
    dist = np.linalg.norm(dvec, axis=1)
    on_plank = np.flatnonzero(x[:, 1] - R <= env)
    a = np.concatenate([a_pair, np.full(on_plank.shape, -1)])
    b = np.concatenate([b_pair, on_plank])
    normal = np.concatenate([dvec / dist[:, None], np.tile([0.0, 1.0], (on_plank.shape[0], 1))])
    phi = np.concatenate([dist - 2.0 * R, x[on_plank, 1] - R])
    tangent = np.column_stack([normal[:, 1], -normal[:, 0]])
    n_c = a.shape[0]
    # COO blocks: (contact c, column n|t) x (body dof x, y, theta)
    cn, ct = 2 * np.arange(n_c), 2 * np.arange(n_c) + 1
    rows, cols, vals = [], [], []
    for body, sign in ((b, 1.0), (a, -1.0)):
        on = np.flatnonzero(body >= 0)
        dof = 3 * body[on]
        for comp in range(2):
            rows += [dof + comp, dof + comp]
            cols += [cn[on], ct[on]]
            vals += [sign * normal[on, comp], sign * tangent[on, comp]]
        rows.append(dof + 2)
        cols.append(ct[on])
        vals.append(np.full(on.shape, R))
    D = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(3 * n, 2 * n_c))
    M = sp.diags(np.tile([mass, mass, 0.5 * mass * R * R], n))
    k = np.tile([0.0, -h * mass * GRAVITY, 0.0], n)
    b_vec = np.zeros(2 * n_c)
    b_vec[cn] = phi / h
    return TimeStepProblem(M=M, D=D, k=k, b=b_vec, mu=np.full(n_c, mu), d=2, h=h,
                           name=f"cannonball-{n}",
                           metadata={"scene": "cannonball", "n_bottom": int(n_bottom), "n_disks": n, "mu": mu,
                                     "h": h, "diameter": diameter, "reference": "Anitescu and Hart 2003 section 4.B"})


def cannonball_work(n_bottom: int, **_) -> dict:
    """What :func:`cannonball` makes: a triangle of n_bottom (n_bottom + 1) / 2 disks and the plank, at
    most 4 contacts per disk (two below, the plank or a neighbour)."""
    bodies = n_bottom * (n_bottom + 1) // 2 + 1 if isinstance(n_bottom, int) else 0
    return {"bodies": bodies, "contacts": 4 * bodies}


cannonball.work = cannonball_work
