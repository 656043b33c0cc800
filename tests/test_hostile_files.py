"""One regression test per kind of hostile problem file that issue 24 found accepted, crashing or
reading other files (tests/test_fuzz_files.py derives hundreds more). Each hostile file is read
through ``python -m workbench.cli info`` under the default limits and must give exit code 2 and one
line naming the file and the fault; the cases that once crashed or blew up also run under a time
and memory watch. The files are made in tmp_path from small problems the workbench writes itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from factories import random_problem
from fuzz_files import plugin_filtered, zip_bomb
from measured import run_measured
from workbench.cli import main
from workbench.errors import InputError, ProblemDataError
from workbench.io import load_problem, save_problem, write_fclib
from workbench.problem import TimeStepProblem

ROOT = Path(__file__).resolve().parents[1]


def _cli(*argv: str, env: dict | None = None, timeout: float = 120) -> dict:
    """Run the CLI; exit code, stderr, peak RSS [MB]."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    # the command's own peak RSS, not the pytest image it was forked from (tests/measured.py)
    out = run_measured([sys.executable, "-m", "workbench.cli", *argv], ROOT, full_env, timeout)
    if out["hang"]:
        pytest.fail(f"workbench {' '.join(argv)} still running after {timeout} s")
    return out


def _refused(path: Path, *words: str, env: dict | None = None) -> str:
    """Run ``workbench info PATH`` in this process (the real CLI code; the cases that could crash or
    hang use :func:`_cli`) and check it refuses the file with one line holding ``words``."""
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        for key, value in (env or {}).items():
            mp.setenv(key, value)
        code = main(["info", str(path)])
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1, err.getvalue()
    assert lines[0].startswith("workbench: error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def local_problem() -> TimeStepProblem:
    return random_problem(n_contacts=4, n_bodies=3, seed=7).as_local()


@pytest.fixture
def local_h5(tmp_path, local_problem) -> Path:
    path = tmp_path / "local.hdf5"
    write_fclib(local_problem, path)
    return path


@pytest.fixture
def local_npz(tmp_path, local_problem) -> Path:
    path = tmp_path / "local.npz"
    save_problem(local_problem, path)
    return path


def _npz_with(source: Path, out: Path, **updates) -> Path:
    with np.load(source, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(updates)
    np.savez_compressed(out, **arrays)
    return out


# --------------------------------------------------------------------------- sparse structure
def test_npz_with_a_non_monotone_indptr_is_refused_before_scipy_sorts_it(local_npz, tmp_path):
    """The .npz that reached scipy's csr_sort_indices and corrupted the heap (SIGABRT)."""
    with np.load(local_npz) as z:
        indptr = z["W_indptr"].copy()
    indptr[1], indptr[-2] = indptr[-2], indptr[1]
    bad = _npz_with(local_npz, tmp_path / "indptr.npz", W_indptr=indptr)
    k = next(k for k in range(1, indptr.size) if indptr[k] < indptr[k - 1])   # the first fall
    out = _cli("info", str(bad))
    assert out["code"] == 2 and out["stderr"].strip() == (
        f"workbench: error: {bad}: W: sparse pointers decrease at position {k} ({indptr[k - 1]} then {indptr[k]})"), \
        out["stderr"]


def test_a_broken_scipy_matrix_given_to_the_api_is_refused_before_scipy_converts_it():
    """The same fault through the Python API: a csr_matrix whose indptr was altered after it was built.
    Run in a child process: if the check were missing, scipy could corrupt the heap of the test run."""
    code = """
import numpy as np, scipy.sparse as sp
from workbench.cli import main
from workbench.errors import InputError, ProblemDataError
from workbench.problem import TimeStepProblem
W = sp.csr_matrix(np.eye(6) + np.diag(np.ones(5), 1))
W.indptr[1], W.indptr[4] = W.indptr[4], W.indptr[1]
try:
    TimeStepProblem(W=W, q=np.zeros(6), mu=[0.3, 0.3])
except ProblemDataError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert out.returncode == 0 and out.stdout.startswith("W: sparse pointers decrease"), out.stderr


def test_indices_outside_the_matrix_are_refused(local_npz, tmp_path):
    with np.load(local_npz) as z:
        indices = z["W_indices"] + 10**6
    _refused(_npz_with(local_npz, tmp_path / "idx.npz", W_indices=indices), "outside [0, 12)")


def test_sparse_checks_accept_every_valid_layout():
    """The check passes the matrices scipy itself builds: CSR, CSC, COO, BSR, empty, with duplicates."""
    A = sp.random(9, 9, density=0.3, random_state=1) + sp.eye(9)
    for form in (A.tocsr(), A.tocsc(), A.tocoo(), A.tobsr(blocksize=(3, 3)), sp.csr_matrix((9, 9))):
        p = TimeStepProblem(W=form, q=np.zeros(9), mu=[0.1] * 3)
        assert abs(p.N - sp.csr_matrix(form)).sum() == 0
    dup = sp.coo_matrix(([1.0, 2.0], ([0, 0], [0, 0])), shape=(3, 3))
    assert TimeStepProblem(W=dup, q=np.zeros(3), mu=[0.1]).N[0, 0] == 3.0


# --------------------------------------------------------------------------- HDF5: other files
def test_external_storage_dataset_is_refused_and_its_bytes_never_read(local_h5, tmp_path):
    """The FCLib file whose q was an external-storage dataset over a local file: read as q (exit 0)."""
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.full(12, 42.0).tobytes())
    with h5py.File(local_h5, "r+") as f:
        del f["fclib_local/vectors/q"]
        f.create_dataset("fclib_local/vectors/q", shape=(12,), dtype="f8", external=[(str(secret), 0, 96)])
    line = _refused(local_h5, "/fclib_local/vectors/q keeps its data in an external file")
    assert str(local_h5) in line


def test_external_link_is_refused(local_h5, tmp_path):
    other = tmp_path / "other.hdf5"
    with h5py.File(other, "w") as g:
        g.create_dataset("mu", data=np.full(4, 0.9))
    with h5py.File(local_h5, "r+") as f:
        del f["fclib_local/vectors/mu"]
        f["fclib_local/vectors/mu"] = h5py.ExternalLink(str(other), "mu")
    _refused(local_h5, "/fclib_local/vectors/mu is an external link")


def test_soft_link_is_refused(local_h5):
    with h5py.File(local_h5, "r+") as f:
        f.move("fclib_local/W", "elsewhere")
        f["fclib_local/W"] = h5py.SoftLink("/elsewhere")
    _refused(local_h5, "/fclib_local/W is a soft link")


def test_virtual_dataset_is_refused(local_h5, tmp_path):
    source = tmp_path / "source.hdf5"
    with h5py.File(source, "w") as g:
        g.create_dataset("x", data=np.arange(12.0))
    layout = h5py.VirtualLayout(shape=(12,), dtype="f8")
    layout[:] = h5py.VirtualSource(str(source), "x", shape=(12,))
    with h5py.File(local_h5, "r+") as f:
        del f["fclib_local/vectors/q"]
        f.create_virtual_dataset("fclib_local/vectors/q", layout)
    _refused(local_h5, "/fclib_local/vectors/q is a virtual dataset")


def test_dataset_needing_a_filter_plugin_is_refused(local_h5):
    """A filter the library lacks makes HDF5 search its plugin folder and load a shared library."""
    with h5py.File(local_h5, "r+") as f:
        plugin_filtered(f, "fclib_local/vectors/q")
    _refused(local_h5, "/fclib_local/vectors/q needs the HDF5 filter plugin 32004")


# --------------------------------------------------------------------------- sizes
def test_zip_bomb_is_refused_from_its_header_without_inflating(local_npz, tmp_path):
    """A .npz whose mu inflates to 2.4 GB: refused from the zip directory and the .npy header, in
    little memory (the old reader inflated it)."""
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(zip_bomb(local_npz, 300_000_000))
    assert bomb.stat().st_size < 5_000_000
    out = _cli("info", str(bomb))
    assert out["code"] == 2 and "entry 'mu' declares 300,000,000 entries, more than the limit of " \
        "100,000,000 (set WORKBENCH_MAX_ENTRIES to raise it)" in out["stderr"], out["stderr"]
    assert out["rss_mb"] < 500


def test_huge_declared_contact_count_names_the_limit_and_how_to_raise_it(tmp_path):
    dat = tmp_path / "huge.dat"
    dat.write_text("3 1000000000 0 3 3 3 3 1 0 0 0 1 0 0 0 1 1 2 3 0.1\n")
    _refused(dat, "nc declares 1,000,000,000 entries, more than the limit of 100,000,000",
             "set WORKBENCH_MAX_ENTRIES to raise it")
    # raised, the limit no longer speaks; the file's own numbers refuse the count
    line = _refused(dat, "nc = 1e+09 must be in", env={"WORKBENCH_MAX_ENTRIES": "2000000000"})
    assert "WORKBENCH_MAX_ENTRIES" not in line
    _refused(dat, "WORKBENCH_MAX_ENTRIES: expected a positive whole number, got 'lots'",
             env={"WORKBENCH_MAX_ENTRIES": "lots"})


def test_huge_declared_sizes_in_hdf5_and_npz_are_refused_before_allocation(local_h5, local_npz, tmp_path):
    with h5py.File(local_h5, "r+") as f:
        for key in ("m", "n"):
            del f[f"fclib_local/W/{key}"]
            f[f"fclib_local/W/{key}"] = np.array([10**12])
    _refused(local_h5, "declares 1,000,000,000,000 entries", "WORKBENCH_MAX_ENTRIES")
    _refused(_npz_with(local_npz, tmp_path / "shape.npz", W_shape=np.array([10**12, 10**12])),
             "W_shape declares 1,000,000,000,000 entries")


def test_text_file_above_the_size_limit_is_refused_before_it_is_read(tmp_path):
    dat = tmp_path / "big.dat"
    with open(dat, "wb") as fh:
        fh.truncate(3_000_000)   # sparse: no disk used
    _refused(dat, "more than the limit of 1,000,000", "set WORKBENCH_MAX_TEXT_MB to raise it",
             env={"WORKBENCH_MAX_TEXT_MB": "1"})


# --------------------------------------------------------------------------- values
def test_complex_values_are_refused_not_truncated(local_h5, local_npz, tmp_path):
    with np.load(local_npz) as z:
        data, mu = z["W_data"], z["mu"]
    _refused(_npz_with(local_npz, tmp_path / "cW.npz", W_data=data * (1 + 1j)), "entry 'W_data' has complex values")
    _refused(_npz_with(local_npz, tmp_path / "cmu.npz", mu=mu + 0.5j), "entry 'mu' has complex values")
    with h5py.File(local_h5, "r+") as f:
        x = f["fclib_local/W/x"][()]
        del f["fclib_local/W/x"]
        f["fclib_local/W/x"] = x + 1j
    _refused(local_h5, "/fclib_local/W/x has complex values")
    with pytest.raises(ProblemDataError, match="complex"):
        TimeStepProblem(W=sp.eye(3, dtype=complex), q=np.zeros(3), mu=[0.1])
    with pytest.raises(ProblemDataError, match="mu has complex values"):
        TimeStepProblem(W=sp.eye(3), q=np.zeros(3), mu=[0.1 + 0j])


def test_two_dimensional_mu_is_refused(local_h5, local_npz, tmp_path):
    with np.load(local_npz) as z:
        mu = z["mu"]
    _refused(_npz_with(local_npz, tmp_path / "mu2.npz", mu=mu.reshape(-1, 1)), "entry 'mu' has shape (4, 1)")
    with h5py.File(local_h5, "r+") as f:
        del f["fclib_local/vectors/mu"]
        f["fclib_local/vectors/mu"] = np.repeat(mu.reshape(-1, 1), 2, axis=1)
    _refused(local_h5, "/fclib_local/vectors/mu must be a vector (1-D), got shape (4, 2)")
    with pytest.raises(ProblemDataError, match=r"mu must be a vector \(1-D\), got shape \(1, 1\)"):
        TimeStepProblem(W=sp.eye(3), q=np.zeros(3), mu=[[0.1]])


def test_pickles_and_deep_metadata_are_refused(local_npz, tmp_path):
    with np.load(local_npz) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["mu"] = np.array([0.3, None, 0.3, 0.3], dtype=object)
    np.savez(tmp_path / "pickle.npz", **arrays)
    _refused(tmp_path / "pickle.npz", "entry 'mu' holds Python objects")
    deep = _npz_with(local_npz, tmp_path / "deep.npz", metadata=np.array("[" * 100_000 + "]" * 100_000))
    _refused(deep, "metadata nests too deeply")


# --------------------------------------------------------------------------- not files
def test_fifo_named_as_a_problem_file_is_refused_without_blocking(tmp_path):
    """Opening a FIFO blocks until a writer comes: the readers must refuse it without opening it
    (the CLI once, each suffix's reader in a thread that must finish)."""
    fifos = []
    for suffix in (".dat", ".hdf5", ".npz", ""):
        fifos.append(tmp_path / f"pipe{suffix}")
        os.mkfifo(fifos[-1])
    out = _cli("info", str(fifos[0]), timeout=60)
    line = out["stderr"].strip()
    assert out["code"] == 2 and "\n" not in line and line.startswith(f"workbench: error: {fifos[0]}: ")
    assert "not a regular file" in line
    errors: dict[Path, str] = {}

    def read_all() -> None:
        for fifo in fifos:
            try:
                load_problem(fifo)
            except InputError as exc:
                errors[fifo] = str(exc)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "a reader blocked on a FIFO"
    assert errors == {fifo: f"{fifo}: is not a regular file" for fifo in fifos}


@pytest.mark.parametrize("word", ["4.4_35920e-01", "4_4.0", "1e1_0", "_1.0", "1.0_", "1__0", "0x1p-2"])
@pytest.mark.parametrize("where", ["value", "count"])
def test_a_number_with_an_underscore_or_hex_is_not_read_from_a_dat_file(tmp_path, word, where):
    """Issue 45, class 7: Python's float() reads '2_0.0' as 20; the file readers read numbers through
    workbench.numbers.plain_float, which takes none with an underscore, so the file is refused in one
    line naming the place - never read as another number."""
    from conftest import SHARED_DATA
    if SHARED_DATA is None:
        pytest.skip("no shared data")
    original = (SHARED_DATA / "siconos" / "FrictionContactProblem00031.dat").read_text()
    lines = original.split("\n")
    target = next(i for i, line in enumerate(lines) if ("." in line) == (where == "value") and line.strip())
    if where == "count":
        target = 1                                  # the header's second count (11)
        word = word.replace("4.4_35920e-01", "1_1").replace("4_4.0", "1_1")
    lines[target] = word
    path = tmp_path / "p.dat"
    path.write_text("\n".join(lines))
    with pytest.raises(InputError) as e:
        load_problem(path)
    assert "\n" not in str(e.value)
