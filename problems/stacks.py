"""Stacks of boxes resting on a floor, as single time steps: a tower and a brick wall in running bond
(the stacked-box problems of the FCLib and Siconos corpora, made here from their geometry).

Every box is axis aligned (centroidal frame = world frame), at rest (v = 0) and touching: the gaps
are zero, so b = 0. Gravity g = 9.81 m/s^2 along -z, k = M v + h f = h f (Melanz et al. 2015 eq. 5).
Two boxes touch along the rectangle where the top face of the lower box A overlaps the bottom face of
the upper box B; a box on the floor (the plane z = 0, body A = ground) along its bottom face. Each
such rectangle gives 4 contacts, one at each corner p, normal n = z, frame [z, x, y]; with the
offsets r_A = p - x_A, r_B = p - x_B the column of direction a of the Jacobian is
[a ; r_B x a] on body B and -[a ; r_A x a] on body A (Melanz et al. 2015 eq. 5), so that D^T v is the
relative velocity of B's contact point with respect to A's [m/s]. The dof of body j are
[v_j (3), w_j (3)], M_j = diag(m, m, m, J_j) with J of a box of half extents (a, b, c):
m/3 (b^2 + c^2, a^2 + c^2, a^2 + b^2).

At rest, v = 0 solves the step exactly with every interface carrying the weight of what is above it:
the normal impulses into the floor add up to the total weight times h, with no friction. The
corner impulses of one rectangle are not unique (statically indeterminate); their sum and moment
are unique for the tower (each box rests on one other).

``box_tower``: n boxes stacked, each shifted in x and y by up to ``jitter`` times its half width
(deterministic given ``seed``), so that the centres of pressure are off the centres.
``brick_wall``: ``courses`` rows of ``bricks`` bricks; odd courses start and end with a half brick
(running bond: every head joint sits over the middle of a brick of the course below).
``box_pyramid``: cubes in courses of ``base``, ``base`` - 1, ..., 1, each cube over the joint of two
below (a running-bond pyramid), optionally jittered in y (deterministic given ``seed``).
``corbel_arch``: two piers of one block per course, each course stepping ``overhang`` of a block's
length into the opening, closed by a capstone lying on both top blocks (a corbelled arch: every joint
horizontal). Statically admissible when courses x overhang <= 1 (the weight above every joint falls
within it).
``thin_box_pile``: n thin plates of random length and width stacked on the floor, each centred within
``jitter`` of its smallest half extent of the pile's axis (deterministic given ``seed``): the piles of
thin bodies whose tall towers are hard for the first-order methods.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from problems.scenes import GRAVITY
from workbench.errors import InputError
from workbench.problem import TimeStepProblem

__all__ = ["box_tower", "brick_wall", "box_pyramid", "corbel_arch", "thin_box_pile", "stack_problem", "GROUND"]

#: the body index of the floor in the contact lists
GROUND = -1
_FRAME = np.eye(3)[[2, 0, 1]]  # rows: n = z, t1 = x, t2 = y
_OVERLAP = 1e-9  # [m] overlaps shorter than this are no contact


def _interfaces(centre: np.ndarray, half: np.ndarray) -> list[tuple[int, int, np.ndarray, np.ndarray, float]]:
    """(A, B, lo, hi, z) for every touching pair, A below B (GROUND for the floor): the overlap
    rectangle [lo, hi] in x, y at height z."""
    bottom = centre[:, 2] - half[:, 2]
    top = centre[:, 2] + half[:, 2]
    out = []
    for j in range(centre.shape[0]):
        if abs(bottom[j]) < _OVERLAP:
            out.append((GROUND, j, centre[j, :2] - half[j, :2], centre[j, :2] + half[j, :2], 0.0))
        below = np.flatnonzero(np.abs(top - bottom[j]) < _OVERLAP)
        lo = np.maximum(centre[below, :2] - half[below, :2], centre[j, :2] - half[j, :2])
        hi = np.minimum(centre[below, :2] + half[below, :2], centre[j, :2] + half[j, :2])
        for i, l, u in zip(below, lo, hi):
            if np.all(u - l > _OVERLAP):
                out.append((int(i), j, l, u, float(bottom[j])))
    return out


def stack_problem(centre, half, mass, mu: float, h: float, name: str, metadata: dict) -> TimeStepProblem:
    """The time step of axis-aligned boxes at rest (module docstring): centres (n, 3) [m], half
    extents (n, 3) [m], masses (n,) [kg]."""
    centre = np.asarray(centre, float)
    half = np.asarray(half, float)
    mass = np.asarray(mass, float)
    n = centre.shape[0]
    rows, cols, vals = [], [], []
    bodies = []
    c = 0
    for a, b, lo, hi, z in _interfaces(centre, half):
        for px in (lo[0], hi[0]):
            for py in (lo[1], hi[1]):
                p = np.array([px, py, z])
                for body, sign in ((b, 1.0), (a, -1.0)):
                    if body == GROUND:
                        continue
                    r = p - centre[body]
                    block = np.vstack([_FRAME.T, np.cross(r, _FRAME).T])  # (6, 3): [a ; r x a]
                    rr, cc = np.nonzero(block)
                    rows.append(6 * body + rr)
                    cols.append(3 * c + cc)
                    vals.append(sign * block[rr, cc])
                bodies.append((a, b))
                c += 1
    D = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(6 * n, 3 * c))
    a2 = half * half
    inertia = mass[:, None] / 3.0 * np.column_stack([a2[:, 1] + a2[:, 2], a2[:, 0] + a2[:, 2], a2[:, 0] + a2[:, 1]])
    M = sp.diags(np.column_stack([np.repeat(mass[:, None], 3, axis=1), inertia]).ravel())
    f = np.zeros((n, 6))
    f[:, 2] = -mass * GRAVITY
    pairs = np.array(bodies, dtype=np.int64)
    return TimeStepProblem(M=M, D=D, k=h * f.ravel(), b=np.zeros(3 * c), mu=np.full(c, mu), d=3, h=h, name=name,
                           metadata={**metadata, "contact_bodies": pairs.tolist(),
                                     "total_weight": float(mass.sum() * GRAVITY)})


def _blocks_in_plane(lo: np.ndarray, hi: np.ndarray, depth: float, height: float, density: float):
    """(centre, half extents, mass) of blocks ``height`` [m] high given by their rectangles [lo, hi] (n, 2)
    in the x-z plane [m], ``depth`` [m] deep in y about y = 0, of ``density`` [kg/m^3]."""
    half = np.column_stack([(hi[:, 0] - lo[:, 0]) / 2, np.full(lo.shape[0], depth / 2), np.full(lo.shape[0], height / 2)])
    centre = np.column_stack([(lo[:, 0] + hi[:, 0]) / 2, np.zeros(lo.shape[0]), (lo[:, 1] + hi[:, 1]) / 2])
    return centre, half, density * 8.0 * half.prod(axis=1)


def _positive(**values) -> None:
    for key, value in values.items():
        if not value > 0:
            raise InputError(f"{key} must be positive, got {value}")


def box_tower(n: int = 12, size: float = 1.0, mass: float = 1.0, mu: float = 0.5, h: float = 0.01,
              jitter: float = 0.1, seed: int = 0) -> TimeStepProblem:
    """n cubes of edge ``size`` [m] and ``mass`` [kg] stacked on the floor (module docstring)."""
    _positive(n=n, size=size, mass=mass, h=h)
    if not 0 <= jitter < 0.5 or mu < 0:
        raise InputError(f"jitter must be in [0, 0.5) and mu non-negative, got {jitter}, {mu}")
    n = int(n)
    shift = np.random.default_rng(seed).uniform(-jitter, jitter, (n, 2)) * size / 2
    centre = np.column_stack([shift, size * (np.arange(n) + 0.5)])
    return stack_problem(centre, np.full((n, 3), size / 2), np.full(n, float(mass)), mu, h, f"box-tower-{n}",
                         {"scene": "box_tower", "n": n, "size": size, "mass": mass, "mu": mu, "h": h,
                          "jitter": jitter, "seed": seed})


def box_tower_work(n: int = 12, **_) -> dict:
    """What :func:`box_tower` makes: n cubes, 4 corner contacts on each face they rest on."""
    return {"bodies": n, "contacts": 4 * n}


box_tower.work = box_tower_work


def brick_wall(courses: int = 6, bricks: int = 5, length: float = 0.2, height: float = 0.05, depth: float = 0.1,
               density: float = 2000.0, mu: float = 0.6, h: float = 0.01) -> TimeStepProblem:
    """A wall of ``courses`` courses of ``bricks`` bricks (length x depth x height [m], ``density``
    [kg/m^3]) in running bond (module docstring)."""
    _positive(courses=courses, bricks=bricks, length=length, height=height, depth=depth, density=density, h=h)
    if mu < 0:
        raise InputError(f"mu must be non-negative, got {mu}")
    lo, hi = [], []
    for k in range(int(courses)):
        joints = np.arange(int(bricks) + 1) * length
        if k % 2:  # half bricks at both ends
            joints = np.concatenate([[0.0], joints[:-1] + length / 2, [bricks * length]])
        lo.append(np.column_stack([joints[:-1], np.full(joints.size - 1, k * height)]))
        hi.append(np.column_stack([joints[1:], np.full(joints.size - 1, (k + 1) * height)]))
    lo, hi = np.vstack(lo), np.vstack(hi)
    centre, half, mass = _blocks_in_plane(lo, hi, depth, height, density)
    return stack_problem(centre, half, mass, mu, h, f"brick-wall-{courses}x{bricks}",
                         {"scene": "brick_wall", "courses": courses, "bricks": bricks, "length": length,
                          "height": height, "depth": depth, "density": density, "mu": mu, "h": h})


def brick_wall_work(courses: int = 6, bricks: int = 5, **_) -> dict:
    """What :func:`brick_wall` makes: courses x (bricks + 1) bricks (running bond: half bricks at the
    ends of every other course), at most 16 corner contacts each (two faces, up to two neighbours on each)."""
    bodies = courses * (bricks + 1)
    return {"bodies": bodies, "contacts": 16 * bodies}


brick_wall.work = brick_wall_work


def box_pyramid(base: int = 5, size: float = 1.0, mass: float = 1.0, mu: float = 0.5, h: float = 0.01,
                jitter: float = 0.0, seed: int = 0) -> TimeStepProblem:
    """Cubes of edge ``size`` [m] and ``mass`` [kg] in ``base`` courses of base, base - 1, ..., 1 cubes,
    course k shifted by k size / 2 (module docstring); each cube shifted in y by up to ``jitter`` times
    its half width."""
    _positive(base=base, size=size, mass=mass, h=h)
    if not 0 <= jitter < 0.5 or mu < 0:
        raise InputError(f"jitter must be in [0, 0.5) and mu non-negative, got {jitter}, {mu}")
    base = int(base)
    centre = np.array([[(k / 2 + i + 0.5) * size, 0.0, (k + 0.5) * size] for k in range(base) for i in range(base - k)])
    centre[:, 1] = np.random.default_rng(seed).uniform(-jitter, jitter, centre.shape[0]) * size / 2
    n = centre.shape[0]
    return stack_problem(centre, np.full((n, 3), size / 2), np.full(n, float(mass)), mu, h, f"box-pyramid-{base}",
                         {"scene": "box_pyramid", "base": base, "size": size, "mass": mass, "mu": mu, "h": h,
                          "jitter": jitter, "seed": seed})


def box_pyramid_work(base: int = 5, **_) -> dict:
    """What :func:`box_pyramid` makes: base (base + 1) / 2 cubes, each on the floor or on two cubes
    (4 corner contacts a face it rests on)."""
    bodies = base * (base + 1) // 2 if isinstance(base, int) else 0
    return {"bodies": bodies, "contacts": 8 * bodies}


box_pyramid.work = box_pyramid_work


def corbel_arch(courses: int = 6, span: float = 0.8, length: float = 0.4, height: float = 0.1, depth: float = 0.2,
                overhang: float = 0.125, density: float = 2000.0, mu: float = 0.6, h: float = 0.01) -> TimeStepProblem:
    """A corbelled arch (module docstring): piers of ``courses`` blocks (length x depth x height [m],
    ``density`` [kg/m^3]) ``span`` [m] apart at the floor, each course stepping ``overhang`` x length
    inwards, and a capstone from the outer edge of one top block to the other's."""
    _positive(courses=courses, span=span, length=length, height=height, depth=depth, density=density, h=h)
    courses = int(courses)
    step = overhang * length
    if mu < 0 or not 0 <= overhang or not 2 * (courses - 1) * step < span:
        raise InputError(f"mu and overhang must be non-negative and the opening stay open below the capstone "
                         f"(2 (courses - 1) overhang length < span), got {mu}, {overhang}")
    width = 2 * length + span
    lo = [(k * step, k * height) for k in range(courses)] + [(width - k * step - length, k * height) for k in range(courses)]
    hi = [(x + length, z + height) for x, z in lo]
    lo.append(((courses - 1) * step, courses * height))
    hi.append((width - (courses - 1) * step, (courses + 1) * height))
    lo, hi = np.array(lo), np.array(hi)
    centre, half, mass = _blocks_in_plane(lo, hi, depth, height, density)
    return stack_problem(centre, half, mass, mu, h, f"corbel-arch-{courses}",
                         {"scene": "corbel_arch", "courses": courses, "span": span, "length": length,
                          "height": height, "depth": depth, "overhang": overhang, "density": density, "mu": mu,
                          "h": h})


def corbel_arch_work(courses: int = 6, **_) -> dict:
    """What :func:`corbel_arch` makes: two piers of ``courses`` blocks and the capstone, each block on
    one below (or the floor), the capstone on two (4 corner contacts a face)."""
    bodies = 2 * courses + 1 if isinstance(courses, int) else 0
    return {"bodies": bodies, "contacts": 4 * bodies + 4}


corbel_arch.work = corbel_arch_work


def thin_box_pile(n: int = 50, length: float = 1.0, width: float = 0.6, thickness: float = 0.02,
                  density: float = 1000.0, mu: float = 0.4, h: float = 0.01, jitter: float = 0.3,
                  seed: int = 0) -> TimeStepProblem:
    """n plates ``thickness`` [m] thick, each of length and width drawn in [0.6, 1] x (``length``,
    ``width``) [m], stacked on the floor with their centres within ``jitter`` x the plate's smaller half
    extent of the vertical axis (module docstring); ``density`` [kg/m^3]."""
    _positive(n=n, length=length, width=width, thickness=thickness, density=density, h=h)
    if not 0 <= jitter < 0.5 or mu < 0:
        raise InputError(f"jitter must be in [0, 0.5) and mu non-negative, got {jitter}, {mu}")
    n = int(n)
    rng = np.random.default_rng(seed)
    half = np.column_stack([rng.uniform(0.6, 1.0, (n, 2)) * [length / 2, width / 2], np.full(n, thickness / 2)])
    shift = rng.uniform(-jitter, jitter, (n, 2)) * half[:, :2].min(axis=1, keepdims=True)
    centre = np.column_stack([shift, thickness * (np.arange(n) + 0.5)])
    mass = density * 8.0 * half.prod(axis=1)
    return stack_problem(centre, half, mass, mu, h, f"thin-box-pile-{n}-s{seed}",
                         {"scene": "thin_box_pile", "n": n, "length": length, "width": width,
                          "thickness": thickness, "density": density, "mu": mu, "h": h, "jitter": jitter,
                          "seed": seed})


def thin_box_pile_work(n: int = 50, **_) -> dict:
    """What :func:`thin_box_pile` makes: n plates, each on the one below (or the floor), 4 corner
    contacts each."""
    return {"bodies": n, "contacts": 4 * n}


thin_box_pile.work = thin_box_pile_work
