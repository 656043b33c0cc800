"""The CLI: JSON record of `workbench solve`, `info`, `list`, exit codes (0 solved, 1 not solved, 2 bad
input), usage and help texts, one-line errors that name the argument, the value and what is accepted,
the one scene registry, datasets that are never overwritten, and files written atomically."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from factories import random_problem
from formulations import FORMULATIONS
from workbench import __version__
from workbench.cli import main
from workbench.io import save_problem, write_fclib
from workbench.solvers import SOLVERS
from workbench.sources import names

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "problems" / "datasets"
BOX_STACKS = "fclib/Box_Stacks-i0122-82-5.hdf5"


def run_cli(*args):
    """Run the installed entry point in a subprocess: stdout, stderr, exit code."""
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", *map(str, args)], capture_output=True, text=True)
    return proc.stdout, proc.stderr, proc.returncode


def test_solve_json_on_box_stacks_is_converged_and_measured_by_the_workbench(shared_data):
    out, err, code = run_cli("solve", shared_data / BOX_STACKS, "--formulation", "dual", "--solver", "clarabel", "--json")
    assert code == 0, err
    rec = json.loads(out)  # stdout holds exactly one JSON object
    assert set(rec) >= {"problem", "n_contacts", "formulation", "solver", "status", "objective", "iterations",
                        "build_seconds", "solve_seconds", "metrics"}
    assert set(rec["metrics"]) >= {"dual_objective", "siconos_error", "ccp_residual", "complementarity",
                                   "cone_violation"}
    assert rec["n_contacts"] == 82 and rec["status"] == "solved"
    assert rec["metrics"]["relaxed_error"] <= 1e-6
    # the papers' notation: dual objective near -2.3e-5 (issue 2), computed from the impulses
    assert -2.5e-5 < rec["metrics"]["dual_objective"] < -2.1e-5
    assert rec["objective"] == pytest.approx(rec["metrics"]["dual_objective"], rel=1e-12)


def test_info_and_list(capsys):
    assert main(["info", "scene:rolling-ball-2d"]) == 0
    out = capsys.readouterr().out
    assert "n_contacts: 1" in out and "kind: global" in out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "dual" in out and "primal" in out and "clarabel" in out and "scs" in out
    assert "mosek" in out  # listed, available or with the reason


def _write(path, text):
    path.write_text(text)
    return path


def bad_inputs(tmp_path):
    truncated = tmp_path / "truncated.hdf5"
    write_fclib(random_problem(40, 30, seed=2), truncated)
    truncated.write_bytes(truncated.read_bytes()[:1000])
    save_problem(random_problem(4, 3, seed=1).as_local(), tmp_path / "local.npz")
    return {
        "missing file": [tmp_path / "nope.hdf5", "-f", "dual", "-s", "clarabel"],
        "truncated hdf5": [truncated, "-f", "dual", "-s", "clarabel"],
        "malformed dat": [_write(tmp_path / "bad.dat", "3\n1\n0\n3\n3\nfoo\n"), "-f", "dual", "-s", "clarabel"],
        "truncated dat": [_write(tmp_path / "short.dat", "3\n1\n0\n3\n3\n1 0 0\n"), "-f", "dual", "-s", "clarabel"],
        "nan": [_write(tmp_path / "nan.dat", "3\n1\n0\n3\n3\n" + "1 0 0 0 1 0 0 0 1\n" + "nan 0 0\n0.1\n"),
                "-f", "dual", "-s", "clarabel"],
        "negative mu": [_write(tmp_path / "negmu.dat", "3\n1\n0\n3\n3\n" + "1 0 0 0 1 0 0 0 1\n" + "-1 0 0\n-0.1\n"),
                        "-f", "dual", "-s", "clarabel"],
        "wrong sizes": [_write(tmp_path / "sizes.dat", "3\n1\n0\n3\n4\n" + "1 0 0 0 1 0 0 0 1 0 0 0\n" + "-1 0 0\n0.1\n"),
                        "-f", "dual", "-s", "clarabel"],
        "zero contacts": [_write(tmp_path / "zero.dat", "3\n0\n0\n0\n0\n"), "-f", "dual", "-s", "clarabel"],
        "unknown formulation": ["scene:rolling-ball-2d", "-f", "tertiary", "-s", "clarabel"],
        "unknown solver": ["scene:rolling-ball-2d", "-f", "dual", "-s", "gurobbi"],
        "negative tol": ["scene:rolling-ball-2d", "-f", "dual", "-s", "clarabel", "--tol", "-1"],
        "primal of local": [tmp_path / "local.npz", "-f", "primal", "-s", "clarabel"],
    }


CASES = ["missing file", "truncated hdf5", "malformed dat", "truncated dat", "nan", "negative mu", "wrong sizes",
         "zero contacts", "unknown formulation", "unknown solver", "negative tol", "primal of local"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_gives_one_line_and_exit_2(case, tmp_path):
    args = bad_inputs(tmp_path)[case]
    out, err, code = run_cli("solve", *args)
    assert code == 2, (case, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("workbench: error:"), err
    assert "Traceback" not in err


def test_siconos_dat_problem_solves_from_cli(shared_data, tmp_path):
    out, err, code = run_cli("solve", shared_data / "siconos/FC3D_Example1.dat", "-f", "dual", "-s", "scs", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "solved"


def test_shared_prefix_names_a_reference_problem_and_a_missing_root_is_one_line(shared_data):
    out, err, code = run_cli("info", f"shared:{BOX_STACKS}")
    assert code == 0, err
    assert "contacts" in out
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", "info", f"shared:{BOX_STACKS}"],
                          capture_output=True, text=True, env={"PATH": "", "WORKBENCH_SHARED_DATA": "/nonexistent"})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- conventions

def test_exit_codes_say_whether_the_run_was_solved(capsys):
    assert main(["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "clarabel"]) == 0
    assert "status solved" in capsys.readouterr().out
    assert main(["solve", "dataset:settled-00320", "-f", "dual", "-s", "apgd", "--max-iter", "3"]) == 1
    assert "status max_iter" in capsys.readouterr().out
    assert main(["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "clarabel", "--tol", "0"]) == 2


def test_bare_command_help_and_version_print_usage(capsys):
    for argv in ([], ["help"], ["--help"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: workbench") and "exit codes: 0" in out, argv
        # the names a user can give: every formulation, registered solver and scene
        flat = " ".join(out.split())
        for name in [*FORMULATIONS, *(s.replace(":*", ":NAME") for s in SOLVERS), *names("scene", "scenario")]:
            assert re.search(rf"[ :,]{re.escape(name)}(,| |$)", flat), (argv, name)
    assert main(["help", "solve"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: workbench solve") and "1 not solved" in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"workbench {__version__}"
    assert main(["help", "slove"]) == 2
    assert "unknown command 'slove'; did you mean 'solve'?" in capsys.readouterr().err


MESSAGES = [
    (["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "clarabel", "--tol", "-1"],
     ["argument --tol", "'-1'", "positive number"]),
    (["info", "README.md"], ["README.md: not a problem file", "a problem is a file (.hdf5", "scene:NAME"]),
    (["simulate", "filling", "-f", "dual", "-s", "apgd", "--set", "foo=1"],
     ["--set foo=1", "no parameter 'foo'", "known: n, h, duration, mu"]),
    (["export", "scene:rolling-ball-2d", "OUT.npz", "--solve", "newton"],
     ["--solve newton", "takes ncp models", "formulations it can take: ncp"]),
    (["solve", "scene:rolling-ball-2d", "-f", "duall", "-s", "apgd"],
     ["--formulation duall", "did you mean 'dual'?", "known: primal, dual"]),
    (["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "newton"], ["--solver newton", "formulations it can take: ncp"]),
    (["info", "scene:rolling-cube"], ["scene:rolling-cube", "unknown scene", "known: rolling-ball-2d, ball-on-plane"]),
    (["simulate", "rolling-ball-2d", "-f", "dual", "-s", "apgd"], ["SCENE rolling-ball-2d", "known: ball-on-plane"]),
    (["generate", "settled", "--set", "n=many"], ["n='many'", "expected int"]),
    (["generate", "settled", "--set", "spheres=64"], ["'dataset settled' has no parameter 'spheres'", "known: n, duration"]),
]


@pytest.mark.parametrize("argv, fragments", MESSAGES, ids=[" ".join(m[0][:2]) for m in MESSAGES])
def test_messages_name_the_argument_the_value_and_what_is_accepted(argv, fragments, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO if argv[1] == "README.md" else tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_every_scene_the_docs_list_is_one_registry_entry_for_every_command(capsys):
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    paragraph = next(p for p in readme.split("\n\n") if "Scenes:" in p)
    listed = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)*)`", paragraph))
    dynamic = set(names("scenario"))
    assert listed and listed <= set(names("scene", "scenario")), listed
    assert listed >= dynamic  # the docs list every dynamic scene
    for scene in sorted(listed):
        assert main(["info", f"scene:{scene}"]) == 0, scene
        assert re.search(r"n_contacts: [1-9]", capsys.readouterr().out), scene
    from workbench.study import load_study
    scene = sorted(dynamic)[0]
    study = REPO / "studies" / "quickstart.toml"
    assert load_study(study)  # the quickstart's scenes resolve through the same registry
    assert main(["solve", f"scene:{scene}", "-f", "dual", "-s", "clarabel"]) == 0
    assert main(["compare", f"scene:{scene}", "-f", "dual", "-s", "clarabel", "-s", "scs"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"| {scene}-step0 |") == 2 and "warm-up s" in out


def test_solve_json_reports_the_warm_up_apart_from_the_timed_solve():
    out, err, code = run_cli("solve", "scene:ball-on-plane", "-f", "anti-relaxed", "-s", "apgd", "--json")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["status"] == "solved" and rec["n_contacts"] == 1
    # the first call of the compiled kernels (load or compile) is paid before the clock starts
    assert rec["warm_up_seconds"] > 0 and rec["solve_seconds"] < rec["warm_up_seconds"]


def test_generate_never_overwrites_an_existing_dataset_without_force(tmp_path, capsys):
    committed = {p: p.read_bytes() for p in DATASETS.glob("settled-00320*")}
    # the default folder holds the committed datasets: other parameters stop before anything runs
    assert main(["generate", "settled", "--quiet", "--set", "seed=1"]) == 2
    err = capsys.readouterr().err
    assert "settled-00320.npz exists (a committed dataset), made with other parameters" in err and "--force" in err
    # the same parameters: the file is kept, nothing runs
    assert main(["generate", "settled", "--quiet"]) == 0
    assert "settled-00320: kept (made with the same parameters)" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in DATASETS.glob("settled-00320*")} == committed
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(DATASETS / "settled-00320.npz", copy / "settled-00320.npz")
    assert main(["generate", "settled", "--set", "tol=1e-5", "--out", str(copy), "--quiet"]) == 2
    assert "--force" in capsys.readouterr().err
    assert (copy / "settled-00320.npz").read_bytes() == committed[DATASETS / "settled-00320.npz"]


def test_generate_reports_kinetic_energy_and_warns_when_not_settled(tmp_path, capsys):
    from problems.generator import SETTLED_ENERGY
    from problems.rigid import GRAVITY
    from workbench.io import load_problem

    args = ["generate", "settled", "--quiet", "--out", str(tmp_path), "--set", "n=18", "--set", "width=8",
            "--set", "h=0.01", "--set", "solver=clarabel", "--set", "tol=1e-5"]
    assert main(args + ["--set", "duration=0.2"]) == 0  # 20 steps: still falling
    err = capsys.readouterr().err
    assert re.search(r"settled-00018: \d+ contacts, kinetic energy", err) and "warning: settled-00018 is not settled" in err
    meta = load_problem(tmp_path / "settled-00018.npz").metadata
    assert meta["kinetic_energy"] > SETTLED_ENERGY * 18 * GRAVITY  # the criterion: KE <= 1e-4 sum m g R
    assert main(args + ["--set", "duration=0.3"]) == 2  # exists now, made with other parameters
    assert main(args + ["--set", "duration=0.3", "--force"]) == 0
    # the committed settled packing meets the criterion (1 kg, R = 1 m spheres); at h = 0.0005 s with warm
    # starts the poorly settled one (10 iterations per step) has more kinetic energy, but not above it
    ratio = {name: meta["kinetic_energy"] / (meta["n_bodies"] * GRAVITY) for name in ("settled", "unsettled")
             for meta in [load_problem(DATASETS / f"{name}-00320.npz").metadata]}
    assert ratio["settled"] < ratio["unsettled"] and ratio["settled"] < SETTLED_ENERGY


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield 0o640
    os.umask(old)


def test_atomic_output_leaves_no_half_file_and_follows_the_umask(tmp_path, umask_027):
    from workbench.files import atomic_output

    target = tmp_path / "result.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["result.csv"]
    with atomic_output(target) as tmp:
        tmp.write_text("new\n")
        Path(f"{tmp}.json").write_text("{}")  # a sidecar moves with it
        os.chmod(tmp, 0o600)  # as MOSEK leaves its files
    assert target.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == ["result.csv", "result.csv.json"]
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {umask_027}


def test_every_export_format_gets_the_same_permissions(tmp_path, umask_027):
    from workbench.export import FORMATS, export

    p = random_problem(4, 3, seed=10)
    written = []
    for fmt, spec in FORMATS.items():
        if fmt in ("ptf", "task"):
            pytest.importorskip("mosek")
        formulation = "dual" if spec.kind == "model" else "raw"
        written += export(p, formulation, fmt, tmp_path / f"out{spec.suffixes[0]}")
    assert {stat.S_IMODE(f.stat().st_mode) for f in written} == {umask_027}
    assert sorted(os.listdir(tmp_path)) == sorted(f.name for f in written)  # no temporary left behind


def test_set_gives_a_generator_its_parameters_in_process_and_in_the_time_limited_worker(capsys):
    """`--set` reaches the generator: the packing's size follows n_spheres, in info and in a solve run
    in this process or (with --time-limit) in the killable worker, which loads the spec itself."""
    assert main(["info", "generator:sphere_packing", "--set", "n_spheres=40", "--set", "seed=3"]) == 0
    info = capsys.readouterr().out
    assert re.search(r"name: sphere-packing-40-s3", info) and re.search(r"n_dof: 240\b", info)
    for extra in ([], ["--time-limit", "30"]):
        assert main(["solve", "generator:sphere_packing", "--set", "n_spheres=40", "-f", "dual", "-s", "apgd",
                     "--tol", "1e-6", "--json", *extra]) == 0
        rec = json.loads(capsys.readouterr().out)
        assert rec["problem"] == "sphere-packing-40-s0" and rec["status"] == "solved"
    assert main(["info", "dataset:settled-00320", "--set", "n=3"]) == 2     # a file takes no parameters
    assert "a file takes no parameters" in capsys.readouterr().err


# --------------------------------------------------------------------------- typical mistakes: one line that says what to do
MISTAKES = {
    # what was typed -> words the one-line answer must hold (the fix, not only the fault)
    ("solve", "rolling-ball-2d", "-f", "dual", "-s", "clarabel"): ["did you mean scene:rolling-ball-2d?"],
    ("solve", "settled-00320", "-f", "dual", "-s", "apgd"): ["did you mean dataset:settled-00320?"],
    ("solve", "scene:rolling-bal-2d", "-f", "dual", "-s", "clarabel"): ["did you mean 'rolling-ball-2d'?"],
    ("solve", "scene:rolling-ball-2d", "-f", "duel", "-s", "clarabel"): ["did you mean 'dual'?"],
    ("solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "clarabl"): ["did you mean 'clarabel'?"],
    ("solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--set", "max_iter=10"):
        ["problem's own parameters", "--param KEY=VALUE"],
    ("solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--param", "max_itr=10"):
        ["--max-iter on the command line", "[methods.NAME] max_iter"],
    ("solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--param", "tol=1e-3"): ["--tol on the command line"],
    ("solve", "scene:rolling-ball-2d", "-f", "ncp", "-s", "clarabel"): ["formulations it can take: primal, dual"],
    ("run", "no-such-study.toml"): ["no such study file", "studies/quickstart.toml"],
    ("report", "no-such-results"): ["no such results folder", "the folder `workbench run` wrote"],
    ("solv", "scene:rolling-ball-2d"): ["did you mean 'solve'?"],
}


@pytest.mark.parametrize("typed", list(MISTAKES), ids=[" ".join(t) for t in MISTAKES])
def test_a_typical_mistake_is_answered_with_what_to_do(typed, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])   # the repository root, where studies/ is
    try:
        code = main(list(typed))
    except SystemExit as exc:    # argparse's own refusals exit
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    for words in MISTAKES[typed]:
        assert words in err, (words, err)


def test_a_second_run_of_a_finished_study_says_nothing_was_measured_and_how_to_measure_again(tmp_path, capsys):
    study = _write(tmp_path / "s.toml", '[study]\nname = "again"\n\n[[problems]]\nscenes = ["rolling-ball-2d"]\n\n'
                   '[methods.clarabel]\nformulation = "dual"\nsolver = "clarabel"\n')
    args = ["run", str(study), "--out", str(tmp_path / "r"), "--no-report", "--no-progress"]
    assert main(args) == 0
    assert "NOTHING WAS MEASURED" not in capsys.readouterr().err
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "again: NOTHING WAS MEASURED: all 1 runs are already recorded" in err
    assert "--rerun" in err and "--out NEW_FOLDER" in err
