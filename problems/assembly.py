"""The compiled per-step assembly of the time stepper: sphere contacts, contact frames and the contact
Jacobian D built directly as a sparse CSC matrix, in loops over contacts compiled by numba.

The mathematics is that of :mod:`problems.contact` (Melanz et al. 2015 eq. 5; its docstring states
the frames and the blocks of D), which stays the vectorised numpy reference and the general path
(boxes). Here every number is computed with the same floating-point operations in the same order as
there (sums of three products left to right, as numpy's einsum and norm add them), so the contacts,
frames and D are equal bit for bit (tests/test_assembly.py), and a packing made with either assembly
has the same SHA-256: the committed datasets stay reproducible.

- :func:`detect`: sphere-sphere pairs from the compiled cell grid (:mod:`problems.broadphase`), then
  sphere-plane contacts, Phi = n . x - n . p0 - R (the few planes' gaps of all spheres in one matrix
  product, as the reference has them), sphere by sphere and plane by plane, in the order of
  :func:`problems.contact.detect`. A world with boxes, ellipsoids or a drum goes to the reference.
- :func:`frames`: [n, u, w] (3D), u the coordinate axis least aligned with n projected on the tangent
  plane and normalised, w = n x u; [n, t], t = (n_y, -n_x) (2D).
- :func:`jacobian`: per contact column d c + k (direction a_k, the frame's column k), the rows of
  body B, [a_k ; A_B^T (r_B x a_k)], then those of body A negated, the lower body index first, exact
  zeros left out (axis-aligned frames, r x n = 0 for spheres): a CSC matrix with sorted row indices,
  which converts to the same CSR matrix as the reference's.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from problems.broadphase import sphere_pairs
from problems.contact import _FEATURES, Contacts
from problems.contact import detect as detect_reference
from problems.rigid import SPHERE, World

__all__ = ["detect", "frames", "jacobian"]


# ---------------------------------------------------------------------------------------- contacts
@njit(cache=True)
def _sphere_contacts(x, radius, mu, pi, pj, dist, plane_phi, p_normal, p_mu, envelope, n_ids):
    """Arrays of the sphere-sphere contacts of the pairs (pi, pj, dist) followed by the sphere-plane
    contacts of gap plane_phi[s, p] <= envelope (sphere by sphere, plane by plane); spheres are bodies
    0 ... n-1 and plane p is id n + p."""
    n, dim = x.shape
    n_planes = p_normal.shape[0]
    n_wall = 0
    for s in range(n):
        for p in range(n_planes):
            if plane_phi[s, p] <= envelope:
                n_wall += 1
    n_pair = pi.shape[0]
    m = n_pair + n_wall
    a = np.empty(m, np.int64)
    b = np.empty(m, np.int64)
    ra = np.zeros((m, dim))
    rb = np.empty((m, dim))
    normal = np.empty((m, dim))
    phi = np.empty(m)
    mu_c = np.empty(m)
    key = np.empty(m, np.int64)
    for c in range(n_pair):
        i, j = pi[c], pj[c]
        for k in range(dim):
            nk = (x[j, k] - x[i, k]) / dist[c]
            normal[c, k] = nk
            ra[c, k] = radius[i] * nk
            rb[c, k] = -radius[j] * nk
        a[c], b[c] = i, j
        phi[c] = dist[c] - radius[i] - radius[j]
        mu_c[c] = min(mu[i], mu[j])
        key[c] = (i * n_ids + j) * _FEATURES
    c = n_pair
    for s in range(n):
        for p in range(n_planes):
            if plane_phi[s, p] <= envelope:
                for k in range(dim):
                    normal[c, k] = p_normal[p, k]
                    rb[c, k] = -radius[s] * p_normal[p, k]
                a[c], b[c] = -1, s
                phi[c] = plane_phi[s, p]
                mu_c[c] = min(mu[s], p_mu[p])
                key[c] = ((n + p) * n_ids + s) * _FEATURES
                c += 1
    return a, b, ra, rb, normal, phi, mu_c, key


def detect(world: World) -> Contacts:
    """All contacts of the world with gap <= envelope, as :func:`problems.contact.detect` finds them
    (the same arrays in the same order); compiled when every body is a sphere and there is no drum,
    else the reference."""
    bodies, planes = world.bodies, world.planes
    if not np.all(bodies.shape == SPHERE) or world.drum is not None:
        return detect_reference(world)
    x, radius = np.ascontiguousarray(bodies.x, dtype=float), np.ascontiguousarray(bodies.size[:, 0])
    pi, pj, dist = sphere_pairs(x, radius, world.envelope)
    # the gaps to the planes as the reference computes them (one matrix product: its rounding)
    plane_phi = x @ planes.normal.T - np.einsum("pd,pd->p", planes.point, planes.normal)[None, :] - radius[:, None]
    arrays = _sphere_contacts(x, radius, bodies.mu, pi, pj, dist, np.ascontiguousarray(plane_phi),
                              np.ascontiguousarray(planes.normal), np.ascontiguousarray(planes.mu),
                              float(world.envelope), bodies.n + planes.n)
    return Contacts(*arrays)


# ---------------------------------------------------------------------------------------- frames
@njit(cache=True)
def _frames(normal):
    m, dim = normal.shape
    out = np.empty((m, dim, dim))
    for c in range(m):
        if dim == 2:
            out[c, 0, 0], out[c, 1, 0] = normal[c, 0], normal[c, 1]
            out[c, 0, 1], out[c, 1, 1] = normal[c, 1], -normal[c, 0]
            continue
        n0, n1, n2 = normal[c, 0], normal[c, 1], normal[c, 2]
        axis = 0  # the first of the least |n_k| (np.argmin)
        if abs(n1) < abs(n0):
            axis = 1
        if abs(n2) < abs(normal[c, axis]):
            axis = 2
        along = normal[c, axis]  # e . n for the unit vector e of that axis
        u0 = (1.0 if axis == 0 else 0.0) - along * n0
        u1 = (1.0 if axis == 1 else 0.0) - along * n1
        u2 = (1.0 if axis == 2 else 0.0) - along * n2
        length = np.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        u0, u1, u2 = u0 / length, u1 / length, u2 / length
        out[c, 0, 0], out[c, 1, 0], out[c, 2, 0] = n0, n1, n2
        out[c, 0, 1], out[c, 1, 1], out[c, 2, 1] = u0, u1, u2
        out[c, 0, 2], out[c, 1, 2], out[c, 2, 2] = n1 * u2 - n2 * u1, n2 * u0 - n0 * u2, n0 * u1 - n1 * u0
    return out


def frames(normal: np.ndarray) -> np.ndarray:
    """Orthonormal contact frames (n_c, dim, dim), columns [n, u, w] (3D) or [n, t] (2D), equal bit for
    bit to :func:`problems.contact.contact_frames`."""
    return _frames(np.ascontiguousarray(normal, dtype=float))


# ---------------------------------------------------------------------------------------- Jacobian
@njit(cache=True)
def _put_body(frame, c, k, r, rot, body, sign, dof, indices, data, count):
    """Append the nonzero rows of one body for direction k of contact c; return the new count."""
    dim = frame.shape[1]
    for i in range(dim):
        value = sign * frame[c, i, k]
        if value != 0.0:
            indices[count], data[count] = dof * body + i, value
            count += 1
    if dim == 2:  # r x a, a scalar; no body-frame rotation
        value = sign * (r[0] * frame[c, 1, k] - r[1] * frame[c, 0, k])
        if value != 0.0:
            indices[count], data[count] = dof * body + 2, value
            count += 1
        return count
    a0, a1, a2 = frame[c, 0, k], frame[c, 1, k], frame[c, 2, k]
    x0, x1, x2 = r[1] * a2 - r[2] * a1, r[2] * a0 - r[0] * a2, r[0] * a1 - r[1] * a0  # r x a
    for i in range(3):  # (A^T (r x a))_i, summed over j = 0, 1, 2 in that order
        value = sign * (rot[body, 0, i] * x0 + rot[body, 1, i] * x1 + rot[body, 2, i] * x2)
        if value != 0.0:
            indices[count], data[count] = dof * body + 3 + i, value
            count += 1
    return count


@njit(cache=True)
def _jacobian_csc(frame, a, b, ra, rb, rot):
    m, dim = frame.shape[0], frame.shape[1]
    dof = 6 if dim == 3 else 3
    indptr = np.zeros(dim * m + 1, np.int64)
    indices = np.empty(dim * m * 2 * dof, np.int64)
    data = np.empty(dim * m * 2 * dof)
    count = 0
    for c in range(m):
        a_first = a[c] >= 0 and a[c] < b[c]  # rows in increasing order
        for k in range(dim):
            if a_first:
                count = _put_body(frame, c, k, ra[c], rot, a[c], -1.0, dof, indices, data, count)
            count = _put_body(frame, c, k, rb[c], rot, b[c], 1.0, dof, indices, data, count)
            if a[c] >= 0 and not a_first:
                count = _put_body(frame, c, k, ra[c], rot, a[c], -1.0, dof, indices, data, count)
            indptr[dim * c + k + 1] = count
    return indptr, indices[:count].copy(), data[:count].copy()


def jacobian(contacts: Contacts, rotations: np.ndarray, n_bodies: int) -> sp.csc_matrix:
    """The contact Jacobian D (n_bodies dof, d n_c) of :func:`problems.contact.jacobian`, the same
    numbers, built directly in CSC form. ``rotations``: body-to-world matrices (n_bodies, dim, dim)."""
    dim = contacts.normal.shape[1]
    dof = dim + (3 if dim == 3 else 1)
    indptr, indices, data = _jacobian_csc(frames(contacts.normal), contacts.a, contacts.b, np.ascontiguousarray(contacts.ra, dtype=float),
                                          np.ascontiguousarray(contacts.rb, dtype=float),
                                          np.ascontiguousarray(rotations, dtype=float))
    return sp.csc_matrix((data, indices, indptr), shape=(n_bodies * dof, dim * contacts.n))
