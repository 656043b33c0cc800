"""One count everywhere (issue 46): the end of `workbench run` on the terminal, the report's header
and ``load_results`` give the same statuses for the compared runs, and the reference runs are counted
apart with their own accuracy (worst judged error, tolerance asked) stated where they are used."""

import re
from collections import Counter

from workbench.cli import main
from workbench.study import load_results

STUDY = """[study]
name = "counts"
repetitions = 2
[[problems]]
scenes = ["rolling-ball-2d", "box-on-plane"]
[methods.clarabel-dual]
formulation = "dual"
solver = "clarabel"
[methods.apgd-capped]
formulation = "dual"
solver = "apgd"
max_iter = 3
[reference]
solver = "clarabel"
formulations = ["dual"]
tol = 1e-10
"""


def _counted(text: str) -> Counter:
    """``3 solved, 1 max_iter`` (the terminal) or ``solved 3, max_iter 1`` (the report) as counts."""
    pairs = [item.split() for item in text.split(", ")]
    return Counter({(b if a.isdigit() else a): int(a if a.isdigit() else b) for a, b in pairs})


def test_the_terminal_the_report_and_load_results_count_the_same(tmp_path, capsys):
    (tmp_path / "study.toml").write_text(STUDY)
    out, report = tmp_path / "results", tmp_path / "report"
    assert main(["run", str(tmp_path / "study.toml"), "--out", str(out), "--report-dir", str(report),
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    loaded = Counter(load_results(out)["status"])
    assert sum(loaded.values()) == 8 and loaded["max_iter"] >= 1  # the capped APGD does not converge
    recorded = re.search(r"recorded, as the report counts them: (\d+) compared runs \(([^)]*)\)", err)
    assert recorded and int(recorded.group(1)) == 8 and _counted(recorded.group(2)) == loaded
    refs = re.search(r"and apart, (\d+) reference runs \(([^)]*)\); their worst judged error (\S+) \(asked for "
                     r"1e-10\)", err)
    with_refs = load_results(out, include_reference=True)
    ref_rows = with_refs[with_refs["role"] == "reference"]
    assert refs and int(refs.group(1)) == len(ref_rows) == 2
    assert _counted(refs.group(2)) == Counter(ref_rows["status"])
    assert float(refs.group(3)) == float(f"{ref_rows['judged_error'].max():.2g}")
    page = (report / "index.md").read_text()
    statuses = re.search(r"Statuses: ([^.]*)\.", page)
    assert statuses and _counted(statuses.group(1)) == loaded
    assert re.search(r"2 of 2 dedicated reference runs recorded \(not compared, not counted above; see "
                     r"Convergence\): [^;]+; their worst judged error is \S+, asked for 1e-10", page)
