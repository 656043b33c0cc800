"""studies/scale_devices.toml (issue 31): it parses, its methods resolve (the GPU one with device = gpu in
its name), and it plans on its smallest packing; without CuPy the GPU method is unavailable with a
reason, which is what its runs will record. Its larger packings (up to 1,000,000 contacts) are not built
here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.study import load_study
from workbench.study.problems import resolve_problems
from workbench.study.runner import plan

STUDY = Path(__file__).resolve().parents[1] / "studies" / "scale_devices.toml"


def test_scale_study_parses_and_plans(tmp_path):
    study = load_study(STUDY)
    labels = {m.name: m.label for m in study.methods}
    assert labels == {"apgd-cpu1": "APGD, CPU 1 thread", "apgd-cpu": "APGD, CPU every core", "apgd-gpu": "APGD, GPU",
                      "clarabel-dual": "Clarabel, dual", "ipm-dual": "ipm, dual"}
    (group,) = study.groups
    sizes = [params["n_spheres"] for _, params in group.generated]
    assert sizes == sorted(sizes) and sizes[0] == 4550 and sizes[-1] == 450_000
    small = dataclasses.replace(study, groups=[dataclasses.replace(group, generated=group.generated[:1])])
    problems = resolve_problems(small, tmp_path)
    assert len(problems) == 1 and 9_000 < problems[0].facts.n_contacts < 12_000      # about 10,000 contacts
    runs, skipped = plan(small, problems)
    assert len(runs) == 5 and not skipped
    gpu = next(r.method for r in runs if r.method.name == "apgd-gpu")
    resolved = gpu.method
    assert resolved.solver_params["device"] == "gpu"
    ok, why = resolved.availability()
    assert ok or ("CuPy" in why or "CUDA" in why)
