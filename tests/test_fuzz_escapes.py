"""Issue 35, class 1: nothing escapes its place. Generated variants of each rule, run in-process (fast):

* solver options are an allow-list: every backend setting a solver declares is typed and ranged, none
  names a file, a folder or a command, and every other name (the SCS file names, SCIP's scip_params,
  MOSEK's string parameters, typos of each) is refused with "did you mean", on the command line and
  in study files alike;
* a results folder is the workbench's own: a symbolic link (to a folder or a file elsewhere, or
  dangling), a hard link, a FIFO at every path of the folder is refused, and nothing outside changes;
  a folder of another study (or no study) is refused with how to start a new one;
* outputs replace only regular files: a link, a FIFO or a device at the output path is refused;
* a report opens nothing outside its folder; leftover clean-up never follows a link.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest

from workbench.errors import InputError
from workbench.files import atomic_output, remove_partial

SEED = 35


# --------------------------------------------------------------------------- solver options
def _solvers():
    from workbench.solvers import SOLVERS, get_solver
    out = []
    for name in SOLVERS:
        if ":" in name:
            continue
        out.append(get_solver(name))
    from workbench.solvers.cvxpy_generic import GenericCvxpySolver
    out += [GenericCvxpySolver("SCIP"), GenericCvxpySolver("HIGHS")]
    return out


FILE_WORDS = {"file", "filename", "dir", "folder", "path", "command", "cmd", "exec", "csv", "write"}


def test_every_declared_backend_setting_is_typed_ranged_and_names_no_file():
    seen = 0
    for solver in _solvers():
        for p in solver.parameters():
            if not p.name.startswith("backend."):
                continue
            seen += 1
            words = set(p.name.lower().replace(".", "_").replace("/", "_").split("_"))
            assert not words & FILE_WORDS and "filename" not in p.name.lower(), (solver.name, p.name)
            assert p.type in (bool, int, float, str), (solver.name, p.name, p.type)
            if p.type is str:
                assert p.choices, (solver.name, p.name)
            if p.type in (int, float):
                assert p.low is not None, (solver.name, p.name)
    assert seen >= 40  # SCS and Clarabel declare their settings


HOSTILE = {"scs": ["backend.write_data_filename", "backend.log_csv_filename"],
           "clarabel": ["backend.pardiso_iparm", "backend.write_data_filename"],
           "scip": ["backend.scip_params", "backend.visual/vbcfilename"],
           "highs": ["backend.log_file", "backend.write_solution_file"],
           "mosek": ["backend.MSK_SPAR_DATA_FILE_NAME", "backend.MSK_SPAR_PARAM_WRITE_FILE_NAME"]}


def _typos(name: str, rng: random.Random) -> list[str]:
    head, _, tail = name.partition(".")
    cut = rng.randrange(1, len(tail))
    return [name, f"{head}.{tail[:cut]}{tail[cut + 1:]}", f"{head}.{tail.upper()}", f"{head}.{tail}_"]


def test_undeclared_backend_options_are_refused_everywhere():
    from formulations import get_formulation
    from workbench.solvers import split_params

    rng = random.Random(SEED)
    form = {s.name: get_formulation("primal") for s in _solvers()}
    count = 0
    for solver in _solvers():
        for name in HOSTILE.get(solver.name, ["backend.write_data_filename"]):
            for key, value in itertools.product(_typos(name, rng), ["/tmp/x", {"visual/vbcfilename": "/tmp/x"}, 1]):
                with pytest.raises(InputError) as err:
                    split_params(form[solver.name], solver, "cvxpy", {key: value})
                text = str(err.value)
                assert "\n" not in text and ("known:" in text or "refused" in text or "expected" in text), text
                count += 1
    assert count >= 100


def test_declared_backend_numbers_are_parsed_and_bounded():
    from workbench.solvers import get_solver
    scs = get_solver("scs")
    for key, value in [("backend.max_iters", -1), ("backend.max_iters", 2**40), ("backend.max_iters", 2.5),
                       ("backend.scale", float("nan")), ("backend.scale", float("inf")), ("backend.scale", -1e-3),
                       ("backend.scale", "9" * 500), ("backend.max_iters", 10**5000), ("backend.verbose", 3)]:
        with pytest.raises(InputError):
            scs.check_params({key: value})
    assert scs.check_params({"backend.max_iters": 50.0})["backend.max_iters"] == 50


def test_study_files_take_the_same_allow_list(tmp_path):
    from workbench.study.spec import load_study
    for key in ("backend.write_data_filename", "backend.log_csv_filename"):
        study = tmp_path / f"{key}.toml"
        study.write_text(f'[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                         f'[methods.m]\nformulation = "primal"\nsolver = "scs"\nparams = {{ "{key}" = "/tmp/x" }}\n')
        with pytest.raises(InputError, match="no parameter"):
            load_study(study)


# --------------------------------------------------------------------------- the results folder
def _outside(tmp: Path) -> tuple[Path, dict]:
    """A folder elsewhere with a file and a leftover-looking folder in it; and a snapshot of it."""
    out = tmp / "elsewhere"
    (out / ".x.1-abc.partial").mkdir(parents=True)
    (out / "victim.txt").write_text("keep")
    (out / "plan.json").write_text("{}")
    return out, _snapshot(out)


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.is_dir(), p.read_bytes() if p.is_file() else b"")
            for p in sorted(folder.rglob("*"))}


PLACES_DIR = ["runs", "histories", "problems", "sessions", "logs"]
PLACES_FILE = [".lock", "logs/worker.log", "plan.json", "study.toml", "runs/k1.parquet"]


def _plant(root: Path, rel: str, kind: str, outside: Path) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link to a folder":
        path.symlink_to(outside, target_is_directory=True)
    elif kind == "link to a file":
        path.symlink_to(outside / "victim.txt")
    elif kind == "dangling link":
        path.symlink_to(outside / "nothing-here")
    elif kind == "hard link":
        os.link(outside / "victim.txt", path)
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "device":  # a character device like /dev/null, made here (as root), never the real one
        os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))


def _operations(store):
    """What run, resume, --rerun-failed and report do with a results folder."""
    from workbench.study.results import read_runs, row_check
    from workbench.study.runner import _check_own_study

    def lock():
        with store.locked():
            pass
    return {
        "lock": lock,
        "log": store.log_path,
        "write plan": lambda: store.write_json("plan.json", {"study": "s"}),
        "write study": lambda: store.write_text("study.toml", "x"),
        "write run": lambda: store.write_run({"key": "k2", "status": "solved"}, None),
        "clean-up": store.remove_partial,
        "done keys": store.done_keys,
        "rerun-failed": lambda: store.unsolved_keys(row_check),
        "read runs": lambda: read_runs(store),
        "read plan": lambda: store.read_json("plan.json"),
        "read study": lambda: store.read_text("study.toml"),
        "sessions": store.sessions,
        "own study": lambda: _check_own_study(type("S", (), {"name": "s"})(), store),
    }


@pytest.mark.parametrize("rel, kind", [(r, k) for r in PLACES_DIR for k in ("link to a folder", "link to a file",
                                                                          "dangling link", "FIFO")]
                         + [(r, k) for r in PLACES_FILE for k in ("link to a folder", "link to a file",
                                                                  "dangling link", "hard link", "FIFO")
                            + (("device",) if os.geteuid() == 0 else ())])
def test_links_and_special_files_in_a_results_folder_are_refused_never_followed(tmp_path, rel, kind):
    from workbench.study.store import ResultStore
    outside, before = _outside(tmp_path)
    root = tmp_path / "results"
    root.mkdir()
    _plant(root, rel, kind, outside)
    store = ResultStore(root)
    refused = 0
    for name, op in _operations(store).items():
        try:
            op()
        except InputError as exc:
            assert "\n" not in str(exc), name
            refused += 1
    assert _snapshot(outside) == before, f"{rel} as {kind}: something outside changed"
    assert refused >= 1, f"{rel} as {kind} was used without a word"


def test_a_study_is_not_run_into_another_studys_folder(tmp_path):
    from workbench.study.runner import _check_own_study
    from workbench.study.store import ResultStore
    root = tmp_path / "r"
    root.mkdir()
    (root / "plan.json").write_text(json.dumps({"study": "theirs"}))
    study = type("S", (), {"name": "mine"})()
    with pytest.raises(InputError, match="holds the results of study 'theirs'.*give --out a new folder"):
        _check_own_study(study, ResultStore(root))
    other = tmp_path / "home"
    other.mkdir()
    (other / "thesis.tex").write_text("x")
    with pytest.raises(InputError, match="not a results folder of the workbench.*--out"):
        _check_own_study(study, ResultStore(other))
    _check_own_study(type("S", (), {"name": "theirs"})(), ResultStore(root))  # its own study goes on


# --------------------------------------------------------------------------- outputs and reading
def _special(tmp: Path) -> dict[str, Path]:
    target = tmp / "target.txt"
    target.write_text("keep")
    out = {"link to a file": tmp / "l1", "dangling link": tmp / "l2", "link to a folder": tmp / "l3",
           "FIFO": tmp / "fifo", "folder": tmp / "dir"}
    out["link to a file"].symlink_to(target)
    out["dangling link"].symlink_to(tmp / "nothing")
    out["link to a folder"].symlink_to(tmp, target_is_directory=True)
    os.mkfifo(out["FIFO"])
    out["folder"].mkdir()
    if os.geteuid() == 0:  # a character device like /dev/null, made here, never the real one
        out["device"] = tmp / "null"
        os.mknod(out["device"], 0o666 | 0o020000, os.makedev(1, 3))
    return out


def test_outputs_never_replace_a_link_a_fifo_or_a_device(tmp_path):
    for kind, path in _special(tmp_path).items():
        with pytest.raises(InputError, match="new path or over a regular file"):
            with atomic_output(path) as tmp:
                tmp.write_text("x")
        assert os.path.lexists(path) and (tmp_path / "target.txt").read_text() == "keep", kind
    regular = tmp_path / "plain.txt"
    regular.write_text("old")
    with atomic_output(regular) as tmp:
        tmp.write_text("new")
    assert regular.read_text() == "new"


def test_commands_refuse_such_outputs_in_one_line(tmp_path, capsys):
    from workbench.cli import main
    special = _special(tmp_path)
    for kind in ("link to a file", "FIFO", *(("device",) if "device" in special else ())):
        code = main(["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--history", str(special[kind])])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "regular file" in err, (kind, err)
        code = main(["export", "scene:rolling-ball-2d", str(special[kind])])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, (kind, err)


def test_the_report_opens_nothing_outside_its_folder(tmp_path):
    from workbench.sources import Source
    from workbench.study.store import ResultStore
    root = tmp_path / "r"
    (root / "problems").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "p.json").write_text(json.dumps({"generator": {"n": 1}}))
    os.mkfifo(root / "problems" / "fifo.json")
    (root / "problems" / "link.json").symlink_to(outside / "p.json")
    (root / "problems" / "ok.json").write_text(json.dumps({"generator": {"n": 2}}))
    store = ResultStore(root)
    for source in (str(outside / "p.npz"), str(root / "problems" / "fifo.npz"), str(root / "problems" / "link.npz"),
                   str(root / "problems" / ".." / ".." / "elsewhere" / "p.npz"), "/dev/zero", "scene:x"):
        assert Source.parse(source).metadata(store.root) is None, source
    assert Source.parse(str(root.resolve() / "problems" / "ok.npz")).metadata(store.root) == {"n": 2, "steps": None}
    with pytest.raises(InputError):  # a run key naming a path out of the folder
        store.read_histories(["../../elsewhere/p"])


def test_leftover_clean_up_never_follows_a_link(tmp_path):
    outside, before = _outside(tmp_path)
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / ".y.1-abc.partial").symlink_to(outside / ".x.1-abc.partial", target_is_directory=True)
    (folder / ".z.999999999-abc.partial").mkdir()
    remove_partial(folder)
    remove_partial(tmp_path / "link")  # missing: nothing
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    remove_partial(tmp_path / "link")
    assert _snapshot(outside) == before
    assert not (folder / ".z.999999999-abc.partial").exists()


def test_run_refuses_another_studys_folder_in_one_line(tmp_path, capsys, monkeypatch):
    from workbench.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text('[study]\nname = "mine"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                                        '[methods.m]\nformulation = "dual"\nsolver = "apgd"\n')
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    plan = json.dumps({"study": "theirs"})
    (theirs / "plan.json").write_text(plan)
    (theirs / "study.toml").write_text("their study")
    code = main(["run", "mine.toml", "--out", str(theirs), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--out" in err and "'theirs'" in err, err
    assert (theirs / "plan.json").read_text() == plan and (theirs / "study.toml").read_text() == "their study"


def test_the_results_folder_itself_may_be_reached_through_a_link(tmp_path):
    """The folder the user names may be a link (results -> /data/results); what is inside may not."""
    from workbench.study.results import read_runs
    from workbench.study.store import ResultStore
    real = tmp_path / "real"
    ResultStore(real).write_json("plan.json", {"study": "s"})
    ResultStore(real).write_run({"key": "k1", "problem": "p", "method": "m", "status": "solved"}, None)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    store = ResultStore(tmp_path / "link")
    assert store.read_json("plan.json") == {"study": "s"}
    assert read_runs(store)["key"].tolist() == ["k1"]
