"""Malformed problem files derived from valid ones, for tests/test_fuzz_files.py (a seeded generator).

:func:`make_cases` writes, into a folder, valid problem files of every format the readers take
(FCLib HDF5 local and global with bilateral rows and a warm start, Siconos .dat local and global,
the workbench's .npz local and global, plus a few reference problems when the shared data is
there) and derives from them, with a seeded ``numpy.random.Generator``:

* bytes: truncations, bit flips, overwritten runs, appended garbage (the .npz also stored
  uncompressed, so that flips land in the .npy headers and data rather than in the deflate stream);
* .dat words: huge, negative, fractional, NaN, Inf and non-numeric values put in place of words,
  words deleted, duplicated and swapped, a declared contact count of 10^9;
* HDF5 structure: external storage, external links, soft links (loops, dangling), virtual datasets,
  complex, string, record, boolean, 2-D and null datasets, NaN/Inf, non-monotone or out-of-range
  sparse pointers and indices, absurd declared sizes, nested groups where datasets belong,
  malformed warm starts (read by ``export --guess``);
* .npz entries: the same sparse faults, complex/2-D/string/pickled arrays, headers declaring sizes
  their entries do not hold, a zip bomb, deeply nested or non-object metadata;
* not files: empty files, directories, FIFOs, devices, broken links and link loops named as
  problem files.

Each case is ``{"id", "argv"}`` for :func:`tests.fuzz_harness.run_cases`: ``info FILE`` for a
problem file, ``export BASE OUT --guess FILE`` for a warm-start file.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Callable

import h5py
import numpy as np

from factories import random_problem
from workbench.io import save_problem, write_fclib, write_siconos_dat

SEED = 24
#: reference problems used as extra bases when the shared data is there (a CSparse .dat above all,
#: which the workbench does not write)
SHARED_BASES = ("fclib/Capsules-i125-1213.hdf5", "siconos/fc2d_granularflowonwall_00667_00000.dat",
                "siconos/FC3D_Example1_SBM.dat")


# --------------------------------------------------------------------------- valid bases
def _bases(folder: Path, shared: Path | None) -> dict[str, Path]:
    """Valid problem files of every format, written by the workbench (and the shared ones)."""
    glob = random_problem(n_contacts=4, n_bodies=3, seed=1)
    with_joints = random_problem(n_contacts=3, n_bodies=3, seed=2, n_bilateral=2)
    local = random_problem(n_contacts=5, n_bodies=3, seed=3).as_local()
    two_d = random_problem(n_contacts=3, n_bodies=2, d=2, seed=4, diagonal_mass=False)
    out = {}

    def put(name: str, write: Callable[[Path], None]) -> None:
        out[name] = folder / name
        write(out[name])

    put("local.hdf5", lambda p: write_fclib(local, p, guess={"r": np.ones(local.n_contact_unknowns),
                                                             "u": np.zeros(local.n_contact_unknowns)}))
    put("global.hdf5", lambda p: write_fclib(with_joints, p))
    put("local.dat", lambda p: write_siconos_dat(local, p))
    put("global.dat", lambda p: write_siconos_dat(glob, p))
    put("twod.dat", lambda p: write_siconos_dat(two_d, p))
    put("local.npz", lambda p: save_problem(local, p))
    put("global.npz", lambda p: save_problem(with_joints, p))
    if shared is not None:
        for rel in SHARED_BASES:
            if (shared / rel).is_file():
                out[f"shared-{Path(rel).name}"] = shared / rel
    return out


# --------------------------------------------------------------------------- byte mutations
def _byte_cases(rng: np.random.Generator, raw: bytes, count: int) -> list[tuple[str, bytes]]:
    n = len(raw)
    cases = []
    for k in range(count):
        data = bytearray(raw)
        what = k % 4
        if what == 0:
            cut = int(rng.integers(1, n))
            cases.append((f"truncated at {cut}", bytes(data[:cut])))
        elif what == 1:
            for _ in range(int(rng.integers(1, 9))):
                at = int(rng.integers(0, n))
                data[at] ^= 1 << int(rng.integers(0, 8))
            cases.append(("bit flips", bytes(data)))
        elif what == 2:
            at = int(rng.integers(0, n))
            run = int(rng.integers(1, 64))
            data[at:at + run] = rng.integers(0, 256, size=len(data[at:at + run]), dtype=np.uint8).tobytes()
            cases.append((f"overwritten at {at}", bytes(data)))
        else:
            cases.append(("garbage appended", bytes(data) + rng.integers(0, 256, 257, dtype=np.uint8).tobytes()))
    return cases


def _stored_npz(path: Path) -> bytes:
    """The .npz at ``path`` rewritten without compression (its .npy bytes lie in the file as they are)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return buffer.getvalue()


# --------------------------------------------------------------------------- .dat words
_WORDS = ["1000000000", "1e30", "-1", "0", "0.5", "nan", "inf", "-inf", "abc", "1e400", "3", "-0", "7",
          "99999999999999999999", "1_0", "0x10"]


def _dat_cases(rng: np.random.Generator, raw: bytes, count: int) -> list[tuple[str, bytes]]:
    words = raw.decode("latin-1").split()
    cases = [("nc 10^9", " ".join([words[0], "1000000000", *words[2:]]).encode()),
             ("first matrix 10^12 x 10^12", " ".join([*words[:3], "1000000000000", "1000000000000", *words[5:]]).encode())]
    for k in range(count):
        w = list(words)
        at = int(rng.integers(0, len(w)))
        what = k % 5
        if what in (0, 1):
            w[at] = str(rng.choice(_WORDS))
            label = f"word {at} := {w[at]}"
        elif what == 2:
            del w[at]
            label = f"word {at} deleted"
        elif what == 3:
            w.insert(at, w[at])
            label = f"word {at} repeated"
        else:
            other = int(rng.integers(0, len(w)))
            w[at], w[other] = w[other], w[at]
            label = f"words {at} and {other} swapped"
        cases.append((label, " ".join(w).encode("latin-1")))
    return cases


# --------------------------------------------------------------------------- HDF5 edits
def _replace(f: h5py.File, path: str, value=None, **kwargs) -> None:
    del f[path]
    if value is None:
        f.create_dataset(path, **kwargs)
    else:
        f.create_dataset(path, data=value, **kwargs)


def _set_entry(path: str, index: int, value):
    def edit(f: h5py.File, folder: Path) -> None:
        a = f[path][()]
        a = a.astype(np.result_type(a.dtype, np.asarray(value).dtype))
        a.reshape(-1)[index] = value
        _replace(f, path, a)
    return edit


def _as(path: str, convert: Callable[[np.ndarray], np.ndarray], **kwargs):
    def edit(f: h5py.File, folder: Path) -> None:
        _replace(f, path, convert(f[path][()]), **kwargs)
    return edit


def _external_storage(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        secret = folder / "secret.bin"
        secret.write_bytes(np.arange(4096, dtype=float).tobytes())
        n = f[path].shape[0]
        del f[path]
        f.create_dataset(path, shape=(n,), dtype="f8", external=[(str(secret), 0, 8 * n)])
    return edit


def _external_link(path: str, target: str):
    def edit(f: h5py.File, folder: Path) -> None:
        other = folder / "other.hdf5"
        if not other.exists():
            with h5py.File(other, "w") as g:
                g.create_dataset("x", data=np.ones(4096))
                g.create_group("grp").create_dataset("x", data=np.ones(4096))
        del f[path]
        f[path] = h5py.ExternalLink(str(other), target)
    return edit


def _soft_link(path: str, target: str):
    def edit(f: h5py.File, folder: Path) -> None:
        if path in f or f.get(path, getlink=True) is not None:
            del f[path]
        f[path] = h5py.SoftLink(target)
    return edit


def _moved_soft(path: str):
    """The object moved elsewhere in the file and a soft link left where it was."""
    def edit(f: h5py.File, folder: Path) -> None:
        f.move(path, "/moved")
        f[path] = h5py.SoftLink("/moved")
    return edit


def _virtual(path: str, same_file: bool):
    def edit(f: h5py.File, folder: Path) -> None:
        n = f[path].shape[0]
        source = folder / "vsource.hdf5"
        if not source.exists():
            with h5py.File(source, "w") as g:
                g.create_dataset("x", data=np.arange(4096, dtype=float))
        layout = h5py.VirtualLayout(shape=(n,), dtype="f8")
        if same_file:
            f.create_dataset("/plain", data=np.arange(n, dtype=float))
            layout[:] = h5py.VirtualSource(".", "/plain", shape=(n,))
        else:
            layout[:] = h5py.VirtualSource(str(source), "x", shape=(4096,))[:n]
        del f[path]
        f.create_virtual_dataset(path, layout)
    return edit


def plugin_filtered(f: h5py.File, path: str) -> None:
    """Replace dataset ``path`` by a chunked copy whose filter pipeline names filter 32004 (LZ4, a
    plugin), marked optional so that HDF5 writes it without the plugin."""
    from h5py import h5d, h5p, h5s, h5t, h5z
    data = np.asarray(f[path][()], dtype=float)
    del f[path]
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((max(1, data.shape[0]),))
    dcpl.set_filter(32004, h5z.FLAG_OPTIONAL, ())
    parent, name = path.rsplit("/", 1)
    dataset = h5d.create(f[parent or "/"].id, name.encode(), h5t.NATIVE_DOUBLE, h5s.create_simple(data.shape),
                         dcpl=dcpl)
    h5py.Dataset(dataset)[...] = data


def _plugin(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        plugin_filtered(f, path)
    return edit


def _huge(path: str, shape):
    def edit(f: h5py.File, folder: Path) -> None:
        _replace(f, path, shape=shape, dtype="f8", chunks=(1024,) * len(shape), maxshape=(None,) * len(shape))
    return edit


def _scalar_ints(path: str, **values):
    def edit(f: h5py.File, folder: Path) -> None:
        for key, value in values.items():
            _replace(f, f"{path}/{key}", np.array([value], dtype=np.int64))
    return edit


def _nested(path: str, depth: int):
    def edit(f: h5py.File, folder: Path) -> None:
        del f[path]
        g = f.create_group(path)
        for k in range(depth):
            g = g.create_group(f"g{k}")
        g.create_dataset("x", data=np.ones(3))
    return edit


def _deleted(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        del f[path]
    return edit


def _null(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        _replace(f, path, h5py.Empty("f8"))
    return edit


def _gzip_bomb(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        _replace(f, path, np.zeros(1_500_000), chunks=(500_000,), compression="gzip", compression_opts=9)
    return edit


def _attributes(path: str):
    def edit(f: h5py.File, folder: Path) -> None:
        g = f[path]
        g.attrs["complex"] = np.array([1 + 2j])
        g.attrs["record"] = np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])
        g.attrs["reference"] = g.ref
        g.attrs["text"] = "x" * 60000
    return edit


def _pointers(path: str, change: Callable[[np.ndarray], np.ndarray]):
    return _as(path, lambda a: change(np.array(a)))


def _swap_first(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a[1], a[-2] = a[-2], a[1] + 1000
    return a


def _hdf5_edits(kind: str) -> dict[str, Callable]:
    root = f"/fclib_{kind}"
    W = f"{root}/W" if kind == "local" else f"{root}/H"
    vec = f"{root}/vectors"
    q = f"{vec}/q" if kind == "local" else f"{vec}/f"
    edits = {
        "external storage q": _external_storage(q),
        "external storage mu": _external_storage(f"{vec}/mu"),
        "external link W": _external_link(W, "grp"),
        "external link vectors": _external_link(vec, "grp"),
        "external link mu": _external_link(f"{vec}/mu", "x"),
        "external link root": _external_link(root, "grp"),
        "soft link loop": _soft_link(f"{vec}/mu", f"{vec}/mu"),
        "dangling soft link": _soft_link(q, "/nowhere"),
        "soft link root": _moved_soft(root),
        "soft link W x": _moved_soft(f"{W}/x"),
        "virtual q other file": _virtual(q, same_file=False),
        "virtual mu same file": _virtual(f"{vec}/mu", same_file=True),
        "plugin filter q": _plugin(q),
        "complex q": _as(q, lambda a: a + 1j),
        "complex mu": _as(f"{vec}/mu", lambda a: a.astype(complex)),
        "complex W values": _as(f"{W}/x", lambda a: a * (1 + 1j)),
        "string mu": _as(f"{vec}/mu", lambda a: np.array([b"0.3"] * a.size)),
        "vlen string mu": _as(f"{vec}/mu", lambda a: np.array(["0.3"] * a.size, dtype=object),
                              dtype=h5py.string_dtype()),
        "record mu": _as(f"{vec}/mu", lambda a: np.array([(x, x) for x in a], dtype=[("a", "f8"), ("b", "f8")])),
        "boolean mu": _as(f"{vec}/mu", lambda a: a > 0),
        "float16 q": _as(q, lambda a: a.astype(np.float16)),
        "big-endian q": _as(q, lambda a: a.astype(">f8")),
        "2-D mu (n, 1)": _as(f"{vec}/mu", lambda a: a.reshape(-1, 1)),
        "2-D mu (1, n)": _as(f"{vec}/mu", lambda a: a.reshape(1, -1)),
        "2-D mu (n, 2)": _as(f"{vec}/mu", lambda a: np.repeat(a.reshape(-1, 1), 2, axis=1)),
        "scalar mu": _as(f"{vec}/mu", lambda a: a[0]),
        "null mu": _null(f"{vec}/mu"),
        "empty q": _as(q, lambda a: a[:0]),
        "NaN q": _set_entry(q, 0, np.nan),
        "Inf W value": _set_entry(f"{W}/x", 1, np.inf),
        "negative mu": _set_entry(f"{vec}/mu", 0, -0.5),
        "huge mu (10^12)": _huge(f"{vec}/mu", (10**12,)),
        "huge q (10^9)": _huge(q, (10**9,)),
        "huge 2-D W": _huge(f"{W}/x", (10**6, 10**6)),
        "huge sizes": _scalar_ints(W, m=10**12, n=10**12),
        "negative size": _scalar_ints(W, m=-3),
        "nz -3": _scalar_ints(W, nz=-3),
        "nz 10^12": _scalar_ints(W, nz=10**12),
        "nz triplets": _scalar_ints(W, nz=5),
        "pointers not monotone": _pointers(f"{W}/p", _swap_first),
        "pointers start at 1": _pointers(f"{W}/p", lambda a: a + 1),
        "pointers beyond entries": _pointers(f"{W}/p", lambda a: np.concatenate([a[:-1], [a[-1] + 50]])),
        "pointers too few": _pointers(f"{W}/p", lambda a: a[:2]),
        "pointers fractional": _pointers(f"{W}/p", lambda a: a + 0.5),
        "pointers uint64 huge": _pointers(f"{W}/p", lambda a: np.concatenate([a[:1], a[1:].astype(np.uint64) + np.uint64(2**63)])),
        "index out of range": _set_entry(f"{W}/i", 0, 10**6),
        "negative index": _set_entry(f"{W}/i", 0, -1),
        "indices as strings": _as(f"{W}/i", lambda a: np.array([b"1"] * a.size)),
        "W nested groups": _nested(W, 200),
        "mu is a group": _nested(f"{vec}/mu", 3),
        "vectors missing": _deleted(vec),
        "spacedim 2-D": _as(f"{root}/spacedim", lambda a: np.array([[3, 3], [3, 3]])),
        "spacedim complex": _as(f"{root}/spacedim", lambda a: np.array([3 + 0j])),
        "spacedim huge": _as(f"{root}/spacedim", lambda a: np.array([2**62])),
        "gzip bomb q": _gzip_bomb(q),
        "odd info attributes": _attributes(f"{root}/info"),
        "title of 10^10 characters (not read)": _huge(f"{root}/info/title", (10**10,)),
    }
    if kind == "global":
        edits.update({
            "complex M": _as(f"{root}/M/x", lambda a: a + 0j + 1j),
            "M pointers not monotone": _pointers(f"{root}/M/p", _swap_first),
            "G external link": _external_link(f"{root}/G", "grp"),
            "b external storage": _external_storage(f"{vec}/b"),
        })
    return edits


def _guess_edits() -> dict[str, Callable]:
    g = "/guesses"
    return {
        "guess r complex": _as(f"{g}/1/r", lambda a: a + 1j),
        "guess r 2-D": _as(f"{g}/1/r", lambda a: a.reshape(1, -1)),
        "guess r external storage": _external_storage(f"{g}/1/r"),
        "guess 1 external link": _external_link(f"{g}/1", "grp"),
        "guess r virtual": _virtual(f"{g}/1/r", same_file=False),
        "guess count one trillion (only a count)": _as(f"{g}/number_of_guesses", lambda a: np.array([10**12])),
        "guess count string": _as(f"{g}/number_of_guesses", lambda a: np.array([b"x"])),
        "guess r huge": _huge(f"{g}/1/r", (10**12,)),
        "guess r NaN": _set_entry(f"{g}/1/r", 0, np.nan),
        "guess r wrong length": _as(f"{g}/1/r", lambda a: a[:2]),
        "guess group soft link loop": _soft_link(f"{g}/1", f"{g}/1"),
    }


# --------------------------------------------------------------------------- .npz edits
def _npz_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _npz_bytes(arrays: dict[str, np.ndarray], *, pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    if pickle:
        np.savez(buffer, **arrays)
    else:
        np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _deflated(raw: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush()


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip file of deflated ``(name, deflate stream, crc32, declared uncompressed size)`` members,
    written by hand so that the declared size can be anything."""
    body, directory = bytearray(), bytearray()
    for name, data, crc, size in members:
        raw_name = name.encode()
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), size,
                                 len(raw_name), 0, 0, 0, 0, 0, len(body)) + raw_name
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size,
                            len(raw_name), 0) + raw_name + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(body), 0)
    return bytes(body + directory + end)


def _member(name: str, raw: bytes) -> tuple[str, bytes, int, int]:
    return name, _deflated(raw), zlib.crc32(raw), len(raw)


def _header_declaring(array: np.ndarray, shape: tuple) -> bytes:
    """``array``'s .npy header with ``shape`` in place of its own (same length, so the data follows)."""
    raw = _npy(array)
    end = raw.index(b"\n") + 1
    text = raw[10:end].decode("latin-1")
    new = text.replace(f"'shape': {array.shape!r}", f"'shape': {shape!r}").rstrip("\n").rstrip()
    new = new + " " * (len(text) - len(new) - 1) + "\n"
    assert len(new) == len(text), (text, shape)
    return raw[:10] + new.encode("latin-1")


def _forged_header(arrays: dict[str, np.ndarray], key: str, shape: tuple, fix_size: bool) -> bytes:
    """The .npz with entry ``key``'s header declaring ``shape`` (its data unchanged); with ``fix_size``
    the zip directory declares the size the header implies, as a zip bomb's would."""
    members = []
    for k, a in arrays.items():
        if k != key:
            members.append(_member(f"{k}.npy", _npy(a)))
            continue
        header = _header_declaring(a, shape)
        raw = header + a.tobytes()
        size = len(header) + int(np.prod(shape)) * a.dtype.itemsize if fix_size else len(raw)
        members.append((f"{k}.npy", _deflated(raw), zlib.crc32(raw), min(size, 2**32 - 1)))
    return _zip(members)


def zip_bomb(base: Path, entries: int) -> bytes:
    """The workbench .npz ``base`` with its ``mu`` entry inflating to ``entries`` float64 zeros (8 bytes
    each, under 4 GiB in all) from a deflate stream of about a thousandth of that: the kind of file
    issue 24 found decompressed. One flushed deflate block of 4 MiB of zeros is repeated (a full
    flush resets the compressor, so each repeat is the same bytes); the CRC is not computed (0): a
    reader that inflates the entry has done the damage before it could check it."""
    arrays = _npz_arrays(base)
    members = [_member(f"{k}.npy", _npy(a)) for k, a in arrays.items() if k != "mu"]
    header = _header_declaring(np.zeros(1), (entries,))
    chunk = 1 << 22
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(8 * entries, chunk)
    stream = first + block * whole + c.compress(bytes(rest)) + c.flush()
    members.append(("mu.npy", stream, 0, len(header) + 8 * entries))
    return _zip(members)


def _npz_cases(base: Path, kind: str) -> list[tuple[str, bytes]]:
    a = _npz_arrays(base)
    X = "W" if kind == "local" else "D"
    v = "q" if kind == "local" else "k"

    def changed(**updates) -> bytes:
        out = dict(a)
        for key, value in updates.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return _npz_bytes(out)

    ptr, idx, data = a[f"{X}_indptr"], a[f"{X}_indices"], a[f"{X}_data"]
    swapped = ptr.copy()
    swapped[1], swapped[-2] = swapped[-2], swapped[1]
    cases = [
        ("indptr not monotone", changed(**{f"{X}_indptr": swapped})),
        ("indptr reversed", changed(**{f"{X}_indptr": ptr[::-1].copy()})),
        ("indptr starts at 1", changed(**{f"{X}_indptr": ptr + 1})),
        ("indptr ends beyond nnz", changed(**{f"{X}_indptr": np.concatenate([ptr[:-1], [ptr[-1] + 7]])})),
        ("indptr too short", changed(**{f"{X}_indptr": ptr[:-1]})),
        ("indptr float", changed(**{f"{X}_indptr": ptr.astype(float)})),
        ("indptr uint64 huge", changed(**{f"{X}_indptr": (ptr.astype(np.uint64) + np.uint64(2**63))})),
        ("indptr 2-D", changed(**{f"{X}_indptr": ptr.reshape(1, -1)})),
        ("indices out of range", changed(**{f"{X}_indices": idx + 10**6})),
        ("indices negative", changed(**{f"{X}_indices": idx - 1})),
        ("indices int8", changed(**{f"{X}_indices": idx.astype(np.int8)})),
        ("indices float", changed(**{f"{X}_indices": idx.astype(float)})),
        ("indices shorter", changed(**{f"{X}_indices": idx[:-1]})),
        ("data shorter", changed(**{f"{X}_data": data[:-1]})),
        ("data complex", changed(**{f"{X}_data": data * (1 + 1j)})),
        ("data strings", changed(**{f"{X}_data": data.astype(str)})),
        ("data NaN", changed(**{f"{X}_data": np.where(np.arange(data.size) == 0, np.nan, data)})),
        ("data Inf", changed(**{f"{X}_data": np.where(np.arange(data.size) == 1, np.inf, data)})),
        ("shape 3 entries", changed(**{f"{X}_shape": np.array([3, 3, 3])})),
        ("shape negative", changed(**{f"{X}_shape": np.array([-1, -1])})),
        ("shape 10^12", changed(**{f"{X}_shape": np.array([10**12, 10**12])})),
        ("shape float", changed(**{f"{X}_shape": a[f"{X}_shape"].astype(float)})),
        ("shape missing", changed(**{f"{X}_shape": None})),
        ("indptr missing", changed(**{f"{X}_indptr": None})),
        ("mu complex", changed(mu=a["mu"] + 1j)),
        ("mu 2-D", changed(mu=a["mu"].reshape(-1, 1))),
        ("mu 2-D wide", changed(mu=np.repeat(a["mu"].reshape(1, -1), 2, axis=0))),
        ("mu strings", changed(mu=a["mu"].astype(str))),
        ("mu NaN", changed(mu=a["mu"] * np.nan)),
        ("mu negative", changed(mu=-a["mu"])),
        ("mu empty", changed(mu=a["mu"][:0])),
        ("mu missing", changed(mu=None)),
        (f"{v} complex", changed(**{v: a[v] * 1j})),
        (f"{v} wrong length", changed(**{v: a[v][:-1]})),
        (f"{v} 2-D", changed(**{v: a[v].reshape(-1, 1)})),
        ("d 7", changed(d=np.array(7))),
        ("d text", changed(d=np.array("three"))),
        ("d vector", changed(d=np.array([3, 3]))),
        ("version 2", changed(version=np.array(2))),
        ("format missing", changed(format=None)),
        ("format wrong", changed(format=np.array("something else"))),
        ("format number", changed(format=np.array(3.0))),
        ("h two values", changed(h=np.array([0.1, 0.2]))),
        ("h negative", changed(h=np.array([-0.1]))),
        ("h NaN", changed(h=np.array([np.nan]))),
        ("h complex", changed(h=np.array([0.1j]))),
        ("name 2-D", changed(name=np.array([["a", "b"]]))),
        ("metadata deep", changed(metadata=np.array("[" * 100_000 + "]" * 100_000))),
        ("metadata deep object", changed(metadata=np.array('{"a":' * 50_000 + "1" + "}" * 50_000))),
        ("metadata list", changed(metadata=np.array("[1, 2]"))),
        ("metadata not JSON", changed(metadata=np.array("{nope"))),
        ("metadata bytes", changed(metadata=np.array(b"{}"))),
        ("pickled object", _npz_bytes({**a, "mu": np.array([0.3, None], dtype=object)}, pickle=True)),
        ("pickled metadata", _npz_bytes({**a, "metadata": np.array({"a": 1}, dtype=object)}, pickle=True)),
        ("record mu", changed(mu=np.zeros(a["mu"].size, dtype=[("a", "f8")]))),
        ("header declares 10^12 (size not patched)", _forged_header(a, f"{X}_data", (10**12,), False)),
        ("header declares 10^12 (size patched)", _forged_header(a, f"{X}_data", (10**12,), True)),
        ("header declares 3 * 10^7 (size patched)", _forged_header(a, "mu", (3 * 10**7,), True)),
        ("header declares fewer", _forged_header(a, f"{X}_data", (1,), False)),
        ("header declares 2-D", _forged_header(a, "mu", (a["mu"].size, 1), False)),
        ("no entries", _npz_bytes({})),
        ("foreign arrays", _npz_bytes({"a": np.arange(3)})),
    ]
    if kind == "global":
        cases.append(("M indptr not monotone",
                      changed(M_indptr=np.concatenate([a["M_indptr"][:1], a["M_indptr"][1:][::-1]]))))
        cases.append(("M complex", changed(M_data=a["M_data"] + 1j)))
    return cases


# --------------------------------------------------------------------------- not files
def _special_paths(folder: Path) -> list[tuple[str, Path]]:
    out = []
    for suffix in (".hdf5", ".dat", ".npz", ""):
        empty = folder / f"empty{suffix or '-nosuffix'}"
        empty.write_bytes(b"")
        out.append((f"empty {suffix or 'no suffix'}", empty))
        fifo = folder / f"fifo{suffix or '-nosuffix'}"
        os.mkfifo(fifo)
        out.append((f"FIFO {suffix or 'no suffix'}", fifo))
        directory = folder / f"dir{suffix or '-nosuffix'}"
        directory.mkdir()
        out.append((f"directory {suffix or 'no suffix'}", directory))
    links = {"link to FIFO.dat": folder / "fifo.dat", "link to /dev/zero.dat": Path("/dev/zero"),
             "link to /dev/null.hdf5": Path("/dev/null"), "dangling link.npz": folder / "nothing-here",
             "link to directory.hdf5": folder / "dir.hdf5"}
    for name, target in links.items():
        link = folder / name.replace(" ", "_").replace("/", "")
        os.symlink(target, link)
        out.append((name, link))
    os.symlink(folder / "loop-b.dat", folder / "loop-a.dat")
    os.symlink(folder / "loop-a.dat", folder / "loop-b.dat")
    out.append(("symlink loop", folder / "loop-a.dat"))
    blank = folder / "blank.dat"
    blank.write_bytes(b" \n\t\r\x0b\x0c" * 100)
    out.append(("whitespace only", blank))
    nul = folder / "nul.dat"
    nul.write_bytes(b"\x00" * 1000)
    out.append(("NUL bytes", nul))
    return out


# --------------------------------------------------------------------------- all cases
def make_cases(folder: Path, shared: Path | None = None, seed: int = SEED) -> list[dict]:
    """Write the malformed files into ``folder`` and return their cases (module docstring)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    base_dir = folder / "bases"
    base_dir.mkdir()
    bases = _bases(base_dir, shared)
    cases: list[dict] = []
    counter = iter(range(10**6))

    def add_bytes(label: str, suffix: str, data: bytes, guess: bool = False) -> None:
        path = folder / f"case{next(counter):04d}{suffix}"
        path.write_bytes(data)
        add_path(label, path, guess)

    def add_path(label: str, path: Path, guess: bool = False) -> None:
        argv = (["export", str(bases["local.npz"]), str(folder / f"out-{len(cases)}.npz"), "--guess", str(path)]
                if guess else ["info", str(path)])
        cases.append({"id": f"{len(cases):04d} {label}", "argv": argv})

    for name, base in bases.items():
        raw = base.read_bytes()
        suffix = base.suffix
        add_path(f"{name}: valid", base)
        for label, data in _byte_cases(rng, raw, 16 if not name.startswith("shared") else 8):
            add_bytes(f"{name}: {label}", suffix, data)
        if suffix == ".npz":
            stored = _stored_npz(base)
            for label, data in _byte_cases(rng, stored, 12):
                add_bytes(f"{name} (stored): {label}", suffix, data)
            for label, data in _npz_cases(base, "global" if "global" in name else "local"):
                add_bytes(f"{name}: {label}", suffix, data)
        if suffix == ".dat":
            for label, data in _dat_cases(rng, raw, 20 if not name.startswith("shared") else 10):
                add_bytes(f"{name}: {label}", suffix, data)
        if suffix == ".hdf5" and not name.startswith("shared"):
            kind = "global" if "global" in name else "local"
            for label, edit in _hdf5_edits(kind).items():
                path = folder / f"case{next(counter):04d}.hdf5"
                path.write_bytes(raw)
                with h5py.File(path, "r+") as f:
                    edit(f, folder)
                add_path(f"{name}: {label}", path)
            if kind == "local":
                add_path(f"{name}: valid guess", base, guess=True)
                for label, edit in _guess_edits().items():
                    path = folder / f"case{next(counter):04d}.hdf5"
                    path.write_bytes(raw)
                    with h5py.File(path, "r+") as f:
                        edit(f, folder)
                    add_path(f"{name}: {label}", path, guess=True)
    bomb = folder / "bomb.npz"
    bomb.write_bytes(zip_bomb(bases["local.npz"], 300_000_000))
    add_path("zip bomb of 2.4 GB", bomb)
    for label, path in _special_paths(folder):
        add_path(label, path)
    # the content of one format under another's suffix: the readers sniff the content
    for name, suffix in (("local.hdf5", ".dat"), ("local.npz", ".hdf5"), ("local.dat", ".npz")):
        add_bytes(f"{name} named {suffix}", suffix, bases[name].read_bytes())
    return cases


def case_summary(cases: list[dict]) -> str:
    return json.dumps([c["id"] for c in cases], indent=0)
