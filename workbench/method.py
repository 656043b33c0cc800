"""A method: one formulation x one solver x checked parameters, resolved and validated once.

:class:`Method` is the only place where a formulation and a solver are paired: the names become
objects (an unknown name is an InputError with "did you mean" and the known names), the solver must
take a model kind the formulation builds (else an InputError naming the formulations it can take),
and the parameters are split between them and checked (:func:`workbench.solvers.split_params`). Every
layer above (the CLI, study files, the worker, the simulator, benchmarks) builds a Method once and
calls :meth:`Method.solve` as often as it likes.

The run contract of :meth:`Method.solve` (ARCHITECTURE.md): the formulation builds a model of the
paired kind for the problem, :func:`workbench.solvers.base.execute` runs the solver (anything it
raises becomes status "failed"), :func:`workbench.judging.finalize` judges the returned impulses
with the workbench's own metrics.

:meth:`Method.accepts` answers "can this method solve this problem?" (a formulation that needs M and D
cannot take a local problem) with the reason when it cannot, for every caller that plans or skips runs;
:func:`formulations_for` is the one rule of which formulations a solver can take (it takes a model
kind the formulation builds).

:meth:`Method.warm_up` solves tiny one-contact problems of both dimensions (d = 2 and d = 3), in
global (M, D, k, b) and local (W, q) form, with and without a history, untimed, so that every numba
signature a run of the method uses is compiled (or loaded from the on-disk cache) before any clock
or time limit starts.

    >>> from workbench.method import Method
    >>> m = Method("dual", "apgd", {"restart": True})
    >>> m.label
    'dual / apgd'
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from workbench.errors import InputError, UnsupportedError
from workbench.problem import TimeStepProblem
from workbench.solvers import SolveOptions, SolveResult, get_solver, split_params
from workbench.judging import finalize
from workbench.solvers.base import condensed_note, execute
from workbench.status import UNAVAILABLE

__all__ = ["Method", "solve", "pairings", "warm_up_problems", "formulations_for"]

#: model kinds whose problems with a linear term far outside the double range's middle are solved
#: rescaled (TimeStepProblem.working_exponent): the in-house models judged by the workbench's metrics
#: alone, whose objective is one of them; a cvxpy model scales its data itself (formulations.base.data_scale)
RESCALED_KINDS = ("ccqo", "ncp")


def _kinds(formulation, solver) -> list[str]:
    """The model kinds ``solver`` takes that ``formulation`` builds, in the solver's order of preference."""
    return [k for k in solver.model_kinds if k in formulation.builds]


def formulations_for(solver) -> list:
    """The registered formulations ``solver`` (a name or an object) can take: those that build a model
    kind it accepts, in the registry's order."""
    from formulations import list_formulations
    solver = get_solver(solver) if isinstance(solver, str) else solver
    return [f for f in list_formulations() if _kinds(f, solver)]


def _formulation(name: str):
    from formulations import FORMULATIONS, get_formulation
    from workbench.errors import unknown
    if name not in FORMULATIONS:
        raise unknown("formulation", name, FORMULATIONS)
    return get_formulation(name)


#: what each solve is asked (SolveOptions), often given as a method parameter by mistake: where it goes
#: on the command line and in a study file
_SOLVE_OPTIONS = {"tol": ("--tol", "[methods.NAME] tolerance"),
                  "max_iter": ("--max-iter", "[methods.NAME] max_iter"),
                  "time_limit": ("--time-limit", "[study] time_limit")}


def _options_hint(params: dict[str, Any]) -> str:
    """'; max_iter is asked of each solve, ...' when a parameter given is (close to) a SolveOptions
    setting, else ''."""
    import difflib
    close = sorted({m for k in params for m in difflib.get_close_matches(k, list(_SOLVE_OPTIONS), n=1, cutoff=0.7)})
    return "".join(f"; {c} is asked of each solve, not a method parameter: {_SOLVE_OPTIONS[c][0]} on the command "
                   f"line, {_SOLVE_OPTIONS[c][1]} in a study file, SolveOptions({c}=...) in Python" for c in close)


class Method:
    """``formulation`` x ``solver`` (names, or the objects of the registries) with ``params`` (the
    declared parameters of both, ``--param`` keys) and a ``label`` for tables (default
    "FORMULATION / SOLVER").

    Attributes: ``formulation``, ``solver`` (the objects), ``kind`` (the model kind they share),
    ``params`` (as given), ``formulation_params`` and ``solver_params`` (checked, defaults filled
    in). Raises InputError (one line) for an unknown name, a pairing that cannot work, or a bad
    parameter. A Method pickles as its names and parameters and is resolved again on the other side
    (a study worker imports the plugins that register extra names first).
    """

    def __init__(self, formulation, solver, params: dict[str, Any] | None = None, label: str | None = None):
        self.formulation = _formulation(formulation) if isinstance(formulation, str) else formulation
        self.solver = get_solver(solver) if isinstance(solver, str) else solver
        # the names as given: a family member or another cvxpy solver keeps the user's spelling
        self.formulation_name = formulation if isinstance(formulation, str) else self.formulation.name
        self.solver_name = solver if isinstance(solver, str) else self.solver.name
        form, slv = self.formulation, self.solver
        kinds = _kinds(form, slv)
        if not kinds:
            fits = [f.name for f in formulations_for(slv)]
            raise UnsupportedError(
                f"solver {self.solver_name} takes {'/'.join(slv.model_kinds)} models and formulation "
                f"{self.formulation_name} builds {'/'.join(form.builds)}: they cannot be combined; formulations "
                f"it can take: {', '.join(fits) if fits else '(none registered)'}")
        self.kind = kinds[0]
        self.params = dict(params or {})
        try:
            self.formulation_params, self.solver_params = split_params(form, slv, self.kind, self.params)
        except InputError as exc:
            raise InputError(f"{exc}{_options_hint(self.params)}") from None
        self.label = label or f"{self.formulation_name} / {self.solver_name}{slv.variant(self.solver_params)}"

    # ------------------------------------------------------------------ identity
    def spec(self) -> dict[str, Any]:
        """The method as plain data (JSON-able): formulation, solver, params, label."""
        return {"formulation": self.formulation_name, "solver": self.solver_name, "params": dict(self.params),
                "label": self.label}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> "Method":
        """The Method of :meth:`spec`'s dict."""
        return cls(spec["formulation"], spec["solver"], spec.get("params"), spec.get("label"))

    def __reduce__(self):
        return (Method, (self.formulation_name, self.solver_name, self.params, self.label))

    def __eq__(self, other) -> bool:
        return isinstance(other, Method) and self.spec() == other.spec()

    def __hash__(self) -> int:
        return hash((self.formulation_name, self.solver_name, self.label))

    def __repr__(self) -> str:
        params = f", {self.params!r}" if self.params else ""
        return f"Method({self.formulation_name!r}, {self.solver_name!r}{params})"

    # ------------------------------------------------------------------ solving
    def accepts(self, problem) -> tuple[bool, str]:
        """(True, "") when this method can solve ``problem``, else (False, why not): a formulation that
        needs M, D (``needs_global``) cannot take a local problem. ``problem`` is a TimeStepProblem or
        anything with its ``kind`` ("global", "local"; a study's "simulation" steps global problems).
        Asked before a run is planned or tried (the study's plan lists the reason as skipped)."""
        if self.formulation.needs_global and problem.kind == "local":
            return False, f"formulation {self.formulation_name} needs M, D (a global problem)"
        return True, ""

    def availability(self) -> tuple[bool, str]:
        """The solver's (available, why not) with this method's parameters; imports its package."""
        return self.solver.availability_for(self.solver_params)

    @property
    def device(self) -> str:
        """Where a run of this method goes: "cpu" or "gpu" (Solver.device with its checked parameters:
        the executors queue GPU runs one at a time)."""
        return self.solver.device(self.solver_params)

    def solve(self, problem: TimeStepProblem, options: SolveOptions | None = None) -> SolveResult:
        """Build the formulation for ``problem``, solve it, judge the result (module docstring).

        ``options.params`` must be empty: a Method's parameters are its own, checked once. An
        unavailable solver gives status "unavailable" with the reason; a problem without contacts or
        a local problem for a formulation that needs M and D is an UnsupportedError (exit 2)."""
        options = options or SolveOptions()
        if options.params:
            raise InputError(f"{self.label}: parameters belong to the Method (Method(..., params)), "
                             f"not to SolveOptions; got {', '.join(options.params)}")
        return self._solve(problem, options.with_params(self.solver_params))

    def _solve(self, problem: TimeStepProblem, options: SolveOptions) -> SolveResult:
        """:meth:`solve` with ``options.params`` the solver's checked parameters: the per-call work
        only, none of it growing with the number of parameters or result fields (the kind and the
        parameters were checked once, in the constructor)."""
        if problem.n_contacts == 0:
            raise UnsupportedError(f"{problem.name or 'this problem'} has no contacts: its solution is "
                                   "v = M^-1 k, there is nothing for a contact solver to do")
        ok, why = self.availability()
        if not ok:
            return SolveResult(solver=self.solver_name, formulation=self.formulation_name, status=UNAVAILABLE,
                               message=why)
        e = problem.working_exponent if self.kind in RESCALED_KINDS else 0
        if e:
            return self._solve_rescaled(problem, e, options)
        return finalize(*self._execute(problem, options), options)

    def _execute(self, problem: TimeStepProblem, options: SolveOptions):
        """The build and the solver's run, not judged: (result, the model to judge it by)."""
        form = self.formulation
        if form.needs_global:
            problem.require_global(f"formulation {form.name}")
        elif self.solver.condenses and problem.is_global:
            t0 = time.perf_counter()
            local = problem.condensed
            if local is not None:
                return self._execute_condensed(problem, local, time.perf_counter() - t0, options)
        model = form.build_checked(problem, self.kind, self.formulation_params)
        return execute(self.solver, model, options), model

    def _execute_condensed(self, problem: TimeStepProblem, local: TimeStepProblem, seconds: float,
                           options: SolveOptions):
        """A small global ``problem`` solved by this same method on its ``local`` problem
        (TimeStepProblem.condensed: (W, q) = (D^T M^-1 D, b + D^T M^-1 k) from a dense Cholesky factor
        of M, made in ``seconds``, counted in the build time as the formulation's build is): the
        velocity v = M^-1 (k + D gamma) is recovered from the impulses and the result judged on the
        global problem itself, as the global path judges it. ``info["condensed"]`` says so."""
        model = self.formulation.build_checked(local, self.kind, self.formulation_params)
        model.build_seconds += seconds
        result = execute(self.solver, model, options)
        if result.nu is not None and np.isfinite(result.nu).all():
            result.v = problem.velocity(result.nu)
        result.info["condensed"] = condensed_note("a diagonal M" if problem.M_is_diagonal else "dense Cholesky of M",
                                                  problem.n_dof)
        return result, dataclasses.replace(model, problem=problem)

    def _solve_rescaled(self, problem: TimeStepProblem, e: int, options: SolveOptions) -> SolveResult:
        """``problem`` solved as TimeStepProblem.rescaled(e) (its linear term divided by 2^e, made in the
        build time) and judged on ``problem`` itself: the impulses, velocities and the sampled iterates
        times 2^e, the objectives (the solver's own, the history's column) times 2^(2e), exact; the
        history's other columns are the rescaled problem's (its errors are relative: the same numbers).
        ``info["rescaled"]`` says so. A warm start is divided by 2^e first."""
        t0 = time.perf_counter()
        scaled = problem.rescaled(e)
        seconds = time.perf_counter() - t0
        if options.warm_start is not None:
            options = dataclasses.replace(options, warm_start=np.ldexp(np.asarray(options.warm_start, dtype=float), -e))
        result, model = self._execute(scaled, options)
        result.build_seconds += seconds
        for name in ("nu", "v"):
            x = getattr(result, name)
            if x is not None:
                setattr(result, name, np.ldexp(x, e))
        if result.sampled_iterates:
            result.sampled_iterates = {row: np.ldexp(x, e) for row, x in result.sampled_iterates.items()}
        with np.errstate(over="ignore"):     # an objective past the doubles' range is inf, as evaluated
            if result.solver_objective is not None:
                result.solver_objective = float(np.ldexp(result.solver_objective, 2 * e))
            if result.history is not None and "objective" in result.history:
                result.history["objective"] = np.ldexp(result.history["objective"].to_numpy(dtype=float), 2 * e)
        result.info["rescaled"] = (f"solved with the linear term divided by 2^{e} (TimeStepProblem.working_exponent: "
                                   f"impulses and velocities times 2^{e} back, exact; the history's columns but "
                                   f"the objective are the rescaled problem's)")
        return finalize(result, dataclasses.replace(model, problem=problem), options)

    def warm_up(self, like: TimeStepProblem | None = None, history: bool = True, warm_start: bool = True) -> float:
        """Solve the :func:`warm_up_problems` untimed (first call in this process only), so that
        the imports and the numba compilation of every kernel signature a run uses happen here, not
        inside a timed or time-limited interval. Returns the seconds it took (0 when warm already).
        ``like``: only the problems of its dimension and form (a command that solves one problem);
        ``history``: False when no run will keep a history (its code paths, and pandas, are skipped;
        with True the runs without one are warmed as well);
        ``warm_start``: False when no run will start from a given point (a compiled solver's second,
        warm-started solve is skipped, and with it the kernels only a warm start loads).

        What goes wrong in a warm-up (an unavailable solver, a refused problem, a solver that raises)
        is not raised: the run itself will say it."""
        key = (self.formulation_name, self.solver_name, tuple(sorted(map(str, self.params.items()))),
               None if like is None else (like.d, like.is_global), history, warm_start)
        if key in _WARM or key[:3] + (None, True, True) in _WARM:
            return 0.0
        t0 = time.perf_counter()
        # every solver is judged by the compiled metrics (workbench.metrics) of both dimensions; an
        # in-house solver's own kernels need every form; an outside one (cvxpy, Siconos) needs no more
        compiled = self.solver.compiled
        if self.availability()[0]:
            for problem in warm_up_problems(global_only=self.formulation.needs_global or not compiled):
                if like is not None and (problem.d != like.d or (compiled and problem.is_global != like.is_global)):
                    continue
                try:
                    first = self.solve(problem, SolveOptions(tol=1e-8, max_iter=30, keep_history=history))
                    if compiled and history:   # a cold run without a history takes its own kernels (the lean path)
                        self.solve(problem, SolveOptions(tol=1e-8, max_iter=30, keep_history=False))
                    if compiled and warm_start:
                        self.solve(problem, SolveOptions(tol=1e-8, max_iter=30, keep_history=False,
                                                         time_limit=60.0, warm_start=first.nu))
                    target = self.solver.handover_target(self.solver_params)
                    if target:  # the solver it may hand over to (Solver.hands_over_to)
                        self._warm_handover(problem, target)
                except Exception:  # noqa: BLE001 - a warm-up only: what goes wrong shows in the run itself
                    continue
        _WARM.add(key)
        return time.perf_counter() - t0

    def _warm_handover(self, problem: TimeStepProblem, name: str) -> None:
        """Run the solver this method hands over to (Solver.handover_target: PQN's ``fallback``, the
        fixed point's Newton polish) on the model the hand-over gives it (this method's model of
        ``problem``, or the declared formulation's), as the hand-over does, so its kernels are compiled too."""
        helper = get_solver(name)
        declared = self.solver.hands_over_to.formulation
        if declared is None:
            model = self.formulation.build(problem, self.kind, self.formulation_params)
        else:
            form = _formulation(declared)
            model = form.build(problem, _kinds(form, helper)[0])
        execute(helper, model, SolveOptions(tol=1e-8, max_iter=30, keep_history=False,
                                            params=helper.check_params({}, model.kind)))


def pairings(formulations, solvers, params: dict[str, Any] | None = None) -> list[Method]:
    """Every Method of a formulation of ``formulations`` and a solver of ``solvers`` (names or
    objects) that can be paired, formulation-major; pairs whose solver cannot take what the
    formulation builds are left out, any other InputError (a bad parameter) is raised."""
    out = []
    for form in formulations:
        for slv in solvers:
            try:
                out.append(Method(form, slv, params))
            except UnsupportedError:
                continue
    return out


#: the warm-ups done in this process: (formulation, solver, params, like's (d, global), history, warm start)
_WARM: set[tuple] = set()


def _one_contact(d: int, free_dofs: int = 0) -> TimeStepProblem:
    """A unit sphere (mass 1, inertia 2/5) sliding at 2 m/s on a plane, one contact with normal along
    the last translational axis, h = 0.01 s, mu = 0.2; d = 2 is Melanz et al. 2015 section 3.1's ball
    (q = [x, y, theta]), d = 3 its spatial twin (q = [x, y, z, omega_x, omega_y, omega_z]).
    ``free_dofs`` unit masses without contact are added (a problem beyond CONDENSE_MAX_DOF)."""
    h, g = 0.01, 9.81
    if d == 2:  # columns n, t (slip x' + R theta')
        mass = [1.0, 1.0, 0.4]
        D = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    else:  # columns n, t1, t2 (slips x' + R omega_y, y' - R omega_x)
        mass = [1.0, 1.0, 1.0, 0.4, 0.4, 0.4]
        D = np.zeros((6, 3))
        D[2, 0] = D[0, 1] = D[4, 1] = D[1, 2] = 1.0
        D[3, 2] = -1.0
    mass += [1.0] * free_dofs
    D = np.vstack([D, np.zeros((free_dofs, d))])
    M = sp.diags(mass)
    v = np.zeros(len(mass))
    v[0] = 2.0
    f = np.zeros(len(mass))
    f[d - 1] = -g
    return TimeStepProblem(M=M, D=D, k=M @ v + h * f, b=np.zeros(d), mu=[0.2], d=d, h=h, name=f"warm-up-{d}d")


def warm_up_problems(global_only: bool = False) -> list[TimeStepProblem]:
    """The problems of :meth:`Method.warm_up`: one contact in 2D and in 3D, each in global form (as it
    is, which a method that condenses solves on its local problem, and with free dofs beyond
    CONDENSE_MAX_DOF, solved on the global one) and (unless ``global_only``) in local form."""
    from workbench.problem import CONDENSE_MAX_DOF
    out = []
    for d in (2, 3):
        problem = _one_contact(d)
        out += [problem, _one_contact(d, CONDENSE_MAX_DOF + 1)] + ([] if global_only else [problem.as_local()])
    return out


def solve(problem: TimeStepProblem, formulation: str, solver: str, options: SolveOptions | None = None) -> SolveResult:
    """``Method(formulation, solver, options.params).solve(problem, options)``: the one-call form.

    Raises InputError for unknown names, parameters or pairings that cannot work; an unavailable
    solver gives status "unavailable" and a solver that fails or raises gives "failed", both with a
    message."""
    options = options or SolveOptions()
    method = _method(formulation, solver, options.params)
    return method._solve(problem, options.with_params(method.solver_params))


#: the Methods of :func:`solve`, by names, parameters and the registry entries the names resolve to
_METHODS: dict[tuple, Method] = {}
#: at most this many of them (the cache is emptied when full)
_METHODS_KEPT = 64


def _method(formulation, solver, params: dict[str, Any]) -> Method:
    """``Method(formulation, solver, params)``, made once per process for given names and parameters
    (the one-call :func:`solve` of a small problem spent as long building it as solving). The key
    holds the registry entries the names resolve to, so a plugin or test that registers a name anew
    gets a new Method; parameters count by their JSON text (1 and 1.0, True and 1 stay apart), and
    parameters that have none (an array, an object) are not kept."""
    try:
        text = json.dumps(params, sort_keys=True) if params else ""
    except (TypeError, ValueError):
        text = None
    if text is None or not (isinstance(formulation, str) and isinstance(solver, str)):
        return Method(formulation, solver, params)
    from formulations import FORMULATIONS
    from workbench.solvers import SOLVERS
    key = (formulation, solver, text, FORMULATIONS.get(formulation),
           SOLVERS.get(solver, SOLVERS.get(solver.partition(":")[0] + ":*")))
    method = _METHODS.get(key)
    if method is None:
        if len(_METHODS) >= _METHODS_KEPT:
            _METHODS.clear()
        method = _METHODS[key] = Method(formulation, solver, params)
    return method
