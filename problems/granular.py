"""Granular worlds: spheres in a box container (Melanz et al. 2015 sections 3.2-3.4, Mazhar et al. 2014 section 5.1).

Spheres (radius R = 1 m, mass 1 kg, mu = 0.25 unless stated) start on a jittered square lattice
above the floor of an open container (floor z = 0 and four walls, :func:`problems.rigid.container_planes`)
and fall under gravity. The lattice has cells of side ``spacing`` * 2R, as many per layer as fit the
floor; horizontal jitter (uniform, +-``jitter`` * R, seeded) breaks the symmetry so that layers nest.
The nested lattice (every other layer in the hollows of the one below, :func:`lattice`) starts the
dataset packings (:mod:`problems.generator`) close to a body-centred stacking, so they settle in
seconds. :func:`container_world_2d` is the planar version (disks, floor and two walls).
:func:`slab_world` puts a heavy slab (a box spanning the container, clearance 0.05 m to the walls) on
top of given spheres (the compaction test, on a settled packing); it is a free rigid body that the
walls guide through its corners.
"""

from __future__ import annotations

import numpy as np

from problems.rigid import BOX, GRAVITY, SPHERE, Bodies, Planes, World, container_planes
from workbench.errors import InputError

__all__ = ["lattice", "container_world", "container_world_2d", "slab_world", "container_width_for", "SLAB_CLEARANCE"]


def container_width_for(n: int, radius: float = 1.0, layers: float = 5.0) -> float:
    """A square floor [m] that holds about n / layers spheres per settled layer (a whole number of
    diameters, at least 5: narrower containers make tall columns that settle slowly)."""
    per_side = max(5, int(np.ceil(np.sqrt(n / layers))))
    return 2.0 * radius * per_side


def lattice(n: int, width: float, depth: float, radius: float, z0: float, spacing: float, jitter: float,
            rng: np.random.Generator, nested: bool = False) -> np.ndarray:
    """Centres (n, 3) of a lattice of cells spacing * 2R, layer after layer from height
    z0 + spacing * R, inside a width x depth floor centred on the z axis, with horizontal jitter
    (uniform, at most +-jitter * R and never enough to overlap a neighbour).

    Square layers stack straight up (a simple cubic lattice of side ``spacing`` * 2R) unless
    ``nested``: then every other layer is shifted by half a cell into the hollows of the one below
    ((nx - 1) x (ny - 1) sites) and the layers are only as far apart as keeps the jittered spheres of
    neighbouring layers from overlapping, dz = sqrt((2R (1 + c))^2 - s^2) with s = cell / sqrt(2) -
    2 sqrt(2) jitter the closest horizontal approach and clearance c = spacing - 1: a body-centred
    packing that settles after short drops instead of collapsing from a tall column."""
    if n < 1:
        raise InputError(f"the number of spheres must be positive, got {n}")
    cell = spacing * 2.0 * radius
    nx, ny = int((width - 2 * radius) // cell) + 1, int((depth - 2 * radius) // cell) + 1
    if nx < 1 or ny < 1 or cell < 2 * radius or (nested and min(nx, ny) < 2):
        raise InputError(f"a {width} x {depth} m floor holds no sphere of radius {radius} at spacing {spacing}")
    room = min(jitter * radius, (cell - 2 * radius) / 2.0)  # never overlap a neighbour in the layer
    x0, y0 = -(nx - 1) * cell / 2.0, -(ny - 1) * cell / 2.0
    if nested:
        closest = cell / np.sqrt(2.0) - 2.0 * np.sqrt(2.0) * room
        dz = float(np.sqrt(max((2.0 * radius * spacing) ** 2 - closest ** 2, 0.0)))
        sizes = [nx * ny, (nx - 1) * (ny - 1)]
    else:
        dz, sizes = cell, [nx * ny, nx * ny]
    parts, layer = [], 0
    while sum(p.shape[0] for p in parts) < n:
        shifted = nested and layer % 2 == 1
        iy, ix = np.divmod(np.arange(sizes[layer % 2]), nx - 1 if shifted else nx)
        off = cell / 2.0 if shifted else 0.0
        parts.append(np.column_stack([x0 + off + ix * cell, y0 + off + iy * cell,
                                      np.full(ix.shape, z0 + spacing * radius + layer * dz)]))
        layer += 1
    pos = np.concatenate(parts)[:n]
    pos[:, :2] += rng.uniform(-room, room, size=(n, 2))
    return pos


def container_world(n: int, *, width: float | None = None, radius: float = 1.0, mass: float = 1.0,
                    mu: float = 0.25, spacing: float = 1.1, jitter: float = 0.1, seed: int = 0,
                    envelope: float | None = None, height: float = 0.0, nested: bool = False) -> World:
    """n spheres on a lattice (:func:`lattice`) above the floor (lowest layer ``height`` m above it) of a
    square container."""
    width = container_width_for(n, radius) if width is None else float(width)
    rng = np.random.default_rng(seed)
    x = lattice(n, width, width, radius, height, spacing, jitter, rng, nested=nested)
    bodies = Bodies.create(shape=np.full(n, SPHERE), size=radius, mass=mass, mu=mu, x=x)
    return World(bodies, container_planes(width, width, mu), envelope=0.05 * radius if envelope is None else envelope)


def container_world_2d(n: int, *, width: float | None = None, radius: float = 1.0, mass: float = 1.0,
                       mu: float = 0.25, spacing: float = 1.1, jitter: float = 0.1, seed: int = 0) -> World:
    """The planar version (y up): n disks (balls in planar motion) on a jittered square lattice (one
    row of :func:`lattice` per layer) above the floor y = 0 of a container with walls at x = +-width/2;
    the default width holds about n / 5 disks per row."""
    width = 2.0 * radius * max(4, int(np.ceil(n / 5.0))) if width is None else float(width)
    x = lattice(n, width, 2.0 * radius, radius, 0.0, spacing, jitter, np.random.default_rng(seed))[:, [0, 2]]
    bodies = Bodies.create(dim=2, shape=np.full(n, SPHERE), size=radius, mass=mass, mu=mu, x=x)
    hw = width / 2.0
    planes = Planes.create([[0, 0], [-hw, 0], [hw, 0]], [[0, 1], [1, 0], [-1, 0]], mu, dim=2)
    return World(bodies, planes, gravity=np.array([0.0, -GRAVITY]), envelope=0.05 * radius)


#: the slab's clearance to each wall of the container [m]
SLAB_CLEARANCE = 0.05


def slab_world(spheres: Bodies, width: float, *, slab_mass: float, slab_thickness: float = 1.0, gap: float = 0.0,
               mu: float = 0.25, envelope: float | None = None) -> World:
    """The spheres in a square container of floor ``width`` [m] under a slab: a box of mass
    ``slab_mass`` [kg] spanning the container (clearance SLAB_CLEARANCE to each wall), ``slab_thickness``
    [m] thick, friction ``mu``, at rest with its lower face ``gap`` [m] above the top of the highest
    sphere. The slab is the last body; the walls guide it through its corners. ``envelope`` defaults
    to 0.05 of the largest radius."""
    if not (slab_mass > 0 and slab_thickness > 0 and gap >= 0 and width > 2 * SLAB_CLEARANCE):
        raise InputError(f"the slab needs a positive mass and thickness, a gap >= 0 and a container wider than "
                         f"{2 * SLAB_CLEARANCE} m; got {slab_mass} kg, {slab_thickness} m, gap {gap} m, width {width} m")
    radius = spheres.size[:, 0]
    half = np.array([width / 2 - SLAB_CLEARANCE, width / 2 - SLAB_CLEARANCE, slab_thickness / 2])
    top = float((spheres.x[:, 2] + radius).max())
    bodies = Bodies.create(shape=np.append(spheres.shape, BOX), size=np.vstack([spheres.size, half]),
                           mass=np.append(spheres.mass, slab_mass), mu=np.append(spheres.mu, mu),
                           x=np.vstack([spheres.x, [0.0, 0.0, top + gap + half[2]]]),
                           orientation=np.vstack([spheres.orientation, [1.0, 0.0, 0.0, 0.0]]),
                           v=np.vstack([spheres.v, np.zeros(3)]), w=np.vstack([spheres.w, np.zeros(3)]))
    return World(bodies, container_planes(width, width, mu),
                 envelope=0.05 * float(radius.max()) if envelope is None else envelope)
