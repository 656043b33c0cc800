"""Issue 45, item 4 (left over): any finite WORKBENCH_MAX_RUNS was accepted (1e12), so a mistaken
setting admitted the work it was meant to bound. Rule: every limit variable has a ceiling no setting
passes (workbench.limits.env_limit, LIMITS[...].ceiling, and workbench.io.validate.CEILINGS for the
readers' variables); above it the variable is refused in one line naming it. Variants: every limit
variable at its ceiling (taken), past it (refused), the issue's 1e12 and the largest float; the CLI
and the study runner say it in one line, exit 2."""

from __future__ import annotations

import pytest

from workbench.errors import InputError
from workbench.io import validate
from workbench.limits import LIMITS, env_name, limit

#: every variable that raises a limit, and how it is read
READERS = {**{env_name(name): (lambda n=name: limit(n), LIMITS[name].ceiling) for name in LIMITS},
           validate.ENTRIES_ENV: (validate.max_entries, validate.CEILINGS[validate.ENTRIES_ENV]),
           validate.TEXT_ENV: (validate.max_text_bytes, validate.CEILINGS[validate.TEXT_ENV]),
           validate.INFLATION_ENV: (lambda: validate.read_budget(1), validate.CEILINGS[validate.INFLATION_ENV])}


def test_every_limit_has_a_ceiling_above_its_default():
    for name, bound in LIMITS.items():
        assert bound.default < bound.ceiling < float("inf"), name
    assert set(validate.CEILINGS) == {validate.ENTRIES_ENV, validate.TEXT_ENV, validate.INFLATION_ENV}


@pytest.mark.parametrize("variable", sorted(READERS))
def test_a_limit_variable_is_taken_up_to_its_ceiling_and_refused_past_it(monkeypatch, variable):
    read, ceiling = READERS[variable]
    monkeypatch.setenv(variable, str(int(ceiling)))
    read()
    for value in (str(int(ceiling) + 1), f"{ceiling * 10:g}", "1e12" if ceiling < 1e12 else "1e15", "1.7e308"):
        monkeypatch.setenv(variable, value)
        with pytest.raises(InputError) as e:
            read()
        message = str(e.value)
        assert "\n" not in message and variable in message and "ceiling" in message, message


def test_the_issues_runs_setting_is_one_line_from_the_cli(tmp_path, monkeypatch, capsys):
    from workbench.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('[study]\nname = "s"\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'
                                     '[methods.a]\nformulation = "dual"\nsolver = "apgd"\n')
    monkeypatch.setenv("WORKBENCH_MAX_RUNS", "1e12")
    assert main(["run", str(tmp_path / "s.toml"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "WORKBENCH_MAX_RUNS" in err and "ceiling" in err, err
    assert not (tmp_path / "results").exists()


def test_the_threat_model_gives_every_ceiling():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "threat-model.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line.split("|")[4].strip() for line in text.splitlines()
            if line.startswith("| `WORKBENCH_MAX_")}
    assert rows == {env_name(name): str(int(bound.ceiling)) for name, bound in LIMITS.items()}
