"""The packing generator and its simulator: the compiled broad phase against a brute-force test, warm
starting, resumable generation, and the datasets' metadata and checksums (problems/generator.py,
problems/broadphase.py, problems/stepper.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from problems.broadphase import sphere_pairs
from problems.contact import detect
from problems.generator import (DEFAULT_DIR, MANIFEST, PackingSpec, checkpoint_path, generate_dataset, load_state,
                                read_manifest, simulation)
from problems.granular import container_world, container_world_2d
from problems.rigid import GRAVITY
from workbench.io import load_problem
from workbench.problem import problem_digest


def brute_force_pairs(x, radius, envelope):
    """Every pair i < j with gap |x_j - x_i| - R_i - R_j <= envelope and distinct centres, O(n^2)."""
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    gap = dist - radius[:, None] - radius[None, :]
    i, j = np.nonzero(np.triu((gap <= envelope) & (dist > 0), 1))
    return i, j, dist[i, j]


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_broad_phase_finds_exactly_the_brute_force_pairs(dim, seed):
    """Random spheres (disks) of radii 0.2 ... 1 m at a density where many overlap, and a spread-out
    scene with a far outlier: the same pairs, in order (i, then j), with the same distances."""
    rng = np.random.default_rng(seed)
    n = 600
    x = rng.uniform(0.0, 1.4 * n ** (1.0 / dim), size=(n, dim))
    x[0] = 1e4  # one body far away: a sparse grid, never a dense one
    radius = rng.uniform(0.2, 1.0, n)
    for envelope in (0.0, 0.05, 0.5):
        i, j, dist = sphere_pairs(x, radius, envelope)
        bi, bj, bdist = brute_force_pairs(x, radius, envelope)
        assert len(bi) > n // 4  # the test has pairs to find
        np.testing.assert_array_equal(i, bi)
        np.testing.assert_array_equal(j, bj)
        np.testing.assert_allclose(dist, bdist, rtol=1e-15)


@pytest.mark.parametrize("dim", [2, 3])
def test_detect_on_a_packing_matches_brute_force(dim):
    """The sphere-sphere contacts of a dense lattice packing (touching neighbours, gaps within the
    envelope) are the brute-force pairs; the sphere-wall contacts are the spheres within the envelope
    of each wall."""
    world = container_world(200, spacing=1.02, jitter=0.05) if dim == 3 else container_world_2d(60, spacing=1.02)
    b = world.bodies
    contacts = detect(world)
    spheres = contacts.a >= 0
    bi, bj, _ = brute_force_pairs(b.x, b.size[:, 0], world.envelope)
    np.testing.assert_array_equal(contacts.a[spheres], bi)
    np.testing.assert_array_equal(contacts.b[spheres], bj)
    gap = b.x @ world.planes.normal.T - np.einsum("pd,pd->p", world.planes.point, world.planes.normal) - b.size[:, :1]
    assert (~spheres).sum() == np.count_nonzero(gap <= world.envelope) > 0


def test_warm_start_reduces_iterations_on_a_settled_packing():
    """The next steps of the committed settled-00320 packing (its stored final state), solved from the
    previous step's impulses (matched by contact key), take fewer APGD iterations than the same steps
    from zero (at h = 0.0005 s the impulses change little from step to step); both end at the same
    velocities to the tolerance (1 mm/s: both stop at tol 1e-6, at different points)."""
    path = DEFAULT_DIR / "settled-00320.npz"
    spec = PackingSpec(**{k: v for k, v in load_problem(path).metadata["generator"].items()
                          if k in PackingSpec.__dataclass_fields__})
    state = load_state(path)
    warm_sim, cold_sim = simulation(spec), simulation(spec)
    warm_sim.restore(state)
    cold_sim.restore(state)
    cold_sim.warm_start = False
    warm = [warm_sim.step() for _ in range(3)]
    cold = [cold_sim.step() for _ in range(3)]
    assert [r.contacts for r in warm] == [r.contacts for r in cold]
    assert all(r.status == "solved" for r in warm + cold)
    assert sum(r.iterations for r in warm) < 0.5 * sum(r.iterations for r in cold)
    np.testing.assert_allclose(warm_sim.world.bodies.v, cold_sim.world.bodies.v, atol=1e-3)  # [m/s], at rest


@pytest.mark.parametrize("every, minutes, resumes_at", [(20, 10.0, 40), (0, 1e-9, 47)])
def test_resume_from_a_checkpoint_gives_the_same_file_bit_for_bit(tmp_path, every, minutes, resumes_at):
    """A generation stopped after 47 steps and run again ends with the same arrays as an
    uninterrupted run: the same SHA-256, and the checkpoint is gone. Checkpoints every 20 steps (it
    resumes from step 40), or by wall time (a checkpoint after every step: from step 47)."""
    params = dict(n=18, width=8.0, duration=0.4, h=0.005)
    whole = generate_dataset("settled", tmp_path / "whole", progress=False, **params)[0]
    kw = dict(progress=False, checkpoint_every=every, checkpoint_minutes=minutes)
    stopped = generate_dataset("settled", tmp_path / "resumed", stop_after=47, **kw, **params)
    ckpt = checkpoint_path(tmp_path / "resumed" / whole.name)
    assert stopped == [] and ckpt.exists()
    with np.load(ckpt) as z:
        assert int(z["state_step_index"]) == resumes_at
    resumed = generate_dataset("settled", tmp_path / "resumed", **kw, **params)[0]
    assert not checkpoint_path(resumed).exists()
    assert problem_digest(load_problem(resumed)) == problem_digest(load_problem(whole))
    assert read_manifest(tmp_path / "resumed")[resumed.name]["sha256"] == read_manifest(tmp_path / "whole")[whole.name]["sha256"]


def test_generated_file_records_its_protocol_and_its_checksum(tmp_path):
    """The metadata of a generated packing hold h, the number of steps and the other generator
    parameters and the largest penetration of the stored state; the manifest's SHA-256 is the one of
    the file's arrays."""
    path = generate_dataset("unsettled", tmp_path, progress=False, n=18, width=8.0, duration=0.3, h=0.005)[0]
    problem = load_problem(path)
    meta = problem.metadata
    assert meta["h"] == problem.h == 0.005 and meta["steps"] == 60 and meta["generator"]["max_iter"] == 10
    assert meta["max_penetration"] == pytest.approx(max(0.0, -problem.b[::3].min() * problem.h), rel=1e-5)
    entry = read_manifest(tmp_path)[path.name]
    assert entry["sha256"] == problem_digest(problem) and entry["n_contacts"] == problem.n_contacts


#: the committed packings: problems/datasets and its calibrated/ folder (the scaling recipe on the floor that
#: benchmarks.reproduce.calibrate fitted, docs/datasets.md), each folder with its own manifest
COMMITTED = sorted((folder.name, name) for folder in (DEFAULT_DIR, DEFAULT_DIR / "calibrated")
                   for name in read_manifest(folder) if (folder / name).exists())


@pytest.mark.parametrize("folder, name", COMMITTED)
def test_committed_datasets_match_their_manifest(folder, name):
    """Every committed dataset file has the SHA-256 its manifest entry records."""
    where = DEFAULT_DIR if folder == DEFAULT_DIR.name else DEFAULT_DIR / folder
    entry = read_manifest(where)[name]
    problem = load_problem(where / name)
    assert problem_digest(problem) == entry["sha256"]
    assert problem.metadata["generator"] == entry["generator"]


def test_the_calibrated_packings_are_on_the_fitted_floor():
    """problems/datasets/calibrated holds the scaling recipe on the floor width of docs/results/calibration.json
    (the fit's value, to the bit), 77 contacts at 64 spheres there as the fit says."""
    import json

    from workbench.provenance import RESULTS_DIR

    fit = json.loads((RESULTS_DIR / "calibration.json").read_text(encoding="utf-8"))["data"]["floor"]["fit"]
    manifest = read_manifest(DEFAULT_DIR / "calibrated")
    assert "scaling-00064.npz" in manifest
    for name, entry in manifest.items():
        assert entry["generator"]["width"] == fit["value"] and entry["generator"]["h"] == 0.005, name
    assert manifest["scaling-00064.npz"]["n_contacts"] == 77
    command = f"workbench generate scaling --sizes 64,2560 --set width={fit['value']!r} --threads 1"
    assert command in (DEFAULT_DIR.parents[1] / "docs" / "datasets.md").read_text(encoding="utf-8")


def test_paper_protocol_320_sphere_datasets():
    """settled-00320 and unsettled-00320 are made at Mazhar et al. 2014 section 5.1's protocol: h = 0.0005 s
    for 4 s (8,000 steps), at most 10,000 and 10 iterations per step; about 1,000 contacts each (paper:
    1,049 and 1,050), the settled one with less kinetic energy than the poorly settled one (paper:
    0.0215 and 1.5637 J)."""
    meta = {}
    for name in ("settled", "unsettled"):
        problem = load_problem(DEFAULT_DIR / f"{name}-00320.npz")
        m = meta[name] = problem.metadata
        assert m["h"] == m["generator"]["h"] == problem.h == 0.0005 and m["steps"] == m["generator"]["steps"] == 8000
        assert m["generator"]["duration"] == 4.0 and m["n_bodies"] == m["n_bodies_in_problem"] == 320
        assert 900 <= m["n_contacts"] == problem.n_contacts <= 1200
        # the stored velocities: k = M v + h f (gravity on z; spheres have no gyroscopic torque)
        mass = problem.M.diagonal()
        v = problem.k / mass
        v[2::6] += GRAVITY * problem.h
        assert 0.5 * float(v @ (mass * v)) == pytest.approx(m["kinetic_energy"], rel=1e-5)
        speed = np.sqrt(v[0::6] ** 2 + v[1::6] ** 2 + v[2::6] ** 2)
        assert speed.max() == pytest.approx(m["max_speed"], rel=1e-5)
    assert meta["settled"]["generator"]["max_iter"] == 10000 and meta["unsettled"]["generator"]["max_iter"] == 10
    assert meta["unsettled"]["settling"]["max_iterations"] == 10
    assert meta["settled"]["kinetic_energy"] < meta["unsettled"]["kinetic_energy"]


def test_manifest_covers_the_paper_datasets():
    """The committed manifest lists the paper-protocol packings the repository carries, each with its
    h and steps; whatever is listed and not committed is remade by `workbench generate`."""
    manifest = read_manifest(DEFAULT_DIR)
    assert {"settled-00320.npz", "unsettled-00320.npz"} <= set(manifest)
    assert (DEFAULT_DIR / MANIFEST).exists()
    for name, entry in manifest.items():
        assert entry["h"] == entry["generator"]["h"] and entry["steps"] == entry["generator"]["steps"]
        if "family" in entry:   # a member of a dataset family (problems.families): FAMILY-mMM, FAMILY = PROTOCOL-NNNNN
            assert name == f"{entry['family']}-m{entry['member']:02d}.npz"
            assert entry["family"].startswith(f"{entry['protocol']}-{entry['n_bodies']:05d}")
        else:
            assert name == f"{entry['dataset']}-{entry['n_bodies']:05d}.npz"
        assert dataclasses.replace(PackingSpec(), **{k: entry["generator"][k] for k in ("n", "h", "duration")}).steps \
            == entry["steps"]


SMALL = ["--set", "n=18", "--set", "width=8.0", "--set", "duration=0.3", "--set", "h=0.005"]


def test_a_bad_checkpoint_is_one_line_and_exit_2(tmp_path, capsys):
    """A checkpoint that is not one (a truncated file) and the checkpoint of a packing with other
    parameters are each refused in one line naming the file, exit code 2, nothing written."""
    from workbench.cli import main

    params = dict(n=18, width=8.0, duration=0.3, h=0.005)
    generate_dataset("settled", tmp_path, progress=False, checkpoint_every=20, stop_after=25, **params)
    ckpt = checkpoint_path(tmp_path / "settled-00018.npz")
    assert ckpt.exists()
    capsys.readouterr()
    assert main(["generate", "settled", "--out", str(tmp_path), "--quiet", *SMALL, "--set", "tol=1e-5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"workbench: error: {ckpt} is the checkpoint of a packing with "
                                                    "other parameters")
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    assert main(["generate", "settled", "--out", str(tmp_path), "--quiet", *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a readable checkpoint" in err and "Traceback" not in err
    assert not (tmp_path / "settled-00018.npz").exists()


def test_method_parameters_pass_through_and_are_recorded(tmp_path, capsys):
    """``--param`` reaches the Method (an unknown one is one line, exit 2, naming the known ones) and
    is recorded among the packing's parameters; a packing made without it is another packing."""
    from workbench.cli import main

    assert main(["generate", "settled", "--out", str(tmp_path), "--quiet", *SMALL, "--param", "threadz=2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no parameter threadz" in err
    assert main(["generate", "settled", "--out", str(tmp_path), "--quiet", *SMALL, "--param", "outer_patience=3"]) == 0
    path = tmp_path / "settled-00018.npz"
    assert load_problem(path).metadata["generator"]["params"] == {"outer_patience": 3}
    assert read_manifest(tmp_path)[path.name]["generator"]["params"] == {"outer_patience": 3}
    capsys.readouterr()
    assert main(["generate", "settled", "--out", str(tmp_path), "--quiet", *SMALL]) == 2
    assert "made with other parameters" in capsys.readouterr().err


def test_no_warm_start_is_a_recorded_parameter_of_its_own(tmp_path):
    """PackingSpec(warm_start=False) reaches the simulation and is recorded; the default (warm-started) is
    not, so the committed packings keep their parameters and checksums; a file made one way is not
    "the same parameters" as the other."""
    from problems.generator import PackingSpec, _same_parameters, generate_dataset, simulation

    cold = PackingSpec(n=8, duration=0.01, h=0.005, warm_start=False)
    assert simulation(cold).warm_start is False and simulation(PackingSpec(n=8)).warm_start is True
    assert cold.parameters()["warm_start"] is False and "warm_start" not in PackingSpec().parameters()
    path = generate_dataset("scaling", tmp_path, progress=False, sizes=[8], duration=0.6, warm_start=False)[0]
    assert _same_parameters(path, PackingSpec(n=8, width=None, h=0.005, duration=0.6, warm_start=False))
    assert not _same_parameters(path, PackingSpec(n=8, width=None, h=0.005, duration=0.6))


def test_the_large_recipe_caps_each_step_and_still_settles(tmp_path):
    """The ``large`` recipe at 128 spheres: every step within BED_ITERATION_CAP iterations, the cap
    reached (the scaling series' steps to tol 1e-6 need more), and the packing at rest by the settled
    criterion, with about as many contacts as the tolerance-solved scaling packing of the same size."""
    from problems.generator import BED_ITERATION_CAP, DATASETS, LARGE_SPHERES, SETTLED_ENERGY

    assert DATASETS["large"][1]()[0] == PackingSpec(n=LARGE_SPHERES, width=None, h=0.005, max_iter=BED_ITERATION_CAP)
    path, = generate_dataset("large", tmp_path, progress=False, sizes=[128])
    entry = read_manifest(tmp_path)[path.name]
    settling = load_problem(path).metadata["settling"]
    assert settling["max_iterations"] == BED_ITERATION_CAP and settling["statuses"].get("max_iter", 0) > 0
    assert entry["kinetic_energy"] <= SETTLED_ENERGY * 128 * GRAVITY
    tolerance_solved = read_manifest(DEFAULT_DIR)["scaling-00128.npz"]
    assert tolerance_solved["generator"]["max_iter"] == 10000
    assert abs(entry["n_contacts"] - tolerance_solved["n_contacts"]) <= 0.05 * tolerance_solved["n_contacts"]
