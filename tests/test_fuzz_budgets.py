"""Issue 35, classes 3 and 4: work is counted before it is done. Variants of each rule:

* a study's runs are counted from its declaration (groups, the product of each sweep, the problems of
  the groups above) and refused past the RUNS limit before anything is expanded; name templates and
  globs are checked before use ([z-a], a 1,100-level folder chain under ``**``, a 2 GB format width);
* compressed files are checked from their metadata against a read budget (16 bytes per byte of file
  plus 32 MiB): HDF5 gzip bombs, a dataset in one 64 MiB chunk, 70,000 one-element chunks, .npz
  entries inflating 1,000 x; valid files of another byte order or width are converted, not refused;
* the .dat reader never lists words for a file of numbers, and refuses a word of more than 64 bytes;
* the broad phase of a generator stops at 32 pairs per body (envelope = 100: every pair in contact).

The files are read by ``workbench info`` in a child process (tests/fuzz_harness.py) whose peak
resident memory must stay under 500 MB, each case within 10 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from factories import random_problem
from fuzz_files import zip_bomb
from fuzz_harness import RSS_MB, problems, run_cases
from workbench.errors import InputError
from workbench.io import load_problem, save_problem, write_fclib


# --------------------------------------------------------------------------- a study counted first
def _study(tmp: Path, groups: str, name: str = "s") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(f'[study]\nname = "s"\n{groups}\n[methods.m]\nformulation = "dual"\nsolver = "apgd"\n')
    return path


GROUP = '[[problems]]\ngenerator = "sphere_packing"\nparams = {{ n_spheres = 10 }}\nsweep = {{ seed = [{seeds}] }}\n'
TWO_METHODS = '[methods.m2]\nformulation = "dual"\nsolver = "pgs"\n'


@pytest.mark.parametrize("what, groups", [
    ("2,000 groups", '[[problems]]\nscenes = ["rolling-ball-2d"]\n' * 2_000),
    ("a sweep of 200,000", GROUP.format(seeds=", ".join(map(str, range(200_000))))),
    ("a sweep of 400 x 400 x 400", '[[problems]]\ngenerator = "sphere_packing"\nparams = { n_spheres = 10 }\n'
     "sweep = { seed = [%s], mu = [%s], radius = [%s] }\n" % ((", ".join(["1"] * 400),) * 3)),
    ("three sweeps of 400 each", GROUP.format(seeds=", ".join(map(str, range(400)))) * 3),
    ("a sweep of 600 for two methods", GROUP.format(seeds=", ".join(map(str, range(600)))) + TWO_METHODS),
])
def test_runs_are_counted_from_the_declaration_before_expanding(tmp_path, monkeypatch, what, groups):
    """The limit lowered to 1,000 runs (the rule is the same at 100,000; the test is faster)."""
    from workbench.study.spec import load_study
    monkeypatch.setenv("WORKBENCH_MAX_RUNS", "1000")
    path = _study(tmp_path, groups)
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="over the limit of 1000 runs"):
        load_study(path)
    assert time.perf_counter() - t0 < 10, what


@pytest.mark.parametrize("template", ["{n_spheres:>2000000000}", "{n_spheres:.999999999f}", "{n_spheres.__class__}",
                                      "{n_spheres[0]}", "{0}", "{}", "{", "x" * 300, "{n_spheres:{n_spheres}}",
                                      "{n_spheres!r:>300}"])
def test_name_templates_are_checked_before_they_are_filled(tmp_path, template):
    from workbench.study.spec import load_study
    quoted = template.replace("\\", "\\\\").replace('"', '\\"')
    path = _study(tmp_path, '[[problems]]\ngenerator = "sphere_packing"\nparams = { n_spheres = 10 }\n'
                            f'sweep = {{ seed = [1, 2] }}\nname = "{quoted}"\n')
    t0 = time.perf_counter()
    with pytest.raises(InputError):
        load_study(path)
    assert time.perf_counter() - t0 < 5


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A folder with a chain of 1,100 folders (deeper than Python's recursion limit) and a file at its
    end; removed from the bottom up afterwards (shutil.rmtree itself recurses, and fails on it)."""
    top = tmp_path_factory.mktemp("deep")
    path = top / "chain"
    path.mkdir()
    for _ in range(1_100):
        path = path / "a"
        path.mkdir()
    path.joinpath("deep.npz").write_bytes(b"x")
    yield top
    path.joinpath("deep.npz").unlink()
    here = os.getcwd()
    try:
        os.chdir(path)
        for _ in range(1_100):  # relative steps: no 2,000-character path resolved 1,100 times
            os.chdir("..")
            os.rmdir("a")
    finally:
        os.chdir(here)


@pytest.mark.parametrize("pattern", ["[z-a].npz", "[b-a]*/x.npz", "[", "**/[z-a]", "chain/**/*.npz", "chain/**/deep.npz"])
def test_globs_are_checked_and_walked_without_recursion(chain, pattern):
    from workbench.study.spec import load_study
    study = _study(chain, f'[[problems]]\nfiles = ["{pattern}"]\n')
    t0 = time.perf_counter()
    try:
        load_study(study)
    except InputError as exc:
        assert "\n" not in str(exc)
    assert time.perf_counter() - t0 < 10


# --------------------------------------------------------------------------- files within a budget
def _local_fclib(path: Path) -> Path:
    write_fclib(random_problem(n_contacts=4, n_bodies=3, seed=1).as_local(), path)
    return path


def _h5_bombs(folder: Path) -> dict[str, Path]:
    """FCLib files whose metadata promise far more than their size (none of them writes the data)."""
    out = {}

    def edit(name: str, change) -> None:
        path = _local_fclib(folder / f"{name}.hdf5")
        with h5py.File(path, "r+") as f:
            change(f)
        out[name] = path

    def padded(f):  # 4 MB of incompressible bytes: the file is "a few MB", as the were
        f.create_dataset("padding", data=np.random.default_rng(0).integers(0, 255, 4 << 20, dtype=np.uint8))

    def gzip_bomb(f):  # 3e7 contacts of zeros: 720 MB of q from chunks never written (fill value 0)
        padded(f)
        del f["fclib_local/vectors/q"]
        f.create_dataset("fclib_local/vectors/q", shape=(90_000_000,), chunks=(1 << 20,), compression="gzip",
                         dtype="f8")

    def one_chunk(f):  # 12 numbers in one chunk of 64 MiB
        q = f["fclib_local/vectors/q"][()]
        del f["fclib_local/vectors/q"]
        f.create_dataset("fclib_local/vectors/q", data=q, maxshape=(None,), chunks=(8 << 20,), compression="gzip")

    def many_chunks(f):  # 70,000 chunks of one number
        del f["fclib_local/vectors/mu"]
        f.create_dataset("fclib_local/vectors/mu", shape=(70_000,), chunks=(1,), dtype="f8")

    edit("gzip bomb of 3e7 contacts in 4 MB", gzip_bomb)
    edit("12 numbers in one 64 MiB chunk", one_chunk)
    edit("70,000 one-element chunks", many_chunks)
    return out


def test_hdf5_bombs_are_refused_from_their_metadata(tmp_path):
    from workbench.io.fclib import read_fclib
    for name, path in _h5_bombs(tmp_path).items():
        t0 = time.perf_counter()
        with pytest.raises(InputError, match="chunk|can hold"):
            read_fclib(path)
        assert time.perf_counter() - t0 < 5, name


def _npz_variants(folder: Path) -> tuple[Path, dict[str, Path]]:
    problem = random_problem(n_contacts=4, n_bodies=3, seed=1)
    base = folder / "base.npz"
    save_problem(problem, base)
    out = {}
    with np.load(base, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for name, convert in [("big-endian", lambda a: a.astype(a.dtype.newbyteorder(">"))),
                          ("float32 and int32", lambda a: a.astype(np.float32 if a.dtype.kind == "f" else np.int32))]:
        changed = {k: (convert(a) if a.dtype.kind in "fi" else a) for k, a in arrays.items()}
        out[name] = folder / f"{name}.npz"
        np.savez_compressed(out[name], **changed)
    return base, out


def test_valid_npz_of_other_byte_orders_and_widths_are_converted(tmp_path):
    base, variants = _npz_variants(tmp_path)
    want = load_problem(base)
    for name, path in variants.items():
        got = load_problem(path)
        tol = 1e-6 if "float32" in name else 0
        np.testing.assert_allclose(got.r if got.r is not None else got.k, want.r if want.r is not None else want.k,
                                   rtol=tol, err_msg=name)
        np.testing.assert_allclose(got.mu, want.mu, rtol=tol, err_msg=name)


def test_sphere_pairs_stop_at_their_bound():
    from problems.broadphase import MAX_PAIRS_PER_BODY, sphere_pairs
    x = np.random.default_rng(0).random((20_000, 3))
    r = np.full(20_000, 0.01)
    sphere_pairs(x[:10], r[:10], 0.0)  # compiled before the clock
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=f"at most {MAX_PAIRS_PER_BODY} per body"):
        sphere_pairs(x, r, 100.0)
    assert time.perf_counter() - t0 < 5
    i, j, _ = sphere_pairs(x, r, 0.0)  # a real packing's envelope: found, not refused
    assert len(i) == len(j) < MAX_PAIRS_PER_BODY * 20_000


def test_files_within_the_memory_budget_in_a_child(tmp_path):
    """Every budget case read by ``workbench info`` in a child: exit 2 with one line, or 0, in 10 s and
    under 500 MB resident."""
    cases = [{"id": name, "argv": ["info", str(path)]} for name, path in _h5_bombs(tmp_path).items()]
    base = tmp_path / "base.npz"
    save_problem(random_problem(n_contacts=4, n_bodies=3, seed=1).as_local(), base)
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(zip_bomb(base, 90_000_000))  # 720 MB from under a megabyte
    cases.append({"id": f"npz of {bomb.stat().st_size // 1000} kB inflating to 720 MB", "argv": ["info", str(bomb)]})
    word = tmp_path / "word.dat"
    word.write_bytes(b"1 " * 10 + b"7" * (8 << 20))
    cases.append({"id": "a .dat of one 8 MB word", "argv": ["info", str(word)]})
    zeros = tmp_path / "zeros.dat"
    zeros.write_bytes(b"0 " * (2 << 20))  # parsed at 8 bytes per number (a list of words took 20 per byte)
    cases.append({"id": "a .dat of 4 MB of zeros", "argv": ["info", str(zeros)]})
    cases.append({"id": "a generator with envelope 100", "argv": [
        "solve", "generator:sphere_packing", "--set", "n_spheres=20000", "--set", "envelope=100", "-f", "dual",
        "-s", "apgd"]})
    outcomes, peak = run_cases(cases, workers=1)
    bad = {k: found for k, o in outcomes.items() if (found := problems(o))}
    assert not bad, bad
    for case in cases:
        assert outcomes[case["id"]]["code"] == 2, (case["id"], outcomes[case["id"]]["stderr"])
    assert peak < RSS_MB
