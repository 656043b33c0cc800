"""The rotating drum of the projected quasi-Newton paper (Koziara 2017 sec. 8.1), rigid particles.

The paper's set-up: a drum of inner radius 1 m spanned between (0, 0, 0) and (0, 0.5, 0) (axis y),
two side walls keeping the particles in, gravity (0, 0, -10) m/s^2, the drum turning at (0, 1, 0)
rad/s; N particles of density rho = 100 kg/m^3, friction coefficient 0.3, time step 0.001 s for 10 s.
Ellipsoids have the semi-axes r_x = 0.9 r0, r_y = 0.5 r0, r_z = r0 with r0 = (0.1 / N)^(1/3)
(0.1 m for N = 100); the spherical variant has r_1 = (r_x + r_y + r_z) / 3 = 0.8 r0.

Here (the differences, stated because the paper leaves them open or the simulator has no such part):
the drum wall is a smooth circular cylinder (the paper's is a pipe of 32 flat pieces with two
rectangular lifter blocks of 0.2 x 0.5 x 0.2 m at x = +-0.9 m, which are not modelled); the side walls
are fixed planes y = 0 and y = 0.5 (the paper does not say whether they turn); the particles start
at rest on a jittered lattice in the lower part of the drum, in seeded random orientations, and the
drum turns from t = 0 (in the paper they are dropped in first, then the drum starts).
"""

from __future__ import annotations

import numpy as np

from problems.dynamic_scenes import Scenario
from problems.rigid import ELLIPSOID, SPHERE, Bodies, Drum, Planes, World
from workbench.errors import InputError

__all__ = ["drum", "particle_radii", "DRUM_RADIUS", "DRUM_LENGTH", "DRUM_GRAVITY"]

#: Koziara 2017 sec. 8.1: inner radius [m], length along the axis [m], gravity [m/s^2]
DRUM_RADIUS, DRUM_LENGTH, DRUM_GRAVITY = 1.0, 0.5, 10.0
#: the shapes of the two variants (the paper's "ell. rigid" and "sph. rigid")
SHAPES = ("ellipsoid", "sphere")


def particle_radii(n: int) -> tuple[np.ndarray, float]:
    """The ellipsoids' semi-axes (r_x, r_y, r_z) [m] and the spheres' radius r_1 [m] for n particles
    (module docstring)."""
    r0 = (0.1 / n) ** (1.0 / 3.0)
    semi = np.array([0.9, 0.5, 1.0]) * r0
    return semi, float(semi.mean())


def _lattice(n: int, bound: float, rng: np.random.Generator) -> np.ndarray:
    """n centres (n, 3) on a lattice of cells 2.05 bound in the lower part of the drum, lowest first,
    jittered within the cells' clearance."""
    cell = 2.05 * bound
    ny = int((DRUM_LENGTH - 2 * bound) // cell) + 1
    ys = DRUM_LENGTH / 2 + (np.arange(ny) - (ny - 1) / 2) * cell
    k = np.arange(-int(DRUM_RADIUS / cell), int(DRUM_RADIUS / cell) + 1) * cell
    xz = np.array([(x, z) for z in k for x in k if np.hypot(x, z) <= DRUM_RADIUS - 1.1 * bound])
    sites = np.array([(x, y, z) for x, z in xz for y in ys])
    if sites.shape[0] < n:
        raise InputError(f"the drum holds at most {sites.shape[0]} particles of this size on the start lattice, "
                         f"asked {n}")
    order = np.lexsort((sites[:, 0], sites[:, 2]))[:n]  # lowest first
    room = 0.02 * bound
    return sites[order] + rng.uniform(-room, room, size=(n, 3))


def _random_quaternions(n: int, rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1)[:, None]


def drum(n: int = 100, shape: str = "ellipsoid", h: float = 0.001, duration: float = 10.0, omega: float = 1.0,
         mu: float = 0.3, density: float = 100.0, seed: int = 0) -> Scenario:
    """Koziara 2017 sec. 8.1: n rigid ellipsoids (or spheres: ``shape="sphere"``) in a drum turning at
    ``omega`` [rad/s] about y, friction ``mu``, density [kg/m^3]; step h [s] for ``duration`` [s]."""
    if shape not in SHAPES:
        raise InputError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    if not (isinstance(n, int) and n >= 1) or not density > 0:
        raise InputError(f"the drum needs n >= 1 particles and a positive density, got n = {n!r}, density = {density!r}")
    rng = np.random.default_rng(seed)
    semi, r1 = particle_radii(n)
    size, kind = (np.full((n, 3), r1), SPHERE) if shape == "sphere" else (np.tile(semi, (n, 1)), ELLIPSOID)
    mass = density * 4.0 / 3.0 * np.pi * np.prod(size, axis=1)
    x = _lattice(n, float(size.max()), rng)
    orientation = _random_quaternions(n, rng) if kind == ELLIPSOID else None
    bodies = Bodies.create(shape=np.full(n, kind), size=size, mass=mass, mu=mu, x=x, orientation=orientation)
    walls = Planes.create([[0, 0, 0], [0, DRUM_LENGTH, 0]], [[0, 1, 0], [0, -1, 0]], mu)
    turning = Drum.create([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], DRUM_RADIUS, omega, mu)
    world = World(bodies, walls, gravity=np.array([0.0, 0.0, -DRUM_GRAVITY]), envelope=0.05 * float(size.max()),
                  drum=turning)
    return Scenario("drum", world, h, duration,
                    f"{n} rigid {shape}s in a drum of radius {DRUM_RADIUS:g} m turning at {omega:g} rad/s, mu = {mu} "
                    "(Koziara 2017 sec. 8.1)", weight=float(mass.sum() * DRUM_GRAVITY))


def drum_work(n: int = 100, h: float = 0.001, duration: float = 10.0, **_) -> dict:
    """What :func:`drum` simulates: n bodies, at most 7 contacts each, for duration / h steps."""
    return {"bodies": n, "contacts": 7 * n, "steps": duration / h if h > 0 else 0}


drum.work = drum_work
