"""Dynamic scenes of the papers, with their analytic solutions (Mazhar et al. 2014 sections 5.3-5.5, Melanz et al. 2015
section 3). 3D scenes have z up and the sliding motion along +x (down the slope on inclines). They are
named in the one registry of problem sources, :data:`workbench.sources.NAMED`.

Analytic solutions (g = 9.81 m/s^2), for the tracked body's velocity along the slope v_s, its normal
velocity v_n (zero while in contact) and, for balls, the rolling speed R w . (n x s) (equal to v_s
when rolling without slip; n the plane normal, s the sliding direction):

- ball-on-plane (sphere R = 1, mu = 0.2, v0 = 2): v_s = v0 - mu g t and R w = 5/2 mu g t until
  t_roll = 2 v0 / (7 mu g) = 0.291 s, then both 5 v0 / 7 = 1.429 m/s (Melanz et al. 2015 section 3.1).
- box-on-plane (1 m cube, 4 corner contacts, mu = 0.3, v0 = 2): v_s = max(v0 - mu g t, 0).
- box-on-incline (65 degrees, mu = 0.2, from rest): v_s = g (sin a - mu cos a) t, 8.06 m/s^2.
- box-incline-to-rest (25 degrees, mu = 0.6, v0 = 2 down the slope): v_s = max(v0 - g (mu cos a -
  sin a) t, 0), at rest from t = 1.68 s on (tan 25 deg < 0.6: it stays).
- ball-on-plane-2d: the same ball in planar motion (q = [x, y, theta], Melanz et al. 2015 eqs. 41-45, y up);
  its first time step is :func:`problems.scenes.rolling_ball_2d`.
- filling: spheres falling into a container (Melanz et al. 2015 section 3.2); compaction: a slab pressing
  settled spheres in a container (section 3.3). At rest the total contact force on the container
  equals the total weight (spheres and slab). filling-2d: the filling with disks in a planar
  container (y up).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from problems.granular import container_world, container_world_2d, slab_world
from problems.rigid import BOX, GRAVITY, SPHERE, Bodies, Planes, World, axis_angle_quat
from workbench.limits import fixed_work

__all__ = ["Scenario", "ball_on_plane", "box_on_plane", "box_on_incline",
           "box_incline_to_rest", "ball_on_plane_2d", "filling", "filling_2d", "compaction", "rolling_time"]


@dataclass
class Scenario:
    """A world with its step size and duration, and what to compare with.

    ``tracked`` is the body the observables describe; ``slope`` and ``normal`` the sliding direction
    and the plane normal (world frame); ``analytic(t)`` maps times to the exact curves (keys among
    v_slope, v_normal, rolling); ``weight`` the total weight [N] the container force tends to; ``up``
    (the unit vector against gravity) where the tracked body's height [m] and upward velocity [m/s]
    are observed (the compaction test's slab)."""
    name: str
    world: World
    h: float
    duration: float
    description: str
    tracked: int = 0
    slope: np.ndarray | None = None
    normal: np.ndarray | None = None
    analytic: Callable[[np.ndarray], dict[str, np.ndarray]] | None = None
    weight: float | None = None
    up: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return int(round(self.duration / self.h))

    def observe(self) -> dict[str, float]:
        """The tracked body now: v_slope, v_normal and (spheres) the rolling speed where the scene has a
        slope; its height and v_up where it has ``up``."""
        b, j = self.world.bodies, self.tracked
        out = {} if self.up is None else {"height": float(b.x[j] @ self.up), "v_up": float(b.v[j] @ self.up)}
        if self.slope is None:
            return out
        out.update({"v_slope": float(b.v[j] @ self.slope), "v_normal": float(b.v[j] @ self.normal)})
        if b.shape[j] == SPHERE:
            w = b.world_angular_velocity()[j]
            if b.dim == 2:  # w . (n x s) with both in the plane: -w_z (n_x s_y - n_y s_x)
                axis = np.array([self.normal[0] * self.slope[1] - self.normal[1] * self.slope[0]])
            else:
                axis = np.cross(self.normal, self.slope)
            out["rolling"] = float(b.size[j, 0] * (w @ axis))
        return out

    def step_row(self, rec) -> dict[str, float]:
        """The row of the per-step table after a step (``rec``: its problems.stepper.StepRecord): the
        record's fields, :meth:`observe` and, where the scene has them, the analytic values
        ``*_analytic`` at rec.t. ``workbench simulate`` and the study's simulation runs write it."""
        row = {**asdict(rec), **self.observe()}
        if self.analytic is not None:
            row.update({f"{k}_analytic": float(v) for k, v in self.analytic(rec.t).items()})
        return row


def rolling_time(v0: float, mu: float) -> float:
    """t_roll = 2 v0 / (7 mu g) [s] (Melanz et al. 2015 section 3.1, Mazhar et al. 2014 section 5.3.1)."""
    return 2.0 * v0 / (7.0 * mu * GRAVITY)


def _ball_curves(v0: float, mu: float):
    t_roll = rolling_time(v0, mu)

    def curves(t):
        t = np.asarray(t, dtype=float)
        sliding = t < t_roll
        return {"v_slope": np.where(sliding, v0 - mu * GRAVITY * t, 5.0 * v0 / 7.0),
                "rolling": np.where(sliding, 2.5 * mu * GRAVITY * t, 5.0 * v0 / 7.0),
                "v_normal": np.zeros_like(t)}
    return curves


def _sliding_curves(v0: float, deceleration: float):
    """v_s = v0 - a t, stopping at zero when a > 0 (friction cannot reverse the motion)."""
    def curves(t):
        t = np.asarray(t, dtype=float)
        v = v0 - deceleration * t
        return {"v_slope": np.maximum(v, 0.0) if deceleration > 0 else v, "v_normal": np.zeros_like(t)}
    return curves


def ball_on_plane(h: float = 0.0025, mu: float = 0.2, v0: float = 2.0, radius: float = 1.0, mass: float = 1.0,
                  duration: float = 0.5) -> Scenario:
    """A sphere touching the plane z = 0, sliding along +x at v0 without spin."""
    bodies = Bodies.create(shape=[SPHERE], size=radius, mass=mass, mu=mu, x=[[0.0, 0.0, radius]], v=[[v0, 0.0, 0.0]])
    world = World(bodies, Planes.create([[0, 0, 0]], [[0, 0, 1]], mu), envelope=0.05 * radius)
    return Scenario("ball-on-plane", world, h, duration,
                    f"sphere R = {radius} m sliding at {v0} m/s on a plane, mu = {mu} (Mazhar et al. 2014 section 5.3.1)",
                    slope=np.array([1.0, 0, 0]), normal=np.array([0, 0, 1.0]), analytic=_ball_curves(v0, mu))


def ball_on_plane_2d(h: float = 0.01, mu: float = 0.2, v0: float = 2.0, radius: float = 1.0, mass: float = 1.0,
                     duration: float = 0.5) -> Scenario:
    """The ball of Melanz et al. 2015 section 3.1 in planar motion: y up, sliding along +x."""
    bodies = Bodies.create(dim=2, shape=[SPHERE], size=radius, mass=mass, mu=mu, x=[[0.0, radius]], v=[[v0, 0.0]])
    world = World(bodies, Planes.create([[0, 0]], [[0, 1]], mu, dim=2), gravity=np.array([0.0, -GRAVITY]),
                  envelope=0.05 * radius)
    return Scenario("ball-on-plane-2d", world, h, duration,
                    f"ball R = {radius} m in planar motion sliding at {v0} m/s, mu = {mu} (Melanz et al. 2015 section 3.1)",
                    slope=np.array([1.0, 0]), normal=np.array([0, 1.0]), analytic=_ball_curves(v0, mu))


def _box_on_slope(name: str, angle_deg: float, mu: float, v0: float, h: float, duration: float, size: float,
                  mass: float, description: str) -> Scenario:
    """A cube resting on a face on the plane through the origin with normal (sin a, 0, cos a): the
    slope descends along s = (cos a, 0, -sin a), the box moves along s at v0."""
    a = np.radians(angle_deg)
    normal = np.array([np.sin(a), 0.0, np.cos(a)])
    slope = np.array([np.cos(a), 0.0, -np.sin(a)])
    bodies = Bodies.create(shape=[BOX], size=np.full((1, 3), size / 2), mass=mass, mu=mu,
                           x=[normal * size / 2], orientation=[axis_angle_quat([0, 1, 0], a)], v=[slope * v0])
    world = World(bodies, Planes.create([[0, 0, 0]], [normal], mu), envelope=0.05 * size)
    decel = GRAVITY * (mu * np.cos(a) - np.sin(a))
    return Scenario(name, world, h, duration, description, slope=slope, normal=normal,
                    analytic=_sliding_curves(v0, decel))


def box_on_plane(h: float = 0.01, mu: float = 0.3, v0: float = 2.0, size: float = 1.0, mass: float = 1.0,
                 duration: float = 1.0) -> Scenario:
    return _box_on_slope("box-on-plane", 0.0, mu, v0, h, duration, size, mass,
                         f"{size} m cube, 4 corner contacts, sliding at {v0} m/s, mu = {mu} (Mazhar et al. 2014 section 5.3.2)")


def box_on_incline(h: float = 0.01, angle: float = 65.0, mu: float = 0.2, size: float = 1.0, mass: float = 1.0,
                   duration: float = 1.0) -> Scenario:
    return _box_on_slope("box-on-incline", angle, mu, 0.0, h, duration, size, mass,
                         f"{size} m cube released at rest on a {angle} degree incline, mu = {mu} (Mazhar et al. 2014 section 5.4)")


def box_incline_to_rest(h: float = 0.01, angle: float = 25.0, mu: float = 0.6, v0: float = 2.0, size: float = 1.0,
                        mass: float = 1.0, duration: float = 2.5) -> Scenario:
    return _box_on_slope("box-incline-to-rest", angle, mu, v0, h, duration, size, mass,
                         f"{size} m cube sliding down a {angle} degree incline at {v0} m/s, mu = {mu} "
                         "(Mazhar et al. 2014 section 5.5)")


# one body each: a sphere touches its plane at one point, a box at most at its 8 corners
for _scene, _contacts in ((ball_on_plane, 1), (ball_on_plane_2d, 1), (box_on_plane, 8), (box_on_incline, 8),
                          (box_incline_to_rest, 8)):
    fixed_work(_scene, bodies=1, contacts=_contacts)


def filling(n: int = 1000, h: float = 0.01, duration: float = 5.0, mu: float = 0.25, seed: int = 0,
            width: float | None = None) -> Scenario:
    """Melanz et al. 2015 section 3.2: n spheres (R = 1 m, 1 kg) fall into a container; 5 s at h = 0.01."""
    world = container_world(n, mu=mu, seed=seed, width=width)
    return Scenario("filling", world, h, duration,
                    f"{n} spheres falling into a container, mu = {mu} (Melanz et al. 2015 section 3.2)",
                    weight=float(world.bodies.mass.sum() * GRAVITY))


def filling_work(n: int = 1000, h: float = 0.01, duration: float = 5.0, **_) -> dict:
    """What :func:`filling` simulates: n spheres (and the container), at most 7 contacts each, for
    duration / h steps."""
    return {"bodies": n + 1, "contacts": 7 * n, "steps": duration / h if h > 0 else 0}


filling.work = filling_work


def filling_2d(n: int = 100, h: float = 0.01, duration: float = 3.0, mu: float = 0.25, seed: int = 0,
               width: float | None = None) -> Scenario:
    """The planar filling test: n disks (R = 1 m, 1 kg) fall into a container (floor and two walls)."""
    world = container_world_2d(n, mu=mu, seed=seed, width=width)
    return Scenario("filling-2d", world, h, duration, f"{n} disks falling into a planar container, mu = {mu}",
                    weight=float(world.bodies.mass.sum() * GRAVITY))


def filling_2d_work(n: int = 100, h: float = 0.01, duration: float = 3.0, **_) -> dict:
    """What :func:`filling_2d` simulates: n disks, at most 4 contacts each, for duration / h steps."""
    return {"bodies": n + 1, "contacts": 4 * n, "steps": duration / h if h > 0 else 0}


filling_2d.work = filling_2d_work


def compaction(bed: str = "scaling-01024", h: float = 0.001, duration: float = 4.0, slab_mass: float = 4000.0,
               slab_thickness: float = 1.0, mu: float = 0.25, gap: float = 0.0) -> Scenario:
    """Melanz et al. 2015 section 3.3: a slab of slab_mass kg (friction mu) compacts the settled spheres
    of the committed packing ``bed`` (problems/datasets: its final state, at rest), starting at rest
    with its lower face ``gap`` m above the highest sphere; 4 s at h = 0.001 s (the paper's). The
    default bed is the settled packing nearest the paper's 1,000 spheres (scaling-01024, 1,024 in a
    30 m container); the final state of the section 3.2 filling (filling-01000) is not at rest: the
    relaxed solver's jitter leaves spheres in the air, and the slab would fall freely onto them. The
    slab is the tracked (last) body."""
    from problems.generator import settled_packing  # the datasets' reader: loaded only for this scene

    spheres, width = settled_packing(bed)
    world = slab_world(spheres, width, slab_mass=slab_mass, slab_thickness=slab_thickness, gap=gap, mu=mu)
    return Scenario("compaction", world, h, duration,
                    f"{spheres.n} settled spheres ({bed}) compacted by a {slab_mass:g} kg slab, mu = {mu} "
                    "(Melanz et al. 2015 section 3.3)",
                    tracked=world.bodies.n - 1, weight=float(world.bodies.mass.sum() * GRAVITY),
                    up=-world.gravity / np.linalg.norm(world.gravity))


def compaction_work(bed: str = "scaling-01024", h: float = 0.001, duration: float = 4.0, **_) -> dict:
    """What :func:`compaction` simulates: the bed's spheres (their count from the datasets' manifest,
    read before any state is loaded) and the slab, at most 6 contacts a sphere with its neighbours, 2
    with the walls, floor or slab, and the slab's 8 corners, for duration / h steps. A bed the manifest
    does not name counts as none (the builder names what is wrong)."""
    from problems.generator import read_manifest
    entry = read_manifest().get(f"{bed}.npz") if isinstance(bed, str) else None
    n = int(entry["generator"]["n"]) if isinstance(entry, dict) and isinstance(entry.get("generator"), dict) else 0
    return {"bodies": n + 1, "contacts": 8 * n + 8,
            "steps": duration / h if isinstance(h, (int, float)) and h > 0 else 0}


compaction.work = compaction_work
