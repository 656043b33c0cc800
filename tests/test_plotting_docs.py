"""docs/plotting.md: its example runs as written and draws the figures it names."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "plotting.md"


def test_plotting_example_runs_and_writes_every_figure(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    scope: dict = {}
    exec(compile(blocks[0], str(DOC), "exec"), scope)
    work = scope["work"]
    for name in ("convergence", "profile", "scaling", "steps"):
        assert (work / f"{name}.png").stat().st_size > 10_000 and (work / f"{name}.svg").is_file()
    # the convergence figure of the example has both exact methods on the judged siconos_error row
    fig = scope["plot"].convergence(scope["histories"], scope["runs"], problem="spheres-8")
    judged = [ax for ax in fig.axes if ax.get_ylabel() == "judged: siconos_error"]
    assert judged and {line.get_gid() for line in judged[0].lines} >= {"curve:apgd-anti", "curve:pqn"}
    assert "apgd-anti" in capsys.readouterr().out
