"""The DVI time stepper against the papers' analytic solutions (Mazhar et al. 2014 sections 5.3-5.5, Melanz et al. 2015
section 3), its kinematics (Melanz et al. 2015 eqs. 5-6), the granular scenes and the dataset generator."""

import numpy as np
import pytest

from formulations import FORMULATIONS
from problems.contact import detect, jacobian
from problems.dynamic_scenes import rolling_time
from problems.rigid import BOX, GRAVITY, SPHERE, Bodies, Planes, World, axis_angle_quat, quat_to_matrix
from problems.scenes import rolling_ball_2d
from problems.stepper import Simulation
from workbench.cli import main
from workbench.solvers import SOLVERS, SolveOptions
from workbench.sources import scenario

#: exact methods present in this tree (fast first); anti-relaxed x apgd joins when it is registered
EXACT = [pair for pair in [("ncp", "newton"), ("dual-fixed-point", "clarabel"), ("anti-relaxed", "apgd")]
         if pair[0] in FORMULATIONS and pair[1] in SOLVERS]
FAST_EXACT = EXACT[:1]
SLOW_EXACT = [pytest.param(*p, marks=pytest.mark.slow) for p in EXACT[1:]]
RELAXED = ("dual", "clarabel")


def run(scene, formulation, solver, tol=1e-8, **params):
    """Simulate a scene; return (scenario, times, observables per step as arrays, records)."""
    sc = scenario(scene, **params)
    sim = Simulation(sc.world, sc.h, formulation, solver, SolveOptions(tol=tol, keep_history=False))
    obs, recs = [], []
    for _ in range(sc.steps):
        recs.append(sim.step())
        obs.append(sc.observe())
    t = np.array([r.t for r in recs])
    return sc, t, {k: np.array([o[k] for o in obs]) for k in obs[0]}, recs


def test_exact_methods_exist():
    assert EXACT, "no exact formulation x solver is registered"


# ---------------------------------------------------------------------------------------- kinematics
def test_2d_ball_first_step_is_the_seed_problem():
    """Melanz et al. 2015 eqs. 41-47: M = diag(1, 1, 0.4), D = [[0, 1], [1, 0], [0, 1]], N = diag(1, 3.5),
    r = [-0.0981, 2] for h = 0.01."""
    sc = scenario("ball-on-plane-2d", h=0.01)
    p, _, _ = Simulation(sc.world, sc.h, *RELAXED).problem()
    ref = rolling_ball_2d()
    np.testing.assert_allclose(p.M.toarray(), ref.M.toarray())
    np.testing.assert_allclose(p.D.toarray(), ref.D.toarray())
    np.testing.assert_allclose(p.k, ref.k)
    np.testing.assert_allclose(p.N.toarray(), [[1, 0], [0, 3.5]])
    np.testing.assert_allclose(p.r, [-0.0981, 2.0])


def test_3d_ball_first_step():
    """The 3D ball: N = diag(1, 1/m + R^2/J, 1/m + R^2/J) = diag(1, 3.5, 3.5), r = [-g h, v0, 0]."""
    sc = scenario("ball-on-plane", h=0.01)
    p, _, _ = Simulation(sc.world, sc.h, *RELAXED).problem()
    np.testing.assert_allclose(p.N.toarray(), np.diag([1, 3.5, 3.5]), atol=1e-15)
    np.testing.assert_allclose(p.r, [-0.0981, 2.0, 0.0], atol=1e-15)


def mixed_world(seed=3):
    """Spheres touching each other, the floor, a wall and a tilted box resting on the floor."""
    rng = np.random.default_rng(seed)
    xs = np.array([[0, 0, 1.0], [1.99, 0.1, 1.2], [0.3, -1.5, 2.9], [-3.0, 0.2, 1.02], [2.2, 2.2, 1.4]])
    box_q = axis_angle_quat(rng.normal(size=3), 0.4)
    half = np.array([0.8, 0.5, 0.3])
    # box centre height: its lowest corner 0.01 above the floor
    corners = (np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half) @ \
        quat_to_matrix(box_q[None])[0].T
    xb = np.array([2.3, 2.2, 0.01 - corners[:, 2].min()])
    bodies = Bodies.create(shape=[SPHERE] * 5 + [BOX], size=np.vstack([np.ones((5, 3)), half]),
                           mass=rng.uniform(0.5, 2, 6), mu=0.3, x=np.vstack([xs, xb]),
                           orientation=np.vstack([np.tile([1.0, 0, 0, 0], (5, 1)), box_q]),
                           v=rng.normal(size=(6, 3)), w=rng.normal(size=(6, 3)))
    planes = Planes.create([[0, 0, 0], [-4, 0, 0]], [[0, 0, 1], [1, 0, 0]], 0.5)
    return World(bodies, planes, envelope=0.5)


def test_jacobian_gives_the_relative_velocity_of_the_contact_points():
    """D_i^T v = A_p^T (v_B + w_B x r_B - v_A - w_A x r_A), world-frame w from the body-frame one
    (Melanz et al. 2015 eq. 5), for sphere-sphere, sphere-plane, box corner-plane and sphere-box contacts."""
    world = mixed_world()
    b = world.bodies
    c = detect(world)
    kinds = {(c.a[i] >= 0 and b.shape[c.a[i]] == BOX, c.a[i] < 0, b.shape[c.b[i]]) for i in range(c.n)}
    assert (False, True, BOX) in kinds and (False, True, SPHERE) in kinds  # corners and spheres on planes
    assert (True, False, SPHERE) in kinds and (False, False, SPHERE) in kinds  # sphere-box, sphere-sphere
    D = jacobian(c, b.rotations(), b.n)
    u = (D.T @ b.velocity_vector()).reshape(c.n, 3)
    w = b.world_angular_velocity()
    vb = b.v[c.b] + np.cross(w[c.b], c.rb)
    va = np.where((c.a >= 0)[:, None], b.v[c.a] + np.cross(w[c.a], c.ra), 0.0)
    expected = np.einsum("nji,nj->ni", c.frame, vb - va)
    np.testing.assert_allclose(u, expected, atol=1e-12)
    frames = c.frame
    np.testing.assert_allclose(np.einsum("nji,njk->nik", frames, frames), np.broadcast_to(np.eye(3), frames.shape),
                               atol=1e-12)


def test_gap_rate_is_the_normal_velocity():
    """Moving every body by dt along its velocities changes each gap by dt u_n + O(dt^2)."""
    world = mixed_world()
    b = world.bodies
    c0 = detect(world)
    un = (jacobian(c0, b.rotations(), b.n).T @ b.velocity_vector())[::3]
    dt = 1e-6
    b.advance(dt)
    c1 = detect(world)
    common, i0, i1 = np.intersect1d(c0.key, c1.key, return_indices=True)
    assert common.size == c0.n
    np.testing.assert_allclose((c1.phi[i1] - c0.phi[i0]) / dt, un[i0], atol=1e-4)


def test_kdtree_detection_matches_all_pairs():
    rng = np.random.default_rng(0)
    n = 300
    x = rng.uniform(0, 14, size=(n, 3))
    world = World(Bodies.create(shape=np.zeros(n, int), size=1.0, mass=1.0, mu=0.2, x=x),
                  Planes.create(np.zeros((0, 3)), np.zeros((0, 3)), 0.2), envelope=0.1)
    c = detect(world)
    dist = np.linalg.norm(x[:, None] - x[None], axis=2)
    i, j = np.nonzero(np.triu(dist - 2.0 <= 0.1, k=1))
    assert c.n == i.size > 50
    assert set(zip(c.a.tolist(), c.b.tolist())) == set(zip(i.tolist(), j.tolist()))


def test_rotation_update_is_the_exponential_map():
    """A free body spinning at w (body frame) for 100 steps of h: exactly the rotation by |w| 100 h."""
    w = np.array([0.3, -1.2, 0.7])
    bodies = Bodies.create(shape=[BOX], size=[[0.5, 0.4, 0.3]], mass=1.0, mu=0.1, x=[[0, 0, 0]], w=[w])
    q0 = axis_angle_quat([1, 1, 0], 0.5)
    bodies.orientation = q0[None].copy()
    for _ in range(100):
        bodies.advance(0.01)
    expected = quat_to_matrix(q0[None])[0] @ quat_to_matrix(axis_angle_quat(w, np.linalg.norm(w))[None])[0]
    np.testing.assert_allclose(bodies.rotations()[0], expected, atol=1e-12)


# ---------------------------------------------------------------------------------------- ball
def _ball_checks(t, o, h, v0=2.0, mu=0.2):
    t_roll = rolling_time(v0, mu)
    assert t_roll == pytest.approx(0.2912, abs=1e-4)
    sliding = t < t_roll
    np.testing.assert_allclose(o["v_slope"][sliding], v0 - mu * GRAVITY * t[sliding], atol=1e-6)
    np.testing.assert_allclose(o["rolling"][sliding], 2.5 * mu * GRAVITY * t[sliding], atol=1e-6)
    rolling = np.abs(o["v_slope"] - o["rolling"]) < 1e-6
    first = t[np.argmax(rolling)]
    assert t_roll < first <= t_roll + h + 1e-12  # the step that crosses t_roll ends rolling
    assert np.all(rolling[t >= first])
    np.testing.assert_allclose(o["v_slope"][t >= first], 5 * v0 / 7, atol=1e-6)  # 1.429 m/s
    np.testing.assert_allclose(o["rolling"][t >= first], 1.4286, atol=1e-4)
    assert np.abs(o["v_normal"]).max() < 1e-6  # no spurious normal velocity


@pytest.mark.parametrize("h", [0.01, 0.0025])
@pytest.mark.parametrize("formulation,solver", FAST_EXACT + SLOW_EXACT)
def test_ball_slides_then_rolls_exact(formulation, solver, h):
    sc, t, o, recs = run("ball-on-plane", formulation, solver, h=h, duration=0.35)
    _ball_checks(t, o, h)
    assert max(r.complementarity for r in recs) < 1e-8
    assert sc.world.bodies.x[0, 2] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("h", [0.01, 0.0025])
def test_ball_relaxed_is_launched(h):
    """Relaxed CCQO: u_n = mu ||u_t|| at the first step, gamma_n = (g h + mu v0) / (1 + 3.5 mu^2)
    (Melanz et al. 2015 fig. 4), so the ball leaves the plane at v_n = gamma_n - g h (0.3388 m/s for h = 0.01)."""
    sc, t, o, recs = run("ball-on-plane", *RELAXED, h=h, duration=0.1)
    gn = (GRAVITY * h + 0.2 * 2.0) / (1 + 3.5 * 0.04)
    assert o["v_normal"][0] == pytest.approx(gn - GRAVITY * h, abs=1e-6)
    if h == 0.01:
        assert o["v_normal"][0] == pytest.approx(0.3388, abs=1e-4)
    assert recs[0].complementarity > 0.1


def test_ball_2d_exact_and_relaxed():
    _, t, o, _ = run("ball-on-plane-2d", *FAST_EXACT[0], h=0.01, duration=0.35)
    _ball_checks(t, o, 0.01)
    _, t, o, _ = run("ball-on-plane-2d", *RELAXED, h=0.01, duration=0.02)
    assert o["v_normal"][0] == pytest.approx(0.43693 - 0.0981, abs=1e-4)


# ---------------------------------------------------------------------------------------- boxes
@pytest.mark.parametrize("formulation,solver", FAST_EXACT + SLOW_EXACT)
def test_box_slides_on_plane_and_stops(formulation, solver):
    """Deceleration mu g = 2.943 m/s^2 until v0 / (mu g) = 0.680 s, then rest; flat on the plane."""
    sc, t, o, recs = run("box-on-plane", formulation, solver, duration=0.8)
    np.testing.assert_allclose(o["v_slope"], np.maximum(2.0 - 0.3 * GRAVITY * t, 0.0), atol=1e-6)
    assert np.abs(o["v_normal"]).max() < 1e-6
    assert all(r.contacts == 4 for r in recs)
    assert sc.world.bodies.x[0, 2] == pytest.approx(0.5, abs=1e-6)
    assert sc.world.bodies.x[0, 0] == pytest.approx(2.0 ** 2 / (2 * 0.3 * GRAVITY), abs=0.01)  # 0.680 m


def test_box_on_plane_relaxed_lifts_off():
    sc, t, o, recs = run("box-on-plane", *RELAXED, duration=0.1)
    assert o["v_normal"][0] > 0.3  # Mazhar et al. 2014 fig. 14: the box leaves the surface
    assert recs[0].complementarity > 1e-2


@pytest.mark.parametrize("formulation,solver", FAST_EXACT + SLOW_EXACT)
def test_box_accelerates_down_65_degree_incline(formulation, solver):
    sc, t, o, _ = run("box-on-incline", formulation, solver, duration=0.3)
    a = GRAVITY * (np.sin(np.radians(65)) - 0.2 * np.cos(np.radians(65)))
    assert a == pytest.approx(8.06, abs=0.005)
    np.testing.assert_allclose(o["v_slope"], a * t, atol=1e-6)
    assert np.abs(o["v_normal"]).max() < 1e-6


def test_box_on_incline_relaxed_drifts_off_the_slope():
    _, t, o, recs = run("box-on-incline", *RELAXED, duration=0.05)
    assert np.all(o["v_normal"] > 0.01)
    assert max(r.complementarity for r in recs) > 1e-4


@pytest.mark.parametrize("formulation,solver", FAST_EXACT + SLOW_EXACT)
def test_box_on_25_degree_incline_comes_to_rest(formulation, solver):
    """Deceleration g (mu cos a - sin a) = 1.189 m/s^2: at rest at t = 1.68 s, and it stays."""
    h = 0.02
    _, t, o, _ = run("box-incline-to-rest", formulation, solver, h=h, duration=2.2)
    a = GRAVITY * (0.6 * np.cos(np.radians(25)) - np.sin(np.radians(25)))
    t_stop = 2.0 / a
    assert t_stop == pytest.approx(1.68, abs=0.005)
    np.testing.assert_allclose(o["v_slope"], np.maximum(2.0 - a * t, 0.0), atol=1e-6)
    at_rest = t[np.argmax(o["v_slope"] < 1e-9)]
    assert t_stop < at_rest <= t_stop + h
    assert np.abs(o["v_slope"][t >= at_rest]).max() < 1e-6
    assert np.abs(o["v_normal"]).max() < 1e-6


def test_box_incline_to_rest_relaxed_lifts_off():
    _, t, o, _ = run("box-incline-to-rest", *RELAXED, duration=0.02)
    assert o["v_normal"][0] > 0.5


# ---------------------------------------------------------------------------------------- granular
def test_filling_records_and_complementarity_relaxed_vs_exact():
    """Melanz et al. 2015 fig. 8b: the exact solution's complementarity error (eq. 8) is orders of magnitude
    below the relaxed one's. Free fall first: kinetic energy 1/2 n m (g t)^2 before any contact."""
    worst = {}
    for method in (FAST_EXACT[0], RELAXED):
        sc = scenario("filling", n=18, width=8.0, duration=0.8)
        recs = Simulation(sc.world, sc.h, *method, SolveOptions(tol=1e-5 if method == RELAXED else 1e-8,
                                                                 keep_history=False)).run(sc.steps)
        free = [r for r in recs if r.t <= 0.05]
        for r in free:
            assert r.kinetic_energy == pytest.approx(0.5 * 18 * (GRAVITY * r.t) ** 2, rel=1e-9)
            assert r.max_speed == pytest.approx(GRAVITY * r.t, rel=1e-9)
        assert max(r.contacts for r in recs) >= 18
        assert all(r.fixed_force >= 0 and np.isfinite(r.solve_seconds) for r in recs)
        worst[method] = max(r.complementarity for r in recs)
    assert worst[FAST_EXACT[0]] < 1e-8
    assert worst[RELAXED] > 1e-3


def test_filling_2d_disks_land_in_the_planar_container():
    """Planar filling: three disks (q = [x, y, theta]) fall freely (kinetic energy 1/2 n (g t)^2), two land on
    the floor y = 0 near the walls x = +-2.2, the third in the groove between them; with the exact
    method the complementarity error stays at solver accuracy and, once all rest on each other, the
    container carries nearly the whole weight 3 g (the bottom disks still roll apart slowly)."""
    sc = scenario("filling-2d", n=3, width=4.4, duration=0.5)
    x = sc.world.bodies.x
    x[2, 0] = x[:2, 0].mean()  # into the groove
    recs = Simulation(sc.world, sc.h, *FAST_EXACT[0], SolveOptions(tol=1e-8, keep_history=False)).run(sc.steps)
    for r in recs[:5]:
        assert r.kinetic_energy == pytest.approx(0.5 * 3 * (GRAVITY * r.t) ** 2, rel=1e-9)
    assert max(r.complementarity for r in recs) < 1e-8
    assert recs[-1].contacts >= 4 and sc.weight == pytest.approx(3 * GRAVITY)
    assert recs[-1].fixed_force == pytest.approx(sc.weight, rel=0.02)
    np.testing.assert_allclose(sc.world.bodies.x[:2, 1], 1.0, atol=1e-6)  # on the floor
    assert sc.world.bodies.x[2, 1] > 2.5  # resting on the two


@pytest.mark.parametrize("nested", [False, True])
def test_starting_lattice_has_no_overlap_and_fits_the_container(nested):
    """Jittered lattices (problems.granular.lattice): no two spheres overlap, none crosses a wall or
    the floor; the nested one puts (nx - 1)^2 spheres in the hollows of every other layer and its
    layers are closer than the simple cubic ones (2.2 m)."""
    from scipy.spatial.distance import pdist

    from problems.granular import lattice

    x = lattice(200, 12.0, 12.0, 1.0, 0.0, 1.1, 0.1, np.random.default_rng(1), nested=nested)
    assert pdist(x).min() >= 2.0
    assert np.abs(x[:, :2]).max() <= 6.0 - 1.0 and x[:, 2].min() >= 1.0
    layers = np.unique(np.round(x[:, 2], 9))
    if nested:
        assert np.sum(np.isclose(x[:, 2], layers[1])) == 16  # nx = 5 sites per row on a 12 m floor
        assert layers[1] - layers[0] == pytest.approx(np.sqrt(2.2 ** 2 - (2.2 / np.sqrt(2) - 0.2 * np.sqrt(2)) ** 2))
    else:
        np.testing.assert_allclose(np.diff(layers), 2.2)


# ---------------------------------------------------------------------------------------- generator, CLI
def test_generate_is_reproducible_and_readable(tmp_path, capsys):
    from workbench.io import load_problem
    from workbench.study.problems import problem_digest

    args = ["generate", "settled", "--quiet", "--set", "n=18", "--set", "width=8", "--set", "duration=0.3",
            "--set", "h=0.01", "--set", "solver=clarabel", "--set", "tol=1e-5"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert main(args + ["--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "MANIFEST.json").read_bytes() == (tmp_path / "b" / "MANIFEST.json").read_bytes()
    problem = load_problem(tmp_path / "a" / "settled-00018.npz")
    again = load_problem(tmp_path / "b" / "settled-00018.npz")
    assert problem_digest(problem) == problem_digest(again) and problem.metadata == again.metadata
    meta = problem.metadata
    assert meta["n_contacts"] == problem.n_contacts > 0
    assert meta["n_bodies"] == 18 and meta["generator"]["seed"] == 0 and meta["generator"]["max_iter"] == 10000
    assert meta["kinetic_energy"] > 0
    cond = meta["condition"]
    ev = np.linalg.eigvalsh(problem.N.toarray())
    assert cond["lambda_max"] == pytest.approx(ev[-1], rel=1e-5)
    assert cond["lambda_min"] == pytest.approx(ev[0], rel=1e-4, abs=1e-12 * ev[-1])


def test_simulate_cli_writes_csv_and_plots(tmp_path, capsys):
    import pandas as pd

    out = tmp_path / "sim"
    assert main(["simulate", "box-on-plane", "-f", "dual", "-s", "clarabel", "--steps", "5", "--dt", "0.01",
                 "--out", str(out)]) == 0
    traj = pd.read_csv(out / "trajectory.csv")
    steps = pd.read_csv(out / "steps.csv")
    assert list(traj.columns) == ["t", "body", "x", "y", "z", "vx", "vy", "vz", "wx", "wy", "wz"]
    assert len(traj) == 6 and len(steps) == 5
    assert {"t", "contacts", "iterations", "solve_seconds", "complementarity", "fixed_force",
            "v_slope", "v_slope_analytic"} <= set(steps.columns)
    assert (out / "velocities.png").stat().st_size > 0 and (out / "steps.png").stat().st_size > 0
    assert main(["simulate", "no-such-scene", "-f", "dual", "-s", "clarabel"]) == 2
    assert "unknown scene" in capsys.readouterr().err
    assert main(["simulate", "filling", "-f", "dual", "-s", "clarabel", "--set", "n=0", "--out", str(out)]) == 2
