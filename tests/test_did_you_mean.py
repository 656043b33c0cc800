"""Every name a user types (solver, formulation, scene, generator, dataset, reference problem, study
key, report section, --param and --set keys, export format, a command or an option's choice) that is
not known gets the same answer: one line, exit code 2, the closest known name ("did you mean 'X'?")
and the list of the known ones (workbench.errors.did_you_mean)."""

import re

import pytest

from workbench.cli import main
from workbench.errors import did_you_mean

SCENE = "scene:rolling-ball-2d"
STUDY = '[study]\nname = "t"\n{study}\n[[problems]]\nscenes = ["rolling-ball-2d"]\n[methods.m]\nformulation = "dual"\n' \
        'solver = "{solver}"\n{method}{report}'

# argv (a study file's text is written to study.toml), the name meant, a few of the known names
CASES = {
    "solver": (["solve", SCENE, "-f", "dual", "-s", "clarabl"], "clarabel", ["scs", "apgd"]),
    "formulation": (["solve", SCENE, "-f", "dul", "-s", "clarabel"], "dual", ["primal", "ncp"]),
    "scene": (["info", "scene:rolling-bal-2d"], "rolling-ball-2d", ["ball-on-plane", "filling"]),
    "dynamic scene": (["simulate", "ball-on-plan", "-f", "dual", "-s", "apgd"], "ball-on-plane", ["filling"]),
    "generator": (["info", "generator:sphere_pacing"], "sphere_packing", []),
    "generator parameter": (["info", "generator:sphere_packing", "--set", "n_sphere=3"], "n_spheres", ["seed"]),
    "scene parameter": (["info", SCENE, "--set", "m=0.3"], "mu", ["v0"]),
    "dataset": (["info", "dataset:setled-00320"], "settled-00320", ["unsettled-00320", "scaling-00064"]),
    "generated dataset": (["generate", "setled", "--out", "OUT"], "settled", ["unsettled", "scaling"]),
    "--param key": (["solve", SCENE, "-f", "ncp", "-s", "pqn", "--param", "fallbak=pgs"], "fallback", ["delta"]),
    "--param choice": (["solve", SCENE, "-f", "ncp", "-s", "pqn", "--param", "fallback=pgss"], "pgs", ["jacobi"]),
    "list --params": (["list", "--params", "apgdd"], "apgd", ["dual", "clarabel"]),
    "export format": (["export", SCENE, "out.cbf", "-f", "dual", "--to", "cbff"], "cbf", ["mps", "fclib"]),
    "command": (["slove"], "solve", ["info", "export"]),
    "option choice": (["run", "study.toml", "--executor", "dsk"], "dask", ["local"]),
    "study key": (STUDY.format(study="repetiton = 2", solver="clarabel", method="", report=""),
                  "repetitions", ["time_limit"]),
    "study method key": (STUDY.format(study="", solver="clarabel", method="max_iters = 10\n", report=""), "max_iter",
                         ["tolerance"]),
    "study solver": (STUDY.format(study="", solver="clarabl", method="", report=""), "clarabel", ["scs"]),
    "report section": (STUDY.format(study="", solver="clarabel", method="",
                                    report='[report]\nsections = ["summary", "profils"]\n'), "profiles", ["tables"]),
    "tolerance preset": (STUDY.format(study='tolerance = "hihg_accuracy"', solver="clarabel", method="", report=""),
                         "high_accuracy", ["default"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mistyped_name_gets_the_closest_and_the_known_names(case, capsys, tmp_path, monkeypatch):
    argv, meant, others = CASES[case]
    monkeypatch.chdir(tmp_path)
    if isinstance(argv, str):  # a study file
        (tmp_path / "study.toml").write_text(argv)
        argv = ["run", "study.toml", "--out", "results", "--no-report", "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: "), err
    assert f"did you mean {meant!r}?" in err, err
    known = re.search(r"known: (.*)$", err.strip()).group(1).split(", ")
    assert meant in known and set(others) <= set(known), err
    assert not list(tmp_path.rglob("*.parquet")) and not (tmp_path / "OUT").exists()


def test_a_mistyped_reference_problem_lists_the_reference_problems(tmp_path, monkeypatch, capsys):
    for rel in ("fclib/Box_Stacks-i0122-82-5.hdf5", "siconos/FC3D_Example1.dat"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    monkeypatch.setenv("WORKBENCH_SHARED_DATA", str(tmp_path))
    assert main(["info", "shared:fclib/Box_Stack.hdf5"]) == 2
    err = capsys.readouterr().err
    assert ("unknown reference problem 'fclib/Box_Stack.hdf5'; did you mean 'fclib/Box_Stacks-i0122-82-5.hdf5'? "
            "known: fclib/Box_Stacks-i0122-82-5.hdf5, siconos/FC3D_Example1.dat") in err, err


def test_the_hint_names_the_closest_of_each_name_and_lists_all_when_none_is_close():
    assert did_you_mean("dul", ["primal", "dual"]) == "did you mean 'dual'? known: primal, dual"
    assert did_you_mean("zzz", ["primal", "dual"]) == "known: primal, dual"
    assert did_you_mean(["tl", "omeg"], ["tol", "omega", "seed"]) == \
        "did you mean 'tol' or 'omega'? known: tol, omega, seed"
    assert did_you_mean("x", []) == "known: none"
