"""Problem files: the reference data of ../shared/data load with the right sizes, every writer
round-trips exactly, the FCLib and Siconos readers agree, and every bad input is a one-line
FileFormatError/ProblemDataError naming the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from factories import random_problem
from workbench.errors import FileFormatError, ProblemDataError, UnsupportedError
from workbench.io import (load_problem, load_problem_native, read_fclib, read_fclib_guess, read_siconos_dat,
                          save_problem, write_fclib, write_siconos_dat)
from workbench.problem import TimeStepProblem

FCLIB = {  # file: (kind, n_contacts, n_dof or W size, M diagonal)
    "Box_Stacks-i0122-82-5.hdf5": ("global", 82, 450, True),
    "CubeH8.hdf5": ("global", 1, 162, False),
    "LMGC_GlobalFrictionContactProblem00046.hdf5": ("global", 9, 162, False),
    "Capsules-i125-1213.hdf5": ("local", 286, 858, None),
    "LMGC_100_PR_PerioBox-i00361-60-03000.hdf5": ("local", 60, 180, None),
}
DAT = {  # file: (kind, d, n_contacts, W shape or (M shape, D shape))
    "BoxesStack1-i100000-32.hdf5.dat": ("local", 3, 52, (156, 156)),
    "Capsules-i100-889.dat": ("local", 3, 276, (828, 828)),
    "Confeti-ex13-4contact-Fc3D-SBM.dat": ("local", 3, 4, (12, 12)),
    "FC3D_Example1.dat": ("local", 3, 3, (9, 9)),
    "FC3D_Example1_SBM.dat": ("local", 3, 3, (9, 9)),
    "FrictionContact3D_1c.dat": ("local", 3, 1, (3, 3)),
    "FrictionContactProblem00031.dat": ("local", 2, 11, (22, 22)),
    "GFC3D_TwoRods1.dat": ("global", 3, 3, ((54, 54), (54, 9))),
    "OneObject-i1028-138.hdf5.dat": ("local", 3, 23, (69, 69)),
}


def assert_same_matrix(A, B, what):
    assert (A is None) == (B is None), what
    if A is None:
        return
    assert A.shape == B.shape, what
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    A.sort_indices()
    B.sort_indices()
    assert np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices), what
    assert np.array_equal(A.data, B.data), what


def assert_same_vector(a, b, what):
    assert (a is None) == (b is None), what
    if a is not None:
        assert np.array_equal(a, b), what


def assert_same_problem(p: TimeStepProblem, q: TimeStepProblem):
    """Exactly the same data (matrices entry by entry, vectors bit for bit)."""
    assert (p.kind, p.d, p.n_contacts) == (q.kind, q.d, q.n_contacts)
    assert_same_vector(p.mu, q.mu, "mu")
    if p.is_global:
        for key in ("M", "D", "G"):
            assert_same_matrix(getattr(p, key), getattr(q, key), key)
        for key in ("k", "b", "b_G"):
            assert_same_vector(getattr(p, key), getattr(q, key), key)
    else:
        assert_same_matrix(p.N, q.N, "W")
        assert_same_vector(p.r, q.r, "q")


# --------------------------------------------------------------------------- the reference files
def test_fclib_files_load_with_expected_sizes(shared_data):
    for name in FCLIB:
        check_fclib_sizes(shared_data / "fclib" / name, *FCLIB[name])


def check_fclib_sizes(path, kind, n_c, n, diagonal):
    p = load_problem(path)
    assert (p.kind, p.d, p.n_contacts) == (kind, 3, n_c)
    assert p.name == path.stem
    assert p.metadata["source"] == str(path) and p.metadata["format"] == f"fclib-{kind}"
    assert p.metadata["title"]
    if kind == "global":
        assert p.M.shape == (n, n) and p.D.shape == (n, 3 * n_c)
        assert p.M_is_diagonal == diagonal
        assert abs(p.M - p.M.T).max() == 0.0
    else:
        assert p.N.shape == (n, n) == (3 * n_c, 3 * n_c)


def test_siconos_files_load_with_expected_sizes(shared_data):
    for name, (kind, d, n_c, shape) in DAT.items():
        path = shared_data / "siconos" / name
        p = load_problem(path)
        assert (p.kind, p.d, p.n_contacts) == (kind, d, n_c), name
        assert p.name == path.stem and p.metadata["format"] == "siconos-dat"
        if kind == "global":
            assert (p.M.shape, p.D.shape) == shape, name
        else:
            assert p.N.shape == shape, name


def test_dense_and_sparse_block_files_of_the_same_problem_agree(shared_data):
    dense = read_siconos_dat(shared_data / "siconos/FC3D_Example1.dat")
    block = read_siconos_dat(shared_data / "siconos/FC3D_Example1_SBM.dat")
    assert_same_problem(dense, block)


def test_small_dense_file_values(shared_data):
    """FrictionContact3D_1c.dat has blank lines between its numbers."""
    p = read_siconos_dat(shared_data / "siconos/FrictionContact3D_1c.dat")
    assert np.array_equal(p.N.toarray(), [[15, -1, -2], [-1, 14, 1], [-2, 1, 16]])
    assert np.array_equal(p.r, [-1, 2, 3]) and np.array_equal(p.mu, [0.1])


def test_lmgc_upper_triangle_mass_matrix_is_expanded(shared_data):
    path = shared_data / "fclib/CubeH8.hdf5"
    with h5py.File(path, "r") as f:
        g = f["fclib_global/M"]
        rows, cols, values = g["i"][()], g["p"][()], g["x"][()]
    assert np.all(rows <= cols)  # the file holds the upper triangle only
    T = sp.coo_matrix((values, (rows, cols)), shape=(162, 162)).toarray()
    p = read_fclib(path)
    assert "upper triangle" in p.metadata["M_storage"]
    assert np.array_equal(p.M.toarray(), T + T.T - np.diag(np.diag(T)))
    assert np.linalg.eigvalsh(p.M.toarray()).min() > 0


# --------------------------------------------------------------------------- triplet orientation
def test_fclib_triplet_orientation_on_box_stacks(shared_data):
    """Siconos-written triplets: i is the row, p the column (the fclib.h comment says the opposite)."""
    path = shared_data / "fclib/Box_Stacks-i0122-82-5.hdf5"
    with h5py.File(path, "r") as f:
        g = f["fclib_global/H"]
        m, n, nz = int(g["m"][0]), int(g["n"][0]), int(g["nz"][0])
        i, p, x = g["i"][:nz], g["p"][:nz], g["x"][:nz]
        assert g["nzmax"][0] > nz  # arrays are sized by nz, not nzmax
    assert i.max() < m and p.max() < n and i.max() >= n  # only i = row fits the 450 x 246 shape
    problem = read_fclib(path)
    assert np.array_equal(np.asarray(problem.D[i, p]).ravel(), x)
    # physical check: the translational part of each normal column is a unit vector (6 dof bodies)
    normals = problem.D.toarray()[:, 0::3].reshape(problem.n_dof // 6, 6, problem.n_contacts)
    lengths = np.linalg.norm(normals[:, :3, :], axis=1)
    touched = lengths > 0
    assert np.all(touched.sum(axis=0) >= 1)
    assert np.allclose(lengths[touched], 1.0, atol=1e-12)


def test_global_guess_identity(shared_data):
    """The stored warm start of Box_Stacks satisfies u = H^T v + w exactly; M v = H r + f does not
    hold for it (the simulator's guess is v = r = 0, and w = 0), so only the first is asserted."""
    path = shared_data / "fclib/Box_Stacks-i0122-82-5.hdf5"
    p = read_fclib(path)
    guess = read_fclib_guess(path)
    assert set(guess) == {"r", "u", "v"}
    assert guess["v"].shape == (p.n_dof,) and guess["r"].shape == guess["u"].shape == (3 * p.n_contacts,)
    assert np.allclose(p.D.T @ guess["v"] + p.b, guess["u"], rtol=0, atol=1e-12)


def test_guess_of_local_file_and_absent_guess(shared_data):
    guess = read_fclib_guess(shared_data / "fclib/Capsules-i125-1213.hdf5")
    assert set(guess) == {"r", "u"} and guess["r"].shape == (858,)
    assert read_fclib_guess(shared_data / "fclib/CubeH8.hdf5") is None


# --------------------------------------------------------------------------- round trips
#: the samples of each format (conftest.samples: written by the workbench, so they run without the data)
FCLIB_SAMPLES = ["fclib-global-3d", "fclib-global-2d", "fclib-local-3d"]
DAT_SAMPLES = ["dat-local-3d", "dat-global-3d"]


@pytest.mark.parametrize("name", FCLIB_SAMPLES)
def test_fclib_round_trip_of_a_sample_is_exact(samples, tmp_path, name):
    check_fclib_round_trip(samples[name], tmp_path)


def test_fclib_round_trip_of_every_reference_file_is_exact(shared_data, tmp_path):
    for name in FCLIB:
        (tmp_path / name).mkdir()
        check_fclib_round_trip(shared_data / "fclib" / name, tmp_path / name)


def check_fclib_round_trip(path, tmp_path):
    p = read_fclib(path)
    guess = read_fclib_guess(path)
    out = tmp_path / "copy.hdf5"
    solution = {"r": np.zeros(p.n_contact_unknowns), "u": np.ones(p.n_contact_unknowns)}
    write_fclib(p, out, solution=solution, guess=guess)
    q = read_fclib(out)
    assert_same_problem(p, q)
    assert q.metadata["title"] == p.metadata["title"]
    with h5py.File(out, "r") as f:
        root = f["fclib_global" if p.is_global else "fclib_local"]
        for key in ("M", "H") if p.is_global else ("W",):
            assert root[key]["nz"][0] == -1 and root[key]["i"].dtype == np.int32
        assert np.array_equal(f["solution/u"][()], solution["u"])
    if guess is None:
        assert read_fclib_guess(out) is None
    else:
        again = read_fclib_guess(out)
        assert set(again) == set(guess) and all(np.array_equal(again[k], guess[k]) for k in guess)


def test_fclib_writer_checks_guess_sizes_before_writing(tmp_path):
    p = random_problem(n_contacts=3)
    with pytest.raises(ProblemDataError, match="guess 1"):
        write_fclib(p, tmp_path / "g.hdf5", guess={"r": np.zeros(4)})
    assert not (tmp_path / "g.hdf5").exists()


def test_fclib_round_trip_with_bilateral_constraints(tmp_path):
    p = random_problem(n_contacts=4, n_bilateral=3, seed=3)
    write_fclib(p, tmp_path / "g.hdf5")
    assert_same_problem(p, read_fclib(tmp_path / "g.hdf5"))


@pytest.mark.parametrize("name", DAT_SAMPLES)
def test_siconos_round_trip_of_a_sample_is_exact(samples, tmp_path, name):
    check_siconos_round_trip(samples[name], tmp_path)


def test_siconos_round_trip_of_every_reference_file_is_exact(shared_data, tmp_path):
    for name in DAT:
        check_siconos_round_trip(shared_data / "siconos" / name, tmp_path)


def check_siconos_round_trip(path, tmp_path):
    p = read_siconos_dat(path)
    write_siconos_dat(p, tmp_path / "copy.dat")
    assert_same_problem(p, read_siconos_dat(tmp_path / "copy.dat"))


def test_siconos_writer_refuses_bilateral_constraints(tmp_path):
    with pytest.raises(UnsupportedError):
        write_siconos_dat(random_problem(n_bilateral=2), tmp_path / "g.dat")


@pytest.mark.parametrize("name", FCLIB_SAMPLES + DAT_SAMPLES)
def test_native_round_trip_of_a_sample_is_exact(samples, tmp_path, name):
    check_native_round_trip(samples[name], tmp_path)


def test_native_round_trip_of_reference_files_is_exact(shared_data, tmp_path):
    for path in ["fclib/Box_Stacks-i0122-82-5.hdf5", "fclib/Capsules-i125-1213.hdf5",
                 "siconos/FrictionContactProblem00031.dat", "siconos/GFC3D_TwoRods1.dat"]:
        check_native_round_trip(shared_data / path, tmp_path)


def check_native_round_trip(path, tmp_path):
    p = load_problem(path)
    save_problem(p, tmp_path / "p.npz")
    q = load_problem_native(tmp_path / "p.npz")
    assert_same_problem(p, q)
    assert (q.name, dict(q.metadata), q.h) == (p.name, dict(p.metadata), p.h)


def test_native_round_trip_keeps_step_size_and_bilateral_rows(tmp_path):
    p = random_problem(n_contacts=5, n_bilateral=2, diagonal_mass=False, seed=7)
    save_problem(p, tmp_path / "no-suffix")  # no .npz appended
    q = load_problem(tmp_path / "no-suffix")
    assert_same_problem(p, q)
    assert q.h == p.h == 0.01 and q.name == p.name


# --------------------------------------------------------------------------- the readers agree
def check_fclib_as_dat(path, tmp_path):
    p = read_fclib(path)
    write_siconos_dat(p, tmp_path / "p.dat")
    assert_same_problem(p, read_siconos_dat(tmp_path / "p.dat"))


def check_dat_as_fclib(path, tmp_path):
    p = read_siconos_dat(path)
    write_fclib(p, tmp_path / "p.hdf5")
    assert_same_problem(p, read_fclib(tmp_path / "p.hdf5"))


@pytest.mark.parametrize("name", FCLIB_SAMPLES + DAT_SAMPLES)
def test_a_sample_in_the_other_format_reads_back_the_same(samples, tmp_path, name):
    (check_fclib_as_dat if name.startswith("fclib") else check_dat_as_fclib)(samples[name], tmp_path)


def test_every_reference_file_in_the_other_format_reads_back_the_same(shared_data, tmp_path):
    for name in FCLIB:
        check_fclib_as_dat(shared_data / "fclib" / name, tmp_path)
    for name in DAT:
        check_dat_as_fclib(shared_data / "siconos" / name, tmp_path)


def test_fclib_reader_accepts_dense_datasets_csr_and_fclib_h_triplets(tmp_path):
    """Other writers: W as a plain 2-D dataset; H as triplets with p = row, i = column."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(6, 6))
    path = tmp_path / "dense.hdf5"
    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_local")
        g["spacedim"] = np.array([3], dtype=np.int32)
        g["W"] = W
        g["vectors/q"] = np.arange(6.0)
        g["vectors/mu"] = [0.5, 0.4]
    p = read_fclib(path)
    assert np.array_equal(p.N.toarray(), W) and np.array_equal(p.mu, [0.5, 0.4])

    H = sp.random(12, 6, density=0.4, random_state=1, format="coo")
    path = tmp_path / "swapped.hdf5"
    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_global")
        g["spacedim"] = np.array([3], dtype=np.int32)
        for name, A in (("M", sp.eye(12, format="coo")), ("H", H)):
            m = g.create_group(name)
            m["m"], m["n"] = np.array([A.shape[0]]), np.array([A.shape[1]])
            m["nz"], m["nzmax"] = np.array([A.nnz]), np.array([A.nnz + 5])
            m["p"], m["i"], m["x"] = A.row.astype(np.int32), A.col.astype(np.int32), A.data
        g["vectors/f"], g["vectors/w"], g["vectors/mu"] = np.ones(12), np.zeros(6), [0.3, 0.3]
    p = read_fclib(path)
    assert np.array_equal(p.D.toarray(), H.toarray())


# --------------------------------------------------------------------------- bad inputs
def _dat_tokens(samples):
    return samples["dat-local-3d"].read_text().split()


#: in the sparse-block .dat of samples["dat-local-3d"] (3 contacts, W full): the number of block 1, after
#: 8 sizes, 2 x 3 block ends, the block count 4 and nnz 9, 4 row pointers, 9 column indices, block 0's
#: number and its 9 values
_BLOCK_1 = 8 + 6 + 2 + 4 + 9 + 1 + 9


BAD = {
    "missing file": lambda d, s: d / "missing.hdf5",
    "directory": lambda d, s: _mkdir(d / "adir.dat"),
    "empty dat": lambda d, s: _write(d / "empty.dat", ""),
    "empty hdf5": lambda d, s: _write(d / "empty.hdf5", ""),
    "truncated hdf5": lambda d, s: _write_bytes(d / "cut.hdf5",
                                                s["fclib-global-3d"].read_bytes()[:1000]),
    "text named hdf5": lambda d, s: _write(d / "text.hdf5", "3 1 0 3 3"),
    "hdf5 without fclib group": lambda d, s: _h5(d / "other.hdf5", lambda f: f.create_dataset("x", data=[1.0])),
    "fclib without spacedim": lambda d, s: _h5(d / "nodim.hdf5", lambda f: f.create_group("fclib_local")),
    "fclib bad sparse indices": lambda d, s: _fclib_local(d / "badidx.hdf5", col=7),
    "fclib wrong q size": lambda d, s: _fclib_local(d / "badq.hdf5", q=np.zeros(5)),
    "fclib NaN in W": lambda d, s: _fclib_local(d / "nan.hdf5", x=np.nan),
    "fclib negative mu": lambda d, s: _fclib_local(d / "negmu.hdf5", mu=[-0.1]),
    "fclib zero contacts": lambda d, s: _fclib_local(d / "zero.hdf5", mu=[]),
    "truncated dat": lambda d, s: _write(d / "cut.dat", " ".join(_dat_tokens(s)[:60])),
    "dat missing its last numbers": lambda d, s: _write(d / "short.dat", " ".join(_dat_tokens(s)[:-3])),
    "non-numeric token": lambda d, s: _write(d / "word.dat", " ".join(["3", "1", "0", "3", "3", "abc"] + ["1"] * 13)),
    "binary garbage dat": lambda d, s: _write_bytes(d / "garbage.dat", bytes(range(256)) * 4),
    "wrong sizes dat": lambda d, s: _write(d / "sizes.dat", "3 2 0 3 3 3 3 " + "1 0 0 0 1 0 0 0 1 " + "1 2 3 0.1 0.1"),
    "bad block numbering": lambda d, s: _write(d / "blocks.dat", " ".join(
        t if n != _BLOCK_1 else "7" for n, t in enumerate(_dat_tokens(s)))),
    "NaN in dat": lambda d, s: _write(d / "nan.dat", "3 1 0 3 3 3 3 1 0 0 0 1 0 0 0 1 nan 2 3 0.1"),
    "Inf in dat": lambda d, s: _write(d / "inf.dat", "3 1 0 3 3 3 3 1 0 0 0 inf 0 0 0 1 1 2 3 0.1"),
    "negative mu dat": lambda d, s: _write(d / "negmu.dat", "3 1 0 3 3 3 3 1 0 0 0 1 0 0 0 1 1 2 3 -0.1"),
    "CSparse storage dat": lambda d, s: _write(d / "csparse.dat", "3 1 2 3 3 0 1 2 3"),
    "garbage npz": lambda d, s: _write_bytes(d / "bad.npz", b"PK\x03\x04 not really a zip"),
    "foreign npz": lambda d, s: _npz(d / "foreign.npz"),
}


def _mkdir(p):
    p.mkdir()
    return p


def _write(p, text):
    p.write_text(text)
    return p


def _write_bytes(p, data):
    p.write_bytes(data)
    return p


def _h5(p, fill):
    with h5py.File(p, "w") as f:
        fill(f)
    return p


def _npz(p):
    with open(p, "wb") as fh:
        np.savez(fh, a=np.arange(3))
    return p


def _fclib_local(p, *, col=None, q=None, x=1.0, mu=(0.3,)):
    """A 1-contact local FCLib file (W = identity, CSC) with one thing spoiled."""
    with h5py.File(p, "w") as f:
        g = f.create_group("fclib_local")
        g["spacedim"] = np.array([3], dtype=np.int32)
        w = g.create_group("W")
        w["m"], w["n"], w["nz"], w["nzmax"] = [3], [3], [-1], [3]
        w["p"] = np.array([0, 1, 2, 3], dtype=np.int32)
        w["i"] = np.array([0, 1, 2 if col is None else col], dtype=np.int32)
        w["x"] = np.array([1.0, 1.0, x])
        g["vectors/q"] = np.array([1.0, 0.0, 0.0]) if q is None else q
        g["vectors/mu"] = np.asarray(mu, dtype=float)
    return p


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_one_line_error_naming_the_file(case, tmp_path, samples):
    path = BAD[case](tmp_path, samples)
    with pytest.raises((FileFormatError, ProblemDataError)) as info:
        load_problem(path)
    message = str(info.value)
    assert path.name in message and "\n" not in message, message


def test_the_samples_load_and_the_spoiled_token_is_block_1s_number(samples):
    tokens = _dat_tokens(samples)
    assert (tokens[_BLOCK_1 - 10], tokens[_BLOCK_1]) == ("0", "1")
    for name, path in samples.items():
        p = load_problem(path)
        assert (p.kind, p.d) == (name.split("-")[1], int(name[-2])), name


def test_format_specific_readers_also_name_the_file(tmp_path):
    dat = _write(tmp_path / "text.dat", "3 1 0 3 3")
    with pytest.raises(FileFormatError, match="text.dat"):
        read_fclib(dat)
    with pytest.raises(FileFormatError, match="text.dat"):
        read_fclib_guess(dat)
    with pytest.raises(FileFormatError, match="text.dat"):
        read_siconos_dat(dat)
    with pytest.raises(FileFormatError, match="text.dat"):
        load_problem_native(dat)


# --------------------------------------------------------------------------- the whole corpus
def _declared_sizes(path) -> dict:
    """What a corpus file says of itself, read without the workbench: d, n_c and the first matrix's
    declared size (W for a local problem, M for a global one), plus the CSparse size lines."""
    if path.suffix == ".hdf5":
        with h5py.File(path, "r") as f:
            kind = "global" if "fclib_global" in f else "local"
            root = f[f"fclib_{kind}"]
            first = root["M" if kind == "global" else "W"]
            return {"kind": kind, "d": int(root["spacedim"][()].reshape(-1)[0]),
                    "n_contacts": root["vectors/mu"].shape[0],
                    "first": (int(first["m"][0]), int(first["n"][0])), "csparse": []}
    text = path.read_text(encoding="latin-1")
    words = text.split()
    csparse = [tuple(int(x) for x in line.replace("triplet:", "").split(",")[0].split("-by-"))
               + (int(line.split("nnz:")[1].split(",")[0]),)
               for line in text.splitlines() if "-by-" in line and "nnz:" in line]
    return {"d": int(words[0]), "n_contacts": int(words[1]), "first": (int(words[3]), int(words[4])),
            "csparse": csparse}


def _info(path, capsys) -> dict:
    from workbench.cli import main
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}


def test_every_corpus_file_is_read_and_info_agrees_with_its_declared_sizes(shared_data, capsys):
    files = sorted((shared_data / "fclib").glob("*.hdf5")) + sorted((shared_data / "siconos").glob("*.dat"))
    assert len(files) >= 42
    for path in files:
        declared, info = _declared_sizes(path), _info(path, capsys)
        p = load_problem(path)
        assert int(info["n_contacts"]) == p.n_contacts == declared["n_contacts"], path.name
        assert int(info["d"]) == p.d == declared["d"], path.name
        if declared.get("kind"):
            assert info["kind"] == declared["kind"], path.name
        if p.is_global:
            assert (int(info["n_dof"]),) * 2 == p.M.shape == declared["first"], path.name
            assert p.D.shape == (p.n_dof, p.d * p.n_contacts), path.name
        else:
            assert p.N.shape == declared["first"] == (p.d * p.n_contacts,) * 2, path.name
        # CSparse dumps: every matrix has the declared size, and no more entries than declared
        if declared["csparse"]:
            matrices = [p.M, p.D] if p.is_global else [p.N]
            assert [(A.shape[0], A.shape[1]) for A in matrices] == [c[:2] for c in declared["csparse"]], path.name
            assert all(A.nnz <= c[2] for A, c in zip(matrices, declared["csparse"])), path.name
            assert p.metadata["lossy"]


SICONOS_PYTHON = "/usr/bin/python3"
_SICONOS_DUMP = """
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np, scipy.sparse, scipy.sparse.coo
import siconos.numerics as N
path, out, kind = sys.argv[1:]
def coo(A):
    A = A if hasattr(A, "tocoo") else N.NM_triplet(A)
    A = scipy.sparse.coo_matrix(A)
    return A.row, A.col, A.data, np.array(A.shape)
if kind == "local":
    P = N.frictionContact_new_from_filename(path)
    r, c, x, s = coo(P.M)
    np.savez(out, r=r, c=c, x=x, s=s, q=P.q, mu=P.mu, d=P.dimension)
else:
    P = N.globalFrictionContact_new_from_filename(path)
    r, c, x, s = coo(P.M)
    hr, hc, hx, hs = coo(P.H)
    np.savez(out, r=r, c=c, x=x, s=s, hr=hr, hc=hc, hx=hx, hs=hs, q=P.q, b=P.b, mu=P.mu, d=P.dimension)
"""


def _siconos_available() -> bool:
    import subprocess
    try:
        return subprocess.run([SICONOS_PYTHON, "-c", "import siconos.numerics"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("name", ["fc2d_granularflowonwall_00667_00000.dat",   # CSparse CSC, 2D local
                                  "gfc2d_granularflowonwall_00069_00350.dat",  # CSparse triplet + CSC, global
                                  "Capsules-i100-889.dat",                     # sparse block, 3D local
                                  "GFC3D_TwoRods1.dat",                        # sparse block, global
                                  "FrictionContactProblem00031.dat"])          # 2D local
def test_siconos_reads_the_same_data(shared_data, tmp_path, name):
    """Siconos's own reader (system Python) gives the same W (or M, H), q, b and mu."""
    import subprocess
    if not _siconos_available():
        pytest.skip("Siconos (python3-siconos) not installed")
    path = shared_data / "siconos" / name
    p = load_problem(path)
    out = tmp_path / "siconos.npz"
    subprocess.run([SICONOS_PYTHON, "-c", _SICONOS_DUMP, str(path), str(out), p.kind], check=True, timeout=120)
    ref = np.load(out)
    assert int(ref["d"]) == p.d
    np.testing.assert_array_equal(ref["mu"], p.mu)
    first = sp.coo_matrix((ref["x"], (ref["r"], ref["c"])), shape=tuple(ref["s"])).tocsr()
    if p.is_global:
        H = sp.coo_matrix((ref["hx"], (ref["hr"], ref["hc"])), shape=tuple(ref["hs"])).tocsr()
        assert abs(first - p.M).max() == 0 and abs(H - p.D).max() == 0
        np.testing.assert_array_equal(ref["q"], p.k)
        np.testing.assert_array_equal(ref["b"], p.b)
    else:
        assert first.shape == p.N.shape and abs(first - p.N).max() == 0
        np.testing.assert_array_equal(ref["q"], p.r)


def _csparse_dump(A: np.ndarray, origin: int) -> str:
    """A dense matrix as Siconos's NSM_write_in_file writes it (cs_print layout, %g values)."""
    m, n = A.shape
    head = "CSparse Version 3.1.9, May 4, 2016.  Copyright (c) Timothy A. Davis, 2006-2016"
    if origin == 1:
        r, c = np.nonzero(A)
        lines = [f"triplet: {m}-by-{n}, nzmax: {r.size} nnz: {r.size}"]
        lines += [f"    {i} {j} : {A[i, j]:g}" for i, j in zip(r, c)]
    else:
        S = sp.csc_matrix(A) if origin == 2 else sp.csr_matrix(A)
        norm = np.abs(A).sum(axis=0).max()
        lines = [f"{m}-by-{n}, nzmax: {S.nnz} nnz: {S.nnz}, 1-norm: {norm:g}"]
        for j in range(S.indptr.size - 1):
            a, b = S.indptr[j], S.indptr[j + 1]
            lines.append(f"    col {j} : locations {a} to {b - 1}")
            lines += [f"      {i} : {x:g}" for i, x in zip(S.indices[a:b], S.data[a:b])]
    return "\n".join([str(origin), head] + lines)


@pytest.mark.parametrize("origin", [1, 2, 3])
def test_csparse_storage_each_origin(tmp_path, origin):
    """Storage type 2 with triplet, CSC and CSR dumps reads the matrix it holds (a non-symmetric W
    shows that rows and columns are not swapped)."""
    W = np.array([[2.0, 0.5, 0, 0], [0.25, 3, 0, 0], [0, 0, 4, -1.5], [0, 0, 0, 5]])
    text = "\n".join(["2", "2", "2", "4", "4", _csparse_dump(W, origin), "-1 0 -2 0.5", "0.3 0.7", "1"])
    path = tmp_path / "w.dat"
    path.write_text(text + "\n")
    p = read_siconos_dat(path)
    np.testing.assert_array_equal(p.N.toarray(), W)
    np.testing.assert_array_equal(p.r, [-1, 0, -2, 0.5])
    assert p.d == 2 and p.kind == "local"


def test_csparse_wrong_norm_and_wrong_count_are_format_errors(tmp_path):
    W = np.diag([2.0, 3.0])
    good = _csparse_dump(W, 2)
    for bad, what in ((good.replace("1-norm: 3", "1-norm: 30"), "1-norm"),
                      (good.replace("col 1 : locations 1 to 1", "col 1 : locations 1 to 2"), "section 1"),
                      (good.replace("CSparse Version", "CSparse-Version").replace("CSparse-", "Dense "), "CSparse")):
        path = tmp_path / "w.dat"
        path.write_text("\n".join(["2", "1", "2", "2", "2", bad, "-1 0", "0.3"]) + "\n")
        with pytest.raises(FileFormatError, match=what):
            read_siconos_dat(path)


def test_a_time_step_without_contacts_is_read_and_solve_refuses_it_in_one_line(tmp_path):
    """A global problem with no contact (free flight: v = M^-1 k) is a valid file; a contact solver
    has nothing to do with it, which solve says as bad input."""
    from workbench.solvers import solve
    path = tmp_path / "free.dat"
    path.write_text("3 0  0 2 2 2 2 1 0 0 1  0 2 0 2 0  2.5 -1\n")  # d nc M(dense 2x2) H(dense 2x0) q
    p = read_siconos_dat(path)
    assert (p.kind, p.n_contacts, p.n_dof) == ("global", 0, 2)
    np.testing.assert_array_equal(p.k, [2.5, -1])
    assert p.summary()["mu_min"] is None
    with pytest.raises(UnsupportedError, match="no contacts"):
        solve(p, "dual", "apgd")
