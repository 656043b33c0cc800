"""The DVI time stepper of nonsmooth rigid multibody dynamics (Melanz et al. 2015 eqs. 6-9, Mazhar et al. 2014 eq. 2).

One step from (q^l, v^l), with the active set A(q^l, delta) of contacts whose gap is at most the
envelope delta:

    M (v^{l+1} - v^l) = h f(q^l, v^l) + D gamma                          (Melanz et al. 2015 eq. 7)
    0 <= Phi_i / h + D_i,n^T v^{l+1}  ⊥  gamma_i,n >= 0                 (eq. 8)
    (gamma_i,u, gamma_i,w) = argmin over the friction disc of v^{l+1 T} D_i,t gamma_i,t   (eq. 9)
    q^{l+1} = q^l + h T(q^l) v^{l+1}                                     (eq. 6)

The stepper detects the contacts and builds the contact frames and D with the compiled assembly
(:mod:`problems.assembly`: bit for bit the numbers of the numpy reference :mod:`problems.contact`),
makes the workbench's :class:`~workbench.problem.TimeStepProblem` (M diagonal, D of Melanz et al. 2015 eq. 5, k = M v^l + h f,
b = [Phi_i / h, 0, 0] per contact, minus A_p^T v_wall where body A is a moving obstacle: a turning drum) and hands it to any formulation x solver, a
:class:`workbench.method.Method` resolved and checked once for the whole simulation: the relaxed formulations solve the CCP with the mu ||u_t|| tilting
term of Mazhar et al. 2014 eq. 2d, the exact ones (anti-relaxed, fixed point, ...) eqs. 8-9 as written. The
new velocities are v^{l+1} = M^-1 (k + D gamma) (Mazhar et al. 2014 eq. 9) from the returned impulses.
Impulses of contacts that persist (same body pair and feature) warm-start the next solve.

Units: SI throughout; impulses [N s], forces reported as impulse / h [N].
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from problems.assembly import detect, frames, jacobian
from problems.contact import Contacts
from problems.rigid import World
from workbench.errors import InputError, UnsupportedError
from workbench.problem import TimeStepProblem
from workbench.method import Method
from workbench.solvers import SolveOptions

__all__ = ["Simulation", "StepRecord", "StepChunks", "SimulationError"]


class SimulationError(RuntimeError):
    """A solver returned no usable impulses during a simulation."""


@dataclass(frozen=True)
class StepRecord:
    """What one step did. ``complementarity`` is max_i |gamma_i,n u_i,n| (Melanz et al. 2015 eq. 8) [N s m/s];
    ``fixed_force`` the magnitude of the total contact force on the fixed bodies (container) [N];
    ``max_speed`` max_j |v_j| after the step [m/s]; ``kinetic_energy`` after the step [J];
    ``handover`` the step's hand-overs to another method (SolveResult.handover_label; "" for none)."""
    t: float
    contacts: int
    iterations: int
    solve_seconds: float
    status: str
    complementarity: float
    max_speed: float
    fixed_force: float
    kinetic_energy: float
    handover: str = ""


class StepChunks:
    """The per-step table of a simulation, gathered a row at a time and handed on in blocks of ``size``
    rows as pandas DataFrames to ``on_chunk`` (columns: the keys of the first row, in its order; index:
    each row's position in the whole table, 0 for the first).

    A row dict with its float objects costs about a kilobyte; a block costs 8 bytes a value. So a
    million steps kept in blocks take about 100 MB, and a consumer that writes each block to disk
    (``workbench simulate``) keeps the memory of a simulation independent of its steps."""

    def __init__(self, on_chunk: Callable[["pd.DataFrame"], None], size: int = 4096):
        self._on_chunk, self._size = on_chunk, int(size)
        self._rows: list[dict] = []
        self.count = 0

    def append(self, row: dict) -> None:
        self._rows.append(row)
        self.count += 1
        if len(self._rows) >= self._size:
            self.flush()

    def flush(self) -> None:
        """Hand on the rows gathered since the last block (none: nothing)."""
        import pandas as pd   # here: the stepper alone (a packing's generation) needs no pandas

        if self._rows:
            block = pd.DataFrame(self._rows, index=range(self.count - len(self._rows), self.count))
            self._rows = []
            self._on_chunk(block)


class Simulation:
    """Time stepping of a :class:`~problems.rigid.World` with one formulation x solver: ``method``, a
    :class:`~workbench.method.Method`, or a formulation's name with the solver's name in ``solver``
    (then ``options.params`` are the method's parameters), or None for a world that only flies freely
    until its first contact (workbench.sources.scene_problem: ``problem()`` only, nothing solved).

    ``options`` are the SolveOptions of every step (their warm_start is replaced by the previous
    step's impulses when ``warm_start``). ``name`` labels the step problems.
    """

    def __init__(self, world: World, h: float, method: Method | str | None, solver: str | None = None,
                 options: SolveOptions | None = None, *, warm_start: bool = True, name: str = "simulation"):
        if not (np.isfinite(h) and h > 0):
            raise InputError(f"step size must be positive, got {h}")
        options = options or SolveOptions(keep_history=False)
        if method is not None and not isinstance(method, Method):
            method = Method(method, solver, options.params)
        elif solver is not None:
            raise TypeError("give a Method, or a formulation name and a solver name")
        self.world, self.h, self.method = world, float(h), method
        self.options = dataclasses.replace(options, params={})
        self.warm_start, self.name = warm_start, name
        self.t, self.step_index = 0.0, 0
        self._previous: tuple[np.ndarray, np.ndarray] | None = None  # sorted keys, impulses (n_c, d)

    # ------------------------------------------------------------------ the time-step problem
    def problem(self) -> tuple[TimeStepProblem | None, Contacts, np.ndarray]:
        """The time-step problem at the current state, its contacts and its bodies.

        Only the bodies that touch a contact enter the problem (the others fly freely and would add
        zero rows to D), numbered in increasing order: ``bodies[j]`` is the world index of the
        problem's body j. The problem is None when there is no contact."""
        w, b, h = self.world, self.world.bodies, self.h
        contacts = detect(w)
        if contacts.n == 0:
            return None, contacts, np.zeros(0, np.int64)
        bodies = np.unique(np.concatenate([contacts.a[contacts.a >= 0], contacts.b]))
        local = np.full(b.n, -1, np.int64)
        local[bodies] = np.arange(bodies.shape[0])
        renumbered = dataclasses.replace(contacts, a=np.where(contacts.a >= 0, local[contacts.a], -1),
                                         b=local[contacts.b])
        dof = (np.arange(b.dof)[None, :] + b.dof * bodies[:, None]).ravel()
        mass = b.mass_diagonal()[dof]
        M = sp.diags(mass)
        k = mass * b.velocity_vector()[dof] + h * w.applied_force()[dof]
        d = b.dim
        stab = np.zeros(d * contacts.n)
        stab[::d] = contacts.phi / h
        if contacts.wall_velocity is not None:  # a moving obstacle: u = D^T v - A_p^T v_wall
            stab -= np.einsum("nij,ni->nj", frames(contacts.normal), contacts.wall_velocity).ravel()
        problem = TimeStepProblem(
            M=M, D=jacobian(renumbered, b.rotations()[bodies], bodies.shape[0]), k=k, b=stab, mu=contacts.mu,
            d=d, h=h, name=f"{self.name}-step{self.step_index}",
            metadata={"scene": self.name, "t": self.t, "step": self.step_index, "h": h,
                      "envelope": w.envelope, "bodies_in_problem": int(bodies.shape[0]), "bodies": b.n})
        return problem, contacts, bodies

    def _warm_start(self, contacts: Contacts, d: int) -> np.ndarray | None:
        if not self.warm_start or self._previous is None:
            return None
        keys, gamma = self._previous
        pos = np.searchsorted(keys, contacts.key)
        pos = np.minimum(pos, keys.shape[0] - 1)
        found = keys[pos] == contacts.key
        out = np.zeros((contacts.n, d))
        out[found] = gamma[pos[found]]
        return out.ravel()

    # ------------------------------------------------------------------ stepping
    def step(self) -> StepRecord:
        """Advance by h; raise SimulationError when the solver returns no impulses."""
        w, b, h = self.world, self.world.bodies, self.h
        problem, contacts, bodies = self.problem()
        # free flight for every body; those in the problem get their velocities from the impulses
        v = b.velocity_vector() + h * w.applied_force() / b.mass_diagonal()
        if problem is None:
            iterations, seconds, status, compl, force, handover = 0, 0.0, "no_contact", 0.0, 0.0, ""
            self._previous = None
        else:
            options = dataclasses.replace(self.options, warm_start=self._warm_start(contacts, problem.d))
            res = self.method.solve(problem, options)
            if res.status == "unavailable":
                raise UnsupportedError(f"solver {self.method.solver_name} is unavailable: {res.message}")
            if res.nu is None:
                raise SimulationError(f"t = {self.t:.6g} s ({contacts.n} contacts): {self.method.label}"
                                      f" returned no impulses (status {res.status}"
                                      f"{': ' + res.message if res.message else ''})")
            gamma = problem.contacts(res.nu)
            v.reshape(b.n, b.dof)[bodies] = problem.velocity(res.nu).reshape(-1, b.dof)
            iterations = int(res.iterations or 0)
            seconds, status, compl = float(res.solve_seconds), res.status, float(res.metrics["complementarity"])
            handover = res.handover_label
            fixed = contacts.a < 0
            force = np.einsum("nij,nj->i", frames(contacts.normal[fixed]), gamma[fixed]) / h
            force = float(np.linalg.norm(force))
            order = np.argsort(contacts.key)
            self._previous = (contacts.key[order], gamma[order].copy())
        b.set_velocity_vector(v)
        b.advance(h)
        self.t += h
        self.step_index += 1
        speed = float(np.sqrt(np.einsum("ij,ij->i", b.v, b.v)).max())
        return StepRecord(t=self.t, contacts=contacts.n, iterations=iterations, solve_seconds=seconds,
                          status=status, complementarity=compl, max_speed=speed, fixed_force=force,
                          kinetic_energy=b.kinetic_energy(), handover=handover)

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict[str, np.ndarray]:
        """Everything the next steps depend on, as arrays: the bodies' x, orientation, v, w, the time,
        the step index and the warm-start impulses (contact keys, gamma). :meth:`restore` of it gives
        back the same simulation bit for bit."""
        b = self.world.bodies
        keys, gamma = self._previous if self._previous is not None else (np.zeros(0, np.int64),
                                                                           np.zeros((0, b.dim)))
        return {"x": b.x.copy(), "orientation": b.orientation.copy(), "v": b.v.copy(), "w": b.w.copy(),
                "t": np.array(self.t), "step_index": np.array(self.step_index),
                "warm_keys": keys.copy(), "warm_gamma": gamma.copy(), "has_warm": np.array(self._previous is not None)}

    def restore(self, state) -> None:
        """Set the simulation to a :meth:`state` of a simulation of the same world."""
        b = self.world.bodies
        for name in ("x", "orientation", "v", "w"):
            value = np.array(state[name], dtype=float)
            if value.shape != getattr(b, name).shape:
                raise InputError(f"checkpoint {name} has shape {value.shape}, the world {getattr(b, name).shape}")
            setattr(b, name, value)
        self.t, self.step_index = float(state["t"]), int(state["step_index"])
        self._previous = ((np.array(state["warm_keys"], np.int64), np.array(state["warm_gamma"], float))
                          if bool(state["has_warm"]) else None)

    def run(self, steps: int, callback: Callable[["Simulation", StepRecord], None] | None = None,
            keep: bool = True) -> list[StepRecord]:
        """``steps`` steps; ``callback(sim, record)`` after each (recording, progress). The records, in
        order; none with ``keep=False`` (a caller whose callback keeps what it needs, so that memory does
        not grow with the steps)."""
        records = []
        for _ in range(int(steps)):
            rec = self.step()
            if keep:
                records.append(rec)
            if callback is not None:
                callback(self, rec)
        return records
