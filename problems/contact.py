"""Contact detection, contact frames and the contact Jacobian (Melanz et al. 2015 eq. 5), vectorised over contacts.

A contact i joins body A (a fixed plane when ``a[i] == -1``) and body B. Its frame
A_p = [n, u, w] (columns; [n, t] in 2D) has the unit normal n pointing from A to B, so that the
normal relative velocity n . (v_B,point - v_A,point) is positive when the bodies separate; Phi_i is the
signed gap [m] (negative: penetration). With r_A, r_B the world offsets from the centres of mass to
the contact point on each body, A_A, A_B the body rotations and w the body-frame angular velocities,
the block of D for contact i (Melanz et al. 2015 eq. 5, D_i^T = [-A_p^T, A_p^T A_A s~_A, A_p^T, -A_p^T A_B s~_B]) is

    rows of B:  [ A_p ;  A_B^T (r_B x A_p) ]       rows of A:  -[ A_p ;  A_A^T (r_A x A_p) ]

(the cross product column by column; in 2D r x a is the scalar r_x a_y - r_y a_x and there is no
body-frame rotation), so that D_i^T v = A_p^T (v_B + w_B x r_B - v_A - w_A x r_A) is the relative
velocity of the contact points in the contact frame. Fixed planes have no degrees of freedom.

Detection uses a compiled cell grid for sphere-sphere pairs (:mod:`problems.broadphase`) and a
spatial index (scipy.spatial.cKDTree) for the few sphere-box candidate pairs; planes are few and
are tested against every sphere and box corner by broadcasting. Supported pairs: sphere-sphere, sphere-plane, box corner-plane, sphere-box (3D),
and with ellipsoids (3D, :mod:`problems.ellipsoid`): ellipsoid-ellipsoid and ellipsoid-sphere
(candidates from the cell grid over bounding spheres), ellipsoid-plane, and spheres and ellipsoids
inside a turning drum (:class:`problems.rigid.Drum`). Box-box and box-ellipsoid contacts are not
detected (no scene needs them).

A moving obstacle (the drum) adds its surface velocity v_wall at the contact point (``wall_velocity``;
zero for fixed planes and between bodies): the relative velocity in the contact frame is
u = D^T v - A_p^T v_wall, so the stepper puts -A_p^T v_wall into b.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from problems.broadphase import sphere_pairs
from problems.ellipsoid import cylinder_gaps, ellipsoid_matrices, pair_gaps, plane_gap
from problems.rigid import BOX, ELLIPSOID, SPHERE, World, box_corners_local

__all__ = ["Contacts", "detect", "sphere_sphere", "sphere_plane", "box_plane", "sphere_box", "ellipsoid_pairs",
           "ellipsoid_plane", "inside_drum", "contact_frames", "jacobian"]

#: features per body pair in a contact key (box corners)
_FEATURES = 8


@dataclass(frozen=True)
class Contacts:
    """Arrays over contacts (module docstring). ``key`` identifies a contact across time steps
    (body pair and feature), for warm starting."""
    a: np.ndarray       # (n_c,) body A, -1 for a fixed plane
    b: np.ndarray       # (n_c,) body B
    ra: np.ndarray      # (n_c, dim) contact point - centre of A (zero for planes)
    rb: np.ndarray      # (n_c, dim) contact point - centre of B
    normal: np.ndarray  # (n_c, dim) unit normal from A to B
    phi: np.ndarray     # (n_c,) gap [m]
    mu: np.ndarray      # (n_c,)
    key: np.ndarray     # (n_c,) int64
    wall_velocity: np.ndarray | None = None  # (n_c, dim) surface velocity of a moving obstacle A; None: all zero

    @property
    def n(self) -> int:
        return self.phi.shape[0]

    @property
    def frame(self) -> np.ndarray:
        return contact_frames(self.normal)

    @staticmethod
    def concatenate(parts: list["Contacts"], dim: int) -> "Contacts":
        parts = [p for p in parts if p.n]
        if not parts:
            z = np.zeros((0, dim))
            return Contacts(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, z, np.zeros(0), np.zeros(0),
                            np.zeros(0, np.int64))
        moving = None
        if any(p.wall_velocity is not None for p in parts):
            moving = np.concatenate([np.zeros_like(p.normal) if p.wall_velocity is None else p.wall_velocity
                                     for p in parts])
        return Contacts(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                          ("a", "b", "ra", "rb", "normal", "phi", "mu", "key")), wall_velocity=moving)


def _key(id_a: np.ndarray, id_b: np.ndarray, feature, n_ids: int) -> np.ndarray:
    return (np.asarray(id_a, np.int64) * n_ids + np.asarray(id_b, np.int64)) * _FEATURES + feature


def contact_frames(normal: np.ndarray) -> np.ndarray:
    """Orthonormal frames (n_c, dim, dim) with columns [n, u, w] (3D) or [n, t] (2D).

    3D: u is the coordinate axis least aligned with n, projected on the tangent plane and normalised
    (for n = z: u = x, w = y); w = n x u. 2D: t = (n_y, -n_x) (for n = y: t = x, Melanz et al. 2015 eq. 42).
    """
    n = np.asarray(normal, dtype=float)
    if n.shape[1] == 2:
        return np.stack([n, np.column_stack([n[:, 1], -n[:, 0]])], axis=2)
    e = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    u = e - np.einsum("ij,ij->i", e, n)[:, None] * n
    u /= np.linalg.norm(u, axis=1)[:, None]
    return np.stack([n, u, np.cross(n, u)], axis=2)


def sphere_sphere(x: np.ndarray, radius: np.ndarray, ids: np.ndarray, mu: np.ndarray, envelope: float,
                  n_ids: int) -> Contacts:
    """Contacts between spheres (disks) at centres x (n, dim) with gap <= envelope; the pairs come from
    the compiled cell grid (:func:`problems.broadphase.sphere_pairs`). A is the lower index of each pair."""
    i, j, dist = sphere_pairs(x, radius, envelope)
    n = (x[j] - x[i]) / dist[:, None]
    return Contacts(a=ids[i], b=ids[j], ra=radius[i, None] * n, rb=-radius[j, None] * n, normal=n,
                    phi=dist - radius[i] - radius[j], mu=np.minimum(mu[i], mu[j]), key=_key(ids[i], ids[j], 0, n_ids))


def sphere_plane(x: np.ndarray, radius: np.ndarray, ids: np.ndarray, mu: np.ndarray, world_planes,
                 plane_ids: np.ndarray, envelope: float, n_ids: int) -> Contacts:
    """Spheres (disks) against fixed planes (lines): Phi = n . (x - p0) - R, every pair tested."""
    planes = world_planes
    phi = (x @ planes.normal.T) - np.einsum("pd,pd->p", planes.point, planes.normal)[None, :] - radius[:, None]
    s, p = np.nonzero(phi <= envelope)
    n = planes.normal[p]
    return Contacts(a=np.full(s.shape, -1, np.int64), b=ids[s], ra=np.zeros_like(n), rb=-radius[s, None] * n,
                    normal=n, phi=phi[s, p], mu=np.minimum(mu[s], planes.mu[p]),
                    key=_key(plane_ids[p], ids[s], 0, n_ids))


def box_plane(x: np.ndarray, rot: np.ndarray, half: np.ndarray, ids: np.ndarray, mu: np.ndarray, world_planes,
              plane_ids: np.ndarray, envelope: float, n_ids: int) -> Contacts:
    """Box corners against fixed planes: Phi = n . (corner - p0), one contact per corner within the
    envelope (four for a box resting on a face)."""
    planes = world_planes
    offset = np.einsum("bij,bkj->bki", rot, box_corners_local()[None, :, :] * half[:, None, :])  # (n_b, 8, 3)
    corner = x[:, None, :] + offset
    phi = np.einsum("bkd,pd->bkp", corner, planes.normal) - np.einsum("pd,pd->p", planes.point, planes.normal)
    bi, k, p = np.nonzero(phi <= envelope)
    n = planes.normal[p]
    return Contacts(a=np.full(bi.shape, -1, np.int64), b=ids[bi], ra=np.zeros_like(n), rb=offset[bi, k],
                    normal=n, phi=phi[bi, k, p], mu=np.minimum(mu[bi], planes.mu[p]),
                    key=_key(plane_ids[p], ids[bi], k, n_ids))


def sphere_box(xs: np.ndarray, radius: np.ndarray, sphere_ids: np.ndarray, mu_s: np.ndarray, xb: np.ndarray,
               rot: np.ndarray, half: np.ndarray, box_ids: np.ndarray, mu_b: np.ndarray, envelope: float,
               n_ids: int) -> Contacts:
    """Spheres against (movable) boxes: the closest point of the box to the sphere centre, found in the
    box frame by clamping to the half extents; a centre inside the box is pushed out through the
    nearest face. A is the box, B the sphere. Candidates from a k-d tree over the sphere centres."""
    if xs.shape[0] == 0 or xb.shape[0] == 0:
        return Contacts.concatenate([], 3)
    reach = np.linalg.norm(half, axis=1).max() + radius.max() + envelope
    pairs = cKDTree(xb).sparse_distance_matrix(cKDTree(xs), reach, output_type="ndarray")
    if pairs.shape[0] == 0:
        return Contacts.concatenate([], 3)
    pairs = pairs[np.lexsort((pairs["j"], pairs["i"]))]
    bi, si = pairs["i"].astype(np.int64), pairs["j"].astype(np.int64)
    R, e = rot[bi], half[bi]
    local = np.einsum("nji,nj->ni", R, xs[si] - xb[bi])
    closest = np.clip(local, -e, e)
    d = local - closest
    dist = np.linalg.norm(d, axis=1)
    outside = dist > 0
    # inside: leave through the face of least depth
    depth = e - np.abs(local)
    k = np.argmin(depth, axis=1)
    rows = np.arange(local.shape[0])
    sign = np.where(local[rows, k] >= 0, 1.0, -1.0)
    n_in = np.zeros_like(local)
    n_in[rows, k] = sign
    inside_point = local.copy()
    inside_point[rows, k] = sign * e[rows, k]
    n_local = np.where(outside[:, None], d / np.where(outside, dist, 1.0)[:, None], n_in)
    point = np.where(outside[:, None], closest, inside_point)
    phi = np.where(outside, dist, -depth[rows, k]) - radius[si]
    keep = phi <= envelope
    n = np.einsum("nij,nj->ni", R, n_local)[keep]
    ra = np.einsum("nij,nj->ni", R, point)[keep]
    bi, si = bi[keep], si[keep]
    return Contacts(a=box_ids[bi], b=sphere_ids[si], ra=ra, rb=-radius[si, None] * n, normal=n, phi=phi[keep],
                    mu=np.minimum(mu_b[bi], mu_s[si]), key=_key(box_ids[bi], sphere_ids[si], 0, n_ids))


def _semi_axes(bodies, idx: np.ndarray) -> np.ndarray:
    """Semi-axes (k, 3) of round bodies: (R, R, R) for spheres, the sizes of ellipsoids."""
    size = bodies.size[idx]
    return np.where((bodies.shape[idx] == SPHERE)[:, None], size[:, :1], size)


def ellipsoid_pairs(x: np.ndarray, sigma: np.ndarray, bound: np.ndarray, is_ellipsoid: np.ndarray, ids: np.ndarray,
                    mu: np.ndarray, envelope: float, n_ids: int) -> Contacts:
    """Contacts of the pairs of round bodies (centres x, Sigma, bounding radii ``bound``) with at least one
    ellipsoid and gap <= envelope: candidates from the cell grid over the bounding spheres, then the common
    normal of :func:`problems.ellipsoid.pair_gaps`. A is the lower index of each pair."""
    i, j, _ = sphere_pairs(x, bound, envelope)
    keep = is_ellipsoid[i] | is_ellipsoid[j]
    i, j = i[keep], j[keep]
    normal, phi, ra, rb = pair_gaps(np.ascontiguousarray(x[j] - x[i]), np.ascontiguousarray(sigma[i]),
                                    np.ascontiguousarray(sigma[j]))
    on = phi <= envelope
    i, j = i[on], j[on]
    return Contacts(a=ids[i], b=ids[j], ra=ra[on], rb=rb[on], normal=normal[on], phi=phi[on],
                    mu=np.minimum(mu[i], mu[j]), key=_key(ids[i], ids[j], 0, n_ids))


def ellipsoid_plane(x: np.ndarray, sigma: np.ndarray, ids: np.ndarray, mu: np.ndarray, world_planes,
                    plane_ids: np.ndarray, envelope: float, n_ids: int) -> Contacts:
    """Ellipsoids against fixed planes: Phi = n . (x - p0) - sqrt(n^T Sigma n) at the lowest point
    (:func:`problems.ellipsoid.plane_gap`), every pair tested."""
    planes = world_planes
    phi, offset = plane_gap(x, sigma, planes.point, planes.normal)
    e, p = np.nonzero(phi <= envelope)
    n = planes.normal[p]
    return Contacts(a=np.full(e.shape, -1, np.int64), b=ids[e], ra=np.zeros_like(n), rb=offset[e, p], normal=n,
                    phi=phi[e, p], mu=np.minimum(mu[e], planes.mu[p]), key=_key(plane_ids[p], ids[e], 0, n_ids))


def inside_drum(x: np.ndarray, sigma: np.ndarray, ids: np.ndarray, mu: np.ndarray, drum, drum_id: int,
                envelope: float, n_ids: int) -> Contacts:
    """Round bodies inside a turning drum (:class:`problems.rigid.Drum`): the point farthest from the axis
    (:func:`problems.ellipsoid.cylinder_gaps`), normal towards the axis, the drum's surface velocity there."""
    phi, out, offset = cylinder_gaps(np.ascontiguousarray(x - drum.centre[None, :]), np.ascontiguousarray(sigma),
                                     drum.axis, drum.radius)
    on = np.flatnonzero(phi <= envelope)
    rb = offset[on]
    return Contacts(a=np.full(on.shape, -1, np.int64), b=ids[on], ra=np.zeros_like(rb), rb=rb, normal=-out[on],
                    phi=phi[on], mu=np.minimum(mu[on], drum.mu), key=_key(drum_id, ids[on], 0, n_ids),
                    wall_velocity=drum.surface_velocity(x[on] + rb))


def _round_bodies(world: World, n_ids: int, plane_ids: np.ndarray) -> list[Contacts]:
    """The contacts of ellipsoids (with ellipsoids, spheres and planes) and of spheres and ellipsoids
    with the drum."""
    b, planes, env = world.bodies, world.planes, world.envelope
    e = np.flatnonzero(b.shape == ELLIPSOID)
    if not e.size and world.drum is None:
        return []
    rnd = np.flatnonzero(b.shape != BOX)
    sigma = ellipsoid_matrices(b.rotations()[rnd], _semi_axes(b, rnd))
    parts = []
    if e.size:
        is_e = b.shape[rnd] == ELLIPSOID
        parts.append(ellipsoid_pairs(b.x[rnd], sigma, b.radius[rnd], is_e, rnd, b.mu[rnd], env, n_ids))
        if planes.n:
            parts.append(ellipsoid_plane(b.x[rnd[is_e]], sigma[is_e], rnd[is_e], b.mu[rnd[is_e]], planes, plane_ids,
                                         env, n_ids))
    if world.drum is not None:
        parts.append(inside_drum(b.x[rnd], sigma, rnd, b.mu[rnd], world.drum, n_ids - 1, env, n_ids))
    return parts


def detect(world: World) -> Contacts:
    """All contacts of the world with gap <= envelope, in a canonical order (pair kind, then indices)."""
    b, planes, env = world.bodies, world.planes, world.envelope
    n_ids = b.n + planes.n + (world.drum is not None)
    plane_ids = b.n + np.arange(planes.n)
    s = np.flatnonzero(b.shape == SPHERE)
    bx = np.flatnonzero(b.shape == BOX)
    rs = b.size[s, 0]
    parts = [sphere_sphere(b.x[s], rs, s, b.mu[s], env, n_ids)]
    if planes.n:
        parts.append(sphere_plane(b.x[s], rs, s, b.mu[s], planes, plane_ids, env, n_ids))
    parts += _round_bodies(world, n_ids, plane_ids)
    if bx.size:
        rot = b.rotations()[bx]
        if planes.n:
            parts.append(box_plane(b.x[bx], rot, b.size[bx], bx, b.mu[bx], planes, plane_ids, env, n_ids))
        parts.append(sphere_box(b.x[s], rs, s, b.mu[s], b.x[bx], rot, b.size[bx], bx, b.mu[bx], env, n_ids))
    return Contacts.concatenate(parts, b.dim)


def jacobian(contacts: Contacts, rotations: np.ndarray, n_bodies: int) -> sp.csr_matrix:
    """The contact Jacobian D (n_bodies * dof, d n_c), blocks of the module docstring (Melanz et al. 2015 eq. 5).

    ``rotations`` are the body-to-world matrices of the bodies (n_bodies, dim, dim)."""
    dim = contacts.normal.shape[1]
    d = dim
    dof = dim + (3 if dim == 3 else 1)
    cols_world = np.transpose(contacts.frame, (0, 2, 1))  # (n_c, d, dim): row c is the direction a_c
    rows_all, cols_all, vals_all = [], [], []
    for body, r, sign in ((contacts.b, contacts.rb, 1.0), (contacts.a, contacts.ra, -1.0)):
        on = body >= 0
        idx = np.flatnonzero(on)
        a_c = cols_world[idx]
        if dim == 3:
            rot = np.einsum("kji,kcj->kci", rotations[body[idx]], np.cross(r[idx][:, None, :], a_c))
        else:
            rot = (r[idx, 0, None] * a_c[:, :, 1] - r[idx, 1, None] * a_c[:, :, 0])[:, :, None]
        block = sign * np.concatenate([a_c, rot], axis=2)  # (n, d, dof): column c of the contact, dof rows
        rows = dof * body[idx][:, None, None] + np.arange(dof)[None, None, :]
        cols = d * idx[:, None, None] + np.arange(d)[None, :, None]
        rows_all.append(np.broadcast_to(rows, block.shape).ravel())
        cols_all.append(np.broadcast_to(cols, block.shape).ravel())
        vals_all.append(block.ravel())
    D = sp.csr_matrix((np.concatenate(vals_all), (np.concatenate(rows_all), np.concatenate(cols_all))),
                      shape=(n_bodies * dof, d * contacts.n))
    D.eliminate_zeros()  # axis-aligned frames and the angular part of sphere normals (r x n = 0)
    return D
