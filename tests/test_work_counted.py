"""Issue 45, class 4: work counted before allocation, as a product. Every scene and generator whose
size grows with its parameters declares ``work`` (bodies, contacts, steps) beside its builder in
problems/, and workbench.limits.check_work bounds that product before anything is built: one option
within the per-parameter SIZE limit can no longer ask for gigabytes. Variants: every declared
builder, at its defaults (accepted) and scaled past the limit (refused in one line, fast, small);
the CLI's info, generate and study paths; the Dask executor's worker count."""

from __future__ import annotations

import resource
import time

import pytest

from workbench.errors import InputError
from workbench.limits import limit
from workbench.params import check_params
from workbench.sources import NAMED, builder

DECLARED = [name for name, entry in NAMED.items() if getattr(builder(name), "work", None) is not None]

#: one parameter per declared builder that grows it, and the issue's value of it
GROWS = {"sphere_packing": {"n_spheres": 5_000_000}, "cannonball": {"n_bottom": 20_000, "mu": 0.2},
         "box_tower": {"n": 5_000_000}, "brick_wall": {"courses": 3000, "bricks": 3000},
         "drum": {"n": 5_000_000}, "filling": {"n": 5_000_000}, "filling-2d": {"n": 5_000_000}}


def test_the_builders_that_grow_declare_their_work():
    assert set(GROWS) <= set(DECLARED), set(GROWS) - set(DECLARED)


@pytest.mark.parametrize("name", sorted(GROWS))   # fixed-size builders declare work too (tests/test_work_declared.py)
def test_the_declared_work_bounds_the_product_before_anything_is_built(name):
    func = builder(name)
    required = {"cannonball": {"n_bottom": 10, "mu": 0.2}, "sphere_packing": {"n_spheres": 100}}.get(name, {})
    check_params(name, func, required)                     # a small one passes
    t0, rss0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError) as e:
        check_params(name, func, GROWS[name])
    assert time.process_time() - t0 < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 50_000     # kB: nothing allocated
    message = str(e.value)
    assert "\n" not in message and "WORKBENCH_MAX_CONTACTS" in message


@pytest.mark.parametrize("name,params", [("filling", {"n": 10_000, "h": 1e-6}), ("drum", {"n": 1000, "h": 1e-9})])
def test_a_simulation_counts_steps_times_bodies(name, params):
    with pytest.raises(InputError, match="body-steps"):
        check_params(name, builder(name), params)


def test_each_parameter_within_its_limit_no_longer_makes_a_large_problem():
    """brick_wall courses=3000 bricks=3000 passes every per-parameter check (SIZE 5,000,000) and made
    9 million bricks; the product is what is bounded."""
    assert 3000 < limit("SIZE")
    with pytest.raises(InputError, match="9,003,000 bodies"):
        check_params("brick_wall", builder("brick_wall"), {"courses": 3000, "bricks": 3000})


def test_the_limit_is_raised_by_its_variable(monkeypatch):
    monkeypatch.setenv("WORKBENCH_MAX_CONTACTS", "1e9")
    check_params("box_tower", builder("box_tower"), {"n": 5_000_000})


@pytest.mark.parametrize("argv", [["info", "generator:brick_wall", "--set", "courses=3000", "--set", "bricks=3000"],
                                  ["info", "scenario:filling", "--set", "n=5000000"],
                                  ["info", "generator:cannonball", "--set", "n_bottom=20000", "--set", "mu=0.1"],
                                  ["generate", "scaling", "--sizes", "5000000"]])
def test_the_cli_refuses_in_one_line(capsys, argv):
    from workbench.cli import main
    t0 = time.process_time()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "contacts" in err, err
    assert time.process_time() - t0 < 5.0


def test_a_study_sweep_is_counted_per_problem(tmp_path, capsys):
    from workbench.cli import main
    (tmp_path / "s.toml").write_text('[study]\nname = "s"\n[[problems]]\ngenerator = "box_tower"\n'
                                     'sweep = {n = [10, 3000000]}\n[methods.a]\nformulation = "dual"\nsolver = "apgd"\n')
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "contacts" in err, err


@pytest.mark.parametrize("jobs,tasks,workers", [(16, 1, 1), (16, 3, 3), (2, 5, 2)])
def test_the_dask_cluster_has_no_more_workers_than_tasks(monkeypatch, tmp_path, jobs, tasks, workers):
    """run --executor dask --jobs 16 for one run started 20 processes; the cluster is asked for
    min(jobs, tasks) workers (the cluster itself is stood in for: starting one costs seconds)."""
    import dask.distributed

    from workbench.study.executors import run_dask
    asked = {}

    class Cluster:
        def __init__(self, **kwargs):
            asked.update(kwargs)
            raise OSError("stand-in cluster")

    monkeypatch.setattr(dask.distributed, "LocalCluster", Cluster)
    with pytest.raises(InputError):
        list(run_dask([{"key": f"k{i}"} for i in range(tasks)], jobs, tmp_path / "log"))
    assert asked["n_workers"] == workers
