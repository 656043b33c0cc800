"""Issue 45, class 3: a results folder held, not re-resolved. The store opens the folder it checked
once and writes relative to that handle, checking before each write that the name still leads there;
a folder swapped during a run (for a link to elsewhere, renamed away, removed) is refused in one line
and nothing is written elsewhere. Variants: the kinds of swap, between two real writes of the store,
and inside a real ``workbench run`` between two runs' rows. Also the read-only folder's one line."""

from __future__ import annotations

import os

import pytest

from workbench.errors import InputError
from workbench.study.store import ResultStore

ROW = {"problem": "p", "method": "m", "status": "solved"}


def _files(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _swap(kind: str, root, elsewhere) -> None:
    os.rename(root, root.with_name("moved"))
    if kind == "link":
        root.symlink_to(elsewhere, target_is_directory=True)
    elif kind == "new folder":
        root.mkdir()


@pytest.mark.parametrize("kind", ["link", "new folder", "removed"])
@pytest.mark.parametrize("held_by", ["write", "lock"])
def test_a_folder_swapped_between_two_writes_is_refused_and_nothing_goes_elsewhere(tmp_path, kind, held_by):
    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = ResultStore(root)

    def body():
        store.write_json("plan.json", {"study": "s"})
        store.write_run({"key": "k1", **ROW}, None)
        _swap(kind, root, elsewhere)
        with pytest.raises(InputError) as e:
            store.write_run({"key": "k2", **ROW}, None)
        assert "replaced during the run" in str(e.value) and "\n" not in str(e.value)
        with pytest.raises(InputError):
            store.write_json("sessions/x.json", {})

    if held_by == "lock":
        with store.locked():
            body()
    else:
        body()
    assert _files(elsewhere) == []
    if kind == "new folder":
        assert _files(root) == []
    assert "runs/k1.parquet" in _files(tmp_path / "moved") and "runs/k2.parquet" not in _files(tmp_path / "moved")


def test_a_name_that_still_leads_to_the_folder_is_kept(tmp_path):
    """The name the user gave may itself be a link, and the check is of the folder, not the name."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    store = ResultStore(tmp_path / "link")
    store.write_run({"key": "k1", **ROW}, None)
    os.utime(real)
    store.write_run({"key": "k2", **ROW}, None)
    assert _files(real) == ["runs", "runs/k1.parquet", "runs/k2.parquet"]


@pytest.mark.parametrize("sub", ["runs", "histories"])
def test_a_link_below_the_held_folder_is_refused(tmp_path, sub):
    import pandas as pd
    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = ResultStore(root)
    store.write_json("plan.json", {})
    (root / sub).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InputError) as e:
        store.write_run({"key": "k", **ROW}, pd.DataFrame({"iteration": [0], "error": [1.0]}))
    assert "\n" not in str(e.value)
    assert _files(elsewhere) == []


def test_run_refuses_a_swap_during_the_run_in_one_line(tmp_path, capsys, monkeypatch):
    """A real ``workbench run``: after the first run's row, the folder is replaced by a link to
    another; the run ends with one line and exit 2, the other folder stays empty."""
    from workbench.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                                     '[methods.a]\nformulation = "dual"\nsolver = "apgd"\n'
                                     '[methods.b]\nformulation = "dual"\nsolver = "pgs"\n', encoding="utf-8")
    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    real_write = ResultStore.write_run
    calls = []

    def write_then_swap(self, row, history):
        real_write(self, row, history)
        calls.append(row["key"])
        if len(calls) == 1:
            _swap("link", root, elsewhere)

    monkeypatch.setattr(ResultStore, "write_run", write_then_swap)
    code = main(["run", "s.toml", "--out", str(root), "--no-report", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.startswith("workbench: error")]
    assert len(lines) == 1 and "replaced during the run" in lines[0], err
    assert "Traceback" not in err
    assert _files(elsewhere) == []
    assert len(_files(tmp_path / "moved" / "runs")) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_results_folder_is_one_line_naming_the_cause(tmp_path, capsys, monkeypatch):
    from workbench.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                                     '[methods.a]\nformulation = "dual"\nsolver = "apgd"\n', encoding="utf-8")
    root = tmp_path / "results"
    main(["run", "s.toml", "--out", str(root), "--no-report", "--no-progress"])
    capsys.readouterr()
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    try:
        code = main(["run", "s.toml", "--out", str(root), "--rerun", "--no-report", "--no-progress"])
        err = capsys.readouterr().err
    finally:
        for p in [root, *root.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
    assert code == 2 and err.count("\n") == 1, err
    assert "ermission denied" in err and "remove it" not in err, err


@pytest.mark.parametrize("errno_", [13, 30], ids=["EACCES", "EROFS"])
def test_a_results_folder_the_system_refuses_is_one_line_naming_the_cause(tmp_path, capsys, monkeypatch, errno_):
    """The same where the process may write everywhere (root): the system's refusal of the lock file,
    simulated at os.open, is named as such - never "is a file ... remove it"."""
    import workbench.files
    from workbench.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                                     '[methods.a]\nformulation = "dual"\nsolver = "apgd"\n', encoding="utf-8")
    root = tmp_path / "results"
    root.mkdir()
    (root / ".lock").write_text("")
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if str(path).endswith(".lock") and flags & os.O_WRONLY:
            raise OSError(errno_, os.strerror(errno_), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(workbench.files.os, "open", refusing)
    code = main(["run", "s.toml", "--out", str(root), "--no-report", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert os.strerror(errno_) in err and "remove it" not in err, err
