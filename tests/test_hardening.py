"""Regression tests of issue 24, one (or a few) per class of hostile input: names that are paths,
roots that are left, unbounded work, blocking files, deep nesting, plugins that exit, two runs on
one results folder, file-system errors, time limits through the Python API, absolute paths in
exports, and the Siconos reader of a global .dat. The command line runs in-process
(``workbench.cli.main``), so each case costs milliseconds."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
STUDY = """[study]
name = {name}
time_limit = 5
{extra}
[[problems]]
{problems}
[methods.a]
formulation = "dual"
solver = "apgd"
"""


def study(tmp: Path, name='"s"', extra="", problems='scenes = ["rolling-ball-2d"]', file="study.toml") -> Path:
    path = tmp / file
    path.write_text(STUDY.format(name=name, extra=extra, problems=problems))
    return path


def refused(capsys, argv, *words) -> str:
    """Run the CLI; assert exit 2, one 'workbench: error:' line holding every word; the line."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("workbench: error: "), err
    for w in words:
        assert w in err[0], err[0]
    return err[0]


# --------------------------------------------------------------------------- containment
@pytest.mark.parametrize("name", ['"../../x"', '"/tmp/abs-name"', '"a/b"', '".hidden"', '".."', '"a\\u0000b"'])
def test_a_study_name_is_a_name_not_a_path(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    refused(capsys, ["run", study(tmp_path, name=name), "--no-report"], "not a plain name")
    assert not (tmp_path / "results").exists() and not Path("/tmp/abs-name").exists()


def test_report_never_takes_its_folder_from_a_received_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    given = tmp_path / "given"
    given.mkdir()
    plan = {"study": "../../escaped", "time_limit": 1, "repetitions": 1, "methods": [], "problems": [], "runs": [],
            "skipped": [], "report": {}}
    (given / "plan.json").write_text(json.dumps(plan))
    refused(capsys, ["report", given], "plan.json study", "not a plain name")
    plan["study"], plan["time_limit"] = "ok", "soon"
    (given / "plan.json").write_text(json.dumps(plan))
    refused(capsys, ["report", given], "time_limit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["given"]


@pytest.fixture()
def shared_root(tmp_path, monkeypatch):
    """A reference-data folder with one real file, a link out of it, and a secret beside it."""
    root = tmp_path / "shared"
    (root / "siconos").mkdir(parents=True)
    from problems.scenes import rolling_ball_2d
    from workbench.io import write_siconos_dat
    write_siconos_dat(rolling_ball_2d(), root / "siconos" / "ok.dat")
    (tmp_path / "secret.dat").write_bytes((root / "siconos" / "ok.dat").read_bytes())
    os.symlink(tmp_path / "secret.dat", root / "siconos" / "link.dat")
    monkeypatch.setenv("WORKBENCH_SHARED_DATA", str(root))
    return root


@pytest.mark.parametrize("spec", ["shared:../secret.dat", "shared:/etc/hostname", "shared:siconos/../../secret.dat",
                                  "shared:siconos/link.dat", "dataset:../../pyproject.toml", "dataset:/etc/hostname"])
def test_shared_and_dataset_stay_in_their_roots(shared_root, capsys, spec):
    line = refused(capsys, ["info", spec])
    assert "outside" in line or "without '..'" in line


def test_shared_inside_its_root_still_reads(shared_root, capsys):
    assert main(["info", "shared:siconos/ok.dat"]) == 0
    assert "n_contacts: 1" in capsys.readouterr().out


def test_study_files_stay_in_the_allowed_roots(tmp_path, shared_root, capsys):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "here.dat").write_bytes((shared_root / "siconos" / "ok.dat").read_bytes())
    os.symlink(tmp_path / "secret.dat", folder / "out.dat")
    for files, words in ((["/etc/*"], ("outside the study file's folder", "WORKBENCH_STUDY_ROOTS")),
                         (["../secret.dat"], ("outside",)),
                         (["*.dat"], ("resolves to", "secret.dat")),  # the link leads out
                         (["shared:siconos/*.dat"], ("resolves to",))):
        path = study(folder, problems=f"files = {json.dumps(files)}")
        refused(capsys, ["run", path, "--out", tmp_path / "r", "--no-report"], *words)


def test_a_glob_is_bounded_in_what_it_walks_and_matches(tmp_path, monkeypatch, capsys):
    from workbench.errors import InputError
    from workbench.study.spec import bounded_glob
    for i in range(5):
        (tmp_path / f"p{i}.dat").write_text("x")
    monkeypatch.setenv("WORKBENCH_MAX_FILES", "3")
    with pytest.raises(InputError, match="WORKBENCH_MAX_FILES"):
        bounded_glob(tmp_path / "**" / "*.dat", "w")
    monkeypatch.setenv("WORKBENCH_MAX_FILES", "10")
    assert [p.name for p in bounded_glob(tmp_path / "**" / "p?.dat", "w")] == [f"p{i}.dat" for i in range(5)]
    # the whole disk: the walk stops after its budget of 10 x FILES entries, counted (not timed: load
    # would change a time); it reads a folder's entries whole, so at most the budget plus one folder's
    import workbench.study.spec as spec
    seen, scandir = [], os.scandir

    def counting_scandir(*args, **kwargs):
        entries = list(scandir(*args, **kwargs))
        seen.append(len(entries))
        return contextlib.nullcontext(iter(entries))

    monkeypatch.setattr(spec.os, "scandir", counting_scandir)
    monkeypatch.setenv("WORKBENCH_MAX_FILES", "5")
    with pytest.raises(InputError, match="walks more than 50 "):
        bounded_glob(Path("/**/no-such-file-anywhere"), "w")
    assert sum(seen[:-1]) <= 50 < sum(seen)


def test_markdown_report_escapes_what_it_shows():
    import pandas as pd

    from workbench.report.document import Code, Figure, Heading, Table, Text, render_markdown
    evil = '<script>alert(1)</script> <img src=x onerror="alert(2)"> [link](javascript:alert(3)) `code` |'
    blocks = [Heading(1, evil), Text(evil), Table(pd.DataFrame({evil: [evil]}, index=pd.Index([evil])), evil),
              Figure("figures/a.png", evil), Code("```\n<script>x</script>\n```")]
    md = render_markdown(evil, blocks)
    body, fenced = md.split("\n````\n", 1)
    assert "<script" not in body and "<img" not in body
    assert "[link](javascript" not in body.replace("\\[link\\](javascript", "")  # only escaped: no link
    assert "&lt;script&gt;" in body and "\\[link\\]" in body
    assert fenced.startswith("```\n<script>x</script>\n```\n````")  # the fence outlasts the text's own


# --------------------------------------------------------------------------- bounded work
@pytest.mark.parametrize("argv,words", [
    (["run", "{study}", "--repetitions", "1000000000"], ("WORKBENCH_MAX_RUNS", "100000 runs")),
    (["simulate", "ball-on-plane", "-f", "dual", "-s", "apgd", "--steps", "1000000000000"], ("WORKBENCH_MAX_STEPS",)),
    (["simulate", "ball-on-plane", "-f", "dual", "-s", "apgd", "--dt", "1e-300"], ("WORKBENCH_MAX_STEPS",)),
    (["simulate", "ball-on-plane", "-f", "dual", "-s", "apgd", "--set", "duration=1e308"], ("WORKBENCH_MAX_STEPS",)),
    (["info", "generator:sphere_packing", "--set", "n_spheres=1000000000"], ("WORKBENCH_MAX_SIZE",)),
    (["info", "generator:sphere_packing", "--set", "n_spheres=1e9"], ("whole number",)),
    (["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--time-limit", "1e308"], ("WORKBENCH_MAX_SECONDS",)),
    (["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--max-iter", "10" * 20], ("WORKBENCH_MAX_ITER",)),
    (["run", "{study}", "--jobs", "100000"], ("WORKBENCH_MAX_JOBS",)),
    (["generate", "scaling", "--sizes", "1000000000", "--out", "g"], ("WORKBENCH_MAX_SIZE",)),
    (["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--param", "x=" + "[" * 100 + "]" * 100],
     ("WORKBENCH_MAX_DEPTH",)),
])
def test_absurd_options_are_refused_naming_the_limit(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    path = study(tmp_path)
    refused(capsys, [a.replace("{study}", str(path)) for a in argv], *words)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("extra,problems,words", [
    ("repetitions = 1000000000", None, ("[study] repetitions", "WORKBENCH_MAX_RUNS")),
    ("time_limit_x = 1", None, ("unknown key",)),
    (None, 'generator = "sphere_packing"\nsweep = { n_spheres = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], seed = '
           '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], mu = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], jitter = '
           '[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], h = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }',
     ("sweep: its product", "110000", "WORKBENCH_MAX_RUNS")),
    (None, 'generator = "sphere_packing"\nparams = { n_spheres = 1000000000 }', ("WORKBENCH_MAX_SIZE",)),
    (None, 'scenario = "ball-on-plane"\nparams = { duration = 1e308 }', ("WORKBENCH_MAX_STEPS",)),
    (None, 'generator = "sphere_packing"\nparams = { n_spheres = 4 }\nname = "../../x-{n_spheres}"',
     ("problem name", "not a plain name")),
])
def test_absurd_study_values_are_refused_naming_the_limit(tmp_path, monkeypatch, capsys, extra, problems, words):
    monkeypatch.chdir(tmp_path)
    kwargs = {"extra": extra} if extra else {"problems": problems}
    if extra and "time_limit_x" in extra:
        kwargs["extra"] = "[tolerances.x]\ntol = 1\n" + extra
    refused(capsys, ["run", study(tmp_path, **kwargs), "--no-report"], *words)


def test_the_run_limit_is_raised_by_its_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_MAX_RUNS", "2")
    refused(capsys, ["run", study(tmp_path, extra="repetitions = 3"), "--no-report"], "over the limit of 2 runs")
    monkeypatch.setenv("WORKBENCH_MAX_RUNS", "nope")
    refused(capsys, ["run", study(tmp_path), "--no-report"], "WORKBENCH_MAX_RUNS", "'nope'")


def test_a_fifo_study_or_problem_does_not_block(tmp_path, capsys):
    os.mkfifo(tmp_path / "s.toml")
    os.mkfifo(tmp_path / "p.dat")
    refused(capsys, ["run", tmp_path / "s.toml"], "FIFO")
    refused(capsys, ["info", tmp_path / "p.dat"], "FIFO")


@pytest.mark.parametrize("text", ["[study]\nname = " + "[" * 100_000 + "]" * 100_000,
                                  "[study]\nname = " + "{a = " * 100_000 + "1" + "}" * 100_000,
                                  "[study]\nname = " + "[" * 40 + "]" * 40])
def test_deeply_nested_study_files_give_one_line(tmp_path, capsys, text):
    (tmp_path / "deep.toml").write_text(text)
    refused(capsys, ["run", tmp_path / "deep.toml"], "WORKBENCH_MAX_DEPTH")


def test_a_deep_plan_json_gives_one_line(tmp_path, capsys):
    (tmp_path / "plan.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(capsys, ["report", tmp_path], "WORKBENCH_MAX_DEPTH")


@pytest.mark.parametrize("body", ["raise SystemExit(0)", "import sys; sys.exit()", "raise KeyError('x')",
                                  "raise GeneratorExit"])
def test_a_plugin_that_exits_is_a_failure(tmp_path, monkeypatch, capsys, body):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugin.py").write_text(body + "\n")
    refused(capsys, ["run", study(tmp_path, extra='plugins = ["plugin.py"]'), "--no-report"], "plugin", "failed")


def test_systemexit_inside_a_command_is_not_a_silent_success(monkeypatch, capsys):
    import workbench.commands.solve as solve_cmd

    def leave(args):
        raise SystemExit(0)
    monkeypatch.setattr(solve_cmd, "cmd_info", leave)  # register() reads it as main builds the parser
    assert main(["info", "scene:rolling-ball-2d"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SystemExit(0)" in err[0]


# --------------------------------------------------------------------------- one run per results folder
def test_a_second_run_on_a_locked_folder_is_refused(tmp_path, monkeypatch, capsys):
    from workbench.study.store import ResultStore
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "res"
    with ResultStore(out).locked():
        line = refused(capsys, ["run", study(tmp_path), "--out", out, "--no-report"], str(out), f"pid {os.getpid()}")
        assert "in use" in line
        assert (out / ".lock").read_text() == str(os.getpid())
    with ResultStore(out).locked():  # released: it can be taken again
        pass


def test_the_lock_holds_across_processes(tmp_path):
    code = ("import sys, time; from workbench.study.store import ResultStore\n"
            "with ResultStore(sys.argv[1]).locked():\n    print('held', flush=True); time.sleep(30)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "res")], stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout.readline().strip() == b"held"
        from workbench.errors import InputError
        from workbench.study.store import ResultStore
        with pytest.raises(InputError, match=f"pid {holder.pid}"):
            with ResultStore(tmp_path / "res").locked():
                pass
    finally:
        holder.kill()
        holder.wait()


def test_cleanup_spares_the_partial_files_of_a_live_writer(tmp_path):
    from workbench.files import PARTIAL, atomic_output, remove_partial
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / f".x.{int(dead.stdout)}-abc{PARTIAL}").mkdir()  # its writer has exited
    with atomic_output(tmp_path / "y.txt") as tmp:
        tmp.write_text("in flight")
        remove_partial(tmp_path)  # another run's start-up clean-up, while this writer is alive
        assert tmp.read_text() == "in flight"
    assert (tmp_path / "y.txt").read_text() == "in flight"
    assert not list(tmp_path.glob(f".*{PARTIAL}"))


# --------------------------------------------------------------------------- file-system errors
def test_file_system_errors_are_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    solve = ["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd"]
    refused(capsys, solve + ["--history", "adir"], "adir", "is a folder")
    refused(capsys, ["export", "scene:rolling-ball-2d", "adir", "--to", "npz"], "adir", "is a folder")
    refused(capsys, ["export", "scene:rolling-ball-2d", "afile/x.npz"], "Not a directory")
    refused(capsys, ["run", study(tmp_path), "--out", "afile", "--no-report"], "afile")
    refused(capsys, ["run", study(tmp_path), "--out", "afile/sub", "--no-report"], "afile/sub")


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    import pandas as pd

    from workbench.study.store import ResultStore
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pd.DataFrame, "to_csv", _full_disk)
    refused(capsys, ["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--history", "h.csv"],
            "h.csv", "No space left on device")
    monkeypatch.setattr(ResultStore, "write_text", lambda self, rel, text: _full_disk())
    refused(capsys, ["run", study(tmp_path), "--out", "res", "--no-report"], "No space left on device")
    assert not list(tmp_path.glob("**/*.partial"))


def test_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    import tempfile
    monkeypatch.chdir(tmp_path)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    refused(capsys, ["export", "scene:rolling-ball-2d", "o.npz"], "o.npz", "Read-only file system")


# --------------------------------------------------------------------------- exports
def test_exports_carry_no_absolute_path(tmp_path, monkeypatch, capsys):
    from problems.synthetic import sphere_packing
    from workbench.io import write_siconos_dat
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "deep" / "folder"
    source.mkdir(parents=True)
    write_siconos_dat(sphere_packing(8, seed=1).as_local(), source / "p.dat")
    for out, extra in (("o.npz", []), ("o.dat", []), ("o.hdf5", []), ("o.mat", []), ("o.lp", ["-f", "dual"]),
                       ("o.cbf", ["-f", "dual"]), ("o.nl", ["-f", "dual"]), ("o.mps", ["-f", "dual"])):
        assert main(["export", str(source / "p.dat"), out, *extra]) == 0, capsys.readouterr().err
    capsys.readouterr()
    for f in tmp_path.iterdir():
        if f.is_file():
            assert str(source).encode() not in f.read_bytes(), f
    info = json.loads(str(np.load(tmp_path / "o.npz")["info"]))
    assert info["source"] == "p.dat"


def test_exporting_a_global_problem_to_dat_says_what_siconos_reads(tmp_path, monkeypatch, capsys):
    from problems.synthetic import sphere_packing
    from workbench.io import save_problem
    monkeypatch.chdir(tmp_path)
    save_problem(sphere_packing(8, seed=1), tmp_path / "g.npz")
    assert main(["export", "g.npz", "g.dat"]) == 0
    err = capsys.readouterr().err
    assert "global problem" in err and "globalFrictionContact_new_from_filename" in err and "misread" in err
    header = json.loads((tmp_path / "g.dat.json").read_text())
    assert "globalFrictionContact_new_from_filename" in header["siconos_reader"]
    assert main(["export", "g.npz", "l.dat", "-f", "local"]) == 0
    assert "note" not in capsys.readouterr().err
    assert "frictionContact_new_from_filename" in json.loads((tmp_path / "l.dat.json").read_text())["siconos_reader"]


# --------------------------------------------------------------------------- time limits (Python API)
def test_pqn_gives_no_fallback_after_its_time_limit():
    from problems.synthetic import sphere_packing
    from workbench.method import Method, solve
    from workbench.solvers import SolveOptions
    Method("ncp", "pqn").warm_up()
    problem = sphere_packing(3000, seed=2)
    res = solve(problem, "ncp", "pqn", SolveOptions(tol=1e-14, time_limit=0.5, params={"max_matvec": 10**9}))
    assert res.status == "timeout", res.message
    assert "no time left" in res.message and "fallback" not in res.info
    assert res.solve_seconds <= 0.5 + 2.0, res.solve_seconds


def test_siconos_time_limit_counts_from_its_start_up(shared_data):
    from workbench.io import load_problem
    from workbench.method import solve
    from workbench.solvers import SolveOptions, get_solver
    ok, why = get_solver("siconos:NSGS").availability()
    if not ok:
        pytest.skip(why)
    problem = load_problem(shared_data / "fclib" / "Capsules-i125-1213.hdf5")
    t0 = time.perf_counter()
    res = solve(problem, "ncp", "siconos:NSGS", SolveOptions(tol=1e-30, max_iter=10**9, time_limit=1.0))
    wall = time.perf_counter() - t0
    assert res.status == "timeout"
    startup = res.info["startup_seconds"]
    assert 0 < startup < 30
    assert "start-up" in res.message
    assert res.solve_seconds - startup <= 1.0 + 2.0
    assert wall - res.build_seconds - startup <= 1.0 + 2.0 + 1.0  # judging the (absent) point is quick


def test_the_threat_model_lists_every_limit_with_its_default():
    from workbench.limits import LIMITS, env_name
    text = (ROOT / "docs" / "threat-model.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| `WORKBENCH_MAX_")}
    assert rows == {env_name(name): str(int(limit.default)) for name, limit in LIMITS.items()}


@pytest.mark.parametrize("spellings", [["plugin.py"] * 1000, ["plugin.py", "./plugin.py", "sub/../plugin.py"] * 300])
def test_a_plugin_listed_many_times_is_imported_once(tmp_path, spellings):
    """Issue 45, class 7: a plugin is code run once per process, however often (and however spelled)
    the study lists it."""
    from workbench.study.spec import load_study
    (tmp_path / "sub").mkdir()
    count = tmp_path / "count"
    (tmp_path / "plugin.py").write_text(f"with open({str(count)!r}, 'a') as f:\n    f.write('x')\n")
    listed = ", ".join(f'"{s}"' for s in spellings)
    load_study(study(tmp_path, extra=f"plugins = [{listed}]"))
    load_study(study(tmp_path, extra=f"plugins = [{listed}]", file="again.toml"))
    assert count.read_text() == "x"


@pytest.mark.parametrize("group", ['scenes = ["rolling-ball-2d"]',
                                   'generator = "box_tower"\nname = "tower"\nparams = {n = 2}'])
def test_duplicate_problem_names_are_refused_before_anything_is_built(tmp_path, capsys, group):
    """Issue 45, class 7: 20,000 groups naming the same problem were built one by one (scenes, generated
    problems) before the names were compared; the names known before building are compared first."""
    import time
    body = "\n".join(f"[[problems]]\n{group}" for _ in range(20_000))
    path = tmp_path / "dup.toml"
    path.write_text(STUDY.format(name='"dup"', extra="", problems="").replace("[[problems]]\n\n", "")
                    .replace("[methods", body + "\n[methods", 1))
    t0 = time.process_time()
    refused(capsys, ["run", path, "--out", tmp_path / "out", "--no-report", "--no-progress"], "two problems are named")
    assert time.process_time() - t0 < 8.0
