"""Issue 45, class 4 (the last case): a simulation's memory does not grow with its steps.

`simulate ball-on-plane --steps 1e6 --dt 1e-9` is within the default limits (one body x 10^6 steps),
and it kept every step's record, its row and its state in lists: about 1.4 kB a step, 1.5 GB at the
end. The rule: what a simulation computes per step is written to disk (steps.csv, trajectory.csv) in
blocks as it goes, the figures draw a bounded sample of the steps, the study's per-step history is
kept in column blocks, and what trajectory.csv would hold (bodies x recorded states) is bounded by
WORKBENCH_MAX_ROWS before the first step. Variants: the files against the in-memory table they
replace; memory at two lengths of the same run; the figures' sample; the rows limit; a stop.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from problems.stepper import StepChunks


def _simulate(tmp_path, name, *extra):
    from workbench.cli import main
    out = tmp_path / name
    code = main(["simulate", "ball-on-plane", "-f", "anti-relaxed", "-s", "apgd", "--out", str(out), *extra])
    return code, out


def test_blocks_hold_every_row_in_order_and_the_columns_of_the_first():
    blocks = []
    chunks = StepChunks(blocks.append, size=3)
    for i in range(8):
        chunks.append({"i": i, "x": i / 2, "status": "solved"})
    assert [len(b) for b in blocks] == [3, 3]          # the last two wait for flush
    chunks.flush()
    whole = pd.concat(blocks, ignore_index=True)
    assert chunks.count == 8 and whole["i"].tolist() == list(range(8)) and list(whole.columns) == ["i", "x", "status"]


def test_files_are_the_table_of_every_step_and_every_kth_state(tmp_path):
    """steps.csv has one row per step and trajectory.csv the start, every K-th step and the last,
    as before the files were streamed."""
    code, out = _simulate(tmp_path, "sim", "--steps", "25", "--every", "7")
    assert code == 0
    steps = pd.read_csv(out / "steps.csv")
    trajectory = pd.read_csv(out / "trajectory.csv")
    assert len(steps) == 25 and np.allclose(steps["t"], 0.0025 * np.arange(1, 26))
    assert np.allclose(trajectory["t"], 0.0025 * np.array([0, 7, 14, 21, 25]))
    assert trajectory["body"].tolist() == [0] * 5


def test_memory_does_not_grow_with_the_steps(tmp_path, monkeypatch):
    """Blocks of 64 rows: the peak of Python's allocations while stepping 1,200 steps is within 150 kB
    of the peak over 300 (the lists kept about 1.4 kB a step: 1.3 MB more). The figures' sample is
    at most PLOT_STEPS steps (here 10) and the figures are left out."""
    import workbench.commands.simulate as simulate
    monkeypatch.setattr(simulate, "BLOCK_ROWS", 64)
    monkeypatch.setattr(simulate, "plot", lambda out, steps, scenario: [])
    monkeypatch.setattr(simulate, "PLOT_STEPS", 10)
    _simulate(tmp_path, "warm", "--steps", "2")           # kernels compiled, modules imported
    peaks = []
    for steps in (300, 1200):
        tracemalloc.start()
        code, _ = _simulate(tmp_path, f"s{steps}", "--steps", str(steps), "--dt", "1e-6")
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert code == 0
    assert peaks[1] - peaks[0] < 150_000, peaks


def test_the_figures_draw_a_bounded_sample(tmp_path, monkeypatch):
    import workbench.commands.simulate as simulate
    drawn = {}
    monkeypatch.setattr(simulate, "PLOT_STEPS", 10)

    def plot(out, steps, scenario):
        drawn["steps"] = steps
        return []
    monkeypatch.setattr(simulate, "plot", plot)
    code, out = _simulate(tmp_path, "sim", "--steps", "45")
    assert code == 0 and len(pd.read_csv(out / "steps.csv")) == 45
    t = drawn["steps"]["t"].to_numpy()            # every 5th step and the last: 5, 10, ..., 45
    assert np.allclose(t, 0.0025 * np.arange(5, 46, 5)) and "every 5th step drawn" in drawn["steps"].attrs["method"]


@pytest.mark.parametrize("extra,rows", [((), "201 states"), (("--every", "2"), "101 states"),
                                        (("--steps", "3000", "--every", "1000"), "4 states")])
def test_the_trajectory_rows_are_bounded_before_the_first_step(tmp_path, capsys, monkeypatch, extra, rows):
    monkeypatch.setenv("WORKBENCH_MAX_ROWS", "3")
    t0 = time.process_time()
    code, out = _simulate(tmp_path, "sim", *extra)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "WORKBENCH_MAX_ROWS" in err and rows in err, err
    assert not (out / "steps.csv").exists() and time.process_time() - t0 < 10.0


def test_a_stopped_simulation_keeps_the_steps_it_took(tmp_path, monkeypatch, capsys):
    """A step without impulses stops the run (exit 1); the steps before it are in the files."""
    from problems.stepper import Simulation, SimulationError
    step = Simulation.step

    def failing(self):
        if self.step_index == 30:
            raise SimulationError("no impulses")
        return step(self)
    monkeypatch.setattr(Simulation, "step", failing)
    code, out = _simulate(tmp_path, "sim", "--steps", "50")
    assert code == 1 and "simulation stopped" in capsys.readouterr().err
    assert len(pd.read_csv(out / "steps.csv")) == 30 and len(pd.read_csv(out / "trajectory.csv")) == 31
