"""Problem sources (workbench.sources): every spec form, the one registry of named sources, the
reference-data lookup (the layering rules are tests/test_layers.py)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from factories import random_problem
from problems.scenes import rolling_ball_2d
from workbench import shared_data, sources
from workbench.errors import InputError
from workbench.io import load_problem, save_problem
from workbench.study.problems import problem_digest

REPO = Path(__file__).resolve().parents[1]


def test_every_named_source_builds_and_scenes_have_contacts():
    assert set(sources.names()) == set(sources.NAMED)
    assert {e.kind for e in sources.NAMED.values()} == set(sources.KINDS)
    for name, entry in sources.NAMED.items():
        assert entry.summary and callable(sources.builder(name, entry.kind))
    for name in sources.names("scene", "scenario"):
        p = sources.load(f"scene:{name}")
        assert p.n_contacts >= 1 and p.is_global, name
    # a dynamic scene's problem is its first step with a contact: the ball touches the plane at t = 0
    ball = sources.load("scene:ball-on-plane", mu=0.3)
    assert ball.n_contacts == 1 and ball.d == 3 and np.allclose(ball.mu, 0.3)
    assert sources.load("scenario:ball-on-plane", mu=0.3).name == ball.name


def test_static_scene_and_generator_specs_give_the_builders_problems():
    assert problem_digest(sources.load("scene:rolling-ball-2d", mu=0.3)) == problem_digest(rolling_ball_2d(mu=0.3))
    from problems.synthetic import sphere_packing
    p = sources.load("generator:sphere_packing", n_spheres=8, seed=3)
    assert problem_digest(p) == problem_digest(sphere_packing(8, seed=3))
    assert sources.Source.parse("scenario:filling").simulated and not sources.Source.parse("scene:filling").simulated


@pytest.mark.parametrize("spec, params, fragments", [
    ("scene:rolling-cube", {}, ["scene:rolling-cube", "unknown scene 'rolling-cube'", "known: rolling-ball-2d"]),
    ("scene:ball-on-plane", {"muu": 0.1}, ["'ball-on-plane' has no parameter 'muu'", "known: h, mu, v0"]),
    ("generator:sphere_packing", {}, ["missing a required argument: 'n_spheres'"]),
    ("generator:filling", {}, ["unknown generator 'filling'", "sphere_packing"]),
    ("scenario:rolling-ball-2d", {}, ["unknown scenario 'rolling-ball-2d'", "ball-on-plane"]),
    ("scene:filling", {"n": 0}, ["'filling' with n=0"]),
])
def test_bad_named_specs_say_what_is_known(spec, params, fragments):
    with pytest.raises(InputError) as info:
        sources.load(spec, **params)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_files_datasets_and_relative_paths(tmp_path):
    save_problem(random_problem(4, 3, seed=1), tmp_path / "p.npz")
    assert sources.load(str(tmp_path / "p.npz")).n_contacts == 4
    assert sources.resolve_path("data/p.npz", tmp_path) == tmp_path / "data" / "p.npz"
    assert sources.resolve_path("dataset:settled-00320") == REPO / "problems" / "datasets" / "settled-00320.npz"
    committed = sources.load("dataset:settled-00320")
    assert problem_digest(committed) == problem_digest(load_problem(REPO / "problems/datasets/settled-00320.npz"))
    (tmp_path / "notes.md").write_text("# not a problem\n")
    with pytest.raises(InputError, match=r"notes.md: not a problem file .*a problem is a file \(.hdf5"):
        sources.load(str(tmp_path / "notes.md"))
    with pytest.raises(InputError, match="no such file or folder; a problem is"):
        sources.load("scnee:ball")
    with pytest.raises(InputError, match="a file takes no parameters"):
        sources.load(str(tmp_path / "p.npz"), mu=0.1)


def test_shared_data_is_the_env_folder_or_beside_the_repository(tmp_path, monkeypatch):
    assert shared_data.BESIDE_REPOSITORY == REPO.parent / "shared" / "data"
    (tmp_path / "fclib").mkdir()
    monkeypatch.setenv(shared_data.ENV, str(tmp_path))
    assert shared_data.shared_data_dir() == tmp_path
    assert sources.resolve_path("shared:fclib/x.hdf5") == tmp_path / "fclib" / "x.hdf5"
    monkeypatch.setenv(shared_data.ENV, str(tmp_path / "absent"))
    assert shared_data.shared_data_dir() is None
    with pytest.raises(InputError, match="is not a folder.*Siconos repository"):
        sources.resolve_path("shared:fclib/x.hdf5")


def test_shared_data_absence_skips_with_a_reason_and_fails_under_ci(tmp_path):
    """The conftest rule, run on the one test of this module that needs the reference data."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env[shared_data.ENV] = str(tmp_path / "absent")
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           f"{Path(__file__).name}::test_a_reference_problem_loads"]
    skipped = subprocess.run(cmd, cwd=REPO / "tests", env=env, capture_output=True, text=True)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout and "is not a folder" in skipped.stdout
    failed = subprocess.run(cmd, cwd=REPO / "tests", env={**env, "CI": "true"}, capture_output=True, text=True)
    assert failed.returncode != 0 and "CI=true but" in failed.stdout + failed.stderr


def test_a_reference_problem_loads(shared_data):
    p = sources.load("shared:fclib/Box_Stacks-i0122-82-5.hdf5")
    assert p.n_contacts == 82 and p.is_global


def test_a_source_is_parsed_once_made_once_and_pickles_as_its_spec(tmp_path):
    """Source.parse picks the kind by prefix; materialise makes each once with its facts (the plan's
    problem columns), a generator's problems saved as files; the pickle carries no problem data."""
    import pickle

    from workbench.sources import FileSource, GeneratorSource, ScenarioSource, SceneSource, Source
    kinds = {"p.npz": FileSource, "shared:fclib/x.hdf5": FileSource, "dataset:settled-00320": FileSource,
             "scene:rolling-ball-2d": SceneSource, "scenario:ball-on-plane": ScenarioSource,
             "generator:sphere_packing": GeneratorSource, "scnee:ball": FileSource}
    assert {spec: type(Source.parse(spec)) for spec in kinds} == kinds
    scene, = Source.parse("scene:rolling-ball-2d", {"mu": 0.3}, tags=("a",)).materialise(tmp_path)
    assert scene.name == rolling_ball_2d(mu=0.3).name and scene.members() == [scene]
    assert scene.describe() == {"problem": scene.name, "source": "scene:rolling-ball-2d",
                                "problem_hash": problem_digest(rolling_ball_2d(mu=0.3)), "tags": ["a"],
                                "kind": "global", "n_contacts": 1, "n_dof": 3, "d": 2, "params": None, "series": None}
    copy = pickle.loads(pickle.dumps(scene))
    assert copy == scene and len(pickle.dumps(scene)) < 1000
    made, = Source.parse("generator:sphere_packing", {"n_spheres": 8, "seed": 3}, name="s8",
                         series="s").materialise(tmp_path / "made")
    assert isinstance(made, FileSource) and made.spec == str(tmp_path / "made" / "s8.npz") and made.series == "s"
    assert made.facts.digest == problem_digest(made.load()) == problem_digest(sources.load("generator:sphere_packing",
                                                                                          n_spheres=8, seed=3))
    sim, = Source.parse("scenario:ball-on-plane", {"mu": 0.2}, name="b").materialise(tmp_path)
    assert sim.describe()["kind"] == "simulation" and sim.describe()["params"] == {"mu": 0.2}
    assert sim.facts.n_contacts == 0 and sim.facts.d == 3
    with pytest.raises(InputError, match=r"scenario 'ball-on-plane' \(b\) failed: .*'muu'"):
        Source.parse("scenario:ball-on-plane", {"muu": 0.2}, name="b").materialise(tmp_path)
    assert Source.parse("scene:rolling-ball-2d").metadata() is None


@pytest.mark.parametrize("spec, params", [("scene:rolling-cube", {}), ("scene:ball-on-plane", {"muu": 0.1}),
                                          ("generator:filling", {}), ("scenario:rolling-ball-2d", {}),
                                          ("nosuch.npz", {}), ("dataset:nosuch", {}), ("scnee:ball", {})])
def test_check_says_what_load_says_without_reading(spec, params):
    """Source.check (asked before a worker loads the problem) refuses what load refuses, in its words."""
    source = sources.Source.parse(spec, params)
    with pytest.raises(InputError) as checked:
        source.check()
    with pytest.raises(InputError) as loaded:
        source.load()
    assert str(checked.value) == str(loaded.value)
    sources.Source.parse("scene:ball-on-plane", {"mu": 0.1}).check()


def test_a_family_stands_for_its_members_tagged_and_refuses_what_it_cannot_give(tmp_path):
    """family:NAME with members = N: its N member datasets (the committed ones, in order), each a file
    source named by its dataset and tagged with the family (or the study's tags); it pickles as its spec
    and parameters; it is no single problem (load names a member's spec); more members than are made,
    a missing count or an unknown family: one line, the first naming the command that makes them."""
    import pickle

    from problems.families import available, member_paths
    from workbench.sources import FamilySource, FileSource, Source
    family = Source.parse("family:settled-00064", {"members": 2})
    assert isinstance(family, FamilySource) and family.origin == "family"
    members = family.members()
    assert [(m.spec, m.name, m.tags) for m in members] == [
        ("dataset:settled-00064-m00", "settled-00064-m00", ("settled-00064",)),
        ("dataset:settled-00064-m01", "settled-00064-m01", ("settled-00064",))]
    assert all(isinstance(m, FileSource) for m in members)
    assert [m.path() for m in members] == member_paths("settled-00064", 2)
    tagged = Source.parse("family:unsettled-00064", {"members": 2}, tags=("unsettled",), series="u")
    assert {(m.tags, m.series) for m in tagged.members()} == {(("unsettled",), "u")}
    copy = pickle.loads(pickle.dumps(family))
    assert copy == family and copy.params == {"members": 2} and len(pickle.dumps(family)) < 1000
    made = family.materialise(tmp_path)
    assert [m.facts.digest for m in made] == [problem_digest(load_problem(p)) for p in member_paths("settled-00064", 2)]
    with pytest.raises(InputError, match=r"a set of problems, not one: name a member \(dataset:settled-00064-m00"):
        family.load()
    with pytest.raises(InputError, match=r"a set of problems"):
        family.check()
    too_many = available("settled-00064") + 1
    with pytest.raises(InputError) as exc:
        Source.parse("family:settled-00064", {"members": too_many}).members()
    assert "\n" not in str(exc.value) and f"workbench generate settled-00064 --members {too_many}" in str(exc.value)
    for params, words in (({}, "needs its member count"), ({"members": 0}, "whole number >= 1"),
                          ({"members": 2, "seed": 1}, "one parameter, members")):
        with pytest.raises(InputError, match=words):
            Source.parse("family:settled-00064", params).members()
    with pytest.raises(InputError, match="unknown dataset family 'settled-0064'"):
        Source.parse("family:settled-0064", {"members": 2}).members()


def test_info_lists_a_familys_members_and_solve_refuses_a_family_in_one_line(capsys):
    from workbench.cli import main
    assert main(["info", "family:settled-00064"]) == 0
    out = capsys.readouterr().out
    assert "dataset:settled-00064-m00" in out and "workbench generate settled-00064 --members N" in out
    assert main(["solve", "family:settled-00064", "--formulation", "dual", "--solver", "apgd"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dataset:settled-00064-m00" in err
