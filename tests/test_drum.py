"""The turning drum (problems.rigid.Drum, problems.drum; Koziara 2017 sec. 8.1): its surface velocity
in the time step, a ball dragged by it against the analytic sliding solution, the scene's parameters
and ``workbench simulate drum``."""

import numpy as np
import pytest

from problems.drum import DRUM_GRAVITY, particle_radii
from problems.rigid import SPHERE, Bodies, Drum, Planes, World
from problems.stepper import Simulation
from workbench.cli import main
from workbench.solvers import SolveOptions
from workbench.sources import scenario

EXACT = ("ncp", "newton")


def _ball_in_drum(mu: float, omega: float = 1.0, radius: float = 0.1, drum_radius: float = 1.0) -> World:
    """A ball at rest touching the bottom of a drum about y (its bottom moves along -x at omega R)."""
    bodies = Bodies.create(shape=[SPHERE], size=radius, mass=1.0, mu=mu, x=[[0.0, 0.0, -drum_radius + radius]])
    none = Planes.create(np.zeros((0, 3)), np.zeros((0, 3)), mu)
    return World(bodies, none, gravity=np.array([0.0, 0.0, -DRUM_GRAVITY]), envelope=0.01,
                 drum=Drum.create([0, 0, 0], [0, 1, 0], drum_radius, omega, mu))


def test_drum_surface_velocity_enters_the_free_velocity():
    """At zero impulse the relative velocity u = r of the ball on the drum's bottom is the ball's minus
    the wall's, omega R along -x, in the contact frame: normal -g h, tangential +omega R along x."""
    h = 0.001
    sim = Simulation(_ball_in_drum(0.3, omega=2.0), h, *EXACT)
    problem, contacts, _ = sim.problem()
    assert contacts.n == 1 and contacts.phi[0] == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(contacts.normal[0], [0, 0, 1], atol=1e-15)
    frame = contacts.frame[0]
    expected = frame.T @ (np.array([0.0, 0.0, -DRUM_GRAVITY * h]) - np.array([-2.0, 0.0, 0.0]))
    np.testing.assert_allclose(problem.r, expected, atol=1e-14)


def test_ball_dragged_by_the_drum_slides_then_rolls():
    """Near the bottom the wall is a plane moving at V = omega R: in its frame the ball slides at V with
    friction mu g, so (Melanz et al. 2015 sec. 3.1 in that frame) v_x = -mu g t and the rolling speed
    r w_y = 5/2 mu g t (the contact point moving at v_x - r w_y) until t_roll = 2 V / (7 mu g), then v_x = -2/7 V."""
    mu, h = 0.3, 0.001
    world = _ball_in_drum(mu)
    sim = Simulation(world, h, *EXACT, SolveOptions(tol=1e-10, keep_history=False))
    t_roll = 2.0 * 1.0 / (7 * mu * DRUM_GRAVITY)
    sim.run(40)
    b = world.bodies
    assert b.v[0, 0] == pytest.approx(-mu * DRUM_GRAVITY * 0.04, rel=1e-2)
    assert 0.1 * b.world_angular_velocity()[0, 1] == pytest.approx(2.5 * mu * DRUM_GRAVITY * 0.04, rel=1e-2)
    sim.run(int(round(t_roll / h)) + 20 - 40)
    assert b.v[0, 0] == pytest.approx(-2.0 / 7.0, rel=3e-2)  # rolling: the ball climbs the wall slowly meanwhile


def test_frictionless_drum_does_not_drag():
    world = _ball_in_drum(0.0)
    Simulation(world, 0.001, *EXACT, SolveOptions(tol=1e-10, keep_history=False)).run(40)
    assert abs(world.bodies.v[0, 0]) < 1e-12 and np.all(np.abs(world.bodies.w) < 1e-9)


def test_drum_scene_has_the_papers_particles():
    """N = 100: r0 = 0.1 m, semi-axes (0.09, 0.05, 0.1) m, spheres r1 = 0.08 m, rho = 100 kg/m^3."""
    semi, r1 = particle_radii(100)
    np.testing.assert_allclose(semi, [0.09, 0.05, 0.1], rtol=1e-14)
    assert r1 == pytest.approx(0.08, rel=1e-14)
    sc = scenario("drum")
    b = sc.world.bodies
    assert b.n == 100 and sc.h == 0.001 and sc.duration == 10.0 and sc.world.drum.omega == 1.0
    np.testing.assert_allclose(b.mass, 100 * 4 / 3 * np.pi * 0.09 * 0.05 * 0.1, rtol=1e-14)
    assert np.all(np.hypot(b.x[:, 0], b.x[:, 2]) + b.radius < 1.0)  # inside the drum
    assert np.all((b.x[:, 1] - b.radius > 0) & (b.x[:, 1] + b.radius < 0.5))  # between the side walls
    spheres = scenario("drum", shape="sphere", n=20).world.bodies
    assert np.all(spheres.shape == SPHERE) and spheres.size[0, 0] == pytest.approx(particle_radii(20)[1])


def test_drum_particles_start_apart_and_settle_inside():
    """The start lattice has no contact between particles; after the fall every particle stays inside
    the drum (no gap below minus a few millimetres) and between the side walls."""
    sc = scenario("drum", n=8, h=0.002)
    sim = Simulation(sc.world, sc.h, *EXACT, SolveOptions(tol=1e-8, keep_history=False))
    _, contacts, _ = sim.problem()
    assert contacts.n == 0
    sim.run(200)
    _, contacts, _ = sim.problem()
    assert contacts.n >= 8 and contacts.phi.min() > -5e-3
    b = sc.world.bodies
    assert np.all(np.hypot(b.x[:, 0], b.x[:, 2]) < 1.0) and np.all((b.x[:, 1] > 0) & (b.x[:, 1] < 0.5))


def test_simulate_drum_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "drum"
    code = main(["simulate", "drum", "-f", "ncp", "-s", "pqn", "--steps", "3", "--set", "n=8", "--out", str(out)])
    assert code == 0
    assert (out / "steps.csv").exists() and (out / "trajectory.csv").exists()


def test_drum_bad_shape_is_bad_input(tmp_path, capsys):
    code = main(["simulate", "drum", "-f", "ncp", "-s", "pqn", "--steps", "1", "--set", "shape=cube",
                 "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err
    assert "shape must be one of ellipsoid, sphere" in err and "Traceback" not in err


def test_drum_counts_for_the_reproduction_agree_with_the_step_records():
    """benchmarks.reproduce.drum_pqn.run counts what the stepper records: the iterations of converged steps, the
    steps with contacts, and keeps the sampled steps' problems; solving a sample again with the same
    method and warm start takes the same iterations (the sensitivity rows' premise)."""
    from benchmarks.reproduce.drum_pqn import run, sensitivity

    params = {"delta": 0.01, "delta_mode": "avg", "eps": 0.25, "m": 10}
    out = run(scenario("drum", n=8, h=0.004), "ncp", "pqn", params, 100, 1e-6, 1000, 10, 60)
    sc = scenario("drum", n=8, h=0.004)
    records = Simulation(sc.world, sc.h, "ncp", "pqn", SolveOptions(tol=1e-6, max_iter=1000, keep_history=False,
                                                                    params=params)).run(100)
    touching = [r for r in records if r.contacts]
    assert out.contact_steps == len(touching) > 0 and out.divs == sum(r.status != "solved" or bool(r.handover)
                                                                       for r in touching)
    assert out.converged_iterations == sum(r.iterations for r in touching if r.status == "solved" and not r.handover)
    sampled = [k for k in range(60, 100, 10) if records[k].contacts]
    assert sampled and [p.metadata["step"] for p, _ in out.samples] == sampled
    again = sensitivity(out.samples[:1], params, 1e-6, 1000)
    assert again.steps == 1 and again.converged_iterations == records[sampled[0]].iterations > 0
