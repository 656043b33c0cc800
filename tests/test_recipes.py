"""ARCHITECTURE.md's recipes, each followed in a temporary package: a solver, a formulation, a problem file
format and a report section are added exactly as the recipe says (a module, a registry line) and the
workbench then uses them; and every ``workbench.*`` name README.md, ARCHITECTURE.md and docs/*.md
mention exists."""

import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from problems.scenes import rolling_ball_2d
from workbench.solvers import SolveOptions

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A temporary package ``toyrecipes`` on the path; ``write(name, text)`` adds a module to it."""
    (tmp_path / "toyrecipes").mkdir()
    (tmp_path / "toyrecipes" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name: str, text: str) -> str:
        (tmp_path / "toyrecipes" / f"{name}.py").write_text(text)
        return f"toyrecipes.{name}"
    yield write
    for name in [m for m in sys.modules if m.startswith("toyrecipes")]:
        del sys.modules[name]


def test_add_a_solver(package, monkeypatch):
    """1. a module with a Solver subclass (here an in-house iterative one); 2. one line in SOLVERS."""
    import workbench.solvers
    from workbench.method import solve

    module = package("toy_solver", "from workbench.solvers.apgd import APGDSolver\n\n\n"
                                   "class ToySolver(APGDSolver):\n    name = 'toy'\n"
                                   "    summary = 'APGD under another name'\n")
    monkeypatch.setitem(workbench.solvers.SOLVERS, "toy", f"{module}:ToySolver")
    assert "toy" in workbench.solvers.solver_names()
    options = SolveOptions(tol=1e-8)
    toy, apgd = (solve(rolling_ball_2d(), "dual", s, options) for s in ("toy", "apgd"))
    assert toy.status == apgd.status == "solved" and toy.solver == "toy"
    np.testing.assert_allclose(toy.nu, apgd.nu, rtol=1e-12, atol=1e-15)


def test_add_a_formulation(package, monkeypatch):
    """1. a module with a Formulation subclass; 2. one line in FORMULATIONS."""
    import formulations
    from workbench.method import solve

    module = package("toy_formulation", "from formulations.relaxed_dual import RelaxedDual\n\n\n"
                                        "class ToyDual(RelaxedDual):\n    name = 'toy-dual'\n"
                                        "    summary = 'the relaxed dual under another name'\n")
    monkeypatch.setitem(formulations.FORMULATIONS, "toy-dual", f"{module}:ToyDual")
    options = SolveOptions(tol=1e-9)
    toy, dual = (solve(rolling_ball_2d(), f, "clarabel", options) for f in ("toy-dual", "dual"))
    assert toy.status == dual.status == "solved" and toy.formulation == "toy-dual"
    np.testing.assert_allclose(toy.nu, dual.nu, rtol=1e-9, atol=1e-12)


def test_add_a_file_format(package, monkeypatch, tmp_path):
    """1. a reader module; 2. one line in workbench.io.formats.FORMATS: sources reads the files, and the
    help and messages name the format."""
    from workbench import cli, sources
    from workbench.io import formats, save_problem

    module = package("toy_format", "from workbench.io.native import load_problem_native\n\n\n"
                                   "def read_toy(path):\n    return load_problem_native(path)\n")
    toy = formats.Format("toy", (".toy",), "toy", f"{module}:read_toy", b"TOY")
    monkeypatch.setattr(formats, "FORMATS", formats.FORMATS[:-1] + (toy,) + formats.FORMATS[-1:])
    problem = rolling_ball_2d()
    save_problem(problem, tmp_path / "p.npz")
    (tmp_path / "p.npz").rename(tmp_path / "p.toy")
    assert formats.format_of(".toy", b"????").name == "toy"
    read = sources.load(str(tmp_path / "p.toy"))
    np.testing.assert_array_equal(read.b, problem.b)
    assert ".toy toy" in formats.files_accepted() and ".toy toy" in " ".join(cli._epilog().split())


def test_the_docs_name_every_registered_format():
    from workbench.io.formats import FORMATS

    row = next(line for line in (REPO / "docs" / "cli.md").read_text().splitlines() if line.startswith("| a file |"))
    assert [s for f in FORMATS for s in f.suffixes if f"`{s}`" not in row] == []


def test_add_a_report_section(package, monkeypatch, tmp_path):
    """1. its name and meaning in workbench.analysis.sections.SECTIONS; 2. its builder, registered with
    ``@section(NAME)``: study files may ask for it, and the report builds it."""
    from workbench.analysis import sections as declared
    from workbench.report import sections
    from workbench.study.spec import load_study

    monkeypatch.setitem(declared.SECTIONS, "toy", "a toy section")
    monkeypatch.setattr(sections, "BUILDERS", dict(sections.BUILDERS))
    module = package("toy_section", "from workbench.report.document import Text\n"
                                    "from workbench.report.sections import section\n\n\n"
                                    "@section('toy')\ndef toy(res, out):\n    return [Text('toy')]\n")
    importlib.import_module(module)
    assert sections.BUILDERS["toy"](None, tmp_path)[0].text == "toy"
    study = tmp_path / "study.toml"
    for asked, ok in (('["summary", "toy"]', True), ('["toyy"]', False)):
        study.write_text('[study]\nname = "t"\n\n[[problems]]\nscenes = ["rolling-ball-2d"]\n\n[methods.a]\n'
                         f'formulation = "dual"\nsolver = "clarabel"\n\n[report]\nsections = {asked}\n')
        if ok:
            assert load_study(study).report.sections == ("summary", "toy")
        else:
            with pytest.raises(Exception, match="did you mean 'toy'"):
                load_study(study)


def test_add_a_source_kind_and_a_plan_field(tmp_path, monkeypatch, capsys):
    """ARCHITECTURE.md's recipes "Add a kind of problem spec" (1. a Source subclass, 2. one line in
    ORIGINS: here both in a study plugin, which the workers import too) and "Add a plan field" (1. the
    value in StudyMethod.describe, 2. one line in RUN_ROW): a study names the new kind in
    ``sources = [...]``, and its run row and report show both."""
    import pandas as pd

    from workbench import sources
    from workbench.cli import main
    from workbench.study import load_results, record
    from workbench.study.spec import StudyMethod

    monkeypatch.setattr(sources, "ORIGINS", dict(sources.ORIGINS))  # the plugin's line, undone after the test
    (tmp_path / "toy_kind.py").write_text(
        "from problems.scenes import rolling_ball_2d\nfrom workbench import sources\n\n\n"
        "class ToySource(sources.Source):\n    \"\"\"toy:MU: the rolling ball with friction MU.\"\"\"\n"
        "    origin = 'toy'\n\n    def load(self):\n        return rolling_ball_2d(mu=float(self.target))\n\n"
        "    def _default_name(self, problem):\n        return f'toyball-{self.target}'\n\n\n"
        "sources.ORIGINS['toy:'] = ToySource\n")
    describe = StudyMethod.describe
    monkeypatch.setattr(StudyMethod, "describe", lambda self: {**describe(self), "toy_field": f"{self.solver}-toy"})
    monkeypatch.setitem(record.RUN_ROW, "toy_field", record._method("toy_field", "str", "a toy plan field"))
    study = tmp_path / "study.toml"
    study.write_text('[study]\nname = "toy"\ntime_limit = 60\nplugins = ["toy_kind.py"]\n\n'
                     '[[problems]]\nsources = ["toy:0.3"]\n\n[methods.a]\nformulation = "dual"\nsolver = "clarabel"\n')
    out, report = tmp_path / "results", tmp_path / "report"
    assert main(["run", str(study), "--out", str(out), "--report-dir", str(report), "--no-progress"]) == 0, \
        capsys.readouterr().err
    row = load_results(out).iloc[0]
    assert (row["source"], row["problem"], row["toy_field"], row["status"]) == ("toy:0.3", "toyball-0.3",
                                                                               "clarabel-toy", "solved")
    assert row["n_contacts"] == 1 and row["kind"] == "global"
    page = (report / "index.md").read_text()
    assert "toyball-0.3" in page and "clarabel-toy" in page
    methods = pd.read_csv(report / "tables" / "methods.csv")
    assert list(methods["toy_field"]) == ["clarabel-toy"]


def test_every_declared_section_has_exactly_one_builder():
    from workbench.analysis.sections import SECTIONS
    from workbench.report.sections import BUILDERS

    assert list(BUILDERS) and set(BUILDERS) == set(SECTIONS)
    with pytest.raises(ValueError, match="not declared"):
        from workbench.report.sections import section
        section("undeclared")
    with pytest.raises(ValueError, match="has a builder already"):
        section("summary")


def _doc_names() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for doc in [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]:
        for match in re.finditer(r"(?<![\w./-])(workbench(?:\.[A-Za-z_]\w*)+)", doc.read_text(encoding="utf-8")):
            names.setdefault(match.group(1), []).append(doc.name)
    return names


def _resolve(name: str):
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError as exc:  # the name or one of its parents is no module: an attribute
            tried = ".".join(parts[:end])
            if exc.name is None or not (tried == exc.name or tried.startswith(exc.name + ".")):
                raise
            continue
        for attr in parts[end:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def test_every_workbench_name_the_docs_mention_exists():
    names = _doc_names()
    assert "workbench.method.solve" in names
    missing = []
    for name, docs in sorted(names.items()):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name} ({', '.join(sorted(set(docs)))}): {exc}")
    assert missing == []
    with pytest.raises(AttributeError):
        _resolve("workbench.solvers.solve")
