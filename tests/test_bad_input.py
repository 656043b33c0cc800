"""The bad-input corpus: malformed problem files, study files and command-line values, each run
through the command line as a user would. Every one must end with exit code 2 and exactly one line
on stderr, no traceback, within 2 s of CPU time and 500 MB of memory (measured on the child
process: its rusage CPU time and peak RSS; CPU time rather than wall time, so that a loaded
machine does not make the check flaky; 3 s for the cases whose message must list cvxpy's
installed solvers, which takes importing cvxpy). The CPU bounds are for the 2-core Xeon CI machine
and scale with the machine's speed: the CPU time of importing numpy and scipy (SPEED_REFERENCE)
is measured first, and a machine slower than REFERENCE_CPU there gets proportionally more.

The bad files are made in tmp_path from the shared reference problems (never committed copies);
the cases that need the reference data are skipped without it. The subprocesses run one per core
so the module takes seconds, not minutes.
"""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import h5py
import numpy as np
import pytest

from measured import run_measured

ROOT = Path(__file__).resolve().parents[1]
CPU_SECONDS = 2.0
#: cases whose one line must name every solver the study could have meant, cvxpy's installed conic
#: solvers among them: that takes importing cvxpy, by itself 1.4-2.1 s of CPU on the 2-core CI machine
CPU_SECONDS_NAMING_CVXPY_SOLVERS = 3.0
NAMES_CVXPY_SOLVERS = ("study unknown solver", "unknown solver")
MAX_RSS_MB = 500.0
#: the machine-speed reference: the CPU seconds of this import, the least of two runs (0.54 s on the
#: 2-core Xeon CI machine, measured at load 12 on 2026-11-28: REFERENCE_CPU)
SPEED_REFERENCE = "import numpy, scipy.sparse, scipy.optimize"
REFERENCE_CPU = 0.54

LOCAL_H5 = "fclib/Capsules-i125-1213.hdf5"
GLOBAL_H5 = "fclib/Box_Stacks-i0122-82-5.hdf5"
SBM_DAT = "siconos/FC3D_Example1_SBM.dat"
DAT_2D = "siconos/FrictionContactProblem00031.dat"
CSPARSE_DAT = "siconos/fc2d_granularflowonwall_00667_00000.dat"
GLOBAL_DAT = "siconos/GFC3D_TwoRods1.dat"


# --------------------------------------------------------------------------- file makers
def _bytes(src: Path) -> bytes:
    return src.read_bytes()


def _truncated(fraction: float):
    def make(tmp: Path, data: Path) -> list[str]:
        raw = _bytes(data / LOCAL_H5)
        out = tmp / f"cut{fraction}.hdf5"
        out.write_bytes(raw[:max(8, int(len(raw) * fraction))])
        return ["info", str(out)]
    return make


def _corrupted(signature: bytes, nth: int):
    """Overwrite the nth HDF5 metadata node with that signature (B-tree, heap, symbol table)."""
    def make(tmp: Path, data: Path) -> list[str]:
        raw = bytearray(_bytes(data / LOCAL_H5))
        at = [m.start() for m in re.finditer(re.escape(signature), bytes(raw))][nth]
        raw[at:at + 48] = b"\xa5" * 48
        out = tmp / f"corrupt-{signature.decode()}-{nth}.hdf5"
        out.write_bytes(bytes(raw))
        return ["info", str(out)]
    return make


def _edited_h5(source: str, edit: Callable[[h5py.File], None], name: str):
    """A copy of a corpus file with ``edit`` applied through h5py."""
    def make(tmp: Path, data: Path) -> list[str]:
        out = tmp / f"{name}.hdf5"
        out.write_bytes(_bytes(data / source))
        with h5py.File(out, "r+") as f:
            edit(f)
        return ["info", str(out)]
    return make


def _replace(f: h5py.File, path: str, value, **kwargs) -> None:
    del f[path]
    f.create_dataset(path, data=value, **kwargs)


def _scaled(f: h5py.File, path: str, index: int, value: float) -> None:
    a = f[path][()].astype(float)
    a.reshape(-1)[index] = value
    _replace(f, path, a)


def _huge_vector(f: h5py.File) -> None:
    del f["fclib_local/vectors/mu"]
    f.create_dataset("fclib_local/vectors/mu", shape=(10**12,), dtype="f8", chunks=(1024,))


def _huge_sparse(f: h5py.File) -> None:
    for key, value in (("m", 10**12), ("n", 10**12), ("nz", 0)):
        _replace(f, f"fclib_local/W/{key}", np.array([value], dtype=np.int64))


def _dense_3d(f: h5py.File) -> None:
    del f["fclib_local/W"]
    f.create_dataset("fclib_local/W", data=np.zeros((2, 3, 4)))


def _dat(source: str, edit: Callable[[list[str]], list[str]], name: str, encoding_tail: bytes = b""):
    """A corpus .dat file with its whitespace-separated words edited."""
    def make(tmp: Path, data: Path) -> list[str]:
        words = _bytes(data / source).decode("latin-1").split()
        out = tmp / f"{name}.dat"
        out.write_bytes(" ".join(edit(words)).encode("latin-1") + encoding_tail)
        return ["info", str(out)]
    return make


def _set(index: int, value: str):
    def edit(words: list[str]) -> list[str]:
        words = list(words)
        words[index] = value
        return words
    return edit


def _text_line(pattern: str, replacement: str, name: str):
    """A CSparse .dat file with one textual change."""
    def make(tmp: Path, data: Path) -> list[str]:
        text = _bytes(data / CSPARSE_DAT).decode("latin-1")
        assert re.search(pattern, text)
        out = tmp / f"{name}.dat"
        out.write_text(re.sub(pattern, replacement, text, count=1), encoding="latin-1")
        return ["info", str(out)]
    return make


def _raw(name: str, content: bytes):
    def make(tmp: Path, data: Path) -> list[str]:
        out = tmp / name
        out.write_bytes(content)
        return ["info", str(out)]
    return make


def _directory(tmp: Path, data: Path) -> list[str]:
    (tmp / "adir.hdf5").mkdir()
    return ["info", str(tmp / "adir.hdf5")]


def _symlink_loop(tmp: Path, data: Path) -> list[str]:
    os.symlink(tmp / "loop-b.dat", tmp / "loop-a.dat")
    os.symlink(tmp / "loop-a.dat", tmp / "loop-b.dat")
    return ["info", str(tmp / "loop-a.dat")]


def _study(text: str, name: str, raw: bytes | None = None):
    def make(tmp: Path, data: Path) -> list[str]:
        out = tmp / f"{name}.toml"
        out.write_bytes(raw if raw is not None else text.encode())
        return ["run", str(out), "--out", str(tmp / f"results-{name}"), "--no-report", "--no-progress"]
    return make


_GOOD_STUDY = """[study]
name = "bad"
time_limit = 5
[[problems]]
scenes = ["rolling-ball-2d"]
[methods.a]
formulation = "dual"
solver = "apgd"
"""


def _cli(*argv: str):
    def make(tmp: Path, data: Path) -> list[str]:
        return [a.replace("{data}", str(data)) for a in argv]
    return make


SCENE = "scene:rolling-ball-2d"

#: name -> (needs the reference data, maker of the argv)
CASES: dict[str, tuple[bool, Callable[[Path, Path], list[str]]]] = {
    # HDF5: truncated, corrupted
    "hdf5 truncated to its signature": (True, _truncated(0.0)),
    "hdf5 truncated at 10%": (True, _truncated(0.1)),
    "hdf5 truncated at 50%": (True, _truncated(0.5)),
    "hdf5 truncated at 90%": (True, _truncated(0.9)),
    "hdf5 truncated by one byte": (True, _truncated(1 - 1e-6)),
    "hdf5 corrupted root B-tree": (True, _corrupted(b"TREE", 0)),
    "hdf5 corrupted local heap": (True, _corrupted(b"HEAP", 1)),
    "hdf5 corrupted symbol table": (True, _corrupted(b"SNOD", 2)),
    "hdf5 corrupted data B-tree": (True, _corrupted(b"TREE", 3)),
    # HDF5: missing groups, wrong dtypes and shapes
    "hdf5 no fclib group": (True, _edited_h5(LOCAL_H5, lambda f: f.move("fclib_local", "other"), "nogroup")),
    "hdf5 missing W": (True, _edited_h5(LOCAL_H5, lambda f: f.__delitem__("fclib_local/W"), "noW")),
    "hdf5 missing vectors": (True, _edited_h5(LOCAL_H5, lambda f: f.__delitem__("fclib_local/vectors"), "novec")),
    "hdf5 missing mu": (True, _edited_h5(LOCAL_H5, lambda f: f.__delitem__("fclib_local/vectors/mu"), "nomu")),
    "hdf5 global missing H": (True, _edited_h5(GLOBAL_H5, lambda f: f.__delitem__("fclib_global/H"), "noH")),
    "hdf5 mu as strings": (True, _edited_h5(
        LOCAL_H5, lambda f: _replace(f, "fclib_local/vectors/mu", np.array([b"a"] * 286)), "strmu")),
    "hdf5 fractional pointers": (True, _edited_h5(
        LOCAL_H5, lambda f: _scaled(f, "fclib_local/W/p", 1, 0.5), "fracp")),
    "hdf5 spacedim 4": (True, _edited_h5(
        LOCAL_H5, lambda f: _replace(f, "fclib_local/spacedim", np.array([4])), "dim4")),
    "hdf5 q too short": (True, _edited_h5(
        LOCAL_H5, lambda f: _replace(f, "fclib_local/vectors/q", np.zeros(10)), "shortq")),
    "hdf5 W 3-D dataset": (True, _edited_h5(LOCAL_H5, _dense_3d, "W3d")),
    "hdf5 global H wrong columns": (True, _edited_h5(
        GLOBAL_H5, lambda f: _replace(f, "fclib_global/vectors/w", np.zeros(7)), "shortw")),
    # HDF5: NaN / Inf / bad mu
    "hdf5 NaN in q": (True, _edited_h5(LOCAL_H5, lambda f: _scaled(f, "fclib_local/vectors/q", 5, np.nan), "nanq")),
    "hdf5 Inf in W": (True, _edited_h5(LOCAL_H5, lambda f: _scaled(f, "fclib_local/W/x", 3, np.inf), "infW")),
    "hdf5 NaN in M": (True, _edited_h5(GLOBAL_H5, lambda f: _scaled(f, "fclib_global/M/x", 0, np.nan), "nanM")),
    "hdf5 NaN mu": (True, _edited_h5(LOCAL_H5, lambda f: _scaled(f, "fclib_local/vectors/mu", 0, np.nan), "nanmu")),
    "hdf5 negative mu": (True, _edited_h5(LOCAL_H5, lambda f: _scaled(f, "fclib_local/vectors/mu", 7, -0.3), "negmu")),
    # HDF5: absurd declared sizes (must fail before allocating)
    "hdf5 mu of 10^12 entries": (True, _edited_h5(LOCAL_H5, _huge_vector, "hugemu")),
    "hdf5 W of 10^12 x 10^12": (True, _edited_h5(LOCAL_H5, _huge_sparse, "hugeW")),
    # Siconos .dat
    "dat truncated": (True, _dat(SBM_DAT, lambda w: w[:len(w) // 2], "cut")),
    "dat extra numbers": (True, _dat(SBM_DAT, lambda w: w + ["1.5", "2.5", "3.5"], "extra")),
    "dat word among numbers": (True, _dat(SBM_DAT, _set(20, "abc"), "word")),
    "dat wrong contact count": (True, _dat(SBM_DAT, _set(1, "4"), "count")),
    "dat 2D file read as 3D": (True, _dat(DAT_2D, _set(0, "3"), "as3d")),
    "dat dimension 7": (True, _dat(SBM_DAT, _set(0, "7"), "dim7")),
    "dat size 10^12": (True, _dat(SBM_DAT, lambda w: w[:3] + ["1000000000000", "1000000000000"] + w[5:], "huge")),
    # FC3D_Example1_SBM.dat ends with q (9 numbers), mu (3 numbers) and the isComplete flag
    "dat NaN in q": (True, _dat(SBM_DAT, lambda w: w[:-6] + ["nan"] + w[-5:], "nanq")),
    "dat Inf in q": (True, _dat(SBM_DAT, lambda w: w[:-10] + ["-inf"] + w[-9:], "infq")),
    "dat Inf in W": (True, _dat(SBM_DAT, lambda w: w[:-14] + ["inf"] + w[-13:], "infW")),
    "dat negative mu": (True, _dat(SBM_DAT, lambda w: w[:-2] + ["-0.5"] + w[-1:], "negmu")),
    "dat NaN mu": (True, _dat(SBM_DAT, lambda w: w[:-3] + ["NaN"] + w[-2:], "nanmu")),
    "dat global M size off by one": (True, _dat(GLOBAL_DAT, _set(3, "55"), "gsize")),
    "dat non-UTF-8 bytes": (True, _dat(SBM_DAT, lambda w: w, "latin", encoding_tail=b" \xff\xfe\x80 1")),
    "dat CSparse header missing": (True, _text_line(r"CSparse Version", "Sparse Version", "noheader")),
    "dat CSparse wrong entry count": (True, _text_line(r"nnz: 3822", "nnz: 3823", "nnz")),
    "dat CSparse wrong 1-norm": (True, _text_line(r"1-norm: 7152.83", "1-norm: 7100", "norm")),
    "dat CSparse row out of range": (True, _text_line(r"\n      649 : -454.43", "\n      99999 : -454.43", "row")),
    # any path
    "empty file": (False, _raw("empty.dat", b"")),
    "whitespace only": (False, _raw("blank.dat", b"  \n\t \n")),
    "binary garbage hdf5": (False, _raw("garbage.hdf5", os.urandom(4096))),
    "hdf5 signature then garbage": (False, _raw("sig.h5", b"\x89HDF\r\n\x1a\n" + b"\x00" * 200)),
    "garbage npz": (False, _raw("bad.npz", b"PK\x03\x04" + b"\x00" * 100)),
    "non-UTF-8 text": (False, _raw("latin.dat", "3 1 é ü".encode("latin-1") + b"\xff")),
    "directory": (False, _directory),
    "symlink loop": (False, _symlink_loop),
    "missing file": (False, _cli("info", "/nonexistent/problem.hdf5")),
    "unknown shared file": (False, _cli("info", "shared:fclib/nothing.hdf5")),
    "unknown scene": (False, _cli("info", "scene:no-such-scene")),
    # study files
    "study not TOML": (False, _study("[study\nname = ", "syntax")),
    "study unknown key": (False, _study(_GOOD_STUDY.replace("time_limit", "time_limt"), "key")),
    "study unknown solver": (False, _study(_GOOD_STUDY.replace('"apgd"', '"nosuch"'), "solver")),
    "study negative time limit": (False, _study(_GOOD_STUDY.replace("= 5", "= -5"), "limit")),
    "study missing files": (False, _study(_GOOD_STUDY.replace('scenes = ["rolling-ball-2d"]',
                                                              'files = ["nothing-*.hdf5"]'), "files")),
    "study no methods": (False, _study(_GOOD_STUDY.split("[methods.a]")[0], "nomethods")),
    "study non-UTF-8": (False, _study("", "latin", raw=b"[study]\nname = \"\xff\xfe\"\n")),
    "study is a directory": (False, lambda tmp, data: (tmp / "sdir.toml").mkdir() or
                             ["run", str(tmp / "sdir.toml"), "--no-report"]),
    # command-line values
    "negative time limit": (False, _cli("solve", SCENE, "-f", "dual", "-s", "apgd", "--time-limit", "-1")),
    "NaN tolerance": (False, _cli("solve", SCENE, "-f", "dual", "-s", "apgd", "--tol", "nan")),
    "zero max-iter": (False, _cli("solve", SCENE, "-f", "dual", "-s", "apgd", "--max-iter", "0")),
    "text max-iter": (False, _cli("solve", SCENE, "-f", "dual", "-s", "apgd", "--max-iter", "many")),
    "unknown formulation": (False, _cli("solve", SCENE, "-f", "nosuch", "-s", "apgd")),
    "unknown solver": (False, _cli("solve", SCENE, "-f", "dual", "-s", "nosuch")),
    "solver that cannot take the formulation": (False, _cli("solve", SCENE, "-f", "ncp", "-s", "clarabel")),
    "param without value": (False, _cli("solve", SCENE, "-f", "dual", "-s", "apgd", "--param", "novalue")),
    "unknown command": (False, _cli("frobnicate")),
    "missing argument": (False, _cli("solve", SCENE)),
}


# --------------------------------------------------------------------------- running them
def _run(argv: list[str], cwd: Path) -> dict:
    """Run the CLI; exit code, stderr, CPU seconds and peak RSS [MB] of the child."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # the command's own CPU time and peak RSS, not the pytest image it was forked from (tests/measured.py)
    return run_measured([sys.executable, "-m", "workbench.cli", *argv], cwd, env, timeout=120)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, dict]:
    from workbench.shared_data import shared_data_dir
    data = shared_data_dir()
    data = data if data is not None and data.is_dir() else None
    runs = {}
    for name, (needs_data, make) in CASES.items():
        if needs_data and data is None:
            continue
        tmp = tmp_path_factory.mktemp("bad")
        runs[name] = (make(tmp, data if data is not None else tmp), tmp)
    reference = min(run_measured([sys.executable, "-c", SPEED_REFERENCE], ROOT)["cpu"] for _ in range(2))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # more would inflate each CPU time
        futures = {name: pool.submit(_run, argv, tmp) for name, (argv, tmp) in runs.items()}
        out = {name: future.result() for name, future in futures.items()}
    for result in out.values():
        result["slowdown"] = max(1.0, reference / REFERENCE_CPU)
    return out


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
    assert sum(not needs for needs, _ in CASES.values()) >= 25  # enough run without the reference data


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_one_line_and_exit_2_fast_and_small(outcomes, case):
    if case not in outcomes:
        pytest.skip("needs the shared reference data")
    out = outcomes[case]
    lines = out["stderr"].strip().splitlines()
    assert "Traceback" not in out["stderr"], out["stderr"][-3000:]
    assert out["code"] == 2, out["stderr"]
    assert len(lines) == 1 and lines[0].startswith("workbench: error: "), out["stderr"]
    cap = (CPU_SECONDS_NAMING_CVXPY_SOLVERS if case in NAMES_CVXPY_SOLVERS else CPU_SECONDS) * out["slowdown"]
    assert out["cpu"] < cap, f"{out['cpu']:.2f} s of CPU (cap {cap:.2f} s on this machine)"
    assert out["rss_mb"] < MAX_RSS_MB, f"{out['rss_mb']:.0f} MB"
