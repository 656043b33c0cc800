"""Dataset families (problems/families.py, ``workbench generate FAMILY --members N``): members named and
addressed one by one, made in spawned processes, resumable by their manifest checksums, seeds and
round-off twins as the protocol leaves them free; a committed member made again by its command has
its committed checksum."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from problems import families
from problems.families import Family, generate_family, member_name, members, parse_member
from problems.generator import DEFAULT_DIR, read_manifest, simulation
from workbench.errors import InputError
from workbench.io import load_problem
from workbench.problem import problem_digest

ROOT = Path(__file__).resolve().parents[1]

#: a family small enough for a test: 18 spheres, 60 steps of the unsettled protocol
TINY = {"n": 18, "width": 8.0, "duration": 0.3, "h": 0.005}


@pytest.fixture
def tiny(monkeypatch):
    fams = {"tiny-00018": Family("tiny-00018", "unsettled", "test", TINY),
            "tiny-00018-roundoff": Family("tiny-00018-roundoff", "unsettled", "test", TINY, "roundoff")}
    monkeypatch.setattr(families, "FAMILIES", {**families.FAMILIES, **fams})
    return fams


def test_members_are_made_in_spawned_processes_with_their_checksums_and_kept_when_made(tiny, tmp_path):
    lines: list[str] = []
    paths = generate_family("tiny-00018", 3, tmp_path, jobs=2, report=lines.append)
    assert [p.name for p in paths] == ["tiny-00018-m00.npz", "tiny-00018-m01.npz", "tiny-00018-m02.npz"]
    manifest = read_manifest(tmp_path)
    for m, p in enumerate(paths):
        e = manifest[p.name]
        assert (e["family"], e["member"], e["protocol"]) == ("tiny-00018", m, "unsettled")
        assert e["sha256"] == problem_digest(load_problem(p)) and e["generator"]["seed"] == m
    assert len({manifest[p.name]["sha256"] for p in paths}) == 3         # seeds give other packings
    # in one process, the same arrays as in the spawned ones
    alone = generate_family("tiny-00018", 1, tmp_path / "alone", jobs=1, report=lines.append)[0]
    assert read_manifest(tmp_path / "alone")[alone.name]["sha256"] == manifest[alone.name]["sha256"]
    # resumable: the members there are kept, one more is made
    lines.clear()
    generate_family("tiny-00018", 4, tmp_path, jobs=1, report=lines.append)
    assert sum("kept" in line for line in lines) == 3 and "tiny-00018-m03" in lines[-1]
    assert members("tiny-00018", 4, tmp_path) == [f"tiny-00018-m{m:02d}" for m in range(4)]
    with pytest.raises(InputError, match="workbench generate tiny-00018 --members 5"):
        members("tiny-00018", 5, tmp_path)
    # a file that is not the member its manifest records is never taken for it, nor overwritten
    entry = read_manifest(tmp_path)
    entry["tiny-00018-m01.npz"]["sha256"] = "0" * 64
    (tmp_path / "MANIFEST.json").write_text(json.dumps(entry))
    with pytest.raises(InputError, match="tiny-00018-m01.npz exists but is not member 1"):
        generate_family("tiny-00018", 4, tmp_path, jobs=1, report=lines.append)


def test_round_off_twins_differ_only_in_the_rounding_of_their_start(tiny):
    fam = tiny["tiny-00018-roundoff"]
    x0 = simulation(fam.spec(0)).world.bodies.x
    x1 = simulation(fam.spec(1)).world.bodies.x
    x2 = simulation(fam.spec(2)).world.bodies.x
    assert fam.spec(0).seed == fam.spec(1).seed == 0 and fam.spec(1).roundoff == 1
    assert 0 < np.abs(x1 - x0).max() <= 1e-12 and not np.array_equal(x1, x2)
    assert "roundoff" not in fam.spec(0).parameters() and fam.spec(1).parameters()["roundoff"] == 1


def test_names_address_a_family_and_each_member():
    assert member_name("settled-00064", 3) == "settled-00064-m03"
    fam, m = parse_member("unsettled-00320-roundoff-m12")
    assert (fam.name, fam.vary, m) == ("unsettled-00320-roundoff", "roundoff", 12)
    assert parse_member("settled-00320") is None and parse_member("nofamily-00064-m01") is None
    # the section 5.1 protocol: member 0 of the 320-sphere family is the committed settled packing's recipe
    from problems.generator import DATASETS
    assert families.family("settled-00320").spec(0) == DATASETS["settled"][1]()[0]
    assert families.family("unsettled-00064").spec(2).max_iter == 10
    with pytest.raises(InputError, match="dataset family"):
        families.family("settled-00065")
    with pytest.raises(InputError):
        member_name("settled-00064", -1)


def _cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "workbench.cli", "generate", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_the_command_refuses_what_a_family_does_not_take():
    out = _cli("settled-00064")
    assert out.returncode == 2 and "--members N" in out.stderr and "Traceback" not in out.stderr
    out = _cli("settled", "--members", "2")
    assert out.returncode == 2 and "dataset families" in out.stderr


def test_the_committed_members_are_addressed_by_family_and_by_name():
    """Every committed family's members 0 ... n-1 are there, and each loads as dataset:FAMILY-mMM with the
    protocol's parameters and its member's seed."""
    from workbench.sources import load

    for name, n in families.COMMITTED_MEMBERS.items():
        paths = families.member_paths(name, n)
        assert [p.stem for p in paths] == members(name, n) and all(p.exists() for p in paths)
        problem = load(f"dataset:{members(name, n)[-1]}")
        assert problem.metadata["generator"]["seed"] == n - 1 == families.member_spec(paths[-1].stem).seed
        assert problem.metadata["generator"]["max_iter"] == families.family(name).spec(0).max_iter


COMMITTED_FAMILY_MEMBERS = sorted(f for f, e in read_manifest(DEFAULT_DIR).items()
                                  if e.get("family") and (DEFAULT_DIR / f).exists())


@pytest.mark.slow
@pytest.mark.skipif(not COMMITTED_FAMILY_MEMBERS, reason="no family member committed")
def test_a_committed_member_made_again_by_its_command_has_its_committed_checksum(tmp_path):
    """``workbench generate FAMILY --members 1 --out DIR`` makes member 0 again (about a minute on one
    core): the same SHA-256 of the arrays as the committed manifest's entry."""
    file = min(COMMITTED_FAMILY_MEMBERS, key=lambda f: (read_manifest(DEFAULT_DIR)[f]["member"], f))
    committed = read_manifest(DEFAULT_DIR)[file]
    out = _cli(committed["family"], "--members", str(committed["member"] + 1), "--jobs", "1", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    made = read_manifest(tmp_path)[file]
    assert made["sha256"] == committed["sha256"] and made["generator"] == committed["generator"]
    assert "matches the committed manifest" in out.stderr


def test_a_users_generation_in_the_datasets_folder_leaves_its_tracked_manifest_alone(tmp_path, monkeypatch):
    """In problems/datasets an entry goes to the ignored MANIFEST.local.json unless the page-writing
    --write asks for the tracked MANIFEST.json (issue 46: a user's run touches no tracked file); the
    folder's manifest, as read, is both, the local entry first; the committed one alone with local=False;
    any other folder keeps one MANIFEST.json."""
    from problems import generator as g

    datasets, other = tmp_path / "datasets", tmp_path / "mine"
    datasets.mkdir(), other.mkdir()
    monkeypatch.setattr(g, "DEFAULT_DIR", datasets)
    (datasets / g.MANIFEST).write_text(json.dumps({"a.npz": {"sha256": "committed"}}))
    before = (datasets / g.MANIFEST).read_bytes()
    g._record_manifest(datasets, "a.npz", {"sha256": "made here"})
    g._record_manifest(datasets, "b.npz", {"sha256": "new"})
    assert (datasets / g.MANIFEST).read_bytes() == before
    assert g.read_manifest(datasets) == {"a.npz": {"sha256": "made here"}, "b.npz": {"sha256": "new"}}
    assert g.read_manifest(datasets, local=False) == {"a.npz": {"sha256": "committed"}}
    g._record_manifest(datasets, "c.npz", {"sha256": "written"}, tracked=True)
    assert set(json.loads((datasets / g.MANIFEST).read_text())) == {"a.npz", "c.npz"}
    g._record_manifest(other, "d.npz", {"sha256": "user"})
    assert json.loads((other / g.MANIFEST).read_text()) == {"d.npz": {"sha256": "user"}}
    assert not (other / g.LOCAL_MANIFEST).exists()
