"""workbench.kernel_cache: numba's on-disk cache checks only each kernel's own file, so the package clears
the kernels' cache files when any of its sources changed since the cache was stamped (a kernel that
inlines another module's kernels would otherwise keep their old code). On a scratch tree of packages:
a first check clears and stamps, a second finds the cache true, a changed source (its size or its
modification time) clears again, a source added or removed too; other files are never touched, and
NUMBA_CACHE_DIR turns the check off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench import kernel_cache


def _tree(base: Path) -> dict[str, Path]:
    files = {}
    for package in ("pkg_a", "pkg_b"):
        (base / package / "sub" / "__pycache__").mkdir(parents=True)
        (base / package / "__pycache__").mkdir()
        for rel in ("__init__.py", "kernels.py", "sub/inner.py"):
            (base / package / rel).write_text("x = 1\n")
        for rel in ("__pycache__/kernels.f-1.py311.nbi", "__pycache__/kernels.f-1.py311.1.nbc",
                    "sub/__pycache__/inner.g-3.py311.nbi", "__pycache__/kernels.cpython-311.pyc"):
            files[f"{package}/{rel}"] = base / package / rel
            files[f"{package}/{rel}"].write_bytes(b"cache")
    (base / "workbench").mkdir()
    return files


def _numba_files(files):
    return [p for p in files.values() if p.suffix in (".nbi", ".nbc")]


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    return tmp_path, _tree(tmp_path)


def test_a_first_check_clears_and_stamps_then_the_cache_is_kept(tree):
    base, files = tree
    assert kernel_cache.keep_true(str(base), ("pkg_a", "pkg_b")) == 6
    assert not any(p.exists() for p in _numba_files(files))
    assert all(p.exists() for p in files.values() if p.suffix == ".pyc")      # not numba's: untouched
    assert (base / "workbench" / "__pycache__" / kernel_cache.STAMP).exists()
    for p in _numba_files(files):           # the kernels compiled again from these sources
        p.write_bytes(b"cache")
    assert kernel_cache.keep_true(str(base), ("pkg_a", "pkg_b")) == 0
    assert all(p.exists() for p in _numba_files(files))


@pytest.mark.parametrize("change", ["mtime", "size", "added", "removed"])
def test_a_changed_source_clears_the_cache_of_every_package(tree, change):
    base, files = tree
    kernel_cache.keep_true(str(base), ("pkg_a", "pkg_b"))
    for p in _numba_files(files):
        p.write_bytes(b"cache")
    source = base / "pkg_b" / "sub" / "inner.py"
    if change == "mtime":
        st = source.stat()
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    elif change == "size":
        source.write_text("x = 22\n")
    elif change == "added":
        (base / "pkg_b" / "new.py").write_text("")
    else:
        source.unlink()
    assert kernel_cache.keep_true(str(base), ("pkg_a", "pkg_b")) == 6          # pkg_a's too: it may inline pkg_b
    assert not any(p.exists() for p in _numba_files(files))


def test_a_cache_folder_of_the_users_own_is_left_to_the_user(tree, monkeypatch):
    base, files = tree
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(base / "elsewhere"))
    assert kernel_cache.keep_true(str(base), ("pkg_a", "pkg_b")) == 0
    assert all(p.exists() for p in files.values())


def test_the_package_stamps_its_own_sources():
    """Importing workbench checked its own tree (this checkout): the stamp is the fingerprint now."""
    base = Path(kernel_cache.__file__).resolve().parents[1]
    if os.environ.get("NUMBA_CACHE_DIR"):
        pytest.skip("NUMBA_CACHE_DIR is set: the package leaves that folder to the user")
    stamp = base / "workbench" / "__pycache__" / kernel_cache.STAMP
    assert stamp.read_text(encoding="utf-8") == kernel_cache.fingerprint(str(base))
