"""Static synthetic time steps: a jittered dense packing of spheres in a box, for benchmarks and tests.

:func:`sphere_packing` places ``n_spheres`` spheres of radius R on a simple cubic lattice of spacing 2R
(layer by layer from the floor up, so the top layer may be partial), moves every centre by a uniform
random jitter of amplitude ``jitter * R`` per coordinate, and closes the scene with a box container
(floor z = 0 and four side walls, all fixed) or, with ``container=False``, the floor alone. A pair is in
contact when its gap Phi = ||x_B - x_A|| - 2R is below ``envelope * R`` (candidates from
scipy.spatial.cKDTree, no O(n^2) loop); a sphere touches a wall when its gap Phi = dist - R is below
the same envelope. With the defaults (jitter 1e-3, envelope 5e-4) about half of the lattice
neighbours touch, i.e. about 2 contacts per sphere as in real settled 3D packings (10,000 contacts
from about 4,500 spheres).

Each sphere has 6 degrees of freedom v = [x', y', z', w_x, w_y, w_z] (world frame, rotation = identity),
M = diag(m, m, m, 2/5 m R^2 x 3). Contact i joins body A (a wall when A = -1) and body B; its frame
A_p = [n, u, w] has the unit normal n pointing from A to B, so that u_n = n . (v_B,point - v_A,point)
is positive when the bodies separate. With the lever arms s_A = +R n (from A's centre to the contact
point; zero for a wall) and s_B = -R n, seed 000 eq. 5 gives the Jacobian columns

    D[lin B, c] = a_c,   D[ang B, c] = s_B x a_c,   D[lin A, c] = -a_c,   D[ang A, c] = -(s_A x a_c)

for the frame directions a_c in {n, u, w}, so that D_i^T v = A_p^T (v_B + w_B x s_B - v_A - w_A x s_A).
(For spheres s x n = 0: the normal columns have no angular part.) The time step data (seed 000 eqs. 7-8,
13): k = M v + h f with gravity f = -m g e_z on every sphere and small random velocities (normal with
standard deviation ``velocity_std`` [m/s] and [rad/s]), b = Phi / h in the normal slots (negative for
penetration), mu on every contact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from workbench.problem import TimeStepProblem

__all__ = ["sphere_packing", "PackingContacts", "packing_positions", "detect_packing_contacts",
           "contact_frames", "packing_jacobian", "GRAVITY"]

GRAVITY = 9.81


@dataclass(frozen=True)
class PackingContacts:
    """Contacts of a packing, arrays over contacts: body A (-1 for a wall), body B, unit normal from
    A to B (n_c, 3), gap Phi [m] (n_c,)."""
    a: np.ndarray
    b: np.ndarray
    normal: np.ndarray
    phi: np.ndarray

    @property
    def n(self) -> int:
        return self.phi.shape[0]


def packing_positions(n_spheres: int, radius: float, jitter: float, rng: np.random.Generator):
    """Centres (n, 3) on the jittered simple cubic lattice of the module docstring and the container's
    inner size (L_x, L_y) [m]. The floor is n_x x n_x sites with n_x = round(n^(1/3))."""
    nx = max(1, int(round(n_spheres ** (1.0 / 3.0))))
    site = np.arange(n_spheres)
    ijk = np.stack([site % nx, (site // nx) % nx, site // (nx * nx)], axis=1)
    x = (2.0 * ijk + 1.0) * radius + rng.uniform(-jitter, jitter, size=(n_spheres, 3)) * radius
    return x, (2.0 * nx * radius, 2.0 * nx * radius)


def detect_packing_contacts(x: np.ndarray, radius: float, box: tuple[float, float], envelope: float,
                            container: bool) -> PackingContacts:
    """Sphere-sphere contacts from a cKDTree pair query (gap below ``envelope``, in metres) and
    sphere-wall contacts against the floor (and, with ``container``, the four side walls)."""
    pairs = cKDTree(x).query_pairs(2.0 * radius + envelope, output_type="ndarray")
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]  # deterministic order
    delta = x[pairs[:, 1]] - x[pairs[:, 0]]
    dist = np.linalg.norm(delta, axis=1)
    a = [pairs[:, 0]]
    b = [pairs[:, 1]]
    normal = [delta / dist[:, None]]
    phi = [dist - 2.0 * radius]
    # walls: (axis, inward normal sign, wall coordinate); the gap is the distance to the wall minus R
    walls = [(2, 1.0, 0.0)]
    if container:
        walls += [(0, 1.0, 0.0), (0, -1.0, box[0]), (1, 1.0, 0.0), (1, -1.0, box[1])]
    for axis, sign, coord in walls:
        gap = sign * (x[:, axis] - coord) - radius
        on = np.flatnonzero(gap < envelope)
        nrm = np.zeros((on.size, 3))
        nrm[:, axis] = sign
        a.append(np.full(on.size, -1))
        b.append(on)
        normal.append(nrm)
        phi.append(gap[on])
    return PackingContacts(a=np.concatenate(a), b=np.concatenate(b), normal=np.concatenate(normal),
                           phi=np.concatenate(phi))


def contact_frames(normal: np.ndarray) -> np.ndarray:
    """Orthonormal right-handed frames [n, u, w] as columns, shape (n_c, 3, 3): u = n x e / ||n x e||
    with e the coordinate axis least aligned with n (never parallel to it), w = n x u."""
    e = np.zeros_like(normal)
    e[np.arange(normal.shape[0]), np.argmin(np.abs(normal), axis=1)] = 1.0
    u = np.cross(normal, e)
    u /= np.linalg.norm(u, axis=1)[:, None]
    w = np.cross(normal, u)
    return np.stack([normal, u, w], axis=2)


def packing_jacobian(contacts: PackingContacts, radius: float, n_spheres: int) -> sp.csr_matrix:
    """D (6 n_spheres, 3 n_c) of the module docstring, built as one COO matrix: a block
    (contact, side, 6 dof rows, 3 frame columns) for body B (sign +1, s_B = -R n) and body A
    (sign -1, s_A = +R n), the wall sides dropped."""
    n_c = contacts.n
    dirs = np.transpose(contact_frames(contacts.normal), (0, 2, 1))     # (n_c, 3 columns, 3 components)
    blocks, rows, cols = [], [], []
    col = 3 * np.arange(n_c)[:, None, None] + np.arange(3)[None, None, :]  # (n_c, 1, 3)
    for body, sign, lever in ((contacts.b, 1.0, -radius), (contacts.a, -1.0, radius)):
        keep = body >= 0
        s = lever * contacts.normal[keep]                                   # lever arm (n, 3)
        lin = dirs[keep]                                                    # (n, col, comp)
        ang = np.cross(s[:, None, :], lin)                                  # s x a_c, (n, col, comp)
        blocks.append(sign * np.concatenate([lin, ang], axis=2).transpose(0, 2, 1))  # (n, 6 rows, 3 cols)
        rows.append(np.broadcast_to(6 * body[keep][:, None, None] + np.arange(6)[None, :, None],
                                    (keep.sum(), 6, 3)))
        cols.append(np.broadcast_to(col[keep], (keep.sum(), 6, 3)))
    D = sp.coo_matrix((np.concatenate([x.ravel() for x in blocks]),
                       (np.concatenate([x.ravel() for x in rows]), np.concatenate([x.ravel() for x in cols]))),
                      shape=(6 * n_spheres, 3 * n_c))
    D.eliminate_zeros()  # the angular part of the normal columns (s x n = 0) and axis-aligned zeros
    return D.tocsr()


def sphere_packing(n_spheres: int, *, mu: float = 0.25, h: float = 0.01, radius: float = 1.0,
                   mass: float = 1.0, seed: int = 0, container: bool = True, jitter: float = 1e-3,
                   envelope: float = 5e-4, velocity_std: float = 0.05) -> TimeStepProblem:
    """One time step of a static sphere packing (module docstring), as a global TimeStepProblem.

    ``jitter`` and ``envelope`` are fractions of the radius; ``velocity_std`` is the standard deviation of
    the random translational [m/s] and angular [rad/s] velocities. The same arguments give the same
    problem (numpy Generator seeded with ``seed``)."""
    if n_spheres < 1:
        raise ValueError("n_spheres must be at least 1")
    rng = np.random.default_rng(seed)
    x, box = packing_positions(n_spheres, radius, jitter, rng)
    contacts = detect_packing_contacts(x, radius, box, envelope * radius, container)
    if contacts.n == 0:
        raise ValueError("the packing has no contacts (increase envelope or jitter)")
    inertia = 0.4 * mass * radius * radius
    m_diag = np.tile([mass, mass, mass, inertia, inertia, inertia], n_spheres)
    M = sp.diags(m_diag, format="csr")
    v = rng.normal(0.0, velocity_std, size=6 * n_spheres) if velocity_std > 0 else np.zeros(6 * n_spheres)
    f = np.zeros(6 * n_spheres)
    f[2::6] = -mass * GRAVITY
    b = np.zeros(3 * contacts.n)
    b[0::3] = contacts.phi / h
    D = packing_jacobian(contacts, radius, n_spheres)
    walls = int(np.sum(contacts.a < 0))
    return TimeStepProblem(
        M=M, D=D, k=m_diag * v + h * f, b=b, mu=np.full(contacts.n, mu), d=3, h=h,
        name=f"sphere-packing-{n_spheres}-s{seed}",
        metadata={"generator": "problems.synthetic.sphere_packing", "n_spheres": n_spheres, "mu": mu,
                  "h": h, "radius": radius, "mass": mass, "seed": seed, "container": container,
                  "jitter": jitter, "envelope": envelope, "velocity_std": velocity_std,
                  "sphere_contacts": contacts.n - walls, "wall_contacts": walls})
