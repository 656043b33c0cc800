"""The CLI: JSON record of `workbench solve`, `info`, `list`, and one-line errors with exit code 2."""

import json
import subprocess
import sys

import pytest

from workbench.cli import main

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
    # the seeds' notation: dual objective near -2.3e-5 (issue 2), computed from the impulses
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


def bad_inputs(tmp_path, shared_data):
    truncated = tmp_path / "truncated.hdf5"
    truncated.write_bytes((shared_data / BOX_STACKS).read_bytes()[:1000])
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
        "primal of local": [shared_data / "fclib/Capsules-i125-1213.hdf5", "-f", "primal", "-s", "clarabel"],
    }


CASES = ["missing file", "truncated hdf5", "malformed dat", "truncated dat", "nan", "negative mu", "wrong sizes",
         "zero contacts", "unknown formulation", "unknown solver", "negative tol", "primal of local"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_gives_one_line_and_exit_2(case, tmp_path, shared_data):
    args = bad_inputs(tmp_path, shared_data)[case]
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
