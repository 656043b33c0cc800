"""Compiled broad phase: the sphere (disk) pairs within a gap, on a uniform cell grid.

Spheres i < j with centres x_i, x_j and radii R_i, R_j are a candidate contact when their gap
Phi_ij = |x_j - x_i| - R_i - R_j is at most ``envelope`` [m] (Mazhar et al. 2014 eq. 2d, the active
set A(q, delta)). Every such pair has |x_j - x_i| <= 2 max(R) + envelope = ``cell``, so with the
space cut into cubes (squares in 2D) of side ``cell`` both centres lie in the same or in adjacent
cells. Cells are numbered row-major over the bounding box of the centres and the bodies sorted by
cell number; each body looks up its 3^dim neighbouring cells by binary search in the sorted
numbers (3^(dim-1) searches: cells adjacent along the last axis are numbered consecutively), so
memory is O(n) whatever the extent of the scene, and the work O(n log n) plus the pairs. When the
grid has at most 8 cells per body (any packing) a table of where each cell starts replaces the
searches (the same cells scanned: the same pairs), and the bodies are visited in cell order, which
keeps their neighbours in cache.

Contacts are bounded before they are made: more than MAX_PAIRS_PER_BODY x n pairs (each sphere
touching 32 others on average: twice what dense packings of equal spheres reach, 12 neighbours) means
an envelope far beyond the bodies' size (``envelope=100``: every pair in contact, n^2 / 2 pairs), and
the search stops there with an InputError instead of filling memory.

The result is the exact set a brute-force O(n^2) test gives (tests/test_contact_broadphase.py), in
the canonical order (i, then j) that makes the stepper's files reproducible.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.errors import InputError

__all__ = ["sphere_pairs", "MAX_PAIRS_PER_BODY"]

#: the most pairs per body the broad phase makes (with 1,024 more: small scenes are never refused)
MAX_PAIRS_PER_BODY = 32

#: a grid with more cells than this (bodies spread over an enormous box) would overflow int64 cell
#: numbers; the extent is clamped per axis instead, which only merges far cells (still exact)
_MAX_CELLS_PER_AXIS = 1 << 20

#: a table of where each cell starts is kept when the grid has at most this many cells per body
_DENSE_CELLS_PER_BODY = 8


@njit(cache=True)
def _first_at_least(sorted_key, k):
    """The first index s with sorted_key[s] >= k (binary search)."""
    lo, hi = 0, sorted_key.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_key[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _pairs(x, radius, envelope, cell, cells_per_axis, max_pairs):
    """Pairs (i, j), i < j, with |x_j - x_i| - R_i - R_j <= envelope and |x_j - x_i| > 0 (coincident
    centres have no normal), and their distances; unordered. Stops after ``max_pairs`` + 1 pairs."""
    n, dim = x.shape
    lo = np.empty(dim)
    for a in range(dim):
        lo[a] = x[:, a].min()
    coord = np.empty((n, dim), np.int64)
    for i in range(n):
        for a in range(dim):
            c = int(np.floor((x[i, a] - lo[a]) / cell))
            coord[i, a] = min(c, cells_per_axis[a] - 1)
    key = np.zeros(n, np.int64)
    for i in range(n):
        k = 0
        for a in range(dim):
            k = k * cells_per_axis[a] + coord[i, a]
        key[i] = k
    order = np.argsort(key, kind="mergesort")
    sorted_key = key[order]
    n_cells = 1
    for a in range(dim):
        n_cells *= cells_per_axis[a]
    # where each cell's bodies start in the sorted order: a table when the grid has O(n) cells, else
    # a binary search per lookup (a sparse grid: bodies spread over an enormous box)
    start = np.zeros(n_cells + 1 if n_cells <= _DENSE_CELLS_PER_BODY * n else 0, np.int64)
    if start.shape[0]:
        for s in range(n):
            start[sorted_key[s] + 1] += 1
        for k in range(n_cells):
            start[k + 1] += start[k]
    capacity = 8 * n + 16
    pi = np.empty(capacity, np.int64)
    pj = np.empty(capacity, np.int64)
    pd = np.empty(capacity)
    count = 0
    last = dim - 1
    n_offsets = 3 ** last  # neighbour columns; along the last axis neighbouring cells have consecutive numbers
    for si in range(n):  # in cell order: neighbours' data stay in cache
        i = order[si]
        low_c = max(coord[i, last] - 1, 0)
        high_c = min(coord[i, last] + 1, cells_per_axis[last] - 1)
        for o in range(n_offsets):
            base = 0
            rest = o
            inside = True
            for a in range(last):
                c = coord[i, a] + rest % 3 - 1
                rest //= 3
                if c < 0 or c >= cells_per_axis[a]:
                    inside = False
                base = base * cells_per_axis[a] + c
            if not inside:
                continue
            base *= cells_per_axis[last]
            if start.shape[0]:
                s, end = start[base + low_c], start[base + high_c + 1]
            else:
                s = _first_at_least(sorted_key, base + low_c)
                end = _first_at_least(sorted_key, base + high_c + 1)
            while s < end:
                j = order[s]
                s += 1
                if j <= i:
                    continue
                dist2 = 0.0
                for a in range(dim):
                    diff = x[j, a] - x[i, a]
                    dist2 += diff * diff
                dist = np.sqrt(dist2)
                if dist > 0.0 and dist - radius[i] - radius[j] <= envelope:
                    if count > max_pairs:
                        return pi[:count], pj[:count], pd[:count]
                    if count == capacity:
                        capacity *= 2
                        pi2 = np.empty(capacity, np.int64)
                        pj2 = np.empty(capacity, np.int64)
                        pd2 = np.empty(capacity)
                        pi2[:count] = pi[:count]
                        pj2[:count] = pj[:count]
                        pd2[:count] = pd[:count]
                        pi, pj, pd = pi2, pj2, pd2
                    pi[count] = i
                    pj[count] = j
                    pd[count] = dist
                    count += 1
    return pi[:count], pj[:count], pd[:count]


def sphere_pairs(x: np.ndarray, radius: np.ndarray, envelope: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (i, j), i < j, of spheres (disks) at centres ``x`` (n, dim) [m] with radii ``radius``
    (n,) [m] whose gap is at most ``envelope`` [m], sorted by i then j; and their centre distances."""
    x = np.ascontiguousarray(x, dtype=float)
    radius = np.ascontiguousarray(radius, dtype=float)
    if x.shape[0] < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    cell = 2.0 * float(radius.max()) + max(float(envelope), 0.0)
    extent = x.max(axis=0) - x.min(axis=0)
    cells_per_axis = np.minimum(np.floor(extent / cell).astype(np.int64) + 1, _MAX_CELLS_PER_AXIS)
    bound = MAX_PAIRS_PER_BODY * x.shape[0] + 1024
    i, j, dist = _pairs(x, radius, float(envelope), cell, cells_per_axis, bound)
    if i.shape[0] > bound:
        raise InputError(f"the contact search found more than {bound:,} pairs among {x.shape[0]:,} bodies "
                         f"(at most {MAX_PAIRS_PER_BODY} per body): the envelope {envelope:g} m is far beyond "
                         f"the bodies' size ({2 * float(radius.max()):g} m across)")
    order = np.lexsort((j, i))
    return i[order], j[order], dist[order]
