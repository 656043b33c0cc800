"""The generated stack shapes added for the held-out set (problems.stacks: box_pyramid, corbel_arch,
thin_box_pile): their geometry counted by hand, determinism by seed, and the physics of a pile at rest on
solved runs (nonsmooth Newton to 1e-10): the normal impulses into the floor add up to the weight times h,
the bodies stay at rest, every impulse is in its cone; the corbel arch that is not statically admissible
is refused."""

from __future__ import annotations

import numpy as np
import pytest

from problems.stacks import GROUND, box_pyramid, corbel_arch, thin_box_pile
from workbench.errors import InputError
from workbench.method import solve
from workbench.solvers.base import SolveOptions


def test_geometry_counted_by_hand():
    # pyramid of base b: b (b + 1) / 2 cubes; b rectangles on the floor, two under every upper cube
    pyramid = box_pyramid(base=5)
    assert pyramid.M.shape[0] == 6 * 15 and pyramid.n_contacts == 4 * (5 + 2 * 10)
    # arch of c courses: 2 c blocks and a capstone; 2 on the floor, 2 (c - 1) in the piers, 2 under the capstone
    arch = corbel_arch(courses=6)
    assert arch.M.shape[0] == 6 * 13 and arch.n_contacts == 4 * (2 + 10 + 2)
    pile = thin_box_pile(n=30)
    assert pile.M.shape[0] == 6 * 30 and pile.n_contacts == 4 * 30


def test_deterministic_by_seed():
    a, b, c = thin_box_pile(n=20, seed=4), thin_box_pile(n=20, seed=4), thin_box_pile(n=20, seed=5)
    assert (a.D != b.D).nnz == 0 and np.array_equal(a.k, b.k) and a.name == b.name
    assert (a.D != c.D).nnz > 0 and a.name != c.name
    p, q = box_pyramid(base=4, jitter=0.2, seed=1), box_pyramid(base=4, jitter=0.2, seed=1)
    assert (p.D != q.D).nnz == 0


@pytest.mark.parametrize("problem", [box_pyramid(base=5), box_pyramid(base=6, jitter=0.2, seed=2),
                                     corbel_arch(courses=6), thin_box_pile(n=40)], ids=lambda p: p.name)
def test_rests_and_carries_the_weight(problem):
    res = solve(problem, "ncp", "newton", SolveOptions(tol=1e-10))
    assert res.status == "solved" and res.metrics["siconos_error"] < 1e-8
    pairs = np.array(problem.metadata["contact_bodies"])
    g = res.nu.reshape(-1, 3)
    weight_h = problem.metadata["total_weight"] * problem.h
    assert g[pairs[:, 0] == GROUND, 0].sum() == pytest.approx(weight_h, rel=1e-8)
    margin = 1e-8 * g[:, 0].max()
    assert np.all(np.linalg.norm(g[:, 1:], axis=1) <= problem.mu * g[:, 0] + margin)
    assert np.abs(res.v).max() < 1e-7


def test_bad_shapes_refused():
    with pytest.raises(InputError, match="opening"):
        corbel_arch(courses=6, span=0.5, overhang=0.2)
    with pytest.raises(InputError, match="jitter"):
        thin_box_pile(n=5, jitter=0.7)
    with pytest.raises(InputError, match="base"):
        box_pyramid(base=0)
