"""The compiled per-step assembly (problems/assembly.py) against the numpy reference (problems/contact.py):
the same contacts, frames and Jacobian D, bit for bit, on random packings with walls, in 3D and 2D,
with rotated bodies; and on the committed packings' final states."""

from __future__ import annotations

import numpy as np
import pytest

from problems import assembly, contact
from problems.generator import DEFAULT_DIR, PackingSpec, load_state, simulation
from problems.rigid import Bodies, Planes, World
from workbench.io import load_problem


def random_world(dim: int, seed: int, n: int = 500) -> World:
    """Spheres (disks) of radii 0.5 ... 1 m at random in a box as dense as a packing (many pairs
    within the envelope, some overlapping), random orientations, in a container whose floor and walls
    touch the outer ones (3D: one tilted plane too, whose n . x is not exact)."""
    rng = np.random.default_rng(seed)
    side = 1.6 * n ** (1.0 / dim)
    x = rng.uniform(0.0, side, (n, dim))
    orientation = rng.normal(size=(n, 4)) if dim == 3 else rng.uniform(-np.pi, np.pi, (n, 1))
    bodies = Bodies.create(dim=dim, shape=np.zeros(n), size=rng.uniform(0.5, 1.0, n), mass=1.0, mu=0.25, x=x,
                           orientation=orientation)
    eye = np.eye(dim)
    normal = np.vstack([eye, -eye] + ([[0.3, -0.2, 1.0]] if dim == 3 else []))
    point = np.vstack([np.full((dim, dim), 0.4), np.full((dim, dim), side - 0.4)] + ([[0, 0, 0.9]] if dim == 3 else []))
    planes = Planes.create(point, normal, rng.uniform(0.1, 0.5, normal.shape[0]), dim=dim)
    return World(bodies, planes, gravity=-eye[dim - 1])


def assert_same_contacts(got, want):
    for field in ("a", "b", "ra", "rb", "normal", "phi", "mu", "key"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


def assert_same_jacobian(contacts, rotations, n_bodies):
    """D of both assemblies: the same canonical CSR arrays, exactly."""
    want = contact.jacobian(contacts, rotations, n_bodies)
    got = assembly.jacobian(contacts, rotations, n_bodies).tocsr()
    want.sort_indices()
    assert got.shape == want.shape and got.has_sorted_indices
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    return got


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_assembly_equals_the_reference_on_random_packings(dim, seed):
    world = random_world(dim, seed)
    want = contact.detect(world)
    got = assembly.detect(world)
    walls = int((want.a < 0).sum())
    assert want.n > world.bodies.n and walls > 10  # the test has sphere pairs and wall contacts to compare
    assert_same_contacts(got, want)
    np.testing.assert_array_equal(assembly.frames(want.normal), contact.contact_frames(want.normal))
    D = assert_same_jacobian(want, world.bodies.rotations(), world.bodies.n)
    # the angular rows are there: rotated bodies and tangent directions at the contact points
    assert D.nnz > want.n * dim * (dim + 1)


def test_frames_of_axis_aligned_and_tied_normals():
    """Normals along the axes and with ties |n_i| = |n_j| (np.argmin takes the first) give the
    reference's frames."""
    s = np.sqrt(0.5)
    normal = np.array([[0, 0, 1], [0, 0, -1], [1, 0, 0], [0, -1, 0], [s, s, 0], [0, s, -s], [s, 0, s],
                       [1 / np.sqrt(3)] * 3, [-1 / np.sqrt(3), 1 / np.sqrt(3), 1 / np.sqrt(3)]])
    np.testing.assert_array_equal(assembly.frames(normal), contact.contact_frames(normal))


@pytest.mark.parametrize("name", ["settled-00320.npz", "filling-01000.npz", "scaling-02560.npz"])
def test_compiled_assembly_equals_the_reference_on_committed_states(name):
    """The final states of committed packings (settled, with rotated spheres): the same contacts and D."""
    spec = PackingSpec(**{k: v for k, v in load_problem(DEFAULT_DIR / name).metadata["generator"].items()
                          if k in PackingSpec.__dataclass_fields__})
    sim = simulation(spec)
    sim.restore(load_state(DEFAULT_DIR / name))
    world = sim.world
    want = contact.detect(world)
    assert want.n == load_problem(DEFAULT_DIR / name).n_contacts
    assert_same_contacts(assembly.detect(world), want)
    assert_same_jacobian(want, world.bodies.rotations(), world.bodies.n)
