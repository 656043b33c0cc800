"""Compile the simulator's numba kernels into the on-disk compile cache (``workbench warm-up``).

The broad phase (:mod:`problems.broadphase`), the contact assembly (:mod:`problems.assembly`: contact
detection, frames, the Jacobian D) and the ellipsoid contacts (:mod:`problems.ellipsoid`) are compiled
with ``cache=True`` on their first call. Without this a process that builds a scene or a generated
problem compiles them inside whatever budget it runs under (seconds each). :func:`warm_up` builds the
time-step problems of small worlds that reach every kernel: spheres in a container (3D and planar),
ellipsoids and spheres in the turning drum, and a synthetic packing; the worlds get an envelope of
1 m so that every pair and every wall is a contact.
"""

from __future__ import annotations

import dataclasses
import time

from problems.assembly import detect, frames, jacobian
from problems.drum import drum
from problems.granular import container_world, container_world_2d
from problems.synthetic import sphere_packing

__all__ = ["warm_up"]


def warm_up() -> float:
    """Detect the contacts of each small world and build their frames and D; returns the seconds."""
    t0 = time.perf_counter()
    worlds = [container_world(8), container_world_2d(8), drum(8).world, drum(8, shape="sphere").world]
    for world in worlds:
        world = dataclasses.replace(world, envelope=1.0)
        contacts = detect(world)
        if contacts.n:
            frames(contacts.normal)
            jacobian(contacts, world.bodies.rotations(), world.bodies.n)
    sphere_packing(8)
    return time.perf_counter() - t0
