"""Issue 45, class 4 (left over): every builder declares its work, so the next one cannot forget.
The rule: every registered scene, scenario and generator (workbench.sources.NAMED), and every builder
a module of problems/ exports that makes problems from parameters (problems.stacks), has ``work``
(bodies, contacts, and a dynamic scene's steps); what it declares bounds what it builds; and the
steps a simulation is asked for (simulate --steps, --dt) are counted with the scene's bodies as the
builder's own duration / h is. Variants: every builder at small and default sizes against what it
builds; the new stack shapes past the limit; simulate's --steps and --dt."""

from __future__ import annotations

import time

import pytest

import problems.stacks as stacks
from workbench.errors import InputError
from workbench.params import check_params
from workbench.sources import NAMED, builder

#: small parameters a builder needs (or that keep it quick); the rest are its defaults
SMALL = {"cannonball": {"n_bottom": 4, "mu": 0.2}, "sphere_packing": {"n_spheres": 60},
         "filling": {"n": 20}, "filling-2d": {"n": 10}, "drum": {"n": 20}, "box_tower": {"n": 5},
         "brick_wall": {"courses": 3, "bricks": 3}, "compaction": {"bed": "scaling-00064"}}
STACKS = {name: getattr(stacks, name) for name in stacks.__all__ if hasattr(getattr(stacks, name), "__defaults__")
          and name not in ("stack_problem",)}


def test_every_registered_builder_declares_its_work():
    missing = [name for name in NAMED if getattr(builder(name), "work", None) is None]
    assert not missing, f"declare `work` beside these builders (workbench.limits.fixed_work for a fixed size): {missing}"
    missing = [name for name, func in STACKS.items() if getattr(func, "work", None) is None]
    assert not missing and {"box_pyramid", "corbel_arch", "thin_box_pile"} <= set(STACKS), missing


def _built(name: str, params: dict):
    """(bodies, contacts or None, steps or None) of what ``name`` builds with ``params``."""
    from workbench.sources import _call
    func = builder(name) if name in NAMED else STACKS[name]
    made = _call(name, func, params) if name in NAMED else func(**params)
    if hasattr(made, "world"):                       # a dynamic scene: bodies and steps, contacts come later
        return made.world.bodies.n, None, made.duration / made.h
    n_bodies = made.M.shape[0] // (3 if made.d == 2 else 6) if made.M is not None else 1
    return n_bodies, made.n_contacts, None


@pytest.mark.parametrize("name", sorted(set(NAMED) | set(STACKS)))
def test_the_declared_work_bounds_what_is_built(name):
    func = builder(name) if name in NAMED else STACKS[name]
    params = SMALL.get(name, {})
    work = func.work(**params)
    bodies, contacts, steps = _built(name, params)
    assert work["bodies"] >= bodies, (name, work, bodies)
    if contacts is not None:
        assert work["contacts"] >= contacts, (name, work, contacts)
    if steps is not None:
        assert work["steps"] >= steps - 1e-9, (name, work, steps)


@pytest.mark.parametrize("name,params", [("box_pyramid", {"base": 5000}), ("corbel_arch", {"courses": 5_000_000}),
                                         ("thin_box_pile", {"n": 5_000_000})])
def test_the_new_stack_shapes_are_counted_before_anything_is_built(name, params):
    t0 = time.process_time()
    with pytest.raises(InputError) as e:
        check_params(name, STACKS[name], params)
    assert time.process_time() - t0 < 1.0
    assert "\n" not in str(e.value) and "WORKBENCH_MAX_CONTACTS" in str(e.value)


@pytest.mark.parametrize("argv,words", [
    (["simulate", "filling", "--set", "n=5000", "--steps", "1000000"], ("body-steps", "WORKBENCH_MAX_BODY_STEPS")),
    (["simulate", "filling", "--set", "n=5000", "--dt", "1e-5"], ("body-steps", "WORKBENCH_MAX_BODY_STEPS")),
    (["simulate", "ball-on-plane", "--steps", "10000000"], ("WORKBENCH_MAX_STEPS",)),
    (["simulate", "ball-on-plane", "--dt", "1e-9"], ("WORKBENCH_MAX_STEPS",)),
    (["simulate", "compaction", "--steps", "1000000"], ("1,025 bodies", "WORKBENCH_MAX_BODY_STEPS")),
])
def test_simulate_counts_the_steps_it_is_asked_for_times_the_bodies(tmp_path, capsys, argv, words):
    """--steps and --dt replace the scene's duration / h: the product is bounded all the same, before
    the method is warmed up or a step is taken."""
    from workbench.cli import main
    t0 = time.process_time()
    code = main(argv + ["-f", "dual", "-s", "apgd", "--out", str(tmp_path / "sim")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    for w in words:
        assert w in err, err
    assert time.process_time() - t0 < 10.0
