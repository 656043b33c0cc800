"""The killable worker that executes runs, and the parent-side handle that enforces the time limit.

A run (load the problem, build the formulation, solve, judge with the workbench's metrics) executes
in a separate Python process, ``python -m workbench.study.worker``, that takes tasks one after the
other over a pipe and answers with plain data. The parent waits at most the run's hard limit for
the answer; past it the worker's whole process group gets SIGKILL (status "timeout") and the next
run starts a fresh worker; a worker that dies (segfault, abort, out of memory) gives "crash". A
hung native solver therefore cannot stall a study, which ``concurrent.futures`` pools cannot
promise (they have no way to kill a running task).

Why a subprocess and not ``multiprocessing``: the same wrapper runs inside Dask workers, which are
daemonic processes and may not have multiprocessing children, but may start subprocesses.
Workers are reused between runs so the imports (numpy, scipy, cvxpy: about a second) are paid once
per worker, not per run; a fresh worker imports what the study's methods use (plugins, formulations,
solvers) before it takes its first run, and solves a one-contact problem with a method before its
first run of that method (compiling numba kernels), so no run's times include either. A worker
exits when its parent goes away (a watchdog thread checks the parent pid), so a killed study leaves
no solver running.

The protocol is ``multiprocessing.connection.Connection`` framing over two pipes. The worker's own
stdout is moved to stderr first, so whatever a solver prints can never corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from workbench import THREAD_ENV
from workbench.errors import InputError

__all__ = ["WorkerProcess", "execute", "crash_result", "warm_up", "hard_limit", "solve_with_hard_limit"]

STARTUP_TIMEOUT = 120.0
#: the line before the traceback of a run that failed because its solver raised (status "failed",
#: recorded): the conformance check tells these from the tracebacks of crashes
FAILED_RUN_MARK = "workbench: the solver raised; the run is recorded as failed. Traceback of run"

#: seconds a run may take past its time limit before its worker is killed: the solver's own cap
#: stops it first; the grace covers building the model and judging the point
GRACE = 1.0


def hard_limit(time_limit: float) -> float:
    """Seconds after which a run with ``time_limit`` is killed (measured from its start, after the
    worker loaded the problem and warmed the method up)."""
    return time_limit + GRACE


def crash_result(message: str, status: str = "crash", wall_seconds: float | None = None) -> dict[str, Any]:
    """The answer for a run that produced nothing: crash, timeout."""
    return {"status": status, "message": " ".join(message.split()), "wall_seconds": wall_seconds, "metrics": {}}


# --------------------------------------------------------------------------- worker side

_PLUGINS: set[str] = set()


def execute(task: dict[str, Any], started=lambda phase: None) -> dict[str, Any]:
    """Run one task in this process: the SolveResult as plain data, or a crash with its message.

    ``started("warm")`` is called once the method is warmed up and ``started("loaded")`` once the
    problem is loaded: the run's time (and its hard limit) counts from there.
    ``task["return_point"]`` adds nu and v to the answer.
    """
    t0 = time.perf_counter()
    try:
        from workbench.solvers import solve
        from workbench.sources import is_simulation, load
        _import_plugins(task["preload"]["plugins"])
        warm_up(task["formulation"], task["solver"])
        started("warm")
        scenario = is_simulation(task["source"])
        problem = None if scenario else load(task["source"], **(task.get("source_params") or {}))
        started("loaded")
        t0 = time.perf_counter()
        if scenario:
            from workbench.study.simulation import simulate
            result = simulate(task["source"].partition(":")[2], task["scenario_params"] or {}, task["formulation"],
                              task["solver"], task["options"])
            return {**result, "host": socket.gethostname(), "wall_seconds": time.perf_counter() - t0}
        res = solve(problem, task["formulation"], task["solver"], task["options"])
        if "traceback" in res.info:  # a solver that raised: its run failed, its traceback goes to the log
            print(f"{FAILED_RUN_MARK} {task['key']}:\n{res.info.pop('traceback')}", file=sys.stderr, flush=True)
    except Exception as exc:  # anything a solver raises is that run's crash, not the study's
        if isinstance(exc, InputError):  # a refused input (no contacts, a bad parameter): not a crash
            return {**crash_result(str(exc), status="failed", wall_seconds=time.perf_counter() - t0),
                    "input_error": " ".join(str(exc).split())}
        traceback.print_exc()
        return crash_result(f"{type(exc).__name__}: {exc}", wall_seconds=time.perf_counter() - t0)
    point = {"nu": res.nu, "v": res.v} if task.get("return_point") else {}
    return {**point,
        "status": res.status,
        "stop": None if res.stop is None else res.stop.value,
        "solver_status": res.solver_status,
        "objective": res.objective,
        "solver_objective": res.solver_objective,
        "iterations": res.iterations,
        "build_seconds": res.build_seconds,
        "solve_seconds": res.solve_seconds,
        "wall_seconds": time.perf_counter() - t0,
        "message": " ".join(str(res.message).split()),
        "metrics": {k: float(v) for k, v in res.metrics.items()},
        "info": json.dumps(res.info, default=str),
        "handover": res.handover,
        "history": res.history,
        "host": socket.gethostname(),
    }


def _import_plugins(paths: list[str]) -> None:
    from workbench.study.plugins import import_plugin
    for plugin in paths:
        if plugin not in _PLUGINS:
            import_plugin(Path(plugin))
            _PLUGINS.add(plugin)


def _preload(spec: dict[str, Any]) -> None:
    """Import what the study's methods use (plugins, formulations, solvers and their packages)
    before the first run is timed."""
    from formulations import get_formulation
    from workbench.solvers import get_solver
    _import_plugins(spec["plugins"])
    for formulation, solver in spec["methods"]:
        get_formulation(formulation)
        get_solver(solver).availability()  # imports the solver's package (cvxpy, a licence check)


_WARM: set[tuple[str, str]] = set()


def warm_up(formulation: str, solver: str) -> float:
    """Before a process's first run of a (formulation, solver), solve a one-contact problem with it,
    untimed, so that no run's times include importing and compiling (numba kernels compile or load
    from their cache on their first call: about 0.5 s), and the same for the solver a method hands
    over to (a ``fallback`` parameter's default: PQN's PGS). Returns the seconds it took (0 when the
    method was warm already). The worker does it inside the run, so a solver that hangs or crashes
    fails its own run only; ``workbench solve`` and ``compare`` do it before their clocks start."""
    from problems.scenes import rolling_ball_2d
    from workbench.solvers import SolveOptions, solve
    if (formulation, solver) in _WARM:
        return 0.0
    _WARM.add((formulation, solver))
    t0 = time.perf_counter()
    try:  # a warm-up only: what goes wrong shows in the run itself
        solve(rolling_ball_2d(), formulation, solver, SolveOptions(max_iter=20, keep_history=False))
        from workbench.solvers import get_solver
        fallback = next((p.default for p in get_solver(solver).params if p.name == "fallback"), None)
        if fallback:  # a solver that hands over (PQN to PGS): the other one's kernels too
            warm_up(formulation, fallback)
    except Exception:
        pass
    return time.perf_counter() - t0


def _watch_parent() -> None:
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    inbox, outbox = Connection(0, writable=False), Connection(protocol_fd, readable=False)
    _watch_parent()
    try:
        _preload(inbox.recv())
    except Exception:  # the runs will say what is wrong, each as its crash
        traceback.print_exc()
    outbox.send({"ready": os.getpid()})
    while True:
        try:
            task = inbox.recv()
        except EOFError:
            return
        result = execute(task, started=lambda phase: outbox.send({"started": phase}))
        sys.stderr.flush()
        outbox.send(result)


# --------------------------------------------------------------------------- parent side

def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker died"
    if code < 0:
        try:
            return f"worker died with signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker died with signal {-code}"
    return f"worker exited with code {code}"


class WorkerProcess:
    """One worker subprocess; ``run`` starts it when needed and kills it past the hard limit."""

    def __init__(self, log_path: os.PathLike | str | None = None):
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in THREAD_ENV:  # one thread per worker (workbench.THREAD_ENV), the user's setting wins
            env.setdefault(name, "1")
        # the worker imports this very tree, installed or not
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        return env

    def _start(self, preload: dict[str, Any]) -> None:
        task_r, task_w = os.pipe()
        res_r, res_w = os.pipe()
        log = open(self.log_path, "ab") if self.log_path else None
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "workbench.study.worker"], stdin=task_r,
                                         stdout=res_w, stderr=log, env=self._env(), start_new_session=True)
        finally:
            os.close(task_r)
            os.close(res_w)
            if log is not None:
                log.close()
        self._send, self._recv = Connection(task_w, readable=False), Connection(res_r, writable=False)
        self._send.send(preload)
        if not self._recv.poll(STARTUP_TIMEOUT):
            self.kill()
            raise RuntimeError(f"worker did not start within {STARTUP_TIMEOUT:g} s")
        try:
            self._recv.recv()
        except EOFError:
            code = self._reap()
            raise RuntimeError(f"{_describe_exit(code)} while starting (see {self.log_path or 'stderr'})") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(self, task: dict[str, Any], hard_limit: float) -> dict[str, Any]:
        """Execute ``task``; a timeout or crash result when the worker overruns or dies.

        Three phases, each under its own limit: warming the method up on a one-contact problem
        (``hard_limit``: a method that cannot do that in the run's time is killed, so a hung
        solver is caught on its first run too), loading the problem (STARTUP_TIMEOUT: reading a
        large file is not the solver's time), and the run itself (``hard_limit``).
        """
        try:
            if not self.alive():
                self._start(task["preload"])
        except (RuntimeError, OSError) as exc:
            return crash_result(str(exc))
        limits = {"warming up the method on a one-contact problem": hard_limit, "warm": STARTUP_TIMEOUT,
                  "loaded": hard_limit}
        phase = "warming up the method on a one-contact problem"
        t0 = time.monotonic()
        try:
            self._send.send(task)
            while self._recv.poll(limits[phase]):
                answer = self._recv.recv()
                if "started" not in answer:
                    return answer
                t0, phase = time.monotonic(), answer["started"]
        except (EOFError, OSError):
            code = self._reap()
            return crash_result(_describe_exit(code), wall_seconds=time.monotonic() - t0)
        self.kill()
        doing = {"warm": "loading the problem", "loaded": "the run"}.get(phase, phase)
        return crash_result(f"killed after {limits[phase]:.3g} s of {doing} (the run's hard time limit)",
                            status="timeout", wall_seconds=time.monotonic() - t0)

    def _reap(self) -> int | None:
        """Wait for a worker that is dying; its exit code."""
        proc = self.proc
        self.kill()
        return None if proc is None else proc.returncode

    def interrupt(self) -> None:
        """SIGKILL the worker's process group (the solver and anything it started); safe to call
        from another thread while ``run`` waits, which then returns a crash."""
        proc = self.proc
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """Kill the worker and release it."""
        if self.proc is not None:
            self.interrupt()
            self.proc.wait()
        self._close_pipes()
        self.proc = None

    def _close_pipes(self) -> None:
        for conn in (self._send, self._recv):
            if conn is not None:
                conn.close()
        self._send = self._recv = None

    def close(self) -> None:
        """Let an idle worker exit (end of input), killing it if it does not."""
        if self.proc is None:
            return
        self._close_pipes()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


# --------------------------------------------------------------------------- one run, from a command

def solve_with_hard_limit(source: str, formulation: str, solver: str, options,
                          worker: WorkerProcess | None = None, source_params: dict | None = None):
    """Solve problem ``source`` (a path or source spec; ``source_params`` go to a scene or generator
    builder, workbench.sources.load) in a killable worker: the SolveResult, with
    status "timeout" (and no point) when the run outlives ``hard_limit(options.time_limit)``, and
    "crash" when the worker dies. Bad input (an InputError in the worker) is raised again here.

    ``worker`` lets a caller reuse one worker over several runs (its imports and warm-ups are
    paid once); without it a worker is started for this run and closed after. The worker's output
    (solver logs, a crash's traceback) is shown only with ``options.verbose``.
    """
    from workbench.solvers import SolveResult, StopCause
    if options.time_limit is None:
        raise InputError("a hard time limit needs options.time_limit")
    own = worker is None
    worker = WorkerProcess(None if options.verbose else os.devnull) if own else worker
    task = {"key": "solve", "source": source, "source_params": source_params, "formulation": formulation,
            "solver": solver,
            "options": options, "scenario_params": None, "return_point": True,
            "preload": {"plugins": [], "methods": [[formulation, solver]]}}
    try:
        answer = worker.run(task, hard_limit(options.time_limit))
    finally:
        if own:
            worker.close()
    if "input_error" in answer:
        raise InputError(answer["input_error"])
    info = answer.get("info")
    fields = {k: answer[k] for k in ("solver_status", "nu", "v", "objective", "solver_objective", "iterations",
                                     "build_seconds", "solve_seconds", "history", "handover")
              if answer.get(k) is not None}
    if answer["status"] in ("timeout", "crash") and "solve_seconds" not in fields:
        fields["solve_seconds"] = answer.get("wall_seconds") or 0.0
    if answer.get("stop") or answer["status"] == "timeout":
        fields["stop"] = StopCause(answer.get("stop") or "timeout")
    return SolveResult(solver=solver, formulation=formulation, status=answer["status"],
                       metrics=dict(answer.get("metrics") or {}), message=answer.get("message") or "",
                       info=json.loads(info) if isinstance(info, str) else {}, **fields)


if __name__ == "__main__":
    main()
