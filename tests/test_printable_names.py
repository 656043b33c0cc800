"""Issue 45, class 2: one printable-name rule (workbench.errors.unsafe) for every name that reaches a
terminal, a file name or a log. C0 and C1 controls, bidi overrides, isolates and marks, and line or
paragraph separators are refused in names that become folders (study names, problem-group names, run
keys: workbench.files.plain_name) and shown escaped everywhere else (errors.printable): the run's
own lines on stderr, --out paths in the run summary. Variants: every character of the class, in every
position, through the study file and through the API."""

from __future__ import annotations

import pytest

from workbench.cli import main
from workbench.errors import BIDI, InputError, printable, unsafe
from workbench.files import plain_name

#: every class the rule names: C0, DEL, C1 (CSI, NEL), bidi, separators
HOSTILE = ["\x1b", "\x07", "\x00", "\x7f", "\x9b", "\x85", "\x80", "\x9f", *sorted(BIDI), "\u2028", "\u2029",
           "\n", "\r", "\t", "\x1c"]

STUDY = '[study]\nname = "{name}"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n' \
        '[methods.m]\nformulation = "dual"\nsolver = "apgd"\n'


def _raw(text: str) -> list[str]:
    return [c for c in text if unsafe(c) and c != "\n"]


@pytest.mark.parametrize("c", HOSTILE, ids=[f"U+{ord(c):04X}" for c in HOSTILE])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_names_that_become_folders_refuse_the_class(c, where):
    name = {"start": c + "study", "middle": "stu" + c + "dy", "end": "study" + c}[where]
    assert unsafe(c)
    with pytest.raises(InputError) as e:
        plain_name(name, "[study] name")
    assert "\n" not in str(e.value) and not _raw(str(e.value))


@pytest.mark.parametrize("c", HOSTILE, ids=[f"U+{ord(c):04X}" for c in HOSTILE])
def test_printable_escapes_the_class(c):
    for one_line in (True, False):
        out = printable(f"a{c}b", one_line=one_line)
        assert not _raw(out) and "\n" not in out
        if one_line and c in "\n\r\t":
            assert out == "a b"
        else:
            assert out == "a" + repr(c)[1:-1] + "b"


def test_plain_names_stay_as_they_are():
    for name in ("study", "étude 2", "研究", "a b", "x-y_z.1"):
        assert plain_name(name, "[study] name") == name
        assert printable(name, one_line=False) == name


@pytest.mark.parametrize("c", ["\u009b", "\u0085", "\u202e", "\u2028", "\u2066"],
                         ids=["CSI", "NEL", "RLO", "LSEP", "LRI"])
def test_a_study_named_with_the_class_is_refused_in_one_line(tmp_path, capsys, monkeypatch, c):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(STUDY.format(name=f"evil{c}name"), encoding="utf-8")
    code = main(["run", "s.toml", "--no-report", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not _raw(err), err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_an_out_path_with_the_class_is_printed_escaped(tmp_path, capsys, monkeypatch):
    """The run summary names the results folder: a newline or an override in --out is shown escaped."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(STUDY.format(name="plain"), encoding="utf-8")
    out = "res\nults\u202e\u2028x"
    code = main(["run", "s.toml", "--out", out, "--no-report", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert not _raw(err)
    summary = [line for line in err.splitlines() if "results in" in line]
    assert len(summary) == 1 and "res\\nults\\u202e\\u2028x" in summary[0], err
    assert (tmp_path / out / "plan.json").exists()
