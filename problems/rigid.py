"""Rigid bodies, fixed planes and the kinematics of the DVI time stepper (Melanz et al. 2015 eqs. 1, 6).

State of body j (centroidal frame, Melanz et al. 2015 section 2): position x_j of the centre of mass [m],
orientation (a unit quaternion e_j in 3D, an angle theta_j in 2D), linear velocity v_j [m/s] and the
angular velocity in the body frame w_j [rad/s] (Melanz et al. 2015 uses the local angular velocity in place of
the quaternion rate). With centroidal principal axes the mass matrix is constant and diagonal:

    M_j = diag(m_j, m_j, m_j, J_j,1, J_j,2, J_j,3)   (3D, 6 dof)      M_j = diag(m_j, m_j, J_j)  (2D, 3 dof)

Shapes: spheres of radius R, J = 2/5 m R^2 (in 2D too: a ball in planar motion, Melanz et al. 2015 section 3.1),
rectangular boxes of half extents (a, b, c), J = m/3 (b^2 + c^2, a^2 + c^2, a^2 + b^2), and (3D)
ellipsoids of semi-axes (a, b, c) along the body axes, J = m/5 (b^2 + c^2, a^2 + c^2, a^2 + b^2)
(mass m = rho 4/3 pi a b c for density rho). Fixed geometry is a set of planes (lines in 2D)
{p : n . (p - p0) >= 0}, the free side being the one the unit normal n points into; a box container
is five of them (floor and four walls, infinite). A world may also hold a :class:`Drum`: the inside
of a circular cylinder that turns about its axis at a prescribed rate (a kinematic obstacle: its
motion is given, its mass plays no part), which drives the bodies by friction (Koziara 2017 sec. 8.1).

Position update (Melanz et al. 2015 eq. 6, Mazhar et al. 2014 eq. 2a): x^{l+1} = x^l + h v^{l+1}; the rotation uses the
exact exponential map e^{l+1} = e^l * exp(h w^{l+1} / 2) (quaternion product, body-frame increment),
which agrees with e + h T(e) w to first order and keeps |e| = 1 without renormalisation drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from problems.scenes import GRAVITY
from workbench.errors import InputError

__all__ = ["SPHERE", "BOX", "ELLIPSOID", "Bodies", "Planes", "Drum", "World", "GRAVITY", "quat_to_matrix", "quat_multiply",
           "axis_angle_quat", "rotation_matrices", "box_corners_local", "container_planes"]

SPHERE, BOX, ELLIPSOID = 0, 1, 2


def quat_multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product p * q of quaternions [w, x, y, z], row-wise (n, 4)."""
    pw, px, py, pz = p.T
    qw, qx, qy, qz = q.T
    return np.column_stack([pw * qw - px * qx - py * qy - pz * qz,
                            pw * qx + px * qw + py * qz - pz * qy,
                            pw * qy - px * qz + py * qw + pz * qx,
                            pw * qz + px * qy - py * qx + pz * qw])


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices A (n, 3, 3), body to world, of unit quaternions q (n, 4) = [w, x, y, z]."""
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=1)


def axis_angle_quat(axis, angle: float) -> np.ndarray:
    """The unit quaternion (4,) of a rotation by ``angle`` [rad] about ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * a])


def rotation_matrices(orientation: np.ndarray, dim: int) -> np.ndarray:
    """Body-to-world rotations (n, dim, dim) from quaternions (n, 4) in 3D or angles (n, 1) in 2D."""
    if dim == 3:
        return quat_to_matrix(orientation)
    c, s = np.cos(orientation[:, 0]), np.sin(orientation[:, 0])
    return np.stack([np.stack([c, -s], axis=-1), np.stack([s, c], axis=-1)], axis=1)


def box_corners_local() -> np.ndarray:
    """The 8 sign patterns (8, 3) of a box's corners; corner k of box j is x_j + A_j (sign_k * half_j)."""
    return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


def _rows(name: str, a, n: int, width: int) -> np.ndarray:
    out = np.array(a, dtype=float).reshape(n, width) if np.size(a) == n * width else None
    if out is None:
        raise InputError(f"{name} must have {n} x {width} entries, got shape {np.shape(a)}")
    if not np.all(np.isfinite(out)):
        raise InputError(f"{name} contains NaN or Inf")
    return out


class _Rows:
    """Arrays with one row per body (or plane): ``n``, their number, is the length of the per-row
    friction coefficients ``mu``, which every such set has."""

    @property
    def n(self) -> int:
        return self.mu.shape[0]


@dataclass
class Bodies(_Rows):
    """The movable rigid bodies, as arrays over bodies (the stepper updates x, orientation, v, w in place).

    shape: SPHERE, BOX or ELLIPSOID per body; size: radius (spheres, column 0), half extents (boxes) or
    semi-axes (ellipsoids) along the body axes [m];
    mass [kg]; inertia: principal moments in the body frame [kg m^2] (n, 3) in 3D, (n, 1) in 2D;
    mu: friction coefficient per body (a contact takes the smaller of its two bodies').
    """
    dim: int
    shape: np.ndarray
    size: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    mu: np.ndarray
    x: np.ndarray
    orientation: np.ndarray
    v: np.ndarray
    w: np.ndarray

    @property
    def rot_dim(self) -> int:
        """Rotational degrees of freedom per body: 3 in 3D, 1 in 2D."""
        return 3 if self.dim == 3 else 1

    @property
    def dof(self) -> int:
        """Degrees of freedom per body, dim + rot_dim."""
        return self.dim + self.rot_dim

    @property
    def radius(self) -> np.ndarray:
        """Radius of each body's bounding sphere [m] (the sphere itself for spheres)."""
        return np.where(self.shape == SPHERE, self.size[:, 0],
                        np.where(self.shape == BOX, np.linalg.norm(self.size, axis=1), self.size.max(axis=1)))

    def rotations(self) -> np.ndarray:
        return rotation_matrices(self.orientation, self.dim)

    def mass_diagonal(self) -> np.ndarray:
        """The diagonal of M (n dof,), body after body: [m, m, (m,) J...]."""
        return np.column_stack([np.repeat(self.mass[:, None], self.dim, axis=1), self.inertia]).ravel()

    def velocity_vector(self) -> np.ndarray:
        """Generalised velocities v (n dof,) = [v_j, w_j]_j."""
        return np.column_stack([self.v, self.w]).ravel()

    def set_velocity_vector(self, v: np.ndarray) -> None:
        vv = v.reshape(self.n, self.dof)
        self.v = vv[:, : self.dim].copy()
        self.w = vv[:, self.dim:].copy()

    def world_angular_velocity(self) -> np.ndarray:
        """A_j w_j in 3D (n, 3); in 2D the angular rate about the out-of-plane axis (n, 1)."""
        if self.dim == 2:
            return self.w.copy()
        return np.einsum("nij,nj->ni", self.rotations(), self.w)

    def kinetic_energy(self) -> float:
        """1/2 sum_j (m_j |v_j|^2 + w_j . J_j w_j)  [J]."""
        return float(0.5 * (np.sum(self.mass * np.einsum("ij,ij->i", self.v, self.v))
                            + np.sum(self.inertia * self.w * self.w)))

    def advance(self, h: float) -> None:
        """Positions and orientations from the new velocities (module docstring, Melanz et al. 2015 eq. 6)."""
        self.x = self.x + h * self.v
        if self.dim == 2:
            self.orientation = self.orientation + h * self.w
            return
        angle = np.linalg.norm(self.w, axis=1) * h
        axis = np.divide(self.w, np.linalg.norm(self.w, axis=1)[:, None], out=np.zeros_like(self.w),
                         where=angle[:, None] > 0)
        dq = np.column_stack([np.cos(angle / 2), np.sin(angle / 2)[:, None] * axis])
        q = quat_multiply(self.orientation, dq)
        self.orientation = q / np.linalg.norm(q, axis=1)[:, None]

    @classmethod
    def create(cls, *, dim: int = 3, shape, size, mass, mu, x, orientation=None, v=None, w=None) -> "Bodies":
        """Validated bodies; inertia from the shapes (module docstring). Boxes and ellipsoids exist in 3D only."""
        if dim not in (2, 3):
            raise InputError(f"dimension must be 2 or 3, got {dim}")
        shape = np.asarray(shape, dtype=np.int64).reshape(-1)
        n = shape.shape[0]
        if n == 0:
            raise InputError("a scene needs at least one body")
        if not np.all(np.isin(shape, (SPHERE, BOX, ELLIPSOID))):
            raise InputError("body shapes must be SPHERE (0), BOX (1) or ELLIPSOID (2)")
        if dim == 2 and np.any(shape != SPHERE):
            raise InputError("boxes and ellipsoids are 3D only (2D scenes have disks)")
        size = np.asarray(size, dtype=float)
        if size.ndim <= 1:  # one radius (or one per body): the same in every column
            size = np.repeat(np.broadcast_to(size, (n,))[:, None], 3, axis=1)
        size = _rows("size", size, n, 3)
        mass = _rows("mass", np.broadcast_to(np.asarray(mass, float), (n,)), n, 1)[:, 0]
        mu = _rows("mu", np.broadcast_to(np.asarray(mu, float), (n,)), n, 1)[:, 0]
        if np.any(size[:, 0] <= 0) or np.any(size[shape != SPHERE] <= 0) or np.any(mass <= 0) or np.any(mu < 0):
            raise InputError("sizes and masses must be positive and mu non-negative")
        rot = 3 if dim == 3 else 1
        r = size[:, 0]
        if dim == 3:
            a2 = size * size
            pairs = mass[:, None] * np.column_stack([a2[:, 1] + a2[:, 2], a2[:, 0] + a2[:, 2], a2[:, 0] + a2[:, 1]])
            sphere = np.repeat((0.4 * mass * r * r)[:, None], 3, axis=1)
            inertia = np.where((shape == BOX)[:, None], pairs / 3.0, np.where((shape == ELLIPSOID)[:, None],
                                                                               pairs / 5.0, sphere))
        else:  # a ball in planar motion (Melanz et al. 2015 section 3.1, M = diag(1, 1, 0.4))
            inertia = (0.4 * mass * r * r)[:, None]
        if orientation is None:
            orientation = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) if dim == 3 else np.zeros((n, 1))
        orientation = _rows("orientation", orientation, n, 4 if dim == 3 else 1)
        if dim == 3:
            orientation = orientation / np.linalg.norm(orientation, axis=1)[:, None]
        return cls(dim=dim, shape=shape, size=size, mass=mass, inertia=inertia, mu=mu,
                   x=_rows("x", x, n, dim), orientation=orientation,
                   v=_rows("v", np.zeros((n, dim)) if v is None else v, n, dim),
                   w=_rows("w", np.zeros((n, rot)) if w is None else w, n, rot))


@dataclass
class Planes(_Rows):
    """Fixed planes (lines in 2D): a point p0 on each, the unit normal n into the free side, mu."""
    point: np.ndarray
    normal: np.ndarray
    mu: np.ndarray

    @classmethod
    def create(cls, point, normal, mu, dim: int = 3) -> "Planes":
        point = np.asarray(point, dtype=float).reshape(-1, dim)
        normal = np.asarray(normal, dtype=float).reshape(-1, dim)
        if point.shape != normal.shape:
            raise InputError("planes need as many points as normals")
        length = np.linalg.norm(normal, axis=1)
        if np.any(length == 0):
            raise InputError("a plane normal is zero")
        mu = np.broadcast_to(np.asarray(mu, dtype=float), (point.shape[0],)).copy()
        if np.any(mu < 0):
            raise InputError("mu must be non-negative")
        return cls(point=point, normal=normal / length[:, None], mu=mu)


def container_planes(width: float, depth: float, mu: float) -> Planes:
    """An open box container centred on the z axis: floor z = 0 and walls at x = +-width/2,
    y = +-depth/2, normals pointing inward (five infinite planes)."""
    hw, hd = width / 2.0, depth / 2.0
    point = [[0, 0, 0], [-hw, 0, 0], [hw, 0, 0], [0, -hd, 0], [0, hd, 0]]
    normal = [[0, 0, 1], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]]
    return Planes.create(point, normal, mu)


@dataclass(frozen=True)
class Drum:
    """The inside of a circular cylinder of ``radius`` [m] about the line through ``centre`` along the
    unit ``axis`` (infinite along it: end walls are planes), turning at ``omega`` [rad/s] about
    ``axis`` (right-handed); friction coefficient ``mu``. Its surface at a point p moves at
    omega axis x (p - centre) [m/s]; its geometry does not change as it turns."""
    centre: np.ndarray
    axis: np.ndarray
    radius: float
    omega: float
    mu: float

    @classmethod
    def create(cls, centre, axis, radius: float, omega: float, mu: float) -> "Drum":
        centre = _rows("drum centre", centre, 1, 3)[0]
        axis = _rows("drum axis", axis, 1, 3)[0]
        if np.linalg.norm(axis) == 0 or not radius > 0 or not np.isfinite(omega) or not mu >= 0:
            raise InputError("a drum needs a nonzero axis, a positive radius, a finite rate and mu >= 0")
        return cls(centre, axis / np.linalg.norm(axis), float(radius), float(omega), float(mu))

    def surface_velocity(self, point: np.ndarray) -> np.ndarray:
        """omega axis x (p - centre) (n, 3) [m/s] at points p (n, 3)."""
        return self.omega * np.cross(self.axis[None, :], point - self.centre[None, :])


@dataclass
class World:
    """Bodies, fixed planes, gravity [m/s^2] and the collision envelope delta [m]: contacts with a gap
    Phi <= delta enter the time step (Mazhar et al. 2014 eq. 2d, the active set A(q, delta)); and an
    optional turning :class:`Drum` (3D)."""
    bodies: Bodies
    planes: Planes
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -GRAVITY]))
    envelope: float = 0.05
    drum: Drum | None = None

    @property
    def dim(self) -> int:
        return self.bodies.dim

    def applied_force(self) -> np.ndarray:
        """f (n dof,): gravity m g on the translations and the gyroscopic torque -w x (J w) on the
        body-frame rotations (zero for spheres and cubes; none in 2D)."""
        b = self.bodies
        torque = np.zeros_like(b.w) if b.dim == 2 else -np.cross(b.w, b.inertia * b.w)
        return np.column_stack([b.mass[:, None] * self.gravity[None, :], torque]).ravel()
