"""The fast conformance subset: every (formulation, solver) pair of studies/conformance.toml on the
reference problems with up to 100 contacts, default preset, 5 s time limit, two jobs. Fails on any
crash, any traceback in the worker log and any run over its time limit by more than 2 s."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from workbench.io import load_problem
from workbench.report.conformance import OVERRUN, check_conformance, method_table

ROOT = Path(__file__).resolve().parents[1]
MAX_CONTACTS = 100
TIME_LIMIT = 5.0


def _fast_study(shared_data: Path, tmp_path: Path) -> Path:
    """studies/conformance.toml with the small problems, one preset and the short limit."""
    doc = (ROOT / "studies" / "conformance.toml").read_text(encoding="utf-8")
    head, sep, methods = doc.partition('[methods."')
    files = [p for p in sorted(shared_data.glob("*/*")) if p.suffix in (".hdf5", ".dat")
             and load_problem(p).n_contacts <= MAX_CONTACTS]
    assert len(files) >= 30
    study = tomllib.loads(head)["study"]
    lines = ["[study]", 'name = "conformance-fast"', f"time_limit = {TIME_LIMIT}", 'tolerance = "default"',
             "histories = false", f"repetitions = {study['repetitions']}", "", "[[problems]]",
             "files = [" + ", ".join(f'"{p}"' for p in files) + "]", ""]
    path = tmp_path / "conformance-fast.toml"
    path.write_text("\n".join(lines) + sep + methods, encoding="utf-8")
    return path


@pytest.mark.slow
def test_fast_conformance_subset(shared_data, tmp_path):
    study = _fast_study(shared_data, tmp_path)
    out = tmp_path / "results"
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(study), "--out", str(out), "--jobs", "2",
                           "--no-report", "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    report = check_conformance(out)
    runs = report["runs"]
    table = method_table(runs)
    print(table.to_string())
    print(f"{len(runs)} runs in {elapsed:.0f} s")
    crashes = report["crashes"][["problem", "method", "message"]].to_string()
    assert report["crashes"].empty, f"crashed runs:\n{crashes}"
    assert report["tracebacks"] == 0, (out / "logs" / "worker.log").read_text()[-3000:]
    assert report["overruns"].empty, f"runs over {TIME_LIMIT} + {OVERRUN} s:\n" + \
        report["overruns"][["problem", "method", "wall_seconds"]].to_string()
    # every planned pair ran, and the local problems were not given the primal formulations
    assert runs["pair"].nunique() >= 30
    assert not runs[(runs["kind"] == "local") & runs["formulation"].str.startswith("primal")].shape[0]


def test_the_results_page_is_the_method_table_and_the_promises(tmp_path, capsys):
    """``--results-page``'s data and page (workbench.provenance): one row per pair, as method_table
    counts them, and the three promises; the page re-renders from its raw data."""
    from workbench import provenance
    from workbench.cli import main
    from workbench.report.conformance import page_data, render_page
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "c"\ntime_limit = 5.0\n[[problems]]\nscenes = ["rolling-ball-2d", "box-on-plane"]\n'
                     '[methods.a]\nformulation = "dual"\nsolver = "clarabel"\n'
                     '[methods.b]\nformulation = "ncp"\nsolver = "newton"\n')
    assert main(["run", str(study), "--out", str(tmp_path / "r"), "--no-report", "--no-progress"]) == 0
    report = check_conformance(tmp_path / "r")
    capsys.readouterr()
    assert main(["conformance", str(tmp_path / "r"), "--matrix"]) == 0      # the command: no promise broken
    assert "4 runs on 2 problems, 2 (formulation, solver) pairs" in capsys.readouterr().out
    assert main(["conformance", str(tmp_path / "nothing")]) == 2
    page = provenance.write_results("conformance-demo", page_data(report), render_page, command="demo",
                                    folder=tmp_path / "docs" / "results")
    text = page.read_text()
    for pair, row in method_table(report["runs"]).iterrows():
        assert f"| {pair} | {row['runs']:.0f} | {row['solved']:.0f} | {row['inaccurate']:.0f} |" in text
    assert "4 runs on 2 problems, 2 (formulation, solver) pairs" in text and "Crashes 0, tracebacks 0" in text
    assert provenance.check_docs(tmp_path, [render_page]) == []
