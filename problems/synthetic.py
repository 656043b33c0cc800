"""Static synthetic time steps: a jittered dense packing of spheres in a box, for benchmarks and tests.

:func:`sphere_packing` places ``n_spheres`` spheres of radius R on a simple cubic lattice of spacing 2R
(layer by layer from the floor up, so the top layer may be partial), moves every centre by a uniform
random jitter of amplitude ``jitter * R`` per coordinate, and closes the scene with a box container
(floor z = 0 and four side walls, all fixed) or, with ``container=False``, the floor alone. A pair is in
contact when its gap Phi = ||x_B - x_A|| - 2R is at most ``envelope * R``, a sphere touches a wall when
Phi = dist - R is: the detection, contact frames [n, u, w] and Jacobian blocks (Melanz et al. 2015 eq. 5) are
those of the time stepper (:mod:`problems.contact`, D compiled by :mod:`problems.assembly`; a cell grid, no O(n^2) loop). With the
defaults (jitter 1e-3, envelope 5e-4) about half of the lattice neighbours touch, i.e. about 2
contacts per sphere as in real settled 3D packings (10,000 contacts from about 4,500 spheres).

Each sphere has 6 degrees of freedom v = [x', y', z', w_x, w_y, w_z] (rotation = identity, so body and
world frames agree), M = diag(m, m, m, 2/5 m R^2 x 3). The time step data (Melanz et al. 2015 eqs. 7-8, 13):
k = M v + h f with gravity f = -m g e_z on every sphere and small random velocities (normal with
standard deviation ``velocity_std`` [m/s] and [rad/s]), b = Phi / h in the normal slots (negative for
penetration), mu on every contact.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from problems.assembly import jacobian
from problems.contact import Contacts, sphere_plane, sphere_sphere
from problems.rigid import GRAVITY, Planes
from workbench.problem import TimeStepProblem

__all__ = ["sphere_packing", "packing_positions", "packing_contacts"]


def packing_positions(n_spheres: int, radius: float, jitter: float, rng: np.random.Generator):
    """Centres (n, 3) on the jittered simple cubic lattice of the module docstring and the container's
    inner size (L_x, L_y) [m]. The floor is n_x x n_x sites with n_x = round(n^(1/3))."""
    nx = max(1, int(round(n_spheres ** (1.0 / 3.0))))
    site = np.arange(n_spheres)
    ijk = np.stack([site % nx, (site // nx) % nx, site // (nx * nx)], axis=1)
    x = (2.0 * ijk + 1.0) * radius + rng.uniform(-jitter, jitter, size=(n_spheres, 3)) * radius
    return x, (2.0 * nx * radius, 2.0 * nx * radius)


def packing_contacts(x: np.ndarray, radius: float, box: tuple[float, float], envelope: float, mu: float,
                     container: bool) -> Contacts:
    """Sphere-sphere and sphere-wall contacts (gap at most ``envelope``, in metres) against the floor
    z = 0 and, with ``container``, the walls x = 0, x = L_x, y = 0, y = L_y (normals inward)."""
    n = x.shape[0]
    point = [[0.0, 0.0, 0.0]]
    normal = [[0.0, 0.0, 1.0]]
    if container:
        point += [[0.0, 0.0, 0.0], [box[0], 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, box[1], 0.0]]
        normal += [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0]]
    planes = Planes.create(point, normal, mu)
    ids, radii, mus = np.arange(n), np.full(n, float(radius)), np.full(n, float(mu))
    n_ids = n + planes.n
    return Contacts.concatenate([sphere_sphere(x, radii, ids, mus, envelope, n_ids),
                                 sphere_plane(x, radii, ids, mus, planes, n + np.arange(planes.n), envelope, n_ids)],
                                dim=3)


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
    contacts = packing_contacts(x, radius, box, envelope * radius, mu, container)
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
    D = jacobian(contacts, np.broadcast_to(np.eye(3), (n_spheres, 3, 3)), n_spheres)
    walls = int(np.sum(contacts.a < 0))
    return TimeStepProblem(
        M=M, D=D, k=m_diag * v + h * f, b=b, mu=np.full(contacts.n, mu), d=3, h=h,
        name=f"sphere-packing-{n_spheres}-s{seed}",
        metadata={"generator": "problems.synthetic.sphere_packing", "n_spheres": n_spheres, "mu": mu,
                  "h": h, "radius": radius, "mass": mass, "seed": seed, "container": container,
                  "jitter": jitter, "envelope": envelope, "velocity_std": velocity_std,
                  "sphere_contacts": contacts.n - walls, "wall_contacts": walls})


def sphere_packing_work(n_spheres: int, **_) -> dict:
    """What :func:`sphere_packing` makes, from its parameters (workbench.limits.check_work): n_spheres
    bodies on a simple cubic lattice, so at most 3 sphere-sphere contacts each (6 neighbours, each pair
    once) and the wall contacts of the outer layer (6 faces of about n^(2/3) spheres)."""
    return {"bodies": n_spheres, "contacts": 3 * n_spheres + 6 * (round(n_spheres ** (2 / 3)) + 1)}


sphere_packing.work = sphere_packing_work
