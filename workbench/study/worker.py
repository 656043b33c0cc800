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
solvers) before it takes its first run, and warms a method up (:meth:`workbench.method.Method.warm_up`:
tiny 2D and 3D problems, compiling or loading every numba kernel signature) before its first run of
that method, so no run's times include either. The warm-up is not under the run's time limit: it
has its own, :data:`WARM_UP_LIMIT`, and a run killed while warming up gets the status "warm-up"
(the report lists those apart; they are never the method's failure or time). A worker exits when
its parent goes away (a watchdog thread checks the parent pid), so a killed study leaves no solver
running.

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

from workbench import THREAD_ENV, threads
from workbench.errors import InputError

__all__ = ["WorkerProcess", "execute", "crash_result", "hard_limit", "solve_with_hard_limit", "solve_in_worker",
           "WARM_UP_LIMIT"]

STARTUP_TIMEOUT = 120.0
#: seconds a worker may take to warm a method up before its first run of it (numba compiles each
#: kernel signature in about 0.5-5 s on a loaded 2-core machine when the on-disk cache is empty; a
#: filled cache loads them in milliseconds). Generous on purpose: it bounds a hung solver, nothing
#: else, and a run killed here is recorded "warm-up", not as the method's timeout. The environment
#: variable WORKBENCH_WARM_UP_LIMIT (seconds) replaces it.
WARM_UP_LIMIT = 300.0


def warm_up_limit() -> float:
    """WARM_UP_LIMIT, or WORKBENCH_WARM_UP_LIMIT when set."""
    from workbench.limits import check
    from workbench.numbers import number
    text = os.environ.get("WORKBENCH_WARM_UP_LIMIT")
    if text is None:
        return WARM_UP_LIMIT
    value = number(text, "WORKBENCH_WARM_UP_LIMIT (seconds)", positive=True)
    check("SECONDS", value, "WORKBENCH_WARM_UP_LIMIT")
    return value

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


def crash_result(message: str, status: str = "crash", wall_seconds: float | None = None, **fields) -> dict[str, Any]:
    """The answer (workbench.study.record.answer) for a run that produced nothing: crash, warm-up, or
    timeout (killed at its hard limit: stop cause timeout); ``fields``: more keys of the answer."""
    from workbench.study.record import answer
    stop = "timeout" if status == "timeout" else None
    return answer(status=status, stop=stop, message=" ".join(message.split()), wall_seconds=wall_seconds, **fields)


def _names(task: dict[str, Any]) -> dict[str, str]:
    """The solver and formulation of a task's method, as its answer names them."""
    return {"solver": task["method"]["solver"], "formulation": task["method"]["formulation"]}


# --------------------------------------------------------------------------- worker side

_PLUGINS: set[str] = set()


def execute(task: dict[str, Any], started=lambda phase: None) -> dict[str, Any]:
    """Run one task in this process; the answer in its one shape (workbench.study.record.answer): the
    SolveResult's record (:meth:`SolveResult.record`, with the history as a DataFrame) plus
    ``wall_seconds`` and ``host``, a simulation's (workbench.study.simulation), or a crash with its
    message.

    ``task["source"]`` is a :class:`workbench.sources.Source` (it loads its problem here, or is
    simulated); ``task["method"]`` is a :meth:`Method.spec` (resolved once per process, after the
    plugins are imported). ``started("warm")`` is called once the method is warmed up and ``started("loaded")``
    once the problem is loaded: the run's time (and its hard limit) counts from there.
    ``task["return_point"]`` adds nu and v to the answer.
    """
    from workbench.study.record import answer
    t0 = time.perf_counter()
    try:
        _import_plugins(task["preload"]["plugins"])
        source = task["source"]
        method = _method(task["method"])
        method.warm_up()
        started("warm")
        problem = None if source.simulated else source.load()
        started("loaded")
        t0 = time.perf_counter()
        if source.simulated:
            from workbench.study.simulation import simulate
            result = simulate(source, method, task["options"])
            return {**result, "host": socket.gethostname(), "wall_seconds": time.perf_counter() - t0}
        res = method.solve(problem, task["options"])
        if "traceback" in res.info:  # a solver that raised: its run failed, its traceback goes to the log
            print(f"{FAILED_RUN_MARK} {task['key']}:\n{res.info.pop('traceback')}", file=sys.stderr, flush=True)
    except Exception as exc:  # anything a solver raises is that run's crash, not the study's
        names = _names(task)
        if isinstance(exc, InputError):  # a refused input (no contacts, a bad parameter): not a crash
            return crash_result(str(exc), status="failed", wall_seconds=time.perf_counter() - t0,
                                input_error=" ".join(str(exc).split()), **names)
        traceback.print_exc()
        return crash_result(f"{type(exc).__name__}: {exc}", wall_seconds=time.perf_counter() - t0, **names)
    # the history goes as the DataFrame it is (pickled by the pipe, written to parquet by the parent)
    return answer(**res.record(point=bool(task.get("return_point")), history=False), history=res.history,
                  wall_seconds=time.perf_counter() - t0, host=socket.gethostname(),
                  problem={"name": problem.name, "n_contacts": problem.n_contacts})


_METHODS: dict[str, Any] = {}


def _method(spec: dict[str, Any]):
    """The Method of ``spec``, resolved and checked once per process."""
    from workbench.method import Method
    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _METHODS:
        _METHODS[key] = Method.from_spec(spec)
    return _METHODS[key]


def _import_plugins(paths: list[str]) -> None:
    from workbench.study.plugins import import_plugin
    for plugin in paths:
        if plugin not in _PLUGINS:
            import_plugin(Path(plugin))
            _PLUGINS.add(plugin)


def _preload(spec: dict[str, Any]) -> None:
    """Import what the study's methods use (plugins, formulations, solvers and their packages)
    before the first run is timed."""
    _import_plugins(spec["plugins"])
    for method in spec["methods"]:
        _method(method).availability()  # imports the solver's package (cvxpy, a licence check)


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

    def __init__(self, log_path: os.PathLike | str | None = None, jobs: int = 1):
        self.log_path = log_path
        self.jobs = jobs    # workers sharing the cores: each gets cores // jobs threads (workbench.threads)
        self.proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        #: methods (Method.spec as JSON) whose warm-up this worker slot saw killed: their later
        #: runs here are recorded "warm-up" at once instead of each waiting the warm-up limit again
        self.warm_up_killed: dict[str, str] = {}

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in THREAD_ENV:  # one BLAS thread per worker (workbench.THREAD_ENV), the user's setting wins
            env.setdefault(name, "1")
        # the compiled kernels' threads: WORKBENCH_THREADS (--threads) or this worker's share of the cores
        env[threads.ENV] = str(threads.choose(None, self.jobs))
        env["NUMBA_NUM_THREADS"] = env[threads.ENV]
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
        """Execute ``task``; a timeout, warm-up or crash result when the worker overruns or dies.

        Three phases, each under its own limit: warming the method up (WARM_UP_LIMIT; killed there:
        status "warm-up", which is neither the method's failure nor its time), loading the problem
        (STARTUP_TIMEOUT: reading a large file is not the solver's time), and the run itself
        (``hard_limit``: status "timeout").
        """
        names = _names(task)
        try:
            if not self.alive():
                self._start(task["preload"])
        except (RuntimeError, OSError) as exc:
            return crash_result(str(exc), **names)
        method = json.dumps(task["method"], sort_keys=True, default=str)
        if method in self.warm_up_killed:
            return crash_result(f"not run: {self.warm_up_killed[method]} on an earlier run of this method",
                                status="warm-up", **names)
        limits = {"warming": warm_up_limit(), "warm": STARTUP_TIMEOUT, "loaded": hard_limit}
        phase = "warming"
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
            return crash_result(_describe_exit(code), wall_seconds=time.monotonic() - t0, **names)
        self.kill()
        if phase == "warming":
            self.warm_up_killed[method] = f"killed after {limits[phase]:.3g} s of warming the method up"
            return crash_result(f"{self.warm_up_killed[method]} before its clock started (the warm-up limit, "
                                "WORKBENCH_WARM_UP_LIMIT; not the run's time)", status="warm-up",
                                wall_seconds=time.monotonic() - t0, **names)
        doing = {"warm": "loading the problem", "loaded": "the run"}[phase]
        return crash_result(f"killed after {limits[phase]:.3g} s of {doing} (the run's hard time limit)",
                            status="timeout", wall_seconds=time.monotonic() - t0, **names)

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

def solve_with_hard_limit(source, method, options, worker: WorkerProcess | None = None):
    """:func:`solve_in_worker`'s result alone."""
    return solve_in_worker(source, method, options, worker)[0]


def solve_in_worker(source, method, options, worker: WorkerProcess | None = None):
    """Solve the problem of ``source`` (a :class:`workbench.sources.Source`, or a spec it parses) with
    ``method`` (a :class:`~workbench.method.Method`) in a killable worker, which loads the problem (here
    nothing is read): the SolveResult (:meth:`SolveResult.from_record` of the worker's answer), with
    status "timeout" (and no point) when the run outlives ``hard_limit(options.time_limit)``,
    "warm-up" when warming the method up outlives WARM_UP_LIMIT, and "crash" when the worker dies;
    with the name and contacts of the problem the worker loaded (``{"name", "n_contacts"}``; None when
    the run ended before it did). Bad input (an InputError in the worker) is raised again here.

    ``worker`` lets a caller reuse one worker over several runs (its imports and warm-ups are
    paid once); without it a worker is started for this run and closed after. The worker's output
    (solver logs, a crash's traceback) is shown only with ``options.verbose``.
    """
    from workbench.solvers import SolveResult
    from workbench.sources import Source
    source = source if isinstance(source, Source) else Source.parse(source)
    if options.time_limit is None:
        raise InputError("a hard time limit needs options.time_limit")
    own = worker is None
    worker = WorkerProcess(None if options.verbose else os.devnull) if own else worker
    spec = method.spec()
    task = {"key": "solve", "source": source, "method": spec, "options": options, "return_point": True,
            "preload": {"plugins": [], "methods": [spec]}}
    try:
        answer = worker.run(task, hard_limit(options.time_limit))
    finally:
        if own:
            worker.close()
    if answer["input_error"]:
        raise InputError(answer["input_error"])
    return SolveResult.from_record(answer), answer["problem"]


if __name__ == "__main__":
    main()
